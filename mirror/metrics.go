package mirror

import (
	"io"
	"net"
	"net/http"
	"sort"
	"strconv"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	"github.com/prometheus/common/expfmt"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/plugin/kprom"
)

// LatencyBuckets are the upper bounds, in seconds, of kmirror_replication_latency_seconds:
// from a few milliseconds (a mirror keeping up on one network) to ten minutes (a mirror
// catching up on a backlog, or a target that stalled).
var LatencyBuckets = []float64{.002, .005, .01, .025, .05, .1, .25, .5, 1, 2.5, 5, 10, 30, 60, 120, 300, 600}

// metrics are the engine's Prometheus metrics, in a registry of the engine's own (several
// engines in one process, as in tests, never share or clash).
type metrics struct {
	reg         *prometheus.Registry
	records     prometheus.Counter
	bytes       prometheus.Counter
	latency     prometheus.Histogram
	fetchErrors prometheus.Counter
	prodErrors  prometheus.Counter
	commits     *prometheus.CounterVec // commits of transactions by reason (commit.go)
	commitWait  prometheus.Histogram   // a committed transaction's first record's wait for its commit
	persistedAt atomic.Int64           // unix nanoseconds of the last successful map persist
	checkpoint  atomic.Int64           // unix nanoseconds of the last checkpoint / group sync round
	restarts    atomic.Int64           // engines the Supervisor restarted before this one
	// heartbeats and heartbeatErrors count MM2 heartbeats written and attempts that failed.
	heartbeats, heartbeatErrors prometheus.Counter
	// kafka are the franz-go client metrics (kprom), one set per client role.
	kafka map[string]*kafkaMetrics
}

// Client roles, the value of the client label of the kmirror_kafka_* metrics.
const (
	roleSource      = "source"       // the source consumer (group member, fetches records)
	roleSourceAdmin = "source_admin" // source metadata, resume reads, group offset sync reads
	roleTarget      = "target"       // every producer to the target, and target admin and reads
)

// newMetrics registers the engine's metrics, the Go runtime's and the process's in a new
// registry. e's gauges are read at each scrape.
func newMetrics(e *Engine) *metrics {
	m := &metrics{reg: prometheus.NewRegistry(), kafka: map[string]*kafkaMetrics{}}
	m.records = prometheus.NewCounter(prometheus.CounterOpts{Name: "kmirror_records_total",
		Help: "Records mirrored (acknowledged by the target)."})
	m.bytes = prometheus.NewCounter(prometheus.CounterOpts{Name: "kmirror_bytes_total",
		Help: "Key and value bytes mirrored."})
	m.latency = prometheus.NewHistogram(prometheus.HistogramOpts{Name: "kmirror_replication_latency_seconds",
		Help:    "Seconds from a source record's timestamp (CreateTime, or LogAppendTime on such topics) to the target's acknowledgement of its copy; clock skew between the source's producers and kmirror shifts it (negative values count as 0).",
		Buckets: LatencyBuckets})
	m.fetchErrors = prometheus.NewCounter(prometheus.CounterOpts{Name: "kmirror_fetch_errors_total",
		Help: "Source fetch errors (retried, or stopping the engine or a partition; the log says which)."})
	m.prodErrors = prometheus.NewCounter(prometheus.CounterOpts{Name: "kmirror_produce_errors_total",
		Help: "Records the target refused (a fenced partition's, or the error that stopped the engine)."})
	m.commits = prometheus.NewCounterVec(prometheus.CounterOpts{Name: "kmirror_commits_total",
		Help: "Transactions committed, by what decided the commit: bound (the oldest record's wait reached kmirror.commit.latency.max.ms), pause (the bucket's flow paused), handover (a revoke or the stop)."},
		[]string{"reason"})
	m.commitWait = prometheus.NewHistogram(prometheus.HistogramOpts{Name: "kmirror_commit_wait_seconds",
		Help:    "Seconds from the copy of a committed transaction's first record to the end of its commit: the longest any of its records waited to be visible to read_committed readers, which kmirror.commit.latency.max.ms bounds (with fencing transactions).",
		Buckets: LatencyBuckets})
	m.heartbeats = prometheus.NewCounter(prometheus.CounterOpts{Name: "kmirror_heartbeats_total",
		Help: "MM2 heartbeats the target acknowledged (emit.heartbeats.enabled)."})
	m.heartbeatErrors = prometheus.NewCounter(prometheus.CounterOpts{Name: "kmirror_heartbeat_errors_total",
		Help: "Heartbeats not emitted: the heartbeats topic could not be created or the target refused the record (tried again at the next interval; the log says why)."})
	restarts := prometheus.NewCounterFunc(prometheus.CounterOpts{Name: "kmirror_engine_restarts_total",
		Help: "Engines the process started again after one stopped on a transient error (the log says which); the other counters start again with each engine."},
		func() float64 { return float64(m.restarts.Load()) })
	m.reg.MustRegister(m.records, m.bytes, m.latency, m.fetchErrors, m.prodErrors, m.commits, m.commitWait, m.heartbeats, m.heartbeatErrors, restarts, engineCollector{e},
		collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	for _, role := range []string{roleSource, roleSourceAdmin, roleTarget} {
		m.kafka[role] = &kafkaMetrics{m: kprom.NewMetrics("kmirror", kprom.Subsystem("kafka"), kprom.Registry(m.reg),
			kprom.WithStaticLabel(prometheus.Labels{"client": role}))}
	}
	return m
}

// acked counts one record the target acknowledged, with its source timestamp.
func (m *metrics) acked(bytes int64, ts, now time.Time) {
	m.records.Inc()
	m.bytes.Add(float64(bytes))
	m.latency.Observe(max(0, now.Sub(ts).Seconds()))
}

func (m *metrics) persisted(t time.Time) { m.persistedAt.Store(t.UnixNano()) }

// clientHooks returns the option that feeds a client's events to the kprom metrics of role.
// The first client of a role (primary) registers them and its buffer gauges; the others of
// the role add to the same counters.
func (m *metrics) clientHooks(role string, primary bool) kgo.Opt {
	km := m.kafka[role]
	if primary {
		return kgo.WithHooks(primaryHooks{km})
	}
	return kgo.WithHooks(forwardHooks{km})
}

// CheckpointDone records that a round of checkpoints or group offset sync finished at t, for
// the kmirror_checkpoint_age_seconds gauge. The groupsync loop calls it.
func (e *Engine) CheckpointDone(t time.Time) { e.metrics.checkpoint.Store(t.UnixNano()) }

// Registry is the engine's Prometheus registry: the engine's metrics, the franz-go client
// metrics (kmirror_kafka_*), the Go runtime's (go_*) and the process's (process_*).
func (e *Engine) Registry() *prometheus.Registry { return e.metrics.reg }

// WriteMetrics writes the engine's metrics in the Prometheus text exposition format.
func (e *Engine) WriteMetrics(w io.Writer) error {
	mfs, err := e.metrics.reg.Gather()
	if err != nil {
		return err
	}
	enc := expfmt.NewEncoder(w, expfmt.NewFormat(expfmt.TypeTextPlain))
	for _, mf := range mfs {
		if err := enc.Encode(mf); err != nil {
			return err
		}
	}
	return nil
}

// MetricsHandler serves the engine's registry over HTTP (/metrics).
func (e *Engine) MetricsHandler() http.Handler {
	return promhttp.HandlerFor(e.metrics.reg, promhttp.HandlerOpts{ErrorHandling: promhttp.ContinueOnError})
}

// engineCollector reads the engine's gauges at each scrape.
type engineCollector struct{ e *Engine }

var (
	descPersistAge = prometheus.NewDesc("kmirror_offset_map_persist_age_seconds",
		"Seconds since the offset map was last persisted (-1: never).", nil, nil)
	descCheckpointAge = prometheus.NewDesc("kmirror_checkpoint_age_seconds",
		"Seconds since the last checkpoint or group sync round (-1: never).", nil, nil)
	descOwned = prometheus.NewDesc("kmirror_owned_partitions",
		"Source partitions this process mirrors.", nil, nil)
	descLag = prometheus.NewDesc("kmirror_replication_lag_records",
		"Source records (and transaction markers) not yet mirrored, per partition.", []string{"topic", "partition"}, nil)
	descSegments = prometheus.NewDesc("kmirror_map_segments",
		"Segments in the exact offset map, per partition.", []string{"topic", "partition"}, nil)
	descStopped = prometheus.NewDesc("kmirror_partition_stopped",
		"Partitions kmirror refuses to mirror until the logged condition clears (1 per partition, by reason).", []string{"topic", "partition", "reason"}, nil)
	descStoppedCount = prometheus.NewDesc("kmirror_stopped_partitions",
		"Owned partitions stopped (the sum of kmirror_partition_stopped; 0 when none is).", nil, nil)
	descReady = prometheus.NewDesc("kmirror_ready",
		"1 when every partition the group assigned to this process is resumed and mirrored (as /readyz), else 0.", nil, nil)
)

func (c engineCollector) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range []*prometheus.Desc{descPersistAge, descCheckpointAge, descOwned, descLag, descSegments, descStopped, descStoppedCount, descReady} {
		ch <- d
	}
}

func (c engineCollector) Collect(ch chan<- prometheus.Metric) {
	e := c.e
	now := time.Now()
	age := func(ns int64) float64 {
		if ns == 0 {
			return -1
		}
		return now.Sub(time.Unix(0, ns)).Seconds()
	}
	gauge := func(d *prometheus.Desc, v float64, labels ...string) {
		ch <- prometheus.MustNewConstMetric(d, prometheus.GaugeValue, v, labels...)
	}
	gauge(descPersistAge, age(e.metrics.persistedAt.Load()))
	gauge(descCheckpointAge, age(e.metrics.checkpoint.Load()))
	states := e.owned()
	sort.Slice(states, func(i, j int) bool {
		a, b := states[i], states[j]
		return a.topic < b.topic || a.topic == b.topic && a.partition < b.partition
	})
	gauge(descOwned, float64(len(states)))
	for _, ps := range states {
		p := strconv.Itoa(int(ps.partition))
		gauge(descLag, float64(ps.lag()), ps.topic, p)
		ps.mu.Lock()
		n := len(ps.pm.Segments)
		ps.mu.Unlock()
		gauge(descSegments, float64(n), ps.topic, p)
	}
	stopped := e.stoppedPartitions()
	for _, s := range stopped {
		gauge(descStopped, 1, s.topic, strconv.Itoa(int(s.partition)), s.reason)
	}
	gauge(descStoppedCount, float64(len(stopped)))
	ready := 0.0
	if ok, _ := e.Ready(); ok {
		ready = 1
	}
	gauge(descReady, ready)
}

// stoppedPartition is one sample of kmirror_partition_stopped.
type stoppedPartition struct {
	tp
	reason string
}

// stoppedPartitions lists the stopped partitions (halt.go).
func (e *Engine) stoppedPartitions() []stoppedPartition {
	e.stopped.mu.Lock()
	defer e.stopped.mu.Unlock()
	out := make([]stoppedPartition, 0, len(e.stopped.byTP))
	for t, st := range e.stopped.byTP {
		out = append(out, stoppedPartition{t, st.reason})
	}
	return out
}

// kafkaMetrics are the kprom metrics of one client role. ready is set once the role's primary
// client registered them: events of the role's other clients before then are dropped, not
// counted into collectors that do not exist yet.
type kafkaMetrics struct {
	m     *kprom.Metrics
	ready atomic.Bool
}

// primaryHooks are kprom's hooks for the client that registers the role's metrics.
type primaryHooks struct{ *kafkaMetrics }

func (h primaryHooks) OnNewClient(cl *kgo.Client) {
	h.m.OnNewClient(cl)
	h.ready.Store(true)
}

func (h primaryHooks) OnClientClosed(cl *kgo.Client) {
	h.ready.Store(false)
	h.m.OnClientClosed(cl)
}

func (h primaryHooks) OnBrokerConnect(meta kgo.BrokerMetadata, d time.Duration, c net.Conn, err error) {
	forwardHooks(h).OnBrokerConnect(meta, d, c, err)
}
func (h primaryHooks) OnBrokerDisconnect(meta kgo.BrokerMetadata, c net.Conn) {
	forwardHooks(h).OnBrokerDisconnect(meta, c)
}
func (h primaryHooks) OnBrokerThrottle(meta kgo.BrokerMetadata, d time.Duration, after bool) {
	forwardHooks(h).OnBrokerThrottle(meta, d, after)
}
func (h primaryHooks) OnProduceBatchWritten(meta kgo.BrokerMetadata, t string, p int32, bm kgo.ProduceBatchMetrics) {
	forwardHooks(h).OnProduceBatchWritten(meta, t, p, bm)
}
func (h primaryHooks) OnFetchBatchRead(meta kgo.BrokerMetadata, t string, p int32, bm kgo.FetchBatchMetrics) {
	forwardHooks(h).OnFetchBatchRead(meta, t, p, bm)
}
func (h primaryHooks) OnBrokerRead(meta kgo.BrokerMetadata, key int16, n int, wait, tm time.Duration, err error) {
	forwardHooks(h).OnBrokerRead(meta, key, n, wait, tm, err)
}
func (h primaryHooks) OnBrokerWrite(meta kgo.BrokerMetadata, key int16, n int, wait, tm time.Duration, err error) {
	forwardHooks(h).OnBrokerWrite(meta, key, n, wait, tm, err)
}
func (h primaryHooks) OnBrokerE2E(meta kgo.BrokerMetadata, key int16, e2e kgo.BrokerE2E) {
	forwardHooks(h).OnBrokerE2E(meta, key, e2e)
}

// forwardHooks add a client's events to its role's metrics, once they are registered.
type forwardHooks struct{ *kafkaMetrics }

func (h forwardHooks) OnBrokerConnect(meta kgo.BrokerMetadata, d time.Duration, c net.Conn, err error) {
	if h.ready.Load() {
		h.m.OnBrokerConnect(meta, d, c, err)
	}
}
func (h forwardHooks) OnBrokerDisconnect(meta kgo.BrokerMetadata, c net.Conn) {
	if h.ready.Load() {
		h.m.OnBrokerDisconnect(meta, c)
	}
}
func (h forwardHooks) OnBrokerThrottle(meta kgo.BrokerMetadata, d time.Duration, after bool) {
	if h.ready.Load() {
		h.m.OnBrokerThrottle(meta, d, after)
	}
}
func (h forwardHooks) OnProduceBatchWritten(meta kgo.BrokerMetadata, t string, p int32, bm kgo.ProduceBatchMetrics) {
	if h.ready.Load() {
		h.m.OnProduceBatchWritten(meta, t, p, bm)
	}
}
func (h forwardHooks) OnFetchBatchRead(meta kgo.BrokerMetadata, t string, p int32, bm kgo.FetchBatchMetrics) {
	if h.ready.Load() {
		h.m.OnFetchBatchRead(meta, t, p, bm)
	}
}
func (h forwardHooks) OnBrokerRead(meta kgo.BrokerMetadata, key int16, n int, wait, tm time.Duration, err error) {
	if h.ready.Load() {
		h.m.OnBrokerRead(meta, key, n, wait, tm, err)
	}
}
func (h forwardHooks) OnBrokerWrite(meta kgo.BrokerMetadata, key int16, n int, wait, tm time.Duration, err error) {
	if h.ready.Load() {
		h.m.OnBrokerWrite(meta, key, n, wait, tm, err)
	}
}
func (h forwardHooks) OnBrokerE2E(meta kgo.BrokerMetadata, key int16, e2e kgo.BrokerE2E) {
	if h.ready.Load() {
		h.m.OnBrokerE2E(meta, key, e2e)
	}
}
