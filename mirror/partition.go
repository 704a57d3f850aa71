package mirror

import (
	"context"
	"fmt"
	"sync"
	"time"

	"github.com/kmigrate/kmigrate/mm2"
	"github.com/kmigrate/kmigrate/offsetmap"
)

// tp names one source topic partition.
type tp struct {
	topic     string
	partition int32
}

func (t tp) String() string { return fmt.Sprintf("%s/%d", t.topic, t.partition) }

// partState is one mirrored source partition owned by this process. The poll loop submits
// records, produce promises (called in order per partition by franz-go) acknowledge them, the
// persister writes what changed, and the revoke callback waits for the in-flight count to
// drop to zero. One mutex guards everything; it is never held while producing.
type partState struct {
	tp
	target string
	// w is the transactional producer of the partition's bucket (Config.Fencing
	// transactions), or nil when the engine's shared producer writes it (fencing none); bk is
	// the bucket, set once the partition is owned (writers.attach).
	w  *txnWriter
	bk *bucket
	// txnSeen is the last transaction of w the partition wrote a record to (guarded by w.mu:
	// txnWriter.note).
	txnSeen uint64

	mu   sync.Mutex
	cond *sync.Cond
	pm   offsetmap.PartitionMap
	// next is the next source offset the poll loop expects; records below it are ignored
	// (a fetch that overlaps what was already submitted).
	next int64
	// queue holds, in submission order, the source offsets submitted and not yet settled:
	// produced records (control=false) waiting for their promise, and control records
	// (transaction markers) that settle when every record before them has.
	queue    []queued
	inflight int
	revoked  bool
	// failed is set at the first produce error: nothing more is submitted or mapped, so the
	// map never claims a record after a hole; the engine stops and a restart resumes from the
	// target's truth.
	failed error

	// dirty is the index of the first segment changed since the last persist, or
	// len(pm.Segments) when nothing is.
	dirty int
	// window is how many segments the map keeps (Config.MapWindow; 0: all), tombs the source
	// starts of compacted segments whose tombstones are still to write, and history whether
	// the history record (where the exact map starts) is (compact).
	window  int
	tombs   []int64
	history bool
	// syncs are MM2 offset syncs waiting to be written by the persister.
	syncs []mm2.OffsetSync
	// synced is set once the first record of this process's ownership wrote its offset sync.
	synced bool
	// doneSrc and doneDst are the map's SourceTo and TargetTo at the last commit (with w):
	// translations answer only from committed records.
	doneSrc, doneDst int64
	// fenced is set once another owner initialised the transactional id of the partition's bucket.
	fenced bool

	// hwm is the source high watermark seen by the last fetch (at first the source end that
	// resume listed), for the lag metric and the stall warning.
	hwm int64
	// progressAt is when the partition last moved: owned, a fetched record submitted, or a
	// produced record acknowledged. warnedAt is the last stall warning.
	progressAt, warnedAt time.Time
}

type queued struct {
	offset  int64
	control bool
}

func newPartState(t tp, target string, pm offsetmap.PartitionMap, next int64) *partState {
	ps := &partState{tp: t, target: target, pm: pm, next: next, progressAt: time.Now()}
	ps.cond = sync.NewCond(&ps.mu)
	ps.dirty = len(ps.pm.Segments)
	ps.doneSrc, ps.doneDst = pm.SourceTo, pm.TargetTo
	return ps
}

// begin registers source record off for producing. It returns false when the record must
// not be produced: the partition was revoked or failed, or the record was already submitted.
func (ps *partState) begin(off int64, control bool, now time.Time) bool {
	ps.mu.Lock()
	defer ps.mu.Unlock()
	if ps.revoked || ps.failed != nil || off < ps.next {
		return false
	}
	ps.next = off + 1
	ps.progressAt = now
	if control {
		if len(ps.queue) == 0 {
			ps.settleControl(off)
		} else {
			ps.queue = append(ps.queue, queued{offset: off, control: true})
		}
		return false
	}
	ps.queue = append(ps.queue, queued{offset: off})
	ps.inflight++
	return true
}

// acked records the produce result of source record src. franz-go calls promises of one
// partition in produce order, so src is always the head of the queue.
func (ps *partState) acked(src, dst int64, err error) {
	ps.mu.Lock()
	defer ps.mu.Unlock()
	ps.inflight--
	defer ps.cond.Broadcast()
	if len(ps.queue) == 0 || ps.queue[0].offset != src {
		if ps.failed == nil {
			ps.failed = fmt.Errorf("partition %s: produce result for source offset %d out of order", ps.tp, src)
		}
		return
	}
	ps.queue = ps.queue[1:]
	ps.progressAt = time.Now()
	if err != nil && ps.failed == nil {
		ps.failed = fmt.Errorf("produce source %s offset %d to target topic %s: %w", ps.tp, src, ps.target, err)
	}
	if ps.failed != nil {
		return
	}
	ps.extend(src, dst)
	for len(ps.queue) > 0 && ps.queue[0].control {
		ps.settleControl(ps.queue[0].offset)
		ps.queue = ps.queue[1:]
	}
}

// settleControl advances the examined source range past a control record.
func (ps *partState) settleControl(off int64) {
	if off+1 > ps.pm.SourceTo {
		ps.pm.SourceTo = off + 1
	}
}

// extend adds the mapping src -> dst to the map (offsetmap.PartitionMap.Extend): it extends
// the last segment when both offsets advance by one, and otherwise starts a segment and queues
// an MM2 offset sync (the discontinuity). The first record of this process's ownership queues
// a sync too, as MM2 does at task start. A copy the map cannot place (a replay, or one out of
// order) fails the partition: the mirror writes each source record once, in order.
func (ps *partState) extend(src, dst int64) {
	g, err := ps.pm.Extend(src, dst)
	if err == nil && g == offsetmap.Replayed {
		err = fmt.Errorf("source offset %d was produced again, at target offset %d", src, dst)
	}
	if err != nil {
		if ps.failed == nil {
			ps.failed = fmt.Errorf("partition %s, target topic %s: %w: stop kmirror and run kverify diff on the topic before resuming", ps.tp, ps.target, err)
		}
		return
	}
	ps.dirty = min(ps.dirty, len(ps.pm.Segments)-1)
	if g == offsetmap.NewSegment || !ps.synced {
		ps.synced = true
		ps.syncs = append(ps.syncs, mm2.OffsetSync{Topic: ps.topic, Partition: ps.partition, Upstream: src, Downstream: dst})
	}
}

// revoke stops submitting and waits until every submitted record is settled, or ctx ends. It
// returns the first produce error, if any, or a *revokeStalled when ctx ended first; that also
// becomes the partition's failure, so that its open transaction is never committed.
func (ps *partState) revoke(ctx context.Context) error {
	// ctx's end wakes the wait below; the lock makes sure the wake-up cannot come between
	// the check of ctx and the Wait.
	stop := context.AfterFunc(ctx, func() {
		ps.mu.Lock()
		defer ps.mu.Unlock()
		ps.cond.Broadcast()
	})
	defer stop()
	ps.mu.Lock()
	defer ps.mu.Unlock()
	ps.revoked = true
	for ps.inflight > 0 && ctx.Err() == nil {
		ps.cond.Wait()
	}
	if ps.inflight > 0 {
		err := &revokeStalled{inflight: ps.inflight, cause: ctx.Err()}
		if ps.failed == nil {
			ps.failed = err // the open transaction must not commit
		}
		return err
	}
	return ps.failed
}

// revokeStalled is a revoke that ended on its bound with records still in flight.
type revokeStalled struct {
	inflight int
	cause    error
}

func (r *revokeStalled) Error() string {
	return fmt.Sprintf("%d records still unacknowledged: %v", r.inflight, r.cause)
}

func (r *revokeStalled) Unwrap() error { return r.cause }

// mapDirty is what a persist of one partition writes: the segments changed since the last
// persist (from is the index of the first), the queued offset syncs, the tombstones of
// compacted segments, and the history record when compaction moved it (history).
type mapDirty struct {
	segs    []offsetmap.Segment
	syncs   []mm2.OffsetSync
	from    int
	tombs   []int64 // source starts of compacted segments, at most maxTombs
	history bool
	// exactFrom and sourceFrom are the history record's content (history true).
	exactFrom, sourceFrom int64
}

// maxTombs bounds the tombstones one persist writes for a partition; the rest wait for the
// next ones (a map of the format before compaction, millions of segments, is compacted at
// its first persist and its tombstones are written over the following ones).
const maxTombs = 4096

// compact keeps the map within its window (Config.MapWindow): past 9/8 of the window it
// drops all but the last window segments (offsetmap.PartitionMap.Compact), queues tombstones
// for the dropped ones that were persisted, and marks the history record to write. Amortised:
// one compaction per window/8 commits. The caller holds ps.mu.
func (ps *partState) compact() {
	if ps.window <= 0 || len(ps.pm.Segments) <= ps.window+ps.window/8 {
		return
	}
	old := ps.pm.Segments
	n := ps.pm.Compact(ps.window)
	for i := range min(n, ps.dirty) {
		ps.tombs = append(ps.tombs, old[i].Source)
	}
	ps.dirty = max(ps.dirty-n, 0)
	ps.history = true
}

// takeDirty returns what a persist writes (mapDirty) after compacting the map, and marks it
// clean. undirty restores it when the write failed.
func (ps *partState) takeDirty() mapDirty {
	ps.mu.Lock()
	defer ps.mu.Unlock()
	ps.compact()
	d := mapDirty{from: ps.dirty, syncs: ps.syncs, history: ps.history,
		exactFrom: ps.pm.ExactFrom, sourceFrom: ps.pm.SourceFrom}
	d.segs = append([]offsetmap.Segment(nil), ps.pm.Segments[ps.dirty:]...)
	n := min(len(ps.tombs), maxTombs)
	d.tombs = append([]int64(nil), ps.tombs[:n]...)
	ps.tombs = ps.tombs[n:]
	ps.syncs = nil
	ps.history = false
	ps.dirty = len(ps.pm.Segments)
	return d
}

// undirty puts back what takeDirty returned after a failed write.
func (ps *partState) undirty(d mapDirty) {
	ps.mu.Lock()
	defer ps.mu.Unlock()
	ps.dirty = min(ps.dirty, d.from)
	ps.syncs = append(d.syncs, ps.syncs...)
	ps.tombs = append(d.tombs, ps.tombs...)
	ps.history = ps.history || d.history
}

// translate answers E(G) from the exact map. With a transactional writer only committed
// records count: a group must never be moved past a record that may still be aborted.
func (ps *partState) translate(g int64) offsetmap.Translation {
	ps.mu.Lock()
	defer ps.mu.Unlock()
	if ps.w == nil {
		return ps.pm.ExactTarget(g)
	}
	pm := ps.pm
	pm.SourceTo = min(pm.SourceTo, ps.doneSrc)
	tr := pm.ExactTarget(g)
	if tr.Known && tr.Target > ps.doneDst {
		return offsetmap.Translation{}
	}
	return tr
}

// isDirty tells whether segments or offset syncs wait to be written.
func (ps *partState) isDirty() bool {
	ps.mu.Lock()
	defer ps.mu.Unlock()
	return ps.dirty < len(ps.pm.Segments) || len(ps.syncs) > 0
}

// failure returns the first produce error, if any.
func (ps *partState) failure() error {
	ps.mu.Lock()
	defer ps.mu.Unlock()
	return ps.failed
}

// commitPoint is the map's extent that a commit makes durable.
type commitPoint struct{ src, dst int64 }

// takeDirtyCommit is takeDirty with the extent the written segments describe.
func (ps *partState) takeDirtyCommit() (mapDirty, commitPoint) {
	d := ps.takeDirty()
	ps.mu.Lock()
	defer ps.mu.Unlock()
	return d, commitPoint{ps.pm.SourceTo, ps.pm.TargetTo}
}

// committed records that the map up to c is committed on the target.
func (ps *partState) committed(c commitPoint) {
	ps.mu.Lock()
	defer ps.mu.Unlock()
	ps.doneSrc, ps.doneDst = c.src, c.dst
}

// markFenced stops the partition for good; it returns false when it was already fenced.
func (ps *partState) markFenced() bool {
	ps.mu.Lock()
	defer ps.mu.Unlock()
	if ps.fenced {
		return false
	}
	ps.fenced = true
	if ps.failed == nil {
		ps.failed = errFenced
	}
	return true
}

// snapshot returns a deep copy of the map.
func (ps *partState) snapshot() offsetmap.PartitionMap {
	ps.mu.Lock()
	defer ps.mu.Unlock()
	pm := ps.pm
	pm.Segments = append([]offsetmap.Segment(nil), ps.pm.Segments...)
	return pm
}

// lag is the number of source records (and markers) not yet mirrored.
func (ps *partState) lag() int64 {
	ps.mu.Lock()
	defer ps.mu.Unlock()
	if ps.hwm <= ps.pm.SourceTo {
		return 0
	}
	return ps.hwm - ps.pm.SourceTo
}

// stall is what a partition that has not moved for a while waits for.
type stall struct {
	waitingFor string // "target": records produced and not acknowledged; "source": nothing fetched though the source log end is ahead
	inflight   int
	lag        int64
	since      time.Duration
}

// stalled reports a partition that has not moved for after, at most once per after.
func (ps *partState) stalled(now time.Time, after time.Duration) (stall, bool) {
	ps.mu.Lock()
	defer ps.mu.Unlock()
	since := now.Sub(ps.progressAt)
	if ps.revoked || ps.failed != nil || since < after || now.Sub(ps.warnedAt) < after {
		return stall{}, false
	}
	st := stall{inflight: ps.inflight, since: since}
	if ps.hwm > ps.pm.SourceTo {
		st.lag = ps.hwm - ps.pm.SourceTo
	}
	switch {
	case ps.inflight > 0:
		st.waitingFor = "target"
	case st.lag > 0:
		st.waitingFor = "source"
	default:
		return stall{}, false // idle: nothing to mirror
	}
	ps.warnedAt = now
	return st, true
}
