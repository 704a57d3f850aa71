package reconcile

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"log/slog"
	"os"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/kmigrate/kmigrate/mm2"
)

// Follow is the consumer cutover: the producers have moved to the target, and the consumer
// groups stop on the source one at a time. Follow plans every FollowConfig.Interval and, as
// each selected group is ready, says so (and with FollowConfig.Apply commits E(G) for that
// group alone). A group is ready when
//
//   - it has no members on the source (Empty): its commit G is final;
//   - the mirror has copied every record below G on each of its partitions (E(G) known: no
//     partition pending, none unmappable);
//   - it has no members on the target (mm2.GroupWritable);
//   - no partition's target commit is ahead of E(G) (unless AllowRewind).
//
// With Apply, Follow then commits E(G) for that group through Apply's own path (the same
// refusals, the same confirmation), after adding the group's previous target offsets to the
// backup file: one file for the whole run, replaced atomically at each step (a temporary file,
// fsynced, renamed over it, the directory fsynced), so that after every step it is a valid,
// complete backup of every group written so far, and `kreconcile rollback --backup` restores
// them all. A backup file that exists already is extended, if it is a backup of the same two
// clusters (a run interrupted and started again), never replaced by one that forgets it.
//
// Rules, decided here:
//
//   - A group that has members on the target when Follow first looks, or that gets members
//     before Follow wrote it, is blocked for the rest of the run and never touched: someone
//     switched its consumers already. A group Follow made exact that then gets members on the
//     target is done (its consumers moved), and never touched again either.
//   - A group made exact is not written again, with one exception: its source group moved
//     again (a consumer ran on the source after the cutover), its target group is still empty,
//     and the target commits are still exactly what Follow wrote (nobody consumed there), now
//     behind the new E(G). Then Follow applies again; the backup keeps the offset from before
//     the first write, so a rollback still restores the state before the run. A target commit
//     that moved since Follow wrote it means the group consumed on the target: done, never
//     rewritten.
//   - Without Apply nothing is written: a group that Apply would make exact is reported ready.
//
// Follow returns when every group is exact (with Apply), or exact or ready (without), or when
// only groups blocked for the run are left (nothing more can change), or at Timeout. A Plan or
// an Apply failure other than a consumer joining returns the error with the result so far.
func Follow(ctx context.Context, src, dst *kgo.Client, cfg Config, fc FollowConfig) (*FollowResult, error) {
	fc.setDefaults()
	f := &follower{cfg: cfg, fc: fc, start: time.Now(), groups: map[string]*FollowGroup{}, snap: map[string]Group{}}
	out := func() *FollowResult { return f.result() }
	for {
		f.rounds++
		res, err := Plan(ctx, src, dst, cfg)
		if err != nil {
			return out(), err
		}
		if err := f.checkClusters(res); err != nil {
			return out(), err
		}
		if f.rounds == 1 && len(res.Groups) == 0 {
			return out(), errors.New("no consumer group on the source matches the selection (the flow's groups, --group, --exclude-group): nothing to follow")
		}
		if err := f.round(ctx, dst, res); err != nil {
			return out(), err
		}
		p := f.progress()
		if fc.OnProgress != nil {
			fc.OnProgress(p)
		}
		switch {
		case f.done():
			f.finished = true
			return out(), nil
		case f.stuck():
			f.isStuck = true
			return out(), nil
		case fc.Timeout > 0 && time.Since(f.start) >= fc.Timeout:
			f.timedOut = true
			return out(), nil
		}
		wait := fc.Interval
		if fc.Timeout > 0 {
			wait = min(wait, max(0, fc.Timeout-time.Since(f.start)))
		}
		select {
		case <-ctx.Done():
			return out(), ctx.Err()
		case <-time.After(wait):
		}
	}
}

// FollowConfig tunes Follow.
type FollowConfig struct {
	// Apply commits E(G) for each group as it becomes ready. Default: false, nothing is
	// written and readiness is reported.
	Apply bool
	// AllowRewind is ApplyConfig.AllowRewind: without it a group with a target commit ahead
	// of E(G) is blocked.
	AllowRewind bool
	// Backup is the file the previous target offsets are saved to (extended at each step).
	// Default: DefaultBackupName of the start time.
	Backup string
	// Interval is the time between two plans. Default: 5s.
	Interval time.Duration
	// Timeout ends Follow with what is left (FollowResult.TimedOut). Default: 0, no limit.
	Timeout time.Duration
	// OnEvent, when set, is called for every change of a group's state (ready, blocked, ...).
	OnEvent func(FollowEvent)
	// OnProgress, when set, is called after every round.
	OnProgress func(FollowProgress)
	// Logger receives what Apply wrote. Default: discard.
	Logger *slog.Logger
	// BeforeCommit is ApplyConfig.BeforeCommit (tests).
	BeforeCommit func(group string)
}

func (fc *FollowConfig) setDefaults() {
	if fc.Interval <= 0 {
		fc.Interval = 5 * time.Second
	}
	if fc.Logger == nil {
		fc.Logger = slog.New(slog.NewTextHandler(io.Discard, nil))
	}
	if fc.Apply && fc.Backup == "" {
		fc.Backup = DefaultBackupName(time.Now())
	}
}

// FollowState is where a group stands in a follow run.
type FollowState string

// Follow states.
const (
	// FollowExact: the target commit is E(G) on every partition (Follow wrote it, or found
	// it): the group is ready on the target, exactly.
	FollowExact FollowState = "exact"
	// FollowReady (without Apply only): E(G) is known, the source group is empty and the
	// target group writable: kreconcile groups --apply would make it exact now.
	FollowReady FollowState = "ready"
	// FollowWaiting: the group still has members on the source, or the mirror has not copied
	// the records below its commit yet.
	FollowWaiting FollowState = "waiting"
	// FollowBlocked: Follow will not write it (members on the target, a commit ahead of E(G),
	// E(G) unmappable, an error); Why says which.
	FollowBlocked FollowState = "blocked"
)

// FollowGroup is one group of a follow run.
type FollowGroup struct {
	Group string      `json:"group"`
	State FollowState `json:"state"`
	// Why says what the group waits for or what blocks it.
	Why string `json:"why,omitempty"`
	// Applied counts the times Follow committed E(G) for the group (more than one only when
	// the source group moved again).
	Applied int `json:"applied,omitempty"`
	// Final is true when Follow no longer looks at the group in this run: it is blocked for
	// the run, or exact and its consumers moved to the target.
	Final bool `json:"final,omitempty"`

	// wrote is each target partition's commit when the group became exact (what Follow
	// committed or found): a commit that differs later moved on the target.
	wrote map[tp]int64
}

// FollowEvent is a change of one group's state.
type FollowEvent struct {
	Group   string
	State   FollowState
	Message string
}

// FollowProgress is the state of a run after a round.
type FollowProgress struct {
	Round                          int
	Elapsed                        time.Duration
	Exact, Ready, Waiting, Blocked int
}

// String is the progress line: "2 exact, 1 waiting, 0 blocked (35s elapsed)".
func (p FollowProgress) String() string {
	s := fmt.Sprintf("%d exact", p.Exact)
	if p.Ready > 0 {
		s += fmt.Sprintf(", %d ready for --apply", p.Ready)
	}
	return s + fmt.Sprintf(", %d waiting, %d blocked (%s elapsed)", p.Waiting, p.Blocked, p.Elapsed.Round(time.Second))
}

// FollowResult is what a follow run ended with. Result is the last word on every group: for a
// group that became exact, the plan (and apply) at that moment; for the others the last plan.
// Its JSON form is Result's with "follow" added.
type FollowResult struct {
	*Result
	Follow []FollowGroup `json:"follow"`
	// Done: every group is exact (with Apply), or exact or ready (without).
	Done bool `json:"done"`
	// TimedOut: Timeout came first. Stuck: only groups blocked for the run are left.
	TimedOut bool    `json:"timed_out,omitempty"`
	Stuck    bool    `json:"stuck,omitempty"`
	Rounds   int     `json:"rounds"`
	Elapsed  float64 `json:"elapsed_seconds"`
}

// Left lists the groups that are not exact, with their state and why: "g1 (waiting: ...)".
func (r *FollowResult) Left() []string {
	var out []string
	for _, g := range r.Follow {
		if g.State != FollowExact {
			out = append(out, fmt.Sprintf("%s (%s: %s)", g.Group, g.State, g.Why))
		}
	}
	return out
}

type follower struct {
	cfg   Config
	fc    FollowConfig
	start time.Time

	src, dst *ClusterRef // of the first plan
	groups   map[string]*FollowGroup
	snap     map[string]Group // the group as the result shows it
	rounds   int
	applied  bool

	backup *Backup // what the backup file holds, nil before the first write

	finished, timedOut, isStuck bool
}

func (f *follower) event(g *FollowGroup, format string, args ...any) {
	if f.fc.OnEvent != nil {
		f.fc.OnEvent(FollowEvent{Group: g.Group, State: g.State, Message: fmt.Sprintf(format, args...)})
	}
}

// set moves g to state with why, and reports the change (not a repeat).
func (f *follower) set(g *FollowGroup, state FollowState, why string) {
	changed := g.State != state || g.Why != why
	g.State, g.Why = state, why
	if changed {
		f.event(g, "group %q %s: %s", g.Group, state, why)
	}
}

// checkClusters refuses a round whose clusters are not the first round's, and loads (with
// Apply) the backup file an earlier run left.
func (f *follower) checkClusters(res *Result) error {
	if f.src == nil {
		f.src, f.dst = res.SourceCluster, res.TargetCluster
		if f.fc.Apply {
			return f.loadBackup()
		}
		return nil
	}
	if res.SourceCluster.ID != f.src.ID || res.TargetCluster.ID != f.dst.ID {
		return fmt.Errorf("the clusters changed during the run: source cluster ID %s (was %s), target %s (was %s); nothing more is written",
			res.SourceCluster.ID, f.src.ID, res.TargetCluster.ID, f.dst.ID)
	}
	return nil
}

// loadBackup reads the backup file of an earlier run, if there is one: it must be a backup of
// these two clusters, and is then extended.
func (f *follower) loadBackup() error {
	path := f.fc.Backup
	if _, err := os.Lstat(path); errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	b, err := ReadBackup(path)
	if err != nil {
		return fmt.Errorf("backup file %s exists and is not a backup this run can extend: %w (choose another with --backup)", path, err)
	}
	if b.Version != BackupVersion || b.SourceCluster.ID != f.src.ID || b.TargetCluster.ID != f.dst.ID {
		return fmt.Errorf("backup file %s exists and belongs to other clusters (source %s, target %s; these are %s and %s): choose another with --backup",
			path, b.SourceCluster.ID, b.TargetCluster.ID, f.src.ID, f.dst.ID)
	}
	f.backup = b
	if f.fc.OnEvent != nil {
		f.fc.OnEvent(FollowEvent{Message: fmt.Sprintf("extending the backup %s of an earlier run (%s)", path, plural(len(b.Entries), "partition", "partitions"))})
	}
	return nil
}

// round judges every group of res, in order, and applies the ready ones one at a time.
func (f *follower) round(ctx context.Context, dst *kgo.Client, res *Result) error {
	seen := map[string]bool{}
	for gi := range res.Groups {
		g := &res.Groups[gi]
		seen[g.Group] = true
		if err := f.group(ctx, dst, res, g); err != nil {
			return err
		}
	}
	for name, fg := range f.groups {
		if !seen[name] && !fg.Final {
			fg.Final = true
			f.set(fg, FollowBlocked, "no longer on the source (deleted, or its offsets expired): not followed any more")
		}
	}
	return nil
}

func hasMembers(state string) bool { return state != "" && state != "Empty" && state != "Dead" }

// group judges one group of the plan res and, when it is ready and Apply is set, applies it.
func (f *follower) group(ctx context.Context, dst *kgo.Client, res *Result, g *Group) error {
	fg := f.groups[g.Group]
	if fg == nil {
		fg = &FollowGroup{Group: g.Group}
		f.groups[g.Group] = fg
	}
	if fg.Final {
		return nil
	}
	was := fg.State
	if was != FollowExact {
		f.snap[g.Group] = *g
	}
	switch {
	case g.Err != "":
		f.set(fg, FollowBlocked, g.Err)
		return nil
	case g.NotMigrated != "":
		fg.Final = true
		f.set(fg, FollowBlocked, "not migrated: "+g.NotMigrated)
		return nil
	case hasMembers(g.TargetState) && was == FollowExact:
		fg.Final = true
		f.event(fg, "group %q has consumers on the target now (%s): done, not touched again", g.Group, g.TargetState)
		return nil
	case hasMembers(g.TargetState):
		fg.Final = true
		f.set(fg, FollowBlocked, fmt.Sprintf("it is %s with members on the target: someone started its consumers there; kreconcile does not write to it in this run (stop them and run again if it must be reconciled)", g.TargetState))
		return nil
	case hasMembers(g.SourceState) && was == FollowExact:
		f.snap[g.Group] = *g
		f.set(fg, FollowWaiting, fmt.Sprintf("it consumes on the source again (%s) after it was made exact: waiting for it to stop, then E(G) is applied again", g.SourceState))
		return nil
	case hasMembers(g.SourceState):
		f.set(fg, FollowWaiting, fmt.Sprintf("its consumers still run on the source (%s)", g.SourceState))
		return nil
	}
	if why := notKnown(g, FollowWaiting); why != "" {
		f.set(fg, FollowWaiting, why)
		return nil
	}
	if why := notKnown(g, FollowBlocked); why != "" {
		f.set(fg, FollowBlocked, why)
		return nil
	}
	if fg.wrote != nil {
		return f.again(ctx, dst, res, g, fg)
	}
	if why := ahead(g, f.fc.AllowRewind); why != "" {
		f.set(fg, FollowBlocked, why)
		return nil
	}
	if allExact(g) {
		f.exact(fg, g, "already exact")
		return nil
	}
	if !f.fc.Apply {
		f.set(fg, FollowReady, "its source group is empty and E(G) is known: kreconcile groups --apply would commit it now")
		return nil
	}
	return f.apply(ctx, dst, res, g, fg)
}

// again judges a group Follow made exact earlier (see Follow for the rule).
func (f *follower) again(ctx context.Context, dst *kgo.Client, res *Result, g *Group, fg *FollowGroup) error {
	var behind bool
	for _, p := range g.Partitions {
		at, ok := fg.wrote[tp{p.TargetTopic, p.Partition}]
		switch {
		case ok != (p.TargetCommitted != nil) || ok && at != *p.TargetCommitted:
			fg.Final = true
			f.set(fg, FollowExact, fmt.Sprintf("made exact, and it has consumed on the target since (%s/%d is at %s): done, not touched again", p.TargetTopic, p.Partition, offStr(p.TargetCommitted)))
			return nil
		case p.Status == StatusAhead:
			fg.Final = true
			f.set(fg, FollowBlocked, fmt.Sprintf("the source group moved back after it was made exact (%s/%d: E(G) %s is below the %d written): not touched again", p.TargetTopic, p.Partition, offStr(p.ExactTarget), at))
			return nil
		case p.Status != StatusExact:
			behind = true
		}
	}
	if !behind {
		if fg.State != FollowExact {
			f.exact(fg, g, "exact again")
		}
		return nil
	}
	if !f.fc.Apply {
		f.set(fg, FollowReady, "its source group moved again and its target is still what was found: kreconcile groups --apply would commit the new E(G)")
		return nil
	}
	f.event(fg, "group %q moved on the source after it was made exact, and nobody consumed on the target: applying the new E(G)", g.Group)
	return f.apply(ctx, dst, res, g, fg)
}

// apply commits E(G) for group g alone, with the backup extended first.
func (f *follower) apply(ctx context.Context, dst *kgo.Client, res *Result, g *Group, fg *FollowGroup) error {
	one := *g
	one.Partitions = slices.Clone(g.Partitions)
	sub := &Result{Groups: []Group{one}, SourceCluster: res.SourceCluster, TargetCluster: res.TargetCluster}
	err := apply(ctx, dst, sub, ApplyConfig{AllowRewind: f.fc.AllowRewind, Logger: f.fc.Logger, BeforeCommit: f.fc.BeforeCommit}, f.save)
	ng := sub.Groups[0]
	f.snap[g.Group] = ng
	if ng.Applied {
		f.applied = true
	}
	switch {
	case ng.Refused != "":
		fg.Final = true
		f.set(fg, FollowBlocked, "not touched: "+ng.Refused)
		return nil
	case err != nil && ng.Err != "" && f.joined(ctx, dst, g.Group):
		fg.Final = true
		f.set(fg, FollowBlocked, "a consumer joined it on the target while kreconcile wrote: "+ng.Err)
		return nil
	case err != nil:
		return err
	case ng.Err != "":
		f.set(fg, FollowBlocked, ng.Err)
		return nil
	}
	if !allExact(&ng) {
		var left []string
		for _, p := range ng.Partitions {
			if p.Status != StatusExact {
				left = append(left, fmt.Sprintf("%s/%d: %s", p.TargetTopic, p.Partition, p.Action))
			}
		}
		f.set(fg, FollowBlocked, "not exact after apply: "+strings.Join(left, "; "))
		return nil
	}
	fg.Applied++
	f.exact(fg, &ng, "")
	return nil
}

// joined reports whether group has members on the target now.
func (f *follower) joined(ctx context.Context, dst *kgo.Client, group string) bool {
	d, err := mm2.DescribeGroups(ctx, dst, nil, group)
	if err != nil {
		return false
	}
	dg, ok := d[group]
	return ok && dg.Err == nil && (dg.Members > 0 || hasMembers(dg.State))
}

// exact records that g (as planned or applied) is exact on every partition.
func (f *follower) exact(fg *FollowGroup, g *Group, how string) {
	fg.wrote = map[tp]int64{}
	var parts []string
	for _, p := range g.Partitions {
		if p.TargetCommitted != nil {
			fg.wrote[tp{p.TargetTopic, p.Partition}] = *p.TargetCommitted
		}
		s := fmt.Sprintf("%s/%d at %s", p.TargetTopic, p.Partition, offStr(p.ExactTarget))
		if p.Applied {
			s = fmt.Sprintf("%s/%d %s", p.TargetTopic, p.Partition, p.Action)
		}
		parts = append(parts, s)
	}
	f.snap[g.Group] = *g
	what := "no committed offsets on the selected topics, nothing to write"
	if len(parts) > 0 {
		what = strings.Join(parts, ", ")
	}
	if how != "" {
		what = how + ": " + what
	}
	if f.backup != nil && fg.Applied > 0 {
		what += fmt.Sprintf(" (previous offsets in %s)", f.fc.Backup)
	}
	fg.State, fg.Why = FollowExact, what
	f.event(fg, "group %q is ready on the target, exactly: %s", g.Group, what)
}

// notKnown says why E(G) is not known on some partition of g, for the partitions whose
// status is pending (as state FollowWaiting) or unmappable (FollowBlocked); "" when none is.
func notKnown(g *Group, as FollowState) string {
	var why []string
	for _, p := range g.Partitions {
		pending := p.Status == StatusPending
		if p.ExactTarget == nil && pending == (as == FollowWaiting) {
			why = append(why, fmt.Sprintf("%s/%d (G=%d) %s: %s", p.Topic, p.Partition, p.SourceCommitted, p.Status, p.Reason))
		}
	}
	return strings.Join(why, "; ")
}

// ahead says which partitions of g are ahead of E(G), when they may not be moved back.
func ahead(g *Group, allowRewind bool) string {
	if allowRewind {
		return ""
	}
	var why []string
	for _, p := range g.Partitions {
		if p.Status == StatusAhead {
			why = append(why, fmt.Sprintf("%s/%d: target commit %s is ahead of E(G) %s (switching would skip %d records)", p.TargetTopic, p.Partition, offStr(p.TargetCommitted), offStr(p.ExactTarget), p.SkippedIfUnchanged))
		}
	}
	if len(why) == 0 {
		return ""
	}
	return strings.Join(why, "; ") + ": never moved back without --allow-rewind"
}

func allExact(g *Group) bool {
	for _, p := range g.Partitions {
		if p.Status != StatusExact {
			return false
		}
	}
	return true
}

func (f *follower) progress() FollowProgress {
	p := FollowProgress{Round: f.rounds, Elapsed: time.Since(f.start)}
	for _, g := range f.groups {
		switch g.State {
		case FollowExact:
			p.Exact++
		case FollowReady:
			p.Ready++
		case FollowWaiting:
			p.Waiting++
		default:
			p.Blocked++
		}
	}
	return p
}

// done: every group exact (with Apply), exact or ready (without).
func (f *follower) done() bool {
	for _, g := range f.groups {
		if g.State != FollowExact && (f.fc.Apply || g.State != FollowReady) {
			return false
		}
	}
	return true
}

// stuck: every group that is not done is blocked for the run.
func (f *follower) stuck() bool {
	some := false
	for _, g := range f.groups {
		switch {
		case g.State == FollowExact || !f.fc.Apply && g.State == FollowReady:
		case g.Final:
			some = true
		default:
			return false
		}
	}
	return some
}

func (f *follower) result() *FollowResult {
	r := &FollowResult{Result: &Result{Groups: []Group{}, SourceCluster: f.src, TargetCluster: f.dst, Applied: f.applied},
		Follow: []FollowGroup{}, Done: f.finished, TimedOut: f.timedOut, Stuck: f.isStuck, Rounds: f.rounds,
		Elapsed: time.Since(f.start).Round(time.Millisecond).Seconds()}
	if f.backup != nil {
		r.Backup = f.fc.Backup
	}
	names := make([]string, 0, len(f.groups))
	for n := range f.groups {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, n := range names {
		r.Follow = append(r.Follow, *f.groups[n])
		if g, ok := f.snap[n]; ok {
			r.Groups = append(r.Groups, g)
		}
	}
	return r
}

// save is apply's backup writer for Follow: it adds b's entries to the backup of the run and
// writes the whole of it (see Follow). A partition already in the backup keeps its offset from
// before the run when its target commit is still what the earlier step wrote; when it moved
// in between, the entry takes the offset it moved to (a rollback never undoes that).
func (f *follower) save(b *Backup) (string, error) {
	merged := &Backup{Version: BackupVersion, Created: b.Created, SourceCluster: b.SourceCluster, TargetCluster: b.TargetCluster}
	if f.backup != nil {
		merged.Created = f.backup.Created
		merged.Entries = slices.Clone(f.backup.Entries)
	}
	type key struct {
		g, t string
		p    int32
	}
	at := map[key]int{}
	for i, e := range merged.Entries {
		at[key{e.Group, e.Topic, e.Partition}] = i
	}
	for _, e := range b.Entries {
		i, ok := at[key{e.Group, e.Topic, e.Partition}]
		if !ok {
			merged.Entries = append(merged.Entries, e)
			continue
		}
		if old := merged.Entries[i]; old.Committed != nil && sameOff(e.Offset, old.Committed) {
			e.Offset, e.Metadata = old.Offset, old.Metadata
		}
		merged.Entries[i] = e
	}
	sort.Slice(merged.Entries, func(i, j int) bool {
		a, b := merged.Entries[i], merged.Entries[j]
		return a.Group < b.Group || a.Group == b.Group && (a.Topic < b.Topic || a.Topic == b.Topic && a.Partition < b.Partition)
	})
	if err := merged.validate(); err != nil {
		return "", fmt.Errorf("backup %s: %w", f.fc.Backup, err)
	}
	path := f.fc.Backup
	var err error
	if f.backup == nil {
		err = writeBackup(path, merged) // the first step: never over a file
	} else {
		err = replaceBackup(path, merged)
	}
	if err != nil {
		return "", err
	}
	f.backup = merged
	return path, nil
}
