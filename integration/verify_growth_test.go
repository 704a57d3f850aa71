package integration

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/kmigrate/kmigrate/align"
	"github.com/kmigrate/kmigrate/integration/cluster"
	"github.com/kmigrate/kmigrate/internal/peakrss"
	"github.com/kmigrate/kmigrate/verify"
)

// TestVerifyGrowth is how kverify's cost grows: the peak RSS of `kverify diff` (the
// binary; its own VmHWM, sampled by internal/peakrss) against --history and against --window,
// one partition of N records (default 1,000,000, 100-byte values) and a faulty copy of it:
// the last N/10 records of the first half replayed (MM2's replay after a task restart, which
// --history must hold to call them duplicates), 1,000 records lost at 70% and one value in
// 10,000 altered in the second half (each divergence fills the look-ahead window on both
// sides). The --history runs use --window 1000, the --window runs the default --history
// (100,000); kverify raises --history to --window, so the table shows the history kept. The broker is an in-process kfake unless
// KMIGRATE_GROWTH_VERIFY_VERSION names a real one (2.3.0 or 3.7.1; JVM lock). It runs only
// with KMIGRATE_BENCH=1 (scripts/bench-growth.sh):
//
//	KMIGRATE_GROWTH_VERIFY_RECORDS  N (default 1000000)
//	KMIGRATE_GROWTH_HISTORY         --history values (default 10000,100000,300000,1000000)
//	KMIGRATE_GROWTH_WINDOW          --window values (default 1000,10000,100000,300000)
//	KMIGRATE_BENCH_OUT              also write the Markdown tables to this file
func TestVerifyGrowth(t *testing.T) {
	if os.Getenv("KMIGRATE_BENCH") != "1" {
		t.Skip("benchmark: set KMIGRATE_BENCH=1 (scripts/bench-growth.sh) to run it")
	}
	n := growthInts(t, "KMIGRATE_GROWTH_VERIFY_RECORDS", []int{1_000_000})[0]
	histories := growthInts(t, "KMIGRATE_GROWTH_HISTORY", []int{10_000, 100_000, 300_000, 1_000_000})
	windows := growthInts(t, "KMIGRATE_GROWTH_WINDOW", []int{1_000, 10_000, 100_000, 300_000})
	version := cluster.Kfake
	if v := os.Getenv("KMIGRATE_GROWTH_VERIFY_VERSION"); v != "" {
		version = v
	}
	c := cluster.StartT(t, cluster.Spec{Version: version, Name: "growth-verify"})
	ctx := bedCtx(t, 60*time.Minute)
	src, dst, want := vgSeed(ctx, t, c, n)
	bin := filepath.Join(bedBuild(t, "kverify"), "kverify")
	var b strings.Builder
	fmt.Fprintf(&b, "\nkverify diff, one partition of %d records against a faulty copy (%d replayed, 1,000 lost, %d altered), broker %s:\n", n, want.Duplicated, want.Mismatched, version)
	const header = "\n| --history | --window | history kept | peak RSS | time | matched | missing | duplicated | mismatched | extra |\n|---|---|---|---|---|---|---|---|---|---|\n"
	b.WriteString(header)
	for _, h := range histories {
		b.WriteString(vgRun(ctx, t, bin, c, src, dst, h, 1000, want) + "\n")
	}
	b.WriteString(header)
	for _, w := range windows {
		b.WriteString(vgRun(ctx, t, bin, c, src, dst, align.DefaultHistory, w, want) + "\n")
	}
	t.Log(b.String())
	if out := os.Getenv("KMIGRATE_BENCH_OUT"); out != "" {
		if err := os.WriteFile(out, []byte(b.String()), 0o644); err != nil {
			t.Errorf("write %s: %v", out, err)
		}
	}
}

// vgSeed writes the source topic and its faulty copy and returns their names and the counts
// a kverify that holds the whole replay in its history reports.
func vgSeed(ctx context.Context, t *testing.T, c cluster.Cluster, n int) (src, dst string, want align.Counts) {
	t.Helper()
	src, dst = bedUnique("vg-source"), bedUnique("vg-faulty")
	bedCreateTopic(t, c, src, 1, nil)
	bedCreateTopic(t, c, dst, 1, nil)
	half, replay, lostAt := n/2, n/10, n*7/10
	var all, faulty []int
	for i := range n {
		all = append(all, i)
	}
	faulty = append(faulty, all[:half]...)
	faulty = append(faulty, all[half-replay:half]...)
	for i := half; i < n; i++ {
		if i < lostAt || i >= lostAt+1000 {
			faulty = append(faulty, i)
		}
	}
	altered := func(i int) bool { return i >= half && i%10000 == 5 }
	cl := bedClient(t, c.Bootstrap(), kgo.RecordPartitioner(kgo.ManualPartitioner()), kgo.ProducerBatchMaxBytes(1<<20),
		kgo.ProducerLinger(5*time.Millisecond), kgo.MaxBufferedRecords(100_000))
	base := time.Now()
	vgProduce(ctx, t, cl, src, all, base, nil)
	vgProduce(ctx, t, cl, dst, faulty, base, altered)
	want = align.Counts{Missing: 1000, Duplicated: int64(replay)}
	for i := half; i < n; i++ {
		if altered(i) && (i < lostAt || i >= lostAt+1000) {
			want.Mismatched++
		}
	}
	want.Matched = int64(n) - want.Missing - want.Mismatched
	return src, dst, want
}

// vgProduce writes record i for each i of idx to partition 0 of topic: key i, a 100-byte
// value, a header; alter(i) replaces the value.
func vgProduce(ctx context.Context, t *testing.T, cl *kgo.Client, topic string, idx []int, base time.Time, alter func(int) bool) {
	t.Helper()
	value := bytes.Repeat([]byte("x"), 100)
	var wg sync.WaitGroup
	var mu sync.Mutex
	var first error
	for _, i := range idx {
		v := value
		if alter != nil && alter(i) {
			v = []byte("altered")
		}
		wg.Add(1)
		cl.Produce(ctx, &kgo.Record{Topic: topic, Key: []byte(strconv.Itoa(i)), Value: v,
			Headers: []kgo.RecordHeader{{Key: "seq", Value: []byte(strconv.Itoa(i))}}, Timestamp: base.Add(time.Duration(i) * time.Microsecond)},
			func(_ *kgo.Record, err error) {
				if err != nil {
					mu.Lock()
					first = errors.Join(first, err)
					mu.Unlock()
				}
				wg.Done()
			})
	}
	wg.Wait()
	if first != nil {
		t.Fatalf("produce to %s: %v", topic, first)
	}
}

// vgRun runs kverify diff once with --history h and --window w and returns its table row. With
// the whole replay in the history (h >= the replay) the counts must be exactly want.
func vgRun(ctx context.Context, t *testing.T, bin string, c cluster.Cluster, src, dst string, h, w int, want align.Counts) string {
	t.Helper()
	brokers := strings.Join(c.Bootstrap(), ",")
	report := filepath.Join(t.TempDir(), "report.json")
	cmd := exec.CommandContext(ctx, bin, "diff", "--source-brokers", brokers, "--target-brokers", brokers, "--topic", src, "--target-topic", dst,
		"--history", strconv.Itoa(h), "--window", strconv.Itoa(w), "--quiet", "--format", "json", "--out", report)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	start := time.Now()
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	watch := peakrss.Start(cmd.Process.Pid)
	err := cmd.Wait()
	rss := watch.Stop()
	took := time.Since(start)
	if ee, ok := err.(*exec.ExitError); !ok || ee.ExitCode() != 1 {
		t.Fatalf("kverify --history %d --window %d: %v (want exit 1: the copy differs): %s", h, w, err, stderr.String())
	}
	raw, err := os.ReadFile(report)
	if err != nil {
		t.Fatal(err)
	}
	var res verify.Result
	if err := json.Unmarshal(raw, &res); err != nil {
		t.Fatalf("report of --history %d --window %d: %v", h, w, err)
	}
	got := res.Summary
	t.Logf("GROWTH kverify --history %d --window %d: peak RSS %d KiB, %s, %+v", h, w, rss, took.Round(time.Millisecond), got)
	if max(h, w) >= int(want.Duplicated) && got != want {
		t.Errorf("--history %d --window %d: got %+v, want %+v", h, w, got, want)
	}
	return fmt.Sprintf("| %d | %d | %d | %.1f MiB | %.1f s | %d | %d | %d | %d | %d |", h, w, max(h, w), float64(rss)/1024, took.Seconds(),
		got.Matched, got.Missing, got.Duplicated, got.Mismatched, got.Extra)
}
