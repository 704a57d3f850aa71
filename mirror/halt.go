package mirror

import (
	"context"
	"sync"
	"sync/atomic"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
)

// A stopped partition is one kmirror refuses to mirror until a condition clears: its
// source topic or target topic is no longer the one the offset map describes (identity.go),
// or its next record is larger than the target takes (recsize.go). The
// partition stops fetching and producing; the process and the other partitions go on. The
// error is logged at ERROR ("partition stopped", with topic, partition, reason, offsets and
// what to do) at once and again at every re-check, with exponential backoff (stopBackoffMin
// doubling up to stopBackoffMax). A re-check that finds the condition cleared resumes the
// partition exactly where it stopped, without a restart. kmirror_partition_stopped shows
// stopped partitions.

const (
	reasonSourceRecreated = "source_recreated"           // the source topic ID changed, or the source log ends below the map
	reasonSourceTruncated = "source_truncated"           // same topic ID, but the source log ends below the map
	reasonTargetRecreated = "target_recreated"           // the target topic ID changed, or the target log ends below the map
	reasonEitherRecreated = "source_or_target_recreated" // no topic IDs, and a mapped record's copy differs
	reasonTooLarge        = "record_too_large"
)

// stop is why a partition is stopped and how to find out whether it still is.
type stop struct {
	ps      *partState
	reason  string
	cluster string // the alias of the cluster where the problem is
	err     error  // names topic, partition, offsets and what to do
	attrs   []any  // extra log attributes (offset, size, limit)
	// recheck finds out whether the condition still holds. It returns false when it has
	// cleared and the partition can go on (recheck has then restored fetching at the right
	// offset), true when it still holds (recheck may have replaced the stop), and an error
	// when it could not tell (the stop stays; the next attempt is after the backoff).
	recheck func(ctx context.Context, st *stop) (bool, error)

	since    time.Time
	next     time.Time
	wait     time.Duration
	attempts int
}

// stopSet is the engine's set of stopped partitions and the safety loop's queue of
// partitions to check at once. Its zero value is ready; the engine holds one. Topic
// identities (identity.go) and record size limits (recsize.go) have types and locks of
// their own.
type stopSet struct {
	once sync.Once
	mu   sync.Mutex
	n    atomic.Int32 // len(byTP): the hot path reads it without the lock
	// byTP are the stopped partitions.
	byTP map[tp]*stop
	// checkNow asks the safety loop to check a partition now (an out-of-range fetch).
	checkNow chan tp

	backoffMin, backoffMax time.Duration
}

func (s *stopSet) init() {
	s.once.Do(func() {
		s.mu.Lock()
		defer s.mu.Unlock()
		s.byTP = map[tp]*stop{}
		s.checkNow = make(chan tp, 256)
		if s.backoffMin == 0 {
			s.backoffMin = time.Second
		}
		if s.backoffMax == 0 {
			s.backoffMax = 5 * time.Minute
		}
	})
}

// isStopped says whether t is stopped; cheap when nothing is.
func (e *Engine) isStopped(t tp) bool {
	if e.stopped.n.Load() == 0 {
		return false
	}
	e.stopped.mu.Lock()
	defer e.stopped.mu.Unlock()
	_, ok := e.stopped.byTP[t]
	return ok
}

// stopPartition stops st.ps's partition: no more fetching or producing until st.recheck says
// the condition cleared. A stop that replaces one for the same partition and reason (a
// re-check that found the same problem) keeps its backoff.
func (e *Engine) stopPartition(st *stop) {
	e.stopped.init()
	now := time.Now()
	e.stopped.mu.Lock()
	old, had := e.stopped.byTP[st.ps.tp]
	st.since, st.wait = now, e.stopped.backoffMin
	if had && old.reason == st.reason {
		st.since, st.wait, st.attempts = old.since, min(old.wait*2, e.stopped.backoffMax), old.attempts
	}
	st.attempts++
	st.next = now.Add(st.wait)
	e.stopped.byTP[st.ps.tp] = st
	e.stopped.n.Store(int32(len(e.stopped.byTP)))
	e.stopped.mu.Unlock()
	if e.src != nil {
		e.src.PauseFetchPartitions(map[string][]int32{st.ps.topic: {st.ps.partition}})
	}
	e.reportStop(st)
}

func (e *Engine) reportStop(st *stop) {
	attrs := append([]any{"topic", st.ps.topic, "partition", st.ps.partition, "reason", st.reason, "cluster", st.cluster},
		st.attrs...)
	attrs = append(attrs, "attempt", st.attempts, "stopped_seconds", int64(time.Since(st.since).Seconds()),
		"next_check_seconds", st.wait.Seconds(), "err", st.err.Error())
	e.log.Error("partition stopped", attrs...)
}

// unstop resumes fetching t at offset next (the partition's next source offset).
func (e *Engine) unstop(t tp, next int64) {
	if e.src != nil {
		// Setting the offset drops what was fetched past it before the stop.
		e.src.SetOffsets(map[string]map[int32]kgo.EpochOffset{t.topic: {t.partition: {Epoch: -1, Offset: next}}})
	}
	e.stopped.mu.Lock()
	st := e.stopped.byTP[t]
	delete(e.stopped.byTP, t)
	e.stopped.n.Store(int32(len(e.stopped.byTP)))
	e.stopped.mu.Unlock()
	if e.src != nil {
		e.src.ResumeFetchPartitions(map[string][]int32{t.topic: {t.partition}})
	}
	if st != nil {
		e.log.Info("partition resumed: the condition it stopped for has cleared", "topic", t.topic, "partition", t.partition,
			"reason", st.reason, "offset", next, "stopped_seconds", int64(time.Since(st.since).Seconds()))
	}
}

// forgetStops drops the stops of revoked partitions (their next owner checks again) and
// unpauses them, so that a partition assigned back later is fetched.
func (e *Engine) forgetStops(revoked map[string][]int32) {
	if e.stopped.n.Load() == 0 {
		return
	}
	unpause := map[string][]int32{}
	e.stopped.mu.Lock()
	for t, ps := range revoked {
		for _, p := range ps {
			if _, ok := e.stopped.byTP[tp{t, p}]; ok {
				delete(e.stopped.byTP, tp{t, p})
				unpause[t] = append(unpause[t], p)
			}
		}
	}
	e.stopped.n.Store(int32(len(e.stopped.byTP)))
	e.stopped.mu.Unlock()
	if len(unpause) > 0 && e.src != nil {
		e.src.ResumeFetchPartitions(unpause)
	}
}

// safetyLoop re-checks stopped partitions when their backoff is due, checks owned partitions
// for recreated topics every checkEvery, and at once when a fetch was out of range.
func (e *Engine) safetyLoop(ctx context.Context) {
	e.stopped.init()
	every := e.ident.checkEvery
	if every == 0 {
		every = 30 * time.Second
		if e.cfg.RefreshTopics && e.cfg.RefreshTopicsInterval > 0 {
			every = min(max(e.cfg.RefreshTopicsInterval, 100*time.Millisecond), every)
		}
	}
	tick := time.NewTicker(min(every, 100*time.Millisecond))
	defer tick.Stop()
	lastCheck := time.Now()
	for {
		select {
		case <-ctx.Done():
			return
		case t := <-e.stopped.checkNow:
			e.checkOutOfRange(ctx, t)
		case now := <-tick.C:
			e.recheckDue(ctx, now)
			if now.Sub(lastCheck) >= every {
				lastCheck = now
				e.checkRunning(ctx)
			}
		}
	}
}

func (e *Engine) recheckDue(ctx context.Context, now time.Time) {
	if e.stopped.n.Load() == 0 {
		return
	}
	e.stopped.mu.Lock()
	var due []*stop
	for _, st := range e.stopped.byTP {
		if !now.Before(st.next) {
			due = append(due, st)
		}
	}
	e.stopped.mu.Unlock()
	for _, st := range due {
		if ctx.Err() != nil {
			return
		}
		still, err := st.recheck(ctx, st)
		if err != nil {
			e.log.Warn("re-check of a stopped partition failed", "topic", st.ps.topic, "partition", st.ps.partition, "reason", st.reason, "err", err)
		}
		if !still && err == nil {
			continue // recheck resumed it
		}
		e.stopped.mu.Lock()
		cur, ok := e.stopped.byTP[st.ps.tp]
		if ok && cur == st { // not replaced by the re-check: report it again
			st.attempts++
			st.wait = min(st.wait*2, e.stopped.backoffMax)
			st.next = time.Now().Add(st.wait)
		}
		e.stopped.mu.Unlock()
		if ok && cur == st && err == nil {
			e.reportStop(st)
		}
	}
}

// listedOffset returns one partition's listed offset from l.
func listedOffset(l kadm.ListedOffsets, topic string, partition int32) (int64, bool) {
	o, err := offsetOf(l, topic, partition)
	return o, err == nil
}
