package mirror_test

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/kmigrate/kmigrate/internal/testkit"
	"github.com/kmigrate/kmigrate/mirror"
)

// scrape reads e's /metrics handler.
func scrape(t *testing.T, e *mirror.Engine) map[string]*dto.MetricFamily {
	t.Helper()
	rec := httptest.NewRecorder()
	e.MetricsHandler().ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/metrics", nil))
	if rec.Code != http.StatusOK {
		t.Fatalf("/metrics: got %d: %s", rec.Code, rec.Body.String())
	}
	parser := expfmt.NewTextParser(model.UTF8Validation)
	mfs, err := parser.TextToMetricFamilies(rec.Body)
	if err != nil {
		t.Fatalf("/metrics is not the text format: %v", err)
	}
	return mfs
}

// sample returns the value of the family's sample whose labels include want, or fails.
func sample(t *testing.T, mfs map[string]*dto.MetricFamily, name string, want map[string]string) *dto.Metric {
	t.Helper()
	mf, ok := mfs[name]
	if !ok {
		t.Fatalf("metric %s not exported", name)
	}
next:
	for _, m := range mf.Metric {
		have := map[string]string{}
		for _, l := range m.Label {
			have[l.GetName()] = l.GetValue()
		}
		for k, v := range want {
			if have[k] != v {
				continue next
			}
		}
		return m
	}
	t.Fatalf("metric %s has no sample with labels %v", name, want)
	return nil
}

func value(m *dto.Metric) float64 {
	switch {
	case m.Counter != nil:
		return m.Counter.GetValue()
	case m.Gauge != nil:
		return m.Gauge.GetValue()
	}
	return m.GetUntyped().GetValue()
}

// TestMetrics mirrors records whose source timestamps are 3s old and checks the exposition:
// the replication latency histogram has one observation per record, each at least 3s (none in
// the buckets up to 2.5s) and under 10 minutes; the existing names and labels are there; the
// Go runtime, process and franz-go client metrics (every client role) too.
func TestMetrics(t *testing.T) {
	t.Parallel()
	p := newPair(t)
	const topic, parts, n = "orders-metrics", 2, 100
	testkit.CreateTopic(t, testkit.Client(t, p.src), topic, parts, nil)
	old := time.Now().Add(-3 * time.Second)
	prod := testkit.Client(t, p.src)
	var recs []*kgo.Record
	for i := 0; i < n*parts; i++ {
		recs = append(recs, &kgo.Record{Topic: topic, Partition: int32(i % parts), Value: fmt.Appendf(nil, "v%d", i), Timestamp: old})
	}
	if err := prod.ProduceSync(context.Background(), recs...).FirstErr(); err != nil {
		t.Fatal(err)
	}

	e, stop := start(t, p, testConfig(topic))
	waitMirrored(t, p, topic, parts)
	waitFor(t, "every record counted", func() bool {
		return value(sample(t, scrape(t, e), "kmirror_records_total", nil)) == n*parts
	})
	mfs := scrape(t, e)

	checkLatency(t, mfs, n*parts)

	if v := value(sample(t, mfs, "kmirror_owned_partitions", nil)); v != parts {
		t.Errorf("kmirror_owned_partitions %g, want %d", v, parts)
	}
	for part := 0; part < parts; part++ {
		labels := map[string]string{"topic": topic, "partition": fmt.Sprint(part)}
		if v := value(sample(t, mfs, "kmirror_replication_lag_records", labels)); v != 0 {
			t.Errorf("lag of partition %d: %g, want 0", part, v)
		}
		if v := value(sample(t, mfs, "kmirror_map_segments", labels)); v < 1 {
			t.Errorf("map segments of partition %d: %g, want at least 1", part, v)
		}
	}
	if v := value(sample(t, mfs, "kmirror_bytes_total", nil)); v <= 0 {
		t.Errorf("kmirror_bytes_total %g, want > 0", v)
	}
	for name, want := range map[string]float64{"kmirror_stopped_partitions": 0, "kmirror_ready": 1, "kmirror_fetch_errors_total": 0, "kmirror_produce_errors_total": 0} {
		if v := value(sample(t, mfs, name, nil)); v != want {
			t.Errorf("%s %g, want %g", name, v, want)
		}
	}
	waitFor(t, "the map persisted", func() bool {
		return value(sample(t, scrape(t, e), "kmirror_offset_map_persist_age_seconds", nil)) >= 0
	})
	sample(t, mfs, "kmirror_checkpoint_age_seconds", nil) // -1: no group sync configured
	sample(t, mfs, "go_goroutines", nil)
	sample(t, mfs, "process_resident_memory_bytes", nil)
	checkClientMetrics(t, mfs, topic)
	if err := stop(); err != nil {
		t.Fatalf("Run: %v", err)
	}
}

// checkLatency checks the latency histogram after n records whose timestamps were 3s old were
// acknowledged.
func checkLatency(t *testing.T, mfs map[string]*dto.MetricFamily, n uint64) {
	t.Helper()
	h := sample(t, mfs, "kmirror_replication_latency_seconds", nil).GetHistogram()
	if h.GetSampleCount() != n {
		t.Errorf("latency histogram: %d observations, want %d (one per acknowledged record)", h.GetSampleCount(), n)
	}
	if h.GetSampleSum() < 3*float64(n) {
		t.Errorf("latency histogram: sum %.1fs, want at least %gs (every record was 3s old)", h.GetSampleSum(), 3*float64(n))
	}
	for _, b := range h.Bucket {
		switch {
		case b.GetUpperBound() <= 2.5 && b.GetCumulativeCount() != 0:
			t.Errorf("latency bucket le=%g holds %d records, want 0 (every record was 3s old)", b.GetUpperBound(), b.GetCumulativeCount())
		case b.GetUpperBound() >= 600 && b.GetCumulativeCount() != n:
			t.Errorf("latency bucket le=%g holds %d records, want all %d", b.GetUpperBound(), b.GetCumulativeCount(), n)
		}
	}
	if len(h.Bucket) != len(mirror.LatencyBuckets)+1 { // and +Inf
		t.Errorf("latency histogram has %d buckets, want %d and +Inf", len(h.Bucket), len(mirror.LatencyBuckets))
	}
}

// checkClientMetrics checks the franz-go client metrics of every role after records of topic
// were mirrored.
func checkClientMetrics(t *testing.T, mfs map[string]*dto.MetricFamily, topic string) {
	t.Helper()
	for _, role := range []string{"source", "source_admin", "target"} {
		if v := value(sample(t, mfs, "kmirror_kafka_connects_total", map[string]string{"client": role})); v < 1 {
			t.Errorf("kmirror_kafka_connects_total{client=%q} %g, want at least 1", role, v)
		}
	}
	// The records go through the buckets' transactional producers, counted as target.
	if v := value(sample(t, mfs, "kmirror_kafka_produce_bytes_total", map[string]string{"client": "target", "topic": topic})); v <= 0 {
		t.Errorf("kmirror_kafka_produce_bytes_total{client=target} %g, want > 0", v)
	}
	if v := value(sample(t, mfs, "kmirror_kafka_fetch_bytes_total", map[string]string{"client": "source", "topic": topic})); v <= 0 {
		t.Errorf("kmirror_kafka_fetch_bytes_total{client=source} %g, want > 0", v)
	}
}
