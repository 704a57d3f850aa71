package integration

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"

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
			kill: func() { p.kill(); err := <-p.exited; p.exited <- err },
			stop: func(t *testing.T) { p.term(t) },
		}
	})
}

// TestIsolationAfterKillMM2EOS is the same with MirrorMaker 2 (the target's release) in its
// exactly-once mode (exactly.once.source.support=enabled) as the mirror, killed -9 as kmirror
// is: the tools report the aborted records whoever wrote them.
func TestIsolationAfterKillMM2EOS(t *testing.T) {
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
	// Records keep coming in bursts a third of a second apart, so that every kill finds
	// the mirror with a transaction open.
	const parts, first, total = isoParts, 3000, 60000
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

	// The mirror killed -9 three times while records keep coming, then a run to the end.
	waitProduced, _ := mirProducer(ctx, t, src, topic, parts, total-first, 20*time.Second)
	mir.start(t, 0)
	for kill := 1; kill <= 3; kill++ {
		before := sumRecords(ctx, t, dst, topic)
		bedWaitFor(ctx, t, 500*time.Millisecond, fmt.Sprintf("%s, run %d, to mirror and commit records", mir.name, kill), func() string {
			if r := mir.ready(); r != "" {
				return r
			}
			if got := sumRecords(ctx, t, dst, topic); got < before+3000 && got < sumEnds(ctx, t, src, topic) {
				return fmt.Sprintf("target %d committed records (%d before)", got, before)
			}
			return ""
		})
		mir.kill()
		mir.start(t, kill)
	}
	waitProduced()
	bedWaitFor(ctx, t, 200*time.Millisecond, mir.name+" to mirror everything", func() string { return mirBehind(ctx, t, dst, topic, total) })
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
	// The span from E(G) to the end of each partition (about 19,500 offsets) is read whole.
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
