package reconcile

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sort"
	"strings"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/kmigrate/kmigrate/internal/backupfile"
	"github.com/kmigrate/kmigrate/internal/offsetcommit"
	"github.com/kmigrate/kmigrate/mm2"
)

// RollbackResult is what Rollback did per group.
type RollbackResult struct {
	Backup string `json:"backup"`
	// TargetCluster is the cluster written to (the backup's, checked by its cluster ID).
	TargetCluster *ClusterRef     `json:"target_cluster,omitempty"`
	Groups        []RolledBackGrp `json:"groups"`
}

// RolledBackGrp is one group of a rollback.
type RolledBackGrp struct {
	Group string `json:"group"`
	// Restored and Deleted count the partitions written; Unchanged those already at the
	// backup's offset (Apply never committed them, or they were restored before).
	Restored  int `json:"restored"`
	Deleted   int `json:"deleted"`
	Unchanged int `json:"unchanged,omitempty"`
	// Conflicts are partitions whose target commit is no longer the one Apply wrote: left
	// alone (unless Force, then Forced counts them among Restored and Deleted).
	Conflicts []RollbackConflict `json:"conflicts,omitempty"`
	Forced    int                `json:"forced,omitempty"`
	Refused   string             `json:"refused,omitempty"`
	Err       string             `json:"error,omitempty"`
}

// RollbackConflict is a partition that moved after Apply. Backup is the offset the rollback
// would restore (nil: delete), Applied what Apply committed (nil: a version 1 backup does not
// say), Now the target commit (nil: none).
type RollbackConflict struct {
	Topic     string `json:"topic"`
	Partition int32  `json:"partition"`
	Backup    *int64 `json:"backup"`
	Applied   *int64 `json:"applied"`
	Now       *int64 `json:"now"`
}

func offStr(p *int64) string {
	if p == nil {
		return "none"
	}
	return fmt.Sprint(*p)
}

func sameOff(a, b *int64) bool { return a == nil && b == nil || a != nil && b != nil && *a == *b }

// Rollback restores the target offsets saved in a backup file: offsets that existed are
// committed again with their metadata, offsets that did not exist are deleted.
//
// It refuses, writing nothing and returning a nil result: an invalid backup (ReadBackup), a
// cluster whose ID is not the backup's target cluster (the source, or any other), and a version
// 1 backup unless cfg.LegacyClusterID is the connected cluster's ID. Per group: groups with
// members on the target are refused; a partition whose target commit is no longer the one Apply
// wrote (the group consumed since) is left alone and listed in Conflicts unless cfg.Force; a
// partition already at the backup's offset is left as it is. The error is set when anything
// was refused, in conflict or failed; the result says which.
func Rollback(ctx context.Context, dst *kgo.Client, backupFile string, cfg RollbackConfig) (*RollbackResult, error) {
	b, err := ReadBackup(backupFile)
	if err != nil {
		return nil, err
	}
	alias, id, err := backupfile.Connected(ctx, dst, cfg.TargetAlias)
	if err != nil {
		return nil, err
	}
	if err := checkBackupCluster(b, backupFile, alias, id, cfg.LegacyClusterID); err != nil {
		return nil, err
	}

	adm := kadm.NewClient(dst)
	byGroup := map[string][]BackupEntry{}
	var names []string
	for _, e := range b.Entries {
		if _, ok := byGroup[e.Group]; !ok {
			names = append(names, e.Group)
		}
		byGroup[e.Group] = append(byGroup[e.Group], e)
	}
	sort.Strings(names)
	out := &RollbackResult{Backup: backupFile, TargetCluster: &ClusterRef{Alias: alias, ID: id}, Groups: []RolledBackGrp{}}
	if len(names) == 0 {
		return out, nil
	}
	if err := describableTopics(ctx, adm, alias, b.Entries); err != nil {
		return nil, err
	}
	desc, err := mm2.DescribeGroups(ctx, dst, nil, names...)
	if err != nil {
		return nil, fmt.Errorf("%s cluster: describe groups %s: %w", alias, strings.Join(names, ", "), err)
	}
	live := fetchOffsets(ctx, adm, names)
	var errs []error
	for _, name := range names {
		d, ok := desc[name]
		if !ok {
			d = mm2.DescribedGroup{Group: name}
		}
		r, err := rollbackGroup(ctx, adm, alias, d, live[name], byGroup[name], slices.Contains(b.Applications, name), cfg.Force)
		if err != nil {
			errs = append(errs, err)
		}
		out.Groups = append(out.Groups, r)
	}
	return out, errors.Join(errs...)
}

// describableTopics refuses a rollback whose principal may not Describe a topic of the
// backup: Kafka's offset fetch leaves such topics out without an error, so their commits
// would look absent, and an entry with no commit before the apply would pass as already
// restored while the applied commit stays.
func describableTopics(ctx context.Context, adm *kadm.Client, alias string, entries []BackupEntry) error {
	seen := map[string]bool{}
	var topics []string
	for _, e := range entries {
		if !seen[e.Topic] {
			seen[e.Topic] = true
			topics = append(topics, e.Topic)
		}
	}
	sort.Strings(topics)
	if len(topics) == 0 {
		return nil
	}
	tds, err := adm.ListTopics(ctx, topics...)
	if err != nil {
		return fmt.Errorf("%s cluster: describe the backup's topics %s: %w (a rollback needs Read on the Topic of every partition in the backup). Nothing was written", alias, strings.Join(topics, ", "), err)
	}
	for _, t := range topics {
		if d := tds[t]; errors.Is(d.Err, kerr.TopicAuthorizationFailed) {
			return fmt.Errorf("%s cluster: topic %q: %w: a rollback needs Read on the Topic of every partition in the backup (without Describe, "+
				"Kafka hides its committed offsets and the rollback could not see what to restore). Nothing was written", alias, t, d.Err)
		}
	}
	return nil
}

// checkBackupCluster refuses a backup that does not belong to the cluster connected to as
// alias, whose cluster ID is id: a version 2 backup of another target (or of the apply's
// source), a version 1 backup without legacyID or with one that is not id.
func checkBackupCluster(b *Backup, backupFile, alias, id, legacyID string) error {
	switch {
	case b.Version == legacyBackupVersion && legacyID == "":
		return fmt.Errorf("backup %s was written by an earlier kreconcile (version 1) and does not record which cluster it was taken on. The cluster you connected to as %q has cluster ID %s: if the backup was taken there, run again with --legacy-cluster-id %s (partitions whose commit changed since are then refused unless --force). Nothing was written",
			backupFile, alias, id, id)
	case b.Version == legacyBackupVersion && legacyID != id:
		return fmt.Errorf("refusing backup %s: --legacy-cluster-id is %s, but the cluster you connected to as %q has cluster ID %s. Nothing was written", backupFile, legacyID, alias, id)
	case b.Version == legacyBackupVersion:
		return nil
	}
	return backupfile.CheckTarget(backupFile, b.SourceCluster, b.TargetCluster, alias, id)
}

// rollbackGroup restores the entries of one group, described as d, whose live target offsets
// are lo, on the cluster connected to as alias; app says that Apply committed it as a Kafka
// Streams application, which is restored wholly or not at all: with a partition in conflict
// and without force, nothing of it is written. The error says what was refused, failed or is
// in conflict; the result counts what was done.
func rollbackGroup(ctx context.Context, adm *kadm.Client, alias string, d mm2.DescribedGroup, lo kadm.FetchOffsetsResponse, entries []BackupEntry, app, force bool) (RolledBackGrp, error) {
	name := d.Group
	r := RolledBackGrp{Group: name}
	if d.Err != nil {
		r.Err = fmt.Sprintf("%s cluster: describe group %q: %v", alias, name, d.Err)
	} else if lo.Err != nil {
		r.Err = fmt.Sprintf("%s cluster: fetch offsets of group %q: %v", alias, name, lo.Err)
	}
	if r.Err != "" {
		return r, errors.New(r.Err)
	}
	if ok, why := writable(d); !ok {
		r.Refused = why
		return r, errors.New(why)
	}
	commit, del, forced := planRestore(&r, entries, lo.Fetched, force)
	if app && len(r.Conflicts) > 0 {
		r.Refused = fmt.Sprintf("Kafka Streams application %s switches back as a whole, and %s of it moved since the apply (the application ran on the target): nothing of it was restored, so that it is not left half on the target's offsets and half on the ones before; --force restores every partition anyway",
			name, plural(len(r.Conflicts), "partition", "partitions"))
		return r, errors.Join(errors.New(r.Refused), conflictError(name, r.Conflicts))
	}
	failed := restoreOffsets(ctx, adm, &r, commit, forced)
	failed = append(failed, deleteOffsets(ctx, adm, &r, del, forced)...)
	var errs []error
	if len(failed) > 0 {
		sort.Strings(failed)
		r.Err = fmt.Sprintf("%s cluster: group %q: %s", alias, name, strings.Join(failed, "; "))
		errs = append(errs, errors.New(r.Err))
	}
	if len(r.Conflicts) > 0 {
		errs = append(errs, conflictError(name, r.Conflicts))
	}
	return r, errors.Join(errs...)
}

// planRestore sorts a group's entries by the target's commit now: already at the backup's
// offset (Unchanged), still what Apply wrote or forced (to restore: commit, or del where there
// was no commit before Apply), or moved since (Conflicts). forced names, as "topic/partition",
// the entries restored only because of force.
func planRestore(r *RolledBackGrp, entries []BackupEntry, live kadm.OffsetResponses, force bool) (commit kadm.Offsets, del kadm.TopicsSet, forced map[string]bool) {
	commit, del, forced = kadm.Offsets{}, kadm.TopicsSet{}, map[string]bool{}
	for _, e := range entries {
		var now *int64
		if o, ok := live.Lookup(e.Topic, e.Partition); ok && o.Err == nil && o.At >= 0 {
			at := o.At
			now = &at
		}
		switch {
		case sameOff(now, e.Offset):
			r.Unchanged++
			continue
		case e.Committed != nil && sameOff(now, e.Committed):
		case force:
			forced[fmt.Sprintf("%s/%d", e.Topic, e.Partition)] = true
		default:
			r.Conflicts = append(r.Conflicts, RollbackConflict{Topic: e.Topic, Partition: e.Partition, Backup: e.Offset, Applied: e.Committed, Now: now})
			continue
		}
		if e.Offset != nil {
			commit.Add(kadm.Offset{Topic: e.Topic, Partition: e.Partition, At: *e.Offset, LeaderEpoch: -1, Metadata: e.Metadata})
		} else {
			del.Add(e.Topic, e.Partition)
		}
	}
	return commit, del, forced
}

// restoreOffsets commits the offsets of commit to group r.Group and counts them in r; it
// returns what failed, one line a partition.
func restoreOffsets(ctx context.Context, adm *kadm.Client, r *RolledBackGrp, commit kadm.Offsets, forced map[string]bool) []string {
	if len(commit) == 0 {
		return nil
	}
	var failed []string
	resp, err := offsetcommit.Commit(ctx, adm, r.Group, commit, 0)
	commit.Each(func(o kadm.Offset) {
		perr := err
		if perr == nil {
			if pr, ok := resp.Lookup(o.Topic, o.Partition); !ok {
				perr = errors.New("no answer for this partition")
			} else {
				perr = pr.Err
			}
		}
		if perr != nil {
			failed = append(failed, fmt.Sprintf("restore %s/%d to %d: %v", o.Topic, o.Partition, o.At, perr))
			return
		}
		r.Restored++
		if forced[fmt.Sprintf("%s/%d", o.Topic, o.Partition)] {
			r.Forced++
		}
	})
	return failed
}

// deleteOffsets deletes the commits of del (partitions that had none before Apply) from group
// r.Group and counts them in r; it returns what failed, one line a partition.
func deleteOffsets(ctx context.Context, adm *kadm.Client, r *RolledBackGrp, del kadm.TopicsSet, forced map[string]bool) []string {
	if len(del) == 0 {
		return nil
	}
	var failed []string
	resp, err := adm.DeleteOffsets(ctx, r.Group, del)
	for t, ps := range del {
		for p := range ps {
			perr := err
			if perr == nil {
				if tr, ok := resp[t]; !ok {
					perr = errors.New("no answer for this partition")
				} else if e, ok := tr[p]; ok {
					perr = e
				} else {
					perr = errors.New("no answer for this partition")
				}
			}
			if perr != nil {
				failed = append(failed, fmt.Sprintf("delete %s/%d (no commit before apply): %v", t, p, perr))
				continue
			}
			r.Deleted++
			if forced[fmt.Sprintf("%s/%d", t, p)] {
				r.Forced++
			}
		}
	}
	return failed
}

// conflictError says which partitions of group moved since the apply and why they were left
// alone.
func conflictError(group string, conflicts []RollbackConflict) error {
	var cs []string
	for _, c := range conflicts {
		applied := "the backup (version 1) does not say what apply wrote"
		if c.Applied != nil {
			applied = "apply wrote " + offStr(c.Applied)
		}
		cs = append(cs, fmt.Sprintf("%s/%d is at %s, %s", c.Topic, c.Partition, offStr(c.Now), applied))
	}
	return fmt.Errorf("group %q moved since the apply: %s; left alone, since restoring %s would undo what the group did since (re-deliver what it consumed, or skip); run with --force to restore anyway",
		group, strings.Join(cs, "; "), map[bool]string{true: "it", false: "them"}[len(cs) == 1])
}
