package verify

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/kmigrate/kmigrate/align"
	"github.com/kmigrate/kmigrate/internal/peakrss"
	"github.com/kmigrate/kmigrate/internal/testkit"
	"github.com/kmigrate/kmigrate/mm2"
)

// The verify benchmark (scripts/bench-verify.sh starts a Kafka 3.7.1 broker and runs it):
// kverify diff against two plain franz-go consumers reading the same partitions (those of a
// "source" topic and of a "target" topic on the same broker) in the same run, and, when this
// kverify has the digest command, kverify digest of the source topic against one plain
// consumer reading it; each contender in its own process so that its peak RSS (VmHWM,
// internal/peakrss) is its own.
//
//	KMIGRATE_BENCH_BROKERS      host:port of the broker (the benchmark skips without it)
//	KMIGRATE_BENCH_RECORDS      records per topic (default 1000000)
//	KMIGRATE_BENCH_VALUE        value size in bytes (default 100)
//	KMIGRATE_BENCH_COMPRESSION  producer compression: none, gzip, snappy, lz4, zstd (default snappy, kgo's)
//	KMIGRATE_BENCH_PARTITIONS   partitions per topic (default 1)
//	KMIGRATE_BENCH_ROUNDS       runs of each contender, alternating (default 3; the best counts)
//	KMIGRATE_BENCH_FAULTS       0: skip the run against a faulty copy (default 1; one partition only)
//	KMIGRATE_BENCH_KVERIFY      a kverify binary to measure (default: build this tree's)
//	KMIGRATE_BENCH_OUT          also write the Markdown result to this file
//
// The topics' names carry the shape (records, value size, compression, partitions), so a
// broker kept between runs never serves a run the records of another shape.

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

// benchShape is what the benchmark's topics hold.
type benchShape struct {
	records, value, partitions int
	codec                      string
}

func benchShapeFromEnv() benchShape {
	codec := os.Getenv("KMIGRATE_BENCH_COMPRESSION")
	if codec == "" {
		codec = "snappy"
	}
	return benchShape{records: benchEnv("KMIGRATE_BENCH_RECORDS", 1_000_000), value: benchEnv("KMIGRATE_BENCH_VALUE", 100),
		partitions: benchEnv("KMIGRATE_BENCH_PARTITIONS", 1), codec: codec}
}

// topic is the name of the benchmark topic base for this shape.
func (s benchShape) topic(base string) string {
	return fmt.Sprintf("%s-%dr-%dB-%s-%dp", base, s.records, s.value, s.codec, s.partitions)
}

func (s benchShape) compression() (kgo.CompressionCodec, error) {
	if c, ok := mm2.Compression(s.codec); ok {
		return c, nil
	}
	return kgo.NoCompression(), fmt.Errorf("KMIGRATE_BENCH_COMPRESSION=%q: want none, gzip, snappy, lz4 or zstd", s.codec)
}

// benchProducer is a client for seeds that produces with the shape's compression.
func benchProducer(t *testing.T, seeds []string, s benchShape) *kgo.Client {
	t.Helper()
	codec, err := s.compression()
	if err != nil {
		t.Fatal(err)
	}
	cl, err := kgo.NewClient(kgo.SeedBrokers(seeds...), kgo.RecordPartitioner(kgo.ManualPartitioner()),
		kgo.ProducerBatchCompression(codec), kgo.ProducerBatchMaxBytes(1<<20), kgo.ProducerLinger(5*time.Millisecond),
		kgo.MaxBufferedBytes(256<<20))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(cl.Close)
	return cl
}

// benchText is text of random words: values cut from it compress about as log lines do.
var benchText = func() []byte {
	words := strings.Fields("order payment customer shipped pending refund invoice account region east west " +
		"north south item quantity price total currency status created updated warehouse carrier tracking " +
		"priority express standard retry timeout accepted rejected user session device mobile desktop")
	r := rand.New(rand.NewPCG(13, 2026))
	var b bytes.Buffer
	for b.Len() < 1<<20 {
		b.WriteString(words[r.IntN(len(words))])
		b.WriteByte(" ,:;.=\n"[r.IntN(7)])
		if r.IntN(8) == 0 {
			b.WriteString(strconv.FormatUint(r.Uint64()%1_000_000, 10))
			b.WriteByte(' ')
		}
	}
	return b.Bytes()
}()

// benchValue is the value of record i: size bytes of benchText from a place that depends on i.
func benchValue(i, size int) []byte {
	size = min(size, len(benchText)/2)
	off := (i * 7919) % (len(benchText) - size)
	return benchText[off : off+size]
}

type benchRun struct {
	secs  float64
	rssKB int64
}

// benchContender is one process the benchmark times; cmd makes it for a round.
type benchContender struct {
	name, label string
	records     int // records it reads, for records/s
	cmd         func(round int) *exec.Cmd
	exit        int
}

func TestBenchVerify(t *testing.T) {
	brokers := os.Getenv("KMIGRATE_BENCH_BROKERS")
	if brokers == "" || os.Getenv("KMIGRATE_BENCH_CHILD") != "" {
		t.Skip("set KMIGRATE_BENCH_BROKERS (scripts/bench-verify.sh does) to run the verify benchmark")
	}
	shape := benchShapeFromEnv()
	rounds := benchEnv("KMIGRATE_BENCH_ROUNDS", 3)
	cl := benchProducer(t, strings.Split(brokers, ","), shape)
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Hour)
	defer cancel()
	benchFill(ctx, t, cl, shape, shape.topic(benchSource), shape.topic(benchTarget))

	bin := buildKverify(t)
	contenders := benchContenders(t, bin, brokers, shape)
	results := benchRounds(t, contenders, rounds)
	md, ratio, rssKB := benchReport(shape, rounds, contenders, results)
	if os.Getenv("KMIGRATE_BENCH_FAULTS") != "0" && shape.partitions == 1 {
		md += benchFaults(ctx, t, cl, bin, brokers, shape)
	}
	t.Log("\n" + md)
	if out := os.Getenv("KMIGRATE_BENCH_OUT"); out != "" {
		if err := os.WriteFile(out, []byte(md), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if ratio < 1.0 {
		t.Errorf("median throughput ratio kverify diff / two plain consumers %.2f, want >= 1.0", ratio)
	}
	if rssKB >= 256<<10 {
		t.Errorf("peak RSS %.1f MiB, want < 256 MiB", float64(rssKB)/1024)
	}
}

// buildKverify builds this tree's kverify, or returns KMIGRATE_BENCH_KVERIFY when set.
func buildKverify(t *testing.T) string {
	t.Helper()
	if bin := os.Getenv("KMIGRATE_BENCH_KVERIFY"); bin != "" {
		return bin
	}
	return filepath.Join(testkit.Commands(t, "kverify"), "kverify")
}

// hasDigest reports whether the kverify at bin has the digest command (kverify digest --help
// succeeds and names its --side flag).
func hasDigest(bin string) bool {
	out, err := exec.Command(bin, "digest", "--help").CombinedOutput()
	return err == nil && bytes.Contains(out, []byte("--side"))
}

// benchChild runs this test binary as the child test name with KMIGRATE_BENCH_CHILD=mode.
func benchChild(t *testing.T, name, mode string) func(int) *exec.Cmd {
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	return func(int) *exec.Cmd {
		c := exec.Command(self, "-test.run=^"+name+"$", "-test.count=1")
		c.Env = append(os.Environ(), "KMIGRATE_BENCH_CHILD="+mode)
		return c
	}
}

func benchContenders(t *testing.T, bin, brokers string, shape benchShape) []benchContender {
	// Files of the test's own: kverify refuses to write its report over anything but a
	// regular file (its outputs are renamed into place), /dev/null included.
	dir := t.TempDir()
	src, tgt := shape.topic(benchSource), shape.topic(benchTarget)
	cs := []benchContender{
		{"plain", "two plain franz-go consumers (kgo defaults, read_committed)", 2 * shape.records, benchChild(t, "TestBenchPlainChild", "plain"), 0},
		{"kverify", fmt.Sprintf("kverify diff (align + fingerprints, window %d)", align.DefaultWindow), 2 * shape.records, func(int) *exec.Cmd {
			return exec.Command(bin, "diff", "--source-brokers", brokers, "--target-brokers", brokers,
				"--topic", src, "--target-topic", tgt, "--quiet", "--format", "json", "--out", filepath.Join(dir, "kverify.json"))
		}, 0},
	}
	if hasDigest(bin) {
		cs = append(cs,
			benchContender{"plain1", "one plain franz-go consumer of the source topic", shape.records, benchChild(t, "TestBenchPlainChild", "plain1"), 0},
			benchContender{"digest", "kverify digest --side source", shape.records, func(round int) *exec.Cmd {
				return exec.Command(bin, "digest", "--side", "source", "--source-brokers", brokers, "--topic", src,
					"--out", filepath.Join(dir, fmt.Sprintf("digest-%d.json", round)))
			}, 0})
	}
	return cs
}

// benchRounds runs every contender once per round, one after the other.
func benchRounds(t *testing.T, cs []benchContender, rounds int) map[string][]benchRun {
	t.Helper()
	results := map[string][]benchRun{}
	for r := 0; r < rounds; r++ {
		for _, c := range cs {
			run, code, stderr, err := benchTime(c.cmd(r))
			if err != nil {
				t.Fatalf("%s: %v", c.name, err)
			}
			if code != c.exit {
				t.Fatalf("%s: exit %d, want %d: %s", c.name, code, c.exit, stderr)
			}
			results[c.name] = append(results[c.name], run)
			t.Logf("round %d %-8s %.2fs  %.0f records/s  peak RSS %.1f MiB", r+1, c.name, run.secs, float64(c.records)/run.secs, float64(run.rssKB)/1024)
		}
	}
	return results
}

// benchTime runs cmd, sampling its peak RSS, and returns how long it took and its exit code.
func benchTime(cmd *exec.Cmd) (benchRun, int, string, error) {
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
	run := benchRun{time.Since(start).Seconds(), rss}
	if ee, ok := err.(*exec.ExitError); ok {
		return run, ee.ExitCode(), stderr.String(), nil
	}
	return run, 0, stderr.String(), err
}

// benchBest is the fastest run of rs with the largest peak RSS of them all.
func benchBest(rs []benchRun) benchRun {
	b := rs[0]
	for _, x := range rs {
		b.secs = min(b.secs, x.secs)
		b.rssKB = max(b.rssKB, x.rssKB)
	}
	return b
}

// benchRatios are the per-round ratios of peer's time to c's (above 1: c is faster) and their
// median. Per-round ratios are robust to a machine whose load changes between rounds: each
// round runs the contenders back to back.
func benchRatios(results map[string][]benchRun, peer, c string) (ratios []float64, median float64) {
	for r := range results[c] {
		ratios = append(ratios, results[peer][r].secs/results[c][r].secs)
	}
	sorted, m := slices.Sorted(slices.Values(ratios)), len(ratios)/2
	if len(sorted)%2 == 0 {
		return ratios, (sorted[m-1] + sorted[m]) / 2
	}
	return ratios, sorted[m]
}

// benchReport is the Markdown result, the median ratio of kverify diff against the two
// plain consumers and kverify diff's peak RSS.
func benchReport(shape benchShape, rounds int, cs []benchContender, results map[string][]benchRun) (string, float64, int64) {
	var b strings.Builder
	fmt.Fprintf(&b, `## kverify diff vs two plain franz-go consumers

%d records per topic in %d partition(s), %d-byte values, producer compression %s (topics %s
and %s on one Kafka 3.7.1 broker), both read in the same run; best of %d alternating rounds;
each contender in its own process.

| contender | time | records/s | peak RSS |
|---|---|---|---|
`, shape.records, shape.partitions, shape.value, shape.codec, shape.topic(benchSource), shape.topic(benchTarget), rounds)
	for _, c := range cs {
		r := benchBest(results[c.name])
		fmt.Fprintf(&b, "| %s | %.2f s | %.0f | %.1f MiB |\n", c.label, r.secs, float64(c.records)/r.secs, float64(r.rssKB)/1024)
	}
	ratios, median := benchRatios(results, "plain", "kverify")
	kv := benchBest(results["kverify"])
	fmt.Fprintf(&b, "\nThroughput ratio kverify diff / two plain consumers: **%.2f** median of the per-round ratios %s\n(goal >= 1.0); kverify diff peak RSS **%.1f MiB** (goal < 256 MiB).\n",
		median, fmtRatios(ratios), float64(kv.rssKB)/1024)
	if _, ok := results["digest"]; ok {
		dr, dm := benchRatios(results, "plain1", "digest")
		fmt.Fprintf(&b, "Throughput ratio kverify digest / one plain consumer: **%.2f** median of %s (goal >= 0.9); kverify digest peak RSS %.1f MiB.\n",
			dm, fmtRatios(dr), float64(benchBest(results["digest"]).rssKB)/1024)
	} else {
		b.WriteString("kverify digest: not measured, this kverify has no digest command.\n")
	}
	return b.String(), median, kv.rssKB
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
func benchFaults(ctx context.Context, t *testing.T, cl *kgo.Client, bin, brokers string, shape benchShape) string {
	t.Helper()
	n := shape.records
	half, replay, lostAt := n/2, n/10, n*7/10
	faulty := shape.topic(benchFaulty)
	adm := kadm.NewClient(cl)
	ends, err := adm.ListEndOffsets(ctx, faulty)
	want := int64(n + replay - 1000)
	if o, ok := ends.Lookup(faulty, 0); err != nil || !ok || o.Err != nil || o.Offset != want {
		benchCreate(ctx, t, adm, 1, faulty)
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
		if err := benchProduce(ctx, cl, faulty, idx, shape, 1, func(i int) bool { return i >= half && i%10000 == 5 }); err != nil {
			t.Fatal(err)
		}
	}
	cmd := exec.Command(bin, "diff", "--source-brokers", brokers, "--target-brokers", brokers,
		"--topic", shape.topic(benchSource), "--target-topic", faulty, "--quiet", "--format", "json")
	var out bytes.Buffer
	cmd.Stdout = &out
	run, code, stderr, err := benchTime(cmd)
	if err != nil || code != 1 {
		t.Fatalf("kverify on the faulty copy: exit %d, %v (want exit 1): %s", code, err, stderr)
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
`, replay, altered, run.secs, float64(run.rssKB)/1024)
}

// benchCreate (re)creates topics with parts partitions each, waiting for an earlier deletion
// of them to end.
func benchCreate(ctx context.Context, t *testing.T, adm *kadm.Client, parts int32, topics ...string) {
	t.Helper()
	adm.DeleteTopics(ctx, topics...)
	for _, topic := range topics {
		deadline := time.Now().Add(time.Minute)
		for {
			resp, err := adm.CreateTopic(ctx, parts, 1, nil, topic)
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
}

// benchFilled reports whether every partition p of each of topics holds the records
// i < n with i % parts == p, as benchProduce writes them.
func benchFilled(ctx context.Context, adm *kadm.Client, n, parts int, topics ...string) bool {
	ends, err := adm.ListEndOffsets(ctx, topics...)
	if err != nil {
		return false
	}
	for _, topic := range topics {
		for p := 0; p < parts; p++ {
			o, found := ends.Lookup(topic, int32(p))
			if !found || o.Err != nil || o.Offset != int64(n/parts+btoi(p < n%parts)) {
				return false
			}
		}
	}
	return true
}

func btoi(b bool) int {
	if b {
		return 1
	}
	return 0
}

// benchFill makes sure the topics hold exactly the records of shape, the same in each.
func benchFill(ctx context.Context, t *testing.T, cl *kgo.Client, shape benchShape, topics ...string) {
	t.Helper()
	adm := kadm.NewClient(cl)
	if benchFilled(ctx, adm, shape.records, shape.partitions, topics...) {
		return
	}
	benchCreate(ctx, t, adm, int32(shape.partitions), topics...)
	start := time.Now()
	idx := make([]int, shape.records)
	for i := range idx {
		idx[i] = i
	}
	for _, topic := range topics {
		if err := benchProduce(ctx, cl, topic, idx, shape, shape.partitions, nil); err != nil {
			t.Fatal(err)
		}
	}
	t.Logf("produced %d records to each of %v in %v", shape.records, topics, time.Since(start).Round(time.Millisecond))
}

// benchBase is the timestamp of record 0: records are a microsecond apart from it.
var benchBase = time.Date(2026, 12, 1, 0, 0, 0, 0, time.UTC)

// benchProduce writes record i of the benchmark for each i of idx to partition i % parts of
// topic; alter(i) replaces its value.
func benchProduce(ctx context.Context, cl *kgo.Client, topic string, idx []int, shape benchShape, parts int, alter func(int) bool) error {
	var wg sync.WaitGroup
	var errMu sync.Mutex
	var firstErr error
	for _, i := range idx {
		v := benchValue(i, shape.value)
		if alter != nil && alter(i) {
			v = []byte("altered")
		}
		r := &kgo.Record{Topic: topic, Partition: int32(i % parts), Key: []byte(strconv.Itoa(i)), Value: v,
			Headers: []kgo.RecordHeader{{Key: "seq", Value: []byte(strconv.Itoa(i))}}, Timestamp: benchBase.Add(time.Duration(i) * time.Microsecond)}
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
		return fmt.Errorf("produce to %s: %w", topic, firstErr)
	}
	return nil
}

// TestBenchPlainChild is the baseline contender, run as a child process by TestBenchVerify:
// plain franz-go consumers (defaults, read_committed like kverify), one per topic, read
// every partition of their topic to its end at once: the source and target topics
// (KMIGRATE_BENCH_CHILD=plain) or the source topic only (plain1).
func TestBenchPlainChild(t *testing.T) {
	mode := os.Getenv("KMIGRATE_BENCH_CHILD")
	if mode != "plain" && mode != "plain1" {
		t.Skip("child process of TestBenchVerify")
	}
	shape := benchShapeFromEnv()
	sets := [][]string{{shape.topic(benchSource)}, {shape.topic(benchTarget)}}
	if mode == "plain1" {
		sets = sets[:1]
	}
	benchConsumeAll(t, strings.Split(os.Getenv("KMIGRATE_BENCH_BROKERS"), ","), sets)
}

// benchConsumeAll reads every partition of each set of topics to its end, a consumer per
// set, all at once.
func benchConsumeAll(t *testing.T, seeds []string, sets [][]string) {
	ctx := context.Background()
	var wg sync.WaitGroup
	counts := make([]int64, len(sets))
	errs := make([]error, len(sets))
	for i, topics := range sets {
		wg.Add(1)
		go func() {
			defer wg.Done()
			counts[i], errs[i] = benchConsume(ctx, seeds, topics...)
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

// benchConsume reads every partition of topics to the end offset listed first, with one
// plain consumer.
func benchConsume(ctx context.Context, seeds []string, topics ...string) (int64, error) {
	adm, err := kgo.NewClient(kgo.SeedBrokers(seeds...))
	if err != nil {
		return 0, err
	}
	ends, err := kadm.NewClient(adm).ListEndOffsets(ctx, topics...)
	adm.Close()
	if err == nil {
		err = ends.Error()
	}
	if err != nil {
		return 0, err
	}
	type tp struct {
		topic string
		p     int32
	}
	left := map[tp]int64{} // partitions not read to their end yet: their end
	start := map[string]map[int32]kgo.Offset{}
	ends.Each(func(o kadm.ListedOffset) {
		if start[o.Topic] == nil {
			start[o.Topic] = map[int32]kgo.Offset{}
		}
		start[o.Topic][o.Partition] = kgo.NewOffset().AtStart()
		if o.Offset > 0 {
			left[tp{o.Topic, o.Partition}] = o.Offset
		}
	})
	cl, err := kgo.NewClient(kgo.SeedBrokers(seeds...), kgo.FetchIsolationLevel(kgo.ReadCommitted()),
		kgo.ConsumePartitions(start))
	if err != nil {
		return 0, err
	}
	defer cl.Close()
	var n int64
	var h uint64
	for len(left) > 0 {
		fs := cl.PollFetches(ctx)
		if err := fs.Err0(); err != nil {
			return n, err
		}
		fs.EachPartition(func(p kgo.FetchTopicPartition) {
			for _, r := range p.Records {
				n++
				h += uint64(len(r.Value)) // touch the record, as any consumer would
			}
			if k := len(p.Records); k > 0 && p.Records[k-1].Offset >= left[tp{p.Topic, p.Partition}]-1 {
				delete(left, tp{p.Topic, p.Partition})
			}
		})
	}
	_ = h
	return n, nil
}
