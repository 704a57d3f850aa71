package integration

import (
	"bytes"
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/kmigrate/kmigrate/integration/cluster"
	"github.com/kmigrate/kmigrate/internal/agree"
	"github.com/kmigrate/kmigrate/internal/testkit"
	"github.com/kmigrate/kmigrate/mm2"
	"github.com/kmigrate/kmigrate/report"
)

// TestMain reaps the JVMs that a killed earlier run left behind, says which provider and
// versions run, sets the package's default -parallel (bedParallelism), closes the shared
// clusters (bedSharedPair) after the tests and lets the class-data sharing archives being
// dumped finish (cluster.WaitArchives), and closes every cluster when the run is interrupted
// (SIGINT, SIGTERM).
func TestMain(m *testing.M) {
	flag.Parse()
	bedDefaultParallel()
	for _, r := range cluster.Reap() {
		fmt.Fprintf(os.Stderr, "integration: reaped leftover %s\n", r)
	}
	fmt.Fprintf(os.Stderr, "integration: %s\n", cluster.Describe())
	removeTools := bedToolsDir()
	sig := make(chan os.Signal, 1)
	signal.Notify(sig, syscall.SIGINT, syscall.SIGTERM)
	go func() {
		s := <-sig
		fmt.Fprintf(os.Stderr, "integration: %v: stopping every cluster and MirrorMaker\n", s)
		cluster.CloseAll()
		removeTools()
		os.Exit(2)
	}()
	code := m.Run()
	removeTools()
	bedCloseShared()
	cluster.CloseAll()
	cluster.WaitArchives(time.Minute)
	os.Exit(code)
}

// bedParallelism is how many of the tests that call bedParallel run at once when go test is
// given no -parallel (at least GOMAXPROCS). Those tests mostly wait (group session timeouts,
// transactions held open, MirrorMaker 2's rebalances): on the 2-core machine
// TestIsolationAfterKill and TestVerifyBrokerRestart, run one after the other, used 89.5 s of
// CPU, JVMs and tools included, in 199 s of wall time, under half a core each. With four at
// a time the long ones that wait left the 2 cores idle a quarter of the package's parallel
// phase (make test on a fresh clone, 2026-12-07, sampled every 5 s); a fifth fills part of it.
const bedParallelism = 5

// bedDefaultParallel hands the ordering of the parallel tests to bedGate unless the command
// line set -test.parallel: go test's own limit is raised out of the way (it admits waiting
// tests in no useful order) and bedGate admits max(bedParallelism, GOMAXPROCS) at a time,
// the long ones first. With -parallel on the command line go test alone limits them.
func bedDefaultParallel() {
	set := false
	flag.Visit(func(f *flag.Flag) { set = set || f.Name == "test.parallel" })
	f := flag.Lookup("test.parallel")
	if f == nil || set {
		return
	}
	_ = f.Value.Set("1000")
	bedGate.limit = max(bedParallelism, runtime.GOMAXPROCS(0))
}

// bedParallel runs t in parallel with the package's other parallel tests (after the serial
// ones). It is for tests on clusters of their own or on the shared ones (bedSharedPair) whose
// verdicts do not depend on the machine being otherwise idle: a freeze (SIGSTOP) or a
// condition decides when a fault strikes, never a fixed delay. Tests that measure stay
// serial, and so do TestUnreplicatedTail (its kmirror must write within a 20 s window),
// TestReconcileApplyKilled (kreconcile is killed once it logged 20 commits: on a busy machine
// it could commit every group first) and TestProdFaultsHarness (its lanes are parallel
// subtests, which in a parallel test would wait for a free slot while its producer runs on),
// as do the bucket-count case of TestMirror and TestMirrorKafka4 (mirSuite) and
// TestReconcileSeed (its second plan found the group behind again once, in a make test with
// the load average at 50, MirrorMaker 2 running on beside it); they run first, before the
// parallel ones. The same holds under the testcontainers provider, where each cluster has
// containers and a Docker network of its own.
func bedParallel(t *testing.T) { bedParallelOrdered(t, false) }

// bedParallelLong is bedParallel for the tests that take minutes (docs/testing.md lists the
// slowest): bedGate starts them before the others, so that the run does not end with one of
// them alone on the machine.
func bedParallelLong(t *testing.T) { bedParallelOrdered(t, true) }

// bedParallelParent makes t parallel without a slot of bedGate: for a test whose subtests call
// bedParallel and hold the slots.
func bedParallelParent(t *testing.T) {
	t.Helper()
	t.Parallel()
}

func bedParallelOrdered(t *testing.T, long bool) {
	t.Helper()
	tk := bedGate.register(long)
	t.Parallel()
	start := time.Now()
	bedGate.acquire(tk)
	if d := time.Since(start); d >= 100*time.Millisecond {
		// scripts/testtimes leaves these seconds out of the test's.
		t.Logf("waited %.1fs for a parallel slot (bedGate)", d.Seconds())
	}
	t.Cleanup(bedGate.release)
}

// bedGate admits the parallel tests limit at a time (none when limit is 0), in the order of a
// queue that every test joins before it calls t.Parallel: the long ones first, then in the
// order they registered. Each test holds its slot until its cleanups (its clusters' shutdown
// among them) are done. A test that runs parallel subtests must not take a slot itself: it
// would hold it while its subtests wait for one.
var bedGate = func() *bedGateQueue {
	g := &bedGateQueue{}
	g.cond.L = &g.mu
	return g
}()

type bedGateQueue struct {
	mu      sync.Mutex
	cond    sync.Cond
	limit   int
	running int
	queue   []*bedTicket
}

type bedTicket struct{ long bool }

func (g *bedGateQueue) register(long bool) *bedTicket {
	g.mu.Lock()
	defer g.mu.Unlock()
	tk := &bedTicket{long: long}
	i := len(g.queue)
	if long {
		i = 0
		for i < len(g.queue) && g.queue[i].long {
			i++
		}
	}
	g.queue = slices.Insert(g.queue, i, tk)
	return tk
}

// acquire waits until tk heads the queue and a slot is free.
func (g *bedGateQueue) acquire(tk *bedTicket) {
	g.mu.Lock()
	defer g.mu.Unlock()
	for g.limit > 0 && (g.running >= g.limit || g.queue[0] != tk) {
		g.cond.Wait()
	}
	g.queue = slices.DeleteFunc(g.queue, func(q *bedTicket) bool { return q == tk })
	g.running++
	g.cond.Broadcast()
}

func (g *bedGateQueue) release() {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.running--
	g.cond.Broadcast()
}

// The shared clusters, by name: started on first use, closed by TestMain.
var (
	bedSharedMu sync.Mutex
	bedShared   = map[string]*cluster.Shared{}
)

// bedSharedPair returns the source and target of the pair $KMIGRATE_PAIR names (bedPair),
// one-broker clusters with the provider's defaults, shared by every test of this run that
// asks: both are started together by the first test that asks, and TestMain closes them. A
// test on them must not stop, kill, freeze or restart a broker, change a broker's
// configuration, or run a mirror whose aliases another test on them uses; it names its
// topics and groups uniquely (bedUnique) and asserts only on what it created. It skips or
// fails as cluster.StartT does.
func bedSharedPair(t *testing.T) (src, dst cluster.Cluster) {
	t.Helper()
	srcV, dstV := bedPair(t)
	srcName, dstName := bedPairNames("shared", srcV, dstV)
	s, d := bedSharedNamed(srcName, srcV), bedSharedNamed(dstName, dstV)
	if !testing.Short() {
		// At once: the pair is ready in the time of its slower cluster.
		var wg sync.WaitGroup
		wg.Go(func() { _, _ = s.Start() })
		wg.Go(func() { _, _ = d.Start() })
		wg.Wait()
	}
	return s.T(t), d.T(t)
}

func bedSharedNamed(name, version string) *cluster.Shared {
	bedSharedMu.Lock()
	defer bedSharedMu.Unlock()
	s := bedShared[name]
	if s == nil {
		s = &cluster.Shared{Spec: cluster.Spec{Version: version, Name: name}}
		bedShared[name] = s
	}
	return s
}

// bedCloseShared closes every shared cluster that was started.
func bedCloseShared() {
	bedSharedMu.Lock()
	defer bedSharedMu.Unlock()
	for name, s := range bedShared {
		if err := s.Close(); err != nil {
			fmt.Fprintf(os.Stderr, "integration: close shared cluster %s: %v\n", name, err)
		}
	}
}

// Helpers shared by the tests of this package. They are named bed* so that the other test
// files (verify, reconcile, mirror) can define their own without clashing.

// bedClient is a franz-go client on seeds, closed in t.Cleanup.
func bedClient(t testing.TB, seeds []string, opts ...kgo.Opt) *kgo.Client {
	t.Helper()
	cl, err := kgo.NewClient(append([]kgo.Opt{kgo.SeedBrokers(seeds...)}, opts...)...)
	if err != nil {
		t.Fatalf("client for %v: %v", seeds, err)
	}
	t.Cleanup(cl.Close)
	return cl
}

// bedAdmin is a kadm client on the cluster.
func bedAdmin(t testing.TB, c cluster.Cluster) *kadm.Client {
	t.Helper()
	return kadm.NewClient(bedClient(t, c.Bootstrap()))
}

// bedCreateTopic creates topic with the given partitions and a replication factor of
// min(brokers, 3), and optional topic configs.
func bedCreateTopic(t testing.TB, c cluster.Cluster, topic string, partitions int32, configs map[string]*string) {
	t.Helper()
	// A broker creates thousands of partitions in minutes (2.3.0 writes each to ZooKeeper):
	// the bound and the broker's own timeout grow with them.
	wait := time.Minute + time.Duration(partitions)*30*time.Millisecond
	ctx, cancel := context.WithTimeout(context.Background(), wait)
	defer cancel()
	adm := bedAdmin(t, c)
	adm.SetTimeoutMillis(int32(wait.Milliseconds()))
	resp, err := adm.CreateTopic(ctx, partitions, int16(min(c.Brokers(), 3)), configs, topic)
	if err == nil {
		err = resp.Err
	}
	if err != nil {
		t.Fatalf("create topic %s on cluster %s: %v", topic, c.Name(), err)
	}
	bedServed(ctx, t, bedClient(t, c.Bootstrap()), c.Name(), topic, partitions)
}

// bedServed waits until every broker of the cluster cl connects to lists topic with its
// partitions, each with a leader. A created topic reaches the brokers one by one: a client
// with no retries (as some tests use) that asks a broker not there yet meets
// UNKNOWN_TOPIC_OR_PARTITION, so one broker's metadata is not enough.
func bedServed(ctx context.Context, t testing.TB, cl *kgo.Client, cluster, topic string, partitions int32) {
	t.Helper()
	deadline, _ := ctx.Deadline()
	ans, err := agree.Sets(ctx, cl, agree.Config{Timeout: time.Until(deadline)}, agree.Partitions(topic, true),
		func(s map[int32]bool) bool { return len(s) == int(partitions) })
	if err != nil {
		t.Fatalf("topic %s on %s: %v", topic, cluster, err)
	}
	if s, ok := ans.Agreed(); !ok || len(s) != int(partitions) {
		t.Fatalf("topic %s on %s: not every broker lists its %d partitions with a leader after %s: %s", topic, cluster, partitions,
			ans.Waited, ans.Disagreement(func(p int32) string { return fmt.Sprintf("partition %d", p) }))
	}
}

// bedUnique is a name unique to this run and to this call: tests on the shared clusters
// (bedSharedPair) and tests running in parallel keep their topics and groups apart by it, as
// do parallel runs and kept log dirs.
func bedUnique(prefix string) string {
	return fmt.Sprintf("%s-%x-%d", prefix, time.Now().UnixNano(), bedUniqueSeq.Add(1))
}

var bedUniqueSeq atomic.Int64

// bedEndOffsets returns the high watermark of every partition of topic.
func bedEndOffsets(ctx context.Context, t testing.TB, c cluster.Cluster, topic string) map[int32]int64 {
	t.Helper()
	ends, err := bedAdmin(t, c).ListEndOffsets(ctx, topic)
	if err != nil {
		t.Fatalf("list end offsets of %s on %s: %v", topic, c.Name(), err)
	}
	out := map[int32]int64{}
	ends.Each(func(o kadm.ListedOffset) {
		if o.Err == nil {
			out[o.Partition] = o.Offset
		}
	})
	return out
}

// bedRecordsFrom counts the records a read_committed consumer of topic/partition reads from
// offset from to the partition's last stable offset: what a consumer whose group is committed
// at from has left to read. Offsets do not count records where transaction markers (kmirror's
// commits) or aborted records take offsets.
func bedRecordsFrom(ctx context.Context, t testing.TB, c cluster.Cluster, topic string, partition int32, from int64) int64 {
	t.Helper()
	return bedCount(ctx, t, c, topic, partition, from, true)
}

// bedWritten counts every data record written to topic/partition, committed, aborted or in an
// open transaction (read_uncommitted to the high watermark): what writers put there.
func bedWritten(ctx context.Context, t testing.TB, c cluster.Cluster, topic string, partition int32) int64 {
	t.Helper()
	return bedCount(ctx, t, c, topic, partition, 0, false)
}

func bedCount(ctx context.Context, t testing.TB, c cluster.Cluster, topic string, partition int32, from int64, committed bool) int64 {
	t.Helper()
	list, iso := bedAdmin(t, c).ListCommittedOffsets, kgo.ReadCommitted()
	if !committed {
		list, iso = bedAdmin(t, c).ListEndOffsets, kgo.ReadUncommitted()
	}
	ends, err := list(ctx, topic)
	if err != nil {
		t.Fatalf("list last stable offsets of %s on %s: %v", topic, c.Name(), err)
	}
	e, ok := ends.Lookup(topic, partition)
	if !ok || e.Err != nil {
		return 0 // not created yet: nothing to read
	}
	if from >= e.Offset {
		return 0
	}
	cl, err := kgo.NewClient(kgo.SeedBrokers(c.Bootstrap()...),
		kgo.ConsumePartitions(map[string]map[int32]kgo.Offset{topic: {partition: kgo.NewOffset().At(from)}}),
		kgo.FetchIsolationLevel(iso), kgo.KeepControlRecords())
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	var n int64
	for last := from - 1; last < e.Offset-1; {
		fs := cl.PollFetches(ctx)
		if err := ctx.Err(); err != nil {
			t.Fatalf("count records of %s/%d on %s from %d: deadline at offset %d of %d", topic, partition, c.Name(), from, last, e.Offset)
		}
		fs.EachRecord(func(r *kgo.Record) {
			if r.Offset >= e.Offset {
				return
			}
			last = r.Offset
			if !r.Attrs.IsControl() {
				n++
			}
		})
	}
	return n
}

// bedReadPartition reads topic/partition from offset from up to its end at the time of the
// call and returns the records in order. It stops early when no record comes for 3 s (15 s for the first) (the end
// may be a transaction marker or a compacted gap).
func bedReadPartition(ctx context.Context, t testing.TB, c cluster.Cluster, topic string, partition int32, from int64) []*kgo.Record {
	t.Helper()
	end := bedEndOffsets(ctx, t, c, topic)[partition]
	if from >= end {
		return nil
	}
	cl := bedClient(t, c.Bootstrap(), kgo.ConsumePartitions(map[string]map[int32]kgo.Offset{
		topic: {partition: kgo.NewOffset().At(from)},
	}))
	var out []*kgo.Record
	for {
		idle := 3 * time.Second
		if len(out) == 0 {
			idle = 15 * time.Second // the first fetch also connects
		}
		pctx, cancel := context.WithTimeout(ctx, idle)
		fs := cl.PollFetches(pctx)
		cancel()
		if err := ctx.Err(); err != nil {
			t.Fatalf("read %s/%d on %s from %d: got %d of %d records when the deadline came", topic, partition, c.Name(), from, len(out), end-from)
		}
		fs.EachError(func(tp string, p int32, err error) {
			if !errors.Is(err, context.DeadlineExceeded) {
				t.Logf("fetch %s/%d on %s: %v", tp, p, c.Name(), err)
			}
		})
		n := 0
		for _, r := range fs.Records() {
			if r.Offset < end {
				out = append(out, r)
				n++
			}
		}
		if n == 0 || out[len(out)-1].Offset >= end-1 {
			return out
		}
	}
}

// bedReport writes v (a kverify or kreconcile result) as the reports name.html, name.xml and
// name.json into $KMIGRATE_REPORT_DIR (scripts/nightly.sh sets it; unset, nothing is
// written). name is "<scenario>-<tool>".
func bedReport(t testing.TB, name string, v any) {
	t.Helper()
	if err := report.WriteFiles(os.Getenv(report.ReportDirEnv), name, v); err != nil {
		t.Errorf("report %s: %v", name, err)
	}
}

// bedCtx is a context that ends after d or when the test ends.
func bedCtx(t testing.TB, d time.Duration) context.Context {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), d)
	t.Cleanup(cancel)
	return ctx
}

// bedWaitFor calls cond every interval until it returns "" and fails the test with what and
// cond's last answer (the state it waits out) when ctx ends first.
func bedWaitFor(ctx context.Context, t testing.TB, interval time.Duration, what string, cond func() string) {
	t.Helper()
	for {
		state := cond()
		if state == "" {
			return
		}
		select {
		case <-ctx.Done():
			t.Fatalf("waiting for %s: %s when the deadline came", what, state)
		case <-time.After(interval):
		}
	}
}

// bedBuild builds the commands of cmd/ named by tools (kverify, kreconcile, kmirror) into a
// temporary directory and returns it.
func bedBuild(t testing.TB, tools ...string) string {
	t.Helper()
	bedTools.mu.Lock()
	defer bedTools.mu.Unlock()
	if bedTools.dir == "" { // no TestMain ran (never in this package): a build of the test's own
		return testkit.Commands(t, tools...)
	}
	var missing []string
	for _, n := range tools {
		if _, ok := bedTools.built[n]; !ok {
			missing = append(missing, n)
		}
	}
	if len(missing) > 0 {
		err := testkit.BuildCommands(bedTools.dir, nil, missing...)
		for _, n := range missing {
			bedTools.built[n] = err
		}
	}
	for _, n := range tools {
		if err := bedTools.built[n]; err != nil {
			t.Fatal(err)
		}
	}
	return bedTools.dir
}

// bedTools holds the commands bedBuild built, each once per test process into one directory
// that TestMain creates and removes: go build links a command anew every time, and with a
// build per test a make test linked 64 times in this package (72 s of CPU). The tests only
// run them.
var bedTools struct {
	mu    sync.Mutex
	dir   string
	built map[string]error // a command's build, nil when it succeeded
}

// bedToolsDir creates bedTools' directory (TestMain) and returns its removal.
func bedToolsDir() (remove func()) {
	dir, err := os.MkdirTemp("", "kmigrate-integration-tools-*")
	if err != nil {
		fmt.Fprintf(os.Stderr, "integration: %v: each test builds its own commands\n", err)
		return func() {}
	}
	bedTools.dir, bedTools.built = dir, map[string]error{}
	return func() { os.RemoveAll(dir) }
}

// bedRun runs bin with args (3 minutes at most), its output going to stdout and stderr, and
// returns its exit code.
func bedRun(t testing.TB, stdout, stderr io.Writer, bin string, args ...string) int {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, bin, args...)
	cmd.Stdout, cmd.Stderr = stdout, stderr
	err := cmd.Run()
	var ee *exec.ExitError
	if errors.As(err, &ee) {
		return ee.ExitCode()
	}
	if err != nil {
		t.Fatalf("run %s: %v", filepath.Base(bin), err)
	}
	return 0
}

// bedOutput is bedRun with the output captured: exit code, stdout, stderr.
func bedOutput(t testing.TB, bin string, args ...string) (int, string, string) {
	t.Helper()
	var out, errb bytes.Buffer
	code := bedRun(t, &out, &errb, bin, args...)
	return code, out.String(), errb.String()
}

// bedProperties is an mm2.properties for the flow srcAlias->dstAlias of topics (a list or a
// regex) with the identity replication policy, offset syncs on the target and replication
// factor 1 for the mirrored and the internal topics (explicit, as 2.3.0 needs), then extra
// lines. MirrorMaker 2 runs also need bedMM2Worker.
func bedProperties(src, dst cluster.Cluster, srcAlias, dstAlias, topics string, extra ...string) string {
	lines := []string{
		"clusters=" + srcAlias + "," + dstAlias,
		srcAlias + ".bootstrap.servers=" + strings.Join(src.Bootstrap(), ","),
		dstAlias + ".bootstrap.servers=" + strings.Join(dst.Bootstrap(), ","),
		srcAlias + "->" + dstAlias + ".enabled=true",
		srcAlias + "->" + dstAlias + ".topics=" + topics,
		"replication.policy.class=org.apache.kafka.connect.mirror.IdentityReplicationPolicy",
		"offset-syncs.topic.location=target",
		"replication.factor=1",
		"offset-syncs.topic.replication.factor=1",
		"checkpoints.topic.replication.factor=1",
	}
	return strings.Join(append(lines, extra...), "\n") + "\n"
}

// bedMM2Worker are the replication factors of MirrorMaker 2's own topics (heartbeats and the
// Connect worker's offsets, status and configs) for single-broker clusters.
var bedMM2Worker = []string{
	"heartbeats.topic.replication.factor=1",
	"offset.storage.replication.factor=1",
	"status.storage.replication.factor=1",
	"config.storage.replication.factor=1",
}

// bedPtr is a pointer to s (topic config values).
func bedPtr(s string) *string { return &s }

// bedFlow parses mm2.properties text and returns its flow name ("A->B"; "" for the only
// enabled one).
func bedFlow(t testing.TB, props, name string) *mm2.Flow {
	t.Helper()
	cfg, err := mm2.Parse(strings.NewReader(props))
	if err != nil {
		t.Fatalf("parse mm2.properties: %v", err)
	}
	flow, err := cfg.Flow(name)
	if err != nil {
		t.Fatalf("flow %q: %v", name, err)
	}
	return flow
}

// bedProduce writes copies of recs (key, value, headers, timestamp) in order to
// topic/partition on c, acks=all, one request in flight.
func bedProduce(ctx context.Context, t testing.TB, c cluster.Cluster, topic string, partition int32, recs []*kgo.Record) {
	t.Helper()
	cl := bedClient(t, c.Bootstrap(), kgo.RecordPartitioner(kgo.ManualPartitioner()), kgo.RequiredAcks(kgo.AllISRAcks()), kgo.MaxProduceRequestsInflightPerBroker(1))
	batch := make([]*kgo.Record, len(recs))
	for i, r := range recs {
		batch[i] = &kgo.Record{Topic: topic, Partition: partition, Key: r.Key, Value: r.Value, Headers: r.Headers, Timestamp: r.Timestamp}
	}
	if err := cl.ProduceSync(ctx, batch...).FirstErr(); err != nil {
		t.Fatalf("produce to %s/%d on %s: %v", topic, partition, c.Name(), err)
	}
}
