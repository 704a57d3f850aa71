package mirror

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"golang.org/x/sync/errgroup"
)

// Fencing modes (Config.Fencing).
const (
	// FenceTransactions writes the owned partitions through one transactional producer per
	// bucket (Config.Buckets, bucket.go). Default.
	FenceTransactions = "transactions"
	// FenceNone writes with one idempotent producer and no transactions: faster to commit, but
	// a process that lost its group session without noticing can still write records the new
	// owner writes too (exactly.once.source.support=disabled).
	FenceNone = "none"
)

// fenceNoneWarning is logged at start-up with fencing none: what it gives up (doc.go, Limits).
const fenceNoneWarning = "fencing none: writes are not fenced. A process that lost its group session but still reaches the target can duplicate the new owner's records, " +
	"and so can a record the target's partition leader had written but not replicated (above its high watermark) when kmirror died, if it is replicated only after the next owner read the target's tail. " +
	"Remove exactly.once.source.support=disabled for the default, transactions, which fences both"

// writers is the engine's transactional side (Config.Fencing transactions): it creates each
// owned bucket's txnWriter, whose initialisation fences the bucket's previous owner, commits
// the buckets' transactions, handles a fenced partition and closes the writers at stop. It
// owns the buckets, the commit bound, the background commits and the partitions being
// revoked, which closeAll must still reach. What it needs of the engine it is given at New: the configuration, the
// log, the metrics, the producer options and three callbacks. The engine's lock (parts) is
// always taken before writers.mu.
type writers struct {
	cfg     *Config
	scheme  bucketScheme // the flow's buckets (bucket.go)
	log     *slog.Logger
	metrics *metrics
	dst     *kgo.Client         // the engine's target client, set by connect: describes transactions (txnstate.go)
	opts    func() []kgo.Opt    // the options of every producer to the target (Engine.producerOpts)
	owner   func(tp) *partState // the state that owns t now, nil when none (Engine.part)
	fail    func(error)         // stops the engine (Engine.fail)
	failed  <-chan struct{}     // closed at the engine's first fatal error

	// timeout bounds one commit and the wait of a revoke for its records in flight (default
	// commitTimeout); fenceWarn is how often a fence that does not end is reported (default
	// fenceWarnEvery, txnstate.go). Tests shorten them.
	timeout, fenceWarn time.Duration
	commits            sync.WaitGroup // background commits (commitEach)
	// beforeEnd, when set (tests), runs in a commit after the map records were written and
	// before the transaction ends.
	beforeEnd func()

	mu sync.Mutex
	// revoking holds the partitions a revoke callback took out of the engine's parts and still
	// waits for; closed is set once closeAll ran: a writer revoked after it is closed at once.
	revoking map[*partState]struct{}
	closed   bool
	// buckets are the owned buckets by id, each with the partitions writing through it
	// (attach, detach).
	buckets map[int]*bucket
}

// txnWriter is the transactional producer of one owned bucket.
//
// Its transactional id names the flow's group, the bucket and the bucket count, so the next
// owner of the bucket, in whatever process, initialises the same id. The broker then aborts
// the previous owner's open transaction and refuses every write it still sends, to any
// partition of the bucket, even records already in flight: that is the fence. The records of
// the bucket's partitions, their offset map segments and their offset syncs go into one
// transaction, committed every PersistInterval, so committed data is always described by
// committed map records, and what is not committed is invisible to read_committed readers
// and is mirrored again by the next owner.
type txnWriter struct {
	cl        *kgo.Client
	id        string
	closeOnce sync.Once

	mu   sync.Mutex // orders Produce calls with commits
	cond *sync.Cond
	// committing is set while a commit flushes and ends the transaction: records submitted
	// meanwhile wait in held and are produced, in order, into the next transaction.
	committing bool
	held       []heldRecord
	// pending counts records produced into the open transaction (held ones included).
	pending int
}

type heldRecord struct {
	ctx     context.Context // the poll loop's, which a commit's end must not cancel
	r       *kgo.Record
	promise func(*kgo.Record, error)
}

// maxHeld bounds the records waiting for a commit to end; past it the poll loop waits.
const maxHeld = 4096

// txnTimeout is the transaction timeout kmirror asks for: how long the target keeps an open
// transaction of a process that died before the next owner fences it. Longer than any commit
// (one every PersistInterval), and long enough to outlast a target outage of a minute or two
// without the coordinator aborting the transaction under a live process.
const txnTimeout = 2 * time.Minute

// open creates bucket b's transactional producer and initialises its id, which fences any
// earlier owner, before the caller reads the target's committed state.
func (x *writers) open(ctx context.Context, b int) (*txnWriter, error) {
	id := x.scheme.txnID(b)
	cl, err := x.initID(ctx, id, x.scheme.what(b))
	if err != nil {
		return nil, err
	}
	if err := cl.BeginTransaction(); err != nil {
		cl.Close()
		return nil, fmt.Errorf("target cluster %s: begin transaction %s: %w", x.cfg.TargetAlias, id, err)
	}
	w := &txnWriter{cl: cl, id: id}
	w.cond = sync.NewCond(&w.mu)
	return w, nil
}

// initID creates a transactional producer with id and initialises the id: the target aborts
// the open transaction of the id's previous user and refuses all it still sends. what names
// what the id fences, for the error and the warning of a fence that does not end.
func (x *writers) initID(ctx context.Context, id, what string) (*kgo.Client, error) {
	cl, err := kgo.NewClient(append(x.opts(),
		kgo.TransactionalID(id),
		kgo.TransactionTimeout(txnTimeout),
		x.metrics.clientHooks(roleTarget, false),
	)...)
	if err != nil {
		return nil, fmt.Errorf("target cluster %s: create transactional producer %s: %w", x.cfg.TargetAlias, id, err)
	}
	stopWatch := x.watchFence(id, what)
	_, _, err = cl.ProducerID(ctx)
	stopWatch()
	if err != nil {
		cl.Close()
		return nil, fmt.Errorf("target cluster %s: initialise transactional id %s (fences the previous owner of %s): %w%s",
			x.cfg.TargetAlias, id, what, err, hint(err))
	}
	return cl, nil
}

// produce submits r into the open transaction, or holds it while a commit is under way.
func (w *txnWriter) produce(ctx context.Context, r *kgo.Record, promise func(*kgo.Record, error)) {
	w.mu.Lock()
	defer w.mu.Unlock()
	for w.committing && len(w.held) >= maxHeld {
		w.cond.Wait()
	}
	w.pending++
	if w.committing {
		w.held = append(w.held, heldRecord{ctx, r, promise})
		return
	}
	w.cl.Produce(ctx, r, promise)
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

// produceWait writes r into the open transaction, or the next one when a commit is under
// way (produce), and waits for it. The bucket's other partitions may be committing meanwhile.
func (w *txnWriter) produceWait(ctx context.Context, r *kgo.Record) error {
	done := make(chan error, 1)
	w.produce(ctx, r, func(_ *kgo.Record, err error) { done <- err })
	select {
	case err := <-done:
		return err
	case <-ctx.Done():
		return ctx.Err()
	}
}

func (w *txnWriter) close() { w.closeOnce.Do(w.cl.Close) }

// commit ends bk's open transaction with the map segments and offset syncs that describe it.
// It returns errFenced (wrapped) when another owner has initialised the bucket's id. With
// wait false it returns at once when a commit of bk is already under way.
func (x *writers) commit(ctx context.Context, bk *bucket, wait bool) error {
	w := bk.w
	if !w.begin(bk.isDirty, wait) {
		return nil
	}
	// A commit that is cut off half-way leaves its outcome unknown: never cancel it, bound it.
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), x.timeout)
	defer cancel()
	err := x.commitHeld(ctx, bk)
	w.release(err)
	return err
}

// commitTimeout bounds one commit (flush, map records, end of transaction). A target that
// takes no record for that long stops the engine; a restart resumes from what it committed.
const commitTimeout = 90 * time.Second

// done handles the outcome of a commit of bk: a fence stops each of its partitions.
func (x *writers) done(bk *bucket, err error) {
	switch {
	case err == nil:
	case isFencedErr(err):
		for _, ps := range bk.states() {
			x.fenced(ps, err)
		}
	default:
		x.fail(err)
	}
}

// commitHeld is commit's body; no record is produced into the transaction meanwhile.
func (x *writers) commitHeld(ctx context.Context, bk *bucket) error {
	w := bk.w
	if err := w.cl.Flush(ctx); err != nil {
		if errors.Is(err, context.DeadlineExceeded) {
			return x.withTxnState(fmt.Errorf("target cluster %s: flush transaction %s: the target did not acknowledge all its pending records within %s (the commit bound): %w; kmirror stops, and once restarted resumes from what the target committed",
				x.cfg.TargetAlias, w.id, x.timeout, err), w.id)
		}
		return fmt.Errorf("target cluster %s: flush transaction %s: %w", x.cfg.TargetAlias, w.id, err)
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
		recs = append(recs, x.cfg.mapRecords(ps, d)...)
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
				return x.withTxnState(fmt.Errorf("target cluster %s: write offset map of transaction %s: the target did not acknowledge its map records within %s (the commit bound): %w; kmirror stops, and once restarted resumes from what the target committed",
					x.cfg.TargetAlias, w.id, x.timeout, err), w.id)
			}
			return x.txnErr(w, "write offset map", err)
		}
	}
	if x.beforeEnd != nil {
		x.beforeEnd()
	}
	if err := w.cl.EndTransaction(ctx, kgo.TryCommit); err != nil {
		undo()
		if errors.Is(err, context.DeadlineExceeded) {
			err = x.withTxnState(err, w.id)
		}
		return x.txnErr(w, "commit", err)
	}
	for _, t := range took {
		t.ps.committed(t.done)
	}
	w.mu.Lock()
	w.pending = 0
	w.mu.Unlock()
	x.metrics.persisted(time.Now())
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

// errFenced marks a partition whose bucket's transactional id another owner initialised.
var errFenced = errors.New("fenced: another kmirror process took over the partition's bucket")

func isFencedErr(err error) bool {
	return errors.Is(err, errFenced) || errors.Is(err, kerr.ProducerFenced) ||
		errors.Is(err, kerr.InvalidProducerEpoch) || errors.Is(err, kerr.TransactionalIDNotFound) ||
		errors.Is(err, kerr.InvalidProducerIDMapping)
}

func (x *writers) txnErr(w *txnWriter, what string, err error) error {
	if isFencedErr(err) {
		return fmt.Errorf("transaction %s: %s: %w (%v)", w.id, what, errFenced, err)
	}
	return fmt.Errorf("target cluster %s: %s of transaction %s: %w%s", x.cfg.TargetAlias, what, w.id, err, hint(err))
}

// fenced handles a partition this process can no longer write: another process initialised
// its bucket's transactional id. Normally the group has moved the partition and this process learns of
// it at its next heartbeat (the revoke or lost callback then drops it). If the group still
// gives the partition to this process after a session timeout, two writers share the id (two
// flows with one group id, or a transaction the target aborted on its timeout) and the engine
// stops: a restart resumes exactly from what the target committed.
func (x *writers) fenced(ps *partState, err error) {
	if !ps.markFenced() {
		return
	}
	x.log.Warn("partition fenced: another kmirror process owns its bucket now; its uncommitted records are aborted and mirrored again by the owner",
		"topic", ps.topic, "partition", ps.partition, "cluster", x.cfg.TargetAlias, "transactional_id", ps.w.id, "err", err)
	go func() {
		select {
		case <-time.After(x.cfg.SessionTimeout + 5*time.Second):
		case <-x.failed:
			return
		}
		if x.owner(ps.tp) == ps {
			x.fail(fmt.Errorf("target cluster %s: partition %s was fenced (transactional id %s initialised elsewhere) but the source group still assigns it to this process: another flow uses the same group id %s, or the target aborted a transaction on its timeout; give each flow its own group, then restart kmirror (it resumes from what the target committed)",
				x.cfg.TargetAlias, ps.tp, ps.w.id, x.cfg.GroupID))
		}
	}()
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
func (x *writers) commitAll(ctx context.Context, states []*partState) error {
	var eg errgroup.Group
	eg.SetLimit(8)
	for _, bk := range bucketsOf(states) {
		eg.Go(func() error {
			err := x.commit(ctx, bk, true)
			x.done(bk, err)
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
func (x *writers) commitEach(ctx context.Context, states []*partState) {
	for _, bk := range bucketsOf(states) {
		x.commits.Go(func() { x.done(bk, x.commit(ctx, bk, false)) })
	}
}

// attach adds resumed states to their buckets, creating the bucket of a writer fenceAll just
// opened. The caller holds the engine's lock.
func (x *writers) attach(states []*partState) {
	x.mu.Lock()
	defer x.mu.Unlock()
	for _, ps := range states {
		if ps.w == nil {
			continue
		}
		k := x.scheme.of(ps.tp)
		bk := x.buckets[k]
		if bk == nil {
			bk = &bucket{id: k, w: ps.w, parts: map[tp]*partState{}}
			x.buckets[k] = bk
		}
		bk.mu.Lock()
		bk.parts[ps.tp] = ps
		bk.mu.Unlock()
		ps.bk = bk
	}
}

// writerOf returns the writer of owned bucket k, or nil when this process does not own it.
func (x *writers) writerOf(k int) *txnWriter {
	x.mu.Lock()
	defer x.mu.Unlock()
	if bk := x.buckets[k]; bk != nil {
		return bk.w
	}
	return nil
}

// detach takes revoked states out of their buckets, once their revoke committed, and returns
// the writers of the buckets left without partitions, for the caller to close.
func (x *writers) detach(states []*partState) []*txnWriter {
	x.mu.Lock()
	defer x.mu.Unlock()
	var empty []*txnWriter
	for _, ps := range states {
		bk := ps.bk
		if bk == nil {
			continue
		}
		bk.mu.Lock()
		delete(bk.parts, ps.tp)
		n := len(bk.parts)
		bk.mu.Unlock()
		if n == 0 && x.buckets[bk.id] == bk {
			delete(x.buckets, bk.id)
			empty = append(empty, bk.w)
		}
	}
	return empty
}

// revoke notes ps, just taken out of the engine's parts, as being revoked; when the writers
// are closed already its writer is closed at once. The caller holds the engine's lock.
func (x *writers) revoke(ps *partState) {
	x.mu.Lock()
	defer x.mu.Unlock()
	x.revoking[ps] = struct{}{}
	if x.closed && ps.w != nil {
		ps.w.close()
	}
}

// revokeDone forgets partitions whose revoke has ended.
func (x *writers) revokeDone(states []*partState) {
	x.mu.Lock()
	defer x.mu.Unlock()
	for _, st := range states {
		delete(x.revoking, st)
	}
}

// closeAll closes the writers of the owned partitions (the engine's parts; the caller holds
// the engine's lock) and of every partition being revoked; a writer revoked later is closed
// at once (revoke).
func (x *writers) closeAll(owned map[tp]*partState) {
	x.mu.Lock()
	defer x.mu.Unlock()
	x.closed = true
	for _, ps := range owned {
		if ps.w != nil {
			ps.w.close()
		}
	}
	for ps := range x.revoking {
		if ps.w != nil {
			ps.w.close()
		}
	}
}
