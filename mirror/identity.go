package mirror

import (
	"context"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"golang.org/x/sync/errgroup"

	"github.com/kmigrate/kmigrate/offsetmap"
)

// Partition identity: a source or target topic deleted and created again
// under the offset map is not the partition the map describes, and mirroring on from the
// map would skip the new topic's first records (or write after records that are not
// copies). kmirror checks, for every partition with a persisted map:
//
//   - topic IDs (brokers 2.8+): the offset map records each source topic's ID and its target
//     topic's ID (identity records, below); a different current ID is a recreated topic;
//   - log ends: a source log ending below the mapped source end, or a target log ending below
//     the mapped target end, is a recreated (or truncated) topic;
//   - without topic IDs (2.3.0) on either side, at resume: the fingerprint (offsetmap.DefaultFields)
//     of the last mapped source record against its copy on the target.
//
// At resume (assignment) all three; while running every min(refresh.topics.interval, 30s)
// the first two, and at once when a fetch is out of range (the consumer never resets an
// offset by itself). A partition that fails stops (halt.go) with an error saying what to do.
//
// Identity records share the offset map topic. Their key has format version 2, which
// readers of version 1 skip (decodeMapRecord), so older kmirror versions ignore them:
//
//	key:   version INT16 = 2, kind INT8 = 1, source topic STRING
//	value: version INT16 = 2, source topic ID [16]byte, target topic ID [16]byte (all zero: none)

type topicIDs struct{ src, dst [16]byte }

// identities is what the identity check knows between its runs: the identity (topic IDs) of
// each mirrored source topic and its target topic, as the offset map records it or as this
// process recorded it. Its zero value is ready; the engine holds one. Its lock is its own.
type identities struct {
	mu       sync.Mutex
	recorded map[string]topicIDs
	// checkEvery is how often running partitions are checked; 0: derived from the config.
	checkEvery time.Duration
}

// get returns the recorded identity of source topic topic (zero: none recorded).
func (d *identities) get(topic string) topicIDs {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.recorded[topic]
}

// keep records the current identity of every topic rc checked without a stopped partition,
// and returns the identity records to write for those the map does not hold yet.
func (d *identities) keep(rc *resumeChecks, mapTopic string) []*kgo.Record {
	var recs []*kgo.Record
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.recorded == nil {
		d.recorded = map[string]topicIDs{}
	}
	for topic, cur := range rc.current {
		if rc.stopped[topic] {
			continue
		}
		d.recorded[topic] = cur
		if rc.recorded[topic] != cur && cur != (topicIDs{}) {
			recs = append(recs, &kgo.Record{Topic: mapTopic, Partition: 0, Key: identityKey(topic), Value: identityValue(cur)})
		}
	}
	return recs
}

const (
	identityVersion = 2
	identityKind    = 1
)

func identityKey(topic string) []byte { return kindKey(identityKind, topic) }

func kindKey(kind byte, name string) []byte { return offsetmap.KindKey(kind, name) }

func decodeKindKey(key []byte, kind byte) (string, []byte, bool) {
	return offsetmap.DecodeKindKey(key, kind)
}

func identityValue(ids topicIDs) []byte {
	b := binary.BigEndian.AppendUint16(make([]byte, 0, 34), identityVersion)
	b = append(b, ids.src[:]...)
	return append(b, ids.dst[:]...)
}

var errIdentityRecord = errors.New("not a kmirror identity record")

func decodeIdentityRecord(key, value []byte) (string, topicIDs, error) {
	topic, _, ok := decodeKindKey(key, identityKind)
	if !ok || len(value) < 34 || binary.BigEndian.Uint16(value) != identityVersion {
		return "", topicIDs{}, errIdentityRecord
	}
	var ids topicIDs
	copy(ids.src[:], value[2:18])
	copy(ids.dst[:], value[18:34])
	return topic, ids, nil
}

func idString(id [16]byte) string {
	if id == ([16]byte{}) {
		return "none"
	}
	return hex.EncodeToString(id[:])
}

// changed says whether a recorded topic ID and a current one prove a recreated topic.
func changed(recorded, current [16]byte) bool {
	var zero [16]byte
	return recorded != zero && current != zero && recorded != current
}

// resumeChecks is what one resume needs to check identities.
type resumeChecks struct {
	recorded map[string]topicIDs // from the offset map
	current  map[string]topicIDs // now, by source topic
	mu       sync.Mutex          // guards stopped: partitions are checked concurrently
	stopped  map[string]bool     // source topics with a stopped partition: their identity is not rewritten
}

// prepareChecks reads the current topic IDs of the assigned partitions' topics, and the target
// topics' max.message.bytes (recsize.go). The caller sets recorded, the identities the offset
// map holds (readMap), before the checks run: both are read at once.
func (e *Engine) prepareChecks(ctx context.Context, assigned []tp) (*resumeChecks, error) {
	e.stopped.init()
	rc := &resumeChecks{current: map[string]topicIDs{}, stopped: map[string]bool{}}
	srcTopics, dstTopics := map[string]bool{}, map[string]bool{}
	for _, t := range assigned {
		srcTopics[t.topic] = true
		dstTopics[e.cfg.targetTopic(t.topic)] = true
	}
	var eg errgroup.Group
	eg.Go(func() (err error) {
		rc.current, err = e.currentIDs(ctx, keys(srcTopics))
		return err
	})
	eg.Go(func() error { return e.loadLimits(ctx, keys(dstTopics)) })
	if err := eg.Wait(); err != nil {
		return nil, err
	}
	return rc, nil
}

// currentIDs lists the topic IDs of source topics and of their target topics now.
func (e *Engine) currentIDs(ctx context.Context, topics []string) (map[string]topicIDs, error) {
	targets := make([]string, len(topics))
	for i, t := range topics {
		targets[i] = e.cfg.targetTopic(t)
	}
	var src, dst kadm.TopicDetails
	var eg errgroup.Group
	eg.Go(func() (err error) {
		if src, err = e.srcAdm.ListTopics(ctx, topics...); err != nil {
			return e.clusterErr("source", e.cfg.SourceAlias, "describe topics", err)
		}
		return nil
	})
	eg.Go(func() (err error) {
		if dst, err = e.dstAdm.ListTopics(ctx, targets...); err != nil {
			return e.clusterErr("target", e.cfg.TargetAlias, "describe topics", err)
		}
		return nil
	})
	if err := eg.Wait(); err != nil {
		return nil, err
	}
	out := map[string]topicIDs{}
	for i, t := range topics {
		var ids topicIDs
		if d, ok := src[t]; ok && d.Err == nil {
			ids.src = d.ID
		}
		if d, ok := dst[targets[i]]; ok && d.Err == nil {
			ids.dst = d.ID
		}
		out[t] = ids
	}
	return out, nil
}

// checkPartition checks at resume that partition t (persisted map pm) is still the one the
// map describes. It returns a stopped partition state when not (the caller adds it to the
// assigned states without aligning the tail), nil when it is, and an error when it could
// not tell.
func (e *Engine) checkPartition(ctx context.Context, rc *resumeChecks, t tp, target string, pm offsetmap.PartitionMap, srcEnd, srcStart, dstEnd int64) (*partState, error) {
	st := e.verdict(t, target, pm.SourceTo, pm.TargetTo, rc.recorded[t.topic], rc.current[t.topic], srcEnd, true, dstEnd, true)
	if st == nil {
		var err error
		if st, err = e.fingerprintCheck(ctx, t, target, pm, rc.recorded[t.topic], rc.current[t.topic], srcStart, srcEnd, dstEnd); err != nil {
			return nil, err
		}
	}
	if st == nil {
		return nil, nil
	}
	rc.mu.Lock()
	rc.stopped[t.topic] = true
	rc.mu.Unlock()
	st.ps = newPartState(t, target, pm, pm.SourceTo)
	st.ps.hwm = srcEnd
	st.recheck = e.reresume
	e.stopPartition(st)
	return st.ps, nil
}

// finishChecks records the identity of every checked topic without a stopped partition,
// when the map does not hold it yet (first start, or a broker that gained topic IDs).
func (e *Engine) finishChecks(ctx context.Context, rc *resumeChecks) error {
	recs := e.ident.keep(rc, e.cfg.MapTopic)
	if len(recs) == 0 {
		return nil
	}
	if err := e.dst.ProduceSync(ctx, recs...).FirstErr(); err != nil {
		return fmt.Errorf("target cluster %s: write topic identities to %s: %w%s", e.cfg.TargetAlias, e.cfg.MapTopic, err, hint(err))
	}
	return nil
}

// verdict compares a partition with what the map says: topic IDs, and the source and target
// log ends (when known) against the mapped ends sourceTo and targetTo.
func (e *Engine) verdict(t tp, target string, sourceTo, targetTo int64, rec, cur topicIDs, srcEnd int64, haveSrcEnd bool, dstEnd int64, haveDstEnd bool) *stop {
	m := e.cfg.MapTopic
	todoSrc := fmt.Sprintf("what to do: if the topic was deleted by mistake, restore it; to mirror the new topic, stop kmirror, delete target topic %s on cluster %s and the offset map topic %s (every topic of the flow is then mirrored again from the start, so delete or empty their target topics too), then start kmirror again",
		target, e.cfg.TargetAlias, m)
	todoDst := fmt.Sprintf("what to do: restore the target topic, or stop kmirror, delete target topic %s and the offset map topic %s on cluster %s (every topic of the flow is then mirrored again from the start, so delete or empty their target topics too), then start kmirror again",
		target, m, e.cfg.TargetAlias)
	attrs := []any{"mapped_offset", sourceTo, "mapped_target_offset", targetTo}
	switch {
	case changed(rec.src, cur.src):
		return &stop{reason: reasonSourceRecreated, cluster: e.cfg.SourceAlias, attrs: attrs, err: fmt.Errorf(
			"source cluster %s: topic %s was deleted and created again (topic ID %s, the offset map %s recorded %s): partition %d is not the one kmirror mirrored up to source offset %d, and mirroring on from the map would skip the new topic's records below that offset; %s",
			e.cfg.SourceAlias, t.topic, idString(cur.src), m, idString(rec.src), t.partition, sourceTo, todoSrc)}
	case changed(rec.dst, cur.dst):
		return &stop{reason: reasonTargetRecreated, cluster: e.cfg.TargetAlias, attrs: attrs, err: fmt.Errorf(
			"target cluster %s: topic %s was deleted and created again (topic ID %s, the offset map %s recorded %s): partition %d does not hold the records the map says kmirror wrote up to target offset %d; %s",
			e.cfg.TargetAlias, target, idString(cur.dst), m, idString(rec.dst), t.partition, targetTo, todoDst)}
	case haveSrcEnd && srcEnd < sourceTo:
		reason, what := reasonSourceRecreated, "was deleted and created again, or truncated"
		if rec.src != ([16]byte{}) && rec.src == cur.src {
			reason, what = reasonSourceTruncated, "was truncated (same topic ID: an unclean leader election or a restored broker)"
		}
		return &stop{reason: reason, cluster: e.cfg.SourceAlias, attrs: append(attrs, "source_end", srcEnd), err: fmt.Errorf(
			"source cluster %s: topic %s partition %d ends at offset %d, but the offset map %s says kmirror mirrored it up to offset %d: the topic %s; mirroring on would skip the records below %d; %s",
			e.cfg.SourceAlias, t.topic, t.partition, srcEnd, m, sourceTo, what, sourceTo, todoSrc)}
	case haveDstEnd && dstEnd < targetTo:
		return &stop{reason: reasonTargetRecreated, cluster: e.cfg.TargetAlias, attrs: append(attrs, "target_end", dstEnd), err: fmt.Errorf(
			"target cluster %s: topic %s partition %d ends at offset %d, but the offset map %s says kmirror wrote up to %d: the target topic was deleted and created again, or truncated; %s",
			e.cfg.TargetAlias, target, t.partition, dstEnd, m, targetTo, todoDst)}
	}
	return nil
}

// fingerprintCheck compares the last mapped source record with its copy on the target when
// a topic ID cannot prove the identity of both sides (a broker without topic IDs, or a map
// written before identity records). A record gone from either side (retention, compaction)
// cannot be compared; the log-end checks of verdict are then all there is.
func (e *Engine) fingerprintCheck(ctx context.Context, t tp, target string, pm offsetmap.PartitionMap, rec, cur topicIDs, srcStart, srcEnd, dstEnd int64) (*stop, error) {
	var zero [16]byte
	if rec.src != zero && rec.src == cur.src && rec.dst != zero && rec.dst == cur.dst {
		return nil, nil // both sides proven by topic ID
	}
	var last offsetmap.Segment
	for _, s := range pm.Segments {
		if s.Len > 0 {
			last = s
		}
	}
	if last.Len == 0 {
		return nil, nil // only an origin: nothing mirrored to compare
	}
	srcOff, dstOff := last.Source+last.Len-1, last.Target+last.Len-1
	srcRec, err := e.readOne(ctx, e.srcCl, t.topic, t.partition, srcOff, srcStart, srcEnd, true)
	if err != nil {
		return nil, fmt.Errorf("source cluster %s: read topic %s partition %d offset %d to check it is the mirrored one: %w", e.cfg.SourceAlias, t.topic, t.partition, srcOff, err)
	}
	dstRec, err := e.readOne(ctx, e.dst, target, t.partition, dstOff, 0, dstEnd, false)
	if err != nil {
		return nil, fmt.Errorf("target cluster %s: read topic %s partition %d offset %d to check it is the mirrored one: %w", e.cfg.TargetAlias, target, t.partition, dstOff, err)
	}
	if srcRec == nil || dstRec == nil {
		e.log.Info("identity check by fingerprint skipped: the last mapped record is gone (retention or compaction)",
			"topic", t.topic, "partition", t.partition, "offset", srcOff, "target_offset", dstOff,
			"source_present", srcRec != nil, "target_present", dstRec != nil)
		return nil, nil
	}
	if offsetmap.Fingerprint(srcRec, offsetmap.DefaultFields) == offsetmap.Fingerprint(dstRec, offsetmap.DefaultFields) {
		return nil, nil
	}
	reason, cluster, which := reasonEitherRecreated, e.cfg.SourceAlias+","+e.cfg.TargetAlias, "the source topic or the target topic was deleted and created again (the brokers have no topic IDs to tell which)"
	switch {
	case rec.src != zero && rec.src == cur.src:
		reason, cluster, which = reasonTargetRecreated, e.cfg.TargetAlias, "the target topic was deleted and created again"
	case rec.dst != zero && rec.dst == cur.dst:
		reason, cluster, which = reasonSourceRecreated, e.cfg.SourceAlias, "the source topic was deleted and created again"
	}
	return &stop{reason: reason, cluster: cluster, attrs: []any{"mapped_offset", srcOff, "mapped_target_offset", dstOff}, err: fmt.Errorf(
		"source cluster %s topic %s partition %d offset %d and its copy on target cluster %s topic %s offset %d (per the offset map %s) differ: %s, or something else wrote to them; kverify diff shows the records; what to do: restore the recreated topic, or stop kmirror, delete target topic %s and the offset map topic %s on cluster %s (every topic of the flow is then mirrored again from the start, so delete or empty their target topics too), then start kmirror again",
		e.cfg.SourceAlias, t.topic, t.partition, srcOff, e.cfg.TargetAlias, target, dstOff, e.cfg.MapTopic, which, target, e.cfg.MapTopic, e.cfg.TargetAlias)}, nil
}

// readOne reads the record at off of topic/partition, or nil when the log does not hold it.
func (e *Engine) readOne(ctx context.Context, cl *kgo.Client, topic string, partition int32, off, start, end int64, committed bool) (*kgo.Record, error) {
	if off < start || off >= end {
		return nil, nil
	}
	rctx, cancel := context.WithTimeout(ctx, 15*time.Second)
	defer cancel()
	var got *kgo.Record
	err := e.readResume(rctx, cl, topic, partition, off, off+1, committed, func(r *kgo.Record) (bool, error) {
		if r.Offset == off && !r.Attrs.IsControl() {
			got = r
		}
		return false, nil
	})
	if err != nil {
		return nil, err
	}
	return got, nil
}

// reresume is the re-check of a partition stopped for its identity: it resumes the
// partition again from the target's truth, which checks again. When it passes, the
// partition goes on from the resumed state.
func (e *Engine) reresume(ctx context.Context, st *stop) (bool, error) {
	st.ps.mu.Lock()
	inflight := st.ps.inflight
	st.ps.mu.Unlock()
	if inflight > 0 {
		return true, nil // records produced before the stop are still in flight: the tail is not final yet
	}
	states, err := e.resumer.resume(ctx, []tp{st.ps.tp})
	if err != nil {
		return true, err
	}
	ps := states[0]
	e.mu.Lock()
	_, owned := e.parts[ps.tp]
	if owned {
		e.parts[ps.tp] = ps
		e.txn.attach(states) // its bucket commits it from now on
	}
	e.mu.Unlock()
	if !owned {
		e.forgetStops(map[string][]int32{ps.topic: {ps.partition}})
		return false, nil
	}
	e.stopped.mu.Lock()
	cur, still := e.stopped.byTP[ps.tp]
	e.stopped.mu.Unlock()
	if still && cur != st {
		return true, nil // resume found it again and replaced the stop (and reported it)
	}
	e.unstop(ps.tp, ps.next)
	return false, nil
}

// onFetchError handles a fetch error the poll loop got; it returns true when it took it.
// An out-of-range offset (the consumer never resets by itself: ConsumeResetOffset is
// NoResetOffset) is checked at once by the safety loop.
func (e *Engine) onFetchError(t string, p int32, err error) bool {
	if !errors.Is(err, kerr.OffsetOutOfRange) {
		return false
	}
	e.stopped.init()
	select {
	case e.stopped.checkNow <- tp{t, p}:
	default:
	}
	return true
}

// checkRunning checks every owned partition that is not stopped: topic IDs against the
// recorded ones, source and target log ends against the map.
func (e *Engine) checkRunning(ctx context.Context) {
	states := e.owned()
	e.checkStates(ctx, states)
}

type mapped struct{ sourceTo, targetTo, next int64 }

// snapshot returns the mapped ends of the states not stopped, and those of them not revoked with their source and target topics.
func (e *Engine) snapshot(states []*partState) (snap map[tp]mapped, live []*partState, srcTopics, dstTopics map[string]bool) {
	snap = map[tp]mapped{}
	srcTopics, dstTopics = map[string]bool{}, map[string]bool{}
	for _, ps := range states {
		if e.isStopped(ps.tp) {
			continue
		}
		ps.mu.Lock()
		snap[ps.tp] = mapped{ps.pm.SourceTo, ps.pm.TargetTo, ps.next}
		revoked := ps.revoked
		ps.mu.Unlock()
		if revoked {
			continue
		}
		live = append(live, ps)
		srcTopics[ps.topic] = true
		dstTopics[ps.target] = true
	}
	return snap, live, srcTopics, dstTopics
}

// checkStates runs verdict on states and stops those that fail. It returns the source
// start and end offsets it listed (for checkOutOfRange).
func (e *Engine) checkStates(ctx context.Context, states []*partState) (map[tp]mapped, map[tp][2]int64) {
	// The mapped ends first, the log ends after: a healthy log's end is then never below them.
	snap, live, srcTopics, dstTopics := e.snapshot(states)
	if len(live) == 0 {
		return snap, nil
	}
	cctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	cur, err := e.currentIDs(cctx, keys(srcTopics))
	if err != nil {
		e.log.Warn("topic identity check", "err", err)
		return snap, nil
	}
	srcStarts, err1 := e.srcAdm.ListStartOffsets(cctx, keys(srcTopics)...)
	srcEnds, err2 := e.srcAdm.ListEndOffsets(cctx, keys(srcTopics)...)
	dstEnds, err3 := e.dstAdm.ListEndOffsets(cctx, keys(dstTopics)...)
	if err := errors.Join(err1, err2, err3); err != nil {
		e.log.Warn("topic identity check: list offsets", "err", err)
		return snap, nil
	}
	if err := e.loadLimits(cctx, keys(dstTopics)); err != nil {
		e.log.Warn("record size limits", "err", err)
	}
	bounds := map[tp][2]int64{}
	for _, ps := range live {
		m := snap[ps.tp]
		srcStart, okStart := listedOffset(srcStarts, ps.topic, ps.partition)
		srcEnd, okSrc := listedOffset(srcEnds, ps.topic, ps.partition)
		dstEnd, okDst := listedOffset(dstEnds, ps.target, ps.partition)
		if okStart && okSrc {
			bounds[ps.tp] = [2]int64{srcStart, srcEnd}
		}
		rec := e.ident.get(ps.topic)
		c := cur[ps.topic]
		if c.src == ([16]byte{}) && c.dst == ([16]byte{}) && (rec.src != ([16]byte{}) || rec.dst != ([16]byte{})) {
			c = rec // the topic is missing right now (deleted, not created yet): no verdict on IDs
		}
		if st := e.verdict(ps.tp, ps.target, m.sourceTo, m.targetTo, rec, c, srcEnd, okSrc, dstEnd, okDst); st != nil {
			st.ps, st.recheck = ps, e.reresume
			e.stopPartition(st)
		}
	}
	return snap, bounds
}

// checkOutOfRange handles a fetch of partition t that was out of range: a recreated or
// truncated source stops the partition; records deleted by retention before they were
// mirrored are skipped with a warning, as at resume; otherwise fetching restarts at the
// partition's next offset.
func (e *Engine) checkOutOfRange(ctx context.Context, t tp) {
	ps := e.part(t)
	if ps == nil || e.isStopped(t) {
		return
	}
	snap, bounds := e.checkStates(ctx, []*partState{ps})
	if e.isStopped(t) {
		return
	}
	b, ok := bounds[t]
	if !ok {
		select { // could not list: try again soon
		case e.stopped.checkNow <- t:
		default:
		}
		return
	}
	next := snap[t].next
	switch {
	case next < b[0]:
		e.log.Warn("source records deleted before they were mirrored (retention)", "cluster", e.cfg.SourceAlias,
			"topic", t.topic, "partition", t.partition, "offset", next, "log_start", b[0])
		ps.mu.Lock()
		if ps.next == next {
			ps.next = b[0]
		}
		ps.mu.Unlock()
		next = b[0]
	case next > b[1]:
		st := &stop{ps: ps, reason: reasonSourceRecreated, cluster: e.cfg.SourceAlias, recheck: e.reresume,
			attrs: []any{"offset", next, "source_end", b[1]}, err: fmt.Errorf(
				"source cluster %s: topic %s partition %d ends at offset %d, below offset %d that kmirror already read: the topic was deleted and created again, or truncated; mirroring on would skip records; what to do: if the topic was deleted by mistake, restore it; to mirror the new topic, stop kmirror, delete target topic %s on cluster %s and the offset map topic %s (every topic of the flow is then mirrored again from the start, so delete or empty their target topics too), then start kmirror again",
				e.cfg.SourceAlias, t.topic, t.partition, b[1], next, ps.target, e.cfg.TargetAlias, e.cfg.MapTopic)}
		e.stopPartition(st)
		return
	}
	if e.src != nil {
		e.src.SetOffsets(map[string]map[int32]kgo.EpochOffset{t.topic: {t.partition: {Epoch: -1, Offset: next}}})
	}
}
