package mirror

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
	"golang.org/x/sync/errgroup"
)

// committer is how kmirror commits: when each owned bucket commits (the loop), what a commit
// writes (the map records that describe the bucket's records: mapRecords) and how (flush,
// map records, end of the transaction, within the commit bound). With fencing none it
// persists the map alone. It is the one owner of commits: the engine's loop, its revoke and its
// drain ask it. What it needs of the engine it is given at New: the configuration, the log,
// the metrics, the writers (the buckets and their transactional producers, txn.go), the
// owned partitions and two callbacks.
type committer struct {
	cfg     *Config
	log     *slog.Logger
	metrics *metrics
	txn     *writers
	dst     *kgo.Client         // the engine's target client, set by connect: the map without transactions
	owned   func() []*partState // the partitions this process owns (Engine.owned)
	stopped func() bool         // true once the engine stops like a killed process (Engine.crashed)
	fail    func(error)         // stops the engine (Engine.fail)

	// timeout is the commit bound: it bounds one commit and the wait of a revoke for its
	// records in flight (default commitTimeout; tests shorten it).
	timeout time.Duration
	running sync.WaitGroup // background commits (commitEach)
	mapMu   sync.Mutex     // without transactions: one map write at a time, so a key never goes backwards
	// beforeEnd, when set (tests), runs in a commit after the map records were written and
	// before the transaction ends.
	beforeEnd func()
}

// run commits every PersistInterval until ctx ends.
func (c *committer) run(ctx context.Context) {
	t := time.NewTicker(c.cfg.PersistInterval)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
			c.tick(ctx)
		}
	}
}

// tick starts a commit of every owned bucket (commitEach), or persists the map without
// transactions.
func (c *committer) tick(ctx context.Context) {
	if c.stopped() {
		return
	}
	states := c.owned()
	if c.cfg.Fencing == FenceTransactions {
		c.commitEach(ctx, states)
		return
	}
	if err := c.persist(ctx, states); err != nil && ctx.Err() == nil {
		c.log.Warn("persist offset map", "cluster", c.cfg.TargetAlias, "topic", c.cfg.MapTopic, "err", err)
	}
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
// that failed (a fenced one, or one whose failure stops the engine): its transaction must not
// commit.
func bucketsOf(states []*partState) []*bucket {
	seen := map[*bucket]bool{}
	var out []*bucket
	for _, ps := range states {
		if ps.bk == nil || seen[ps.bk] {
			continue
		}
		seen[ps.bk] = true
		ok := true
		for _, o := range ps.bk.states() {
			if o.failure() != nil {
				ok = false
				break
			}
		}
		if ok {
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
			err := c.commit(ctx, bk, true)
			c.done(bk, err)
			if isFencedErr(err) {
				return nil
			}
			return err
		})
	}
	return eg.Wait()
}

// commitEach starts a commit of every bucket of states that has none under way, without
// waiting: one slow bucket never holds back the others' commits.
func (c *committer) commitEach(ctx context.Context, states []*partState) {
	for _, bk := range bucketsOf(states) {
		c.running.Go(func() { c.done(bk, c.commit(ctx, bk, false)) })
	}
}

// commit ends bk's open transaction with the map segments and offset syncs that describe it.
// It returns errFenced (wrapped) when another owner has initialised the bucket's id. With
// wait false it returns at once when a commit of bk is already under way.
func (c *committer) commit(ctx context.Context, bk *bucket, wait bool) error {
	w := bk.w
	if !w.begin(bk.isDirty, wait) {
		return nil
	}
	// A commit that is cut off half-way leaves its outcome unknown: never cancel it, bound it.
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), c.timeout)
	defer cancel()
	err := c.commitHeld(ctx, bk)
	w.release(err)
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
			err = c.txn.withTxnState(err, w.id)
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
func (w *txnWriter) begin(dirty func() bool, wait bool) bool {
	w.mu.Lock()
	defer w.mu.Unlock()
	for wait && w.committing {
		w.cond.Wait()
	}
	if w.committing || (w.pending == 0 && !dirty()) {
		return false
	}
	w.committing = true
	return true
}

// release ends a commit. After a committed transaction (err nil) it begins the next one and
// produces the held records into it; otherwise the held records fail with err.
func (w *txnWriter) release(err error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	held := w.held
	w.held, w.committing = nil, false
	w.cond.Broadcast()
	if err == nil {
		err = w.cl.BeginTransaction()
	}
	w.pending = len(held)
	for _, h := range held {
		if err != nil {
			h.promise(h.r, err)
			continue
		}
		w.cl.Produce(h.ctx, h.r, h.promise)
	}
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
