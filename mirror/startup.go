package mirror

import (
	"context"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
	"golang.org/x/sync/errgroup"

	"github.com/kmigrate/kmigrate/logread"
)

// Start-up timing. Time to first record is measured from the process start (or,
// when the caller does not say when that was, from Run) to the first record the target
// acknowledged: the produce response that gives the record its target offset. With
// transactions a read_committed reader sees it at the partition's first commit, up to
// CommitLatency later; a read_uncommitted reader sees it at once.
//
// Each phase of start-up is the time from the end of the previous one, in the order they
// end, so the phases add up to the time to the first record: connect (both clusters asked at
// once), source topics (listed), consumer (created: the group join starts), target topics
// (offset map, offset syncs and mirrored topics made ready, at once and while the group is
// joined), group join (to the assignment callback; after target topics when the join is the
// slower), then per assignment ensure targets, fence (transactional ids initialised), map load
// (map read, topic identities and log bounds, at once), tail check (per-partition identity
// checks and tail reconciliation, from one prefetch per broker: startup_read.go), finish
// (identity and origin records written), producer metadata, first fetch (to the first
// fetched records) and first produce (to its acknowledgement). At the first record one INFO
// line "first record produced" carries since_start_ms, every phase in phases_ms and the
// durations of the steps run at once in concurrent_ms; the start-up benchmark
// (integration/mirror_startup_test.go, make bench-startup) reads it.
//
// What may run at once and what may not: the target's topics are only needed once partitions
// are assigned, so they are made ready during the join, and the assignment waits for them.
// Nothing of the target is read before the fence (transactional ids initialised); after it the
// reads are independent and run together. The checks themselves are unchanged.

// startup is the engine's start-up clock. Marks after the first record are ignored.
type startup struct {
	mu     sync.Mutex
	begun  time.Time // process start, or Run
	last   time.Time // end of the previous phase
	phases []phaseTime
	done   bool // the first record was acknowledged
	// fetched is set at the first fetched records.
	fetched bool
	total   time.Duration // begun to the first acknowledged record
	// parts are the durations of steps run at once within a phase (for the log only).
	parts []phaseTime
	// logged is set once the first acknowledged record logged the start-up figures.
	logged atomic.Bool
	// prepDone is closed when the target's topics are ready (prepareTarget), with prepErr.
	prepDone chan struct{}
	prepErr  error
}

type phaseTime struct {
	name string
	d    time.Duration
}

// SetStartedAt tells the engine when the process started, so that the time to the first
// record counts what happened before Run (flag and configuration parsing). Call it before Run.
func (e *Engine) SetStartedAt(t time.Time) {
	e.boot.mu.Lock()
	defer e.boot.mu.Unlock()
	e.boot.begun, e.boot.last = t, t
}

// begin starts the clock at Run unless SetStartedAt set it; the time before Run is the phase
// "process".
func (s *startup) begin(now time.Time) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.begun.IsZero() {
		s.begun, s.last = now, now
		return
	}
	s.phases = append(s.phases, phaseTime{"process", now.Sub(s.last)})
	s.last = now
}

// mark ends phase name now.
func (s *startup) mark(name string) {
	now := time.Now()
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.done || s.begun.IsZero() {
		return
	}
	s.phases = append(s.phases, phaseTime{name, now.Sub(s.last)})
	s.last = now
}

// first ends phase name at the first call and returns true then, with the total and phases.
func (s *startup) first(name string) (time.Duration, []phaseTime, bool) {
	now := time.Now()
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.done || s.begun.IsZero() {
		return 0, nil, false
	}
	s.done = true
	s.phases = append(s.phases, phaseTime{name, now.Sub(s.last)})
	s.total = now.Sub(s.begun)
	return s.total, s.phases, true
}

// StartUpPhase is one phase of start-up and how long it took.
type StartUpPhase struct {
	Name string
	Took time.Duration
}

// FirstRecord returns the time from the start (SetStartedAt, else Run) to the first record the
// target acknowledged, and the start-up phases, once there was one; ok is false before.
func (e *Engine) FirstRecord() (since time.Duration, phases []StartUpPhase, ok bool) {
	e.boot.mu.Lock()
	defer e.boot.mu.Unlock()
	if !e.boot.done {
		return 0, nil, false
	}
	for _, p := range e.boot.phases {
		phases = append(phases, StartUpPhase{p.name, p.d})
	}
	return e.boot.total, phases, true
}

// timed runs fn and notes how long it took as a step of the current phase, run at once with
// others (logged in concurrent_ms, not part of the phases' sum).
func (s *startup) timed(name string, fn func() error) error {
	t := time.Now()
	err := fn()
	s.mu.Lock()
	defer s.mu.Unlock()
	if !s.done {
		s.parts = append(s.parts, phaseTime{name, time.Since(t)})
	}
	return err
}

// fetchedOnce ends the phase "first_fetch" at the first fetched records.
func (s *startup) fetchedOnce() {
	s.mu.Lock()
	seen := s.fetched
	s.fetched = true
	s.mu.Unlock()
	if !seen {
		s.mark("first_fetch")
	}
}

// produced is called at every acknowledged record; the first one logs the start-up figures.
func (e *Engine) produced() {
	if e.boot.logged.Load() {
		return
	}
	total, phases, ok := e.boot.first("first_produce")
	e.boot.logged.Store(true)
	if !ok {
		return
	}
	attrs := make([]any, 0, len(phases))
	for _, p := range phases {
		attrs = append(attrs, slog.Int64(p.name, p.d.Milliseconds()))
	}
	e.boot.mu.Lock()
	var steps []any
	for _, p := range e.boot.parts {
		steps = append(steps, slog.Int64(p.name, p.d.Milliseconds()))
	}
	e.boot.mu.Unlock()
	e.log.Info("first record produced", "since_start_ms", total.Milliseconds(), slog.Group("phases_ms", attrs...), slog.Group("concurrent_ms", steps...))
}

// resetLeaders starts a resume with empty leader caches and no prefetched reads
// (startup_read.go): what an earlier resume learnt may be stale (a moved leader is forgotten
// by the read that meets it anyway).
func (e *Engine) resetLeaders() *resumeReads {
	rr := &resumeReads{}
	e.leaders.Store(rr)
	return rr
}

// endReads drops rr's caches at the end of its resume (unless a newer resume replaced them).
func (e *Engine) endReads(rr *resumeReads) { e.leaders.CompareAndSwap(rr, nil) }

// leadersOf returns the leader cache of cl's cluster, or nil for a client of neither.
func (e *Engine) leadersOf(cl *kgo.Client) *logread.Leaders {
	l := e.leaders.Load()
	switch {
	case l == nil:
		return nil
	case cl == e.dst:
		return &l.dst
	case cl == e.srcCl:
		return &l.src
	}
	return nil
}

// readResume is readRange for a resume: served from the prefetched answers when they cover
// the range (startup_read.go), else read on its own with the resume's leader cache.
func (e *Engine) readResume(ctx context.Context, cl *kgo.Client, topic string, partition int32, from, end int64, committed bool, fn func(*kgo.Record) (bool, error)) error {
	if from >= end {
		return nil
	}
	if ok, err := e.cachedRange(cl, topic, partition, from, end, committed, fn); ok {
		return err
	}
	return readRangeWith(ctx, cl, e.leadersOf(cl), topic, partition, from, end, committed, fn)
}

// prepareTarget makes the target ready in the background, while the consumer joins the group:
// the internal topics (offset map, offset syncs) and the mirrored topics, all at once. The
// assignment callback waits for it (waitPrepared) before it reads or writes the target; an
// error stops the engine (fail), as it stopped Run before the group join when the steps ran
// one after the other.
func (e *Engine) prepareTarget(ctx context.Context, topics map[string]int) {
	e.boot.prepDone = make(chan struct{})
	go func() {
		defer close(e.boot.prepDone)
		var eg errgroup.Group
		eg.Go(func() error {
			return e.boot.timed("map_topic", func() error { return e.ensureInternal(ctx, e.cfg.MapTopic) })
		})
		if e.cfg.OffsetSyncsOnTarget {
			eg.Go(func() error {
				return e.boot.timed("offset_syncs_topic", func() error { return e.ensureInternal(ctx, e.cfg.OffsetSyncsTopic) })
			})
		}
		eg.Go(func() error {
			return e.boot.timed("mirrored_topics", func() error { return e.ensureTargets(ctx, topics) })
		})
		e.boot.prepErr = eg.Wait()
		if e.boot.prepErr == nil {
			e.boot.prepErr = e.access.checkCreated(ctx, topics)
		}
		e.boot.mark("target_topics")
		if e.boot.prepErr != nil && ctx.Err() == nil {
			e.fail(e.boot.prepErr)
		}
	}()
}

// waitPrepared waits for prepareTarget and returns its error.
func (e *Engine) waitPrepared(ctx context.Context) error {
	select {
	case <-e.boot.prepDone:
		return e.boot.prepErr
	case <-ctx.Done():
		return ctx.Err()
	}
}
