package reconcile

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/kmigrate/kmigrate/internal/offsetcommit"
	"github.com/kmigrate/kmigrate/mm2"
)

// writable reports whether a target group may be written (mm2.GroupWritable: only when
// nobody consumes with it, whatever its protocol), and why not.
func writable(d mm2.DescribedGroup) (bool, string) {
	if err := mm2.GroupWritable("", d); err != nil {
		return false, err.Error()
	}
	return true, ""
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
	return apply(ctx, dst, res, cfg, func(b *Backup) (string, error) {
		path := cfg.Backup
		if path == "" {
			path = DefaultBackupName(b.Created)
		}
		return path, writeBackup(path, b)
	})
}

// apply is Apply with the backup written by save, which gets the previous offsets of every
// partition about to change and returns the file it wrote: Apply writes a new file, Follow
// extends the one it keeps (follow.go). Nothing is committed when save fails.
func apply(ctx context.Context, dst *kgo.Client, res *Result, cfg ApplyConfig, save func(*Backup) (string, error)) error {
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
	if err := checkPlanTarget(ctx, dst, res); err != nil {
		return err
	}
	// Live state and offsets: the plan may be minutes old. Each group by its type: a consumer
	// group of KIP-848 is described with ConsumerGroupDescribe.
	desc, err := mm2.DescribeGroups(ctx, dst, nil, names...)
	if err != nil {
		return fmt.Errorf("target cluster: describe groups %s: %w", strings.Join(names, ", "), err)
	}
	live := fetchOffsets(ctx, adm, names)
	changes := planChanges(res, desc, live, cfg.AllowRewind, log)
	if len(changes) == 0 {
		return nil
	}
	path, err := save(newBackup(res, changes, live))
	if err != nil {
		return err
	}
	res.Backup = path
	return commitChanges(ctx, dst, res, changes, path, cfg, log)
}

// checkPlanTarget refuses a plan that names no clusters (the backup must say which clusters
// it belongs to) or whose target is not the cluster dst is connected to.
func checkPlanTarget(ctx context.Context, dst *kgo.Client, res *Result) error {
	if res.SourceCluster == nil || res.TargetCluster == nil {
		return errors.New("the plan names no clusters: make it with reconcile.Plan")
	}
	id, err := clusterID(ctx, dst, res.TargetCluster.Alias)
	if err != nil {
		return err
	}
	if id != res.TargetCluster.ID {
		return fmt.Errorf("refusing to write: the plan was made on target cluster %q (cluster ID %s), but this client is connected to cluster ID %s: plan again against the cluster to write to (nothing was written)",
			res.TargetCluster.Alias, res.TargetCluster.ID, id)
	}
	return nil
}

// planChanges decides, from the live state of the target groups, the commits Apply makes: for
// each group that could be described and read, the partitions whose E(G) is known and not
// already committed (not those ahead unless allowRewind), and only for a writable group (one
// that is not is Refused). Partitions already exact or left alone are updated in res.
func planChanges(res *Result, desc map[string]mm2.DescribedGroup, live kadm.FetchOffsetsResponses, allowRewind bool, log *slog.Logger) []change {
	var changes []change
	for gi := range res.Groups {
		g := &res.Groups[gi]
		if g.Err != "" || g.NotMigrated != "" {
			continue
		}
		d, ok := desc[g.Group]
		if !ok {
			d = mm2.DescribedGroup{Group: g.Group}
		}
		if d.Err != nil {
			g.Err = fmt.Sprintf("target cluster: describe group %q: %v", g.Group, d.Err)
			continue
		}
		if lo := live[g.Group]; lo.Err != nil {
			g.Err = fmt.Sprintf("target cluster: fetch offsets of group %q: %v", g.Group, lo.Err)
			continue
		}
		if g.App != nil && !g.App.Ready {
			g.Refused = fmt.Sprintf("Kafka Streams application %s switches as a whole and is not ready: %s", g.Group, strings.Join(g.App.Problems, "; "))
			continue
		}
		mine := groupChanges(gi, g, live[g.Group].Fetched, allowRewind)
		if g.App != nil {
			if left := leftAlone(g); left != "" {
				g.Refused = fmt.Sprintf("Kafka Streams application %s switches as a whole, and %s; nothing of it was committed", g.Group, left)
				continue
			}
		}
		if len(mine) == 0 {
			continue
		}
		if ok, why := writable(d); !ok {
			g.Refused = why
			g.TargetState, g.TargetType = d.State, d.Type
			log.Warn("refused", "group", g.Group, "type", d.Type, "state", d.State, "members", d.Members)
			continue
		}
		changes = append(changes, mine...)
	}
	return changes
}

// leftAlone names the first partition of g that Apply leaves alone ("" when none).
func leftAlone(g *Group) string {
	for _, p := range g.Partitions {
		if strings.HasPrefix(p.Action, "left alone") {
			return fmt.Sprintf("%s/%d is %s", p.Topic, p.Partition, p.Action)
		}
	}
	return ""
}

// groupChanges are the commits one group (index gi of the result) needs, given its live
// target offsets: none where E(G) is unknown or already committed, none backwards unless
// allowRewind.
func groupChanges(gi int, g *Group, live kadm.OffsetResponses, allowRewind bool) []change {
	var mine []change
	for pi := range g.Partitions {
		p := &g.Partitions[pi]
		if p.ExactTarget == nil {
			p.Action = "left alone: E(G) is not known (" + string(p.Status) + ")"
			continue
		}
		e := *p.ExactTarget
		var prev *int64
		if o, ok := live.Lookup(p.TargetTopic, p.Partition); ok && o.Err == nil && o.At >= 0 {
			at := o.At
			prev = &at
		}
		planned := p.TargetCommitted
		p.moveTargetCommitted(prev)
		switch {
		case prev != nil && p.Status == StatusExact && planned != nil && *planned == *prev:
			// The plan judged this commit the same position as E(G) (only transaction
			// markers between), and it has not moved since.
			p.Action = ""
			continue
		case prev != nil && *prev == e:
			p.Status, p.Action = StatusExact, ""
			p.RedeliveredIfUnchanged, p.SkippedIfUnchanged = 0, 0
			continue
		case prev != nil && *prev > e && !allowRewind:
			p.Status = StatusAhead
			p.Action = fmt.Sprintf("left alone: moving %d back to %d needs --allow-rewind", *prev, e)
			continue
		}
		mine = append(mine, change{gi: gi, pi: pi, to: e, prev: prev, meta: p.SourceMetadata})
	}
	return mine
}

// newBackup holds every previous offset about to change, with its metadata and what Apply
// will commit; it is saved before the first write.
func newBackup(res *Result, changes []change, live kadm.FetchOffsetsResponses) *Backup {
	backup := &Backup{Version: BackupVersion, Created: time.Now().UTC(), SourceCluster: *res.SourceCluster, TargetCluster: *res.TargetCluster}
	for _, c := range changes {
		g, p := &res.Groups[c.gi], &res.Groups[c.gi].Partitions[c.pi]
		meta := ""
		if o, ok := live[g.Group].Fetched.Lookup(p.TargetTopic, p.Partition); ok {
			meta = o.Metadata
		}
		to := c.to
		backup.Entries = append(backup.Entries, BackupEntry{Group: g.Group, Topic: p.TargetTopic, Partition: p.Partition, Offset: c.prev, Committed: &to, Metadata: meta})
		if g.App != nil && !slices.Contains(backup.Applications, g.Group) {
			backup.Applications = append(backup.Applications, g.Group)
		}
	}
	slices.Sort(backup.Applications)
	sort.Slice(backup.Entries, func(i, j int) bool {
		a, b := backup.Entries[i], backup.Entries[j]
		return a.Group < b.Group || a.Group == b.Group && (a.Topic < b.Topic || a.Topic == b.Topic && a.Partition < b.Partition)
	})
	return backup
}

// commitChanges commits the changes group by group, in the order of their groups in res,
// re-reading and confirming each (commitGroup); res.Applied is set when any group took. The
// error joins every group's.
func commitChanges(ctx context.Context, dst *kgo.Client, res *Result, changes []change, backup string, cfg ApplyConfig, log *slog.Logger) error {
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
		if err := commitGroup(ctx, dst, &res.Groups[gi], byGroup[gi], backup, cfg, log); err != nil {
			errs = append(errs, err)
		}
		if res.Groups[gi].Applied {
			res.Applied = true
		}
	}
	return errors.Join(errs...)
}

// commitGroup commits one group's changes, re-reads the group's offsets and records per
// partition whether the commit took (Applied, Action) or not (ApplyError). The error names
// every partition that was not committed.
func commitGroup(ctx context.Context, dst *kgo.Client, g *Group, cs []change, backup string, cfg ApplyConfig, log *slog.Logger) error {
	adm := kadm.NewClient(dst)
	if cfg.BeforeCommit != nil {
		cfg.BeforeCommit(g.Group)
	}
	offs := kadm.Offsets{}
	for _, c := range cs {
		p := &g.Partitions[c.pi]
		offs.Add(kadm.Offset{Topic: p.TargetTopic, Partition: p.Partition, At: c.to, LeaderEpoch: -1, Metadata: c.meta})
	}
	resp, reqErr := offsetcommit.Commit(ctx, adm, g.Group, offs, 0)
	// What the target holds now decides what was committed, whatever the answer said.
	after, readErr := adm.FetchOffsets(ctx, g.Group)
	if readErr == nil {
		readErr = after.Error()
	}
	joined := false
	var done, failed []string
	for _, c := range cs {
		p := &g.Partitions[c.pi]
		name := fmt.Sprintf("%s/%d", p.TargetTopic, p.Partition)
		perr := reqErr
		if perr == nil {
			if r, ok := resp.Lookup(p.TargetTopic, p.Partition); !ok {
				perr = errors.New("the target did not answer for this partition")
			} else {
				perr = r.Err
			}
		}
		if isMemberErr(perr) {
			joined = true
		}
		var now *int64
		if readErr == nil {
			if o, ok := after.Lookup(p.TargetTopic, p.Partition); ok && o.Err == nil && o.At >= 0 {
				at := o.At
				now = &at
			}
		}
		if why, ok := confirm(p, c, perr, now, readErr); ok {
			done = append(done, name)
			log.Info("committed", "group", g.Group, "topic", p.TargetTopic, "partition", p.Partition, "offset", c.to, "previous", offStr(c.prev))
		} else {
			failed = append(failed, name+": "+why)
		}
	}
	g.Applied = len(done) > 0
	if len(failed) == 0 {
		return nil
	}
	g.Err = commitError(ctx, dst, g.Group, joined, done, failed, backup)
	return errors.New(g.Err)
}

// confirm records in p the outcome of the commit c: committed when the target now reads c.to
// (and either the commit was answered without error or the offsets could be re-read), else
// not committed or not confirmed, with why (returned when not ok).
func confirm(p *Partition, c change, perr error, now *int64, readErr error) (why string, ok bool) {
	switch {
	case now != nil && *now == c.to && (perr == nil || readErr == nil):
		p.Action = fmt.Sprintf("committed %d (was %s)", c.to, offStr(c.prev))
		p.Applied, p.ApplyError = true, ""
		p.moveTargetCommitted(now)
		p.Status = StatusExact
		p.RedeliveredIfUnchanged, p.SkippedIfUnchanged = 0, 0
		return "", true
	case readErr != nil:
		why = "the target accepted it, but re-reading the group's offsets failed: " + readErr.Error()
		if perr != nil {
			why = perr.Error() + "; re-reading the group's offsets failed too: " + readErr.Error()
		}
		p.ApplyError = fmt.Sprintf("commit of %d not confirmed: %s", c.to, why)
		p.Action = p.ApplyError + " (run kreconcile groups again to see the target's offset)"
		return why, false
	}
	why = fmt.Sprintf("the target reads %s", offStr(now))
	if perr != nil {
		why = fmt.Sprintf("%v (the target reads %s)", perr, offStr(now))
	}
	p.ApplyError = fmt.Sprintf("commit of %d failed: %s", c.to, why)
	p.Action = "not committed: " + p.ApplyError
	p.moveTargetCommitted(now)
	return why, false
}

// moveTargetCommitted sets p's target commit to now. TargetRecordsLeft was counted from the
// commit before: once the commit moved it is not known.
func (p *Partition) moveTargetCommitted(now *int64) {
	old := p.TargetCommitted
	if (old == nil) != (now == nil) || (old != nil && *old != *now) {
		p.TargetRecordsLeft = nil
	}
	p.TargetCommitted = now
}

// commitError is the error of a group whose commit did not take everywhere: why when a consumer
// joined (what the group is now), what was not committed and what was, and how to go on.
func commitError(ctx context.Context, dst *kgo.Client, group string, joined bool, done, failed []string, backup string) string {
	var b strings.Builder
	fmt.Fprintf(&b, "target cluster: group %q: ", group)
	if joined {
		state := "now has members"
		if d, err := mm2.DescribeGroups(ctx, dst, nil, group); err == nil {
			if dg, ok := d[group]; ok && dg.Err == nil && dg.Members >= 0 {
				state = fmt.Sprintf("is now %s with %s", dg.State, plural(dg.Members, "member", "members"))
			}
		}
		fmt.Fprintf(&b, "a consumer joined the group on the target after kreconcile checked it was empty (the group %s), so the broker refused the commit; stop its consumers there and run again. ", state)
	}
	fmt.Fprintf(&b, "NOT committed: %s", strings.Join(failed, "; "))
	if len(done) > 0 {
		fmt.Fprintf(&b, "; committed: %s", strings.Join(done, ", "))
	}
	fmt.Fprintf(&b, " (the backup %s holds the previous offsets; kreconcile groups --apply again retries, rollback restores only partitions still at what apply wrote)", backup)
	return b.String()
}

// isMemberErr reports whether err is how a broker refuses an admin (generation -1) commit to a
// group that has members: one joined after the group was found empty.
func isMemberErr(err error) bool {
	return errors.Is(err, kerr.UnknownMemberID) || errors.Is(err, kerr.IllegalGeneration) ||
		errors.Is(err, kerr.RebalanceInProgress) || errors.Is(err, kerr.FencedInstanceID) ||
		errors.Is(err, kerr.StaleMemberEpoch) // a consumer group of KIP-848 with members
}

func plural(n int, one, many string) string {
	if n == 1 {
		return "1 " + one
	}
	return fmt.Sprintf("%d %s", n, many)
}
