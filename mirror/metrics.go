package mirror

import (
	"fmt"
	"io"
	"net/http"
	"sort"
	"sync/atomic"
	"time"
)

// metrics are the engine's counters; WriteMetrics renders them with the per-partition gauges.
type metrics struct {
	records     atomic.Int64
	bytes       atomic.Int64
	persistedAt atomic.Int64 // unix nanoseconds of the last successful map persist
	checkpoint  atomic.Int64 // unix nanoseconds of the last checkpoint / group sync round
}

func (m *metrics) add(records, bytes int64) {
	m.records.Add(records)
	m.bytes.Add(bytes)
}

func (m *metrics) persisted(t time.Time) { m.persistedAt.Store(t.UnixNano()) }

// CheckpointDone records that a round of checkpoints or group offset sync finished at t, for
// the kmirror_checkpoint_age_seconds gauge. The groupsync loop calls it.
func (e *Engine) CheckpointDone(t time.Time) { e.metrics.checkpoint.Store(t.UnixNano()) }

// WriteMetrics writes the engine's metrics in the Prometheus text exposition format.
func (e *Engine) WriteMetrics(w io.Writer) {
	now := time.Now()
	fmt.Fprintf(w, "# HELP kmirror_records_total Records mirrored (acknowledged by the target).\n# TYPE kmirror_records_total counter\nkmirror_records_total %d\n", e.metrics.records.Load())
	fmt.Fprintf(w, "# HELP kmirror_bytes_total Key and value bytes mirrored.\n# TYPE kmirror_bytes_total counter\nkmirror_bytes_total %d\n", e.metrics.bytes.Load())
	age := func(ns int64) float64 {
		if ns == 0 {
			return -1
		}
		return now.Sub(time.Unix(0, ns)).Seconds()
	}
	fmt.Fprintf(w, "# HELP kmirror_offset_map_persist_age_seconds Seconds since the offset map was last persisted (-1: never).\n# TYPE kmirror_offset_map_persist_age_seconds gauge\nkmirror_offset_map_persist_age_seconds %g\n", age(e.metrics.persistedAt.Load()))
	fmt.Fprintf(w, "# HELP kmirror_checkpoint_age_seconds Seconds since the last checkpoint or group sync round (-1: never).\n# TYPE kmirror_checkpoint_age_seconds gauge\nkmirror_checkpoint_age_seconds %g\n", age(e.metrics.checkpoint.Load()))

	e.mu.Lock()
	states := make([]*partState, 0, len(e.parts))
	for _, ps := range e.parts {
		states = append(states, ps)
	}
	e.mu.Unlock()
	sort.Slice(states, func(i, j int) bool {
		a, b := states[i], states[j]
		return a.topic < b.topic || a.topic == b.topic && a.partition < b.partition
	})
	fmt.Fprintf(w, "# HELP kmirror_owned_partitions Source partitions this process mirrors.\n# TYPE kmirror_owned_partitions gauge\nkmirror_owned_partitions %d\n", len(states))
	fmt.Fprintf(w, "# HELP kmirror_replication_lag_records Source records (and transaction markers) not yet mirrored, per partition.\n# TYPE kmirror_replication_lag_records gauge\n")
	for _, ps := range states {
		fmt.Fprintf(w, "kmirror_replication_lag_records{topic=%q,partition=\"%d\"} %d\n", ps.topic, ps.partition, ps.lag())
	}
	fmt.Fprintf(w, "# HELP kmirror_map_segments Segments in the exact offset map, per partition.\n# TYPE kmirror_map_segments gauge\n")
	for _, ps := range states {
		ps.mu.Lock()
		n := len(ps.pm.Segments)
		ps.mu.Unlock()
		fmt.Fprintf(w, "kmirror_map_segments{topic=%q,partition=\"%d\"} %d\n", ps.topic, ps.partition, n)
	}
	e.stopMetrics(w) // halt.go
}

// MetricsHandler serves WriteMetrics over HTTP.
func (e *Engine) MetricsHandler() http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "text/plain; version=0.0.4")
		e.WriteMetrics(w)
	})
}
