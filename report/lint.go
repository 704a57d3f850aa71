package report

import (
	"fmt"
	"strconv"

	"github.com/kmigrate/kmigrate/mm2"
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
