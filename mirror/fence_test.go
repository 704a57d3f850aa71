package mirror_test

import (
	"context"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/kmigrate/kmigrate/internal/testkit"
	"github.com/kmigrate/kmigrate/mirror"
)

// TestMirrorFencesStaleOwner starves engine A of its source-group heartbeats while its fetches
// and its target connection keep working, as a long GC pause or a partitioned coordinator
// would: the group expires A's session and gives every partition to engine B while records
// keep arriving and A keeps producing. Then A wakes up. With transactions (the default) B's
// resume fences A, so the target holds every record exactly once; without a fence
// (exactly.once.source.support=disabled) A's late writes duplicate B's, which the second case
// shows so that the first one is known to test something.
func TestMirrorFencesStaleOwner(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		fencing    string
		duplicates bool
	}{
		{mirror.FenceTransactions, false},
		{mirror.FenceNone, true},
	} {
		t.Run(tc.fencing, func(t *testing.T) {
			t.Parallel()
			p := pair{testkit.StartCluster(t, kfake.GroupMinSessionTimeout(100*time.Millisecond)), testkit.StartCluster(t)}
			const topic, parts = "orders-fence", 2
			testkit.CreateTopic(t, testkit.Client(t, p.src), topic, parts, nil)
			produce(t, p.src, topic, parts, 0, 100)

			cfg := testConfig(topic)
			cfg.Fencing = tc.fencing
			cfg.SessionTimeout = 1500 * time.Millisecond
			a, stopA := start(t, p, cfg)
			waitMirrored(t, p, topic, parts)
			adm := kadm.NewClient(testkit.Client(t, p.src))
			group := a.Config().GroupID
			memberA := onlyMember(t, adm, group)

			// Starve A's heartbeats: the coordinator hears nothing from A until wake.
			wake := starveHeartbeats(t, p, memberA)

			// Records keep arriving on the source all along; A keeps mirroring them.
			next, stopLoad := keepProducing(t, p, topic, parts, 100, 20*time.Millisecond, 10)

			waitExpired(t, adm, group, memberA)
			b, stopB := start(t, p, cfg)
			waitFor(t, "B to own every partition", func() bool { return count(b.Owned()) == parts })
			// Both A and B now read the source and write the target; let B mirror a while.
			afterB := next.Load() + 100
			waitFor(t, "records produced after B took over", func() bool { return next.Load() >= afterB })
			wake()
			waitFor(t, "A to learn that it lost its partitions", func() bool { return count(a.Owned()) < parts })
			stopLoad()
			if err := stopA(); err != nil {
				t.Fatalf("Run A: %v", err)
			}
			waitFor(t, "B to own every partition again", func() bool { return count(b.Owned()) == parts })
			total := next.Load()
			for part := int32(0); part < parts; part++ {
				mapComplete(t, b, topic, part, total)
			}

			dups := 0
			for part := int32(0); part < parts; part++ {
				srcN, dstN := len(readAll(t, p.src, topic, part)), len(readAll(t, p.dst, topic, part))
				if srcN != int(total) {
					t.Fatalf("%s/%d: source holds %d records, want %d", topic, part, srcN, total)
				}
				dups += dstN - srcN
				if !tc.duplicates {
					sameRecords(t, p, topic, part)
					checkMap(t, p, b, topic, part, total)
				}
			}
			if tc.duplicates && dups <= 0 {
				t.Fatalf("without a fence the stale owner wrote no duplicate (%d extra records): the test no longer reproduces the fault", dups)
			}
			t.Logf("%s: %d records per partition, %d extra on the target", tc.fencing, total, dups)
			if err := stopB(); err != nil {
				t.Fatalf("Run B: %v", err)
			}
		})
	}
}

// keepProducing produces n records to each partition of topic every interval, the first
// numbered from, until the returned stop is called (it returns once the last batch is in);
// next is the number the next batch starts at, so every partition holds next records then.
func keepProducing(t *testing.T, p pair, topic string, parts int32, from int64, every time.Duration, n int) (next *atomic.Int64, stop func()) {
	next = &atomic.Int64{}
	next.Store(from)
	quit, done := make(chan struct{}), make(chan struct{})
	go func() {
		defer close(done)
		for {
			select {
			case <-quit:
				return
			case <-time.After(every):
			}
			produce(t, p.src, topic, parts, int(next.Add(int64(n)))-n, n)
		}
	}()
	var once sync.Once
	return next, func() { once.Do(func() { close(quit); <-done }) }
}

// starveHeartbeats holds every heartbeat of member on the source coordinator, unanswered,
// until the returned wake is called (also at the test's end): the member's session expires
// while its fetches and its target connection go on, as in a long pause.
func starveHeartbeats(t *testing.T, p pair, member string) (wake func()) {
	release := make(chan struct{})
	var once sync.Once
	wake = func() { once.Do(func() { close(release) }) }
	t.Cleanup(wake)
	p.src.ControlKey(int16(kmsg.Heartbeat), func(kr kmsg.Request) (kmsg.Response, error, bool) {
		p.src.KeepControl()
		if kr.(*kmsg.HeartbeatRequest).MemberID == member {
			p.src.SleepControl(func() { <-release })
		}
		return nil, nil, false
	})
	return wake
}

// waitExpired waits until group no longer lists member.
func waitExpired(t *testing.T, adm *kadm.Client, group, member string) {
	t.Helper()
	waitFor(t, "the group to expire the session of "+member, func() bool {
		described, err := adm.DescribeGroups(context.Background(), group)
		if err != nil {
			return false
		}
		for _, m := range described[group].Members {
			if m.MemberID == member {
				return false
			}
		}
		return true
	})
}

// onlyMember returns the member id of the group's single member.
func onlyMember(t *testing.T, adm *kadm.Client, group string) string {
	t.Helper()
	var id string
	waitFor(t, "one member in group "+group, func() bool {
		described, err := adm.DescribeGroups(context.Background(), group)
		if err != nil || len(described[group].Members) != 1 {
			return false
		}
		id = described[group].Members[0].MemberID
		return true
	})
	return id
}

// TestMirrorWarnsFencingNone: with fencing none kmirror says at start-up, once, at WARN, what
// it gives up; with transactions it says nothing of the kind.
func TestMirrorWarnsFencingNone(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		fencing string
		warns   int
	}{
		{mirror.FenceTransactions, 0},
		{mirror.FenceNone, 1},
	} {
		t.Run(tc.fencing, func(t *testing.T) {
			t.Parallel()
			p := newPair(t)
			const topic = "orders-warn"
			testkit.CreateTopic(t, testkit.Client(t, p.src), topic, 1, nil)
			produce(t, p.src, topic, 1, 0, 10)
			cfg := testConfig(topic)
			cfg.Fencing = tc.fencing
			var logs testkit.SyncBuffer
			e, err := mirror.New(cfg, seeds(p.src), seeds(p.dst), slog.New(slog.NewTextHandler(&logs, &slog.HandlerOptions{Level: slog.LevelWarn})))
			if err != nil {
				t.Fatal(err)
			}
			stop := run(t, e)
			waitMirrored(t, p, topic, 1)
			if err := stop(); err != nil {
				t.Fatal(err)
			}
			got := 0
			for _, line := range strings.Split(logs.String(), "\n") {
				if strings.Contains(line, "level=WARN") && strings.Contains(line, `msg="fencing none:`) {
					got++
					for _, want := range []string{"duplicate", "B.exactly.once.source.support=disabled", "high watermark"} {
						if !strings.Contains(line, want) {
							t.Errorf("warning %q does not say %q", line, want)
						}
					}
				}
			}
			if got != tc.warns {
				t.Errorf("fencing %s: %d fencing-none warnings, want %d\n%s", tc.fencing, got, tc.warns, logs.String())
			}
		})
	}
}

// TestMirrorCommitAfterFenceIsFenced: another owner initialises the transactional id of a
// bucket whose commit has written its map records and not yet ended the transaction (a
// process paused there, as a frozen one is). With Kafka 4's transactions (KIP-890, EndTxn v5)
// the fence aborted the transaction and bumped the epoch by one, so the target answers the
// end of the commit INVALID_TXN_STATE, not PRODUCER_FENCED. That is a fence: the partitions
// stop quietly, and the engine stops only because the group still gives them to it, saying
// so.
func TestMirrorCommitAfterFenceIsFenced(t *testing.T) {
	t.Parallel()
	p := pair{testkit.StartCluster(t, kfake.GroupMinSessionTimeout(100*time.Millisecond)), testkit.StartCluster(t)}
	const topic = "orders-fenced-commit"
	testkit.CreateTopic(t, testkit.Client(t, p.src), topic, 1, nil)
	cfg := testConfig(topic)
	cfg.SessionTimeout = 1500 * time.Millisecond
	paused, resume := make(chan struct{}), make(chan struct{})
	var once sync.Once
	pauseCommit := func(e *mirror.Engine) {
		e.SetBeforeCommitEnd(func() {
			once.Do(func() { close(paused); <-resume })
		})
	}
	e, done := runBounded(t, p, cfg, (*mirror.Engine).HoldCommits, pauseCommit)
	waitFor(t, "the engine owns the partition", func() bool { return len(e.Owned()[topic]) == 1 })
	produce(t, p.src, topic, 1, 0, 10)
	waitFor(t, "the records produced, not committed", func() bool { return countData(t, p.dst, topic, 0, false) == 10 })
	e.ReleaseCommits()
	select {
	case <-paused:
	case <-time.After(30 * time.Second):
		t.Fatal("no commit reached the end of its transaction within 30s")
	}

	// The other owner: the bucket's id initialised elsewhere while the commit is paused.
	id := mirror.BucketTxnID(cfg, topic, 0)
	other := testkit.Client(t, p.dst, kgo.TransactionalID(id))
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	if _, _, err := other.ProducerID(ctx); err != nil {
		t.Fatal(err)
	}
	close(resume)
	runFails(t, done, "after its bucket was fenced", "was fenced (transactional id "+id+" initialised elsewhere) but the source group still assigns it")
}

// TestMirrorLostProducerIDRestarts: the target's transaction coordinator answers the end of a
// bucket's transaction INVALID_PRODUCER_ID_MAPPING, as a 3.7.1 coordinator did after the broker
// that led its transaction state was killed -9 (it no longer knew the id's producer id), while
// the source group keeps the partition with this process. No other process owns the bucket,
// so kmirror must not stop and wait for an operator: the engine stops on a transient error,
// the Supervisor starts a new one, which initialises the id again and resumes from what the
// target committed, and every record arrives once, in order. Without the distinction the
// engine stopped with "was fenced ... but the source group still assigns it", which the
// Supervisor does not restart, and kmirror exited.
func TestMirrorLostProducerIDRestarts(t *testing.T) {
	t.Parallel()
	p := pair{testkit.StartCluster(t, kfake.GroupMinSessionTimeout(100*time.Millisecond)), testkit.StartCluster(t)}
	const topic = "orders-lost-pid"
	testkit.CreateTopic(t, testkit.Client(t, p.src), topic, 1, nil)
	produce(t, p.src, topic, 1, 0, 100)
	cfg := testConfig(topic)
	cfg.SessionTimeout = 1500 * time.Millisecond
	s := &mirror.Supervisor{
		New:     func() (*mirror.Engine, error) { return mirror.New(cfg, seeds(p.src), seeds(p.dst), testLogger(t)) },
		Log:     slog.New(slog.DiscardHandler),
		Backoff: func(int) time.Duration { return 10 * time.Millisecond },
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	done := make(chan error, 1)
	go func() { done <- s.Run(ctx) }()
	waitFor(t, "the first 100 records committed on the target", func() bool { return countData(t, p.dst, topic, 0, true) == 100 })

	lost := p.dst.Fault(kfake.Fault{Keys: []kmsg.Key{kmsg.EndTxn}, TxnID: mirror.BucketTxnID(cfg, topic, 0), Err: kerr.InvalidProducerIDMapping})
	produce(t, p.src, topic, 1, 100, 100)
	testkit.WaitFor(t, "a new engine after the lost producer id", 60*time.Second, func() string {
		select {
		case err := <-done:
			t.Fatalf("kmirror stopped after the lost producer id: %v", err)
		default:
		}
		if lost.Hits() != 1 {
			return "the coordinator has not answered INVALID_PRODUCER_ID_MAPPING yet"
		}
		if n := s.Restarts(); n != 1 {
			return fmt.Sprintf("%d restarts", n)
		}
		return ""
	})
	waitFor(t, "200 records committed on the target", func() bool { return countData(t, p.dst, topic, 0, true) >= 200 })
	got := readAll(t, p.dst, topic, 0)
	if len(got) != 200 {
		t.Fatalf("the target holds %d committed records, want 200", len(got))
	}
	for i, r := range got {
		if want := fmt.Sprintf("value-0-%d", i); string(r.Value) != want {
			t.Fatalf("record %d of the target is %q, want %q (a duplicate or a gap)", i, r.Value, want)
		}
	}
	cancel()
	if err := <-done; err != nil {
		t.Fatalf("kmirror after its drain: %v", err)
	}
}
