package mirror

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"net"
	"net/http"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
)

// IsTransient reports whether err, returned by Run, is a failure that starting the engine
// again gets past: a retriable Kafka error that franz-go stopped retrying (a transaction
// coordinator that is moving or loading, a leader election, a request timeout) or a broken
// connection. A transaction's records then failed and its outcome is an abort, so only what
// the target committed counts, which is exactly what a new engine resumes from.
//
// It is true as well for a bucket whose transaction coordinator lost its producer id while
// the source group still assigns it to this process (errLostProducerID): a new engine
// initialises the id again.
//
// It is false for everything a restart alone does not mend or that an operator must see: a
// fenced partition, the commit bound (its error names a transaction the target may hold in
// PrepareCommit, which needs the target broker restarted first), a topic that disappeared
// (UNKNOWN_TOPIC_OR_PARTITION after franz-go's retries), authorization, configuration, and
// every safety stop of the engine.
func IsTransient(err error) bool {
	if errors.Is(err, errLostProducerID) {
		return true
	}
	if err == nil || isFencedErr(err) || errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) {
		return false
	}
	if ke, ok := errors.AsType[*kerr.Error](err); ok {
		return ke.Retriable && ke != kerr.UnknownTopicOrPartition
	}
	if _, ok := errors.AsType[net.Error](err); ok {
		return true
	}
	return errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) ||
		errors.Is(err, syscall.ECONNREFUSED) || errors.Is(err, syscall.ECONNRESET) || errors.Is(err, syscall.EPIPE)
}

// Supervisor runs engines one after another: when an engine stops on a transient error
// (IsTransient) it starts a new one after a pause, which resumes every partition from what
// the target committed, as a restarted process would, without the process leaving. The
// restarts are bounded: MaxRestarts in a row, a run that lasted HealthyAfter counting as a
// fresh start. Any other error, or one restart too many, is returned.
type Supervisor struct {
	// New creates the next engine.
	New func() (*Engine, error)
	Log *slog.Logger
	// MaxRestarts bounds restarts in a row (default 5); HealthyAfter is how long an engine
	// must run for its stop to count as the first again (default 10 minutes).
	MaxRestarts  int
	HealthyAfter time.Duration
	// Backoff is the pause before restart n (1, 2, ...); default 1 s doubling to 30 s.
	Backoff func(n int) time.Duration

	current  atomic.Pointer[Engine]
	restarts atomic.Int64
}

// Restarts is how many engines the supervisor restarted so far.
func (s *Supervisor) Restarts() int64 { return s.restarts.Load() }

// Current is the engine running now (or the last one, between a stop and its restart); nil
// before the first started.
func (s *Supervisor) Current() *Engine { return s.current.Load() }

func (s *Supervisor) backoff(n int) time.Duration {
	if s.Backoff != nil {
		return s.Backoff(n)
	}
	return min(time.Second<<min(n-1, 5), 30*time.Second)
}

// Run runs engines until ctx is done (nil after the drain, as Engine.Run) or an engine stops
// on an error it does not restart after.
func (s *Supervisor) Run(ctx context.Context) error {
	maxRestarts, healthy := s.MaxRestarts, s.HealthyAfter
	if maxRestarts <= 0 {
		maxRestarts = 5
	}
	if healthy <= 0 {
		healthy = 10 * time.Minute
	}
	inARow := 0
	for {
		e, err := s.New()
		if err != nil {
			return err
		}
		e.metrics.restarts.Store(s.restarts.Load())
		s.current.Store(e)
		began := time.Now()
		err = e.Run(ctx)
		if err == nil || ctx.Err() != nil || !IsTransient(err) {
			return err
		}
		if time.Since(began) >= healthy {
			inARow = 0
		}
		inARow++
		if inARow > maxRestarts {
			s.Log.Error("kmirror restarted its engine too often; stopping", "restarts_in_a_row", inARow-1, "err", err)
			return err
		}
		pause := s.backoff(inARow)
		s.Log.Warn("engine stopped on a transient error; starting a new one, which resumes every partition from what the target committed",
			"err", err, "restart", inARow, "of", maxRestarts, "in_ms", pause.Milliseconds())
		s.restarts.Add(1)
		select {
		case <-ctx.Done():
			return nil
		case <-time.After(pause):
		}
	}
}

// MetricsHandler serves the current engine's metrics, kmirror_engine_restarts_total among
// them (a new engine starts its other counters again, which Prometheus reads as a reset).
func (s *Supervisor) MetricsHandler() http.Handler { return s.serveCurrent((*Engine).MetricsHandler) }

// ReadyHandler answers for the current engine: 503 from an engine's stop to its successor's
// resumed partitions.
func (s *Supervisor) ReadyHandler() http.Handler { return s.serveCurrent((*Engine).ReadyHandler) }

// serveCurrent serves the handler of the engine running at each request (503 before the first).
func (s *Supervisor) serveCurrent(h func(*Engine) http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		e := s.current.Load()
		if e == nil {
			http.Error(w, "not ready: starting", http.StatusServiceUnavailable)
			return
		}
		h(e).ServeHTTP(w, r)
	})
}
