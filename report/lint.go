package report

import (
	"fmt"
	"io"
	"strconv"
	"strings"

	"github.com/jedib0t/go-pretty/v6/table"
	"github.com/jedib0t/go-pretty/v6/text"

	"github.com/kmigrate/kmigrate/mm2"
	"github.com/kmigrate/kmigrate/report/junit"
)

// lintReport draws the findings of `kmirror lint` (mm2.Lint) on an mm2.properties file.
type lintReport struct {
	Title                  string
	Verdict                verdict
	Items                  []lintItem
	Errors, Warnings, Info int
}

type lintItem struct {
	Line                   int
	Key, Severity, Message string
	Suggestion             string
	Level                  level
	Where                  string // "line 12" or "missing key"
}

func newLintReport(title string, fs []mm2.Finding) *lintReport {
	rep := &lintReport{Title: title}
	if rep.Title == "" {
		rep.Title = "kmirror lint"
	}
	for _, f := range fs {
		it := lintItem{Line: f.Line, Key: f.Key, Severity: string(f.Severity), Message: f.Message, Suggestion: f.Suggestion}
		switch f.Severity {
		case mm2.SeverityError:
			it.Level = levelBad
			rep.Errors++
		case mm2.SeverityInfo:
			it.Level = levelOK
			rep.Info++
		default:
			it.Level = levelWarn
			rep.Warnings++
		}
		it.Where = "line " + strconv.Itoa(f.Line)
		if f.Line <= 0 {
			it.Where = "missing key"
		}
		rep.Items = append(rep.Items, it)
	}
	v := verdict{Level: levelOK, Word: "CLEAN", Headline: "no findings"}
	if n := len(rep.Items); n > 0 {
		v.Word, v.Headline = "FINDINGS", plural(int64(n), "finding", "findings")
		v.Level = levelWarn
		if rep.Errors > 0 {
			v.Level = levelBad
		}
		v.Details = append(v.Details, fmt.Sprintf("%s (MM2 refuses the file or does not do what it says), %s, %d info",
			plural(int64(rep.Errors), "error", "errors"), plural(int64(rep.Warnings), "warning", "warnings"), rep.Info))
	} else {
		v.Details = append(v.Details, "MirrorMaker 2 3.7.1 reads every key as written")
	}
	rep.Verdict = v
	return rep
}

// warningsAsFindings lets the parser's warnings (mm2.Config.Warnings) render like findings.
func warningsAsFindings(ws []mm2.Warning) []mm2.Finding {
	fs := make([]mm2.Finding, len(ws))
	for i, w := range ws {
		fs[i] = mm2.Finding{Line: w.Line, Key: w.Key, Severity: mm2.SeverityWarning, Message: w.Message, Suggestion: w.Suggestion}
	}
	return fs
}

func writeLint(w io.Writer, f Format, fs []mm2.Finding, opt Options) error {
	rep := newLintReport(opt.Title, fs)
	switch f {
	case Table:
		return lintTable(w, rep, opt)
	case Markdown:
		return lintMarkdown(w, rep)
	case HTML:
		return templates.ExecuteTemplate(w, "page.tmpl", htmlPage{Title: rep.Title, CSS: pageCSS,
			Verdict: rep.Verdict, Kind: "lint", Lint: rep,
			Subtitle: "what MirrorMaker 2 3.7.1 would silently ignore or misread in an mm2.properties file"})
	default:
		return lintJUnit(w, rep)
	}
}

func lintTable(w io.Writer, rep *lintReport, opt Options) error {
	p := painter(opt.Color)
	var b strings.Builder
	fmt.Fprintf(&b, "%s\n", p.bold(rep.Title))
	writeVerdict(&b, p, rep.Verdict)
	if len(rep.Items) > 0 {
		b.WriteString("\n")
		// Narrow terminals wrap the finding first (it is the widest), then the keys.
		ft := fitTable{header: table.Row{"Where", "Severity", "Key", "Finding", "Suggestion"},
			give: []give{{}, {}, {wrap: 16}, {wrap: 24}, {wrap: 14}},
			cfg:  []table.ColumnConfig{{Number: 4, WidthMax: 72, WidthMaxEnforcer: text.WrapSoft}}}
		for _, it := range rep.Items {
			ft.rows = append(ft.rows, table.Row{it.Where, p.paint(it.Level, it.Severity), it.Key, oneLine(it.Message), it.Suggestion})
		}
		tw := newTable(p)
		tw.Style().Options.SeparateRows = true // wrapped messages stay readable
		b.WriteString(ft.render(tw, opt.Width))
		b.WriteString("\n")
	}
	_, err := io.WriteString(w, b.String())
	return err
}

func lintMarkdown(w io.Writer, rep *lintReport) error {
	var b strings.Builder
	fmt.Fprintf(&b, "# %s\n\n", mdEscape(rep.Title))
	mdVerdict(&b, rep.Verdict)
	if len(rep.Items) > 0 {
		mdHeader(&b, "Where", "Severity", "Key", "Finding", "Suggestion")
		for _, it := range rep.Items {
			mdRow(&b, it.Where, mdBadge[it.Level]+" "+mdEscape(it.Severity), mdEscape(it.Key), mdEscape(it.Message), mdEscape(it.Suggestion))
		}
	}
	_, err := io.WriteString(w, strings.TrimRight(b.String(), "\n")+"\n")
	return err
}

// lintJUnit writes one case per finding, each a failure typed by its severity (kmirror lint
// exits 1 on any finding), or one passing case when the file is clean.
func lintJUnit(w io.Writer, rep *lintReport) error {
	s := junit.Suite{Name: rep.Title}
	for _, it := range rep.Items {
		msg := oneLine(it.Message)
		if it.Suggestion != "" {
			msg += " (did you mean " + it.Suggestion + "?)"
		}
		s.Cases = append(s.Cases, junit.Case{Name: it.Where + ": " + it.Key, Classname: "kmirror.lint",
			Failure: &junit.Problem{Type: it.Severity, Message: msg, Body: it.Where + ": " + it.Key + ": " + it.Message + "\n"}})
	}
	if len(s.Cases) == 0 {
		s.Cases = append(s.Cases, junit.Case{Name: "no findings", Classname: "kmirror.lint"})
	}
	return junit.Write(w, &junit.Suites{Name: rep.Title, Suites: []junit.Suite{s}})
}
