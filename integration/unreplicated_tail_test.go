package integration

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/kmigrate/kmigrate/integration/cluster"
	"github.com/kmigrate/kmigrate/verify"
)

// TestUnreplicatedTail is the unreplicated tail of mirror/doc.go's Limits:
// on a 3.7.1 target with three brokers (replication factor 3, min.insync.replicas=2,
// acks=all), kmirror is killed -9 while the leader L of the target's partition 0 holds records
// of it above its high watermark: written by L, not replicated, not acknowledged. The state is
// made, not hoped for (tailHold): kmirror is stopped (SIGSTOP), the two followers of partition
// 0 are frozen, their fetches still waiting on L are let run out, kmirror is woken, and the
// test waits until L's log end offset grows while its high watermark stays put: what L
// appended then no follower has. Then either
//   - leader-killed: L is killed -9 too and the followers thawed; one of them becomes leader
//     and the records L held are lost (never acknowledged); L is restarted and truncates; or
//   - leader-alive: the followers are thawed with L alive; they fetch what L held and the high
//     watermark passes it: records kmirror never saw acknowledged become committed after it
//     died;
//
// and kmirror is started again, catches up with everything the source acknowledged, and
// kverify's diff (verify.Diff, read_committed) counts the whole topic. Both cases run with the
// default fencing (transactions) and with fencing none (T.exactly.once.source.support=disabled).
// With transactions the held records belong to the killed owner's open transaction, which the
// next owner's fence aborts: the copy must be identical. With fencing none it must be
// identical when the held records were lost; when they became committed, duplicates are the
// documented limit, only possible within what was held: the test asserts that bound and says
// what happened.
func TestUnreplicatedTail(t *testing.T) {
	src := cluster.StartT(t, cluster.Spec{Version: cluster.V230, Name: "tail-source"})
	dst := cluster.StartT(t, cluster.Spec{Version: cluster.V371, Name: "tail-target", Brokers: 3})
	if t.Failed() || t.Skipped() {
		return
	}
	pz, ok := dst.(cluster.Pauser)
	if !ok {
		t.Skipf("cluster %s cannot freeze a broker (no cluster.Pauser)", dst.Name())
	}
	bin := filepath.Join(bedBuild(t, "kmirror"), "kmirror")
	var rows []tailRow
	n := 0
	for _, fencing := range []string{"transactions", "none"} {
		for _, leaderKilled := range []bool{true, false} {
			n++
			c := tailCase{n: n, fencing: fencing, leaderKilled: leaderKilled}
			t.Run(c.name(), func(t *testing.T) { rows = append(rows, tailRun(t, src, dst, pz, bin, c)) })
		}
	}
	var b strings.Builder
	b.WriteString("| fencing | variant | held above HW at kill (leader only) | matched | missing | duplicated | other | wall time | note |\n|---|---|---|---|---|---|---|---|---|\n")
	for _, r := range rows {
		fmt.Fprintf(&b, "| %s | %s | %d (%d) | %d | %d | %d | %d | %s | %s |\n", r.fencing, r.variant, r.held, r.leaderOnly, r.matched, r.missing,
			r.duplicated, r.other, r.wall.Round(100*time.Millisecond), r.note)
	}
	t.Logf("unreplicated tail:\n%s", b.String())
}

type tailCase struct {
	n            int
	fencing      string // "transactions" (the default) or "none"
	leaderKilled bool
}

func (c tailCase) variant() string {
	if c.leaderKilled {
		return "leader-killed"
	}
	return "leader-alive"
}

func (c tailCase) name() string { return c.fencing + "/" + c.variant() }

type tailRow struct {
	fencing, variant              string
	held                          int64 // offsets of partition 0 on L above its high watermark when kmirror was killed
	leaderOnly                    int64 // of which written after no follower could fetch them
	matched, missing, duplicated  int64
	other                         int64 // mismatched and extra
	wall                          time.Duration
	note                          string
	reconciledTails, abortedTails int
}

const (
	tailParts = 3
	// tailHoldWait bounds one attempt at the held state (tailHold): after the freeze, kmirror
	// must write to partition 0 within it. An attempt fails when kmirror's partition-0 writer
	// had nothing waiting to be sent when it was stopped and was then between transactions or
	// began a commit (adding the partition to a transaction, or ending one, waits for the
	// frozen replicas of the transaction log), or when all its produce requests were in flight
	// (tailCaughtUp); the followers are thawed and it is tried again.
	tailHoldWait     = 20 * time.Second
	tailHoldAttempts = 4
)

func tailRun(t *testing.T, src, dst cluster.Cluster, pz cluster.Pauser, bin string, c tailCase) tailRow {
	start := time.Now()
	ctx := bedCtx(t, 10*time.Minute)
	row := tailRow{fencing: c.fencing, variant: c.variant()}
	topic := bedUnique("tail")
	bedCreateTopic(t, src, topic, tailParts, nil)
	bedCreateTopic(t, dst, topic, tailParts, nil) // replication factor 3, as the bed's min.insync.replicas=2 wants
	sa, ta := fmt.Sprintf("S%d", c.n), fmt.Sprintf("T%d", c.n)
	props := tailProps(t, src, dst, sa, ta, topic, c.fencing)
	flow := sa + "->" + ta

	prod := tailStartProducer(ctx, t, src, topic)
	defer prod.stop(t)
	p := mirStart(t, bin, props, flow, fmt.Sprintf("kmirror-tail-%d", c.n))
	bedWaitFor(ctx, t, 200*time.Millisecond, "kmirror to own every partition and mirror partition 0", func() string {
		if n, got := p.owned(), bedRecordsFrom(ctx, t, dst, topic, 0, 0); n != tailParts || got < 2000 {
			return fmt.Sprintf("owns %d of %d partitions, target partition 0 has %d committed records", n, tailParts, got)
		}
		return ""
	})
	if c.fencing == "none" && p.logCount(`msg="fencing none`) == 0 {
		t.Errorf("kmirror in fencing none did not warn at start-up")
	}

	leader, followers := tailReplicas(ctx, t, dst, topic)
	lcl := bedClient(t, dst.Bootstrap())
	if _, err := kadm.NewClient(lcl).Metadata(ctx, topic); err != nil { // the client must know the brokers before they freeze
		t.Fatalf("metadata of %s: %v", topic, err)
	}
	thaw := func() {
		for _, f := range followers {
			if err := pz.UnpauseBroker(context.Background(), f); err != nil {
				t.Errorf("thaw broker %d: %v", f, err)
			}
		}
	}
	t.Cleanup(thaw)         // never leave a broker frozen, whatever fails
	var leo0, leo, hw int64 // partition 0 on the leader: end once no follower could fetch, end, high watermark
	for attempt := 1; ; attempt++ {
		tailCaughtUp(ctx, t, src, dst, topic)
		var ok bool
		leo0, leo, hw, ok = tailHold(ctx, t, p, pz, lcl, leader, followers, topic)
		if ok {
			t.Logf("attempt %d: followers %v frozen; partition 0 on broker %d: high watermark %d, end %d when no follower could fetch any more, %d now: %d offsets only the leader has",
				attempt, followers, leader, hw, leo0, leo, leo-leo0)
			break
		}
		thaw()
		if attempt == tailHoldAttempts {
			t.Fatalf("%d attempts: kmirror never wrote to partition 0 on broker %d while its followers were frozen (end %d, high watermark %d)", attempt, leader, leo, hw)
		}
		t.Logf("attempt %d: kmirror wrote nothing to partition 0 within %s of the freeze (end %d, high watermark %d); thawed, trying again", attempt, tailHoldWait, leo, hw)
	}

	p.kill()
	err := <-p.exited
	p.exited <- err
	if l, h := tailOffsets(ctx, t, lcl, leader, topic); l <= leo0 || h != hw {
		t.Fatalf("after the kill partition 0 on broker %d ends at %d, high watermark %d: want above %d, high watermark %d still", leader, l, h, leo0, hw)
	} else {
		leo = l
	}
	row.held, row.leaderOnly = leo-hw, leo-leo0
	t.Logf("kmirror killed -9 with %d offsets of partition 0 above the high watermark %d on broker %d, %d of them written after the followers froze", row.held, hw, leader, row.leaderOnly)

	if c.leaderKilled {
		if err := dst.KillBroker(leader); err != nil {
			t.Fatalf("kill broker %d: %v", leader, err)
		}
		thaw()
		var ends int64
		bedWaitFor(ctx, t, 500*time.Millisecond, "a follower to lead partition 0", func() string {
			md, err := bedAdmin(t, dst).Metadata(ctx, topic)
			if err != nil {
				return err.Error()
			}
			pd := md.Topics[topic].Partitions[0]
			if pd.Leader < 1 || int(pd.Leader)-1 == leader {
				return fmt.Sprintf("leader %d", pd.Leader)
			}
			listed, err := bedAdmin(t, dst).ListEndOffsets(ctx, topic)
			if err != nil {
				return err.Error()
			}
			o, ok := listed.Lookup(topic, 0)
			if !ok || o.Err != nil {
				return fmt.Sprintf("no end offset from leader %d yet (%v)", pd.Leader, o.Err)
			}
			ends = o.Offset
			return ""
		})
		t.Logf("broker %d killed; the new leader's partition 0 ends at %d (the killed leader had %d, high watermark %d): %d offsets truncated", leader, ends, leo, hw, leo-ends)
		if ends > leo0 {
			t.Errorf("the new leader's partition 0 ends at %d, above %d: it has records written after it froze", ends, leo0)
		}
		if err := dst.RestartBroker(ctx, leader); err != nil {
			t.Fatalf("restart broker %d: %v", leader, err)
		}
	} else {
		thaw()
		bedWaitFor(ctx, t, 200*time.Millisecond, "the held records to become committed (replicated) after the thaw", func() string {
			if _, h := tailOffsets(ctx, t, lcl, leader, topic); h < leo {
				return fmt.Sprintf("high watermark %d, held records end at %d", h, leo)
			}
			return ""
		})
		t.Logf("followers thawed with broker %d alive: the high watermark passed %d", leader, leo)
	}

	q := mirStart(t, bin, props, flow, fmt.Sprintf("kmirror-tail-%d-resumed", c.n))
	acked := sumEnds(ctx, t, src, topic)
	bedWaitFor(ctx, t, 500*time.Millisecond, "the resumed kmirror to mirror what the source had acknowledged at its start", func() string {
		return mirBehind(ctx, t, dst, topic, acked)
	})
	prod.stop(t)
	want := sumEnds(ctx, t, src, topic)
	bedWaitFor(ctx, t, 500*time.Millisecond, "the resumed kmirror to mirror everything", func() string { return mirBehind(ctx, t, dst, topic, want) })
	row.reconciledTails = q.logCount(`msg="target tail reconciled"`)
	row.abortedTails = q.logCount(`msg="an earlier owner's uncommitted records were aborted`)
	q.term(t)

	res, _, err := verify.Diff(ctx, bedClient(t, src.Bootstrap()), bedClient(t, dst.Bootstrap()), verify.Config{SourceTopic: topic})
	if err != nil {
		t.Fatalf("verify.Diff %s: %v", topic, err)
	}
	row.matched, row.missing, row.duplicated = res.Summary.Matched, res.Summary.Missing, res.Summary.Duplicated
	row.other = res.Summary.Mismatched + res.Summary.Extra
	row.wall = time.Since(start)
	row.note = fmt.Sprintf("%d records; resume: %d tails reconciled, %d open transactions aborted", want, row.reconciledTails, row.abortedTails)
	t.Logf("%s: matched %d, missing %d, duplicated %d, other %d of %d source records (%s); problems %v",
		c.name(), row.matched, row.missing, row.duplicated, row.other, want, row.note, res.Problems)
	if row.missing != 0 || row.other != 0 || row.matched != want {
		t.Errorf("%s: matched %d of %d, missing %d, other %d: want every record matched", c.name(), row.matched, want, row.missing, row.other)
	}
	switch {
	case row.duplicated == 0:
		if !res.Identical {
			t.Errorf("%s: not identical: %+v %v", c.name(), res.Summary, res.Problems)
		}
	case c.fencing == "none" && !c.leaderKilled && row.duplicated <= row.held:
		t.Logf("%s: %d duplicates, within the %d offsets held above the high watermark: the documented limit of fencing none", c.name(), row.duplicated, row.held)
	default:
		t.Errorf("%s: %d duplicated records (held above the high watermark: %d)", c.name(), row.duplicated, row.held)
	}
	return row
}

// tailProps is the flow sa->ta of topic with every topic kmirror creates at replication
// factor 3, and fencing none when asked.
func tailProps(t *testing.T, src, dst cluster.Cluster, sa, ta, topic, fencing string) string {
	t.Helper()
	lines := []string{
		"clusters=" + sa + "," + ta,
		sa + ".bootstrap.servers=" + strings.Join(src.Bootstrap(), ","),
		ta + ".bootstrap.servers=" + strings.Join(dst.Bootstrap(), ","),
		sa + "->" + ta + ".enabled=true",
		sa + "->" + ta + ".topics=" + topic,
		"replication.policy.class=org.apache.kafka.connect.mirror.IdentityReplicationPolicy",
		"offset-syncs.topic.location=target",
		"replication.factor=3",
		"offset-syncs.topic.replication.factor=3",
		"checkpoints.topic.replication.factor=3",
		"emit.checkpoints.enabled=false",
		"refresh.topics.interval.seconds=5",
		sa + ".consumer.session.timeout.ms=6000",
		ta + ".producer.linger.ms=10",
		// Commits at most every 3 s: a commit under way when the followers freeze holds
		// the bucket's records (EndTxn cannot be answered), and the test needs kmirror to
		// go on writing to the leader alone.
		"kmirror.commit.latency.max.ms=30000",
	}
	if fencing == "none" {
		lines = append(lines, ta+".exactly.once.source.support=disabled")
	}
	path := filepath.Join(t.TempDir(), "mm2.properties")
	if err := os.WriteFile(path, []byte(strings.Join(lines, "\n")+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

// tailReplicas is the index of the broker leading partition 0 of topic on c and those of its
// two followers.
func tailReplicas(ctx context.Context, t *testing.T, c cluster.Cluster, topic string) (int, []int) {
	t.Helper()
	md, err := bedAdmin(t, c).Metadata(ctx, topic)
	if err != nil {
		t.Fatalf("metadata of %s: %v", topic, err)
	}
	pd := md.Topics[topic].Partitions[0]
	var followers []int
	for _, r := range pd.Replicas {
		if r != pd.Leader {
			followers = append(followers, int(r)-1) // jvm node ids are index+1
		}
	}
	if pd.Leader < 1 || len(followers) != 2 || len(pd.ISR) != 3 {
		t.Fatalf("%s/0: leader %d, replicas %v, ISR %v: want a leader and two in-sync followers", topic, pd.Leader, pd.Replicas, pd.ISR)
	}
	return int(pd.Leader) - 1, followers
}

// tailHold makes partition 0's leader hold records no follower has: it stops kmirror
// (SIGSTOP) and freezes the followers, waits out the followers' fetches still waiting on the
// leader, notes the leader's end offset and high watermark, wakes kmirror and waits up to
// tailHoldWait until the leader's log grows past that end while the high watermark stays
// put. It returns the end when no follower could fetch any more, the end now, the high
// watermark and whether the log grew; kmirror runs again, the followers stay frozen.
// tailCaughtUp waits until the target's partition 0 has committed as many records as the
// source's partition 0 held when the wait began: kmirror is caught up, sending small batches
// as records arrive. Behind (after a failed attempt it has the attempt's records to copy) its
// partition-0 writer has all its produce requests in flight (5 at most, idempotence): frozen
// followers then leave them unacknowledged, the writer can send nothing more, and the attempt
// fails: the leader's end stays where it was at the freeze.
func tailCaughtUp(ctx context.Context, t *testing.T, src, dst cluster.Cluster, topic string) {
	t.Helper()
	end, ok := bedEndOffsets(ctx, t, src, topic)[0]
	if !ok {
		t.Fatalf("no end offset of %s/0 on %s", topic, src.Name())
	}
	bedWaitFor(ctx, t, 200*time.Millisecond, fmt.Sprintf("kmirror to catch up with %s/0 on the source (%d records)", topic, end), func() string {
		if got := bedRecordsFrom(ctx, t, dst, topic, 0, 0); got < end {
			return fmt.Sprintf("target partition 0 has %d committed records", got)
		}
		return ""
	})
}

func tailHold(ctx context.Context, t *testing.T, p *mirProc, pz cluster.Pauser, cl *kgo.Client, leader int, followers []int, topic string) (leo0, leo, hw int64, ok bool) {
	t.Helper()
	if err := p.cmd.Process.Signal(syscall.SIGSTOP); err != nil {
		t.Fatalf("stop kmirror: %v", err)
	}
	for _, f := range followers {
		if err := pz.PauseBroker(ctx, f); err != nil {
			t.Fatalf("freeze broker %d: %v", f, err)
		}
	}
	// A follower's fetch that was waiting on the leader when the follower froze is answered
	// into the frozen follower's socket, which the follower reads when it is thawed: whatever
	// the leader appended by then is not unreplicated. The wait is at most
	// replica.fetch.wait.max.ms (500 ms); this bounded pause outlasts it.
	time.Sleep(time.Second)
	leo0, hw = tailOffsets(ctx, t, cl, leader, topic)
	if err := p.cmd.Process.Signal(syscall.SIGCONT); err != nil {
		t.Fatalf("wake kmirror: %v", err)
	}
	deadline := time.Now().Add(tailHoldWait)
	for {
		var h int64
		leo, h = tailOffsets(ctx, t, cl, leader, topic)
		if h != hw {
			t.Fatalf("partition 0's high watermark moved from %d to %d with both followers frozen", hw, h)
		}
		if leo > leo0 {
			return leo0, leo, hw, true
		}
		if time.Now().After(deadline) {
			return leo0, leo, hw, false
		}
		select {
		case <-ctx.Done():
			t.Fatalf("waiting for kmirror to write to the frozen partition: %v", ctx.Err())
		case <-time.After(100 * time.Millisecond):
		}
	}
}

// tailOffsets asks broker leader (by index) for partition 0's log end offset and high
// watermark. A ListOffsets for the latest offset answers the high watermark to a consumer
// (replica id -1) and the log end offset to a debugging client (replica id -2): records at or
// above the high watermark are written on the leader but not yet replicated to the in-sync
// replicas, and so not acknowledged to an acks=all producer.
func tailOffsets(ctx context.Context, t *testing.T, cl *kgo.Client, leader int, topic string) (leo, hw int64) {
	t.Helper()
	ask := func(replica int32) int64 {
		req := kmsg.NewPtrListOffsetsRequest()
		req.ReplicaID = replica
		rt := kmsg.NewListOffsetsRequestTopic()
		rt.Topic = topic
		rp := kmsg.NewListOffsetsRequestTopicPartition()
		rp.Partition, rp.Timestamp = 0, -1
		rt.Partitions = append(rt.Partitions, rp)
		req.Topics = append(req.Topics, rt)
		rctx, cancel := context.WithTimeout(ctx, 10*time.Second)
		defer cancel()
		resp, err := req.RequestWith(rctx, cl.Broker(leader+1))
		if err == nil && (len(resp.Topics) != 1 || len(resp.Topics[0].Partitions) != 1) {
			err = fmt.Errorf("unexpected answer %+v", resp)
		}
		if err == nil {
			if code := resp.Topics[0].Partitions[0].ErrorCode; code != 0 {
				err = fmt.Errorf("error code %d", code)
			}
		}
		if err != nil {
			t.Fatalf("ListOffsets (replica id %d) of %s/0 to broker %d: %v", replica, topic, leader, err)
		}
		return resp.Topics[0].Partitions[0].Offset
	}
	return ask(-2), ask(-1)
}

// tailProducer writes records "<partition>-<seq>-..." round-robin to topic on the source
// (acks=all, idempotent) at about 1,000 a second until stop.
type tailProducer struct {
	cl    *kgo.Client
	quit  chan struct{}
	done  chan struct{}
	once  sync.Once
	err   atomic.Value
	acked atomic.Int64
}

func tailStartProducer(ctx context.Context, t *testing.T, c cluster.Cluster, topic string) *tailProducer {
	t.Helper()
	p := &tailProducer{quit: make(chan struct{}), done: make(chan struct{}),
		cl: bedClient(t, c.Bootstrap(), kgo.RecordPartitioner(kgo.ManualPartitioner()), kgo.ProducerLinger(5*time.Millisecond))}
	go func() {
		defer close(p.done)
		pad := strings.Repeat("p", 80)
		tick := time.NewTicker(10 * time.Millisecond)
		defer tick.Stop()
		var seq [tailParts]int64
		for i := 0; ; i++ {
			if i%10 == 0 {
				select {
				case <-tick.C:
				case <-p.quit:
					p.cl.Flush(ctx)
					return
				case <-ctx.Done():
					return
				}
			}
			part := int32(i % tailParts)
			r := &kgo.Record{Topic: topic, Partition: part, Key: fmt.Appendf(nil, "k%d", i%1000),
				Value: fmt.Appendf(nil, "%d-%d-%s", part, seq[part], pad)}
			seq[part]++
			p.cl.Produce(ctx, r, func(_ *kgo.Record, err error) {
				if err != nil {
					p.err.Store(err)
					return
				}
				p.acked.Add(1)
			})
		}
	}()
	return p
}

// stop ends the producer once, waits until what it wrote is acknowledged and fails on a
// produce error.
func (p *tailProducer) stop(t *testing.T) {
	t.Helper()
	p.once.Do(func() {
		close(p.quit)
		<-p.done
		if err, _ := p.err.Load().(error); err != nil {
			t.Errorf("source producer (the harness): %v", err)
		}
	})
}
