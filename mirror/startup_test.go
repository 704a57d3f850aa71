package mirror_test

import (
	"context"
	"fmt"
	"os"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/kmigrate/kmigrate/internal/testkit"
	"github.com/kmigrate/kmigrate/mirror"
)

// startUpPartitions is the partition count of the start-up benchmark's source topic
// (KMIGRATE_STARTUP_PARTITIONS, default 1000).
func startUpPartitions(tb testing.TB) int32 {
	n := 1000
	if v := os.Getenv("KMIGRATE_STARTUP_PARTITIONS"); v != "" {
		var err error
		if n, err = strconv.Atoi(v); err != nil || n <= 0 {
			tb.Fatalf("KMIGRATE_STARTUP_PARTITIONS=%q: want a positive number", v)
		}
	}
	return int32(n)
}

// seedOne creates topic on c when create is set and writes one record to each partition, in
// one request. Its client is closed on return, not at the end of the benchmark, which calls
// it once per run.
func seedOne(tb testing.TB, c *kfake.Cluster, topic string, partitions int32, create bool) {
	tb.Helper()
	cl, err := kgo.NewClient(kgo.SeedBrokers(c.ListenAddrs()...), kgo.RecordPartitioner(kgo.ManualPartitioner()))
	if err != nil {
		tb.Fatal(err)
	}
	defer cl.Close()
	if create {
		testkit.CreateTopic(tb, cl, topic, partitions, nil)
	}
	recs := make([]*kgo.Record, partitions)
	for p := range partitions {
		recs[p] = &kgo.Record{Topic: topic, Partition: p, Value: fmt.Appendf(nil, "v-%d-%d", p, time.Now().UnixNano())}
	}
	if err := cl.ProduceSync(context.Background(), recs...).FirstErr(); err != nil {
		tb.Fatalf("produce to %s: %v", topic, err)
	}
}

// untilFirstRecord runs an engine until its first record is acknowledged, then stops it
// (draining: the map is persisted) and returns the engine's start-up figures.
func untilFirstRecord(tb testing.TB, src, dst *kfake.Cluster, cfg mirror.Config) (time.Duration, []mirror.StartUpPhase) {
	tb.Helper()
	e, err := mirror.New(cfg, []kgo.Opt{kgo.SeedBrokers(src.ListenAddrs()...)}, []kgo.Opt{kgo.SeedBrokers(dst.ListenAddrs()...)}, nil)
	if err != nil {
		tb.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- e.Run(ctx) }()
	deadline := time.After(60 * time.Second)
	for {
		if since, phases, ok := e.FirstRecord(); ok {
			cancel()
			if err := <-done; err != nil && ctx.Err() == nil {
				tb.Fatalf("Run: %v", err)
			}
			return since, phases
		}
		select {
		case err := <-done:
			cancel()
			tb.Fatalf("Run stopped before its first record: %v", err)
		case <-deadline:
			cancel()
			tb.Fatal("no record produced within 60s")
		case <-time.After(2 * time.Millisecond):
		}
	}
}

// BenchmarkStartUp measures kmirror's time to its first acknowledged record on kfake, for a
// fresh flow (a new target cluster each time) and for a resumed one (the map holds every
// partition of the topic; one new record per partition before each start). It reports the
// median ("ms-first-record") and logs the phases of the median run. Real-broker figures come
// from the integration start-up benchmark (make bench-startup).
func BenchmarkStartUp(b *testing.B) {
	parts := startUpPartitions(b)
	topic := "startup"
	src := testkit.StartCluster(b)
	seedOne(b, src, topic, parts, true)
	cfg := testConfig(topic)
	cfg.CommitLatency = time.Second
	b.Run("fresh", func(b *testing.B) {
		var runs []startRun
		for i := 0; b.Loop(); i++ {
			b.StopTimer()
			dst := testkit.StartCluster(b)
			c := cfg
			c.GroupID = fmt.Sprintf("startup-fresh-%d", i)
			b.StartTimer()
			since, phases := untilFirstRecord(b, src, dst, c)
			runs = append(runs, startRun{since, phases})
		}
		report(b, runs)
	})
	b.Run("resumed", func(b *testing.B) {
		dst := testkit.StartCluster(b)
		c := cfg
		c.GroupID = "startup-resumed"
		untilFirstRecord(b, src, dst, c) // the map now holds every partition
		var runs []startRun
		for b.Loop() {
			b.StopTimer()
			seedOne(b, src, topic, parts, false)
			b.StartTimer()
			since, phases := untilFirstRecord(b, src, dst, c)
			runs = append(runs, startRun{since, phases})
		}
		report(b, runs)
	})
}

type startRun struct {
	since  time.Duration
	phases []mirror.StartUpPhase
}

func report(b *testing.B, runs []startRun) {
	slices.SortFunc(runs, func(x, y startRun) int { return int(x.since - y.since) })
	med := runs[len(runs)/2]
	b.ReportMetric(float64(med.since.Microseconds())/1000, "ms-first-record")
	b.ReportMetric(float64(runs[len(runs)-1].since.Microseconds())/1000, "ms-first-record-max")
	b.ReportMetric(0, "ns/op") // the run includes the drain: only the start-up figures mean something
	var parts []string
	for _, p := range med.phases {
		parts = append(parts, fmt.Sprintf("%s=%.1f", p.Name, float64(p.Took.Microseconds())/1000))
	}
	b.Logf("median run, phases (ms): %s", strings.Join(parts, " "))
}
