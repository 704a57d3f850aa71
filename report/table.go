package report

import (
	"fmt"
	"io"
	"strings"

	"github.com/jedib0t/go-pretty/v6/table"
	"github.com/jedib0t/go-pretty/v6/text"
)

// painter colours text by level when colours are on. It writes the ANSI sequences itself so
// the output depends only on Options, not on the environment go-pretty would consult.
type painter bool

func (p painter) paint(l level, s string) string {
	if !p || s == "" {
		return s
	}
	code := map[level]string{levelOK: "32", levelWarn: "33", levelBad: "31", levelErr: "1;31"}[l]
	if code == "" {
		return s
	}
	return "\x1b[" + code + "m" + s + "\x1b[0m"
}

func (p painter) bold(s string) string {
	if !p {
		return s
	}
	return "\x1b[1m" + s + "\x1b[0m"
}

func (p painter) dim(s string) string {
	if !p {
		return s
	}
	return "\x1b[2m" + s + "\x1b[0m"
}

func newTable(p painter) table.Writer {
	t := table.NewWriter()
	t.SetStyle(table.StyleLight)
	t.Style().Format.Header = text.FormatDefault
	t.Style().Options.SeparateRows = false
	if p {
		t.Style().Color.Header = text.Colors{text.Bold}
	}
	return t
}

// writeVerdict writes the summary lines that head every table and Markdown report.
func writeVerdict(w io.Writer, p painter, v verdict) {
	fmt.Fprintf(w, "%s %s\n", p.paint(v.Level, p.bold(v.Word+":")), p.bold(v.Headline))
	for _, d := range v.Details {
		fmt.Fprintf(w, "  - %s\n", d)
	}
}

func verifyTable(w io.Writer, rep *verifyReport, opt Options) error {
	p := painter(opt.Color)
	var b strings.Builder
	fmt.Fprintf(&b, "%s\n", p.bold(rep.Title))
	writeVerdict(&b, p, rep.Verdict)
	for _, t := range rep.Topics {
		b.WriteString("\n")
		if len(rep.Topics) > 1 {
			fmt.Fprintf(&b, "%s → %s\n", p.bold(t.Source), p.bold(t.Target))
			writeVerdict(&b, p, t.Verdict)
		} else {
			fmt.Fprintf(&b, "source %s → target %s\n", t.Source, t.Target)
		}
		if t.Compared != "" {
			fmt.Fprintf(&b, "compared: %s\n", t.Compared)
		}
		// Narrow terminals lose the all-zero difference counts first, then the target offsets
		// (the source's say which records were compared); the ranges and the status wrap.
		ft := fitTable{header: table.Row{"Partition", "Status", "Source offsets", "Target offsets",
			"Matched", "Missing", "Duplicated", "Mismatched", "Extra", "Ambiguous"},
			give: []give{{}, {wrap: 10}, {wrap: 12}, {drop: 2, wrap: 12}, {},
				{drop: 1, zeroOnly: true}, {drop: 1, zeroOnly: true}, {drop: 1, zeroOnly: true}, {drop: 1, zeroOnly: true}, {drop: 1, zeroOnly: true}}}
		for _, vp := range t.Parts {
			c := vp.P.Counts
			ft.rows = append(ft.rows, table.Row{vp.P.Partition, p.paint(vp.Level, vp.Status), vp.Source, vp.Target,
				num(c.Matched), countCell(p, levelBad, c.Missing), countCell(p, levelBad, c.Duplicated),
				countCell(p, levelBad, c.Mismatched), countCell(p, levelBad, c.Extra), countCell(p, levelWarn, c.Ambiguous)})
		}
		c := t.Counts
		ft.footer = table.Row{"total", p.paint(t.Verdict.Level, t.Verdict.Headline), "", "",
			num(c.Matched), num(c.Missing), num(c.Duplicated), num(c.Mismatched), num(c.Extra), num(c.Ambiguous)}
		ft.cfg = numericColumns(5, 6, 7, 8, 9, 10)
		tw := newTable(p)
		tw.Style().Format.Footer = text.FormatDefault
		b.WriteString(ft.render(tw, opt.Width))
		b.WriteString("\n")
		for _, vp := range t.Parts {
			if len(vp.Details) == 0 && !vp.P.Truncated && vp.P.Err == "" {
				continue
			}
			fmt.Fprintf(&b, "\npartition %d: %s\n", vp.P.Partition, p.paint(vp.Level, vp.Status))
			if vp.P.Err != "" {
				fmt.Fprintf(&b, "  %s %s\n", p.paint(levelErr, fmt.Sprintf("%-12s", "error")), oneLine(vp.P.Err))
			}
			for _, d := range vp.Details {
				fmt.Fprintf(&b, "  %s %s%s\n", p.paint(d.Level, fmt.Sprintf("%-12s", d.Class)), d.Prefix,
					bounded(d.Items, opt.maxItems()))
			}
			if vp.P.Truncated {
				fmt.Fprintf(&b, "  %s\n", p.dim("kverify cut these lists to bound the report; the counts are complete"))
			}
		}
	}
	_, err := io.WriteString(w, b.String())
	return err
}

// countCell shows zero plainly and any other count in the colour of its level.
func countCell(p painter, l level, n int64) string {
	if n == 0 {
		return "0"
	}
	return p.paint(l, num(n))
}

func numericColumns(cols ...int) []table.ColumnConfig {
	var cc []table.ColumnConfig
	for _, c := range cols {
		cc = append(cc, table.ColumnConfig{Number: c, Align: text.AlignRight, AlignFooter: text.AlignRight})
	}
	return cc
}

func reconcileTable(w io.Writer, rep *reconcileReport, opt Options) error {
	p := painter(opt.Color)
	var b strings.Builder
	fmt.Fprintf(&b, "%s\n", p.bold(rep.Title))
	writeVerdict(&b, p, rep.Verdict)
	if len(rep.Groups) > 0 {
		b.WriteString("\n")
		// Narrow terminals lose, in this order, MM2's checkpoint (the status judges it), the
		// source G (its lag is shown), the target's committed offset (its lag is shown) and the
		// groups' states; names and the status wrap. Lags, E(G) and the status always stay.
		ft := fitTable{header: table.Row{"Group", "State (source / target)", "Topic/partition",
			"Source G", "Source lag", "Target committed", "Target lag", "MM2 checkpoint", "Exact E(G)", "Status"},
			give: []give{{wrap: 12}, {drop: 4}, {wrap: 14}, {drop: 2}, {}, {drop: 3}, {}, {drop: 1}, {}, {wrap: 12}}}
		for _, g := range rep.Groups {
			if len(g.Rows) == 0 {
				ft.rows = append(ft.rows, table.Row{g.G.Group, g.State, "", "", "", "", "", "", "", p.paint(g.Level, g.Status)})
				continue
			}
			for _, r := range g.Rows {
				ft.rows = append(ft.rows, table.Row{g.G.Group, g.State, r.Name, r.P.SourceCommitted, r.SourceLag,
					optOffset(r.P.TargetCommitted), r.TargetLag, p.paint(r.CPLevel, r.Checkpoint),
					optOffset(r.P.ExactTarget), p.paint(r.Level, r.Status)})
			}
		}
		ft.cfg = numericColumns(4, 5, 6, 7, 9)
		ft.cfg = append(ft.cfg, table.ColumnConfig{Number: 1, AutoMerge: true}, table.ColumnConfig{Number: 2, AutoMerge: true})
		b.WriteString(ft.render(newTable(p), opt.Width))
		b.WriteString("\n")
	}
	var notes []string
	for _, g := range rep.Groups {
		if g.G.Err != "" {
			notes = append(notes, fmt.Sprintf("%s: %s %s", g.G.Group, p.paint(levelErr, "error:"), oneLine(g.G.Err)))
		}
		for _, n := range g.Notes {
			notes = append(notes, fmt.Sprintf("%s: %s", g.G.Group, n))
		}
		for _, r := range g.Rows {
			for _, d := range r.Details {
				notes = append(notes, fmt.Sprintf("%s %s: %s", g.G.Group, r.Name, d))
			}
		}
	}
	if len(notes) > 0 {
		b.WriteString("\n")
		l := bounded(notes, opt.maxNotes())
		for _, n := range l.Items {
			fmt.Fprintf(&b, "  %s\n", n)
		}
		if l.More > 0 {
			fmt.Fprintf(&b, "  … and %d more (see --format json)\n", l.More)
		}
	}
	_, err := io.WriteString(w, b.String())
	return err
}
