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
// (kverify_verified_offset), and, once a round has a state, the lag (kverify_lag_records),
// the problems found so far (kverify_problems_total), the records of aborted transactions in
// the verified target ranges and the copies of committed records among them
// (kverify_target_aborted_records, kverify_target_aborted_copies: what read_uncommitted
// consumers read on top; not problems of a read_committed comparison) and the target
// partitions whose last round ended at a transaction still open
// (kverify_target_open_transactions). The three target metrics are served from the first
// round that finds an aborted record or an open transaction on: a target written without
// transactions never shows them.
type FollowMetrics struct {
	reg      *prometheus.Registry
	verified *prometheus.GaugeVec
	lag      prometheus.Gauge
	found    prometheus.Gauge
	aborted  prometheus.Gauge
	copies   prometheus.Gauge
	open     prometheus.Gauge
	ready    sync.Once
	txnReady sync.Once
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
		aborted: prometheus.NewGauge(prometheus.GaugeOpts{Name: "kverify_target_aborted_records",
			Help: "Records of aborted transactions in the verified target ranges so far: read_uncommitted consumers read them, read_committed ones do not."}),
		copies: prometheus.NewGauge(prometheus.GaugeOpts{Name: "kverify_target_aborted_copies",
			Help: "Aborted target records that are copies of committed target records: what read_uncommitted consumers read twice."}),
		open: prometheus.NewGauge(prometheus.GaugeOpts{Name: "kverify_target_open_transactions",
			Help: "Target partitions whose last round ended at a transaction still open (its records not compared yet)."}),
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
	var aborted, copies int64
	for _, p := range st.Partitions {
		aborted += p.Aborted
		copies += p.AbortedCopies
	}
	open := 0
	if run != nil {
		ps, _ := run.Result.OpenTransactions()
		open = len(ps)
	}
	if aborted > 0 || open > 0 {
		m.txnReady.Do(func() { m.reg.MustRegister(m.aborted, m.copies, m.open) })
	}
	m.aborted.Set(float64(aborted))
	m.copies.Set(float64(copies))
	m.open.Set(float64(open))
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
