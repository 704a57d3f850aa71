package integration

import (
	"context"
	"encoding/hex"
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/kmigrate/kmigrate/integration/cluster"
	"github.com/kmigrate/kmigrate/internal/peakrss"
)

// TestMirrorGrowth is how kmirror's cost grows: peak RSS (the process's own VmHWM, sampled by
// internal/peakrss) and throughput at 6, 100 and 1,000 partitions, the same number of records
// in every run, Kafka 2.3.0 -> 3.7.1, one broker each (full JIT, 2 GiB heap). Beside kmirror
// (its default, fenced mode, and without the fence: B.exactly.once.source.support=disabled) the
// bare franz-go consume-to-produce loop of TestMirrorBench (TestMirrorBareHelper) copies the
// same topic in the same run, so each size has a peer. Every contender writes to a target topic
// created beforehand with the source's partition count; a read_committed counter in this
// process times the first and the last copied record. It runs only with KMIGRATE_BENCH=1
// (scripts/bench-growth.sh):
//
//	KMIGRATE_GROWTH_PARTITIONS      comma-separated partition counts (default 6,100,1000)
//	KMIGRATE_GROWTH_MIRROR_RECORDS  records per run, 200-byte values (default 300000)
//	KMIGRATE_GROWTH_BOUNDS          commit bounds in ms (kmirror.commit.latency.max.ms), each a
//	                                fenced kmirror contender of its own (default none)
//	KMIGRATE_BENCH_OUT              also write the Markdown table to this file
func TestMirrorGrowth(t *testing.T) {
	if os.Getenv("KMIGRATE_BENCH") != "1" {
		t.Skip("benchmark: set KMIGRATE_BENCH=1 (scripts/bench-growth.sh) to run it")
	}
	sizes := growthInts(t, "KMIGRATE_GROWTH_PARTITIONS", []int{6, 100, 1000})
	n := growthInts(t, "KMIGRATE_GROWTH_MIRROR_RECORDS", []int{300000})[0]
	bounds := growthInts(t, "KMIGRATE_GROWTH_BOUNDS", nil)
	// Full JIT and a 2 GiB heap: the test defaults (C1 only, 384 MiB) run out of heap with
	// thousands of partitions on a broker.
	flags := []string{"-XX:TieredStopAtLevel=4", "-Xmx2g"}
	src := cluster.StartT(t, cluster.Spec{Version: cluster.V230, Name: "growth-src", JVMFlags: flags})
	dst := cluster.StartT(t, cluster.Spec{Version: cluster.V371, Name: "growth-dst", JVMFlags: flags})
	ctx := bedCtx(t, 60*time.Minute)
	bin := filepath.Join(bedBuild(t, "kmirror"), "kmirror")
	var b strings.Builder
	fmt.Fprintf(&b, "\n%d records of 200 B per run, Kafka %s -> %s, one broker each:\n\n", n, src.Version(), dst.Version())
	b.WriteString("| partitions | records per partition | mirror | wall time | records/s (first to last record) | peak RSS | throughput / bare loop | / kmirror, no fence | commit wait p99 (kmirror_commit_wait_seconds) |\n|---|---|---|---|---|---|---|---|---|\n")
	for _, parts := range sizes {
		topic := bedUnique(fmt.Sprintf("gm%d", parts))
		bedCreateTopic(t, src, topic, int32(parts), nil)
		gmSeed(ctx, t, src, topic, parts, n)
		bare := gmRun(ctx, t, dst, "bare."+topic, parts, n, func() gmProc { return gmBare(t, src, dst, topic, "bare."+topic, n) })
		km := gmRun(ctx, t, dst, "km."+topic, parts, n, func() gmProc { return gmKmirror(t, bin, src, dst, "km", topic, "") })
		kn := gmRun(ctx, t, dst, "kn."+topic, parts, n, func() gmProc {
			return gmKmirror(t, bin, src, dst, "kn", topic, "B.exactly.once.source.support=disabled\n")
		})
		t.Logf("GROWTH mirror %d partitions: bare loop %s; kmirror %s; kmirror without the fence %s", parts, bare, km, kn)
		type row struct {
			name string
			res  gmResult
		}
		rows := []row{{"bare franz-go loop", bare}, {"kmirror (fenced, the default)", km}, {"kmirror, no fence", kn}}
		for _, bound := range bounds {
			alias := fmt.Sprintf("kb%d", bound)
			r := gmRun(ctx, t, dst, alias+"."+topic, parts, n, func() gmProc {
				return gmKmirror(t, bin, src, dst, alias, topic, fmt.Sprintf("kmirror.commit.latency.max.ms=%d\n", bound))
			})
			t.Logf("GROWTH mirror %d partitions: kmirror with a %d ms bound %s", parts, bound, r)
			rows = append(rows, row{fmt.Sprintf("kmirror (fenced), kmirror.commit.latency.max.ms=%d", bound), r})
		}
		for _, r := range rows {
			wait := "-"
			if r.res.commits > 0 {
				wait = fmt.Sprintf("%.0f ms (%d commits)", r.res.commitWaitP99*1000, r.res.commits)
			}
			fmt.Fprintf(&b, "| %d | %d | %s | %.1f s | %.0f | %.0f MiB | %.2f | %.2f | %s |\n", parts, n/parts, r.name, r.res.wall.Seconds(),
				float64(n)/r.res.steady.Seconds(), float64(r.res.rssKiB)/1024, bare.steady.Seconds()/r.res.steady.Seconds(),
				kn.steady.Seconds()/r.res.steady.Seconds(), wait)
		}
	}
	t.Log(b.String())
	if out := os.Getenv("KMIGRATE_BENCH_OUT"); out != "" {
		if err := os.WriteFile(out, []byte(b.String()), 0o644); err != nil {
			t.Errorf("write %s: %v", out, err)
		}
	}
}

// gmSeed writes n records of 200 hex characters (compressible about 2:1, as TestMirrorBench's)
// round-robin over the partitions of topic.
func gmSeed(ctx context.Context, t *testing.T, c cluster.Cluster, topic string, parts, n int) {
	t.Helper()
	cl := bedClient(t, c.Bootstrap(), kgo.RecordPartitioner(kgo.ManualPartitioner()), kgo.ProducerLinger(10*time.Millisecond))
	rng := rand.New(rand.NewPCG(1, 2))
	raw := make([]byte, 100)
	var wg sync.WaitGroup
	var perr atomic.Value
	for i := range n {
		for j := range raw {
			raw[j] = byte(rng.Uint32())
		}
		wg.Add(1)
		r := &kgo.Record{Topic: topic, Partition: int32(i % parts), Key: fmt.Appendf(nil, "key-%d", i), Value: []byte(hex.EncodeToString(raw))}
		cl.Produce(ctx, r, func(_ *kgo.Record, err error) {
			if err != nil {
				perr.Store(err)
			}
			wg.Done()
		})
	}
	wg.Wait()
	if err, _ := perr.Load().(error); err != nil {
		t.Fatalf("seed %s: %v", topic, err)
	}
}

// gmProc is a running contender: its pid, whether it still runs, and how to stop it.
type gmProc struct {
	pid   int
	alive func() bool
	stop  func()
	// metrics is kmirror's /metrics URL ("" for the bare loop).
	metrics string
}

// gmResult is one contender's run: wall time from start to the last record, first to last
// record, and its peak RSS.
type gmResult struct {
	wall, steady time.Duration
	rssKiB       int64
	// commitWaitP99 is the p99 of kmirror_commit_wait_seconds over the run (the longest wait
	// of a commit's records to be visible), commits how many commits it observed.
	commitWaitP99 float64
	commits       int64
}

func (r gmResult) String() string {
	return fmt.Sprintf("wall %s, first to last record %s, peak RSS %d KiB", r.wall.Round(time.Millisecond), r.steady.Round(time.Millisecond), r.rssKiB)
}

// gmRun creates the target topic, starts the counter and the contender, waits for n records
// on the target and returns the times and the peak RSS sampled up to the last record.
func gmRun(ctx context.Context, t *testing.T, dst cluster.Cluster, target string, parts, n int, start func() gmProc) gmResult {
	t.Helper()
	bedCreateTopic(t, dst, target, int32(parts), nil)
	cctx, cancel := context.WithCancel(ctx)
	defer cancel()
	count, first := gmCounter(cctx, t, dst, target, parts)
	began := time.Now()
	p := start()
	watch := peakrss.Start(p.pid)
	// A contender that exits when it has copied everything (the bare loop) may exit before the
	// counter has read the last records: it fails only if they are not there 30 s after.
	var exited time.Time
	for count.Load() < int64(n) {
		if exited.IsZero() && !p.alive() {
			exited = time.Now()
		}
		if ctx.Err() != nil || !exited.IsZero() && time.Since(exited) > 30*time.Second {
			watch.Stop()
			p.stop()
			t.Fatalf("%s: %d of %d records copied after %s", target, count.Load(), n, time.Since(began).Round(time.Second))
		}
		time.Sleep(20 * time.Millisecond)
	}
	end := time.Now()
	rss := watch.Stop()
	var waitP99 float64
	var commits int64
	if p.metrics != "" {
		if h, err := scrapeHist(p.metrics, "kmirror_commit_wait_seconds"); err == nil {
			waitP99, commits = latHistQuantile(map[float64]float64{}, h, 0.99), int64(h[math.Inf(1)])
		} else {
			t.Logf("%s: %v", target, err)
		}
	}
	p.stop()
	cancel()
	bpDelete(ctx, t, bedAdmin(t, dst), target) // the target broker holds one copy at a time
	f, _ := first.Load().(time.Time)
	return gmResult{wall: end.Sub(began), steady: end.Sub(f), rssKiB: rss, commitWaitP99: waitP99, commits: commits}
}

// gmCounter counts the committed records of target (read_committed, from the start) in the
// background, and the time the first one arrived.
func gmCounter(ctx context.Context, t *testing.T, dst cluster.Cluster, target string, parts int) (*atomic.Int64, *atomic.Value) {
	t.Helper()
	cl := bedClient(t, dst.Bootstrap(), kgo.ConsumeTopics(target), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()),
		kgo.FetchMaxWait(50*time.Millisecond))
	var count atomic.Int64
	var first atomic.Value
	go func() {
		for ctx.Err() == nil {
			fs := cl.PollFetches(ctx)
			if k := int64(fs.NumRecords()); k > 0 {
				if count.Add(k) == k {
					first.Store(time.Now())
				}
			}
		}
	}()
	// The counter's first fetch must not race the contender's first record: wait until its
	// metadata has a leader for every partition (it fetches as soon as it has).
	bedWaitFor(ctx, t, 10*time.Millisecond, "the counter of "+target+" to know every partition's leader", func() string {
		for p := range int32(parts) {
			if leader, _, err := cl.PartitionLeader(target, p); err != nil || leader < 0 {
				return fmt.Sprintf("partition %d: leader %d, %v", p, leader, err)
			}
		}
		return ""
	})
	return &count, &first
}

// gmBare starts the bare loop (TestMirrorBareHelper in this test binary) from topic to target.
func gmBare(t *testing.T, src, dst cluster.Cluster, topic, target string, n int) gmProc {
	t.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^TestMirrorBareHelper$")
	cmd.Env = append(os.Environ(), "KMIGRATE_BARE_HELPER=1",
		"KMIGRATE_BARE_SRC="+strings.Join(src.Bootstrap(), ","), "KMIGRATE_BARE_DST="+strings.Join(dst.Bootstrap(), ","),
		"KMIGRATE_BARE_TOPIC="+topic, "KMIGRATE_BARE_TARGET="+target, fmt.Sprintf("KMIGRATE_BARE_N=%d", n))
	out := &strings.Builder{}
	cmd.Stdout, cmd.Stderr = out, out
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan struct{})
	go func() { cmd.Wait(); close(exited) }()
	alive := func() bool {
		select {
		case <-exited:
			return false
		default:
			return true
		}
	}
	return gmProc{pid: cmd.Process.Pid, alive: alive, stop: func() {
		<-exited
		if !cmd.ProcessState.Success() {
			t.Errorf("bare loop helper: %v\n%s", cmd.ProcessState, out)
		}
	}}
}

// gmKmirror starts kmirror mirroring topic to <alias>.<topic>, with extra properties (none: the
// default, fenced mode).
func gmKmirror(t *testing.T, bin string, src, dst cluster.Cluster, alias, topic, extra string) gmProc {
	t.Helper()
	props := filepath.Join(t.TempDir(), "growth.properties")
	text := fmt.Sprintf(`clusters=%[1]s,B
%[1]s.bootstrap.servers=%[2]s
B.bootstrap.servers=%[3]s
%[1]s->B.enabled=true
%[1]s->B.topics=%[4]s
replication.factor=1
offset-syncs.topic.replication.factor=1
checkpoints.topic.replication.factor=1
offset-syncs.topic.location=target
`, alias, strings.Join(src.Bootstrap(), ","), strings.Join(dst.Bootstrap(), ","), topic) + extra
	if err := os.WriteFile(props, []byte(text), 0o600); err != nil {
		t.Fatal(err)
	}
	p := mirStart(t, bin, props, alias+"->B", "kmirror-growth-"+alias+"-"+topic)
	return gmProc{pid: p.cmd.Process.Pid, alive: func() bool { return len(p.exited) == 0 && p.cmd.ProcessState == nil }, stop: func() { p.term(t) }, metrics: p.metrics}
}
