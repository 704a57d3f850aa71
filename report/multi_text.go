package report

import (
	"fmt"
	"io"
	"strings"

	"github.com/jedib0t/go-pretty/v6/table"
	"github.com/jedib0t/go-pretty/v6/text"
)

func multiTable(w io.Writer, rep *multiReport, opt Options) error {
	p := painter(opt.Color)
	var b strings.Builder
	fmt.Fprintf(&b, "%s\n", p.bold(rep.Title))
	writeVerdict(&b, p, rep.Verdict)
	fmt.Fprintf(&b, "%s\n", rep.Scope)
	if len(rep.Topics) > 0 {
		b.WriteString("\n")
		ft := fitTable{header: table.Row{"Topic", "Target topic", "Status", "Partitions", "Matched", "Missing", "Duplicated", "Mismatched", "Extra"},
			give: []give{{wrap: 12}, {drop: 2, wrap: 12}, {wrap: 12}, {}, {},
				{drop: 1, zeroOnly: true}, {drop: 1, zeroOnly: true}, {drop: 1, zeroOnly: true}, {drop: 1, zeroOnly: true}}}
		for _, t := range rep.Topics {
			c := t.Counts
			ft.rows = append(ft.rows, table.Row{t.Source, t.Target, p.paint(t.Level, t.Status), t.Partitions, num(c.Matched),
				countCell(p, levelBad, c.Missing), countCell(p, levelBad, c.Duplicated), countCell(p, levelBad, c.Mismatched), countCell(p, levelBad, c.Extra)})
		}
		c := rep.Total.Counts
		ft.footer = table.Row{"total", "", p.paint(rep.Verdict.Level, rep.Verdict.Word), rep.Total.Partitions,
			num(c.Matched), num(c.Missing), num(c.Duplicated), num(c.Mismatched), num(c.Extra)}
		ft.cfg = numericColumns(4, 5, 6, 7, 8, 9)
		tw := newTable(p)
		tw.Style().Format.Footer = text.FormatDefault
		b.WriteString(ft.render(tw, opt.Width))
		b.WriteString("\n")
	}
	var probs []string
	for _, t := range rep.Topics {
		for _, pr := range t.Problems {
			probs = append(probs, fmt.Sprintf("%s: %s %s", t.Source, p.paint(levelBad, "problem:"), oneLine(pr)))
		}
	}
	if len(probs) > 0 {
		fmt.Fprintf(&b, "\n%s\n", strings.Join(probs, "\n"))
	}
	if len(rep.Parts) > 0 {
		fmt.Fprintf(&b, "\n%s\n", p.bold("Partitions that differ or could not be read"))
	}
	for _, mp := range rep.Parts {
		c := mp.P.Counts
		fmt.Fprintf(&b, "\n%s partition %d: %s (source %s, target %s; matched %s, missing %s, duplicated %s, mismatched %s, extra %s)\n",
			mp.Topic, mp.P.Partition, p.paint(mp.Level, mp.Status), mp.Source, mp.Target,
			num(c.Matched), num(c.Missing), num(c.Duplicated), num(c.Mismatched), num(c.Extra))
		if mp.P.Err != "" {
			fmt.Fprintf(&b, "  %s %s\n", p.paint(levelErr, fmt.Sprintf("%-12s", "error")), oneLine(mp.P.Err))
		}
		for _, d := range mp.Details {
			fmt.Fprintf(&b, "  %s %s%s\n", p.paint(d.Level, fmt.Sprintf("%-12s", d.Class)), d.Prefix, bounded(d.Items, opt.maxItems()))
		}
		if mp.P.Truncated {
			fmt.Fprintf(&b, "  %s\n", p.dim("kverify cut these lists to bound the report; the counts are complete"))
		}
	}
	fmt.Fprintf(&b, "\n%s\n", p.bold(rep.Line))
	_, err := io.WriteString(w, b.String())
	return err
}

func multiMarkdown(w io.Writer, rep *multiReport, opt Options) error {
	var b strings.Builder
	fmt.Fprintf(&b, "# %s\n\n", mdEscape(rep.Title))
	mdVerdict(&b, rep.Verdict)
	fmt.Fprintf(&b, "%s\n\n", mdEscape(rep.Scope))
	if len(rep.Topics) > 0 {
		mdHeader(&b, "Topic", "Target topic", "Status", ">Partitions", ">Matched", ">Missing", ">Duplicated", ">Mismatched", ">Extra")
		for _, t := range rep.Topics {
			mdRow(&b, append([]string{mdEscape(t.Source), mdEscape(t.Target), mdBadge[t.Level] + " " + mdEscape(t.Status), fmt.Sprint(t.Partitions)}, multiCounts(t.Counts)...)...)
		}
		mdRow(&b, append([]string{"**total**", "", "**" + rep.Verdict.Word + "**", fmt.Sprint(rep.Total.Partitions)}, multiCounts(rep.Total.Counts)...)...)
		b.WriteString("\n")
	}
	for _, t := range rep.Topics {
		for _, pr := range t.Problems {
			fmt.Fprintf(&b, "- **%s**: problem: %s\n", mdEscape(t.Source), mdEscape(pr))
		}
		if len(t.Problems) > 0 {
			b.WriteString("\n")
		}
	}
	if len(rep.Parts) > 0 {
		b.WriteString("## Partitions that differ or could not be read\n\n")
	}
	for _, mp := range rep.Parts {
		fmt.Fprintf(&b, "### %s partition %d: %s\n\n", mdEscape(mp.Topic), mp.P.Partition, mdEscape(mp.Status))
		fmt.Fprintf(&b, "- source offsets %s, target offsets %s\n", mp.Source, mp.Target)
		if mp.P.Err != "" {
			fmt.Fprintf(&b, "- **error**: %s\n", mdEscape(mp.P.Err))
		}
		for _, d := range mp.Details {
			fmt.Fprintf(&b, "- **%s** — %s: %s\n", d.Class, mdEscape(d.Label), mdEscape(bounded(d.Items, opt.maxItems()).String()))
		}
		if mp.P.Truncated {
			b.WriteString("- kverify cut these lists to bound the report; the counts are complete.\n")
		}
		b.WriteString("\n")
	}
	fmt.Fprintf(&b, "**%s**\n", mdEscape(rep.Line))
	_, err := io.WriteString(w, b.String())
	return err
}
