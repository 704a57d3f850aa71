package verify

import (
	"net/http"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"
)

// FollowMetrics are the Prometheus metrics of `kverify diff --follow`, in a registry of their
// own with the Go runtime and process collectors: per partition the verified source offset
// (kverify_verified_offset), and, once a round has a state, the lag (kverify_lag_records) and
// the problems found so far (kverify_problems_total).
type FollowMetrics struct {
	reg      *prometheus.Registry
	verified *prometheus.GaugeVec
	lag      prometheus.Gauge
	found    prometheus.Gauge
	ready    sync.Once
	count    atomic.Int64
}

// NewFollowMetrics returns the metrics, with no state yet.
func NewFollowMetrics() *FollowMetrics {
	m := &FollowMetrics{
		reg: prometheus.NewRegistry(),
		verified: prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: "kverify_verified_offset",
			Help: "Source offset up to which (exclusive) the partition is verified."}, []string{"topic", "partition"}),
		lag: prometheus.NewGauge(prometheus.GaugeOpts{Name: "kverify_lag_records",
			Help: "Source offsets listed by the last round and not verified yet."}),
		found: prometheus.NewGauge(prometheus.GaugeOpts{Name: "kverify_problems_total",
			Help: "Records found missing, duplicated, mismatched or extra so far, plus topic and boundary findings."}),
	}
	m.reg.MustRegister(m.verified, collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	return m
}

// Set shows st, the state after a round (nil: nothing yet), and run, that round (nil before
// the first).
func (m *FollowMetrics) Set(st *State, run *StateRun) {
	if st == nil {
		return
	}
	m.ready.Do(func() { m.reg.MustRegister(m.lag, m.found) })
	m.verified.Reset()
	for _, p := range st.Partitions {
		m.verified.WithLabelValues(st.SourceTopic, strconv.Itoa(int(p.Partition))).Set(float64(p.SourceEnd))
	}
	m.lag.Set(float64(st.Lag()))
	count := st.Differing()
	if run != nil {
		// Topic and boundary problems of this round, not the earlier runs' findings (counted
		// in Differing already).
		for _, p := range run.Result.Problems {
			if !strings.Contains(p, "earlier runs (state ") {
				count++
			}
		}
	}
	m.count.Store(count)
	m.found.Set(float64(count))
}

// Problems is kverify_problems_total as Set last set it.
func (m *FollowMetrics) Problems() int64 { return m.count.Load() }

// Handler serves the metrics at /metrics, nothing else.
func (m *FollowMetrics) Handler() http.Handler {
	mux := http.NewServeMux()
	mux.Handle("/metrics", promhttp.HandlerFor(m.reg, promhttp.HandlerOpts{}))
	return mux
}
