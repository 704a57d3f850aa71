package groupsync

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"golang.org/x/sync/errgroup"

	"github.com/kmigrate/kmigrate/internal/offsetcommit"
	"github.com/kmigrate/kmigrate/logread"
	"github.com/kmigrate/kmigrate/mm2"
	"github.com/kmigrate/kmigrate/offsetmap"
)

// Syncer keeps what the passes of one flow have written: the last checkpoint per key and the
// last offset committed per target group partition. Its state starts from the checkpoints
// topic on the target, so a restarted process neither re-emits nor moves anything backwards.
// A Syncer is used by one goroutine at a time (Run, or successive SyncOnce calls).
type Syncer struct {
	cfg              Config
	src              *kadm.Client // read-only: ListGroups and FetchOffsets only
	tgt              *kadm.Client
	ignore           map[string]bool
	log              *slog.Logger
	srcName, tgtName string

	mu sync.Mutex // guards the maps below; groups run concurrently within a pass
	// checkpoints is the last checkpoint per key (emitted, or read back from the topic).
	checkpoints map[mm2.CheckpointKey]mark
	// written is the (G, E(G)) the target group partition was last set to by a kmirror pass
	// (or, after a restart, what the last checkpoint says): a target offset still equal to E
	// with a source offset below G means the source group rewound.
	written map[mm2.CheckpointKey]mark

	loaded     bool
	owned      map[tp]bool // ownership seen in the last pass
	topicReady atomic.Bool // the checkpoints topic was found or created; reset when it vanishes
	groups     []string
	// notMigrated are the selected source groups of a type no tool migrates (share,
	// streams), reported in every pass with why.
	notMigrated []GroupReport
	listedAt    time.Time
	// tgtListed is the target's listing of groups, with their types, taken once a pass that
	// commits: it says which target groups to describe as consumer groups (KIP-848).
	tgtListed kadm.ListedGroups
	// spans is what was read of the target after each E(G) in use (span.go).
	spans spans
}

type mark struct {
	upstream, downstream int64
	metadata             string
}

type tp struct {
	topic     string
	partition int32
}

// New validates cfg (after SetDefaults) and returns a Syncer. It does no I/O: the checkpoints
// topic is read at the first pass.
func New(cfg Config) (*Syncer, error) {
	cfg.SetDefaults()
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	s := &Syncer{
		cfg:         cfg,
		src:         kadm.NewClient(cfg.Source),
		tgt:         kadm.NewClient(cfg.Target),
		ignore:      make(map[string]bool),
		log:         cfg.Logger,
		srcName:     "source",
		tgtName:     "target",
		checkpoints: make(map[mm2.CheckpointKey]mark),
		written:     make(map[mm2.CheckpointKey]mark),
	}
	if cfg.Flow != nil {
		s.srcName, s.tgtName = cfg.Flow.Source, cfg.Flow.Target
	}
	for _, g := range cfg.IgnoreGroups {
		s.ignore[g] = true
	}
	return s, nil
}

// SyncOnce runs one full pass with a fresh Syncer: it reads the checkpoints topic, lists the
// source groups, emits checkpoints (if EmitCheckpoints) and commits target offsets (if
// SyncGroupOffsets). The error is set only when the pass as a whole failed; per-group and
// per-partition failures are in the Report.
func SyncOnce(ctx context.Context, cfg Config) (Report, error) {
	s, err := New(cfg)
	if err != nil {
		return Report{}, err
	}
	return s.SyncOnce(ctx)
}

// Run syncs until ctx is done: checkpoints every CheckpointInterval, group offsets every
// Interval, listing the source groups again every RefreshGroupsInterval. A failed pass is
// logged and retried at the next interval, except an authorization failure (of the pass, a
// group or a partition), which no retry mends: Run returns it. Run returns nil when ctx is
// done, or the error of
// an invalid Config.
func Run(ctx context.Context, cfg Config) error {
	s, err := New(cfg)
	if err != nil {
		return err
	}
	return s.Run(ctx)
}

// SyncOnce runs one pass of everything that is enabled, listing the source groups again.
func (s *Syncer) SyncOnce(ctx context.Context) (Report, error) {
	return s.pass(ctx, s.cfg.EmitCheckpoints, s.cfg.SyncGroupOffsets, true)
}

// Run is the package-level Run on an existing Syncer.
func (s *Syncer) Run(ctx context.Context) error {
	if !s.cfg.EmitCheckpoints && !s.cfg.SyncGroupOffsets {
		s.log.Info("group sync and checkpoints disabled", "cluster", s.tgtName)
		<-ctx.Done()
		return nil
	}
	var nextSync, nextEmit time.Time // zero: due at once
	for {
		now := time.Now()
		emit := s.cfg.EmitCheckpoints && !now.Before(nextEmit)
		commit := s.cfg.SyncGroupOffsets && !now.Before(nextSync)
		rep, err := s.pass(ctx, emit, commit, false)
		if ctx.Err() != nil {
			return nil
		}
		if s.cfg.OnPass != nil {
			s.cfg.OnPass(rep, err)
		}
		if d := denied(rep, err); d != nil {
			return d
		}
		if err != nil {
			s.log.Warn("group sync pass failed", "cluster", s.tgtName, "err", err)
		} else {
			s.log.Debug("group sync pass done", "cluster", s.tgtName, "groups", len(rep.Groups),
				"committed", rep.Committed, "emitted", rep.Emitted, "errors", rep.Errors())
		}
		if emit {
			nextEmit = now.Add(s.cfg.CheckpointInterval)
		}
		if commit {
			nextSync = now.Add(s.cfg.Interval)
		}
		var next time.Time
		if s.cfg.EmitCheckpoints {
			next = nextEmit
		}
		if s.cfg.SyncGroupOffsets && (next.IsZero() || nextSync.Before(next)) {
			next = nextSync
		}
		t := time.NewTimer(time.Until(next))
		select {
		case <-ctx.Done():
			t.Stop()
			return nil
		case <-t.C:
		}
	}
}

func (s *Syncer) pass(ctx context.Context, emit, commit, relist bool) (Report, error) {
	rep := Report{Source: s.srcName, Target: s.tgtName}
	s.spans.startPass()
	owned := make(map[tp]bool)
	for t, ps := range s.cfg.Translator.Owned() {
		for _, p := range ps {
			owned[tp{t, p}] = true
		}
	}
	// A checkpoints topic that cannot be read or created stops the checkpoints of this pass,
	// not the offset sync: without the last checkpoints a lower one could replace a higher
	// one, while commits still only go forwards (rewinds need that state and wait for it).
	if err := s.loadState(ctx, owned); err != nil {
		rep.Err, emit = &SyncError{Step: ErrCheckpointsTopic, Cluster: s.tgtName, Err: err, msg: err.Error()}, false
		rep.Error = err.Error()
		s.log.Warn("checkpoints topic not read, no checkpoint this pass", "cluster", s.tgtName, "topic", s.cfg.CheckpointsTopic, "err", err)
	}
	if emit && !s.topicReady.Load() {
		if err := ensureCheckpointsTopic(ctx, s.tgt, s.cfg.CheckpointsTopic, s.cfg.CheckpointsReplicationFactor, s.tgtName, s.log); err != nil {
			rep.Err, emit = &SyncError{Step: ErrCheckpointsTopic, Cluster: s.tgtName, Err: err, msg: err.Error()}, false
			rep.Error = err.Error()
			s.log.Warn("checkpoints topic not ready, no checkpoint this pass", "cluster", s.tgtName, "topic", s.cfg.CheckpointsTopic, "err", err)
		} else {
			s.topicReady.Store(true)
		}
	}
	if relist || s.groups == nil || time.Since(s.listedAt) >= s.cfg.RefreshGroupsInterval {
		if err := s.listGroups(ctx); err != nil {
			return rep, err
		}
	}

	if commit {
		listed, err := s.tgt.ListGroups(ctx)
		if err != nil && len(listed) == 0 {
			// Each group is then described as classic first, as a consumer group when the
			// target does not find it so.
			s.log.Warn("listing groups failed on the target", "cluster", s.tgtName, "err", err)
			listed = kadm.ListedGroups{}
		}
		s.tgtListed = listed
	}
	rep.Groups = make([]GroupReport, len(s.groups), len(s.groups)+len(s.notMigrated))
	var eg errgroup.Group
	eg.SetLimit(s.cfg.Concurrency)
	for i, g := range s.groups {
		eg.Go(func() error {
			rep.Groups[i] = s.syncGroup(ctx, g, owned, emit, commit)
			return nil
		})
	}
	_ = eg.Wait() // per-group errors are in the report
	if len(s.notMigrated) > 0 {
		rep.Groups = append(rep.Groups, s.notMigrated...)
		slices.SortFunc(rep.Groups, func(a, b GroupReport) int { return cmp.Compare(a.Group, b.Group) })
	}
	for _, g := range rep.Groups {
		for _, p := range g.Partitions {
			if p.Offset.Wrote() {
				rep.Committed++
			}
			if p.Checkpoint.Wrote() {
				rep.Emitted++
			}
		}
	}
	return rep, ctx.Err()
}

// loadState reads the checkpoints topic at the first pass, and again when this process gains a
// partition (another process may have checkpointed it since): for the gained partitions the
// topic's values replace what this process remembered.
func (s *Syncer) loadState(ctx context.Context, owned map[tp]bool) error {
	gained := make(map[tp]bool) // keyed by target topic
	for k := range owned {
		if !s.owned[k] && s.cfg.TopicMatches(k.topic) {
			gained[tp{s.cfg.TargetTopic(k.topic), k.partition}] = true
		}
	}
	if s.cfg.CheckpointsTopic == "" || (s.loaded && len(gained) == 0) {
		s.loaded, s.owned = true, owned
		return nil
	}
	cps, err := readCheckpoints(ctx, s.cfg.Target, s.cfg.CheckpointsTopic, s.tgtName, s.log)
	if err != nil {
		return err // s.owned unchanged: the gained partitions are read again next pass
	}
	s.owned = owned
	s.mu.Lock()
	defer s.mu.Unlock()
	for k, c := range cps {
		if s.loaded && !gained[tp{k.Topic, k.Partition}] {
			continue
		}
		m := mark{c.Upstream, c.Downstream, c.Metadata}
		s.checkpoints[k] = m
		s.written[k] = m
	}
	s.loaded = true
	return nil
}

// Selected lists the source groups again and returns those the flow syncs, sorted.
func (s *Syncer) Selected(ctx context.Context) ([]string, error) {
	if err := s.listGroups(ctx); err != nil {
		return nil, err
	}
	return slices.Clone(s.groups), nil
}

// denied returns the first authorization failure of a pass (of the pass, a group or a
// partition), which a later pass would meet again: the principal lacks an ACL.
func denied(rep Report, err error) error {
	errs := []error{err, rep.Err}
	for _, g := range rep.Groups {
		errs = append(errs, g.Err)
		for _, p := range g.Partitions {
			errs = append(errs, p.Err)
		}
	}
	for _, e := range errs {
		if e != nil && logread.Denied(e) {
			return e
		}
	}
	return nil
}

func (s *Syncer) listGroups(ctx context.Context) error {
	listed, err := s.src.ListGroups(ctx)
	if err != nil {
		var se *kadm.ShardErrors
		if !errors.As(err, &se) || len(listed) == 0 {
			return fmt.Errorf("list consumer groups on source %s: %w", s.srcName, err)
		}
		// Some brokers answered: sync their groups now, the rest next time.
		s.log.Warn("listing groups failed on some source brokers", "cluster", s.srcName, "err", err)
	}
	groups := make([]string, 0, len(listed))
	var notMigrated []GroupReport
	for name, g := range listed {
		if s.ignore[name] || !s.cfg.GroupMatches(name) {
			continue
		}
		// A share or streams group is reported, never synced (mm2.NotMigrated and
		// mm2.StreamsNotSynced say why).
		why := mm2.NotMigrated(g.GroupType)
		if g.GroupType == mm2.GroupTypeStreams {
			why = mm2.StreamsNotSynced
		}
		if why != "" {
			notMigrated = append(notMigrated, GroupReport{Group: name, Type: g.GroupType, Partitions: []PartitionReport{}, NotMigrated: why})
			continue
		}
		// Consumer groups, of either protocol, and groups that only hold commits
		// (assign-and-commit consumers); never Connect workers' groups.
		if g.ProtocolType != "consumer" && g.ProtocolType != "" {
			continue
		}
		groups = append(groups, name)
	}
	slices.Sort(groups)
	for _, g := range notMigrated {
		s.log.Warn("group not migrated", "cluster", s.srcName, "group", g.Group, "type", g.Type, "why", g.NotMigrated)
	}
	s.groups, s.notMigrated, s.listedAt = groups, notMigrated, time.Now()
	return nil
}

// item is one group partition whose E(G) is known.
type item struct {
	rep  *PartitionReport
	key  mm2.CheckpointKey
	meta string
	// sp is the span of target offsets that are all E(G) for a read_committed consumer;
	// rep.Downstream is the one of them to write.
	sp span
}

func (s *Syncer) syncGroup(ctx context.Context, group string, owned map[tp]bool, emit, commit bool) GroupReport {
	gr := GroupReport{Group: group}
	offs, err := s.src.FetchOffsets(ctx, group)
	if errors.Is(err, kerr.GroupIDNotFound) {
		return gr // deleted since it was listed
	}
	if err != nil {
		setGroupError(&gr, &SyncError{Step: ErrFetchSource, Cluster: s.srcName, Group: group, Err: err,
			msg: fmt.Sprintf("fetch committed offsets of group %q on source %s: %v", group, s.srcName, err)})
		s.log.Warn("fetch source group offsets failed", "cluster", s.srcName, "group", group, "err", err)
		return gr
	}
	var trs map[tp]offsetmap.Translation
	gr.Partitions, trs = s.translate(group, offs, owned, emit, commit)
	var items []item
	for i := range gr.Partitions {
		pr := &gr.Partitions[i]
		if pr.Downstream < 0 {
			continue
		}
		sp := s.span(ctx, pr.Topic, pr.TargetTopic, pr.Partition, pr.Upstream, trs[tp{pr.Topic, pr.Partition}])
		pr.Downstream = sp.choice()
		if r := sp.reason(); r != "" {
			appendReason(pr, r)
		}
		o, _ := offs.Lookup(pr.Topic, pr.Partition)
		items = append(items, item{rep: pr, key: mm2.CheckpointKey{Group: group, Topic: pr.TargetTopic, Partition: pr.Partition}, meta: o.Metadata, sp: sp})
	}
	if len(items) == 0 {
		return gr
	}
	if emit {
		s.emitCheckpoints(ctx, group, items)
	}
	if commit {
		s.commitOffsets(ctx, &gr, items)
	}
	return gr
}

// translate reports the group's committed partitions of mirrored topics, sorted, with E(G)
// for those this process owns and the mirror has passed (the Translator's answers, by source
// partition, beside them).
func (s *Syncer) translate(group string, offs kadm.OffsetResponses, owned map[tp]bool, emit, commit bool) ([]PartitionReport, map[tp]offsetmap.Translation) {
	var out []PartitionReport
	trs := make(map[tp]offsetmap.Translation)
	initial := func(on bool) Status {
		if on {
			return StatusPending
		}
		return StatusDisabled
	}
	for topic, ps := range offs {
		if !s.cfg.TopicMatches(topic) {
			continue
		}
		tt := s.cfg.TargetTopic(topic)
		for p, o := range ps {
			if o.Err == nil && o.At < 0 {
				continue // no commit for this partition
			}
			pr := PartitionReport{Topic: topic, TargetTopic: tt, Partition: p, Upstream: o.At,
				Downstream: -1, TargetBefore: -1, Offset: initial(commit), Checkpoint: initial(emit)}
			switch {
			case o.Err != nil:
				pr.Offset, pr.Checkpoint = StatusError, StatusError
				addError(&pr, &SyncError{Step: ErrFetchSource, Cluster: s.srcName, Group: group, Topic: topic, Partition: p, Err: o.Err,
					msg: fmt.Sprintf("fetch committed offset of group %q on source %s %s/%d: %v", group, s.srcName, topic, p, o.Err)})
			case !owned[tp{topic, p}]:
				pr.Offset, pr.Checkpoint = StatusNotOwned, StatusNotOwned
			default:
				tr, ok := s.cfg.Translator.Translate(topic, p, o.At)
				switch {
				case ok && tr.Known:
					pr.Downstream = tr.Target
					trs[tp{topic, p}] = tr
				case tr.Compacted:
					pr.Reason = "the group's offset lies before the mirror's exact offset map, which keeps the partition's last commits (kmirror's map window): not synced rather than guessed; kreconcile groups finds it by content"
					s.log.Debug("group offset older than the offset map's window", "cluster", s.srcName, "group", group,
						"topic", topic, "partition", p, "offset", o.At)
				default:
					pr.Reason = "the mirror has not copied the records below the group's offset yet"
					s.log.Debug("group offset pending", "cluster", s.srcName, "group", group,
						"topic", topic, "partition", p, "offset", o.At)
				}
			}
			out = append(out, pr)
		}
	}
	slices.SortFunc(out, func(a, b PartitionReport) int {
		return cmp.Or(cmp.Compare(a.Topic, b.Topic), cmp.Compare(a.Partition, b.Partition))
	})
	return out, trs
}

// emitCheckpoints produces the checkpoints of one group that changed. A checkpoint is never
// replaced by a lower one unless the source group rewound (G went down), as in MM2. One at an
// offset of E(G)'s span (the same position for a read_committed consumer) is unchanged, as a
// target commit there is: the checkpoint keeps saying where the sync committed the group.
func (s *Syncer) emitCheckpoints(ctx context.Context, group string, items []item) {
	var recs []*kgo.Record
	var sent []item
	s.mu.Lock()
	for _, it := range items {
		g, e := it.rep.Upstream, it.rep.Downstream
		prev, ok := s.checkpoints[it.key]
		switch {
		case !ok:
			it.rep.Checkpoint = StatusSynced
		case g < prev.upstream:
			it.rep.Checkpoint = StatusRewound
		case g == prev.upstream && it.meta == prev.metadata && (e == prev.downstream || it.sp.holds(prev.downstream)):
			it.rep.Checkpoint = StatusUnchanged
			continue
		case e < prev.downstream && !it.sp.holds(prev.downstream):
			it.rep.Checkpoint = StatusHeld
			appendReason(it.rep, fmt.Sprintf("checkpoint kept at %d: E(G)=%d is lower and the source group did not rewind", prev.downstream, e))
			continue
		default:
			it.rep.Checkpoint = StatusSynced
		}
		c := mm2.Checkpoint{Group: group, Topic: it.key.Topic, Partition: it.key.Partition,
			Upstream: g, Downstream: e, Metadata: it.meta}
		recs = append(recs, &kgo.Record{Topic: s.cfg.CheckpointsTopic, Partition: 0, Key: c.Key(), Value: c.Value()})
		sent = append(sent, it)
	}
	s.mu.Unlock()
	if len(recs) == 0 {
		return
	}
	results := s.cfg.Target.ProduceSync(ctx, recs...)
	s.mu.Lock()
	defer s.mu.Unlock()
	for i, it := range sent {
		if err := results[i].Err; err != nil {
			if errors.Is(err, kerr.UnknownTopicOrPartition) {
				s.topicReady.Store(false) // deleted meanwhile: created again next pass
			}
			it.rep.Checkpoint = StatusError
			addError(it.rep, &SyncError{Step: ErrProduce, Cluster: s.tgtName, Group: group, Topic: it.key.Topic, Partition: it.key.Partition, Err: err,
				msg: fmt.Sprintf("produce checkpoint to %q on target %s: %v", s.cfg.CheckpointsTopic, s.tgtName, err)})
			s.log.Warn("checkpoint produce failed", "cluster", s.tgtName, "group", group,
				"topic", it.key.Topic, "partition", it.key.Partition, "err", err)
			continue
		}
		s.checkpoints[it.key] = mark{it.rep.Upstream, it.rep.Downstream, it.meta}
		s.log.Debug("checkpoint emitted", "cluster", s.tgtName, "group", group, "topic", it.key.Topic,
			"partition", it.key.Partition, "offset", it.rep.Downstream, "upstream", it.rep.Upstream)
	}
}

// commitOffsets commits E(G) for one group on the target, only when the target group has no
// active member, per partition only forwards unless the source group rewound.
func (s *Syncer) commitOffsets(ctx context.Context, gr *GroupReport, items []item) {
	current, ok := s.writableTarget(ctx, gr, items)
	if !ok {
		return
	}
	toCommit, committing := s.planCommits(items, current)
	if len(committing) == 0 {
		return
	}
	resp, err := offsetcommit.Commit(ctx, s.tgt, gr.Group, toCommit, 0)
	if err != nil {
		s.failGroup(gr, committing, &SyncError{Step: ErrCommit, Cluster: s.tgtName, Group: gr.Group, Err: err,
			msg: fmt.Sprintf("commit offsets of group %q on target %s: %v", gr.Group, s.tgtName, err)})
		s.log.Warn("commit target group offsets failed", "cluster", s.tgtName, "group", gr.Group, "err", err)
		return
	}
	s.recordCommits(gr.Group, committing, resp)
}

// writableTarget describes the target group and, if it may be written (mm2.GroupWritable),
// returns its committed offsets; ok is false when nothing is to be committed, with the
// reason in gr and the items.
func (s *Syncer) writableTarget(ctx context.Context, gr *GroupReport, items []item) (kadm.OffsetResponses, bool) {
	group := gr.Group
	describeFailed := func(err error) {
		s.failGroup(gr, items, &SyncError{Step: ErrDescribeTarget, Cluster: s.tgtName, Group: group, Err: err,
			msg: fmt.Sprintf("describe group %q on target %s before committing: %v", group, s.tgtName, err)})
		s.log.Warn("describe target group failed", "cluster", s.tgtName, "group", group, "err", err)
	}
	// By its type: a consumer group of KIP-848 is described with ConsumerGroupDescribe (the
	// classic DescribeGroups does not find it on Kafka 4).
	described, err := mm2.DescribeGroups(ctx, s.cfg.Target, s.tgtListed, group)
	if err != nil {
		describeFailed(err)
		return nil, false
	}
	d := described[group]
	switch {
	case d.Err != nil:
		describeFailed(d.Err)
		return nil, false
	case d.Absent():
		gr.TargetState = "absent"
	default:
		gr.TargetState = d.State
	}
	gr.TargetType, gr.TargetMembers = d.Type, max(d.Members, 0)
	if err := mm2.GroupWritable(s.tgtName, d); err != nil {
		for _, it := range items {
			it.rep.Offset = StatusSkippedActive
			if d.Members < 0 || mm2.NotMigrated(d.Type) != "" {
				appendReason(it.rep, err.Error())
			}
		}
		s.log.Warn("target group has active members, offsets not synced", "cluster", s.tgtName,
			"group", group, "type", d.Type, "state", gr.TargetState, "members", gr.TargetMembers, "err", err)
		return nil, false
	}
	if gr.TargetState == "absent" {
		return nil, true
	}
	current, err := s.tgt.FetchOffsets(ctx, group)
	if err != nil && !errors.Is(err, kerr.GroupIDNotFound) {
		s.failGroup(gr, items, &SyncError{Step: ErrFetchTarget, Cluster: s.tgtName, Group: group, Err: err,
			msg: fmt.Sprintf("fetch committed offsets of group %q on target %s: %v", group, s.tgtName, err)})
		return nil, false
	}
	return current, true
}

// planCommits decides per partition what to commit: E(G) when it is above the target's offset
// (or the target has none), E(G) below it only when the source group rewound since kmirror
// last wrote it; the rest is unchanged or held. A target offset anywhere in E(G)'s span is
// E(G) for a read_committed consumer: unchanged, neither moved nor held.
func (s *Syncer) planCommits(items []item, current kadm.OffsetResponses) (kadm.Offsets, []item) {
	toCommit := make(kadm.Offsets)
	var committing []item
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, it := range items {
		g, e := it.rep.Upstream, it.rep.Downstream
		t := int64(-1)
		if o, ok := current.Lookup(it.key.Topic, it.key.Partition); ok && o.Err == nil && o.At >= 0 {
			t = o.At
		}
		it.rep.TargetBefore = t
		switch w, ok := s.written[it.key]; {
		case t < 0:
			it.rep.Offset = StatusSynced
		case e == t || it.sp.holds(t):
			it.rep.Offset = StatusUnchanged
			if t != e {
				appendReason(it.rep, fmt.Sprintf("target group at %d, in %d..%d, which a read_committed consumer resumes from as from E(G)=%d: left as it is", t, it.sp.e0, it.sp.end, e))
			}
			s.written[it.key] = mark{g, t, it.meta}
			continue
		case e > t:
			it.rep.Offset = StatusSynced
		case ok && t == w.downstream && g < w.upstream:
			it.rep.Offset = StatusRewound
		default:
			it.rep.Offset = StatusHeld
			appendReason(it.rep, fmt.Sprintf("target group is at %d, above E(G)=%d, and the source group did not rewind", t, e))
			continue
		}
		toCommit.Add(kadm.Offset{Topic: it.key.Topic, Partition: it.key.Partition, At: e,
			LeaderEpoch: -1, Metadata: it.meta})
		committing = append(committing, it)
	}
	return toCommit, committing
}

// recordCommits reads the commit's answer per partition: a committed partition is remembered
// as written, a refused one reported with a hint.
func (s *Syncer) recordCommits(group string, committing []item, resp kadm.OffsetResponses) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, it := range committing {
		r, ok := resp.Lookup(it.key.Topic, it.key.Partition)
		if ok && r.Err == nil {
			s.written[it.key] = mark{it.rep.Upstream, it.rep.Downstream, it.meta}
			s.log.Info("group offset synced", "cluster", s.tgtName, "group", group, "topic", it.key.Topic,
				"partition", it.key.Partition, "offset", it.rep.Downstream, "upstream", it.rep.Upstream,
				"rewound", it.rep.Offset == StatusRewound)
			continue
		}
		err := r.Err
		if !ok {
			err = errors.New("no answer for this partition")
		}
		it.rep.Offset = StatusError
		hint := ""
		if errors.Is(err, kerr.UnknownTopicOrPartition) {
			hint = " (the target topic or partition does not exist yet; retried next pass)"
		} else if errors.Is(err, kerr.UnknownMemberID) || errors.Is(err, kerr.IllegalGeneration) {
			hint = " (a member joined the target group meanwhile; it is left alone)"
		}
		addError(it.rep, &SyncError{Step: ErrCommit, Cluster: s.tgtName, Group: group, Topic: it.key.Topic, Partition: it.key.Partition, Err: err,
			msg: fmt.Sprintf("commit offset of group %q on target %s %s/%d: %v%s", group, s.tgtName, it.key.Topic, it.key.Partition, err, hint)})
		s.log.Warn("commit target group offset failed", "cluster", s.tgtName, "group", group,
			"topic", it.key.Topic, "partition", it.key.Partition, "offset", it.rep.Downstream, "err", err)
	}
}

// failGroup records e as the group's error and marks the offsets of items as failed.
func (s *Syncer) failGroup(gr *GroupReport, items []item, e *SyncError) {
	setGroupError(gr, e)
	for _, it := range items {
		it.rep.Offset = StatusError
	}
}

func setGroupError(gr *GroupReport, e *SyncError) { gr.Error, gr.Err = e.Error(), e }

// addError adds e to the partition's errors (text and value).
func addError(pr *PartitionReport, e *SyncError) {
	if pr.Error != "" {
		pr.Error += "; "
	}
	pr.Error += e.Error()
	if pr.Err == nil {
		pr.Err = e
	} else {
		pr.Err = errors.Join(pr.Err, e)
	}
}

func appendReason(pr *PartitionReport, s string) {
	if pr.Reason != "" {
		pr.Reason += "; "
	}
	pr.Reason += s
}
