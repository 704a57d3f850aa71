package reconcile

import (
	"context"
	"fmt"
	"math"
	"slices"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
	"golang.org/x/sync/errgroup"

	"github.com/kmigrate/kmigrate/logread"
	"github.com/kmigrate/kmigrate/mm2"
	"github.com/kmigrate/kmigrate/offsetmap"
)

// countLimit bounds how many target records Plan reads to count redelivered or skipped
// records; past it the count is the offset difference minus the extras already seen.
const countLimit = 10000

type planner struct {
	cfg         Config
	src, dst    *side
	syncs       *mm2.SyncIndex // nil when there is no offset-syncs topic
	checkpoints map[mm2.CheckpointKey]mm2.Checkpoint

	// srcListed is the source's listing of groups, with their types where the broker knows
	// them (Kafka 3.8+).
	srcListed kadm.ListedGroups

	// kmaps is kmirror's offset map of the flow, by source partition (none for a flow kmirror
	// did not mirror).
	kmaps map[tp]*offsetmap.PartitionMap

	mu      sync.Mutex
	cache   map[cacheKey]*cacheEntry
	anchors map[tp][]anchor // per source partition, from finished alignments
}

type cacheKey struct {
	topic string
	part  int32
	g     int64
}

type cacheEntry struct {
	once sync.Once
	ans  answer
	err  error
}

// Plan reads the committed offsets of the selected groups on both clusters and MM2's
// checkpoints, computes E(G) for every group partition and judges the target commit and the
// checkpoint against it. It never writes to either cluster. Per-group and per-partition
// failures are reported in the result; the error is for failures of the whole call (listing
// groups, reading offsets).
func Plan(ctx context.Context, src, dst *kgo.Client, cfg Config) (*Result, error) {
	cfg.SetDefaults()
	if err := cfg.Validate(); err != nil {
		return nil, fmt.Errorf("reconcile config: %w", err)
	}
	p := &planner{cfg: cfg, src: newSide("source", src), dst: newSide("target", dst), cache: make(map[cacheKey]*cacheEntry)}
	p.src.cache.fields, p.dst.cache.fields = cfg.Fields, cfg.Fields // the fingerprints the alignments use
	res, err := p.clusters(ctx)
	if err != nil {
		return nil, err
	}
	names, err := p.groups(ctx)
	if err != nil || len(names) == 0 {
		return res, err
	}
	st, err := p.state(ctx, names)
	if err != nil {
		return nil, err
	}
	p.mm2State(ctx)
	res.Groups = make([]Group, len(names))
	for gi, name := range names {
		res.Groups[gi] = p.group(name, st)
		if app := st.apps[name]; app != nil && res.Groups[gi].NotMigrated == "" {
			p.changelogPartitions(app, st)
			p.checkpointPartitions(app, st)
			res.Groups[gi].App = app
		}
	}
	if err := p.judgeAll(ctx, res, st); err != nil {
		return nil, err
	}
	for gi := range res.Groups {
		if g := &res.Groups[gi]; g.App != nil {
			if err := p.judgeApp(ctx, g, g.App, st); err != nil {
				return nil, err
			}
		}
	}
	for gi := range res.Groups {
		g := &res.Groups[gi]
		for _, part := range g.Partitions {
			if part.AbortedAhead != nil {
				g.AbortedAhead += *part.AbortedAhead
			}
		}
	}
	return res, nil
}

// clusters names the two clusters in an empty result: Apply records them in the backup,
// Rollback checks them.
func (p *planner) clusters(ctx context.Context) (*Result, error) {
	srcID, err := clusterID(ctx, p.src.cl, "source")
	if err != nil {
		return nil, err
	}
	dstID, err := clusterID(ctx, p.dst.cl, "target")
	if err != nil {
		return nil, err
	}
	return &Result{Groups: []Group{}, SourceCluster: &ClusterRef{Alias: p.cfg.Flow.Source, ID: srcID}, TargetCluster: &ClusterRef{Alias: p.cfg.Flow.Target, ID: dstID}}, nil
}

// groups lists the source groups Config selects, sorted.
func (p *planner) groups(ctx context.Context) ([]string, error) {
	listed, err := p.src.adm.ListGroups(ctx)
	if err != nil {
		return nil, fmt.Errorf("source cluster: list groups: %w", err)
	}
	p.srcListed = listed
	var names []string
	selected := p.cfg.groupFilter()
	for _, g := range sortedKeys(listed) {
		if selected(g) {
			names = append(names, g)
		}
	}
	return names, nil
}

// planState is what Plan read of the groups and their topics on both clusters.
type planState struct {
	srcDesc, dstDesc   map[string]mm2.DescribedGroup
	srcOffs, dstOffs   kadm.FetchOffsetsResponses
	topicSet           map[string]bool   // source topics the groups committed on, selected
	dstTopicOf         map[string]string // source topic -> target topic
	srcStarts, srcEnds kadm.ListedOffsets
	dstStarts, dstEnds kadm.ListedOffsets
	// srcStables and dstStables are the last stable offsets: where a read_committed consumer's
	// log ends (below the first transaction still open).
	srcStables, dstStables kadm.ListedOffsets
	// apps are the Kafka Streams applications among the groups, by group (findApps).
	apps map[string]*App
}

// state describes the groups and fetches their offsets on both clusters, and lists the logs of
// the topics they committed on (the target topics when mirrored and present).
func (p *planner) state(ctx context.Context, names []string) (*planState, error) {
	cfg := p.cfg
	st := &planState{topicSet: map[string]bool{}, dstTopicOf: map[string]string{}}
	var err error
	// Each group by its type (classic, a consumer group of KIP-848, a streams group of
	// KIP-1071); share groups are not migrated and their offsets are not read.
	if st.srcDesc, err = mm2.DescribeGroups(ctx, p.src.cl, p.srcListed, names...); err != nil {
		return nil, fmt.Errorf("source cluster: describe groups %s: %w", strings.Join(names, ", "), err)
	}
	var migrated []string
	for _, name := range names {
		if mm2.NotMigrated(st.srcDesc[name].Type) == "" {
			migrated = append(migrated, name)
		}
	}
	st.srcOffs = p.fetchOffsets(ctx, p.src, migrated)
	if st.dstDesc, err = mm2.DescribeGroups(ctx, p.dst.cl, nil, migrated...); err != nil {
		return nil, fmt.Errorf("target cluster: describe groups %s: %w", strings.Join(migrated, ", "), err)
	}
	st.dstOffs = p.fetchOffsets(ctx, p.dst, migrated)
	topicsRe := anchored(cfg.Topics)
	for _, r := range st.srcOffs {
		for t := range r.Fetched {
			if topicsRe == nil || topicsRe.MatchString(t) {
				st.topicSet[t] = true
			}
		}
	}
	if st.apps, err = p.findApps(ctx, st, migrated); err != nil {
		return nil, err
	}
	topics := sortedKeys(st.topicSet)
	for id, app := range st.apps {
		for _, t := range app.Changelogs {
			if !slices.Contains(topics, t) {
				topics = append(topics, t)
			}
		}
		for _, o := range cfg.StateOffsets[id] {
			if !slices.Contains(topics, o.Topic) {
				topics = append(topics, o.Topic)
			}
		}
	}
	if st.srcStarts, st.srcEnds, st.srcStables, err = p.src.bounds(ctx, topics); err != nil {
		return nil, err
	}
	var dstTopics []string
	for _, t := range topics {
		tt := cfg.Flow.TargetTopic(t)
		if cfg.OffsetMap != nil && cfg.OffsetMap.SourceTopic == t && cfg.OffsetMap.TargetTopic != "" {
			tt = cfg.OffsetMap.TargetTopic
		}
		st.dstTopicOf[t] = tt
		if _, ok, err := p.dst.topic(ctx, tt); err != nil {
			return nil, err
		} else if ok {
			dstTopics = append(dstTopics, tt)
		}
	}
	if st.dstStarts, st.dstEnds, st.dstStables, err = p.dst.bounds(ctx, dstTopics); err != nil {
		return nil, err
	}
	return st, nil
}

// fetchOffsets reads the committed offsets of the groups on one side and logs how long it took
// and how many groups failed.
func (p *planner) fetchOffsets(ctx context.Context, s *side, names []string) kadm.FetchOffsetsResponses {
	start := time.Now()
	offs := fetchOffsets(ctx, s.adm, names)
	failed := 0
	for _, r := range offs {
		if r.Err != nil {
			failed++
		}
	}
	p.cfg.Logger.Debug("read committed offsets", "cluster", s.name, "groups", len(names), "failed", failed, "took", time.Since(start))
	return offs
}

// mm2State reads MM2's checkpoints and offset syncs: hints and the thing to judge, never the
// answer. A topic that cannot be read is a warning.
func (p *planner) mm2State(ctx context.Context) {
	cfg, log := p.cfg, p.cfg.Logger
	cpTopic := cfg.CheckpointsTopic
	if cpTopic == "" {
		cpTopic = cfg.Flow.CheckpointsTopic()
	}
	var err error
	if p.checkpoints, err = mm2.ReadCheckpoints(ctx, p.dst.cl, cpTopic); err != nil {
		log.Warn("cannot read checkpoints", "cluster", "target", "topic", cpTopic, "err", err)
	}
	syncTopic, onTarget := cfg.Flow.OffsetSyncsTopic(), cfg.Flow.OffsetSyncsOnTarget()
	if cfg.OffsetSyncsTopic != "" {
		syncTopic = cfg.OffsetSyncsTopic
	}
	syncSide := p.src
	if onTarget {
		syncSide = p.dst
	}
	if syncs, err := mm2.ReadOffsetSyncs(ctx, syncSide.cl, syncTopic); err != nil {
		log.Warn("cannot read offset syncs", "cluster", syncSide.name, "topic", syncTopic, "err", err)
	} else if len(syncs) > 0 {
		p.syncs = mm2.IndexSyncs(syncs)
	}
	mapTopic := offsetmap.MapTopicName(cfg.Flow.Source)
	if err := p.readKmirrorMap(ctx, mapTopic); err != nil {
		log.Warn("cannot read kmirror's offset map", "cluster", "target", "topic", mapTopic, "err", err)
	}
}

// readKmirrorMap reads kmirror's offset map topic of the flow, when the target has one, up
// to its last stable offset (read_committed: the segments of an aborted transaction are not
// trusted; a transaction still open is not waited for).
func (p *planner) readKmirrorMap(ctx context.Context, topic string) error {
	if _, ok, err := p.dst.topic(ctx, topic); err != nil || !ok {
		return err
	}
	lsos, err := p.dst.adm.ListCommittedOffsets(ctx, topic)
	if err != nil {
		return fmt.Errorf("list last stable offset: %w", err)
	}
	end := stable(lsos, topic, 0, math.MaxInt64)
	var rd offsetmap.TopicReader
	err = logread.Each(ctx, p.dst.cl, logread.Options{Cluster: "target", Topic: topic, Partition: 0, From: 0, To: end, Committed: true, Controls: true, Leaders: p.dst.leaders}, func(r *kgo.Record) (bool, error) {
		if !r.Attrs.IsControl() {
			rd.Add(r.Key, r.Value)
		}
		return true, nil
	})
	if err != nil {
		return err
	}
	p.kmaps = map[tp]*offsetmap.PartitionMap{}
	for k, part := range rd.Parts() {
		p.kmaps[tp{k.Topic, k.Partition}] = part.PartitionMap(k.Partition)
	}
	return nil
}

// group is one group's result before judging: its states, errors and partitions with what both
// clusters and MM2's checkpoint say.
func (p *planner) group(name string, st *planState) Group {
	g := Group{Group: name, Partitions: []Partition{}}
	if d, ok := st.srcDesc[name]; ok {
		g.SourceState, g.SourceType = d.State, d.Type
		if d.Err != nil {
			g.Err = fmt.Sprintf("source cluster: describe group %q: %v", name, d.Err)
		}
		if why := mm2.NotMigrated(d.Type); why != "" {
			g.NotMigrated = why
			p.cfg.Logger.Warn("group not migrated", "group", name, "type", d.Type, "why", why)
			return g
		}
	}
	g.TargetState = "Dead"
	if d, ok := st.dstDesc[name]; ok && d.State != "" {
		g.TargetState, g.TargetType = d.State, d.Type
	}
	if d, ok := st.dstDesc[name]; ok && d.Err != nil {
		g.Err = fmt.Sprintf("target cluster: describe group %q: %v", name, d.Err)
	}
	so := st.srcOffs[name]
	if so.Err != nil {
		g.Err = fmt.Sprintf("source cluster: fetch offsets of group %q: %v", name, so.Err)
	}
	do := st.dstOffs[name]
	if do.Err != nil {
		g.Err = fmt.Sprintf("target cluster: fetch offsets of group %q: %v", name, do.Err)
	}
	if so.Err == nil && g.SourceState == "Empty" && len(so.Fetched) == 0 {
		g.Err = hiddenOffsets(name) // the source's answer is the one to fix first
	}
	so.Fetched.Each(func(o kadm.OffsetResponse) {
		if st.topicSet[o.Topic] && o.At >= 0 {
			g.Partitions = append(g.Partitions, p.partition(name, o, do, st))
		}
	})
	sort.Slice(g.Partitions, func(i, j int) bool {
		a, b := g.Partitions[i], g.Partitions[j]
		return a.Topic < b.Topic || a.Topic == b.Topic && a.Partition < b.Partition
	})
	return g
}

// hiddenOffsets is the error of a source group that exists with no member (Empty) and yet
// shows no committed offset. Kafka removes an Empty group once it has no offsets, and it
// answers an offset fetch without the partitions of the topics the principal may not
// Describe, silently: planning such a group would report nothing to do over offsets it could
// not see.
func hiddenOffsets(group string) string {
	return fmt.Sprintf("source cluster: group %q exists (state Empty) but shows no committed offset: Kafka leaves out, without an error, "+
		"the offsets on topics the principal may not Describe; grant it Describe (or Read) on Topic for every topic the group consumes "+
		"(a group that left without committing shows this too until the broker removes it)", group)
}

// partition is one group partition committed at o on the source, with the logs, the target
// commit (from do) and MM2's checkpoint.
func (p *planner) partition(group string, o kadm.OffsetResponse, do kadm.FetchOffsetsResponse, st *planState) Partition {
	tt := st.dstTopicOf[o.Topic]
	part := Partition{Topic: o.Topic, TargetTopic: tt, Partition: o.Partition,
		SourceCommitted: o.At, SourceMetadata: o.Metadata}
	if o.Err != nil {
		part.refuse(group, StatusUnmappable, fmt.Sprintf("source cluster: committed offset of %s/%d: %v", o.Topic, o.Partition, o.Err), o.Err)
	}
	if l, ok := st.srcStarts.Lookup(o.Topic, o.Partition); ok {
		part.SourceStart = l.Offset
	}
	if l, ok := st.srcEnds.Lookup(o.Topic, o.Partition); ok {
		part.SourceEnd = l.Offset
	}
	if l, ok := st.dstEnds.Lookup(tt, o.Partition); ok {
		part.TargetEnd = l.Offset
	}
	if t, ok := do.Fetched.Lookup(tt, o.Partition); ok && t.Err == nil && t.At >= 0 {
		at := t.At
		part.TargetCommitted = &at
	}
	if cp, ok := p.checkpoints[mm2.CheckpointKey{Group: group, Topic: tt, Partition: o.Partition}]; ok {
		d, u := cp.Downstream, cp.Upstream
		part.Checkpoint, part.CheckpointUpstream = &d, &u
	}
	return part
}

// judgeAll judges every group partition not refused yet, Concurrency at once. A failure is
// the partition's and its group's; the error is the context's.
func (p *planner) judgeAll(ctx context.Context, res *Result, st *planState) error {
	var errMu sync.Mutex
	eg, ectx := errgroup.WithContext(ctx)
	eg.SetLimit(p.cfg.Concurrency)
	for gi := range res.Groups {
		g := &res.Groups[gi]
		parts := make([]*Partition, 0, len(g.Partitions))
		for pi := range g.Partitions {
			parts = append(parts, &g.Partitions[pi])
		}
		if g.App != nil {
			for pi := range g.App.State {
				parts = append(parts, &g.App.State[pi])
			}
			for pi := range g.App.Checkpoints {
				parts = append(parts, &g.App.Checkpoints[pi])
			}
		}
		for _, part := range parts {
			if part.Status != "" {
				continue
			}
			eg.Go(func() error {
				err := p.judge(ectx, g.Group, part, st)
				if err != nil {
					if ctx.Err() != nil {
						return ctx.Err()
					}
					errMu.Lock()
					if g.Err == "" {
						g.Err = err.Error()
					}
					errMu.Unlock()
					part.refuse(g.Group, StatusUnmappable, "error: "+err.Error(), err)
				}
				p.cfg.Logger.Debug("planned", "group", g.Group, "topic", part.Topic, "partition", part.Partition, "status", part.Status)
				return nil
			})
		}
	}
	return eg.Wait()
}

// bounds lists the log start, end (high watermark) and last stable offsets of the topics.
func (s *side) bounds(ctx context.Context, topics []string) (starts, ends, stables kadm.ListedOffsets, err error) {
	if len(topics) == 0 {
		return kadm.ListedOffsets{}, kadm.ListedOffsets{}, kadm.ListedOffsets{}, nil
	}
	if starts, err = s.adm.ListStartOffsets(ctx, topics...); err != nil {
		return nil, nil, nil, fmt.Errorf("%s cluster: list log start offsets of %v: %w", s.name, topics, err)
	}
	if ends, err = s.adm.ListEndOffsets(ctx, topics...); err != nil {
		return nil, nil, nil, fmt.Errorf("%s cluster: list log end offsets of %v: %w", s.name, topics, err)
	}
	if stables, err = s.adm.ListCommittedOffsets(ctx, topics...); err != nil {
		return nil, nil, nil, fmt.Errorf("%s cluster: list last stable offsets of %v: %w", s.name, topics, err)
	}
	return starts, ends, stables, nil
}

// stable is the last stable offset of topic/partition as listed, within [0, end]; end when it
// was not listed.
func stable(l kadm.ListedOffsets, topic string, part int32, end int64) int64 {
	if o, ok := l.Lookup(topic, part); ok && o.Err == nil && o.Offset >= 0 {
		return min(o.Offset, end)
	}
	return end
}

// judge fills E(G), the status and the counts of one group partition.
func (p *planner) judge(ctx context.Context, group string, part *Partition, st *planState) error {
	if ok, why := topicMirrored(p.cfg.Flow, part.Topic); !ok && !p.fromMap(part.Topic) {
		part.refuse(group, StatusUnmappable, why, nil)
		return nil
	}
	if _, ok, err := p.dst.topic(ctx, part.TargetTopic); err != nil {
		return err
	} else if !ok {
		part.refuse(group, StatusUnmappable, fmt.Sprintf("topic not mirrored: target topic %q does not exist on the target cluster", part.TargetTopic), nil)
		return nil
	}
	dstStart := int64(0)
	if l, ok := st.dstStarts.Lookup(part.TargetTopic, part.Partition); ok {
		dstStart = l.Offset
	}
	j := job{srcTopic: part.Topic, dstTopic: part.TargetTopic, part: part.Partition, g: part.SourceCommitted,
		srcStart: part.SourceStart, srcEnd: part.SourceEnd, dstStart: dstStart, dstEnd: part.TargetEnd,
		srcStable: stable(st.srcStables, part.Topic, part.Partition, part.SourceEnd),
		dstStable: stable(st.dstStables, part.TargetTopic, part.Partition, part.TargetEnd)}
	if err := p.judgeE(ctx, group, part, j); err != nil {
		return err
	}
	return p.txnCounts(ctx, j, part)
}

// judgeE fills E(G), the status and the redelivered or skipped counts of one group partition.
func (p *planner) judgeE(ctx context.Context, group string, part *Partition, j job) error {
	dstStart := j.dstStart
	ans, err := p.cached(ctx, j)
	if err != nil {
		return err
	}
	if !ans.known {
		part.refuse(group, ans.status, ans.reason, nil)
		return nil
	}
	e := ans.e
	part.ExactTarget, part.Proof, part.ProofSource = &e, ans.proof, ans.from
	if part.Checkpoint != nil {
		cp := *part.Checkpoint
		part.CheckpointStatus = compare(cp, e)
		if lo, hi := min(cp, e), max(cp, e); part.CheckpointStatus != StatusExact && lo >= dstStart {
			// A checkpoint in E(G)'s span (only markers and aborted records between) is where a
			// read_committed consumer resumes at the same record: exact, as a commit there is.
			_, none, err := p.countTarget(ctx, j, lo, hi, ans.extras)
			if err != nil {
				return err
			}
			if none {
				part.CheckpointStatus = StatusExact
			}
		}
	}
	if part.TargetCommitted == nil {
		part.Status = StatusMissingTargetOffset
		return nil
	}
	tc := *part.TargetCommitted
	part.Status = compare(tc, e)
	if part.Status == StatusExact {
		return nil
	}
	lo, hi := min(tc, e), max(tc, e)
	n, none, err := p.countTarget(ctx, j, max(lo, dstStart), hi, ans.extras)
	if err != nil {
		return err
	}
	switch {
	case none && lo >= dstStart:
		// No record a read_committed consumer reads lies between (only transaction markers
		// and records of aborted transactions): it resumes at the same record from either.
		part.Status = StatusExact
		part.Reason = fmt.Sprintf("committed %d, E(G) %d: only transaction markers or records of aborted transactions lie between, so a read_committed consumer resumes at the same record from either", tc, e)
	case part.Status == StatusBehind:
		part.RedeliveredIfUnchanged = n
	default:
		part.SkippedIfUnchanged = n
	}
	return nil
}

func compare(committed, e int64) Status {
	switch {
	case committed == e:
		return StatusExact
	case committed < e:
		return StatusBehind
	default:
		return StatusAhead
	}
}

func (p *planner) fromMap(topic string) bool {
	return p.cfg.OffsetMap != nil && p.cfg.OffsetMap.SourceTopic == topic
}

// cached computes E(G) once per source partition and offset: groups at the same position
// share the work.
func (p *planner) cached(ctx context.Context, j job) (answer, error) {
	k := cacheKey{j.srcTopic, j.part, j.g}
	p.mu.Lock()
	e, ok := p.cache[k]
	if !ok {
		e = &cacheEntry{}
		p.cache[k] = e
	}
	p.mu.Unlock()
	e.once.Do(func() {
		e.ans, e.err = p.find(ctx, j)
		if e.err == nil && e.ans.known {
			e.err = p.settle(ctx, j, &e.ans)
		}
	})
	return e.ans, e.err
}

// find is E(G) for j: the offset after the last copy of s*, before settle chooses among the
// offsets equal to it. Content decides, with the known copies pinned: kmirror's offset map
// and MM2's offset syncs (mapsOf, io.syncs). An offset map file from kverify diff is an
// alignment by content itself, as often wrong as any guess where records repeat: it is
// checked against the answer (checkMapFile), never taken for it.
func (p *planner) find(ctx context.Context, j job) (answer, error) {
	ans, err := p.locate(ctx, j)
	if err != nil || !p.fromMap(j.srcTopic) {
		return ans, err
	}
	p.checkMapFile(j, &ans)
	return ans, nil
}

// checkMapFile says in ans what the offset map file makes of j: that it agrees with the
// answer, or why it does not count.
func (p *planner) checkMapFile(j job, ans *answer) {
	pm := p.cfg.OffsetMap.Partition(j.part)
	if pm == nil {
		ans.note(fmt.Sprintf("the map of %s has no partition %d", j.srcTopic, j.part))
		return
	}
	var why string
	switch tr := pm.ExactTarget(j.g); {
	case j.g < pm.SourceFrom || j.g > pm.SourceTo:
		why = fmt.Sprintf("the map of %s/%d covers source offsets %d..%d, the group is at %d", j.srcTopic, j.part, pm.SourceFrom, pm.SourceTo, j.g)
	case !tr.Known:
		why = fmt.Sprintf("the map of %s/%d does not reach %d", j.srcTopic, j.part, j.g)
	case !tr.HasPrev:
		why = fmt.Sprintf("the map of %s/%d has no mirrored record below %d", j.srcTopic, j.part, j.g)
	case ans.known && tr.Target == ans.e:
		ans.proof += "; the offset map agrees"
		return
	case ans.known:
		why = fmt.Sprintf("it says %d; it is kverify's alignment by content, and content read here proves %d", tr.Target, ans.e)
	default:
		why = fmt.Sprintf("it says %d, but it is kverify's alignment by content: where content cannot decide, neither can it", tr.Target)
	}
	ans.note(why)
}

// note says in the answer why the offset map file did not count.
func (a *answer) note(why string) {
	if a.known {
		a.proof += "; offset map not used: " + why
	} else {
		a.reason += " (offset map not used: " + why + ")"
	}
}

// mapsOf returns the exact maps of j's partition: kmirror's offset map topic.
func (p *planner) mapsOf(j job) []mapRef {
	if pm := p.kmirrorMap(j.srcTopic, j.part); pm != nil {
		return []mapRef{{pm, SourceKmirrorMap}}
	}
	return nil
}

// countTarget counts the target records in [from, to) that are copies of source records, i.e.
// the records a read_committed consumer starting at from reads before reaching to, minus the
// extras the alignment identified. Offsets without records (transaction markers) and the
// records of aborted transactions do not count; at and past the last stable offset (a
// transaction still open) every record does. Past countLimit offsets it returns the offset
// difference minus the known extras. none says the range was read and holds no record a
// read_committed consumer reads (no extra either): only markers and aborted records.
func (p *planner) countTarget(ctx context.Context, j job, from, to int64, extras []int64) (n int64, none bool, err error) {
	if from >= to {
		return 0, false, nil
	}
	if to-from > countLimit {
		n = to - from
		for _, x := range extras {
			if x >= from && x < to {
				n--
			}
		}
		return max(n, 0), false, nil
	}
	var committed []int64
	if hi := min(to, j.dstStable); from < hi {
		v, err := p.dst.scan(ctx, j.dstTopic, j.part, from, hi, false)
		if err != nil {
			return 0, false, err
		}
		committed = v.committed
	}
	n = int64(len(committed))
	if lo := max(from, j.dstStable); lo < to {
		// Only the count is used: the plan's fields take the fingerprints the cache holds.
		recs, err := p.dst.read(ctx, j.dstTopic, j.part, lo, to, 0, p.cfg.Fields)
		if err != nil {
			return 0, false, err
		}
		n += int64(len(recs))
	}
	none = n == 0
	for _, x := range extras {
		if x >= from && x < to && (x >= j.dstStable || len(within(committed, x, x+1)) == 1) {
			n--
		}
	}
	return max(n, 0), none, nil
}

// kmirrorMap is kmirror's persisted offset map of a source partition, nil when the flow has
// none (see kmirrorMaps).
func (p *planner) kmirrorMap(topic string, part int32) *offsetmap.PartitionMap {
	return p.kmaps[tp{topic, part}]
}
