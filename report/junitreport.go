package report

import (
	"fmt"
	"io"
	"strings"

	"github.com/kmigrate/kmigrate/aclsync"
	"github.com/kmigrate/kmigrate/reconcile"
	"github.com/kmigrate/kmigrate/report/junit"
	"github.com/kmigrate/kmigrate/verify"
)

// junitRenderer draws JUnit XML in the Jenkins schema (junit-10.xsd) that CI systems read.
type junitRenderer struct{}

// writeSuite writes a document of one suite, s, named title.
func writeSuite(w io.Writer, title string, s junit.Suite) error {
	return junit.Write(w, &junit.Suites{Name: title, Suites: []junit.Suite{s}})
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

// verify writes one suite per topic and one case per partition; a partition with
// differences fails with the ranges as detail, one that could not be aligned is an error.
func (junitRenderer) verify(w io.Writer, rep *verifyReport, _ Options) error {
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

// reconcile writes one suite per group and one case per group partition: exact passes,
// behind, ahead and a missing target commit fail, pending is skipped (not decided yet) and
// unmappable or a group error is an error (could not be decided).
func (junitRenderer) reconcile(w io.Writer, rep *reconcileReport, _ Options) error {
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

// rollback writes one case per group: restored passes, refused fails, a failure is an error.
func (junitRenderer) rollback(w io.Writer, rep *rollbackReport, _ Options) error {
	s := junit.Suite{Name: rep.Title}
	for _, row := range rep.Rows {
		c := junit.Case{Name: row.G.Group, Classname: "kreconcile.rollback"}
		switch row.Level {
		case levelErr:
			c.Error = &junit.Problem{Type: "error", Message: row.Status, Body: row.G.Err}
		case levelWarn:
			c.Failure = &junit.Problem{Type: "refused", Message: row.Status, Body: row.G.Refused}
			if row.G.Refused == "" {
				c.Failure.Body = row.Status
			}
		default:
			c.SystemOut = junit.Text(fmt.Sprintf("restored %s, deleted %s that did not exist before",
				plural(int64(row.G.Restored), "offset", "offsets"), plural(int64(row.G.Deleted), "offset", "offsets")))
		}
		s.Cases = append(s.Cases, c)
	}
	return writeSuite(w, rep.Title, s)
}

// acls writes one case per ACL: a write the plan still calls for fails (missing, or
// target-only with --delete-extra), a skipped ACL is skipped, a failed write is an error.
func (junitRenderer) acls(w io.Writer, rep *aclsReport, _ Options) error {
	s := junit.Suite{Name: rep.Title}
	for _, r := range rep.Rows {
		c := junit.Case{Name: fmt.Sprintf("%s %s %s (%s)", r.Target, r.Rule, r.Resource, r.Source), Classname: "kreconcile.acls." + string(r.It.Status)}
		switch {
		case r.Level == levelErr:
			c.Error = &junit.Problem{Type: "error", Message: r.Status, Body: r.It.Err}
		case r.It.Status == aclsync.Missing && r.It.Action == "":
			c.Failure = &junit.Problem{Type: "missing", Message: r.Status, Body: r.It.MM2}
		case r.It.Status == aclsync.TargetOnly && rep.P.DeleteExtra && r.It.Action == "":
			c.Failure = &junit.Problem{Type: "target-only", Message: r.Status}
		case r.It.Status == aclsync.Skipped:
			c.Skipped = &junit.Skipped{Message: r.Note}
		default:
			c.SystemOut = junit.Text(r.Status + "; MirrorMaker 2: " + r.It.MM2)
		}
		s.Cases = append(s.Cases, c)
	}
	return writeSuite(w, rep.Title, s)
}

// aclRollback writes one case per ACL of the backup; a failed one is an error.
func (junitRenderer) aclRollback(w io.Writer, rep *aclRollbackReport, _ Options) error {
	s := junit.Suite{Name: rep.Title}
	for _, row := range rep.Rows {
		c := junit.Case{Name: row.A.ACL.String(), Classname: "kreconcile.rollback.acls"}
		if row.Level == levelErr {
			c.Error = &junit.Problem{Type: "error", Message: row.Status, Body: row.A.Err}
		} else {
			c.SystemOut = junit.Text(row.Status)
		}
		s.Cases = append(s.Cases, c)
	}
	return writeSuite(w, rep.Title, s)
}

// topics writes one suite with one case per topic (ok passes; differs, risk and missing
// fail, typed by the status, with every finding as detail) and one case for the clusters.
func (junitRenderer) topics(w io.Writer, rep *topicsReport, _ Options) error {
	s := junit.Suite{Name: rep.Title, Properties: junit.Props(
		junit.Property{Name: "flow", Value: rep.R.Flow},
		junit.Property{Name: "source_cluster", Value: rep.R.Source.Alias},
		junit.Property{Name: "target_cluster", Value: rep.R.Target.Alias},
		junit.Property{Name: "verdict", Value: rep.Verdict.Headline},
	)}
	detail := func(fs []verify.Finding, notes []string) string {
		var b strings.Builder
		for _, f := range fs {
			fmt.Fprintf(&b, "%s %s: source %q, target %q", f.Severity, f.Field, f.Source, f.Target)
			if f.MM2Syncs != nil {
				fmt.Fprintf(&b, ", MM2 syncs: %v", *f.MM2Syncs)
			}
			fmt.Fprintf(&b, "\n  %s\n", f.Note)
		}
		for _, n := range notes {
			b.WriteString("note: " + n + "\n")
		}
		return b.String()
	}
	summary := func(fs []verify.Finding) string {
		var parts []string
		for _, f := range fs {
			parts = append(parts, string(f.Severity)+" "+f.Field)
		}
		return strings.Join(parts, ", ")
	}
	cc := junit.Case{Name: "clusters", Classname: "kverify.topics"}
	if fs := rep.R.ClusterFindings; len(fs) > 0 {
		cc.Failure = &junit.Problem{Type: "differs", Message: summary(fs), Body: detail(fs, nil)}
	} else {
		cc.SystemOut = junit.Text(rep.Verdict.Details[len(rep.Verdict.Details)-1])
	}
	s.Cases = append(s.Cases, cc)
	for _, t := range rep.Topics {
		c := junit.Case{Name: t.T.SourceTopic + " → " + t.T.TargetTopic, Classname: "kverify.topics"}
		if t.T.Status == verify.TopicOK {
			c.SystemOut = junit.Text(detail(nil, t.T.Notes))
		} else {
			c.Failure = &junit.Problem{Type: string(t.T.Status), Message: string(t.T.Status) + ": " + summary(t.T.Findings), Body: detail(t.T.Findings, t.T.Notes)}
		}
		s.Cases = append(s.Cases, c)
	}
	return writeSuite(w, rep.Title, s)
}

// lint writes one case per finding, each a failure typed by its severity (kmirror lint
// exits 1 on any finding), or one passing case when the file is clean.
func (junitRenderer) lint(w io.Writer, rep *lintReport, _ Options) error {
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
	return writeSuite(w, rep.Title, s)
}

// multi writes one suite for the run and one case per topic: an identical topic passes,
// one that differs fails with its problems and the partitions that differ as detail, one that
// could not be read is an error, one with nothing to compare is skipped.
func (junitRenderer) multi(w io.Writer, rep *multiReport, _ Options) error {
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
	return writeSuite(w, rep.Title, s)
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
