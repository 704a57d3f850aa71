package report

import (
	"fmt"
	"io"
	"strings"
)

// markdownRenderer draws Markdown documents: a heading, the verdict as a list, then tables
// whose cells escape every name (mdEscape).
type markdownRenderer struct{}

var mdBadge = map[level]string{levelOK: "✅", levelWarn: "⚠️", levelBad: "❌", levelErr: "⛔"}

// mdDoc starts a Markdown report: the title as the heading, then the verdict.
func mdDoc(title string, v verdict) *strings.Builder {
	b := &strings.Builder{}
	fmt.Fprintf(b, "# %s\n\n", mdEscape(title))
	mdVerdict(b, v)
	return b
}

func mdVerdict(b *strings.Builder, v verdict) {
	fmt.Fprintf(b, "%s **%s: %s**\n\n", mdBadge[v.Level], v.Word, mdEscape(v.Headline))
	for _, d := range v.Details {
		fmt.Fprintf(b, "- %s\n", mdEscape(d))
	}
	if len(v.Details) > 0 {
		b.WriteString("\n")
	}
}

// mdPartDetails lists a partition's error, its items of each class (at most limit) and
// whether kverify cut them, then ends the section.
func mdPartDetails(b *strings.Builder, vp verifyPart, limit int) {
	if vp.P.Err != "" {
		fmt.Fprintf(b, "- **error**: %s\n", mdEscape(vp.P.Err))
	}
	for _, d := range vp.Details {
		fmt.Fprintf(b, "- **%s** — %s: %s\n", d.Class, mdEscape(d.Label), mdEscape(bounded(d.Items, limit).String()))
	}
	if vp.P.Truncated {
		b.WriteString("- kverify cut these lists to bound the report; the counts are complete.\n")
	}
	b.WriteString("\n")
}

func mdRow(b *strings.Builder, cells ...string) {
	b.WriteString("|")
	for _, c := range cells {
		b.WriteString(" " + c + " |")
	}
	b.WriteString("\n")
}

// mdHeader writes a header row; a cell starting with ">" is right-aligned.
func mdHeader(b *strings.Builder, cells ...string) {
	names := make([]string, len(cells))
	rules := make([]string, len(cells))
	for i, c := range cells {
		if strings.HasPrefix(c, ">") {
			names[i], rules[i] = c[1:], "---:"
		} else {
			names[i], rules[i] = c, "---"
		}
	}
	mdRow(b, names...)
	mdRow(b, rules...)
}

func (markdownRenderer) verify(w io.Writer, rep *verifyReport, opt Options) error {
	b := mdDoc(rep.Title, rep.Verdict)
	for _, t := range rep.Topics {
		fmt.Fprintf(b, "## %s → %s\n\n", mdEscape(t.Source), mdEscape(t.Target))
		if len(rep.Topics) > 1 {
			mdVerdict(b, t.Verdict)
		}
		if t.Compared != "" {
			fmt.Fprintf(b, "Compared: %s\n\n", mdEscape(t.Compared))
		}
		mdHeader(b, "Partition", "Status", "Source offsets", "Target offsets",
			">Matched", ">Missing", ">Duplicated", ">Mismatched", ">Extra", ">Ambiguous")
		for _, vp := range t.Parts {
			c := vp.P.Counts
			mdRow(b, fmt.Sprint(vp.P.Partition), mdBadge[vp.Level]+" "+mdEscape(vp.Status), vp.Source, vp.Target,
				num(c.Matched), num(c.Missing), num(c.Duplicated), num(c.Mismatched), num(c.Extra), num(c.Ambiguous))
		}
		c := t.Counts
		mdRow(b, "**total**", "**"+mdEscape(t.Verdict.Headline)+"**", "", "",
			num(c.Matched), num(c.Missing), num(c.Duplicated), num(c.Mismatched), num(c.Extra), num(c.Ambiguous))
		b.WriteString("\n")
		for _, vp := range t.Parts {
			if len(vp.Details) == 0 && !vp.P.Truncated && vp.P.Err == "" {
				continue
			}
			fmt.Fprintf(b, "### Partition %d: %s\n\n", vp.P.Partition, mdEscape(vp.Status))
			mdPartDetails(b, vp, opt.maxItems())
		}
	}
	return writeDoc(w, b)
}

func (markdownRenderer) reconcile(w io.Writer, rep *reconcileReport, opt Options) error {
	b := mdDoc(rep.Title, rep.Verdict)
	if len(rep.Groups) > 0 {
		mdHeader(b, "Group", "State (source / target)", "Topic/partition", ">Source G", ">Source lag",
			">Target committed", ">Target lag", ">MM2 checkpoint", ">Exact E(G)", "Status")
		for _, g := range rep.Groups {
			if len(g.Rows) == 0 {
				mdRow(b, mdEscape(g.G.Group), mdEscape(g.State), "", "", "", "", "", "", "", mdBadge[g.Level]+" "+mdEscape(g.Status))
				continue
			}
			for _, r := range g.Rows {
				mdRow(b, mdEscape(g.G.Group), mdEscape(g.State), mdEscape(r.Name), fmt.Sprint(r.P.SourceCommitted), r.SourceLag,
					optOffset(r.P.TargetCommitted), r.TargetLag, mdEscape(r.Checkpoint), optOffset(r.P.ExactTarget),
					mdBadge[r.Level]+" "+mdEscape(r.Status))
			}
		}
		b.WriteString("\n")
	}
	var notes []string
	for _, g := range rep.Groups {
		if g.G.Err != "" {
			notes = append(notes, fmt.Sprintf("**%s**: error: %s", mdEscape(g.G.Group), mdEscape(g.G.Err)))
		}
		for _, n := range g.Notes {
			notes = append(notes, fmt.Sprintf("**%s**: %s", mdEscape(g.G.Group), mdEscape(n)))
		}
		for _, r := range g.Rows {
			for _, d := range r.Details {
				notes = append(notes, fmt.Sprintf("**%s** %s: %s", mdEscape(g.G.Group), mdEscape(r.Name), mdEscape(d)))
			}
		}
	}
	if len(notes) > 0 {
		b.WriteString("## Details\n\n")
		writeNotes(b, notes, opt.maxNotes(), "- ", func(n string) string { return n }, "see the JSON report")
	}
	return writeDoc(w, b)
}

func (markdownRenderer) rollback(w io.Writer, rep *rollbackReport, _ Options) error {
	b := mdDoc(rep.Title, rep.Verdict)
	if len(rep.Rows) > 0 {
		mdHeader(b, "Group", ">Restored", ">Deleted", "Status")
		for _, row := range rep.Rows {
			mdRow(b, mdEscape(row.G.Group), fmt.Sprint(row.G.Restored), fmt.Sprint(row.G.Deleted), mdBadge[row.Level]+" "+mdEscape(row.Status))
		}
	}
	return writeDoc(w, b)
}
func (markdownRenderer) topics(w io.Writer, rep *topicsReport, opt Options) error {
	b := mdDoc(rep.Title, rep.Verdict)
	b.WriteString("## Brokers\n\n")
	mdHeader(b, "Cluster", ">Broker", "Address", "Rack", "Version")
	for _, br := range rep.Brokers {
		mdRow(b, mdEscape(br.Side+" "+br.Cluster), fmt.Sprint(br.B.ID), mdEscape(fmt.Sprintf("%s:%d", br.B.Host, br.B.Port)), mdEscape(br.Rack), mdEscape(br.B.Version))
	}
	b.WriteString("\n")
	if len(rep.Topics) > 0 {
		b.WriteString("## Topics\n\n")
		mdHeader(b, "Source topic", "Target topic", "Status", "Partitions (source / target)", "Replication (source / target)", ">Findings")
		for _, t := range rep.Topics {
			mdRow(b, mdEscape(t.T.SourceTopic), mdEscape(t.T.TargetTopic), mdBadge[t.Level]+" "+string(t.T.Status), t.Partitions, t.RF, fmt.Sprint(len(t.T.Findings)))
		}
		b.WriteString("\n")
	}
	if len(rep.Findings) > 0 {
		b.WriteString("## Findings\n\n")
		mdHeader(b, "Topic", "Field", "Source", "Target", "Severity", "MM2 syncs", "Note")
		for _, f := range rep.Findings {
			mdRow(b, mdEscape(f.Where), mdEscape(f.F.Field), mdEscape(f.F.Source), mdEscape(f.F.Target),
				mdBadge[f.Level]+" "+string(f.F.Severity), f.Syncs, mdEscape(f.F.Note))
		}
		b.WriteString("\n")
	}
	if len(rep.Notes) > 0 {
		b.WriteString("## Notes\n\n")
		writeNotes(b, rep.Notes, opt.maxNotes(), "- ", mdEscape, "see the JSON report")
	}
	return writeDoc(w, b)
}

func (markdownRenderer) lint(w io.Writer, rep *lintReport, _ Options) error {
	b := mdDoc(rep.Title, rep.Verdict)
	if len(rep.Items) > 0 {
		mdHeader(b, "Where", "Severity", "Key", "Finding", "Suggestion")
		for _, it := range rep.Items {
			mdRow(b, it.Where, mdBadge[it.Level]+" "+mdEscape(it.Severity), mdEscape(it.Key), mdEscape(it.Message), mdEscape(it.Suggestion))
		}
	}
	return writeDoc(w, b)
}

func (markdownRenderer) acls(w io.Writer, rep *aclsReport, _ Options) error {
	b := mdDoc(rep.Title, rep.Verdict)
	if len(rep.Rows) > 0 {
		mdHeader(b, "Status", "Principal", "Target principal", "Resource", "Rule", "Note", "MirrorMaker 2")
		for _, r := range rep.Rows {
			mdRow(b, mdBadge[r.Level]+" "+mdEscape(r.Status), mdEscape(r.Source), mdEscape(r.Target), mdEscape(r.Resource), mdEscape(r.Rule), mdEscape(r.Note), mdEscape(r.It.MM2))
		}
	}
	return writeDoc(w, b)
}
func (markdownRenderer) aclRollback(w io.Writer, rep *aclRollbackReport, _ Options) error {
	b := mdDoc(rep.Title, rep.Verdict)
	if len(rep.Rows) > 0 {
		mdHeader(b, "ACL", "Apply", "Rollback")
		for _, row := range rep.Rows {
			mdRow(b, mdEscape(row.A.ACL.String()), row.A.Was, mdBadge[row.Level]+" "+mdEscape(row.Status))
		}
	}
	return writeDoc(w, b)
}
func (markdownRenderer) multi(w io.Writer, rep *multiReport, opt Options) error {
	b := mdDoc(rep.Title, rep.Verdict)
	fmt.Fprintf(b, "%s\n\n", mdEscape(rep.Scope))
	if len(rep.Topics) > 0 {
		mdHeader(b, "Topic", "Target topic", "Status", ">Partitions", ">Matched", ">Missing", ">Duplicated", ">Mismatched", ">Extra")
		for _, t := range rep.Topics {
			mdRow(b, append([]string{mdEscape(t.Source), mdEscape(t.Target), mdBadge[t.Level] + " " + mdEscape(t.Status), fmt.Sprint(t.Partitions)}, multiCounts(t.Counts)...)...)
		}
		mdRow(b, append([]string{"**total**", "", "**" + rep.Verdict.Word + "**", fmt.Sprint(rep.Total.Partitions)}, multiCounts(rep.Total.Counts)...)...)
		b.WriteString("\n")
	}
	for _, t := range rep.Topics {
		for _, pr := range t.Problems {
			fmt.Fprintf(b, "- **%s**: problem: %s\n", mdEscape(t.Source), mdEscape(pr))
		}
		if len(t.Problems) > 0 {
			b.WriteString("\n")
		}
	}
	if len(rep.Parts) > 0 {
		b.WriteString("## Partitions that differ or could not be read\n\n")
	}
	for _, mp := range rep.Parts {
		fmt.Fprintf(b, "### %s partition %d: %s\n\n", mdEscape(mp.Topic), mp.P.Partition, mdEscape(mp.Status))
		fmt.Fprintf(b, "- source offsets %s, target offsets %s\n", mp.Source, mp.Target)
		mdPartDetails(b, mp.verifyPart, opt.maxItems())
	}
	fmt.Fprintf(b, "**%s**\n", mdEscape(rep.Line))
	return writeAll(w, b)
}
