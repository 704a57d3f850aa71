package report

import (
	"fmt"
	"strings"

	"github.com/kmigrate/kmigrate/aclsync"
)

// aclsReport draws `kreconcile acls`: each source ACL, its image on the target and whether the
// target has it, the target-only ACLs, and what MirrorMaker 2's own sync would do instead.
type aclsReport struct {
	Title   string
	P       *aclsync.Result
	Verdict verdict
	Rows    []aclRow
	Counts  map[aclsync.Status]int
	// Missing, Present, TargetOnly and Skipped are Counts for the HTML cards.
	Missing, Present, TargetOnly, Skipped int
	// MM2Differs counts the ACLs MM2 3.7.1 would treat otherwise.
	MM2Differs int
}

type aclRow struct {
	It       aclsync.Item
	Level    level
	Status   string
	Source   string // principal on the source, "—" for a target-only ACL
	Target   string // principal on the target
	Resource string // TYPE:PATTERN:name, "→ target name" when it changes
	Rule     string // ALLOW READ from *
	Note     string // why skipped, how the principal or name was mapped
}

func aclResource(it aclsync.Item) string {
	name := it.ResourceName
	switch {
	case name == "":
		name = it.TargetResourceName
	case it.TargetResourceName != "" && it.TargetResourceName != name:
		name += " → " + it.TargetResourceName
	}
	return it.ResourceType + ":" + it.PatternType + ":" + name
}

func newACLsReport(title string, p *aclsync.Result) *aclsReport {
	rep := &aclsReport{Title: title, P: p, Counts: p.Counts()}
	if rep.Title == "" {
		rep.Title = "kreconcile acls " + p.Flow
	}
	var created, deleted, failed int
	for _, it := range p.ACLs {
		row := aclRow{It: it, Source: it.Principal, Target: it.TargetPrincipal, Resource: aclResource(it),
			Rule: it.Permission + " " + it.Operation + " from " + it.Host, Note: oneLine(it.Reason)}
		if row.Source == "" {
			row.Source = "—"
		}
		if row.Target == "" {
			row.Target = "—"
		}
		switch {
		case it.Err != "":
			row.Level, row.Status = levelErr, "error: "+oneLine(it.Err)
			failed++
		case it.Action == "created":
			row.Level, row.Status = levelOK, "created"
			created++
		case it.Action == "deleted":
			row.Level, row.Status = levelOK, "deleted (target-only)"
			deleted++
		case it.Status == aclsync.Missing:
			row.Level, row.Status = levelWarn, "missing: --apply creates it"
		case it.Status == aclsync.TargetOnly && p.DeleteExtra:
			row.Level, row.Status = levelWarn, "target-only: --delete-extra deletes it"
		case it.Status == aclsync.TargetOnly:
			row.Level, row.Status = levelWarn, "target-only: kept (--delete-extra deletes it)"
		case it.Status == aclsync.Skipped:
			row.Level, row.Status = levelOK, "skipped"
		default:
			row.Level, row.Status = levelOK, "present"
		}
		if it.MM2Differs {
			rep.MM2Differs++
		}
		rep.Rows = append(rep.Rows, row)
	}
	c := rep.Counts
	rep.Missing, rep.Present, rep.TargetOnly, rep.Skipped = c[aclsync.Missing], c[aclsync.Present], c[aclsync.TargetOnly], c[aclsync.Skipped]
	rep.Verdict = aclsVerdict(p, c, created, deleted, failed, rep.MM2Differs)
	return rep
}

// aclsVerdict judges plan p from its status counts c and the ACLs created, deleted and failed, with details on clusters, policy, mappings, MM2 and backup.
func aclsVerdict(p *aclsync.Result, c map[aclsync.Status]int, created, deleted, failed, mm2Differs int) verdict {
	v := verdict{Level: levelOK, Word: "IN SYNC", Headline: fmt.Sprintf("nothing to do: %d present, %d skipped, %d target-only",
		c[aclsync.Present], c[aclsync.Skipped], c[aclsync.TargetOnly])}
	switch {
	case failed > 0:
		v = verdict{Level: levelErr, Word: "FAILED", Headline: fmt.Sprintf("%d failed, %d created, %d deleted", failed, created, deleted)}
	case p.Applied:
		v = verdict{Level: levelOK, Word: "APPLIED", Headline: fmt.Sprintf("%d created, %d deleted", created, deleted)}
	case p.Changes() > 0:
		del := 0
		if p.DeleteExtra {
			del = c[aclsync.TargetOnly]
		}
		v = verdict{Level: levelWarn, Word: "CHANGES PLANNED", Headline: fmt.Sprintf("%d missing on the target, %d to delete, %d present, %d skipped, %d target-only",
			c[aclsync.Missing], del, c[aclsync.Present], c[aclsync.Skipped], c[aclsync.TargetOnly])}
	}
	v.Details = append(v.Details,
		fmt.Sprintf("source %s (cluster ID %s): %s", p.SourceCluster.Alias, p.SourceCluster.ID, plural(int64(p.SourceACLs), "ACL", "ACLs")),
		fmt.Sprintf("target %s (cluster ID %s): %s", p.TargetCluster.Alias, p.TargetCluster.ID, plural(int64(p.TargetACLs), "ACL", "ACLs")),
		"topics named by "+p.Policy)
	if len(p.PrincipalMappings) > 0 {
		v.Details = append(v.Details, "principal mappings (first match wins): "+strings.Join(p.PrincipalMappings, "; "))
	}
	mm := fmt.Sprintf("MirrorMaker 2 3.7.1's ACL sync would differ on %s", plural(int64(mm2Differs), "ACL", "ACLs"))
	if !p.MM2SyncEnabled {
		mm += " (sync.topic.acls.enabled=false: it copies none)"
	}
	v.Details = append(v.Details, mm)
	if p.Backup != "" {
		v.Details = append(v.Details, "backup "+p.Backup+" (undo: kreconcile rollback --backup "+p.Backup+")")
	}
	if rb := readBackDetail(p.ReadBack); rb != "" {
		v.Details = append(v.Details, rb)
	}
	return v
}

// readBackDetail says how the writes were read back from every broker ("" when none were).
func readBackDetail(rb *aclsync.ReadBack) string {
	if rb == nil {
		return ""
	}
	ids := make([]string, len(rb.Brokers))
	for i, id := range rb.Brokers {
		ids[i] = fmt.Sprint(id)
	}
	return fmt.Sprintf("read back from every broker of the target (%s): %s, %d ms", strings.Join(ids, ", "), plural(int64(rb.Rounds), "round", "rounds"), rb.WaitedMS)
}

// aclRollbackReport draws `kreconcile rollback` of an ACL backup.
type aclRollbackReport struct {
	Title   string
	R       *aclsync.RollbackResult
	Verdict verdict
	Rows    []aclRollbackRow
}

type aclRollbackRow struct {
	A      aclsync.RolledBack
	Level  level
	Status string
}

func newACLRollbackReport(title string, r *aclsync.RollbackResult) *aclRollbackReport {
	rep := &aclRollbackReport{Title: title, R: r}
	if rep.Title == "" {
		rep.Title = "kreconcile rollback (ACLs)"
	}
	var deleted, recreated, unchanged, failed int
	for _, a := range r.ACLs {
		row := aclRollbackRow{A: a, Level: levelOK}
		switch {
		case a.Err != "":
			row.Level, row.Status = levelErr, "error: "+oneLine(a.Err)
			failed++
		case a.Action == "deleted":
			row.Status = "deleted (the apply created it)"
			deleted++
		case a.Action == "recreated":
			row.Status = "created again (the apply deleted it)"
			recreated++
		case a.Was == "created":
			row.Status = "unchanged: already absent"
			unchanged++
		default:
			row.Status = "unchanged: already present"
			unchanged++
		}
		rep.Rows = append(rep.Rows, row)
	}
	v := verdict{Level: levelOK, Word: "RESTORED", Headline: fmt.Sprintf("%d deleted, %d created again, %d unchanged", deleted, recreated, unchanged)}
	if failed > 0 {
		v.Level, v.Word = levelErr, "INCOMPLETE"
		v.Headline = fmt.Sprintf("%d failed, %d deleted, %d created again, %d unchanged", failed, deleted, recreated, unchanged)
	}
	v.Details = append(v.Details, "from ACL backup "+r.Backup,
		fmt.Sprintf("on cluster %s (cluster ID %s)", r.TargetCluster.Alias, r.TargetCluster.ID))
	if rb := readBackDetail(r.ReadBack); rb != "" {
		v.Details = append(v.Details, rb)
	}
	rep.Verdict = v
	return rep
}
