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

// tableRenderer draws the terminal tables (go-pretty), fitted to Options.Width; ANSI colours
// only with Options.Color.
type tableRenderer struct{}

// tableDoc starts a table report: the painter of opt, and the text so far, the title in bold
// and the verdict.
func tableDoc(opt Options, title string, v verdict) (painter, *strings.Builder) {
	p, b := painter(opt.Color), &strings.Builder{}
	fmt.Fprintf(b, "%s\n", p.bold(title))
	writeVerdict(b, p, v)
	return p, b
}

// writeVerdict writes the summary lines that head every table report.
func writeVerdict(w io.Writer, p painter, v verdict) {
	fmt.Fprintf(w, "%s %s\n", p.paint(v.Level, p.bold(v.Word+":")), p.bold(v.Headline))
	for _, d := range v.Details {
		fmt.Fprintf(w, "  - %s\n", d)
	}
}

// partDetails lists under a partition's line its error, its items of each class (at most
// limit) and whether kverify cut them.
func partDetails(b *strings.Builder, p painter, vp verifyPart, limit int) {
	if vp.P.Err != "" {
		fmt.Fprintf(b, "  %s %s\n", p.paint(levelErr, fmt.Sprintf("%-12s", "error")), oneLine(vp.P.Err))
	}
	for _, d := range vp.Details {
		fmt.Fprintf(b, "  %s %s%s\n", p.paint(d.Level, fmt.Sprintf("%-12s", d.Class)), d.Prefix, bounded(d.Items, limit))
	}
	if vp.P.Truncated {
		fmt.Fprintf(b, "  %s\n", p.dim("kverify cut these lists to bound the report; the counts are complete"))
	}
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

func (tableRenderer) verify(w io.Writer, rep *verifyReport, opt Options) error {
	p, b := tableDoc(opt, rep.Title, rep.Verdict)
	for _, t := range rep.Topics {
		b.WriteString("\n")
		if len(rep.Topics) > 1 {
			fmt.Fprintf(b, "%s → %s\n", p.bold(t.Source), p.bold(t.Target))
			writeVerdict(b, p, t.Verdict)
		} else {
			fmt.Fprintf(b, "source %s → target %s\n", t.Source, t.Target)
		}
		if t.Compared != "" {
			fmt.Fprintf(b, "compared: %s\n", t.Compared)
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
			fmt.Fprintf(b, "\npartition %d: %s\n", vp.P.Partition, p.paint(vp.Level, vp.Status))
			partDetails(b, p, vp, opt.maxItems())
		}
	}
	return writeAll(w, b)
}

func (tableRenderer) reconcile(w io.Writer, rep *reconcileReport, opt Options) error {
	p, b := tableDoc(opt, rep.Title, rep.Verdict)
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
		writeNotes(b, notes, opt.maxNotes(), "  ", func(n string) string { return n }, "see --format json")
	}
	return writeAll(w, b)
}

func (tableRenderer) rollback(w io.Writer, rep *rollbackReport, opt Options) error {
	p, b := tableDoc(opt, rep.Title, rep.Verdict)
	if len(rep.Rows) > 0 {
		// Narrow terminals wrap the status, then the group names.
		ft := fitTable{header: table.Row{"Group", "Restored", "Deleted", "Status"},
			give: []give{{wrap: 12}, {}, {}, {wrap: 20}}, cfg: numericColumns(2, 3)}
		for _, row := range rep.Rows {
			ft.rows = append(ft.rows, table.Row{row.G.Group, row.G.Restored, row.G.Deleted, p.paint(row.Level, row.Status)})
		}
		b.WriteString("\n" + ft.render(newTable(p), opt.Width) + "\n")
	}
	return writeDoc(w, b)
}
func (tableRenderer) topics(w io.Writer, rep *topicsReport, opt Options) error {
	p, b := tableDoc(opt, rep.Title, rep.Verdict)

	tw := newTable(p)
	tw.AppendHeader(table.Row{"Cluster", "Broker", "Address", "Rack", "Version"})
	for _, br := range rep.Brokers {
		tw.AppendRow(table.Row{br.Side + " " + br.Cluster, br.B.ID, fmt.Sprintf("%s:%d", br.B.Host, br.B.Port), br.Rack, br.B.Version})
	}
	b.WriteString("\n" + tw.Render() + "\n")

	if len(rep.Topics) > 0 {
		// Narrow terminals wrap names and headers; no column is dropped.
		ft := fitTable{header: table.Row{"Source topic", "Target topic", "Status", "Partitions (source / target)", "Replication (source / target)", "Findings"},
			give: []give{{wrap: 12}, {wrap: 12}, {}, {wrap: 10}, {wrap: 11}, {}}, cfg: numericColumns(6)}
		for _, t := range rep.Topics {
			ft.rows = append(ft.rows, table.Row{t.T.SourceTopic, t.T.TargetTopic, p.paint(t.Level, string(t.T.Status)), t.Partitions, t.RF, len(t.T.Findings)})
		}
		b.WriteString("\n" + ft.render(newTable(p), opt.Width) + "\n")
	}
	if len(rep.Findings) > 0 {
		// Narrow terminals drop "MM2 syncs" first (the note says what to do), then wrap.
		ft := fitTable{header: table.Row{"Topic", "Field", "Source", "Target", "Severity", "MM2 syncs", "Note"},
			give: []give{{wrap: 12}, {wrap: 10}, {wrap: 10}, {wrap: 10}, {}, {drop: 1}, {wrap: 16}},
			cfg: []table.ColumnConfig{
				{Number: 3, WidthMax: 24, WidthMaxEnforcer: text.WrapSoft},
				{Number: 4, WidthMax: 24, WidthMaxEnforcer: text.WrapSoft},
				{Number: 7, WidthMax: 60, WidthMaxEnforcer: text.WrapSoft}}}
		for _, f := range rep.Findings {
			ft.rows = append(ft.rows, table.Row{f.Where, f.F.Field, f.F.Source, f.F.Target, p.paint(f.Level, string(f.F.Severity)), f.Syncs, oneLine(f.F.Note)})
		}
		tw := newTable(p)
		tw.Style().Options.SeparateRows = true
		b.WriteString("\n" + ft.render(tw, opt.Width) + "\n")
	}
	if len(rep.Notes) > 0 {
		b.WriteString("\n")
		writeNotes(b, rep.Notes, opt.maxNotes(), "  ", p.dim, "see the JSON report")
	}
	return writeAll(w, b)
}

func (tableRenderer) lint(w io.Writer, rep *lintReport, opt Options) error {
	p, b := tableDoc(opt, rep.Title, rep.Verdict)
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
	return writeAll(w, b)
}

func (tableRenderer) acls(w io.Writer, rep *aclsReport, opt Options) error {
	p, b := tableDoc(opt, rep.Title, rep.Verdict)
	if len(rep.Rows) > 0 {
		// Narrow terminals wrap every text column; none is dropped.
		ft := fitTable{header: table.Row{"Status", "Principal", "Target principal", "Resource", "Rule", "Note", "MirrorMaker 2"},
			give: []give{{wrap: 10}, {wrap: 12}, {wrap: 12}, {wrap: 14}, {wrap: 12}, {wrap: 14}, {wrap: 12}}}
		for _, r := range rep.Rows {
			mm := r.It.MM2
			if !r.It.MM2Differs {
				mm = p.dim(mm)
			}
			ft.rows = append(ft.rows, table.Row{p.paint(r.Level, r.Status), r.Source, r.Target, r.Resource, r.Rule, r.Note, mm})
		}
		b.WriteString("\n" + ft.render(newTable(p), opt.Width) + "\n")
	}
	return writeDoc(w, b)
}
func (tableRenderer) aclRollback(w io.Writer, rep *aclRollbackReport, opt Options) error {
	p, b := tableDoc(opt, rep.Title, rep.Verdict)
	if len(rep.Rows) > 0 {
		tw := newTable(p)
		tw.AppendHeader(table.Row{"ACL", "Apply", "Rollback"})
		for _, row := range rep.Rows {
			tw.AppendRow(table.Row{row.A.ACL.String(), row.A.Was, p.paint(row.Level, row.Status)})
		}
		b.WriteString("\n" + tw.Render() + "\n")
	}
	return writeDoc(w, b)
}
func (tableRenderer) multi(w io.Writer, rep *multiReport, opt Options) error {
	p, b := tableDoc(opt, rep.Title, rep.Verdict)
	fmt.Fprintf(b, "%s\n", rep.Scope)
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
		fmt.Fprintf(b, "\n%s\n", strings.Join(probs, "\n"))
	}
	if len(rep.Parts) > 0 {
		fmt.Fprintf(b, "\n%s\n", p.bold("Partitions that differ or could not be read"))
	}
	for _, mp := range rep.Parts {
		c := mp.P.Counts
		fmt.Fprintf(b, "\n%s partition %d: %s (source %s, target %s; matched %s, missing %s, duplicated %s, mismatched %s, extra %s)\n",
			mp.Topic, mp.P.Partition, p.paint(mp.Level, mp.Status), mp.Source, mp.Target,
			num(c.Matched), num(c.Missing), num(c.Duplicated), num(c.Mismatched), num(c.Extra))
		partDetails(b, p, mp.verifyPart, opt.maxItems())
	}
	fmt.Fprintf(b, "\n%s\n", p.bold(rep.Line))
	return writeAll(w, b)
}
