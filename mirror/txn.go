package mirror

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
)

// Fencing modes (Config.Fencing).
const (
	// FenceTransactions writes each owned partition through a transactional producer of its
	// own. Default.
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

// txnWriter is the transactional producer of one owned partition.
//
// Its transactional id names the flow's group, the source topic and the partition, so the
// next owner of the partition, in whatever process, initialises the same id. The broker then
// aborts the previous owner's open transaction and refuses every write it still sends, even
// records already in flight: that is the fence. The partition's records, its offset map
// segments and its offset syncs go into one transaction, committed every PersistInterval, so
// committed data is always described by committed map records, and what is not committed is
// invisible to read_committed readers and is mirrored again by the next owner.
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

// transactionalID is the fencing identity of one source partition of a flow.
func (c *Config) transactionalID(t tp) string {
	return fmt.Sprintf("%s-%s-%d", c.GroupID, t.topic, t.partition)
}

// newTxnWriter creates the partition's transactional producer and initialises its id, which
// fences any earlier owner, before the caller reads the target's committed state.
func (e *Engine) newTxnWriter(ctx context.Context, t tp) (*txnWriter, error) {
	id := e.cfg.transactionalID(t)
	cl, err := kgo.NewClient(append(e.producerOpts(),
		kgo.TransactionalID(id),
		kgo.TransactionTimeout(txnTimeout),
		e.metrics.clientHooks(roleTarget, false),
	)...)
	if err != nil {
		return nil, fmt.Errorf("target cluster %s: create transactional producer %s: %w", e.cfg.TargetAlias, id, err)
	}
	stopWatch := e.watchFence(id, t)
	_, _, err = cl.ProducerID(ctx)
	stopWatch()
	if err != nil {
		cl.Close()
		return nil, fmt.Errorf("target cluster %s: initialise transactional id %s (fences the previous owner of %s): %w%s",
			e.cfg.TargetAlias, id, t, err, hint(err))
	}
	if err := cl.BeginTransaction(); err != nil {
		cl.Close()
		return nil, fmt.Errorf("target cluster %s: begin transaction %s: %w", e.cfg.TargetAlias, id, err)
	}
	w := &txnWriter{cl: cl, id: id}
	w.cond = sync.NewCond(&w.mu)
	return w, nil
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

// produceSync writes recs into the open transaction and waits for them.
func (w *txnWriter) produceSync(ctx context.Context, recs ...*kgo.Record) error {
	w.mu.Lock()
	w.pending += len(recs)
	w.mu.Unlock()
	return w.cl.ProduceSync(ctx, recs...).FirstErr()
}

func (w *txnWriter) close() { w.closeOnce.Do(w.cl.Close) }

// commit ends ps's open transaction with the map segments and offset syncs that describe it.
// It returns errFenced (wrapped) when another owner has initialised the partition's id. With
// wait false it returns at once when a commit of ps is already under way.
func (e *Engine) commit(ctx context.Context, ps *partState, wait bool) error {
	w := ps.w
	if !w.begin(ps.isDirty, wait) {
		return nil
	}
	// A commit that is cut off half-way leaves its outcome unknown: never cancel it, bound it.
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), e.commitTimeout)
	defer cancel()
	err := e.commitHeld(ctx, ps)
	w.release(err)
	return err
}

// commitTimeout bounds one commit (flush, map records, end of transaction). A target that
// takes no record for that long stops the engine; a restart resumes from what it committed.
const commitTimeout = 90 * time.Second

// commitDone handles the outcome of a commit of ps.
func (e *Engine) commitDone(ps *partState, err error) {
	switch {
	case err == nil:
	case isFencedErr(err):
		e.fenced(ps, err)
	default:
		e.fail(err)
	}
}

// commitHeld is commit's body; no record is produced into the transaction meanwhile.
func (e *Engine) commitHeld(ctx context.Context, ps *partState) error {
	w := ps.w
	if err := w.cl.Flush(ctx); err != nil {
		if errors.Is(err, context.DeadlineExceeded) {
			return e.withTxnState(fmt.Errorf("target cluster %s: flush transaction %s: the target did not acknowledge all its pending records within %s (the commit bound): %w; kmirror stops, and once restarted resumes from what the target committed",
				e.cfg.TargetAlias, w.id, e.commitTimeout, err), w.id)
		}
		return fmt.Errorf("target cluster %s: flush transaction %s: %w", e.cfg.TargetAlias, w.id, err)
	}
	if err := ps.failure(); err != nil {
		// A record of this transaction failed: it must not commit. The next owner (or this
		// process after a restart) mirrors again from the last commit.
		return err
	}
	segs, syncs, from, done := ps.takeDirtyCommit()
	recs := e.mapRecords(ps, segs, syncs)
	if len(recs) > 0 {
		if err := w.cl.ProduceSync(ctx, recs...).FirstErr(); err != nil {
			ps.undirty(from, syncs)
			return e.txnErr(ps, "write offset map", err)
		}
	}
	if err := w.cl.EndTransaction(ctx, kgo.TryCommit); err != nil {
		ps.undirty(from, syncs)
		if errors.Is(err, context.DeadlineExceeded) {
			err = e.withTxnState(err, w.id)
		}
		return e.txnErr(ps, "commit", err)
	}
	ps.committed(done)
	w.mu.Lock()
	w.pending = 0
	w.mu.Unlock()
	e.metrics.persisted(time.Now())
	return nil
}

// errFenced marks a partition whose transactional id another owner initialised.
var errFenced = errors.New("fenced: another kmirror process took over the partition")

func isFencedErr(err error) bool {
	return errors.Is(err, errFenced) || errors.Is(err, kerr.ProducerFenced) ||
		errors.Is(err, kerr.InvalidProducerEpoch) || errors.Is(err, kerr.TransactionalIDNotFound) ||
		errors.Is(err, kerr.InvalidProducerIDMapping)
}

func (e *Engine) txnErr(ps *partState, what string, err error) error {
	if isFencedErr(err) {
		return fmt.Errorf("partition %s: %s: %w (%v)", ps.tp, what, errFenced, err)
	}
	return fmt.Errorf("target cluster %s: %s of transaction %s: %w%s", e.cfg.TargetAlias, what, ps.w.id, err, hint(err))
}

// fenced handles a partition this process can no longer write: another process initialised
// its transactional id. Normally the group has moved the partition and this process learns of
// it at its next heartbeat (the revoke or lost callback then drops it). If the group still
// gives the partition to this process after a session timeout, two writers share the id (two
// flows with one group id, or a transaction the target aborted on its timeout) and the engine
// stops: a restart resumes exactly from what the target committed.
func (e *Engine) fenced(ps *partState, err error) {
	if !ps.markFenced() {
		return
	}
	e.log.Warn("partition fenced: another kmirror process owns it now; its uncommitted records are aborted and mirrored again by the owner",
		"topic", ps.topic, "partition", ps.partition, "cluster", e.cfg.TargetAlias, "transactional_id", ps.w.id, "err", err)
	go func() {
		select {
		case <-time.After(e.cfg.SessionTimeout + 5*time.Second):
		case <-e.failed:
			return
		}
		if e.part(ps.tp) == ps {
			e.fail(fmt.Errorf("target cluster %s: partition %s was fenced (transactional id %s initialised elsewhere) but the source group still assigns it to this process: another flow uses the same group id %s, or the target aborted a transaction on its timeout; give each flow its own group, then restart kmirror (it resumes from what the target committed)",
				e.cfg.TargetAlias, ps.tp, ps.w.id, e.cfg.GroupID))
		}
	}()
}
