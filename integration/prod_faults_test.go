package integration

import (
	"context"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/kmigrate/kmigrate/integration/cluster"
	"github.com/kmigrate/kmigrate/internal/netfault"
	"github.com/kmigrate/kmigrate/logread"
	"github.com/kmigrate/kmigrate/mm2"
	"github.com/kmigrate/kmigrate/reconcile"
	"github.com/kmigrate/kmigrate/verify"
)

// TestProdFaults is the fault suite during mirroring on the production-shaped bed: Kafka
// 2.3.0 -> 3.7.1 (another pair with KMIGRATE_PAIR, e.g. 2.3.0-4.3.1), three brokers each
// (RF 3, min.insync 2), every client connection of the
// mirror going through a loopback fault proxy per broker (cluster.Spec.Proxied) while the
// brokers replicate directly. A steady producer writes to the source's direct listener (faults
// never touch it); a tail consumer on the target's direct listener follows what is committed
// there. In sequence, each fault bounded in time:
//
//   - the source blackholed (all three proxies: packets held, no reset) for the hold, then the
//     target for the hold;
//   - kill -9 of the target broker leading a mirrored partition, three times, restarted after
//     10 s each time;
//   - a clean restart of the source broker leading a mirrored partition, twice;
//   - kill -9 of the mirror, five times, restarted at once each time.
//
// Every tool runs at once, each mirroring its own topic with its own producer and tail, so
// each fault hits them all; the sequence lasts as long as its slowest tool. After each fault,
// per tool: the time until the target holds every record the source had acknowledged when the
// fault ended (lag 0; at most 2 minutes for kmirror), that kmirror did not exit, kverify's diff
// (verify.Diff) of the records produced since the previous fault (missing, duplicated), and an
// idle source group committed at the previous window's end, planned with kreconcile's library
// on the target (kmirror's group sync must make every partition exact within a minute). At the
// end each producer has written at least the records asked and the whole topic's diff must be
// identical for kmirror. MirrorMaker 2 3.7.1 runs with its defaults and with
// exactly.once.source.support=enabled, judged by the same diff and plan, whose findings are
// recorded, not failed on. A table row per tool and fault is printed.
//
// Opt-in (KMIGRATE_PROD_FAULTS=1, make it-prod): about 15 minutes at full size.
// KMIGRATE_FAULTS_RECORDS (default 1,000,000), KMIGRATE_FAULTS_HOLD (the blackholes' length,
// default 60s), KMIGRATE_FAULTS_RATE (records per second per tool during the faults, default
// 1500) and KMIGRATE_FAULTS_TOOLS (default kmirror,mm2,mm2-eos) make a smaller run of the same
// code; KMIGRATE_FAULTS_ONLY, a regular expression, keeps the faults whose names match
// (MirrorMaker 2 takes about 5 minutes to resume after each fault that costs its Connect worker
// its group membership, which sets the sequence's length).
func TestProdFaults(t *testing.T) {
	if os.Getenv("KMIGRATE_PROD_FAULTS") != "1" {
		t.Skip("skip: opt-in (KMIGRATE_PROD_FAULTS=1, or make it-prod: about 5 minutes for kmirror alone, 31 with both MirrorMaker 2 lanes)")
	}
	cfg := pfConfigFromEnv(t)
	srcV, dstV := bedPair(t)
	why := &pfWhy{}
	why.logLast(t)
	src := cluster.StartT(t, cluster.Spec{Version: srcV, Brokers: 3, Proxied: true, Name: "pf-src"})
	dst := cluster.StartT(t, cluster.Spec{Version: dstV, Brokers: 3, Proxied: true, Name: "pf-dst"})
	if t.Failed() || t.Skipped() {
		return
	}
	bed := &pfBed{src: src, dst: dst, srcDirect: pfDirectOf(t, src), dstDirect: pfDirectOf(t, dst), cfg: cfg, why: why}
	rows := bed.run(t, cfg.tools)
	t.Logf("faults during mirroring, %d records at least per tool, blackholes of %s:\n%s", cfg.records, cfg.hold, pfTable(rows))
}

// pfConfig is the size of a run, from the environment.
type pfConfig struct {
	records int
	hold    time.Duration
	rate    int
	tools   []string
	only    *regexp.Regexp // the faults to run, by name; nil: all
}

func pfConfigFromEnv(t *testing.T) pfConfig {
	t.Helper()
	c := pfConfig{records: 1_000_000, hold: 60 * time.Second, rate: 1500, tools: []string{"kmirror", "mm2", "mm2-eos"}}
	num := func(name string, into *int) {
		if v := os.Getenv(name); v != "" {
			n, err := strconv.Atoi(v)
			if err != nil || n <= 0 {
				t.Fatalf("%s=%q: want a positive whole number", name, v)
			}
			*into = n
		}
	}
	num("KMIGRATE_FAULTS_RECORDS", &c.records)
	num("KMIGRATE_FAULTS_RATE", &c.rate)
	if v := os.Getenv("KMIGRATE_FAULTS_HOLD"); v != "" {
		d, err := time.ParseDuration(v)
		if err != nil || d <= 0 || d > netfault.MaxFault {
			t.Fatalf("KMIGRATE_FAULTS_HOLD=%q: want a duration from 1s to %s, e.g. 60s", v, netfault.MaxFault)
		}
		c.hold = d
	}
	if v := os.Getenv("KMIGRATE_FAULTS_ONLY"); v != "" {
		re, err := regexp.Compile(v)
		if err != nil {
			t.Fatalf("KMIGRATE_FAULTS_ONLY=%q: not a regular expression: %v", v, err)
		}
		c.only = re
	}
	if v := os.Getenv("KMIGRATE_FAULTS_TOOLS"); v != "" {
		c.tools = nil
		for _, s := range strings.Split(v, ",") {
			switch s = strings.TrimSpace(s); s {
			case "kmirror", "mm2", "mm2-eos":
				c.tools = append(c.tools, s)
			default:
				t.Fatalf("KMIGRATE_FAULTS_TOOLS: unknown tool %q: want kmirror, mm2 or mm2-eos", s)
			}
		}
	}
	return c
}

// pfDirect is a cluster seen on its direct listeners: the bed's helpers (end offsets, reads,
// diffs) then never go through a fault.
type pfDirect struct {
	cluster.Cluster
	direct []string
}

func (d pfDirect) Bootstrap() []string { return d.direct }

func pfDirectOf(t *testing.T, c cluster.Cluster) cluster.Cluster {
	t.Helper()
	_, direct, ok := cluster.ProxiesOf(c)
	if !ok {
		t.Fatalf("cluster %s has no proxies: start it with Spec.Proxied", c.Name())
	}
	return pfDirect{Cluster: c, direct: direct}
}

// pfBed is the two proxied clusters and the run's size.
type pfBed struct {
	src, dst             cluster.Cluster
	srcDirect, dstDirect cluster.Cluster
	cfg                  pfConfig
	// why keeps the reasons the run failed for (fatalf), logged again as the test's very last
	// lines: the clusters' log tails come after them otherwise.
	why *pfWhy
}

// pfWhy is what fatalf recorded.
type pfWhy struct {
	mu  sync.Mutex
	why []string
}

// fatalf records why the run fails and fails t.
func (b *pfBed) fatalf(t *testing.T, format string, args ...any) {
	t.Helper()
	msg := fmt.Sprintf(format, args...)
	if b.why != nil {
		b.why.mu.Lock()
		b.why.why = append(b.why.why, msg)
		b.why.mu.Unlock()
	}
	t.Fatal(msg)
}

// logLast registers, before the clusters start (cleanups run last in, first out), the log of
// why the run failed, after the clusters' log tails.
func (w *pfWhy) logLast(t *testing.T) {
	t.Cleanup(func() {
		w.mu.Lock()
		defer w.mu.Unlock()
		if len(w.why) > 0 {
			t.Logf("the run failed (the first failures again, after the logs above):\n%s", strings.Join(w.why, "\n"))
		}
	})
}

// pfRow is one line of the table.
type pfRow struct {
	tool, fault         string
	behind              int64 // records acknowledged by the source but not yet on the target when the fault ended
	matched             int64
	missing, duplicated int64
	other               int64 // mismatched and extra records
	lag0                time.Duration
	lagged              bool   // lag 0 was not reached within pfLagCap
	group               string // the idle group's partitions on the target by kreconcile status
	note                string
}

const (
	pfParts    = 6
	pfLagLimit = 2 * time.Minute // kmirror's bound on the time to lag 0 after a fault
	pfLagCap   = 5 * time.Minute // how long kmirror is waited for before it counts as hung
	// pfMM2LagCap is how long MirrorMaker 2 is waited for before it is restarted, as an
	// operator alerted by lag would: past the 2 minutes asked of a mirror (pfLagLimit), short of
	// Connect's scheduled.rebalance.max.delay.ms (5 minutes), after which a worker that
	// rejoined with a new member id would get its lost tasks back by itself. Waiting those 5
	// minutes, once or twice per fault, made the run too long for CI.
	pfMM2LagCap = 3 * time.Minute
	pfKillHold  = 10 * time.Second
	pfValuePad  = 80
	pfTailEvery = 200 * time.Millisecond
)

// pfProducer writes records "<partition>-<seq>-<pad>" round-robin to the source's direct
// listener (idempotent, acks=all), paced at rate until finish, then as fast as it can until
// it has written at least want. Per partition it keeps the last acknowledged seq and offset.
type pfProducer struct {
	cl      *kgo.Client
	topic   string
	want    int
	rate    int
	mu      sync.Mutex
	lastSeq [pfParts]int64 // -1: nothing acknowledged yet
	lastOff [pfParts]int64
	acked   atomic.Int64
	err     atomic.Value
	unpaced atomic.Bool
	done    chan struct{}
}

func pfStartProducer(ctx context.Context, t *testing.T, b *pfBed, topic string) *pfProducer {
	t.Helper()
	p := &pfProducer{topic: topic, want: b.cfg.records, rate: b.cfg.rate, done: make(chan struct{}),
		cl: bedClient(t, b.srcDirect.Bootstrap(), kgo.RecordPartitioner(kgo.ManualPartitioner()), kgo.ProducerLinger(5*time.Millisecond))}
	for i := range p.lastSeq {
		p.lastSeq[i], p.lastOff[i] = -1, -1
	}
	go p.loop(ctx)
	return p
}

func (p *pfProducer) loop(ctx context.Context) {
	defer close(p.done)
	pad := strings.Repeat("p", pfValuePad)
	const chunk = 100
	tick := time.NewTicker(time.Second * chunk / time.Duration(p.rate))
	defer tick.Stop()
	var seq [pfParts]int64
	for i := 0; ctx.Err() == nil && (!p.unpaced.Load() || i < p.want); i++ {
		if i%chunk == 0 && !p.unpaced.Load() {
			select {
			case <-tick.C:
			case <-ctx.Done():
			}
		}
		part := int32(i % pfParts)
		s := seq[part]
		seq[part]++
		r := &kgo.Record{Topic: p.topic, Partition: part, Key: fmt.Appendf(nil, "k%d", i%1000), Value: fmt.Appendf(nil, "%d-%d-%s", part, s, pad)}
		p.cl.Produce(ctx, r, func(r *kgo.Record, err error) {
			if err != nil {
				p.err.Store(err)
				return
			}
			p.acked.Add(1)
			p.mu.Lock()
			p.lastSeq[part], p.lastOff[part] = s, r.Offset
			p.mu.Unlock()
		})
	}
	p.cl.Flush(ctx)
}

// snapshot is the last acknowledged seq and the end offset (last acknowledged + 1) per partition.
func (p *pfProducer) snapshot() (seqs, ends [pfParts]int64) {
	p.mu.Lock()
	defer p.mu.Unlock()
	for i := range seqs {
		seqs[i], ends[i] = p.lastSeq[i], p.lastOff[i]+1
	}
	return seqs, ends
}

// finish stops pacing, waits until at least want records are written and fails on a produce error.
func (p *pfProducer) finish(t *testing.T) {
	t.Helper()
	p.unpaced.Store(true)
	<-p.done
	if err, _ := p.err.Load().(error); err != nil {
		t.Fatalf("steady producer (the harness, not the tool): %v", err)
	}
	if n := p.acked.Load(); n < int64(p.want) {
		t.Fatalf("steady producer: %d records acknowledged, want at least %d", n, p.want)
	}
}

// pfTail follows the target topic on its direct listener, read_committed, and keeps the
// highest seq seen per partition; a record whose value names another partition is counted.
type pfTail struct {
	maxSeq    [pfParts]atomic.Int64
	misplaced atomic.Int64
	records   atomic.Int64
}

func pfStartTail(ctx context.Context, t *testing.T, b *pfBed, topic string) *pfTail {
	t.Helper()
	tl := &pfTail{}
	for i := range tl.maxSeq {
		tl.maxSeq[i].Store(-1)
	}
	cl := bedClient(t, b.dstDirect.Bootstrap(), kgo.ConsumeTopics(topic), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()),
		kgo.FetchIsolationLevel(kgo.ReadCommitted()), kgo.MetadataMinAge(time.Second), kgo.MetadataMaxAge(2*time.Second))
	go func() {
		for ctx.Err() == nil {
			fs := cl.PollFetches(ctx)
			fs.EachRecord(tl.add)
		}
	}()
	return tl
}

func (tl *pfTail) add(r *kgo.Record) {
	tl.records.Add(1)
	f := strings.SplitN(string(r.Value), "-", 3)
	if len(f) != 3 || f[0] != strconv.Itoa(int(r.Partition)) || r.Partition < 0 || r.Partition >= pfParts {
		tl.misplaced.Add(1)
		return
	}
	s, err := strconv.ParseInt(f[1], 10, 64)
	if err != nil {
		tl.misplaced.Add(1)
		return
	}
	m := &tl.maxSeq[r.Partition]
	for {
		cur := m.Load()
		if s <= cur || m.CompareAndSwap(cur, s) {
			return
		}
	}
}

// count is how many records of seqs the target does not have yet.
func (tl *pfTail) count(seqs [pfParts]int64) int64 {
	var n int64
	for p, want := range seqs {
		n += max(0, want-tl.maxSeq[p].Load())
	}
	return n
}

// behind is "" once every partition's highest seq on the target reaches seqs.
func (tl *pfTail) behind(seqs [pfParts]int64) string {
	var b strings.Builder
	for p, want := range seqs {
		if got := tl.maxSeq[p].Load(); got < want {
			fmt.Fprintf(&b, " p%d at seq %d of %d", p, got, want)
		}
	}
	return b.String()
}

// pfTool is the mirror under test: kmirror or MirrorMaker 2.
type pfTool struct {
	name    string
	alive   func() error // nil while it runs
	kill    func()       // SIGKILL, returns once it is dead
	restart func(t *testing.T)
	stop    func(t *testing.T) // a clean stop at the end (kmirror: SIGTERM and exit 0)
	dump    func(t *testing.T) // Go's goroutine stacks (kmirror), into the test log
	// exitErr is "" while kmirror runs, else how it exited and the last error it logged
	// (kmirror only, else nil).
	exitErr func() string
	// heldBy is the target broker (node id) kmirror's last exit named as holding one of its
	// transactions in PrepareCommit or PrepareAbort past the commit bound, or -1 (kmirror
	// only, else nil).
	heldBy func() int
	// fenceHeld is the log of the running kmirror, how many times it warned that its fence
	// waits for a transaction the target holds in PrepareCommit or PrepareAbort, and the
	// target broker (node id) the last warning names, -1 when none (kmirror only, else nil).
	fenceHeld func() (log string, n, broker int)
	// owned is how many partitions the running process owns (kmirror only; -1: no answer).
	owned func() int
	// stale is the stale owner case (kmirror only, else nil): the running
	// process is stopped (SIGSTOP) past its session timeout, a second one takes every
	// partition over, then the first is woken with what it held; both run on.
	stale func(ctx context.Context, t *testing.T)
}

// pfAlias is the source cluster's alias in tool's properties: one per tool, because a
// MirrorMaker 2 worker's Connect group and internal topics on the target are named after it
// (S-mm2, mm2-configs.S.internal...) and the two MM2 lanes must not share them.
func pfAlias(tool string) string {
	return map[string]string{"kmirror": "S", "mm2": "SD", "mm2-eos": "SE"}[tool]
}

// pfProps is the mm2.properties of tool's flow <alias>->T for topic, both clusters through
// their proxies.
func pfProps(b *pfBed, tool, topic string, extra ...string) string {
	s := pfAlias(tool)
	lines := append([]string{s + "->T.topics=" + topic, "T->" + s + ".enabled=false", "offset-syncs.topic.location=target",
		"emit.heartbeats.enabled=false", s + "->T.groups=" + pfGroup(topic), "sync.group.offsets.enabled=true",
		"sync.group.offsets.interval.seconds=5", "emit.checkpoints.interval.seconds=5", "refresh.groups.interval.seconds=5"}, extra...)
	return cluster.MM2Properties(cluster.Endpoint(s, b.src, cluster.User{}), cluster.Endpoint("T", b.dst, cluster.User{}), lines...)
}

func pfKmirror(t *testing.T, b *pfBed, topic string) *pfTool {
	t.Helper()
	bin := filepath.Join(bedBuild(t, "kmirror"), "kmirror")
	props := filepath.Join(t.TempDir(), "mm2.properties")
	text := pfProps(b, "kmirror", topic, "refresh.topics.interval.seconds=5",
		"S.consumer.session.timeout.ms=6000", "T.producer.linger.ms=10")
	if err := os.WriteFile(props, []byte(text), 0o600); err != nil {
		t.Fatal(err)
	}
	runs := 0
	var p *mirProc
	var others []*mirProc // the stale owner's second process
	// Every process belongs to the whole run (owner), also one restarted within a fault's
	// subtest (checkAlive, a restart over a held transaction): the subtest's end must not
	// kill it.
	owner := t
	start := func(t *testing.T) {
		runs++
		p = mirStartOwned(t, owner, bin, props, "S->T", fmt.Sprintf("pf-kmirror-%d", runs))
	}
	start(t)
	return &pfTool{name: "kmirror", restart: start,
		alive: func() error {
			for _, q := range append([]*mirProc{p}, others...) {
				if done, err := q.exit(); done {
					return fmt.Errorf("kmirror exited: %v (log %s)", err, q.log)
				}
			}
			return nil
		},
		kill:  func() { p.kill(); err := <-p.exited; p.exited <- err },
		owned: func() int { return p.owned() },
		exitErr: func() string {
			for _, q := range append([]*mirProc{p}, others...) {
				if done, err := q.exit(); done {
					return fmt.Sprintf("%v; its last error: %s (log %s)", err, mirLastError(q), q.log)
				}
			}
			return ""
		},
		heldBy: func() int {
			if done, _ := p.exit(); !done {
				return -1 // still running
			}
			return mirHeldBroker(p)
		},
		fenceHeld: func() (string, int, int) {
			n, broker := mirFenceHeld(p)
			return p.log, n, broker
		},
		stop: func(t *testing.T) {
			for _, q := range append([]*mirProc{p}, others...) {
				q.term(t)
			}
		},
		dump: func(t *testing.T) {
			for _, q := range append([]*mirProc{p}, others...) {
				pfDump(t, q)
			}
		},
		stale: func(ctx context.Context, t *testing.T) {
			q := mirStaleTakeover(ctx, t, p, pfParts, func() *mirProc { return mirStart(t, bin, props, "S->T", "pf-kmirror-new-owner") })
			others = append(others, q)
		},
	}
}

var pfEOSRE = regexp.MustCompile(`exactly\.once\.source\.support = \w+`)

// pfWorkerEOS is the exactly.once.source.support the Connect worker logged in its
// configuration ("not logged" when it did not), so that the run shows which mode MM2 ran in.
func pfWorkerEOS(log string) string {
	b, err := os.ReadFile(log)
	if err != nil {
		return "exactly.once.source.support: " + err.Error()
	}
	if m := pfEOSRE.Find(b); m != nil {
		return string(m)
	}
	return "exactly.once.source.support not logged"
}

// pfDump has p print Go's goroutine stacks (SIGQUIT; it exits) and logs its log's tail.
func pfDump(t *testing.T, p *mirProc) {
	_ = p.cmd.Process.Signal(syscall.SIGQUIT)
	select {
	case err := <-p.exited:
		p.exited <- err
	case <-time.After(10 * time.Second):
	}
	t.Logf("kmirror goroutine dump (SIGQUIT), tail of %s:\n%s", p.log, cluster.Tail(p.log, 400))
}

func pfMM2(ctx context.Context, t *testing.T, b *pfBed, topic string, eos bool) *pfTool {
	t.Helper()
	name := "mm2"
	var extra []string
	if eos {
		// A worker setting: MM2's dedicated mode passes a worker the properties of its target
		// cluster's alias (T.), not unprefixed ones such as exactly.once.source.support=enabled.
		name, extra = "mm2-eos", []string{"T.exactly.once.source.support=enabled"}
	}
	dir := "" // kept under $KMIGRATE_LOGDIR when that is set, else a temporary directory
	if os.Getenv(cluster.EnvLogDir) == "" {
		dir = t.TempDir()
	}
	m, err := cluster.StartMM2(ctx, cluster.MM2Spec{Properties: pfProps(b, name, topic, extra...), Target: "T", Name: "pf-" + name, Dir: dir})
	if err != nil {
		t.Fatalf("start MirrorMaker 2 (%s): %v", name, err)
	}
	t.Logf("%s: the worker's %s", name, pfWorkerEOS(m.LogPath()))
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("tail of %s:\n%s", m.LogPath(), cluster.Tail(m.LogPath(), 60))
		}
		m.Close()
	})
	return &pfTool{name: name,
		alive: func() error {
			if m.Pid() == 0 {
				return fmt.Errorf("MirrorMaker 2 is not running (log %s)", m.LogPath())
			}
			return nil
		},
		kill: m.Kill,
		restart: func(t *testing.T) {
			if err := m.Restart(); err != nil {
				t.Fatalf("restart MirrorMaker 2: %v", err)
			}
		},
		stop: func(*testing.T) { m.Close() },
		dump: func(*testing.T) {},
	}
}

// pfFault is one fault of the sequence: do applies it, holds it and ends it, for every lane
// at once.
type pfFault struct {
	name string
	do   func(ctx context.Context, t *testing.T, lanes []*pfLane)
}

// faults is the fault sequence. The brokers killed and restarted are the leaders of
// partitions of the first lane's topic (every broker leads partitions of every topic).
func (b *pfBed) faults(topic string) []pfFault {
	var fs []pfFault
	fs = append(fs, pfFault{name: fmt.Sprintf("source blackhole %s", b.cfg.hold), do: func(ctx context.Context, t *testing.T, _ []*pfLane) { pfBlackhole(ctx, t, b.src, b.cfg.hold) }})
	fs = append(fs, pfFault{name: fmt.Sprintf("target blackhole %s", b.cfg.hold), do: func(ctx context.Context, t *testing.T, _ []*pfLane) { pfBlackhole(ctx, t, b.dst, b.cfg.hold) }})
	for i := range 3 {
		fs = append(fs, pfFault{name: fmt.Sprintf("kill -9 target leader #%d", i+1), do: func(ctx context.Context, t *testing.T, _ []*pfLane) {
			idx := pfLeader(ctx, t, b.dstDirect, topic, int32(i))
			if err := b.dst.KillBroker(idx); err != nil {
				t.Fatalf("kill target broker %d: %v", idx, err)
			}
			time.Sleep(pfKillHold) // the fault's length is the point of the test
			if err := b.dst.RestartBroker(ctx, idx); err != nil {
				t.Fatalf("restart target broker %d: %v", idx, err)
			}
		}})
	}
	for i := range 2 {
		fs = append(fs, pfFault{name: fmt.Sprintf("restart source leader #%d", i+1), do: func(ctx context.Context, t *testing.T, _ []*pfLane) {
			idx := pfLeader(ctx, t, b.srcDirect, topic, int32(i+3))
			if err := b.src.RestartBroker(ctx, idx); err != nil {
				t.Fatalf("restart source broker %d: %v", idx, err)
			}
		}})
	}
	for i := range 5 {
		fs = append(fs, pfFault{name: fmt.Sprintf("kill -9 the mirror #%d", i+1), do: func(ctx context.Context, t *testing.T, lanes []*pfLane) {
			for _, l := range lanes {
				l.tool.kill()
			}
			for _, l := range lanes {
				l.tool.restart(t)
			}
		}})
	}
	fs = append(fs, pfFault{name: "stale owner (kmirror only)", do: func(ctx context.Context, t *testing.T, lanes []*pfLane) {
		for _, l := range lanes {
			if l.tool.stale != nil {
				l.tool.stale(ctx, t)
			}
		}
	}})
	if b.cfg.only == nil {
		return fs
	}
	var kept []pfFault
	for _, f := range fs {
		if b.cfg.only.MatchString(f.name) {
			kept = append(kept, f)
		}
	}
	return kept
}

// pfBlackhole blackholes every proxy of c for d and returns when they pass again, by
// themselves (the proxies bound the fault).
func pfBlackhole(ctx context.Context, t *testing.T, c cluster.Cluster, d time.Duration) {
	t.Helper()
	proxies, _, _ := cluster.ProxiesOf(c)
	for _, p := range proxies {
		if err := p.Blackhole(d); err != nil {
			t.Fatal(err)
		}
	}
	bedWaitFor(ctx, t, 100*time.Millisecond, "the blackhole of "+c.Name()+" to end", func() string {
		for i, p := range proxies {
			if m := p.Mode(); m != netfault.Pass {
				return fmt.Sprintf("proxy of broker %d in mode %s", i, m)
			}
		}
		return ""
	})
}

// pfLeader is the index of the broker leading topic's partition p on c.
func pfLeader(ctx context.Context, t *testing.T, c cluster.Cluster, topic string, p int32) int {
	t.Helper()
	md, err := bedAdmin(t, c).Metadata(ctx, topic)
	if err != nil {
		t.Fatalf("metadata of %s on %s: %v", topic, c.Name(), err)
	}
	pd, ok := md.Topics[topic].Partitions[p]
	if !ok || pd.Leader < 1 {
		t.Fatalf("%s/%d on %s: no leader in the metadata", topic, p, c.Name())
	}
	return int(pd.Leader) - 1
}

// pfLane is one tool's share of the run: its own topic, steady producer, target tail and
// idle source group, the rows so far, and where the next window starts.
type pfLane struct {
	tool    *pfTool
	topic   string
	flow    *mm2.Flow
	prod    *pfProducer
	tail    *pfTail
	from    [pfParts]int64
	rows    []pfRow
	failed  bool // a fatal failure in one of its windows: the lane takes no further part
	stopped bool // MirrorMaker 2 did not recover even after a restart: no further part either
	// heldRestarts counts the restarts of the target broker kmirror named over a transaction
	// the target held in PrepareCommit (settle); fenceLog and fenceSeen are the kmirror log
	// and the count of its fence warnings (pfTool.fenceHeld) the last such restart followed.
	heldRestarts int
	fenceLog     string
	fenceSeen    int
}

// pfHeldRestarts bounds the restarts over a held transaction after one fault: a target that
// holds kmirror's transactions again right after the broker its error named restarted is a
// finding, not a stall to follow.
const pfHeldRestarts = 2

// pfAction is what the harness does once its wait for kmirror's lag 0 ended without it.
type pfAction int

const (
	pfReport        pfAction = iota // fail the run, saying how kmirror exited or that it hung
	pfRestartHeld                   // restart the target broker kmirror's error names, then kmirror
	pfRestartBroker                 // restart the target broker kmirror's fence warning names; kmirror runs on
)

// pfNext decides it: exited is whether kmirror exited, held the target broker its exit names
// over a transaction held in PrepareCommit or PrepareAbort (-1: none), waiting the target
// broker a fence warning of the running kmirror names over such a transaction, logged since
// the last restart this harness made for one (-1: none), restarts how many such restarts this
// fault's settle made already. A held transaction is followed each time the target holds
// one, not once per run: the target's coordinator decides when that happens.
func pfNext(exited bool, held, waiting, restarts int) pfAction {
	switch {
	case restarts >= pfHeldRestarts:
		return pfReport
	case exited && held >= 1:
		return pfRestartHeld
	case !exited && waiting >= 1:
		return pfRestartBroker
	}
	return pfReport
}

// pfGroup is the idle source group of topic's lane: committed at the end of each window, its
// translation on the target is checked after the next.
func pfGroup(topic string) string { return topic + "-idle" }

// run mirrors a topic per tool, every tool at once, through one fault sequence that hits them
// all, and returns the table's rows, tool by tool. Running them side by side keeps the whole
// sequence as long as its slowest tool's (MirrorMaker 2's) instead of the sum of the three.
func (b *pfBed) run(t *testing.T, names []string) []pfRow {
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Minute)
	defer cancel()
	var lanes []*pfLane
	for _, name := range names {
		topic := bedUnique("pf-" + name)
		bedCreateTopic(t, b.srcDirect, topic, pfParts, nil)
		l := &pfLane{topic: topic, flow: bedFlow(t, pfProps(b, name, topic), pfAlias(name)+"->T"), prod: pfStartProducer(ctx, t, b, topic), tail: pfStartTail(ctx, t, b, topic)}
		if name == "kmirror" {
			l.tool = pfKmirror(t, b, topic)
		} else {
			l.tool = pfMM2(ctx, t, b, topic, name == "mm2-eos")
		}
		lanes = append(lanes, l)
	}
	// The first fault must find kmirror running: one still starting when the source goes
	// dark stops at its start-up check (source unreachable), as it should.
	for _, l := range lanes {
		if l.tool.owned == nil {
			continue
		}
		bedWaitFor(ctx, t, 200*time.Millisecond, l.tool.name+" to own every partition before the first fault", func() string {
			if err := l.tool.alive(); err != nil {
				t.Fatalf("%s at start: %v", l.tool.name, err)
			}
			if n := l.tool.owned(); n != pfParts {
				return fmt.Sprintf("it owns %d of %d", n, pfParts)
			}
			return ""
		})
	}
	b.settleAll(ctx, t, lanes, "start")
	for _, f := range b.faults(lanes[0].topic) {
		live := pfLive(lanes)
		if len(live) == 0 {
			break
		}
		f.do(ctx, t, live)
		if t.Failed() {
			break
		}
		b.settleAll(ctx, t, live, f.name)
	}
	settled := false
	if !t.Failed() {
		for _, l := range lanes {
			l.prod.unpaced.Store(true) // every producer at full speed at once
		}
		for _, l := range lanes {
			l.prod.finish(t)
		}
		b.settleAll(ctx, t, pfLive(lanes), "producer done")
		settled = true
	}
	var rows []pfRow
	for _, l := range lanes {
		l.tool.stop(t)
		rows = append(append(rows, l.rows...), b.final(ctx, t, l, settled && !l.failed && !l.stopped))
	}
	return rows
}

func pfLive(lanes []*pfLane) []*pfLane {
	var out []*pfLane
	for _, l := range lanes {
		if !l.failed && !l.stopped {
			out = append(out, l)
		}
	}
	return out
}

// settleAll settles every lane after fault, side by side (a subtest per fault, one parallel
// subtest per tool), and logs the fault's rows.
func (b *pfBed) settleAll(ctx context.Context, t *testing.T, lanes []*pfLane, fault string) {
	t.Run(fault, func(t *testing.T) {
		for _, l := range lanes {
			t.Run(l.tool.name, func(t *testing.T) {
				t.Parallel()
				defer func() { l.failed = l.failed || t.Failed() }()
				row, ends := b.settle(ctx, t, l, fault)
				l.rows, l.from = append(l.rows, row), ends
			})
		}
	})
	var rows []pfRow
	for _, l := range lanes {
		if n := len(l.rows); n > 0 && l.rows[n-1].fault == fault {
			rows = append(rows, l.rows[n-1])
		}
	}
	t.Logf("after %s:\n%s", fault, pfTable(rows))
}

// settle is what follows every fault for one lane: the tool still runs, the time until the
// target holds every record acknowledged when the fault ended, the diff of the records
// produced since the previous fault (source offsets [from, ends) per partition), and the
// target offsets of the idle group committed at the end of the previous window; then the
// group is committed at this window's end.
func (b *pfBed) settle(ctx context.Context, t *testing.T, l *pfLane, fault string) (pfRow, [pfParts]int64) {
	t.Helper()
	tool := l.tool
	row := pfRow{tool: tool.name, fault: fault}
	b.checkAlive(t, tool, &row)
	seqs, ends := l.prod.snapshot()
	row.behind = l.tail.count(seqs)
	var state string
	capd := pfLagCap
	if tool.name != "kmirror" {
		capd = pfMM2LagCap
	}
	// A kmirror that exited is waited for no longer: it will not catch up by itself, and its
	// error says what follows (pfNext).
	exited := func() bool { return tool.exitErr != nil && tool.exitErr() != "" }
	// waiting is the broker a fence warning of the running kmirror names over a held
	// transaction, logged since the last restart made for one; -1 when none.
	waiting := func() int {
		if tool.fenceHeld == nil {
			return -1
		}
		log, n, broker := tool.fenceHeld()
		if log == l.fenceLog && n <= l.fenceSeen {
			return -1
		}
		return broker
	}
	stuck := func() bool { return exited() || waiting() >= 1 }
	row.lag0, state = pfWaitLag(ctx, t, l.tail, seqs, capd, tool.name+", after "+fault, stuck)
	row.lagged = state != ""
	for restarts := 0; row.lagged && tool.heldBy != nil; restarts++ {
		// kmirror stopped at its commit bound over a transaction the target holds in
		// PrepareCommit (the 3.7.1 stall of mirror/doc.go), or its fence waits on one, and it
		// named the broker to restart: do what it says, as its operator would, each time it
		// happens; every record must still arrive exactly once.
		held, wait := tool.heldBy(), waiting()
		action := pfNext(exited(), held, wait, restarts)
		if action == pfReport {
			break
		}
		n := held
		switch action {
		case pfRestartHeld:
			t.Logf("kmirror, after %s: stopped at its commit bound over a transaction target broker %d holds; restarting that broker and kmirror, as its error says (%d in this run)", fault, n, l.heldRestarts+1)
			row.note = strings.TrimSpace(row.note + fmt.Sprintf(" stopped at its commit bound over a transaction in PrepareCommit; target broker %d and kmirror restarted", n))
		case pfRestartBroker:
			n = wait
			l.fenceLog, l.fenceSeen, _ = tool.fenceHeld()
			t.Logf("kmirror, after %s: its fence waits for a transaction target broker %d holds; restarting that broker, as its warning says (%d in this run)", fault, n, l.heldRestarts+1)
			row.note = strings.TrimSpace(row.note + fmt.Sprintf(" fence waited on a transaction in PrepareCommit; target broker %d restarted", n))
		}
		l.heldRestarts++
		if err := b.dst.RestartBroker(ctx, n-1); err != nil {
			t.Fatalf("restart target broker %d: %v", n, err)
		}
		if action == pfRestartHeld {
			tool.restart(t)
		}
		row.lag0, state = pfWaitLag(ctx, t, l.tail, seqs, capd, tool.name+", after "+fault+" and the restart", stuck)
		row.lagged = state != ""
	}
	switch {
	case row.lagged && tool.name == "kmirror" && exited():
		b.fatalf(t, "kmirror, after %s: exited before lag 0 (target%s): %s", fault, state, tool.exitErr())
	case row.lagged && tool.name == "kmirror":
		tool.dump(t)
		b.fatalf(t, "kmirror, after %s: lag not 0 within %s (target%s): hung? goroutine dump above", fault, pfLagCap, state)
	case row.lagged:
		// MirrorMaker 2 does not restart a failed task by itself: restart it, as its operator
		// would, so that the sequence goes on, and say so.
		tool.kill()
		tool.restart(t)
		d, again := pfWaitLag(ctx, t, l.tail, seqs, capd, tool.name+", restarted after "+fault, nil)
		row.note = fmt.Sprintf("no lag 0 within %s (target%s); killed and restarted: lag 0 %s later", capd, state, d.Round(100*time.Millisecond))
		if again != "" {
			// The peer's failure is a finding, not the harness's: the row says so and the
			// lane takes no part in the faults that follow.
			row.note = fmt.Sprintf("no lag 0 within %s (target%s), nor within %s of a restart (target%s): the lane stops here", capd, state, capd, again)
			l.stopped = true
		}
	case tool.name == "kmirror" && row.lag0 > pfLagLimit:
		t.Errorf("kmirror, after %s: lag 0 after %s, want within %s", fault, row.lag0.Round(time.Second), pfLagLimit)
	}
	b.checkAlive(t, tool, &row)
	b.windowDiff(ctx, t, l.topic, l.from, ends, &row)
	if fault != "start" {
		b.groupCheck(ctx, t, l, &row)
	}
	b.commitGroup(ctx, t, l, ends)
	return row, ends
}

// pfGroupWait bounds the wait for the idle group's translation after lag 0: past three of the
// flow's 5 s sync intervals.
const pfGroupWait = time.Minute

// groupCheck plans the lane's idle group with kreconcile's library: kmirror must have synced
// it exactly (every partition exact within pfGroupWait); for MirrorMaker 2 the statuses are
// recorded.
func (b *pfBed) groupCheck(ctx context.Context, t *testing.T, l *pfLane, row *pfRow) {
	t.Helper()
	group := pfGroup(l.topic)
	srcCl, dstCl := bedClient(t, b.srcDirect.Bootstrap()), bedClient(t, b.dstDirect.Bootstrap())
	cfg := reconcile.Config{Flow: l.flow, Groups: regexp.MustCompile(regexp.QuoteMeta(group))}
	deadline := time.Now().Add(pfGroupWait)
	for {
		res, err := reconcile.Plan(ctx, srcCl, dstCl, cfg)
		var bad string
		if err != nil {
			bad = "Plan: " + err.Error()
		} else {
			bad = mirNotExact(res, map[string]int{group: pfParts}, nil)
			row.group = pfGroupStatus(res)
		}
		if bad == "" {
			return
		}
		if time.Now().After(deadline) {
			if l.tool.name == "kmirror" {
				t.Errorf("kmirror, after %s: group %s not exact on the target within %s: %s", row.fault, group, pfGroupWait, bad)
			}
			return
		}
		select {
		case <-ctx.Done():
			t.Fatalf("group %s: the test's deadline came: %s", group, bad)
		case <-time.After(time.Second):
		}
	}
}

// pfGroupStatus counts the plan's partitions by status: "6 exact", "4 behind, 2 exact".
func pfGroupStatus(res *reconcile.Result) string {
	n := map[reconcile.Status]int{}
	for _, g := range res.Groups {
		for _, p := range g.Partitions {
			n[p.Status]++
		}
	}
	var out []string
	for _, st := range slices.Sorted(maps.Keys(n)) {
		out = append(out, fmt.Sprintf("%d %s", n[st], st))
	}
	if len(out) == 0 {
		return "not planned"
	}
	return strings.Join(out, ", ")
}

// commitGroup commits the lane's idle group on the source at ends (as a consumer that read
// the window and stopped would: the harness's write to the source, not a tool's). A
// retriable refusal is tried again for up to a minute, as a consumer would: right after a
// source broker restarts, the coordinator can answer REQUEST_TIMED_OUT while the offsets
// topic's replica catches up (seen in CI after "restart source leader #2").
func (b *pfBed) commitGroup(ctx context.Context, t *testing.T, l *pfLane, ends [pfParts]int64) {
	t.Helper()
	offs := kadm.Offsets{}
	for p, e := range ends {
		if e > 0 {
			offs.Add(kadm.Offset{Topic: l.topic, Partition: int32(p), At: e, LeaderEpoch: -1})
		}
	}
	adm := bedAdmin(t, b.srcDirect)
	wait, cancel := context.WithTimeout(ctx, time.Minute)
	defer cancel()
	bedWaitFor(wait, t, 500*time.Millisecond, "the commit of group "+pfGroup(l.topic)+" on the source", func() string {
		resp, err := adm.CommitOffsets(wait, pfGroup(l.topic), offs)
		if err == nil {
			err = resp.Error()
		}
		switch {
		case err == nil:
			return ""
		case logread.Retriable(err):
			return err.Error()
		}
		t.Fatalf("commit group %s on the source: %v", pfGroup(l.topic), err)
		return ""
	})
}

// pfWaitLag waits until the target has every record of seqs, at most capd or until stop (if
// not nil) says to; it returns the time it took and "" or, at the cap or the stop, how far
// behind the target still is.
func pfWaitLag(ctx context.Context, t *testing.T, tail *pfTail, seqs [pfParts]int64, capd time.Duration, what string, stop func() bool) (time.Duration, string) {
	t.Helper()
	start := time.Now()
	for state := tail.behind(seqs); state != ""; state = tail.behind(seqs) {
		if time.Since(start) > capd || (stop != nil && stop()) {
			return time.Since(start), state
		}
		select {
		case <-ctx.Done():
			t.Fatalf("%s: the test's deadline came, target%s", what, state)
		case <-time.After(pfTailEvery):
		}
	}
	return time.Since(start), ""
}

// checkAlive records a tool that exited and starts it again so the sequence goes on; for
// kmirror an exit is a failure.
func (b *pfBed) checkAlive(t *testing.T, tool *pfTool, row *pfRow) {
	t.Helper()
	err := tool.alive()
	if err == nil {
		return
	}
	if tool.name == "kmirror" {
		t.Errorf("after %s: %v", row.fault, err)
	}
	row.note = strings.TrimSpace(row.note + " exited, restarted")
	tool.restart(t)
}

// windowDiff runs kverify's diff on every partition's source offsets [from, ends).
func (b *pfBed) windowDiff(ctx context.Context, t *testing.T, topic string, from, ends [pfParts]int64, row *pfRow) {
	t.Helper()
	srcCl, dstCl := bedClient(t, b.srcDirect.Bootstrap()), bedClient(t, b.dstDirect.Bootstrap())
	for p := range int32(pfParts) {
		if ends[p] <= from[p] {
			continue
		}
		res, _, err := verify.Diff(ctx, srcCl, dstCl, verify.Config{SourceTopic: topic, Partitions: []int32{p},
			From: verify.Position{Kind: verify.AtOffset, Offset: from[p]}, To: verify.Position{Kind: verify.AtOffset, Offset: ends[p]}})
		if err != nil {
			t.Fatalf("verify.Diff %s/%d [%d, %d) after %s: %v", topic, p, from[p], ends[p], row.fault, err)
		}
		row.matched += res.Summary.Matched
		row.missing += res.Summary.Missing
		row.duplicated += res.Summary.Duplicated
		row.other += res.Summary.Mismatched + res.Summary.Extra
		if len(res.Problems) > 0 {
			row.note = strings.TrimSpace(row.note + " " + strings.Join(res.Problems, "; "))
		}
	}
}

// final diffs the whole topic once the tool has stopped: kmirror must leave it identical.
// A lane that did not settle after the producer finished (the run stopped at an earlier
// failure, or the lane was stopped) was stopped while it still had records to copy: its
// counts are shown, marked, and judge nothing; the failure that stopped it is the test's.
func (b *pfBed) final(ctx context.Context, t *testing.T, l *pfLane, settled bool) pfRow {
	t.Helper()
	tool, topic, tail := l.tool, l.topic, l.tail
	row := pfRow{tool: tool.name, fault: "whole topic"}
	res, _, err := verify.Diff(ctx, bedClient(t, b.srcDirect.Bootstrap()), bedClient(t, b.dstDirect.Bootstrap()), verify.Config{SourceTopic: topic})
	if err != nil {
		t.Fatalf("verify.Diff %s: %v", topic, err)
	}
	row.matched, row.missing, row.duplicated = res.Summary.Matched, res.Summary.Missing, res.Summary.Duplicated
	row.other = res.Summary.Mismatched + res.Summary.Extra
	row.note = fmt.Sprintf("identical %v", res.Identical)
	wrong := !res.Identical
	if !settled {
		// Records still to copy are missing; a duplicated, changed or extra record is wrong.
		row.note += " (not settled: stopped before it caught up; missing judges nothing)"
		wrong = res.Summary.Duplicated+res.Summary.Mismatched+res.Summary.Extra > 0
	}
	if n := tail.misplaced.Load(); n > 0 {
		row.note += fmt.Sprintf(", %d records in the wrong partition", n)
	}
	if tool.name == "kmirror" && (wrong || tail.misplaced.Load() > 0) {
		t.Errorf("kmirror: %s not identical: %+v, problems %v, %d misplaced", topic, res.Summary, res.Problems, tail.misplaced.Load())
	}
	return row
}

// pfTable renders rows as a Markdown table.
func pfTable(rows []pfRow) string {
	var b strings.Builder
	b.WriteString("| tool | fault | behind at its end | matched | missing | duplicated | other | time to lag 0 | idle group on the target | note |\n|---|---|---:|---:|---:|---:|---:|---:|---|---|\n")
	for _, r := range rows {
		lag := r.lag0.Round(100 * time.Millisecond).String()
		if r.lagged {
			lag = "> " + r.lag0.Round(time.Second).String()
		}
		if r.fault == "whole topic" {
			lag = ""
		}
		fmt.Fprintf(&b, "| %s | %s | %d | %d | %d | %d | %d | %s | %s | %s |\n", r.tool, r.fault, r.behind, r.matched, r.missing, r.duplicated, r.other, lag, r.group, r.note)
	}
	return b.String()
}

// TestProdFaultsHarness runs TestProdFaults' own machinery on two kfake clusters, with one
// fault (kill -9 of kmirror): the steady producer, the target tail that measures the time to
// lag 0, the diff of each window and of the whole topic, the idle group's check. The windows
// must cover every record once (their matched records add up to the whole topic's, which is
// every acknowledged one), and the group must be exact after the fault.
func TestProdFaultsHarness(t *testing.T) {
	src := cluster.StartT(t, cluster.Spec{Version: cluster.Kfake, Name: "pfh-src"})
	dst := cluster.StartT(t, cluster.Spec{Version: cluster.Kfake, Name: "pfh-dst"})
	b := &pfBed{src: src, dst: dst, srcDirect: src, dstDirect: dst,
		cfg: pfConfig{records: 20000, hold: time.Second, rate: 2000, only: regexp.MustCompile(`^kill -9 the mirror #1$`)}}
	// The source's coordinator answers the first two commits of the idle group with
	// REQUEST_TIMED_OUT, as a 2.3.0 source did in CI right after a broker restart: the
	// harness tries again (commitGroup). kmirror commits nothing on the source, so every
	// OffsetCommit there is the harness's.
	fake, _ := cluster.AsKfake(src)
	var timedOut atomic.Int32
	fake.ControlKey(int16(kmsg.OffsetCommit), func(kreq kmsg.Request) (kmsg.Response, error, bool) {
		fake.KeepControl()
		if timedOut.Load() >= 2 {
			return nil, nil, false // answered as usual
		}
		timedOut.Add(1)
		req := kreq.(*kmsg.OffsetCommitRequest)
		resp := req.ResponseKind().(*kmsg.OffsetCommitResponse)
		for _, rt := range req.Topics {
			st := kmsg.NewOffsetCommitResponseTopic()
			st.Topic, st.TopicID = rt.Topic, rt.TopicID // v10 and later name topics by ID
			for _, rp := range rt.Partitions {
				sp := kmsg.NewOffsetCommitResponseTopicPartition()
				sp.Partition, sp.ErrorCode = rp.Partition, kerr.RequestTimedOut.Code
				st.Partitions = append(st.Partitions, sp)
			}
			resp.Topics = append(resp.Topics, st)
		}
		return resp, nil, true
	})
	rows := b.run(t, []string{"kmirror"})
	if n := timedOut.Load(); n != 2 {
		t.Errorf("%d commits answered REQUEST_TIMED_OUT, want 2", n)
	}
	t.Logf("\n%s", pfTable(rows))
	if len(rows) != 4 {
		t.Fatalf("%d rows, want 4 (start, the kill, producer done, whole topic)", len(rows))
	}
	var windows int64
	for _, r := range rows[:len(rows)-1] {
		windows += r.matched
	}
	whole := rows[len(rows)-1]
	if windows != whole.matched || whole.matched < 20000 || whole.missing+whole.duplicated+whole.other != 0 {
		t.Errorf("windows matched %d records, the whole topic %d (%d missing, %d duplicated, %d other): want equal, at least 20000, no differences",
			windows, whole.matched, whole.missing, whole.duplicated, whole.other)
	}
	for _, r := range rows[1:3] {
		if r.group != fmt.Sprintf("%d exact", pfParts) {
			t.Errorf("after %s: idle group %q, want %d exact", r.fault, r.group, pfParts)
		}
	}
}

// TestProdFaultsHeldBroker checks that the harness finds the broker kmirror's error at its
// commit bound names (the form of mirror's txnState), and only for a transaction held in
// PrepareCommit or PrepareAbort.
func TestProdFaultsHeldBroker(t *testing.T) {
	const bound = `level=ERROR msg="kmirror stopping on error" err="target cluster T: flush transaction kmirror-S-T-x-3: the target did not acknowledge all its pending records within 1m30s (the commit bound): context deadline exceeded; kmirror stops, and once restarted resumes from what the target committed; the target's transaction coordinator, broker 2, holds transaction kmirror-S-T-x-3 in state %s, begun 1m32s ago%s"`
	const prepared = ": the coordinator has decided it but not written its markers, which only the broker can do, and no write to the partition can go on until it has; restart broker 2 (kafka-transactions.sh describe --transactional-id kmirror-S-T-x-3 shows the state), and kmirror resumes from what the target committed"
	for _, c := range []struct {
		log  string
		want string
	}{
		{fmt.Sprintf(bound, "PrepareCommit", prepared), "2"},
		{fmt.Sprintf(bound, "PrepareAbort", prepared), "2"},
		{fmt.Sprintf(bound, "Ongoing", ""), ""},
		{"level=WARN msg=\"restart broker 1\" in state PrepareCommit", ""},
	} {
		got := ""
		if m := mirHeldRE.FindStringSubmatch(c.log); m != nil {
			got = m[1]
		}
		if got != c.want {
			t.Errorf("%q: got broker %q, want %q", c.log, got, c.want)
		}
	}
}

// TestProdFaultsNext checks what the harness does when its wait for kmirror's lag 0 ends
// without it: a stop over a held transaction is followed after any fault, however many came
// before in the run, up to pfHeldRestarts after one fault, and so is a running kmirror whose
// fence waits on one (its broker alone restarted); an exit that names no held transaction, or
// a process still running without such a warning, is reported at once.
func TestProdFaultsNext(t *testing.T) {
	for _, c := range []struct {
		exited                  bool
		held, waiting, restarts int
		want                    pfAction
	}{
		{true, 2, -1, 0, pfRestartHeld},
		{true, 3, -1, 1, pfRestartHeld}, // held again after the same fault, by another broker
		{true, 2, -1, pfHeldRestarts, pfReport},
		{true, -1, -1, 0, pfReport}, // exited on another error: report it, do not wait
		{true, -1, 2, 0, pfReport},  // exited on another error after a fence warning: report it
		{false, -1, -1, 0, pfReport},
		{false, 2, -1, 0, pfReport}, // a running process's old log names a broker: not a stop
		{false, -1, 2, 0, pfRestartBroker},
		{false, -1, 3, 1, pfRestartBroker},
		{false, -1, 2, pfHeldRestarts, pfReport},
	} {
		if got := pfNext(c.exited, c.held, c.waiting, c.restarts); got != c.want {
			t.Errorf("pfNext(exited %v, held %d, waiting %d, restarts %d) = %d, want %d", c.exited, c.held, c.waiting, c.restarts, got, c.want)
		}
	}
}

// TestProdFaultsRestartOutlivesSubtest checks that a kmirror the harness restarts within a
// fault's subtest (checkAlive, or the restart over a transaction held in PrepareCommit) still
// runs when that subtest ends, so that the next fault's window finds it alive.
func TestProdFaultsRestartOutlivesSubtest(t *testing.T) {
	bedParallel(t)
	src := cluster.StartT(t, cluster.Spec{Version: cluster.Kfake, Name: "pfr-src"})
	dst := cluster.StartT(t, cluster.Spec{Version: cluster.Kfake, Name: "pfr-dst"})
	b := &pfBed{src: src, dst: dst, srcDirect: src, dstDirect: dst}
	topic := bedUnique("pfr")
	bedCreateTopic(t, src, topic, pfParts, nil)
	tool := pfKmirror(t, b, topic)
	t.Run("a fault's window", func(t *testing.T) {
		tool.kill()
		tool.restart(t)
		if err := tool.alive(); err != nil {
			t.Fatalf("right after the restart: %v", err)
		}
	})
	// Without an owner beyond the subtest, the subtest's end kills it: alive then says so.
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	bedWaitFor(ctx, t, 100*time.Millisecond, "the restarted kmirror to own every partition", func() string {
		if err := tool.alive(); err != nil {
			t.Fatalf("after the subtest that restarted it ended: %v", err)
		}
		if n := tool.owned(); n != pfParts {
			return fmt.Sprintf("it owns %d of %d", n, pfParts)
		}
		return ""
	})
	tool.stop(t)
}
