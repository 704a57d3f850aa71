package mirror

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"golang.org/x/sync/errgroup"

	"github.com/kmigrate/kmigrate/mm2"
)

// committer is how kmirror commits: when each owned bucket commits (its policy,
// commitPolicy), what a commit writes (the map records that describe the bucket's records:
// mapRecords) and how (flush, map records, end of the transaction, within the commit bound).
// With fencing none it persists the map alone, every CommitLatency. It is the one owner of
// commits: the engine's loop, its revoke and its drain ask it. What it needs of the engine it
// is given at New: the configuration, the log, the metrics, the writers (the buckets and their
// transactional producers, txn.go), the owned partitions and two callbacks.
type committer struct {
	cfg     *Config
	log     *slog.Logger
	metrics *metrics
	txn     *writers
	dst     *kgo.Client         // the engine's target client, set by connect: the map without transactions
	owned   func() []*partState // the partitions this process owns (Engine.owned)
	stopped func() bool         // true once the engine stops like a killed process (Engine.crashed)
	fail    func(error)         // stops the engine (Engine.fail)

	policy commitPolicy
	// held, when set (tests), stops the policy's commits: only revokes and the drain commit.
	held atomic.Bool

	// timeout is the commit bound: it bounds one commit and the wait of a revoke for its
	// records in flight (default commitTimeout; tests shorten it).
	timeout time.Duration
	running sync.WaitGroup // background commits (round)
	mapMu   sync.Mutex     // without transactions: one map write at a time, so a key never goes backwards
	// beforeEnd, when set (tests), runs in a commit after the map records were written and
	// before the transaction ends.
	beforeEnd func()
}

// The commit policy. A commit makes a bucket's records visible to read_committed readers, and
// costs: the bucket's records wait while it flushes and ends the transaction (held, and
// produced into the next transaction once it ended: Kafka takes no record of the next
// transaction before the end of the last is answered), and the end writes a marker, which
// takes an offset, into every partition the transaction touched. So a bucket commits
//
//   - when its oldest uncommitted record would otherwise wait longer than the bound
//     (Config.CommitLatency) once the commit takes what the bucket's commits take (reason
//     "bound"): the bound is never broken by waiting;
//   - before that, once its flow pauses (no record for pause, a fiftieth of the bound, 1 to 20
//     ms, every record acknowledged, and no fetch within the pause that left records on the
//     source: a flow the target holds back, or one that arrives in bursts, is not light): a
//     light flow's records are visible soon after they arrive, and waiting would only add
//     latency (reason "pause");
//   - but never sooner after its last commit than commits can pay for: at least duty times
//     what a commit takes (commits hold the bucket at most a tenth of the time), at least
//     the time markerRate allows for the markers of the partitions it touched, and at least a
//     tenth of the bound (each commit of an active partition ends a segment of its map, whose
//     window must still cover minutes). A commit that touches many partitions therefore
//     waits longer, up to the bound.
//
// A flow that never pauses commits at the bound: once a bound, no more often.

// CommitLatencyKey is the flow key of Config.CommitLatency, in milliseconds: kmirror's own,
// which MirrorMaker 2 ignores (mm2.KmirrorKeys).
const CommitLatencyKey = mm2.KeyCommitLatency

// DefaultCommitLatency is Config.CommitLatency's default.
const DefaultCommitLatency = time.Second

// MaxCommitLatency bounds Config.CommitLatency well below the transaction timeout
// (txnTimeout), after which the target aborts an open transaction.
const MaxCommitLatency = time.Minute

// commitPolicy decides when a bucket commits (decide). Its figures come from the bound
// (newCommitPolicy); tests set them.
type commitPolicy struct {
	bound      time.Duration // no record waits longer than this for its commit (Config.CommitLatency)
	pause      time.Duration // a flow that sent nothing for this long has paused
	duty       int           // a commit follows the last after at least duty times what commits take
	markerRate float64       // markers a bucket writes a second at most, but at the bound
}

// Commit reasons, the reason label of kmirror_commits_total.
const (
	reasonBound    = "bound"    // the oldest record's wait reached the bound
	reasonPause    = "pause"    // the flow paused
	reasonHandover = "handover" // a revoke or the drain: the bucket's records go to the next owner
)

// newCommitPolicy is the policy of bound.
func newCommitPolicy(bound time.Duration) commitPolicy {
	return commitPolicy{bound: bound, pause: min(max(bound/50, time.Millisecond), 20*time.Millisecond), duty: 9, markerRate: 200}
}

// bucketLoad is what the policy knows of a bucket's open transaction.
type bucketLoad struct {
	pending  int       // records in it
	inflight int       // records of it the target has not acknowledged yet
	touched  int       // partitions it wrote records to: each gets a marker
	oldest   time.Time // when its first record was submitted
	newest   time.Time // when its last record was submitted
	// dirty says that map records wait without records of their own (a reconciled tail);
	// they are due within the bound of since.
	dirty bool
	since time.Time
	// lastEnd is when the bucket's last commit ended, cost what its commits take.
	lastEnd time.Time
	cost    time.Duration
	// behind is when a fetch of one of the bucket's partitions last ended below the source's
	// last stable offset: more records were waiting there.
	behind time.Time
}

// commitDecision is the policy's answer: commit now, for reason, or ask again at next (zero:
// nothing to commit).
type commitDecision struct {
	commit bool
	reason string
	next   time.Time
}

// decide is the policy: whether a bucket with load l commits at now.
func (p commitPolicy) decide(now time.Time, l bucketLoad) commitDecision {
	if l.pending == 0 {
		if !l.dirty {
			return commitDecision{}
		}
		l.oldest, l.newest = l.since, l.since
	}
	deadline := l.oldest.Add(p.bound - l.cost)
	if !now.Before(deadline) {
		return commitDecision{commit: true, reason: reasonBound}
	}
	at := l.newest.Add(p.pause)
	if earliest := l.lastEnd.Add(p.spacing(l)); earliest.After(at) {
		at = earliest
	}
	behind := !l.behind.IsZero() && now.Sub(l.behind) < p.pause
	if (l.inflight > 0 || behind) && !at.After(now) {
		// No new record, but the target has not acknowledged all (a flow held back by the
		// target: the poll loop waits for buffer space), or the bucket's last fetch left
		// records on the source (a flow that arrives in bursts, one per fetch): not a light
		// one, and committing early would only stop it more often.
		at = now.Add(p.pause)
	} else if !now.Before(at) {
		return commitDecision{commit: true, reason: reasonPause}
	}
	if deadline.Before(at) {
		at = deadline
	}
	return commitDecision{next: at}
}

// idle is how long the loop waits when no bucket needs asking sooner: a bucket that gets
// records is asked within a pause, and well within the bound.
func (p commitPolicy) idle() time.Duration {
	return max(min(p.pause, p.bound/10), time.Millisecond)
}

// spacing is how long after its last commit a bucket with load l may commit again before
// the bound: commits may hold it a tenth of the time (duty), its markers stay within
// markerRate, and it commits at most ten times a bound, so that a partition's map window
// (Config.MapWindow segments: a commit of an active partition ends a segment) covers at
// least MapWindow tenths of the bound.
func (p commitPolicy) spacing(l bucketLoad) time.Duration {
	markers := time.Duration(float64(l.touched) / p.markerRate * float64(time.Second))
	return max(time.Duration(p.duty)*l.cost, markers, p.bound/10)
}

// run commits until ctx ends: with transactions each bucket when its policy says (round),
// without them the map every CommitLatency.
func (c *committer) run(ctx context.Context) {
	if c.cfg.Fencing != FenceTransactions {
		t := time.NewTicker(c.cfg.CommitLatency)
		defer t.Stop()
		for {
			select {
			case <-ctx.Done():
				return
			case <-t.C:
				if c.stopped() || c.held.Load() {
					continue
				}
				if err := c.persist(ctx, c.owned()); err != nil && ctx.Err() == nil {
					c.log.Warn("persist offset map", "cluster", c.cfg.TargetAlias, "topic", c.cfg.MapTopic, "err", err)
				}
			}
		}
	}
	t := time.NewTimer(c.policy.idle())
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		now := time.Now()
		next := c.round(ctx, now)
		wait := c.policy.idle()
		if !next.IsZero() {
			wait = min(max(next.Sub(now), time.Millisecond), wait)
		}
		t.Reset(wait)
	}
}

// round asks the policy about every owned bucket with no commit under way, starts the
// commits it decides, and returns when to ask again (zero: after idle).
func (c *committer) round(ctx context.Context, now time.Time) (next time.Time) {
	if c.stopped() || c.held.Load() {
		return time.Time{}
	}
	for _, bk := range c.txn.owned() {
		l, busy := bk.w.load(now, c.policy.bound/2, bk.isDirty)
		if busy {
			continue
		}
		d := c.policy.decide(now, l)
		if d.commit {
			if !bk.failed() { // a failed partition's transaction must not commit
				c.running.Go(func() { c.done(bk, c.commit(ctx, bk, false, d.reason)) })
			}
			continue
		}
		if !d.next.IsZero() && (next.IsZero() || d.next.Before(next)) {
			next = d.next
		}
	}
	return next
}

// wait waits for the background commits.
func (c *committer) wait() { c.running.Wait() }

// persist writes the dirty segments and queued offset syncs of states and waits for them.
// With transactional writers it commits each partition's transaction (commitAll).
func (c *committer) persist(ctx context.Context, states []*partState) error {
	if c.cfg.Fencing == FenceTransactions {
		return c.commitAll(ctx, states)
	}
	c.mapMu.Lock()
	defer c.mapMu.Unlock()
	type taken struct {
		ps *partState
		d  mapDirty
	}
	var recs []*kgo.Record
	var took []taken
	for _, ps := range states {
		d := ps.takeDirty()
		r := c.cfg.mapRecords(ps, d)
		if len(r) == 0 {
			continue
		}
		recs = append(recs, r...)
		took = append(took, taken{ps, d})
	}
	if len(recs) == 0 {
		return nil
	}
	if err := c.dst.ProduceSync(ctx, recs...).FirstErr(); err != nil {
		for _, t := range took {
			t.ps.undirty(t.d)
		}
		return err
	}
	c.metrics.persisted(time.Now())
	return nil
}

// bucketsOf lists the buckets of states once each, leaving out a bucket with a partition
// that failed (bucket.failed): its transaction must not commit.
func bucketsOf(states []*partState) []*bucket {
	seen := map[*bucket]bool{}
	var out []*bucket
	for _, ps := range states {
		if ps.bk == nil || seen[ps.bk] {
			continue
		}
		seen[ps.bk] = true
		if !ps.bk.failed() {
			out = append(out, ps.bk)
		}
	}
	return out
}

// commitAll commits the open transactions of the buckets of states, a few at a time, and
// waits for them (revoke and drain). A fenced bucket's partitions are handed to fenced; any
// other failure stops the engine (a failed commit leaves records of unknown fate behind the
// in-memory map; a restart resumes from what the target committed) and the first is returned.
func (c *committer) commitAll(ctx context.Context, states []*partState) error {
	var eg errgroup.Group
	eg.SetLimit(8)
	for _, bk := range bucketsOf(states) {
		eg.Go(func() error {
			err := c.commit(ctx, bk, true, reasonHandover)
			c.done(bk, err)
			if isFencedErr(err) {
				return nil
			}
			return err
		})
	}
	return eg.Wait()
}

// commit ends bk's open transaction with the map segments and offset syncs that describe it.
// It returns errFenced (wrapped) when another owner has initialised the bucket's id. With
// wait false it returns at once when a commit of bk is already under way. reason counts it
// (kmirror_commits_total).
func (c *committer) commit(ctx context.Context, bk *bucket, wait bool, reason string) error {
	w := bk.w
	ok, oldest := w.begin(bk.isDirty, wait)
	if !ok {
		return nil
	}
	start := time.Now()
	// A commit that is cut off half-way leaves its outcome unknown: never cancel it, bound it.
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), c.timeout)
	defer cancel()
	err := c.commitHeld(ctx, bk)
	end := time.Now()
	w.release(err, start, end)
	if err == nil {
		c.metrics.commits.WithLabelValues(reason).Inc()
		if !oldest.IsZero() {
			c.metrics.commitWait.Observe(end.Sub(oldest).Seconds())
		}
	}
	return err
}

// commitTimeout bounds one commit (flush, map records, end of transaction). A target that
// takes no record for that long stops the engine; a restart resumes from what it committed.
const commitTimeout = 90 * time.Second

// done handles the outcome of a commit of bk: a fence stops each of its partitions.
func (c *committer) done(bk *bucket, err error) {
	switch {
	case err == nil:
	case isFencedErr(err):
		for _, ps := range bk.states() {
			c.txn.fenced(ps, err)
		}
	default:
		c.fail(err)
	}
}

// commitHeld is commit's body; no record is produced into the transaction meanwhile.
func (c *committer) commitHeld(ctx context.Context, bk *bucket) error {
	w := bk.w
	if err := w.cl.Flush(ctx); err != nil {
		if errors.Is(err, context.DeadlineExceeded) {
			return c.txn.withTxnState(fmt.Errorf("target cluster %s: flush transaction %s: the target did not acknowledge all its pending records within %s (the commit bound): %w; kmirror stops, and once restarted resumes from what the target committed",
				c.cfg.TargetAlias, w.id, c.timeout, err), w.id)
		}
		return fmt.Errorf("target cluster %s: flush transaction %s: %w", c.cfg.TargetAlias, w.id, err)
	}
	states := bk.states()
	for _, ps := range states {
		if err := ps.failure(); err != nil {
			// A record of this transaction failed: it must not commit. The next owner (or this
			// process after a restart) mirrors again from the last commit.
			return err
		}
	}
	type taken struct {
		ps   *partState
		d    mapDirty
		done commitPoint
	}
	took := make([]taken, 0, len(states))
	var recs []*kgo.Record
	for _, ps := range states {
		d, done := ps.takeDirtyCommit()
		recs = append(recs, c.cfg.mapRecords(ps, d)...)
		took = append(took, taken{ps, d, done})
	}
	undo := func() {
		for _, t := range took {
			t.ps.undirty(t.d)
		}
	}
	if len(recs) > 0 {
		if err := produceBounded(ctx, w.cl, recs...); err != nil {
			undo()
			if errors.Is(err, context.DeadlineExceeded) {
				return c.txn.withTxnState(fmt.Errorf("target cluster %s: write offset map of transaction %s: the target did not acknowledge its map records within %s (the commit bound): %w; kmirror stops, and once restarted resumes from what the target committed",
					c.cfg.TargetAlias, w.id, c.timeout, err), w.id)
			}
			return c.txn.txnErr(w, "write offset map", err)
		}
	}
	if c.beforeEnd != nil {
		c.beforeEnd()
	}
	if err := w.cl.EndTransaction(ctx, kgo.TryCommit); err != nil {
		undo()
		if errors.Is(err, context.DeadlineExceeded) {
			return c.txn.withTxnState(fmt.Errorf("target cluster %s: end transaction %s: the target did not end it within %s (the commit bound): %w; kmirror stops, and once restarted resumes from what the target committed",
				c.cfg.TargetAlias, w.id, c.timeout, err), w.id)
		}
		if errors.Is(err, kerr.InvalidTxnState) {
			// Kafka 4's transactions (KIP-890): another owner's fence aborted the transaction
			// and bumped the epoch by one, and the target takes this commit for a retry of
			// that abort. The transaction is aborted: a fence.
			return fmt.Errorf("transaction %s: commit: %w (%v: the target aborted the transaction, as another owner's fence does)", w.id, errFenced, err)
		}
		return c.txn.txnErr(w, "commit", err)
	}
	for _, t := range took {
		t.ps.committed(t.done)
	}
	w.mu.Lock()
	w.pending = 0
	w.mu.Unlock()
	c.metrics.persisted(time.Now())
	return nil
}

// produceBounded produces recs and waits for them until ctx is done. ProduceSync waits for
// records already sent however long the target takes to answer (their context fails them only
// before they are sent), so a target that froze after a commit's flush held the commit past
// its bound.
func produceBounded(ctx context.Context, cl *kgo.Client, recs ...*kgo.Record) error {
	done := make(chan error, len(recs))
	for _, r := range recs {
		cl.Produce(ctx, r, func(_ *kgo.Record, err error) { done <- err })
	}
	var first error
	for range recs {
		select {
		case err := <-done:
			if first == nil {
				first = err
			}
		case <-ctx.Done():
			return ctx.Err()
		}
	}
	return first
}

// begin marks a commit under way; it returns false when there is nothing to commit, or when
// another commit is under way and wait is false (with wait it waits for that one first).
// oldest is when the transaction's first record was submitted (zero: it has none).
func (w *txnWriter) begin(dirty func() bool, wait bool) (ok bool, oldest time.Time) {
	w.mu.Lock()
	defer w.mu.Unlock()
	for wait && w.committing {
		w.cond.Wait()
	}
	if w.committing || (w.pending == 0 && !dirty()) {
		return false, time.Time{}
	}
	w.committing = true
	return true, w.open.oldest
}

// release ends a commit that began at start and ended at end. After a committed transaction
// (err nil) it begins the next one and produces the held records into it; otherwise the held
// records fail with err. It notes what the commit took for the policy.
func (w *txnWriter) release(err error, start, end time.Time) {
	w.mu.Lock()
	defer w.mu.Unlock()
	held := w.held
	w.held, w.committing = nil, false
	w.cond.Broadcast()
	if took := end.Sub(start); took > w.cost {
		w.cost = took
	} else {
		w.cost = (7*w.cost + took) / 8 // a slow commit is remembered over a few commits
	}
	w.lastEnd = end
	if err == nil {
		err = w.cl.BeginTransaction()
	}
	// The held records are the next transaction's, already counted in w.next.
	w.pending = len(held)
	w.open, w.next = w.next, txnLoad{}
	w.seq++
	for _, h := range held {
		if err != nil {
			h.promise(h.r, err)
			continue
		}
		w.cl.Produce(h.ctx, h.r, h.promise)
	}
}

// load is the policy's view of the writer's open transaction at now (busy: a commit is under
// way). dirty, which locks every partition of the bucket, is asked only of a transaction
// without records, and at most every check.
func (w *txnWriter) load(now time.Time, check time.Duration, dirty func() bool) (l bucketLoad, busy bool) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.committing {
		return l, true
	}
	l = bucketLoad{pending: w.pending, inflight: int(w.cl.BufferedProduceRecords()), touched: w.open.touched,
		oldest: w.open.oldest, newest: w.open.newest, lastEnd: w.lastEnd, cost: w.cost, behind: w.behind}
	if w.pending > 0 && w.open.oldest.IsZero() {
		l.oldest, l.newest = now, now // records counted before the load was (never: defensive)
	}
	if w.pending == 0 {
		l.since = w.lastEnd
		if w.checked.After(l.since) {
			l.since = w.checked
		}
		if now.Sub(l.since) >= check {
			if l.dirty = dirty(); !l.dirty {
				w.checked = now
			}
		}
	}
	return l, false
}

// mapRecords are the offset map records of d (segments, tombstones of compacted segments,
// the history record) and its offset syncs.
func (c *Config) mapRecords(ps *partState, d mapDirty) []*kgo.Record {
	recs := make([]*kgo.Record, 0, len(d.segs)+len(d.tombs)+len(d.syncs)+1)
	if d.history {
		recs = append(recs, &kgo.Record{Topic: c.MapTopic, Partition: 0, Key: historyKey(ps.tp), Value: historyValue(d.exactFrom, d.sourceFrom)})
	}
	for _, src := range d.tombs {
		recs = append(recs, &kgo.Record{Topic: c.MapTopic, Partition: 0, Key: mapKey(ps.tp, src)})
	}
	for _, s := range d.segs {
		recs = append(recs, &kgo.Record{Topic: c.MapTopic, Partition: 0, Key: mapKey(ps.tp, s.Source), Value: mapValue(s)})
	}
	if c.OffsetSyncsOnTarget {
		for _, s := range d.syncs {
			recs = append(recs, &kgo.Record{Topic: c.OffsetSyncsTopic, Partition: 0, Key: s.Key(), Value: s.Value()})
		}
	}
	return recs
}
