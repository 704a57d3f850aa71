package report

import (
	"fmt"
	"io"
	"strings"

	"github.com/kmigrate/kmigrate/reconcile"
	"github.com/kmigrate/kmigrate/report/junit"
)

// verifyJUnit writes one suite per topic and one case per partition; a partition with
// differences fails with the ranges as detail, one that could not be aligned is an error.
func verifyJUnit(w io.Writer, rep *verifyReport) error {
	doc := &junit.Suites{Name: rep.Title}
	for _, t := range rep.Topics {
		s := junit.Suite{
			Name: fmt.Sprintf("kverify %s → %s", t.Source, t.Target),
			Properties: junit.Props(
				junit.Property{Name: "source_topic", Value: t.Source},
				junit.Property{Name: "target_topic", Value: t.Target},
				junit.Property{Name: "compared", Value: t.Compared},
				junit.Property{Name: "verdict", Value: t.Verdict.Headline},
			),
		}
		class := "kverify." + t.Source
		for _, p := range t.Problems {
			s.Cases = append(s.Cases, junit.Case{Name: "topic", Classname: class,
				Failure: &junit.Problem{Type: "problem", Message: oneLine(p), Body: p}})
		}
		for _, vp := range t.Parts {
			c := junit.Case{Name: fmt.Sprintf("partition %d", vp.P.Partition), Classname: class}
			switch vp.Level {
			case levelErr:
				c.Error = &junit.Problem{Type: "error", Message: oneLine(vp.P.Err), Body: partDetail(vp)}
			case levelBad:
				c.Failure = &junit.Problem{Type: "differences", Message: vp.Status + ": " +
					strings.Join(countClauses(vp.P.Counts), ", "), Body: partDetail(vp)}
			case levelWarn:
				if vp.P.NotCompared != "" {
					c.Skipped = &junit.Skipped{Message: oneLine(vp.P.NotCompared)}
					break
				}
				c.SystemOut = junit.Text(partDetail(vp))
			default:
				c.SystemOut = junit.Text(partDetail(vp))
			}
			s.Cases = append(s.Cases, c)
		}
		s.SystemOut = junit.Text(strings.Join(append([]string{t.Verdict.Headline}, t.Verdict.Details...), "\n"))
		doc.Suites = append(doc.Suites, s)
	}
	return junit.Write(w, doc)
}

// junitMaxItems bounds each range list in a failure's detail, which CI systems keep in memory
// and show inline; the JSON report has every range.
const junitMaxItems = 1000

// partDetail is the text of one partition: CI shows it beside the failure.
func partDetail(vp verifyPart) string {
	var b strings.Builder
	c := vp.P.Counts
	fmt.Fprintf(&b, "partition %d: %s\n", vp.P.Partition, vp.Status)
	fmt.Fprintf(&b, "source offsets %s, target offsets %s\n", vp.Source, vp.Target)
	fmt.Fprintf(&b, "matched %s, missing %s, duplicated %s, mismatched %s, extra %s, ambiguous %s\n",
		num(c.Matched), num(c.Missing), num(c.Duplicated), num(c.Mismatched), num(c.Extra), num(c.Ambiguous))
	if vp.P.Err != "" {
		fmt.Fprintf(&b, "%-12s %s\n", "error", vp.P.Err)
	}
	for _, d := range vp.Details {
		fmt.Fprintf(&b, "%-12s %s%s\n", d.Class, d.Prefix, bounded(d.Items, junitMaxItems))
	}
	if vp.P.Truncated {
		b.WriteString("kverify cut these lists to bound the report; the counts are complete\n")
	}
	return b.String()
}

// reconcileJUnit writes one suite per group and one case per group partition: exact passes,
// behind, ahead and a missing target commit fail, pending is skipped (not decided yet) and
// unmappable or a group error is an error (could not be decided).
func reconcileJUnit(w io.Writer, rep *reconcileReport) error {
	doc := &junit.Suites{Name: rep.Title}
	for _, g := range rep.Groups {
		s := junit.Suite{
			Name: "kreconcile " + g.G.Group,
			Properties: junit.Props(
				junit.Property{Name: "group", Value: g.G.Group},
				junit.Property{Name: "source_state", Value: g.G.SourceState},
				junit.Property{Name: "target_state", Value: g.G.TargetState},
				junit.Property{Name: "status", Value: g.Status},
			),
		}
		class := "kreconcile." + g.G.Group
		if g.G.Err != "" {
			s.Cases = append(s.Cases, junit.Case{Name: "group", Classname: class,
				Error: &junit.Problem{Type: "error", Message: oneLine(g.G.Err), Body: g.G.Err}})
		}
		if g.G.NotMigrated != "" {
			s.Cases = append(s.Cases, junit.Case{Name: "group", Classname: class,
				Skipped: &junit.Skipped{Message: "not migrated: " + oneLine(g.G.NotMigrated)}})
		}
		for _, r := range g.Rows {
			c := junit.Case{Name: r.Name, Classname: class}
			body := rowDetail(r)
			switch r.P.Status {
			case reconcile.StatusExact:
				c.SystemOut = junit.Text(body)
			case reconcile.StatusPending:
				c.Skipped = &junit.Skipped{Message: r.Status}
				c.SystemOut = junit.Text(body)
			case reconcile.StatusBehind, reconcile.StatusAhead, reconcile.StatusMissingTargetOffset:
				c.Failure = &junit.Problem{Type: string(r.P.Status), Message: r.Status, Body: body}
			default:
				c.Error = &junit.Problem{Type: string(r.P.Status), Message: r.Status, Body: body}
			}
			s.Cases = append(s.Cases, c)
		}
		s.SystemOut = junit.Text(strings.Join(g.Notes, "\n"))
		doc.Suites = append(doc.Suites, s)
	}
	return junit.Write(w, doc)
}

func rowDetail(r reconcileRow) string {
	var b strings.Builder
	p := r.P
	fmt.Fprintf(&b, "group %s, %s: %s\n", r.Group, r.Name, r.Status)
	fmt.Fprintf(&b, "source committed G=%d (log [%d, %d), lag %s)\n", p.SourceCommitted, p.SourceStart, p.SourceEnd, r.SourceLag)
	fmt.Fprintf(&b, "target committed %s (log end %d, lag %s)\n", optOffset(p.TargetCommitted), p.TargetEnd, r.TargetLag)
	fmt.Fprintf(&b, "MM2 checkpoint %s\n", r.Checkpoint)
	fmt.Fprintf(&b, "exact target E(G) %s\n", optOffset(p.ExactTarget))
	fmt.Fprintf(&b, "if switched unchanged: re-delivers %s, skips %s\n", num(p.RedeliveredIfUnchanged), num(p.SkippedIfUnchanged))
	for _, d := range r.Details {
		b.WriteString(d + "\n")
	}
	return b.String()
}
