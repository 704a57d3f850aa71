package mirror

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
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
// owned bucket's txnWriter, whose initialisation fences the bucket's previous owner, handles a
// fenced partition and closes the writers at stop. It owns the buckets and the partitions
// being revoked, which closeAll must still reach; when and how a bucket commits is the
// committer's (commit.go). What it needs of the engine it is given at New: the configuration,
// the bucket scheme, the log, the metrics, the producer options and three callbacks. The
// engine's lock (parts) is always taken before writers.mu.
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

	// fenceWarn is how often a fence that does not end is reported (default fenceWarnEvery,
	// txnstate.go). Tests shorten it.
	fenceWarn time.Duration

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
// transaction, committed when the committer decides (commit.go), so committed data is always
// described by committed map records, and what is not committed is invisible to
// read_committed readers and is mirrored again by the next owner.
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

	// What the commit policy knows (commit.go): the load of the open transaction and of the
	// next one (records held during a commit), and when the last commit ended and what
	// commits take. seq numbers the transactions: a partition's txnSeen is the seq of the last
	// one it wrote to, so touched counts each partition once.
	open, next txnLoad
	seq        uint64
	lastEnd    time.Time
	checked    time.Time // when a transaction without records was last found clean
	cost       time.Duration
	behind     time.Time // when a fetch of its partitions last left records on the source

	// lostID is set once the target answered INVALID_PRODUCER_ID_MAPPING for the writer's
	// transactional id: its coordinator no longer knows the producer id (fenced).
	lostID atomic.Bool
}

// txnLoad is one transaction's records as the commit policy counts them.
type txnLoad struct {
	touched        int
	oldest, newest time.Time
}

// note counts a record submitted at for the partition whose txnSeen is seen (nil: a map
// record) into the open transaction, or the next one while a commit is under way. The caller
// holds w.mu.
func (w *txnWriter) note(at time.Time, seen *uint64) {
	l, seq := &w.open, w.seq
	if w.committing {
		l, seq = &w.next, w.seq+1
	}
	if l.oldest.IsZero() {
		l.oldest = at
	}
	l.newest = at
	if seen != nil && *seen != seq {
		*seen = seq
		l.touched++
	}
}

type heldRecord struct {
	ctx     context.Context // the poll loop's, which a commit's end must not cancel
	r       *kgo.Record
	promise func(*kgo.Record, error)
}

// maxHeld bounds the records waiting for a commit to end; past it the poll loop waits.
const maxHeld = 4096

// txnTimeout is the transaction timeout kmirror asks for: how long the target keeps an open
// transaction of a process that died before the next owner fences it. Longer than any
// transaction stays open (Config.CommitLatency, at most MaxCommitLatency), and long enough to
// outlast a target outage of a minute or two without the coordinator aborting the
// transaction under a live process.
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
	w := &txnWriter{cl: cl, id: id, seq: 1}
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

// produce submits r, fetched at at, into the open transaction, or holds it while a commit is
// under way. seen is the txnSeen of r's partition (nil for a map record).
func (w *txnWriter) produce(ctx context.Context, r *kgo.Record, at time.Time, seen *uint64, promise func(*kgo.Record, error)) {
	w.mu.Lock()
	defer w.mu.Unlock()
	for w.committing && len(w.held) >= maxHeld {
		w.cond.Wait()
	}
	w.pending++
	w.note(at, seen)
	if w.committing {
		w.held = append(w.held, heldRecord{ctx, r, promise})
		return
	}
	w.cl.Produce(ctx, r, promise)
}

// produceWait writes r into the open transaction, or the next one when a commit is under
// way (produce), and waits for it. The bucket's other partitions may be committing meanwhile.
func (w *txnWriter) produceWait(ctx context.Context, r *kgo.Record) error {
	done := make(chan error, 1)
	w.produce(ctx, r, time.Now(), nil, func(_ *kgo.Record, err error) { done <- err })
	select {
	case err := <-done:
		return err
	case <-ctx.Done():
		return ctx.Err()
	}
}

// fetchedBehind notes that a fetch of one of the bucket's partitions, copied at at, ended
// below the source's last stable offset (the commit policy's behind).
func (w *txnWriter) fetchedBehind(at time.Time) {
	w.mu.Lock()
	w.behind = at
	w.mu.Unlock()
}

func (w *txnWriter) close() { w.closeOnce.Do(w.cl.Close) }

// errFenced marks a partition whose bucket's transactional id another owner initialised.
var errFenced = errors.New("fenced: another kmirror process took over the partition's bucket")

// errLostProducerID marks the engine's stop when the target's transaction coordinator answered
// INVALID_PRODUCER_ID_MAPPING for a bucket (it no longer knows the producer id of the bucket's
// transactional id: a coordinator that moved to another broker without it, or an id that
// expired) and the source group still gives the bucket's partitions to this process after a
// session timeout. No other process took them over, so a new engine, which initialises the id
// again and resumes from what the target committed, gets past it (IsTransient). Another owner
// fences with PRODUCER_FENCED, INVALID_PRODUCER_EPOCH or, on Kafka 4, INVALID_TXN_STATE, never
// with this answer.
var errLostProducerID = errors.New("the target's transaction coordinator no longer knows the bucket's producer id")

func isFencedErr(err error) bool {
	return errors.Is(err, errFenced) || errors.Is(err, kerr.ProducerFenced) ||
		errors.Is(err, kerr.InvalidProducerEpoch) || errors.Is(err, kerr.TransactionalIDNotFound) ||
		errors.Is(err, kerr.InvalidProducerIDMapping)
}

func (x *writers) txnErr(w *txnWriter, what string, err error) error {
	if isFencedErr(err) {
		return fmt.Errorf("transaction %s: %s: %w (%w)", w.id, what, errFenced, err)
	}
	return fmt.Errorf("target cluster %s: %s of transaction %s: %w%s", x.cfg.TargetAlias, what, w.id, err, hint(err))
}

// fenced handles a partition this process can no longer write: another process initialised
// its bucket's transactional id. Normally the group has moved the partition and this process learns of
// it at its next heartbeat (the revoke or lost callback then drops it). If the group still
// gives the partition to this process after a session timeout, two writers share the id (two
// flows with one group id, or a transaction the target aborted on its timeout) and the engine
// stops: a restart resumes exactly from what the target committed. When the target answered
// INVALID_PRODUCER_ID_MAPPING instead, its coordinator lost the id's producer id and no other
// process is involved: the engine stops with errLostProducerID, which the Supervisor restarts.
func (x *writers) fenced(ps *partState, err error) {
	if errors.Is(err, kerr.InvalidProducerIDMapping) && ps.w != nil {
		ps.w.lostID.Store(true)
	}
	if !ps.markFenced() {
		return
	}
	if ps.w != nil && ps.w.lostID.Load() {
		x.log.Warn("partition stopped: the target's transaction coordinator no longer knows its bucket's producer id; its uncommitted records are aborted, and if the source group still assigns it after a session timeout a new engine takes it up again",
			"topic", ps.topic, "partition", ps.partition, "cluster", x.cfg.TargetAlias, "transactional_id", ps.w.id, "err", err)
	} else {
		x.log.Warn("partition fenced: another kmirror process owns its bucket now; its uncommitted records are aborted and mirrored again by the owner",
			"topic", ps.topic, "partition", ps.partition, "cluster", x.cfg.TargetAlias, "transactional_id", ps.w.id, "err", err)
	}
	go func() {
		select {
		case <-time.After(x.cfg.SessionTimeout + 5*time.Second):
		case <-x.failed:
			return
		}
		if x.owner(ps.tp) != ps {
			return
		}
		if ps.w != nil && ps.w.lostID.Load() {
			x.fail(fmt.Errorf("target cluster %s: partition %s: transactional id %s: %w (INVALID_PRODUCER_ID_MAPPING), and the source group still assigns the partition to this process, so no other process took it over; a new engine initialises the id again and resumes from what the target committed",
				x.cfg.TargetAlias, ps.tp, ps.w.id, errLostProducerID))
			return
		}
		x.fail(fmt.Errorf("target cluster %s: partition %s was fenced (transactional id %s initialised elsewhere) but the source group still assigns it to this process: another flow uses the same group id %s, or the target aborted a transaction on its timeout; give each flow its own group, then restart kmirror (it resumes from what the target committed)",
			x.cfg.TargetAlias, ps.tp, ps.w.id, x.cfg.GroupID))
	}()
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

// owned lists the owned buckets.
func (x *writers) owned() []*bucket {
	x.mu.Lock()
	defer x.mu.Unlock()
	return slices.Collect(maps.Values(x.buckets))
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
