package report

import (
	"fmt"
	"io"
	"strings"
)

// Format is an output format.
type Format string

// Formats every tool accepts with --format.
const (
	Table    Format = "table"
	JSON     Format = "json"
	Markdown Format = "markdown"
	HTML     Format = "html"
	JUnit    Format = "junit"
)

// formats is every output format, in the order --help lists them, with the extension of its
// files and its renderer: the one list that --format, the help, the completion and WriteFiles
// read. Each renderer lives in a file of its own: table.go, json.go, markdown.go, html.go,
// junitreport.go.
var formats = []struct {
	name Format
	ext  string
	r    renderer
}{
	{Table, "txt", drawing{tableRenderer{}}},
	{JSON, "json", jsonRenderer{}},
	{Markdown, "md", drawing{markdownRenderer{}}},
	{HTML, "html", drawing{htmlRenderer{}}},
	{JUnit, "xml", drawing{junitRenderer{}}},
}

// Formats lists the formats in the order --help shows them.
var Formats = func() []Format {
	fs := make([]Format, len(formats))
	for i, f := range formats {
		fs[i] = f.name
	}
	return fs
}()

// FormatNames joins the names of the formats, in order, with sep: with "|",
// "table|json|markdown|html|junit".
func FormatNames(sep string) string {
	names := make([]string, len(Formats))
	for i, f := range Formats {
		names[i] = string(f)
	}
	return strings.Join(names, sep)
}

// FormatList names the formats for --help, in order: "table, json, markdown, html or junit".
func FormatList() string {
	all := FormatNames(", ")
	i := strings.LastIndex(all, ", ")
	return all[:i] + " or " + all[i+2:]
}

// unknownFormat is the error for a --format value that names no format.
func unknownFormat(s string) error {
	return fmt.Errorf("unknown format %q: use one of %s", s, FormatNames(", "))
}

// ParseFormat checks a --format value.
func ParseFormat(s string) (Format, error) {
	for _, f := range Formats {
		if strings.EqualFold(s, string(f)) {
			return f, nil
		}
	}
	return "", unknownFormat(s)
}

// Ext is the file name extension of a format, without the dot: txt, json, md, html, xml; ""
// for a string that names no format.
func (f Format) Ext() string {
	for _, ff := range formats {
		if ff.name == f {
			return ff.ext
		}
	}
	return ""
}

// renderer writes values in one format. view builds the report of v that a drawing format
// draws; JSON, which writes any value as it is, never calls it.
type renderer interface {
	write(w io.Writer, v any, view func() (view, error), opt Options) error
}

// rendererOf is the renderer of format f, or an error naming the formats.
func rendererOf(f Format) (renderer, error) {
	for _, ff := range formats {
		if ff.name == f {
			return ff.r, nil
		}
	}
	return nil, unknownFormat(string(f))
}

// view is the report of one result, ready to draw: each result type has one
// (verifyReport, reconcileReport, rollbackReport, topicsReport, lintReport, aclsReport,
// aclRollbackReport, multiReport), which calls the drawer's method for it.
type view interface {
	draw(d drawer, w io.Writer, opt Options) error
}

// drawer draws the report of every result type in one format. A format that lacks a method
// for a result type does not compile: formats assigns each drawer to this interface.
type drawer interface {
	verify(w io.Writer, rep *verifyReport, opt Options) error
	reconcile(w io.Writer, rep *reconcileReport, opt Options) error
	rollback(w io.Writer, rep *rollbackReport, opt Options) error
	topics(w io.Writer, rep *topicsReport, opt Options) error
	lint(w io.Writer, rep *lintReport, opt Options) error
	acls(w io.Writer, rep *aclsReport, opt Options) error
	aclRollback(w io.Writer, rep *aclRollbackReport, opt Options) error
	multi(w io.Writer, rep *multiReport, opt Options) error
}

// drawing is the renderer of a format that draws reports: it builds the view, then draws it.
type drawing struct{ d drawer }

func (r drawing) write(w io.Writer, _ any, view func() (view, error), opt Options) error {
	v, err := view()
	if err != nil {
		return err
	}
	return v.draw(r.d, w, opt)
}

func (rep *verifyReport) draw(d drawer, w io.Writer, opt Options) error { return d.verify(w, rep, opt) }
func (rep *reconcileReport) draw(d drawer, w io.Writer, opt Options) error {
	return d.reconcile(w, rep, opt)
}
func (rep *rollbackReport) draw(d drawer, w io.Writer, opt Options) error {
	return d.rollback(w, rep, opt)
}
func (rep *topicsReport) draw(d drawer, w io.Writer, opt Options) error { return d.topics(w, rep, opt) }
func (rep *lintReport) draw(d drawer, w io.Writer, opt Options) error   { return d.lint(w, rep, opt) }
func (rep *aclsReport) draw(d drawer, w io.Writer, opt Options) error   { return d.acls(w, rep, opt) }
func (rep *aclRollbackReport) draw(d drawer, w io.Writer, opt Options) error {
	return d.aclRollback(w, rep, opt)
}
func (rep *multiReport) draw(d drawer, w io.Writer, opt Options) error { return d.multi(w, rep, opt) }
