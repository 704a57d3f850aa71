package integration

import (
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/kmigrate/kmigrate/integration/cluster"
	"github.com/kmigrate/kmigrate/internal/peakrss"
	"github.com/kmigrate/kmigrate/mm2"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
)

// The production-shape mirror benchmark: 1 KiB values, lz4 on the producer, 24
// partitions, 10M records, Kafka 2.3.0 -> 3.7.1, and four contenders one after the other on the
// same data: a bare franz-go consume-to-produce loop, kmirror, MirrorMaker 2 with its defaults
// and MirrorMaker 2 tuned. Per contender: wall and steady throughput, CPU seconds per GiB
// mirrored (the contender's own user+sys, brokers excluded) and peak RSS (its own VmHWM).
// scripts/bench-mirror.sh runs it; KMIGRATE_BENCH_RECORDS, KMIGRATE_BENCH_VALUE,
// KMIGRATE_BENCH_PARTITIONS and KMIGRATE_BENCH_COMPRESSION make a smaller run of the same code.

// bpShape is the data of a benchmark run, from the environment.
type bpShape struct {
	records, value, partitions int
	compression                string // source producer's, and the target producer's of every contender but MM2 default
}

func bpShapeFromEnv(t *testing.T, records int) bpShape {
	t.Helper()
	s := bpShape{records: records, value: 1024, partitions: 24, compression: "lz4"}
	for _, kv := range []struct {
		name string
		to   *int
	}{{"KMIGRATE_BENCH_RECORDS", &s.records}, {"KMIGRATE_BENCH_VALUE", &s.value}, {"KMIGRATE_BENCH_PARTITIONS", &s.partitions}} {
		if v := os.Getenv(kv.name); v != "" {
			n, err := strconv.Atoi(v)
			if err != nil || n <= 0 {
				t.Fatalf("%s=%q: want a positive integer", kv.name, v)
			}
			*kv.to = n
		}
	}
	if v := os.Getenv("KMIGRATE_BENCH_COMPRESSION"); v != "" {
		s.compression = v
	}
	if _, err := bpCodec(s.compression); err != nil {
		t.Fatalf("KMIGRATE_BENCH_COMPRESSION: %v", err)
	}
	return s
}

func bpCodec(s string) (kgo.CompressionCodec, error) {
	if c, ok := mm2.Compression(s); ok {
		return c, nil
	}
	return kgo.CompressionCodec{}, fmt.Errorf("compression %q: use none, gzip, snappy, lz4 or zstd", s)
}

const bpAlnum = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789"

// bpValues makes record values with some structure: each value is 64-byte segments, 6 in 16
// of them random letters and digits, the others one of 256 fixed segments that recur across
// records (field names, enums, common strings). lz4 cannot shorten the random ones (it finds
// repeats; it has no entropy coder) and removes the recurring ones, about 2:1 overall
// (2.07:1 on 1 KiB values in 1000-record blocks); the benchmark reports the ratio the broker
// stored.
type bpValues struct {
	rng  *rand.Rand
	tmpl [256][64]byte
}

func newBPValues(seed uint64) *bpValues {
	v := &bpValues{rng: rand.New(rand.NewPCG(seed, 14))}
	for i := range v.tmpl {
		for j := range v.tmpl[i] {
			v.tmpl[i][j] = bpAlnum[v.rng.IntN(len(bpAlnum))]
		}
	}
	return v
}

func (v *bpValues) next(size int) []byte {
	b := make([]byte, size)
	for s := 0; s*64 < size; s++ {
		seg := b[s*64 : min(size, s*64+64)]
		if v.rng.IntN(16) < 6 {
			for j := range seg {
				seg[j] = bpAlnum[v.rng.Uint64()%uint64(len(bpAlnum))]
			}
		} else {
			copy(seg, v.tmpl[v.rng.IntN(len(v.tmpl))][:])
		}
	}
	return b
}

// bpSeed produces the shape's records to topic, round-robin over its partitions, and returns
// the key and value bytes written.
func bpSeed(ctx context.Context, t *testing.T, c cluster.Cluster, topic string, s bpShape) int64 {
	t.Helper()
	codec, _ := bpCodec(s.compression)
	cl := bedClient(t, c.Bootstrap(), kgo.RecordPartitioner(kgo.ManualPartitioner()), kgo.ProducerLinger(10*time.Millisecond),
		kgo.ProducerBatchCompression(codec), kgo.ProducerBatchMaxBytes(1<<20), kgo.MaxBufferedRecords(50000))
	vals := newBPValues(1)
	var wg sync.WaitGroup
	var perr atomic.Value
	var bytes int64
	for i := 0; i < s.records; i++ {
		r := &kgo.Record{Topic: topic, Partition: int32(i % s.partitions), Key: fmt.Appendf(nil, "key-%d", i), Value: vals.next(s.value)}
		bytes += int64(len(r.Key) + len(r.Value))
		wg.Add(1)
		cl.Produce(ctx, r, func(_ *kgo.Record, err error) {
			if err != nil {
				perr.Store(err)
			}
			wg.Done()
		})
	}
	wg.Wait()
	if err, _ := perr.Load().(error); err != nil {
		t.Fatalf("seed %s on %s: %v", topic, c.Name(), err)
	}
	return bytes
}

// bpStored is the size of topic's partitions in the cluster's log directories.
func bpStored(ctx context.Context, adm *kadm.Client, topic string, partitions int) (int64, error) {
	set := make(kadm.TopicsSet)
	for p := range int32(partitions) {
		set.Add(topic, p) // a topic listed without partitions asks for none
	}
	dirs, err := adm.DescribeAllLogDirs(ctx, set)
	if err != nil {
		return 0, err
	}
	var n int64
	dirs.Each(func(d kadm.DescribedLogDir) {
		d.Topics.Each(func(p kadm.DescribedLogDirPartition) {
			if p.Topic == topic {
				n += p.Size
			}
		})
	})
	return n, nil
}

// bpEnds is the sum of topic's last stable offsets (0 while the topic does not exist): what
// a read_committed consumer can read, so a transactional contender counts as done when its
// last records are committed, not merely written (for the others it is the high watermark).
func bpEnds(ctx context.Context, adm *kadm.Client, topic string) int64 {
	ends, err := adm.ListCommittedOffsets(ctx, topic)
	if err != nil {
		return 0
	}
	var n int64
	ends.Each(func(o kadm.ListedOffset) {
		if o.Err == nil {
			n += o.Offset
		}
	})
	return n
}

// bpCPU is the user+sys CPU time of a running process and all its threads, from
// /proc/PID/stat (utime and stime, in clock ticks of 1/100 s, Linux's USER_HZ).
func bpCPU(pid int) (time.Duration, error) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return 0, err
	}
	s := string(b)
	i := strings.LastIndexByte(s, ')') // the command name may hold spaces
	if i < 0 {
		return 0, fmt.Errorf("/proc/%d/stat: no command name", pid)
	}
	f := strings.Fields(s[i+1:]) // f[0] is field 3 (state): utime is field 14, stime 15
	if len(f) < 13 {
		return 0, fmt.Errorf("/proc/%d/stat: %d fields", pid, len(f)+2)
	}
	ut, err1 := strconv.ParseInt(f[11], 10, 64)
	st, err2 := strconv.ParseInt(f[12], 10, 64)
	if err1 != nil || err2 != nil {
		return 0, fmt.Errorf("/proc/%d/stat: utime %q, stime %q", pid, f[11], f[12])
	}
	return time.Duration(ut+st) * 10 * time.Millisecond, nil
}

// bpLoad is the first three fields of /proc/loadavg.
func bpLoad() string {
	b, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return "?"
	}
	return strings.Join(strings.Fields(string(b))[:3], " ")
}

// bpRun is a contender's figures.
type bpRun struct {
	name          string
	wall, steady  time.Duration
	atFirst       int64 // records visible when the first became visible: copied before the steady window
	cpu           time.Duration
	rssKiB        int64
	wallRate      float64 // records/s
	steadyRate    float64
	cpuPerGiB     float64 // CPU seconds per GiB of key and value bytes
	records, size int64
	markers       int64 // end offsets past the records once stopped (transaction markers)
	key           string
	copied        int64 // records on the target when measured: fewer than records if it stalled or died
}

// done says whether the contender copied every record.
func (r bpRun) done() bool { return r.copied >= r.records }

func (r *bpRun) finish(records, payload int64) {
	r.records, r.size = records, payload
	r.wallRate = float64(records) / r.wall.Seconds()
	// Steady: the records that became visible to a read_committed reader after the first did,
	// over the time between: a first commit that makes many visible at once counts as copied
	// before the window, not inside it.
	r.steadyRate = float64(records-min(r.atFirst, records)) / max(r.steady, bpPoll).Seconds()
	r.cpuPerGiB = r.cpu.Seconds() / (float64(payload) / (1 << 30))
}

// bpProc is a running contender.
type bpProc struct {
	pid     int
	alive   func() bool
	stop    func()
	metrics string // kmirror's /metrics URL, else ""
}

// bpWaitCopied polls the target topic until it holds want records and returns when the first
// record and the last arrived, how many were visible at the first poll that saw any (atFirst),
// and how many it holds. It counts what a read_committed reader sees (the last stable offsets). It returns early, with fewer, when p
// dies or stops making progress for bpStall (MirrorMaker 2 keeps running when its tasks die,
// e.g. of an OutOfMemoryError); it fails the test when ctx ends first.
func bpWaitCopied(ctx context.Context, t *testing.T, adm *kadm.Client, target string, want int64, p bpProc) (first, end time.Time, atFirst, got int64) {
	t.Helper()
	start, moved, last := time.Now(), time.Now(), int64(0)
	for {
		got = bpEnds(ctx, adm, target)
		if got > 0 && first.IsZero() {
			first, atFirst = time.Now(), got
		}
		if got >= want {
			return first, time.Now(), atFirst, got
		}
		if got != last {
			moved, last = time.Now(), got
		}
		if !p.alive() || time.Since(moved) > bpStall {
			t.Logf("%s: %d of %d records copied after %v (contender alive: %v; no progress for %v)", target, got, want,
				time.Since(start).Round(time.Second), p.alive(), time.Since(moved).Round(time.Second))
			return first, moved, atFirst, got
		}
		if ctx.Err() != nil {
			t.Fatalf("%s: %d of %d records copied after %v", target, got, want, time.Since(start))
		}
		time.Sleep(bpPoll)
	}
}

// bpStall is how long a contender may copy nothing before it is reported as stalled.
const bpStall = 2 * time.Minute

// bpPoll is how often bpWaitCopied reads the target's end offsets: the resolution of the
// first and last record's times.
const bpPoll = 50 * time.Millisecond

// bpMeasure runs one contender started by start, until target holds want records: wall time
// from the start, steady time from the first record, its CPU and peak RSS read before it is
// stopped.
func bpMeasure(ctx context.Context, t *testing.T, adm *kadm.Client, name, target string, want int64, start func() bpProc) bpRun {
	t.Helper()
	t0 := time.Now()
	p := start()
	watch := peakrss.Start(p.pid)
	first, end, atFirst, got := bpWaitCopied(ctx, t, adm, target, want, p)
	r := bpRun{name: name, wall: end.Sub(t0), steady: end.Sub(first), atFirst: atFirst, rssKiB: watch.Stop(), copied: got}
	cpu, err := bpCPU(p.pid)
	if err != nil {
		t.Fatalf("%s: CPU time: %v", name, err)
	}
	r.cpu = cpu
	p.stop()
	// A transactional contender's end offsets count its commit markers too, so it reached want
	// up to that many records early: the excess once it stopped.
	r.markers = max(0, bpEnds(ctx, adm, target)-want)
	return r
}

// bpBare runs the bare loop (TestMirrorBareHelper) as a child process and measures it; it
// exits by itself once it has copied want records, so its CPU is its rusage.
func bpBare(ctx context.Context, t *testing.T, src, dst cluster.Cluster, adm *kadm.Client, topic, target string, want int64, codec string) bpRun {
	t.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^TestMirrorBareHelper$")
	cmd.Env = append(os.Environ(), "KMIGRATE_BARE_HELPER=1",
		"KMIGRATE_BARE_SRC="+strings.Join(src.Bootstrap(), ","), "KMIGRATE_BARE_DST="+strings.Join(dst.Bootstrap(), ","),
		"KMIGRATE_BARE_TOPIC="+topic, "KMIGRATE_BARE_TARGET="+target, fmt.Sprintf("KMIGRATE_BARE_N=%d", want),
		"KMIGRATE_BARE_COMPRESSION="+codec)
	out := &strings.Builder{}
	cmd.Stdout, cmd.Stderr = out, out
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	t0 := time.Now()
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	watch := peakrss.Start(cmd.Process.Pid)
	exited := make(chan struct{})
	go func() { cmd.Wait(); close(exited) }()
	p := bpProc{pid: cmd.Process.Pid, alive: func() bool {
		select {
		case <-exited:
			if bpEnds(ctx, adm, target) >= want {
				return true
			}
			t.Logf("bare loop helper exited (%v):\n%s", cmd.ProcessState, out)
			return false
		default:
			return true
		}
	}}
	first, end, atFirst, got := bpWaitCopied(ctx, t, adm, target, want, p)
	if got < want {
		cmd.Process.Kill()
	}
	<-exited
	if got >= want && !cmd.ProcessState.Success() {
		t.Fatalf("bare loop helper: %v\n%s", cmd.ProcessState, out)
	}
	ru := cmd.ProcessState.SysUsage().(*syscall.Rusage)
	cpu := time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
	return bpRun{name: "bare franz-go loop", wall: end.Sub(t0), steady: end.Sub(first), atFirst: atFirst, cpu: cpu, rssKiB: watch.Stop(), copied: got}
}

// bpKmirrorProps is a kmirror config mirroring topic from src (as alias) to dst (as B).
func bpKmirrorProps(src, dst cluster.Cluster, alias, topic, extra string) string {
	return fmt.Sprintf(`clusters=%[1]s,B
%[1]s.bootstrap.servers=%[2]s
B.bootstrap.servers=%[3]s
%[1]s->B.enabled=true
%[1]s->B.topics=%[4]s
replication.factor=1
offset-syncs.topic.replication.factor=1
checkpoints.topic.replication.factor=1
offset-syncs.topic.location=target
`, alias, strings.Join(src.Bootstrap(), ","), strings.Join(dst.Bootstrap(), ","), topic) + extra
}

// bpKmirror starts the kmirror binary on a config bpKmirrorProps makes.
func bpKmirror(t *testing.T, bin string, src, dst cluster.Cluster, alias, topic, extra string) bpProc {
	t.Helper()
	props := filepath.Join(t.TempDir(), alias+".properties")
	if err := os.WriteFile(props, []byte(bpKmirrorProps(src, dst, alias, topic, extra)), 0o600); err != nil {
		t.Fatal(err)
	}
	p := mirStart(t, bin, props, alias+"->B", "kmirror-bench-"+alias)
	return bpProc{pid: p.cmd.Process.Pid, alive: func() bool { return p.cmd.ProcessState == nil }, stop: func() { p.term(t) }, metrics: p.metrics}
}

// bpMM2Props is an mm2.properties mirroring topic from src (as alias) to dst (as B), with
// replication factors a one-broker 2.3.0 cluster accepts and no heartbeats.
func bpMM2Props(src, dst cluster.Cluster, alias, topic, extra string) string {
	return fmt.Sprintf(`clusters=%[1]s,B
%[1]s.bootstrap.servers=%[2]s
B.bootstrap.servers=%[3]s
%[1]s->B.enabled=true
%[1]s->B.topics=%[4]s
B->%[1]s.enabled=false
replication.factor=1
offset-syncs.topic.replication.factor=1
checkpoints.topic.replication.factor=1
heartbeats.topic.replication.factor=1
offset.storage.replication.factor=1
status.storage.replication.factor=1
config.storage.replication.factor=1
offset-syncs.topic.location=target
emit.heartbeats.enabled=false
`, alias, strings.Join(src.Bootstrap(), ","), strings.Join(dst.Bootstrap(), ","), topic) + extra
}

// bpMM2 starts MirrorMaker 2 with its start script's JVM options (cluster.MM2ScriptJVMFlags).
func bpMM2(ctx context.Context, t *testing.T, src, dst cluster.Cluster, alias, topic, extra string) bpProc {
	t.Helper()
	m, err := cluster.StartMM2(ctx, cluster.MM2Spec{Properties: bpMM2Props(src, dst, alias, topic, extra), Target: "B",
		Name: "bench-" + alias, Dir: t.TempDir(), JVMFlags: cluster.MM2ScriptJVMFlags})
	if err != nil {
		t.Fatalf("start MirrorMaker 2 (%s): %v", alias, err)
	}
	t.Cleanup(func() { m.Close() })
	return bpProc{pid: m.Pid(), alive: func() bool { return m.Pid() != 0 }, stop: func() { m.Close() }}
}

// bpMM2Tuned is the best-effort tuning of MirrorMaker 2 for throughput (docs/benchmarks.md gives
// each value's reason): a task per partition, full producer batches compressed as the source
// was, larger polls and fetches, with each task's memory bounded so that 24 of them fit the
// start script's 2 GiB heap (with the 200-byte benchmark's settings, max.poll.records 5000,
// max.partition.fetch.bytes 4 MiB and the default 32 MiB producer buffer.memory per task, the
// tasks died of OutOfMemoryError on 1 KiB records).
func bpMM2Tuned(alias string, s bpShape) string {
	return fmt.Sprintf(`tasks.max=%d
B.producer.linger.ms=20
B.producer.batch.size=524288
B.producer.buffer.memory=8388608
B.producer.compression.type=%s
%[3]s.consumer.max.poll.records=2000
%[3]s.consumer.max.partition.fetch.bytes=2097152
%[3]s.consumer.fetch.max.bytes=52428800
offset.flush.interval.ms=10000
`, s.partitions, s.compression, alias)
}

// bpClusters starts the benchmark's source (2.3.0) and target (3.7.1) brokers with full JIT
// and a 1 GiB heap (the test defaults, C1 only and 384 MiB, would make the brokers the
// bottleneck at this volume).
func bpClusters(t *testing.T, name string) (src, dst cluster.Cluster, ok bool) {
	t.Helper()
	flags := []string{"-XX:TieredStopAtLevel=4", "-Xmx1g"}
	src = cluster.StartT(t, cluster.Spec{Version: "2.3.0", Name: name + "-src", JVMFlags: flags})
	dst = cluster.StartT(t, cluster.Spec{Version: "3.7.1", Name: name + "-dst", JVMFlags: flags})
	return src, dst, !t.Failed() && !t.Skipped()
}

// bpDelete deletes topics (a contender's copy once measured: the disk holds one copy at a time).
func bpDelete(ctx context.Context, t *testing.T, adm *kadm.Client, topics ...string) {
	t.Helper()
	resp, err := adm.DeleteTopics(ctx, topics...)
	if err == nil {
		err = resp.Error()
	}
	if err != nil {
		t.Errorf("delete %v: %v", topics, err)
	}
}

// TestMirrorBenchProd is the production-shape benchmark (KMIGRATE_BENCH=1; scripts/bench-mirror.sh).
func TestMirrorBenchProd(t *testing.T) {
	if os.Getenv("KMIGRATE_BENCH") != "1" {
		t.Skip("set KMIGRATE_BENCH=1 (or run scripts/bench-mirror.sh) to run the production-shape mirror benchmark")
	}
	s := bpShapeFromEnv(t, 10_000_000)
	loadBefore := bpLoad()
	src, dst, ok := bpClusters(t, "prod")
	if !ok {
		return
	}
	ctx := bedCtx(t, 90*time.Minute)
	sadm, dadm := bedAdmin(t, src), bedAdmin(t, dst)
	topic := bedUnique("prod")
	bedCreateTopic(t, src, topic, int32(s.partitions), map[string]*string{"retention.ms": bedPtr("-1"), "segment.bytes": bedPtr("268435456")})
	t0 := time.Now()
	payload := bpSeed(ctx, t, src, topic, s)
	stored, err := bpStored(ctx, sadm, topic, s.partitions)
	if err != nil {
		t.Fatalf("size of %s on %s: %v", topic, src.Name(), err)
	}
	t.Logf("source %s: %d records, %d B of keys and values, %d B stored (%s, %s) in %v",
		topic, s.records, payload, stored, bpRatio(payload, stored), s.compression, time.Since(t0).Round(time.Second))
	want := int64(s.records)
	bin := filepath.Join(bedBuild(t, "kmirror"), "kmirror")
	var runs []bpRun
	for _, c := range bpContenders(t, s) {
		target := c.key + "." + topic
		var r bpRun
		switch c.key {
		case "bare": // writes to a topic made beforehand; kmirror and MM2 create theirs
			bedCreateTopic(t, dst, target, int32(s.partitions), nil)
			r = bpBare(ctx, t, src, dst, dadm, topic, target, want, s.compression)
		case "km":
			r = bpMeasure(ctx, t, dadm, c.name, target, want, func() bpProc {
				return bpKmirror(t, bin, src, dst, c.key, topic, "B.producer.compression.type="+s.compression+"\n")
			})
		default:
			r = bpMeasure(ctx, t, dadm, c.name, target, want, func() bpProc { return bpMM2(ctx, t, src, dst, c.key, topic, c.extra) })
		}
		r.key = c.key
		r.finish(want, payload)
		t.Logf("%s: %d of %d copied; wall %v, steady %v, CPU %v, peak RSS %d KiB", r.name, r.copied, want, r.wall, r.steady, r.cpu, r.rssKiB)
		runs = append(runs, r)
		bpDelete(ctx, t, dadm, target)
	}
	bpDelete(ctx, t, sadm, topic)
	text := bpReport(s, payload, stored, runs, loadBefore, bpLoad())
	t.Log(text)
	if out := os.Getenv("KMIGRATE_BENCH_OUT"); out != "" {
		if err := os.WriteFile(out, []byte(text), 0o644); err != nil {
			t.Errorf("write %s: %v", out, err)
		}
	}
}

// bpContender is one contender of the production-shape benchmark: key is also the target
// topic's prefix (the source alias for kmirror and MM2).
type bpContender struct{ key, name, extra string }

// bpContenders are the contenders KMIGRATE_BENCH_CONTENDERS names (bare, km, md, mt; default
// all; KMIGRATE_BENCH_SKIP_MM2=1 leaves out md and mt), in that order.
func bpContenders(t *testing.T, s bpShape) []bpContender {
	t.Helper()
	all := []bpContender{{"bare", "bare franz-go loop", ""}, {"km", "kmirror", ""},
		{"md", "MirrorMaker 2 3.7.1, defaults", ""}, {"mt", "MirrorMaker 2 3.7.1, tuned", bpMM2Tuned("mt", s)}}
	want := map[string]bool{"bare": true, "km": true, "md": true, "mt": true}
	if v := os.Getenv("KMIGRATE_BENCH_CONTENDERS"); v != "" {
		want = map[string]bool{}
		for _, k := range strings.Split(v, ",") {
			want[strings.TrimSpace(k)] = true
		}
	}
	if os.Getenv("KMIGRATE_BENCH_SKIP_MM2") == "1" {
		want["md"], want["mt"] = false, false
	}
	var out []bpContender
	for _, c := range all {
		if want[c.key] {
			out = append(out, c)
			delete(want, c.key)
		}
	}
	for k, v := range want {
		if v {
			t.Fatalf("KMIGRATE_BENCH_CONTENDERS: unknown contender %q (bare, km, md, mt)", k)
		}
	}
	return out
}

// bpReport is the Markdown table of the runs and the ratios against kmirror's goals.
func bpReport(s bpShape, payload, stored int64, runs []bpRun, loadBefore, loadAfter string) string {
	var b strings.Builder
	fmt.Fprintf(&b, "\n%d records of %d B in %d partitions, %s on the producer (stored %s), Kafka 2.3.0 -> 3.7.1, one broker each; %.2f GiB of keys and values; load average %s before, %s after:\n\n",
		s.records, s.value, s.partitions, s.compression, bpRatio(payload, stored), float64(payload)/(1<<30), loadBefore, loadAfter)
	fmt.Fprintf(&b, "| contender | wall time | records/s (wall) | records/s (steady) | MiB/s (steady) | CPU s | CPU s per GiB | peak RSS |\n|---|---|---|---|---|---|---|---|\n")
	by := map[string]bpRun{}
	for _, r := range runs {
		by[r.key] = r
		if !r.done() {
			fmt.Fprintf(&b, "| %s | did not finish: %d of %d records, then no progress for %v | - | - | - | %.1f | - | %.0f MiB |\n",
				r.name, r.copied, r.records, bpStall, r.cpu.Seconds(), float64(r.rssKiB)/1024)
			continue
		}
		fmt.Fprintf(&b, "| %s | %.1f s | %.0f | %.0f | %.1f | %.1f | %.2f | %.0f MiB |\n", r.name, r.wall.Seconds(), r.wallRate, r.steadyRate,
			r.steadyRate*float64(payload)/float64(r.records)/(1<<20), r.cpu.Seconds(), r.cpuPerGiB, float64(r.rssKiB)/1024)
	}
	fmt.Fprintf(&b, "\nGoals (a ratio needs both contenders in this run, complete):\n")
	bpGoals(&b, by)
	return b.String()
}

// bpGoals writes the ratios against kmirror's goals that the runs allow.
func bpGoals(b *strings.Builder, by map[string]bpRun) {
	km, ok := by["km"]
	if !ok || !km.done() {
		fmt.Fprintf(b, "- no complete kmirror run: no ratio\n")
		return
	}
	if bare, ok := by["bare"]; ok && bare.done() {
		steady, wall := km.steadyRate/bare.steadyRate, km.wallRate/bare.wallRate
		fmt.Fprintf(b, "- kmirror / bare loop, steady: %.2f (goal >= 0.95: %s)\n", steady, bpSteadyGoal(steady >= 0.95, km, bare))
		fmt.Fprintf(b, "- kmirror / bare loop, wall: %.2f (goal >= 0.9: %s)\n", wall, bpGoal(wall >= 0.9))
	}
	if mt, ok := by["mt"]; ok && mt.done() {
		vs, cpu := km.steadyRate/mt.steadyRate, km.cpuPerGiB/mt.cpuPerGiB
		fmt.Fprintf(b, "- kmirror / MM2 tuned, steady: %.2f (goal >= 4: %s); wall: %.2f\n", vs, bpSteadyGoal(vs >= 4, km, mt), km.wallRate/mt.wallRate)
		fmt.Fprintf(b, "- kmirror CPU per GiB / MM2 tuned's: %.2f (goal <= 0.25: %s)\n", cpu, bpGoal(cpu <= 0.25))
	}
	if md, ok := by["md"]; ok && md.done() {
		fmt.Fprintf(b, "- kmirror / MM2 defaults: steady %.2f, wall %.2f, CPU per GiB %.2f\n", km.steadyRate/md.steadyRate, km.wallRate/md.wallRate, km.cpuPerGiB/md.cpuPerGiB)
	}
	if km.markers > 0 {
		fmt.Fprintf(b, "- kmirror's target end offsets count %d transaction markers (%.2f%% of the records): it was measured as done up to that many records early\n",
			km.markers, 100*float64(km.markers)/float64(km.records))
	}
	rss := float64(km.rssKiB) / 1024
	fmt.Fprintf(b, "- kmirror peak RSS: %.0f MiB (goal <= 256 MiB: %s)\n", rss, bpGoal(rss <= 256))
}

// bpSteadyMin is the shortest steady window a steady ratio is judged on: many commit intervals
// of kmirror (and of MirrorMaker 2's offset flushes), so that one commit making many records
// visible at once does not decide the figure.
const bpSteadyMin = 30 * time.Second

// bpSteadyGoal says whether a goal on a steady ratio was met, or that a run was too short to
// judge it.
func bpSteadyGoal(ok bool, runs ...bpRun) string {
	for _, r := range runs {
		if r.steady < bpSteadyMin {
			return fmt.Sprintf("too short to judge: %s's steady window is %.1f s, under %v", r.name, r.steady.Seconds(), bpSteadyMin)
		}
	}
	return bpGoal(ok)
}

// bpGoal says whether a goal was met.
func bpGoal(ok bool) string {
	if ok {
		return "met"
	}
	return "NOT met"
}

// bpRatio is payload:stored, or "size unknown" where the cluster reports no log directories (kfake).
func bpRatio(payload, stored int64) string {
	if stored <= 0 {
		return "size unknown"
	}
	return fmt.Sprintf("%.2f:1", float64(payload)/float64(stored))
}
