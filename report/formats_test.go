package report_test

import (
	"bytes"
	"encoding/json"
	"encoding/xml"
	"errors"
	"fmt"
	"io"
	"reflect"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/kmigrate/kmigrate/mm2"
	"github.com/kmigrate/kmigrate/report"
	"github.com/kmigrate/kmigrate/verify"
)

// everyResult is a value of each result type the report package draws: every type Write
// takes (values as well as pointers, lists of them) and the MultiResult of WriteMulti.
func everyResult() []fixture {
	return append(fixtures(),
		fixture{"verify-topics", []*verify.Result{verifyIdentical(), verifyDiffering()}},
		fixture{"verify-value", *verifyIdentical()},
		fixture{"verify-values", []verify.Result{*verifyIdentical(), *verifyDiffering()}},
		fixture{"reconcile-value", *reconcileSeed()},
		fixture{"lint-warnings", []mm2.Warning{{Line: 3, Key: "offset.max.lag", Message: "unknown key", Suggestion: "offset.lag.max"}}},
		fixture{"acls-plan", aclPlan()},
		fixture{"acls-applied", aclApplied()},
		fixture{"acls-rollback", aclRollback()},
		fixture{"multi", multiFixture()},
	)
}

// allFormats is every format, named here rather than read from report.Formats: a format whose
// renderer went missing from the package's list then fails below instead of going unasked.
var allFormats = []report.Format{report.Table, report.JSON, report.Markdown, report.HTML, report.JUnit}

// TestEveryFormatParses renders every result type in every format and parses each output as
// what its format claims: a terminal table, JSON, Markdown with its tables, an HTML document,
// JUnit XML in the Jenkins schema.
func TestEveryFormatParses(t *testing.T) {
	if !reflect.DeepEqual(report.Formats, allFormats) {
		t.Errorf("report.Formats: got %v, want %v", report.Formats, allFormats)
	}
	check := map[report.Format]func(string) error{
		report.Table: tableProblem, report.JSON: jsonProblem, report.Markdown: markdownProblem,
		report.HTML: htmlProblem, report.JUnit: junitProblem,
	}
	for _, fx := range everyResult() {
		for _, f := range allFormats {
			t.Run(fx.name+"/"+string(f), func(t *testing.T) {
				var b bytes.Buffer
				var err error
				if mr, ok := fx.v.(*verify.MultiResult); ok {
					err = report.WriteMulti(&b, f, mr, report.Options{})
				} else {
					err = report.Write(&b, f, fx.v, report.Options{})
				}
				if err != nil {
					t.Fatalf("render %T as %s: got %v, want a report", fx.v, f, err)
				}
				if err := check[f](b.String()); err != nil {
					t.Errorf("got output that is not %s: %v\n%s", f, err, b.String())
				}
			})
		}
	}
}

// tableProblem checks a terminal report: plain text headed by its title, with at least one
// box-drawn table whose lines are all as wide as its top border.
func tableProblem(doc string) error {
	lines := strings.Split(strings.TrimRight(doc, "\n"), "\n")
	if first := lines[0]; first == "" || strings.ContainsAny(first[:1], "{<#|") {
		return fmt.Errorf("first line %q is not a title", first)
	}
	tables, width := 0, -1
	for i, l := range lines {
		switch {
		case strings.HasPrefix(l, "┌"):
			tables, width = tables+1, utf8.RuneCountInString(l)
		case width < 0:
		case utf8.RuneCountInString(l) != width:
			return fmt.Errorf("line %d is %d wide inside a table %d wide: %q", i+1, utf8.RuneCountInString(l), width, l)
		case strings.HasPrefix(l, "└"):
			width = -1
		}
	}
	switch {
	case width >= 0:
		return errors.New("a table has no bottom border")
	case tables == 0:
		return errors.New("no table")
	}
	return nil
}

// jsonProblem checks that doc is exactly one JSON value and a newline.
func jsonProblem(doc string) error {
	dec := json.NewDecoder(strings.NewReader(doc))
	var v any
	if err := dec.Decode(&v); err != nil {
		return err
	}
	if tok, err := dec.Token(); err != io.EOF {
		return fmt.Errorf("more after the JSON value: %v %v", tok, err)
	}
	if !strings.HasSuffix(doc, "\n") {
		return errors.New("no newline at the end")
	}
	return nil
}

// markdownProblem checks a Markdown report: a level-one heading, then at least one table, each
// a header row, a delimiter row and rows that all have the header's number of cells.
func markdownProblem(doc string) error {
	lines := strings.Split(strings.TrimRight(doc, "\n"), "\n")
	if !strings.HasPrefix(lines[0], "# ") {
		return fmt.Errorf("first line %q is not a heading", lines[0])
	}
	tables := 0
	for i := 0; i < len(lines); i++ {
		if !strings.HasPrefix(lines[i], "|") {
			continue
		}
		tables++
		cells := mdCells(lines[i])
		if i+1 == len(lines) || mdCells(lines[i+1]) != cells || strings.Trim(lines[i+1], "|-: ") != "" {
			return fmt.Errorf("line %d: a table header without a delimiter row of %d cells", i+1, cells)
		}
		for i += 2; i < len(lines) && strings.HasPrefix(lines[i], "|"); i++ {
			if n := mdCells(lines[i]); n != cells {
				return fmt.Errorf("line %d: %d cells in a table of %d: %q", i+1, n, cells, lines[i])
			}
		}
	}
	if tables == 0 {
		return errors.New("no table")
	}
	return nil
}

// mdCells counts the cells of a table row: its pipes not escaped with a backslash, less one.
func mdCells(row string) int {
	if !strings.HasPrefix(row, "|") || !strings.HasSuffix(row, "|") {
		return -1
	}
	pipes := 0
	for i := 0; i < len(row); i++ {
		switch row[i] {
		case '\\':
			i++
		case '|':
			pipes++
		}
	}
	return pipes - 1
}

// htmlVoid are the elements HTML writes without an end tag.
var htmlVoid = map[string]bool{"area": true, "base": true, "br": true, "col": true, "embed": true, "hr": true,
	"img": true, "input": true, "link": true, "meta": true, "source": true, "track": true, "wbr": true}

// htmlProblem checks an HTML document: the HTML doctype, then one html element holding a head
// with a title and a body, every other element closed by its own end tag.
func htmlProblem(doc string) error {
	if !strings.HasPrefix(doc, "<!DOCTYPE html>") {
		return errors.New("no HTML doctype")
	}
	dec := xml.NewDecoder(strings.NewReader(doc))
	dec.Strict, dec.Entity = false, xml.HTMLEntity
	var open []string
	seen := map[string]int{}
	for {
		tok, err := dec.RawToken() // RawToken leaves end tags as written: no element is closed for us
		if err == io.EOF {
			break
		}
		if err != nil {
			return err
		}
		switch el := tok.(type) {
		case xml.StartElement:
			name := strings.ToLower(el.Name.Local)
			if len(open) == 0 && (name != "html" || seen["html"] > 0) {
				return fmt.Errorf("<%s> outside the one html element", name)
			}
			if len(open) > 0 {
				seen[open[len(open)-1]+">"+name]++
			}
			seen[name]++
			if !htmlVoid[name] {
				open = append(open, name)
			}
		case xml.EndElement:
			name := strings.ToLower(el.Name.Local)
			if len(open) == 0 || open[len(open)-1] != name {
				return fmt.Errorf("</%s> closes %v", name, open)
			}
			open = open[:len(open)-1]
		}
	}
	if len(open) > 0 {
		return fmt.Errorf("never closed: %v", open)
	}
	for _, el := range []string{"html>head", "head>title", "html>body"} {
		if seen[el] != 1 {
			return fmt.Errorf("%d elements %s, want 1", seen[el], el)
		}
	}
	return nil
}

// junitProblem checks JUnit XML against the Jenkins schema and reads it as the junit model.
func junitProblem(doc string) error {
	if ps := schemaProblems(doc); len(ps) > 0 {
		return errors.New(strings.Join(ps, "; "))
	}
	var s struct {
		XMLName xml.Name `xml:"testsuites"`
	}
	return xml.Unmarshal([]byte(doc), &s)
}
