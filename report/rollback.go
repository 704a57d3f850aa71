package report

import (
	"fmt"
	"strings"

	"github.com/kmigrate/kmigrate/reconcile"
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

func offsetText(p *int64) string {
	if p == nil {
		return "none"
	}
	return fmt.Sprint(*p)
}
