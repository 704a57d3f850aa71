package report

import (
	"fmt"
	"io"
	"strings"
)

var mdBadge = map[level]string{levelOK: "✅", levelWarn: "⚠️", levelBad: "❌", levelErr: "⛔"}

func mdVerdict(b *strings.Builder, v verdict) {
	fmt.Fprintf(b, "%s **%s: %s**\n\n", mdBadge[v.Level], v.Word, mdEscape(v.Headline))
	for _, d := range v.Details {
		fmt.Fprintf(b, "- %s\n", mdEscape(d))
	}
	if len(v.Details) > 0 {
		b.WriteString("\n")
	}
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

func verifyMarkdown(w io.Writer, rep *verifyReport, opt Options) error {
	var b strings.Builder
	fmt.Fprintf(&b, "# %s\n\n", mdEscape(rep.Title))
	mdVerdict(&b, rep.Verdict)
	for _, t := range rep.Topics {
		fmt.Fprintf(&b, "## %s → %s\n\n", mdEscape(t.Source), mdEscape(t.Target))
		if len(rep.Topics) > 1 {
			mdVerdict(&b, t.Verdict)
		}
		if t.Compared != "" {
			fmt.Fprintf(&b, "Compared: %s\n\n", mdEscape(t.Compared))
		}
		mdHeader(&b, "Partition", "Status", "Source offsets", "Target offsets",
			">Matched", ">Missing", ">Duplicated", ">Mismatched", ">Extra", ">Ambiguous")
		for _, vp := range t.Parts {
			c := vp.P.Counts
			mdRow(&b, fmt.Sprint(vp.P.Partition), mdBadge[vp.Level]+" "+mdEscape(vp.Status), vp.Source, vp.Target,
				num(c.Matched), num(c.Missing), num(c.Duplicated), num(c.Mismatched), num(c.Extra), num(c.Ambiguous))
		}
		c := t.Counts
		mdRow(&b, "**total**", "**"+mdEscape(t.Verdict.Headline)+"**", "", "",
			num(c.Matched), num(c.Missing), num(c.Duplicated), num(c.Mismatched), num(c.Extra), num(c.Ambiguous))
		b.WriteString("\n")
		for _, vp := range t.Parts {
			if len(vp.Details) == 0 && !vp.P.Truncated && vp.P.Err == "" {
				continue
			}
			fmt.Fprintf(&b, "### Partition %d: %s\n\n", vp.P.Partition, mdEscape(vp.Status))
			if vp.P.Err != "" {
				fmt.Fprintf(&b, "- **error**: %s\n", mdEscape(vp.P.Err))
			}
			for _, d := range vp.Details {
				fmt.Fprintf(&b, "- **%s** — %s: %s\n", d.Class, mdEscape(d.Label), mdEscape(bounded(d.Items, opt.maxItems()).String()))
			}
			if vp.P.Truncated {
				b.WriteString("- kverify cut these lists to bound the report; the counts are complete.\n")
			}
			b.WriteString("\n")
		}
	}
	_, err := io.WriteString(w, strings.TrimRight(b.String(), "\n")+"\n")
	return err
}

func reconcileMarkdown(w io.Writer, rep *reconcileReport, opt Options) error {
	var b strings.Builder
	fmt.Fprintf(&b, "# %s\n\n", mdEscape(rep.Title))
	mdVerdict(&b, rep.Verdict)
	if len(rep.Groups) > 0 {
		mdHeader(&b, "Group", "State (source / target)", "Topic/partition", ">Source G", ">Source lag",
			">Target committed", ">Target lag", ">MM2 checkpoint", ">Exact E(G)", "Status")
		for _, g := range rep.Groups {
			if len(g.Rows) == 0 {
				mdRow(&b, mdEscape(g.G.Group), mdEscape(g.State), "", "", "", "", "", "", "", mdBadge[g.Level]+" "+mdEscape(g.Status))
				continue
			}
			for _, r := range g.Rows {
				mdRow(&b, mdEscape(g.G.Group), mdEscape(g.State), mdEscape(r.Name), fmt.Sprint(r.P.SourceCommitted), r.SourceLag,
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
		l := bounded(notes, opt.maxNotes())
		for _, n := range l.Items {
			fmt.Fprintf(&b, "- %s\n", n)
		}
		if l.More > 0 {
			fmt.Fprintf(&b, "- … and %d more (see the JSON report)\n", l.More)
		}
	}
	_, err := io.WriteString(w, strings.TrimRight(b.String(), "\n")+"\n")
	return err
}
