package verify

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/kmigrate/kmigrate/align"
	"github.com/kmigrate/kmigrate/internal/peakrss"
)

// The verify benchmark (scripts/bench-verify.sh starts a Kafka 3.7.1 broker and runs it):
// kverify diff against two plain franz-go consumers reading the same two partitions (one of
// a "source" topic, one of a "target" topic on the same broker) in the same run, each
// contender in its own process so that its peak RSS (getrusage ru_maxrss) is its own.
//
//	KMIGRATE_BENCH_BROKERS  host:port of the broker (the benchmark skips without it)
//	KMIGRATE_BENCH_RECORDS  records per topic (default 1000000)
//	KMIGRATE_BENCH_ROUNDS   runs of each contender, alternating (default 3; the best counts)
//	KMIGRATE_BENCH_OUT      also write the Markdown result to this file

const (
	benchSource = "bench-verify-source"
	benchTarget = "bench-verify-target"
	benchFaulty = "bench-verify-faulty"
)

func benchEnv(name string, def int) int {
	if v, err := strconv.Atoi(os.Getenv(name)); err == nil && v > 0 {
		return v
	}
	return def
}

func TestBenchVerify(t *testing.T) {
	brokers := os.Getenv("KMIGRATE_BENCH_BROKERS")
	if brokers == "" || os.Getenv("KMIGRATE_BENCH_CHILD") != "" {
		t.Skip("set KMIGRATE_BENCH_BROKERS (scripts/bench-verify.sh does) to run the verify benchmark")
	}
	n := benchEnv("KMIGRATE_BENCH_RECORDS", 1_000_000)
	rounds := benchEnv("KMIGRATE_BENCH_ROUNDS", 3)
	seeds := strings.Split(brokers, ",")
	cl, err := kgo.NewClient(kgo.SeedBrokers(seeds...), kgo.RecordPartitioner(kgo.ManualPartitioner()),
		kgo.ProducerBatchMaxBytes(1<<20), kgo.ProducerLinger(5*time.Millisecond), kgo.MaxBufferedRecords(100_000))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Minute)
	defer cancel()
	benchFill(ctx, t, cl, n)

	bin := filepath.Join(t.TempDir(), "kverify")
	if out, err := exec.Command("go", "build", "-o", bin, "../cmd/kverify").CombinedOutput(); err != nil {
		t.Fatalf("go build kverify: %v\n%s", err, out)
	}
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	type run struct {
		secs  float64
		rssKB int64
	}
	results := map[string][]run{}
	// A file of the test's own: kverify refuses to write its report over anything but a
	// regular file (its outputs are renamed into place), /dev/null included.
	report := filepath.Join(t.TempDir(), "kverify.json")
	contenders := []struct {
		name string
		cmd  func() *exec.Cmd
		exit int
	}{
		{"plain", func() *exec.Cmd {
			c := exec.Command(self, "-test.run=^TestBenchPlainChild$", "-test.count=1")
			c.Env = append(os.Environ(), "KMIGRATE_BENCH_CHILD=plain")
			return c
		}, 0},
		{"kverify", func() *exec.Cmd {
			return exec.Command(bin, "diff", "--source-brokers", brokers, "--target-brokers", brokers,
				"--topic", benchSource, "--target-topic", benchTarget, "--quiet", "--format", "json", "--out", report)
		}, 0},
	}
	for r := 0; r < rounds; r++ {
		for _, c := range contenders {
			cmd := c.cmd()
			var stderr bytes.Buffer
			cmd.Stderr = &stderr
			start := time.Now()
			err := cmd.Start()
			var rss int64
			if err == nil {
				watch := peakrss.Start(cmd.Process.Pid)
				err = cmd.Wait()
				rss = watch.Stop()
			}
			secs := time.Since(start).Seconds()
			code := 0
			if ee, ok := err.(*exec.ExitError); ok {
				code = ee.ExitCode()
			} else if err != nil {
				t.Fatalf("%s: %v", c.name, err)
			}
			if code != c.exit {
				t.Fatalf("%s: exit %d, want %d: %s", c.name, code, c.exit, stderr.String())
			}
			results[c.name] = append(results[c.name], run{secs, rss})
			t.Logf("round %d %-8s %.2fs  %.0f records/s  peak RSS %.1f MiB", r+1, c.name, secs, float64(2*n)/secs, float64(rss)/1024)
		}
	}
	best := func(name string) run {
		rs := results[name]
		sort.Slice(rs, func(i, j int) bool { return rs[i].secs < rs[j].secs })
		b := rs[0]
		for _, x := range rs {
			b.rssKB = max(b.rssKB, x.rssKB)
		}
		return b
	}
	// Per-round ratios are robust to a machine whose load changes between rounds: each round
	// runs the two contenders back to back.
	var ratios []float64
	for r := range results["plain"] {
		ratios = append(ratios, results["plain"][r].secs/results["kverify"][r].secs)
	}
	sort.Float64s(ratios)
	median := ratios[len(ratios)/2]
	plain, kv := best("plain"), best("kverify")
	ratio := plain.secs / kv.secs
	md := fmt.Sprintf(`## kverify diff vs two plain franz-go consumers

%d records per partition (one partition of %s and one of %s on one Kafka 3.7.1 broker), both
read in the same run; best of %d alternating rounds; each contender in its own process.

| contender | time | records/s (both sides) | peak RSS |
|---|---|---|---|
| two plain franz-go consumers (kgo defaults, read_committed) | %.2f s | %.0f | %.1f MiB |
| kverify diff (align + fingerprints, window %d) | %.2f s | %.0f | %.1f MiB |

Throughput ratio kverify / plain: **%.2f** best against best, **%.2f** median of the per-round
ratios %s (goal >= 0.8); kverify peak RSS **%.1f MiB** (goal < 256 MiB).
`, n, benchSource, benchTarget, rounds,
		plain.secs, float64(2*n)/plain.secs, float64(plain.rssKB)/1024,
		align.DefaultWindow, kv.secs, float64(2*n)/kv.secs, float64(kv.rssKB)/1024,
		ratio, median, fmtRatios(ratios), float64(kv.rssKB)/1024)
	md += benchFaults(ctx, t, cl, bin, brokers, n)
	t.Log("\n" + md)
	if out := os.Getenv("KMIGRATE_BENCH_OUT"); out != "" {
		if err := os.WriteFile(out, []byte(md), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if median < 0.8 {
		t.Errorf("median throughput ratio %.2f, want >= 0.8", median)
	}
	if kv.rssKB >= 256<<10 {
		t.Errorf("peak RSS %.1f MiB, want < 256 MiB", float64(kv.rssKB)/1024)
	}
}

func fmtRatios(rs []float64) string {
	parts := make([]string, len(rs))
	for i, r := range rs {
		parts[i] = fmt.Sprintf("%.2f", r)
	}
	return "(" + strings.Join(parts, ", ") + ")"
}

// benchFaults runs kverify once against a faulty copy of the source (a replay of 10% of the
// records, 1000 lost, one value in 10000 altered) and checks the counts: memory under
// divergence is bounded by the window and the replay history, not by the topic.
func benchFaults(ctx context.Context, t *testing.T, cl *kgo.Client, bin, brokers string, n int) string {
	t.Helper()
	half, replay, lostAt := n/2, n/10, n*7/10
	adm := kadm.NewClient(cl)
	ends, err := adm.ListEndOffsets(ctx, benchFaulty)
	want := int64(n + replay - 1000)
	if o, ok := ends.Lookup(benchFaulty, 0); err != nil || !ok || o.Err != nil || o.Offset != want {
		adm.DeleteTopics(ctx, benchFaulty)
		deadline := time.Now().Add(time.Minute)
		for {
			resp, err := adm.CreateTopic(ctx, 1, 1, nil, benchFaulty)
			if err == nil {
				err = resp.Err
			}
			if err == nil {
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("create %s: %v", benchFaulty, err)
			}
			time.Sleep(500 * time.Millisecond)
		}
		var idx []int
		for i := 0; i < half; i++ {
			idx = append(idx, i)
		}
		for i := half - replay; i < half; i++ {
			idx = append(idx, i)
		}
		for i := half; i < n; i++ {
			if i < lostAt || i >= lostAt+1000 {
				idx = append(idx, i)
			}
		}
		start := time.Now()
		benchProduce(ctx, t, cl, benchFaulty, idx, start, func(i int) bool { return i >= half && i%10000 == 5 })
	}
	cmd := exec.Command(bin, "diff", "--source-brokers", brokers, "--target-brokers", brokers,
		"--topic", benchSource, "--target-topic", benchFaulty, "--quiet", "--format", "json")
	var out, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &stderr
	start := time.Now()
	var rss int64
	if err = cmd.Start(); err == nil {
		watch := peakrss.Start(cmd.Process.Pid)
		err = cmd.Wait()
		rss = watch.Stop()
	}
	secs := time.Since(start).Seconds()
	if ee, ok := err.(*exec.ExitError); !ok || ee.ExitCode() != 1 {
		t.Fatalf("kverify on the faulty copy: %v (want exit 1): %s", err, stderr.String())
	}
	var res Result
	if err := json.Unmarshal(out.Bytes(), &res); err != nil {
		t.Fatal(err)
	}
	altered := int64(0)
	for i := half; i < n; i++ {
		if i%10000 == 5 && (i < lostAt || i >= lostAt+1000) {
			altered++
		}
	}
	if got, wantC := res.Summary, (align.Counts{Matched: int64(n) - 1000 - altered, Missing: 1000, Duplicated: int64(replay), Mismatched: altered}); got != wantC {
		t.Errorf("faulty copy: got %+v, want %+v", got, wantC)
	}
	return fmt.Sprintf(`
Under faults (a replay of %d records, 1000 lost, %d values altered: all reported at their
offsets): kverify %.2f s, peak RSS **%.1f MiB**.
`, replay, altered, secs, float64(rss)/1024)
}

// benchFill makes sure both topics hold exactly the same n records in partition 0.
func benchFill(ctx context.Context, t *testing.T, cl *kgo.Client, n int) {
	t.Helper()
	adm := kadm.NewClient(cl)
	ends, err := adm.ListEndOffsets(ctx, benchSource, benchTarget)
	if err != nil {
		t.Fatalf("list offsets: %v", err)
	}
	ok := true
	for _, topic := range []string{benchSource, benchTarget} {
		o, found := ends.Lookup(topic, 0)
		ok = ok && found && o.Err == nil && o.Offset == int64(n)
	}
	if ok {
		return
	}
	adm.DeleteTopics(ctx, benchSource, benchTarget)
	for _, topic := range []string{benchSource, benchTarget} {
		deadline := time.Now().Add(time.Minute)
		for {
			resp, err := adm.CreateTopic(ctx, 1, 1, nil, topic)
			if err == nil {
				err = resp.Err
			}
			if err == nil {
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("create %s: %v", topic, err)
			}
			time.Sleep(500 * time.Millisecond) // the deletion is still under way
		}
	}
	start := time.Now()
	idx := make([]int, n)
	for i := range idx {
		idx[i] = i
	}
	benchProduce(ctx, t, cl, benchSource, idx, start, nil)
	benchProduce(ctx, t, cl, benchTarget, idx, start, nil)
	t.Logf("produced %d records to each of %s and %s in %v", n, benchSource, benchTarget, time.Since(start).Round(time.Millisecond))
}

// benchProduce writes record i of the benchmark for each i of idx to partition 0 of topic;
// alter(i) replaces its value.
func benchProduce(ctx context.Context, t *testing.T, cl *kgo.Client, topic string, idx []int, base time.Time, alter func(int) bool) {
	t.Helper()
	value := bytes.Repeat([]byte("x"), 100)
	var wg sync.WaitGroup
	var errMu sync.Mutex
	var firstErr error
	for _, i := range idx {
		v := value
		if alter != nil && alter(i) {
			v = []byte("altered")
		}
		r := &kgo.Record{Topic: topic, Partition: 0, Key: []byte(strconv.Itoa(i)), Value: v,
			Headers: []kgo.RecordHeader{{Key: "seq", Value: []byte(strconv.Itoa(i))}}, Timestamp: base.Add(time.Duration(i) * time.Microsecond)}
		wg.Add(1)
		cl.Produce(ctx, r, func(_ *kgo.Record, err error) {
			defer wg.Done()
			if err != nil {
				errMu.Lock()
				if firstErr == nil {
					firstErr = err
				}
				errMu.Unlock()
			}
		})
	}
	wg.Wait()
	if firstErr != nil {
		t.Fatalf("produce to %s: %v", topic, firstErr)
	}
}

// TestBenchPlainChild is the baseline contender, run as a child process by TestBenchVerify:
// two plain franz-go consumers (defaults, read_committed like kverify) read partition 0 of the
// two topics to their end at once.
func TestBenchPlainChild(t *testing.T) {
	if os.Getenv("KMIGRATE_BENCH_CHILD") != "plain" {
		t.Skip("child process of TestBenchVerify")
	}
	seeds := strings.Split(os.Getenv("KMIGRATE_BENCH_BROKERS"), ",")
	ctx := context.Background()
	var wg sync.WaitGroup
	counts := make([]int64, 2)
	errs := make([]error, 2)
	for i, topic := range []string{benchSource, benchTarget} {
		wg.Add(1)
		go func() {
			defer wg.Done()
			counts[i], errs[i] = benchConsume(ctx, seeds, topic)
		}()
	}
	wg.Wait()
	for i := range errs {
		if errs[i] != nil {
			t.Fatal(errs[i])
		}
	}
	json.NewEncoder(os.Stderr).Encode(counts)
}

func benchConsume(ctx context.Context, seeds []string, topic string) (int64, error) {
	cl, err := kgo.NewClient(kgo.SeedBrokers(seeds...), kgo.FetchIsolationLevel(kgo.ReadCommitted()),
		kgo.ConsumePartitions(map[string]map[int32]kgo.Offset{topic: {0: kgo.NewOffset().AtStart()}}))
	if err != nil {
		return 0, err
	}
	defer cl.Close()
	ends, err := kadm.NewClient(cl).ListEndOffsets(ctx, topic)
	if err != nil {
		return 0, err
	}
	o, _ := ends.Lookup(topic, 0)
	var n int64
	var h uint64
	for {
		fs := cl.PollFetches(ctx)
		if err := fs.Err0(); err != nil {
			return n, err
		}
		last := int64(-1)
		fs.EachRecord(func(r *kgo.Record) {
			n++
			h += uint64(len(r.Value)) // touch the record, as any consumer would
			last = r.Offset
		})
		if last >= o.Offset-1 {
			_ = h
			return n, nil
		}
	}
}
