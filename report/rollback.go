package report

import (
	"fmt"
	"io"
	"strings"

	"github.com/jedib0t/go-pretty/v6/table"

	"github.com/kmigrate/kmigrate/reconcile"
	"github.com/kmigrate/kmigrate/report/junit"
)

// rollbackReport draws `kreconcile rollback`: which groups got their saved offsets back.
type rollbackReport struct {
	Title   string
	R       *reconcile.RollbackResult
	Verdict verdict
	Rows    []rollbackRow
}

type rollbackRow struct {
	G      reconcile.RolledBackGrp
	Level  level
	Status string
}

func newRollbackReport(title string, r *reconcile.RollbackResult) *rollbackReport {
	rep := &rollbackReport{Title: title, R: r}
	if rep.Title == "" {
		rep.Title = "kreconcile rollback"
	}
	var restored, refused, failed int
	for _, g := range r.Groups {
		row := rollbackRow{G: g, Level: levelOK, Status: "restored"}
		switch {
		case g.Err != "":
			row.Level, row.Status = levelErr, "error: "+oneLine(g.Err)
			failed++
		case g.Refused != "":
			row.Level, row.Status = levelWarn, "refused: "+oneLine(g.Refused)
			refused++
		case len(g.Conflicts) > 0:
			var cs []string
			for _, c := range g.Conflicts {
				applied := "apply's commit not recorded"
				if c.Applied != nil {
					applied = "apply wrote " + offsetText(c.Applied)
				}
				cs = append(cs, fmt.Sprintf("%s/%d at %s (%s, backup %s)", c.Topic, c.Partition, offsetText(c.Now), applied, offsetText(c.Backup)))
			}
			row.Level = levelWarn
			row.Status = fmt.Sprintf("%s moved since the apply, left alone (--force restores): %s",
				plural(int64(len(g.Conflicts)), "partition", "partitions"), strings.Join(cs, "; "))
			refused++
		default:
			restored++
		}
		if g.Forced > 0 && row.Level == levelOK {
			row.Status = fmt.Sprintf("restored (%d forced over progress made since the apply)", g.Forced)
		}
		rep.Rows = append(rep.Rows, row)
	}
	v := verdict{Level: levelOK, Word: "RESTORED", Headline: fmt.Sprintf("%s restored", plural(int64(restored), "group", "groups"))}
	if refused+failed > 0 {
		v.Level, v.Word = levelWarn, "INCOMPLETE"
		if failed > 0 {
			v.Level = levelErr
		}
		v.Headline = fmt.Sprintf("%d restored, %d refused, %d failed", restored, refused, failed)
	}
	if r.Backup != "" {
		v.Details = append(v.Details, "from backup "+r.Backup)
	}
	if r.TargetCluster != nil {
		v.Details = append(v.Details, fmt.Sprintf("on cluster %s (cluster ID %s)", r.TargetCluster.Alias, r.TargetCluster.ID))
	}
	rep.Verdict = v
	return rep
}

func writeRollback(w io.Writer, f Format, r *reconcile.RollbackResult, opt Options) error {
	rep := newRollbackReport(opt.Title, r)
	var b strings.Builder
	switch f {
	case Table:
		p := painter(opt.Color)
		fmt.Fprintf(&b, "%s\n", p.bold(rep.Title))
		writeVerdict(&b, p, rep.Verdict)
		if len(rep.Rows) > 0 {
			// Narrow terminals wrap the status, then the group names.
			ft := fitTable{header: table.Row{"Group", "Restored", "Deleted", "Status"},
				give: []give{{wrap: 12}, {}, {}, {wrap: 20}}, cfg: numericColumns(2, 3)}
			for _, row := range rep.Rows {
				ft.rows = append(ft.rows, table.Row{row.G.Group, row.G.Restored, row.G.Deleted, p.paint(row.Level, row.Status)})
			}
			b.WriteString("\n" + ft.render(newTable(p), opt.Width) + "\n")
		}
	case Markdown:
		fmt.Fprintf(&b, "# %s\n\n", mdEscape(rep.Title))
		mdVerdict(&b, rep.Verdict)
		if len(rep.Rows) > 0 {
			mdHeader(&b, "Group", ">Restored", ">Deleted", "Status")
			for _, row := range rep.Rows {
				mdRow(&b, mdEscape(row.G.Group), fmt.Sprint(row.G.Restored), fmt.Sprint(row.G.Deleted), mdBadge[row.Level]+" "+mdEscape(row.Status))
			}
		}
	case HTML:
		return templates.ExecuteTemplate(w, "page.tmpl", htmlPage{Title: rep.Title, CSS: pageCSS, Verdict: rep.Verdict,
			Kind: "rollback", Rollback: rep, Subtitle: "target offsets restored from the backup that groups --apply saved"})
	default:
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
		return junit.Write(w, &junit.Suites{Name: rep.Title, Suites: []junit.Suite{s}})
	}
	_, err := io.WriteString(w, strings.TrimRight(b.String(), "\n")+"\n")
	return err
}

func offsetText(p *int64) string {
	if p == nil {
		return "none"
	}
	return fmt.Sprint(*p)
}
