package report

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/kmigrate/kmigrate/reconcile"
)

// reconcileReport is what every reconcile renderer draws.
type reconcileReport struct {
	Title   string
	R       *reconcile.Result
	Verdict verdict
	Groups  []reconcileGroup
	// Rows are every group partition in order, for the chart and the counts.
	Rows []reconcileRow
	// By status, over all group partitions.
	Exact, Behind, Ahead, Pending, NoTarget, Unmappable int
	// FailedGroups is how many groups carry an error; NotMigrated how many are of a type no
	// tool migrates (share, streams).
	FailedGroups, NotMigrated int
	// Redeliver and Skip are the totals a switch right now would cause.
	Redeliver, Skip int64
	// AbortedAhead is the total of the records of aborted transactions after E(G), which
	// consumers reading read_uncommitted read again after the switch, over AbortedGroups groups.
	AbortedAhead  int64
	AbortedGroups int
	// AppsNotReady counts the Kafka Streams applications that cannot switch as a whole yet.
	AppsNotReady int
}

type reconcileGroup struct {
	G      *reconcile.Group
	Level  level
	State  string // "Empty / Empty"
	Status string // worst row, or the group error
	Notes  []string
	Rows   []reconcileRow
}

type reconcileRow struct {
	Group      string
	P          *reconcile.Partition
	Name       string // "orders/0", or "orders/0 → us.orders" when renamed
	Level      level
	Status     string // "behind: would re-deliver 8", "exact; 3 aborted records ahead"
	Checkpoint string // "92 (behind)"
	CPLevel    level
	SourceLag  string // "31", or "31 (30 records)" when markers or aborted records lie in between
	TargetLag  string
	Details    []string // reason and proof
}

func newReconcileReport(title string, r *reconcile.Result) *reconcileReport {
	rep := &reconcileReport{Title: title, R: r}
	if rep.Title == "" {
		rep.Title = "kreconcile groups"
		if r.Applied {
			rep.Title = "kreconcile groups --apply"
		}
	}
	for gi := range r.Groups {
		g := &r.Groups[gi]
		rg := reconcileGroup{G: g, Level: levelOK, State: state(g.SourceState) + " / " + state(g.TargetState)}
		for pi := range g.Partitions {
			row := newReconcileRow(g.Group, &g.Partitions[pi])
			rg.Level = worse(rg.Level, row.Level)
			rg.Rows = append(rg.Rows, row)
			rep.Rows = append(rep.Rows, row)
			rep.Redeliver += row.P.RedeliveredIfUnchanged
			rep.Skip += row.P.SkippedIfUnchanged
			switch row.P.Status {
			case reconcile.StatusExact:
				rep.Exact++
			case reconcile.StatusBehind:
				rep.Behind++
			case reconcile.StatusAhead:
				rep.Ahead++
			case reconcile.StatusPending:
				rep.Pending++
			case reconcile.StatusMissingTargetOffset:
				rep.NoTarget++
			default:
				rep.Unmappable++
			}
		}
		rg.Status = groupStatus(rg)
		if g.AbortedAhead > 0 {
			rep.AbortedAhead += g.AbortedAhead
			rep.AbortedGroups++
		}
		for _, row := range rg.Rows {
			if note := row.P.AbortedAheadNote(); note != "" {
				rg.Notes = append(rg.Notes, note)
			}
		}
		if g.NotMigrated != "" {
			rep.NotMigrated++
			rg.Level = worse(rg.Level, levelWarn)
			rg.Status = "not migrated: " + g.SourceType + " group"
			rg.Notes = append(rg.Notes, "not migrated: "+oneLine(g.NotMigrated))
		}
		if g.Err != "" {
			rep.FailedGroups++
			rg.Level = levelErr
			rg.Status = "error: group not reconciled" // the error itself is in the details
		}
		if g.Applied {
			rg.Notes = append(rg.Notes, "applied: the exact offsets were committed on the target")
		}
		if a := g.App; a != nil {
			rg.Notes = append(rg.Notes, appNotes(a)...)
			if !a.Ready {
				rep.AppsNotReady++
				rg.Level = worse(rg.Level, levelErr)
				rg.Status = "application not ready: " + rg.Status
			} else {
				rg.Status = "application ready: " + rg.Status
			}
		}
		if g.Refused != "" {
			rg.Notes = append(rg.Notes, "apply refused: "+oneLine(g.Refused))
		}
		rep.Groups = append(rep.Groups, rg)
	}
	rep.Verdict = rep.verdict()
	return rep
}

// appNotes describe a Kafka Streams application: its parts, its checks, its state.
func appNotes(a *reconcile.App) []string {
	out := []string{fmt.Sprintf("Kafka Streams application %s (recognised by %s), switched as one unit: inputs %s; repartition %s; changelogs %s",
		a.ID, a.RecognisedBy, listOrNone(a.Inputs), listOrNone(a.Repartition), listOrNone(a.Changelogs))}
	for _, p := range a.Problems {
		out = append(out, "not ready: "+oneLine(p))
	}
	for _, s := range a.State {
		e := "unknown (" + string(s.Status) + ")"
		if s.ExactTarget != nil {
			e = strconv.FormatInt(*s.ExactTarget, 10)
		}
		out = append(out, fmt.Sprintf("state %s/%d: source end %d → target %s", s.Topic, s.Partition, s.SourceCommitted, e))
	}
	for _, l := range a.LocalState {
		out = append(out, "local state: "+l)
	}
	return out
}

func listOrNone(ss []string) string {
	if len(ss) == 0 {
		return "none"
	}
	return strings.Join(ss, ", ")
}

func state(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

func groupStatus(g reconcileGroup) string {
	if len(g.Rows) == 0 {
		return "no committed offsets"
	}
	var behind, ahead, other int
	for _, r := range g.Rows {
		switch r.P.Status {
		case reconcile.StatusExact:
		case reconcile.StatusBehind:
			behind++
		case reconcile.StatusAhead:
			ahead++
		default:
			other++
		}
	}
	if behind+ahead+other == 0 {
		return "all exact"
	}
	s := fmt.Sprintf("%d behind, %d ahead", behind, ahead)
	if other > 0 {
		s += fmt.Sprintf(", %d not exact", other)
	}
	return s
}

func (rep *reconcileReport) verdict() verdict {
	v := verdict{Level: levelOK}
	for _, g := range rep.Groups {
		v.Level = worse(v.Level, g.Level)
	}
	switch {
	case len(rep.Groups) == 0:
		v.Level, v.Word, v.Headline = levelWarn, "NOTHING FOUND", "no consumer groups to reconcile"
		return v
	case v.Level == levelOK:
		v.Word, v.Headline = "EXACT", "all exact"
	default:
		// The word and its colour name the worst consequence: loss, then re-delivery, then
		// not knowing; the headline lists everything.
		switch {
		case rep.Ahead > 0 || rep.Skip > 0:
			v.Level, v.Word = levelBad, "DATA LOSS RISK"
		case rep.Behind > 0 || rep.NoTarget > 0:
			v.Level, v.Word = levelWarn, "NOT EXACT"
		case rep.Unmappable > 0 || rep.FailedGroups > 0 || rep.AppsNotReady > 0:
			v.Level, v.Word = levelErr, "INCOMPLETE"
		case rep.NotMigrated > 0 && rep.Pending == 0:
			v.Level, v.Word = levelWarn, "NOT MIGRATED"
		default:
			v.Level, v.Word = levelWarn, "PENDING"
		}
		v.Headline = fmt.Sprintf("%d behind, %d ahead", rep.Behind, rep.Ahead)
		for _, c := range []struct {
			n    int
			what string
		}{{rep.Pending, "pending"}, {rep.NoTarget, "without a target commit"}, {rep.Unmappable, "unmappable"}} {
			if c.n > 0 {
				v.Headline += fmt.Sprintf(", %d %s", c.n, c.what)
			}
		}
		if rep.FailedGroups > 0 {
			v.Headline += ", " + plural(int64(rep.FailedGroups), "group failed", "groups failed")
		}
		if rep.AppsNotReady > 0 {
			v.Headline += ", " + plural(int64(rep.AppsNotReady), "application not ready", "applications not ready")
		}
		if rep.NotMigrated > 0 {
			v.Headline += ", " + plural(int64(rep.NotMigrated), "group not migrated (share)", "groups not migrated (share)")
		}
	}
	v.Details = append(v.Details, fmt.Sprintf("%s, %s: %d exact",
		plural(int64(len(rep.Groups)), "group", "groups"),
		plural(int64(len(rep.Rows)), "partition", "partitions"), rep.Exact))
	if rep.Redeliver > 0 {
		v.Details = append(v.Details, "switching now would re-deliver "+plural(rep.Redeliver, "record", "records"))
	}
	if rep.Skip > 0 {
		v.Details = append(v.Details, "switching now would skip "+plural(rep.Skip, "record", "records")+" (data loss)")
	}
	if rep.AbortedAhead > 0 {
		v.Details = append(v.Details, fmt.Sprintf("%s after E(G) in %s: consumers reading read_uncommitted (the Java default) will read them again after the switch; read_committed consumers will not",
			plural(rep.AbortedAhead, "aborted record", "aborted records"), plural(int64(rep.AbortedGroups), "group", "groups")))
	}
	if rep.R.Applied {
		a := "applied"
		if rep.R.Backup != "" {
			a += "; previous target offsets saved to " + rep.R.Backup
		}
		v.Details = append(v.Details, a)
	}
	return v
}

func newReconcileRow(group string, p *reconcile.Partition) reconcileRow {
	row := reconcileRow{Group: group, P: p}
	row.Name = p.Topic + "/" + strconv.Itoa(int(p.Partition))
	if p.TargetTopic != "" && p.TargetTopic != p.Topic {
		row.Name += " → " + p.TargetTopic
	}
	row.Level, row.Status = statusText(p.Status, p.RedeliveredIfUnchanged, p.SkippedIfUnchanged)
	if n := p.AbortedAhead; n != nil && *n > 0 {
		// Flagged whatever the status: read_uncommitted consumers read them again.
		row.Status += "; " + plural(*n, "aborted record", "aborted records") + " ahead"
	}
	row.SourceLag = lagText(max(p.SourceEnd-p.SourceCommitted, 0), p.SourceRecordsLeft)
	row.TargetLag = "-"
	if p.TargetCommitted != nil {
		row.TargetLag = lagText(max(p.TargetEnd-*p.TargetCommitted, 0), p.TargetRecordsLeft)
	}
	row.Checkpoint, row.CPLevel = optOffset(p.Checkpoint), levelOK
	if p.Checkpoint != nil && p.CheckpointStatus != "" {
		row.CPLevel, _ = statusText(p.CheckpointStatus, 0, 0)
		row.Checkpoint += " (" + checkpointWord(p) + ")"
	}
	if p.Reason != "" {
		row.Details = append(row.Details, "reason: "+oneLine(p.Reason))
	}
	if u := p.CheckpointUpstream; u != nil && *u != p.SourceCommitted {
		row.Details = append(row.Details, fmt.Sprintf("MM2 checkpoint is stale: translated from source offset %d, the group is at %d", *u, p.SourceCommitted))
	}
	if p.Action != "" {
		row.Details = append(row.Details, "apply: "+oneLine(p.Action))
	}
	if p.Proof != "" {
		row.Details = append(row.Details, "E(G) proof: "+oneLine(p.Proof))
	}
	if len(p.AbortedRanges) > 0 {
		var offs []string
		for _, r := range p.AbortedRanges {
			offs = append(offs, r.String())
		}
		row.Details = append(row.Details, "aborted records after E(G) at target offsets "+strings.Join(offs, ", "))
	}
	if p.AbortedNote != "" {
		row.Details = append(row.Details, "aborted records after E(G): "+oneLine(p.AbortedNote))
	}
	return row
}

// lagText is an offset lag and, when they differ, the records a read_committed consumer still
// reads in it (transaction markers and aborted records take offsets too).
func lagText(lag int64, left *int64) string {
	if left == nil || *left == lag {
		return num(lag)
	}
	return num(lag) + " (" + plural(*left, "record", "records") + ")"
}

// checkpointWord judges MM2's checkpoint, with the distance to E(G) when both are known.
func checkpointWord(p *reconcile.Partition) string {
	s := string(p.CheckpointStatus)
	if p.ExactTarget != nil && p.Checkpoint != nil {
		switch d := *p.ExactTarget - *p.Checkpoint; {
		case d > 0:
			s += " " + num(d)
		case d < 0:
			s += " " + num(-d)
		}
	}
	return s
}

// statusText is the readable verdict for one group partition.
func statusText(s reconcile.Status, redeliver, skip int64) (level, string) {
	switch s {
	case reconcile.StatusExact:
		return levelOK, "exact"
	case reconcile.StatusBehind:
		return levelWarn, "behind: would re-deliver " + num(redeliver)
	case reconcile.StatusAhead:
		return levelBad, "ahead: would skip " + num(skip) + " (data loss)"
	case reconcile.StatusPending:
		return levelWarn, "pending: the mirror has not copied up to G yet"
	case reconcile.StatusMissingTargetOffset:
		var parts []string
		if redeliver > 0 {
			parts = append(parts, "would re-deliver "+num(redeliver))
		}
		if skip > 0 {
			parts = append(parts, "would skip "+num(skip)+" (data loss)")
		}
		if len(parts) == 0 {
			return levelBad, "no target commit"
		}
		return levelBad, "no target commit: " + strings.Join(parts, ", ")
	case reconcile.StatusUnmappable:
		// The reason is often long; it is shown in the row's details.
		return levelErr, "unmappable: E(G) unknown"
	default:
		return levelErr, "unknown status " + strconv.Quote(string(s))
	}
}
