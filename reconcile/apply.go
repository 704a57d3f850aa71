package reconcile

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"sort"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
)

// BackupVersion is the format version of backup files.
const BackupVersion = 1

// Backup is what Apply saves before writing and Rollback restores: the target offsets of every
// group partition Apply was about to change, as they were.
type Backup struct {
	Version int           `json:"version"`
	Created time.Time     `json:"created"`
	Entries []BackupEntry `json:"entries"`
}

// BackupEntry is one group partition's previous target commit. Offset is nil ("none" in the
// file) when the group had no commit there; Rollback deletes the commit Apply made.
type BackupEntry struct {
	Group     string `json:"group"`
	Topic     string `json:"topic"`
	Partition int32  `json:"partition"`
	Offset    *int64 `json:"-"`
	Metadata  string `json:"metadata"`
}

type backupEntryJSON struct {
	Group     string          `json:"group"`
	Topic     string          `json:"topic"`
	Partition int32           `json:"partition"`
	Offset    json.RawMessage `json:"offset"`
	Metadata  string          `json:"metadata"`
}

// MarshalJSON writes Offset as a number, or the string "none".
func (e BackupEntry) MarshalJSON() ([]byte, error) {
	off := json.RawMessage(`"none"`)
	if e.Offset != nil {
		off = json.RawMessage(fmt.Sprint(*e.Offset))
	}
	return json.Marshal(backupEntryJSON{e.Group, e.Topic, e.Partition, off, e.Metadata})
}

// UnmarshalJSON reads what MarshalJSON writes.
func (e *BackupEntry) UnmarshalJSON(b []byte) error {
	var j backupEntryJSON
	if err := json.Unmarshal(b, &j); err != nil {
		return err
	}
	*e = BackupEntry{Group: j.Group, Topic: j.Topic, Partition: j.Partition, Metadata: j.Metadata}
	var s string
	if json.Unmarshal(j.Offset, &s) == nil {
		if s != "none" {
			return fmt.Errorf("group %q %s/%d: offset %q: want a number or \"none\"", j.Group, j.Topic, j.Partition, s)
		}
		return nil
	}
	var n int64
	if err := json.Unmarshal(j.Offset, &n); err != nil {
		return fmt.Errorf("group %q %s/%d: offset: %w", j.Group, j.Topic, j.Partition, err)
	}
	e.Offset = &n
	return nil
}

// DefaultBackupName is the backup file Apply writes when ApplyConfig.Backup is empty.
func DefaultBackupName(now time.Time) string {
	return "kreconcile-backup-" + now.UTC().Format("20060102T150405Z") + ".json"
}

// ReadBackup reads a backup file written by Apply.
func ReadBackup(path string) (*Backup, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("open backup: %w", err)
	}
	defer f.Close()
	var b Backup
	if err := json.NewDecoder(f).Decode(&b); err != nil {
		return nil, fmt.Errorf("read backup %s: %w", path, err)
	}
	if b.Version != BackupVersion {
		return nil, fmt.Errorf("backup %s has version %d, this kreconcile reads version %d", path, b.Version, BackupVersion)
	}
	return &b, nil
}

func writeBackup(path string, b *Backup) error {
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o644)
	if err != nil {
		return fmt.Errorf("create backup file (choose another with --backup): %w", err)
	}
	enc := json.NewEncoder(f)
	enc.SetIndent("", "  ")
	if err := enc.Encode(b); err != nil {
		f.Close()
		return fmt.Errorf("write backup %s: %w", path, err)
	}
	if err := f.Sync(); err != nil {
		f.Close()
		return fmt.Errorf("write backup %s: %w", path, err)
	}
	return f.Close()
}

// writable reports whether a target group may be written: only when nobody consumes with it.
func writable(d kadm.DescribedGroup) (bool, string) {
	switch d.State {
	case "Empty", "Dead", "":
		if len(d.Members) > 0 {
			return false, fmt.Sprintf("group %q has %d members on the target: stop its consumers there, then run again", d.Group, len(d.Members))
		}
		return true, ""
	default:
		return false, fmt.Sprintf("group %q is %s with %d members on the target: stop its consumers there, then run again (nothing was written for it)", d.Group, d.State, len(d.Members))
	}
}

// change is one commit Apply intends.
type change struct {
	gi, pi int
	to     int64
	prev   *int64
	meta   string
}

// Apply commits E(G) on the target for the group partitions of res that are behind or have no
// target commit (and, with AllowRewind, those ahead), for groups that are Empty or absent on
// the target. It never commits above E(G) and never moves an offset backwards unless
// AllowRewind. Before the first write it saves the previous offsets to cfg.Backup; after
// writing it re-reads the offsets and reports any that did not take. Running it again on a
// fresh plan changes nothing. res is updated in place (Applied, Refused, Action, statuses).
func Apply(ctx context.Context, dst *kgo.Client, res *Result, cfg ApplyConfig) error {
	log := cfg.Logger
	if log == nil {
		log = slog.New(slog.NewTextHandler(io.Discard, nil))
	}
	adm := kadm.NewClient(dst)
	var names []string
	for _, g := range res.Groups {
		names = append(names, g.Group)
	}
	if len(names) == 0 {
		return nil
	}
	// Live state and offsets: the plan may be minutes old.
	desc, err := adm.DescribeGroups(ctx, names...)
	if err != nil && len(desc) == 0 {
		return fmt.Errorf("target cluster: describe groups: %w", err)
	}
	live := adm.FetchManyOffsets(ctx, names...)

	var changes []change
	for gi := range res.Groups {
		g := &res.Groups[gi]
		if g.Err != "" {
			continue
		}
		d, ok := desc[g.Group]
		if !ok {
			d = kadm.DescribedGroup{Group: g.Group, State: "Dead"}
		}
		if d.Err != nil {
			g.Err = fmt.Sprintf("target cluster: describe group %q: %v", g.Group, d.Err)
			continue
		}
		if lo := live[g.Group]; lo.Err != nil {
			g.Err = fmt.Sprintf("target cluster: fetch offsets of group %q: %v", g.Group, lo.Err)
			continue
		}
		var mine []change
		for pi := range g.Partitions {
			p := &g.Partitions[pi]
			if p.ExactTarget == nil {
				p.Action = "left alone: E(G) is not known (" + string(p.Status) + ")"
				continue
			}
			e := *p.ExactTarget
			var prev *int64
			if o, ok := live[g.Group].Fetched.Lookup(p.TargetTopic, p.Partition); ok && o.Err == nil && o.At >= 0 {
				at := o.At
				prev = &at
			}
			p.TargetCommitted = prev
			switch {
			case prev != nil && *prev == e:
				p.Status, p.Action = StatusExact, ""
				p.RedeliveredIfUnchanged, p.SkippedIfUnchanged = 0, 0
				continue
			case prev != nil && *prev > e && !cfg.AllowRewind:
				p.Status = StatusAhead
				p.Action = fmt.Sprintf("left alone: moving %d back to %d needs --allow-rewind", *prev, e)
				continue
			}
			mine = append(mine, change{gi: gi, pi: pi, to: e, prev: prev, meta: p.SourceMetadata})
		}
		if len(mine) == 0 {
			continue
		}
		if ok, why := writable(d); !ok {
			g.Refused = why
			g.TargetState = d.State
			log.Warn("refused", "group", g.Group, "state", d.State, "members", len(d.Members))
			continue
		}
		changes = append(changes, mine...)
	}
	if len(changes) == 0 {
		return nil
	}

	// Back up every previous offset we are about to change, before the first write.
	backup := &Backup{Version: BackupVersion, Created: time.Now().UTC()}
	for _, c := range changes {
		g, p := &res.Groups[c.gi], &res.Groups[c.gi].Partitions[c.pi]
		meta := ""
		if o, ok := live[g.Group].Fetched.Lookup(p.TargetTopic, p.Partition); ok {
			meta = o.Metadata
		}
		backup.Entries = append(backup.Entries, BackupEntry{Group: g.Group, Topic: p.TargetTopic, Partition: p.Partition, Offset: c.prev, Metadata: meta})
	}
	sort.Slice(backup.Entries, func(i, j int) bool {
		a, b := backup.Entries[i], backup.Entries[j]
		return a.Group < b.Group || a.Group == b.Group && (a.Topic < b.Topic || a.Topic == b.Topic && a.Partition < b.Partition)
	})
	path := cfg.Backup
	if path == "" {
		path = DefaultBackupName(backup.Created)
	}
	if err := writeBackup(path, backup); err != nil {
		return err
	}
	res.Backup = path

	// Commit per group, then re-read and confirm.
	byGroup := map[int][]change{}
	var order []int
	for _, c := range changes {
		if _, ok := byGroup[c.gi]; !ok {
			order = append(order, c.gi)
		}
		byGroup[c.gi] = append(byGroup[c.gi], c)
	}
	var errs []error
	for _, gi := range order {
		g := &res.Groups[gi]
		offs := kadm.Offsets{}
		for _, c := range byGroup[gi] {
			p := &g.Partitions[c.pi]
			offs.Add(kadm.Offset{Topic: p.TargetTopic, Partition: p.Partition, At: c.to, LeaderEpoch: -1, Metadata: c.meta})
		}
		resp, err := adm.CommitOffsets(ctx, g.Group, offs)
		if err == nil {
			err = resp.Error()
		}
		if err != nil {
			g.Err = fmt.Sprintf("target cluster: commit offsets of group %q: %v (the backup %s holds the previous offsets)", g.Group, err, path)
			errs = append(errs, errors.New(g.Err))
			continue
		}
		after, err := adm.FetchOffsets(ctx, g.Group)
		if err != nil {
			g.Err = fmt.Sprintf("target cluster: re-read offsets of group %q: %v", g.Group, err)
			errs = append(errs, errors.New(g.Err))
			continue
		}
		for _, c := range byGroup[gi] {
			p := &g.Partitions[c.pi]
			o, ok := after.Lookup(p.TargetTopic, p.Partition)
			if !ok || o.At != c.to {
				got := "none"
				if ok {
					got = fmt.Sprint(o.At)
				}
				p.Action = fmt.Sprintf("commit of %d did not take: the target reads %s", c.to, got)
				g.Err = fmt.Sprintf("group %q %s/%d: committed %d, the target reads %s", g.Group, p.TargetTopic, p.Partition, c.to, got)
				continue
			}
			was := "none"
			if c.prev != nil {
				was = fmt.Sprint(*c.prev)
			}
			p.Action = fmt.Sprintf("committed %d (was %s)", c.to, was)
			at := c.to
			p.TargetCommitted = &at
			p.Status = StatusExact
			p.RedeliveredIfUnchanged, p.SkippedIfUnchanged = 0, 0
			log.Info("committed", "group", g.Group, "topic", p.TargetTopic, "partition", p.Partition, "offset", c.to, "previous", was)
		}
		if g.Err == "" {
			g.Applied = true
			res.Applied = true
		}
	}
	return errors.Join(errs...)
}

// RollbackResult is what Rollback did per group.
type RollbackResult struct {
	Backup string          `json:"backup"`
	Groups []RolledBackGrp `json:"groups"`
}

// RolledBackGrp is one group of a rollback.
type RolledBackGrp struct {
	Group    string `json:"group"`
	Restored int    `json:"restored"`
	Deleted  int    `json:"deleted"`
	Refused  string `json:"refused,omitempty"`
	Err      string `json:"error,omitempty"`
}

// Rollback restores the target offsets saved in a backup file: offsets that existed are
// committed again with their metadata, offsets that did not exist are deleted. Groups with
// members on the target are refused and nothing is written for them. The error is set when any
// group could not be restored; the result says which.
func Rollback(ctx context.Context, dst *kgo.Client, backupFile string) (*RollbackResult, error) {
	b, err := ReadBackup(backupFile)
	if err != nil {
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
	out := &RollbackResult{Backup: backupFile, Groups: []RolledBackGrp{}}
	if len(names) == 0 {
		return out, nil
	}
	desc, err := adm.DescribeGroups(ctx, names...)
	if err != nil && len(desc) == 0 {
		return nil, fmt.Errorf("target cluster: describe groups: %w", err)
	}
	var errs []error
	for _, name := range names {
		r := RolledBackGrp{Group: name}
		d, ok := desc[name]
		if !ok {
			d = kadm.DescribedGroup{Group: name, State: "Dead"}
		}
		if ok, why := writable(d); !ok {
			r.Refused = why
			errs = append(errs, errors.New(why))
			out.Groups = append(out.Groups, r)
			continue
		}
		commit := kadm.Offsets{}
		del := kadm.TopicsSet{}
		for _, e := range byGroup[name] {
			if e.Offset != nil {
				commit.Add(kadm.Offset{Topic: e.Topic, Partition: e.Partition, At: *e.Offset, LeaderEpoch: -1, Metadata: e.Metadata})
			} else {
				del.Add(e.Topic, e.Partition)
			}
		}
		if len(commit) > 0 {
			resp, err := adm.CommitOffsets(ctx, name, commit)
			if err == nil {
				err = resp.Error()
			}
			if err != nil {
				r.Err = fmt.Sprintf("target cluster: restore offsets of group %q: %v", name, err)
				errs = append(errs, errors.New(r.Err))
				out.Groups = append(out.Groups, r)
				continue
			}
			commit.Each(func(kadm.Offset) { r.Restored++ })
		}
		if len(del) > 0 {
			resp, err := adm.DeleteOffsets(ctx, name, del)
			if err == nil {
				err = resp.Error()
			}
			if err != nil {
				r.Err = fmt.Sprintf("target cluster: delete offsets of group %q that did not exist before: %v", name, err)
				errs = append(errs, errors.New(r.Err))
				out.Groups = append(out.Groups, r)
				continue
			}
			for _, ps := range del {
				r.Deleted += len(ps)
			}
		}
		out.Groups = append(out.Groups, r)
	}
	return out, errors.Join(errs...)
}
