package integration

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/kmigrate/kmigrate/integration/cluster"
	"github.com/kmigrate/kmigrate/reconcile"
	"github.com/kmigrate/kmigrate/verify"
)

// isoRecord is a line of the console consumer that is a value of mirProducer's records.
var isoRecord = regexp.MustCompile(`^\d+-p+$`)

// isoMirror is the transactional mirror under test: started, killed -9, started again.
type isoMirror struct {
	name string
	// start runs the mirror (run n: 0 first, then after each kill); ready is "" once it
	// mirrors (kmirror owns every partition).
	start func(t *testing.T, n int)
	ready func() string
	pid   func() int
	kill  func()
	stop  func(t *testing.T)
}

// TestIsolationAfterKill is what a default consumer reads after kmirror was killed -9 during
// mirroring, judged by Kafka's own console consumer: kmirror's open transactions were aborted
// on the target and their records mirrored again after them. read_committed reads exactly the
// source's records; the console consumer's default isolation (read_uncommitted) reads those
// plus exactly the aborted records kverify reports; and a group switched to the target at
// E(G) reads, read_uncommitted, exactly its source lag plus the aborted records kreconcile
// reports ahead of E(G).
func TestIsolationAfterKill(t *testing.T) {
	bedParallelLong(t)
	isoRun(t, "S7", "T7", func(t *testing.T, src, dst cluster.Cluster, topic string) (string, *isoMirror) {
		bin := filepath.Join(bedBuild(t, "kmirror"), "kmirror")
		props := mirProps(t, src, dst, "S7", "T7", topic)
		var p *mirProc
		return props, &isoMirror{name: "kmirror",
			start: func(t *testing.T, n int) { p = mirStart(t, bin, props, "S7->T7", fmt.Sprintf("kmirror-iso-%d", n)) },
			ready: func() string {
				if n := p.owned(); n != isoParts {
					return fmt.Sprintf("kmirror owns %d of %d partitions", n, isoParts)
				}
				return ""
			},
			pid:  func() int { return p.cmd.Process.Pid },
			kill: func() { p.kill(); err := <-p.exited; p.exited <- err },
			stop: func(t *testing.T) { p.term(t) },
		}
	})
}

// TestIsolationAfterKillMM2EOS is the same with MirrorMaker 2 (the target's release) in its
// exactly-once mode (exactly.once.source.support=enabled) as the mirror, killed -9 as kmirror
// is: the tools report the aborted records whoever wrote them.
func TestIsolationAfterKillMM2EOS(t *testing.T) {
	bedParallelLong(t)
	isoRun(t, "S8", "T8", func(t *testing.T, src, dst cluster.Cluster, topic string) (string, *isoMirror) {
		text := bedProperties(src, dst, "S8", "T8", topic, append(bedMM2Worker,
			"T8->S8.enabled=false", "emit.checkpoints.enabled=false", "emit.heartbeats.enabled=false",
			"refresh.topics.interval.seconds=5",
			// Worker settings reach MM2's dedicated-mode worker with the target's alias.
			"T8.exactly.once.source.support=enabled",
			// A worker killed -9 and started again gets its tasks back at once, not after
			// Connect's 5-minute wait for a lost worker.
			"T8.scheduled.rebalance.max.delay.ms=0",
			// A transaction per 10 s rather than per poll (MM2's default boundary commits
			// right after each poll, so a kill rarely finds one open).
			"transaction.boundary=interval", "transaction.boundary.interval.ms=10000")...)
		props := filepath.Join(t.TempDir(), "mm2.properties")
		if err := os.WriteFile(props, []byte(text), 0o600); err != nil {
			t.Fatal(err)
		}
		var m *cluster.MM2
		return props, &isoMirror{name: "MirrorMaker 2 exactly-once",
			start: func(t *testing.T, n int) {
				if n > 0 {
					if err := m.Restart(); err != nil {
						t.Fatalf("restart MirrorMaker 2: %v", err)
					}
					return
				}
				m = cluster.StartMM2T(t, cluster.MM2Spec{Properties: text, Target: "T8", Name: "iso-mm2-eos", Version: dst.Version()})
			},
			ready: func() string { return "" },
			pid:   func() int { return m.Pid() },
			kill:  func() { m.Kill() },
			stop:  func(*testing.T) { m.Close() },
		}
	})
}

// isoParts is the partitions of the mirrored topic.
const isoParts = 3

// isoRun mirrors a topic with the mirror mk builds (it returns the flow's mm2.properties
// path), kills the mirror -9 three times while records keep coming, lets it finish, and
// judges what Kafka's console consumer reads on the target against kverify's and
// kreconcile's reports.
func isoRun(t *testing.T, srcAlias, dstAlias string, mk func(t *testing.T, src, dst cluster.Cluster, topic string) (string, *isoMirror)) {
	srcV, dstV := bedPair(t)
	srcName, dstName := bedPairNames("iso", srcV, dstV)
	src := cluster.StartT(t, cluster.Spec{Version: srcV, Name: srcName})
	dst := cluster.StartT(t, cluster.Spec{Version: dstV, Name: dstName})
	if t.Failed() || t.Skipped() {
		return
	}
	const parts, first = isoParts, 3000
	topic, group := bedUnique("iso"), bedUnique("iso-g")
	bedCreateTopic(t, src, topic, parts, nil)
	props, mir := mk(t, src, dst, topic)
	ctx, cancel := context.WithTimeout(context.Background(), 12*time.Minute)
	defer cancel()

	// The group read the first 500 records of each partition and stopped on the source.
	wait, _ := mirProducer(ctx, t, src, topic, parts, first, 0)
	wait()
	at := kadm.Offsets{}
	for p := range int32(parts) {
		at.Add(kadm.Offset{Topic: topic, Partition: p, At: 500, LeaderEpoch: -1})
	}
	if resp, err := bedAdmin(t, src).CommitOffsets(ctx, group, at); err != nil || resp.Error() != nil {
		t.Fatalf("commit group %s on the source: %v %v", group, err, resp.Error())
	}

	// Records keep coming until the kills are done. Each kill is staged: the mirror is frozen
	// (SIGSTOP) until one of its transactions is open on the target holding records, then
	// killed -9, so the kill always leaves records to abort, however the machine's load
	// places the mirror's commits. A kill is counted once the target, the mirror dead, still
	// holds that transaction open (an end of it already sent when the mirror froze would
	// commit it); an uncounted kill is followed by another run.
	stopBursts, burstsDone := isoBursts(ctx, t, src, topic, parts)
	mir.start(t, 0)
	const kills, maxRuns = 3, 10
	for run, counted := 1, 0; counted < kills; run++ {
		if run > maxRuns {
			t.Fatalf("%s: %d of %d runs ended with a kill that left a transaction open, want %d", mir.name, counted, maxRuns, kills)
		}
		before := sumRecords(ctx, t, dst, topic)
		bedWaitFor(ctx, t, 500*time.Millisecond, fmt.Sprintf("%s, run %d, to mirror and commit records", mir.name, run), func() string {
			if r := mir.ready(); r != "" {
				return r
			}
			if got := sumRecords(ctx, t, dst, topic); got < before+300 {
				return fmt.Sprintf("target %d committed records (%d before)", got, before)
			}
			return ""
		})
		isoFreezeOpen(ctx, t, mir, dst, topic)
		mir.kill()
		if open := isoOpenTxn(ctx, t, dst, topic); open != "" {
			t.Logf("run %d: the kill is not counted: with %s dead, %s", run, mir.name, open)
		} else {
			counted++
		}
		mir.start(t, run)
	}
	close(stopBursts)
	total := first + burstsDone()
	bedWaitFor(ctx, t, 200*time.Millisecond, mir.name+" to mirror everything", func() string { return mirBehind(ctx, t, dst, topic, int64(total)) })
	mir.stop(t)

	srcCl, dstCl := bedClient(t, src.Bootstrap()), bedClient(t, dst.Bootstrap())
	diff, _, err := verify.Diff(ctx, srcCl, dstCl, verify.Config{SourceTopic: topic})
	if err != nil {
		t.Fatalf("kverify diff: %v", err)
	}
	if !diff.Identical {
		t.Fatalf("kverify diff: not identical read_committed: %+v %v", diff.Summary, diff.Problems)
	}
	if diff.Aborted == 0 {
		t.Fatalf("kverify diff reports no aborted records on the target: the kills of %s left none to judge", mir.name)
	}

	// The group switched at E(G), as kreconcile groups --apply does.
	text, err := os.ReadFile(props)
	if err != nil {
		t.Fatal(err)
	}
	// The span from E(G) to the end of each partition (tens of thousands of offsets) is read
	// whole.
	cfg := reconcile.Config{Flow: bedFlow(t, string(text), srcAlias+"->"+dstAlias), Groups: regexp.MustCompile(regexp.QuoteMeta(group)), ScanLimit: 100_000}
	plan, err := reconcile.Plan(ctx, srcCl, dstCl, cfg)
	if err != nil {
		t.Fatalf("kreconcile plan: %v", err)
	}
	if err := reconcile.Apply(ctx, dstCl, plan, reconcile.ApplyConfig{Backup: filepath.Join(t.TempDir(), "backup.json")}); err != nil {
		t.Fatalf("kreconcile apply: %v", err)
	}
	if plan, err = reconcile.Plan(ctx, srcCl, dstCl, cfg); err != nil {
		t.Fatalf("kreconcile plan after apply: %v", err)
	}
	if len(plan.Groups) != 1 {
		t.Fatalf("plan has %d groups, want 1 (%s)", len(plan.Groups), group)
	}
	var ahead int64
	for _, gp := range plan.Groups[0].Partitions {
		if gp.Status != reconcile.StatusExact || gp.AbortedAhead == nil {
			t.Fatalf("after apply, %s/%d: status %s, aborted ahead %v (%s): want exact and counted", gp.Topic, gp.Partition, gp.Status, gp.AbortedAhead, gp.AbortedNote)
		}
		ahead += *gp.AbortedAhead
	}
	lag := int64(total - parts*500)

	committed := len(bedConsole(ctx, t, dst, topic, isoRecord.MatchString, "--from-beginning", "--isolation-level", "read_committed"))
	uncommitted := len(bedConsole(ctx, t, dst, topic, isoRecord.MatchString, "--from-beginning"))
	switched := len(bedConsole(ctx, t, dst, topic, isoRecord.MatchString, "--group", group))
	t.Logf("after 3 kill -9 of %s, %d source records: console consumer read_committed %d, default (read_uncommitted) %d; kverify: %d aborted records on the target (%d copies of committed ones); group %s switched at E(G): source lag %d, kreconcile %d aborted ahead of E(G), the console consumer in the group read %d",
		mir.name, total, committed, uncommitted, diff.Aborted, diff.AbortedCopies, group, lag, ahead, switched)
	if committed != total {
		t.Errorf("read_committed read %d records, want the source's %d", committed, total)
	}
	if want := int64(committed) + diff.Aborted; int64(uncommitted) != want {
		t.Errorf("read_uncommitted read %d records, want %d committed + %d aborted that kverify reported = %d", uncommitted, committed, diff.Aborted, want)
	}
	if want := lag + ahead; int64(switched) != want {
		t.Errorf("the switched group read %d records, want its source lag %d + %d aborted ahead of E(G) that kreconcile reported = %d", switched, lag, ahead, want)
	}
}

// isoBursts produces records to topic on c, 25 per partition every 200 ms, numbered as
// mirProducer numbers them, until stop is closed, then 1,000 more; done waits for them and
// returns how many were produced (every one acknowledged: the producer is idempotent, so that
// is what the log holds).
func isoBursts(ctx context.Context, t *testing.T, c cluster.Cluster, topic string, partitions int32) (stop chan struct{}, done func() int) {
	t.Helper()
	cl := bedClient(t, c.Bootstrap(), kgo.RecordPartitioner(kgo.ManualPartitioner()))
	stop = make(chan struct{})
	pad := strings.Repeat("p", 80)
	n := 0
	produce := func(count int) error {
		recs := make([]*kgo.Record, count)
		for j := range recs {
			i := n + j
			recs[j] = &kgo.Record{Topic: topic, Partition: int32(i) % partitions,
				Key: fmt.Appendf(nil, "k%d", i%1000), Value: fmt.Appendf(nil, "%d-%s", i, pad)}
		}
		if err := cl.ProduceSync(ctx, recs...).FirstErr(); err != nil {
			return err
		}
		n += count
		return nil
	}
	errc := make(chan error, 1)
	go func() {
		tick := time.NewTicker(200 * time.Millisecond)
		defer tick.Stop()
		for {
			select {
			case <-stop:
				errc <- produce(1000)
				return
			case <-ctx.Done():
				errc <- ctx.Err()
				return
			case <-tick.C:
				if err := produce(25 * int(partitions)); err != nil {
					errc <- err
					return
				}
			}
		}
	}()
	return stop, func() int {
		if err := <-errc; err != nil {
			t.Fatalf("produce to %s on %s: %v", topic, c.Name(), err)
		}
		return n
	}
}

// isoFreezeOpen freezes mir (SIGSTOP) at a moment when one of its transactions is open on
// dst holding records of topic, and returns with it frozen; between tries it lets it run.
func isoFreezeOpen(ctx context.Context, t *testing.T, mir *isoMirror, dst cluster.Cluster, topic string) {
	t.Helper()
	pid := mir.pid()
	if pid == 0 {
		t.Fatalf("%s is not running", mir.name)
	}
	freezeOpen(ctx, t, mir.name, pid, dst, topic)
}

// freezeOpen freezes the mirror process pid (SIGSTOP) at a moment its target dst holds one
// of its transactions open over topic with records in it (isoOpenTxn): it freezes, looks, and
// thaws to try again until it finds one. It returns with the process frozen.
func freezeOpen(ctx context.Context, t *testing.T, name string, pid int, dst cluster.Cluster, topic string) {
	t.Helper()
	bedWaitFor(ctx, t, 100*time.Millisecond, name+" frozen with a transaction open on the target", func() string {
		if err := syscall.Kill(pid, syscall.SIGSTOP); err != nil {
			t.Fatalf("freeze %s (pid %d): %v", name, pid, err)
		}
		bedWaitFor(ctx, t, 5*time.Millisecond, name+" to stop (SIGSTOP)", func() string {
			if st := vfProcState(pid); st != 'T' && st != 0 {
				return fmt.Sprintf("state %q", st)
			}
			return ""
		})
		open := isoOpenTxn(ctx, t, dst, topic)
		if open != "" {
			if err := syscall.Kill(pid, syscall.SIGCONT); err != nil {
				t.Fatalf("thaw %s (pid %d): %v", name, pid, err)
			}
		}
		return open
	})
}

// isoOpenTxn is "" when a transaction on dst is open (Ongoing) over topic and a partition of
// topic holds records past its last stable offset, else what the target shows.
func isoOpenTxn(ctx context.Context, t *testing.T, dst cluster.Cluster, topic string) string {
	t.Helper()
	adm := bedAdmin(t, dst)
	txns, err := adm.DescribeTransactions(ctx)
	if err != nil {
		return fmt.Sprintf("describe transactions: %v", err)
	}
	ongoing := false
	for _, d := range txns {
		if _, ok := d.Topics[topic]; ok && d.Err == nil && d.State == "Ongoing" {
			ongoing = true
		}
	}
	if !ongoing {
		return "no transaction is open over " + topic
	}
	hwm, err := adm.ListEndOffsets(ctx, topic)
	if err != nil {
		return fmt.Sprintf("list end offsets: %v", err)
	}
	lso, err := adm.ListCommittedOffsets(ctx, topic)
	if err != nil {
		return fmt.Sprintf("list last stable offsets: %v", err)
	}
	for p := range int32(isoParts) {
		h, okH := hwm.Lookup(topic, p)
		l, okL := lso.Lookup(topic, p)
		if okH && okL && h.Err == nil && l.Err == nil && h.Offset > l.Offset {
			return ""
		}
	}
	return "a transaction is open over " + topic + " but holds no record yet"
}
