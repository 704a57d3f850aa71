package verify

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
)

// The --all benchmark (scripts/bench-verify.sh runs it when KMIGRATE_BENCH_ALL_TOPICS is set):
// what a topic costs kverify diff --all beyond the records it holds. In the same run, on one
// broker, kverify diff --all over TOPICS one-partition topics of RECORDS records each (the
// flow A->B of an MM2 file whose two clusters are that broker: the copy of topic T is A.T),
// kverify diff --topic of one topic of TOPICS partitions holding as many records in each
// partition (the same bytes, the same pool of partition readers, no per-topic work), and two
// plain franz-go consumers reading the TOPICS source and TOPICS target topics.
//
//	KMIGRATE_BENCH_ALL_TOPICS   topics (the benchmark skips without it; at scale: 200)
//	KMIGRATE_BENCH_ALL_RECORDS  records per topic (default 50000)
//	KMIGRATE_BENCH_ALL_VALUE    value size in bytes (default 1024); KMIGRATE_BENCH_COMPRESSION as above
//	KMIGRATE_BENCH_ALL_ROUNDS   runs of each contender, alternating (default 2)
//	KMIGRATE_BENCH_ALL_OUT      also write the Markdown result to this file

// benchAll is the shape of the --all benchmark and the names of its topics.
type benchAll struct {
	topics int
	shape  benchShape // of each one-partition topic
	prefix string
}

func benchAllFromEnv() benchAll {
	shape := benchShapeFromEnv()
	shape.records, shape.value, shape.partitions = benchEnv("KMIGRATE_BENCH_ALL_RECORDS", 50_000), benchEnv("KMIGRATE_BENCH_ALL_VALUE", 1024), 1
	return benchAll{topics: benchEnv("KMIGRATE_BENCH_ALL_TOPICS", 0), shape: shape,
		prefix: fmt.Sprintf("bench-all-%dr-%dB-%s", shape.records, shape.value, shape.codec)}
}

// names are the source topics, their copies, the wide topic and its copy.
func (b benchAll) names() (src, dst []string, wide string) {
	for i := 0; i < b.topics; i++ {
		n := fmt.Sprintf("%s-%03d", b.prefix, i)
		src, dst = append(src, n), append(dst, "A."+n)
	}
	return src, dst, fmt.Sprintf("%s-wide%d", b.prefix, b.topics)
}

func TestBenchVerifyAll(t *testing.T) {
	brokers, b := os.Getenv("KMIGRATE_BENCH_BROKERS"), benchAllFromEnv()
	if brokers == "" || b.topics == 0 || os.Getenv("KMIGRATE_BENCH_CHILD") != "" {
		t.Skip("set KMIGRATE_BENCH_BROKERS and KMIGRATE_BENCH_ALL_TOPICS (scripts/bench-verify.sh does) to run the --all benchmark")
	}
	rounds := benchEnv("KMIGRATE_BENCH_ALL_ROUNDS", 2)
	cl := benchProducer(t, strings.Split(brokers, ","), b.shape)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Hour)
	defer cancel()
	src, dst, wide := b.names()
	start := time.Now()
	benchFillMany(ctx, t, kadm.NewClient(cl), b, append(src, dst...))
	wideShape := b.shape
	wideShape.records, wideShape.partitions = b.shape.records*b.topics, b.topics
	benchFill(ctx, t, cl, wideShape, wide, "A."+wide)
	t.Logf("topics ready in %v", time.Since(start).Round(time.Second))

	bin, dir := buildKverify(t), t.TempDir()
	props := filepath.Join(dir, "mm2.properties")
	conf := fmt.Sprintf("clusters = A, B\nA.bootstrap.servers = %s\nB.bootstrap.servers = %s\nA->B.enabled = true\nA->B.topics = %s-[0-9]+\n", brokers, brokers, b.prefix)
	if err := os.WriteFile(props, []byte(conf), 0o644); err != nil {
		t.Fatal(err)
	}
	n := 2 * b.topics * b.shape.records
	diff := func(out string, args ...string) func(int) *exec.Cmd {
		return func(int) *exec.Cmd {
			return exec.Command(bin, append([]string{"diff", "--mm2-config", props, "--quiet", "--format", "json", "--out", filepath.Join(dir, out)}, args...)...)
		}
	}
	cs := []benchContender{
		{"all", fmt.Sprintf("kverify diff --all: %d topics of one partition", b.topics), n, diff("all.json", "--all"), 0},
		{"wide", fmt.Sprintf("kverify diff --topic: one topic of %d partitions", b.topics), n, diff("wide.json", "--topic", wide), 0},
		{"plain", fmt.Sprintf("two plain franz-go consumers of the %d + %d topics", b.topics, b.topics), n, benchChild(t, "TestBenchPlainAllChild", "plainall"), 0},
	}
	results := benchRounds(t, cs, rounds)
	md := benchAllReport(b, rounds, cs, results)
	t.Log("\n" + md)
	if out := os.Getenv("KMIGRATE_BENCH_ALL_OUT"); out != "" {
		if err := os.WriteFile(out, []byte(md), 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

// benchFillMany makes sure each of topics is one partition holding the records of b.shape,
// producing to several topics at once.
func benchFillMany(ctx context.Context, t *testing.T, adm *kadm.Client, b benchAll, topics []string) {
	t.Helper()
	if benchFilled(ctx, adm, b.shape.records, 1, topics...) {
		return
	}
	benchCreate(ctx, t, adm, 1, topics...)
	cl := benchProducer(t, strings.Split(os.Getenv("KMIGRATE_BENCH_BROKERS"), ","), b.shape)
	idx := make([]int, b.shape.records)
	for i := range idx {
		idx[i] = i
	}
	var wg sync.WaitGroup
	errs := make([]error, len(topics))
	sem := make(chan struct{}, 8)
	for i, topic := range topics {
		wg.Add(1)
		sem <- struct{}{}
		go func() {
			defer func() { <-sem; wg.Done() }()
			errs[i] = benchProduce(ctx, cl, topic, idx, b.shape, 1, nil)
		}()
	}
	wg.Wait()
	for _, err := range errs {
		if err != nil {
			t.Fatal(err)
		}
	}
}

// benchAllReport is the Markdown result of the --all benchmark.
func benchAllReport(b benchAll, rounds int, cs []benchContender, results map[string][]benchRun) string {
	var s strings.Builder
	fmt.Fprintf(&s, `## kverify diff --all over %d topics

%d topics of one partition holding %d records each (%d-byte values, producer compression %s)
and their copies, against one topic of %d partitions holding %d records in each and its
copy, and two plain consumers, on one Kafka 3.7.1 broker in the same run; best of %d
alternating rounds; each contender in its own process.

| contender | time | records/s (both sides) | peak RSS |
|---|---|---|---|
`, b.topics, b.topics, b.shape.records, b.shape.value, b.shape.codec, b.topics, b.shape.records, rounds)
	for _, c := range cs {
		r := benchBest(results[c.name])
		fmt.Fprintf(&s, "| %s | %.2f s | %.0f | %.1f MiB |\n", c.label, r.secs, float64(c.records)/r.secs, float64(r.rssKB)/1024)
	}
	wr, wm := benchRatios(results, "wide", "all")
	pr, pm := benchRatios(results, "plain", "all")
	all, w := benchBest(results["all"]), benchBest(results["wide"])
	fmt.Fprintf(&s, "\nRatio --all / one wide topic (its time over --all's): **%.2f** median of %s; the cost of a topic beyond its records: **%.1f ms** ((best --all - best wide) / %d topics), %.1f%% of --all's time.\n",
		wm, fmtRatios(wr), (all.secs-w.secs)*1000/float64(b.topics), b.topics, 100*(all.secs-w.secs)/all.secs)
	fmt.Fprintf(&s, "Ratio --all / two plain consumers of the same topics: **%.2f** median of %s.\n", pm, fmtRatios(pr))
	return s.String()
}

// TestBenchPlainAllChild is the plain contender of TestBenchVerifyAll, run as a child process:
// one plain consumer of the source topics and one of their copies, at once.
func TestBenchPlainAllChild(t *testing.T) {
	if os.Getenv("KMIGRATE_BENCH_CHILD") != "plainall" {
		t.Skip("child process of TestBenchVerifyAll")
	}
	src, dst, _ := benchAllFromEnv().names()
	benchConsumeAll(t, strings.Split(os.Getenv("KMIGRATE_BENCH_BROKERS"), ","), [][]string{src, dst})
}
