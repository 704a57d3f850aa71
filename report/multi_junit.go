package report

import (
	"fmt"
	"io"
	"strings"

	"github.com/kmigrate/kmigrate/report/junit"
)

// multiJUnit writes one suite for the run and one case per topic: an identical topic passes,
// one that differs fails with its problems and the partitions that differ as detail, one that
// could not be read is an error, one with nothing to compare is skipped.
func multiJUnit(w io.Writer, rep *multiReport) error {
	s := junit.Suite{
		Name: rep.Title,
		Properties: junit.Props(
			junit.Property{Name: "scope", Value: rep.Scope},
			junit.Property{Name: "verdict", Value: rep.Verdict.Headline},
		),
	}
	for _, t := range rep.Topics {
		c := junit.Case{Name: t.Source, Classname: "kverify.topics"}
		body := multiTopicDetail(t)
		switch t.Level {
		case levelOK:
			c.SystemOut = junit.Text(body)
		case levelBad:
			c.Failure = &junit.Problem{Type: "differences", Message: oneLine(t.Verdict.Headline + ": " + strings.Join(t.Verdict.Details, "; ")), Body: body}
		case levelWarn:
			c.Skipped = &junit.Skipped{Message: oneLine(strings.Join(t.Verdict.Details, "; "))}
			c.SystemOut = junit.Text(body)
		default:
			c.Error = &junit.Problem{Type: "error", Message: oneLine(t.Verdict.Headline + ": " + strings.Join(t.Verdict.Details, "; ")), Body: body}
		}
		s.Cases = append(s.Cases, c)
	}
	s.SystemOut = junit.Text(strings.Join(append(append([]string{rep.Verdict.Headline}, rep.Verdict.Details...), rep.Scope, rep.Line), "\n"))
	return junit.Write(w, &junit.Suites{Name: rep.Title, Suites: []junit.Suite{s}})
}

// multiTopicDetail is the text of one topic: its verdict, problems and the partitions that
// differ or could not be read.
func multiTopicDetail(t multiTopic) string {
	var b strings.Builder
	fmt.Fprintf(&b, "%s → %s: %s\n", t.Source, t.Target, t.Status)
	for _, d := range t.Verdict.Details {
		fmt.Fprintf(&b, "  %s\n", d)
	}
	for _, p := range t.Problems {
		fmt.Fprintf(&b, "problem: %s\n", p)
	}
	for _, vp := range t.Parts {
		if vp.Level == levelBad || vp.Level == levelErr {
			b.WriteString(partDetail(vp))
		}
	}
	return b.String()
}
