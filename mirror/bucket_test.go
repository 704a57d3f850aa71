package mirror_test

import (
	"context"
	"errors"
	"fmt"
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

// TestMirrorBuckets shares 48 partitions between processes with 4 buckets while records keep
// arriving: a second process joins (buckets move mid-transaction), a third joins, two leave.
// At every settled point each process owns whole buckets, no bucket is owned twice, and a
// process holds one transactional producer per bucket it owns, not per partition. At the end
// the target holds every record exactly once and the map is exact.
func TestMirrorBuckets(t *testing.T) {
	t.Parallel()
	p := newPair(t)
	const topic, parts, buckets = "orders-buckets", 48, 4
	testkit.CreateTopic(t, testkit.Client(t, p.src), topic, parts, nil)
	cfg := testConfig(topic)
	cfg.Buckets = buckets

	next, stopLoad := keepProducing(t, p, topic, parts, 0, 10*time.Millisecond, 5)

	var engines []*mirror.Engine
	var stops []func() error
	add := func() {
		e, stop := start(t, p, cfg)
		engines, stops = append(engines, e), append(stops, stop)
	}
	// settled checks the live engines own every partition in whole, disjoint buckets.
	settled := func(live []*mirror.Engine) {
		t.Helper()
		waitFor(t, fmt.Sprintf("%d processes to own whole buckets", len(live)), func() bool {
			owner := map[int]int{}
			total := 0
			for i, e := range live {
				for _, ps := range e.Owned() {
					for _, part := range ps {
						b := mirror.BucketOf(topic, part, buckets)
						if o, ok := owner[b]; ok && o != i {
							return false
						}
						owner[b] = i
						total++
					}
				}
			}
			if total != parts {
				return false
			}
			for i, e := range live {
				if count(e.Owned()) == 0 {
					return false // fewer processes than buckets: each has some
				}
				n := 0
				for _, o := range owner {
					if o == i {
						n++
					}
				}
				if e.Writers() != n {
					return false
				}
			}
			return true
		})
		for _, e := range live {
			if w := e.Writers(); w > buckets {
				t.Fatalf("a process holds %d transactional producers for %d buckets", w, buckets)
			}
		}
	}
	add()
	settled(engines[:1])
	afterOne := next.Load() + 200
	waitFor(t, "records mirrored by one process", func() bool { return next.Load() >= afterOne })
	add()
	settled(engines[:2])
	add()
	settled(engines[:3])
	afterThree := next.Load() + 200
	waitFor(t, "records mirrored by three processes", func() bool { return next.Load() >= afterThree })
	for i := range 2 {
		if err := stops[i](); err != nil {
			t.Fatalf("Run %d: %v", i, err)
		}
	}
	settled(engines[2:])
	stopLoad()
	total := next.Load()
	mirroredExactly(t, p, engines[2], topic, parts, total)
	if err := stops[2](); err != nil {
		t.Fatalf("Run 3: %v", err)
	}
}

// TestMirrorFencesEarlierScheme: a process of the flow's earlier fencing scheme (kmirror's one
// transactional id per partition, or another bucket count) that lost the group but still
// reaches the target holds a transaction open with a record in it. A process of the new
// scheme takes the flow over: its first resume fences the earlier scheme's ids, so the old
// process's commit is refused and the target holds each record once. Without that fence the
// old process commits its copy after the new one mirrored the same record.
func TestMirrorFencesEarlierScheme(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name    string
		earlier int // bucket count of the earlier run; 0: one id per partition
	}{
		{"one id per partition", 0},
		{"4 buckets to 8", 4},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			p := newPair(t)
			topic := fmt.Sprintf("orders-scheme-%d", tc.earlier)
			const parts = 2
			testkit.CreateTopic(t, testkit.Client(t, p.src), topic, parts, nil)
			produce(t, p.src, topic, parts, 0, 100)
			cfg := testConfig(topic)
			cfg.Buckets = 8
			old := cfg
			old.Buckets = tc.earlier
			var zombieID string
			if tc.earlier > 0 {
				// The earlier run mirrors everything, then its process loses the group.
				_, stop := start(t, p, old)
				waitMirrored(t, p, topic, parts)
				if err := stop(); err != nil {
					t.Fatal(err)
				}
				zombieID = mirror.BucketTxnID(old, topic, 0)
			} else {
				// A map of the earlier scheme: partition 0 mirrored from its start, nothing yet.
				cl := testkit.Client(t, p.dst)
				testkit.CreateTopic(t, cl, topic, parts, nil)
				testkit.CreateTopic(t, cl, "kmirror-offsets.A.internal", 1, nil)
				for part := int32(0); part < parts; part++ {
					k, v := mirror.EncodeMapRecord(topic, part, 0, 0, 0)
					if err := cl.ProduceSync(context.Background(), &kgo.Record{Topic: "kmirror-offsets.A.internal", Key: k, Value: v}).FirstErr(); err != nil {
						t.Fatal(err)
					}
				}
				zombieID = "kmirror-A-B-" + topic + "-0"
			}
			// The old process's open transaction: a copy of source record 0 of partition 0
			// again (after the earlier run, it would duplicate it; before any, it is the copy
			// the new process makes too).
			zombie := testkit.Client(t, p.dst, kgo.TransactionalID(zombieID), kgo.DefaultProduceTopic(topic))
			ctx := context.Background()
			if err := zombie.BeginTransaction(); err != nil {
				t.Fatal(err)
			}
			src := readAll(t, p.src, topic, 0)
			dup := &kgo.Record{Partition: 0, Key: src[0].Key, Value: src[0].Value, Headers: src[0].Headers, Timestamp: src[0].Timestamp}
			if err := zombie.ProduceSync(ctx, dup).FirstErr(); err != nil {
				t.Fatal(err)
			}

			_, stop := start(t, p, cfg)
			produce(t, p.src, topic, parts, 100, 100)
			// Written, not yet all committed: without the fence the old transaction would pin
			// the partition's last stable offset until it ends.
			waitProduced(t, p, topic, parts)
			err := zombie.EndTransaction(ctx, kgo.TryCommit)
			waitMirrored(t, p, topic, parts)
			if err == nil {
				t.Fatalf("the earlier scheme's transaction %s committed after the new scheme took over", zombieID)
			}
			if !errors.Is(err, kerr.ProducerFenced) && !errors.Is(err, kerr.InvalidProducerEpoch) && !errors.Is(err, kerr.InvalidProducerIDMapping) && !errors.Is(err, kerr.InvalidTxnState) {
				t.Logf("the earlier scheme's commit failed with %v", err)
			}
			for part := int32(0); part < parts; part++ {
				sameRecords(t, p, topic, part)
			}
			if err := stop(); err != nil {
				t.Fatal(err)
			}
		})
	}
}

// TestMirrorRefusesOtherBucketCount: a process started with another bucket count than the
// processes mirroring the flow stops with an error that says so, instead of splitting a
// bucket between two writers or waiting silently; the running process goes on.
func TestMirrorRefusesOtherBucketCount(t *testing.T) {
	t.Parallel()
	p := newPair(t)
	const topic, parts = "orders-other-count", 4
	testkit.CreateTopic(t, testkit.Client(t, p.src), topic, parts, nil)
	produce(t, p.src, topic, parts, 0, 50)
	cfg := testConfig(topic)
	cfg.Buckets = 4
	a, stopA := start(t, p, cfg)
	waitMirrored(t, p, topic, parts)
	cfg.Buckets = 8
	_, done := runBounded(t, p, cfg)
	runFails(t, done, "after joining a group split into 4 buckets", "group kmirror-A-B refused this process", "8 buckets", "--fence-buckets")
	produce(t, p.src, topic, parts, 50, 50)
	waitMirrored(t, p, topic, parts)
	if n := count(a.Owned()); n != parts {
		t.Fatalf("the running process owns %d partitions, want %d", n, parts)
	}
	if err := stopA(); err != nil {
		t.Fatal(err)
	}
}

// TestMirrorFencesFrozenCommit freezes process A inside a commit, after its map records were
// written and before its transaction ends, with its group session starved as a paused
// process's is. The group gives the bucket to B, whose resume fences it. When A thaws, its
// commit is refused: the records and map records of its transaction never become visible,
// and B's copies are the only ones.
func TestMirrorFencesFrozenCommit(t *testing.T) {
	t.Parallel()
	p := pair{testkit.StartCluster(t, kfake.GroupMinSessionTimeout(100*time.Millisecond)), testkit.StartCluster(t)}
	const topic, parts = "orders-frozen-commit", 2
	testkit.CreateTopic(t, testkit.Client(t, p.src), topic, parts, nil)
	produce(t, p.src, topic, parts, 0, 100)
	cfg := testConfig(topic)
	cfg.Buckets = 1
	cfg.SessionTimeout = 1500 * time.Millisecond
	a, stopA := start(t, p, cfg)
	waitMirrored(t, p, topic, parts)
	adm := kadm.NewClient(testkit.Client(t, p.src))
	group := a.Config().GroupID
	memberA := onlyMember(t, adm, group)

	wake := starveHeartbeats(t, p, memberA)
	release := make(chan struct{})
	var releaseOnce sync.Once
	thaw := func() { releaseOnce.Do(func() { close(release); wake() }) }
	t.Cleanup(thaw)
	frozen := make(chan struct{})
	var armed atomic.Bool
	armed.Store(true)
	a.SetBeforeCommitEnd(func() {
		if armed.CompareAndSwap(true, false) {
			close(frozen)
			<-release
		}
	})
	produce(t, p.src, topic, parts, 100, 100)
	<-frozen
	waitExpired(t, adm, group, memberA)
	b, stopB := start(t, p, cfg)
	waitFor(t, "B to own every partition", func() bool { return count(b.Owned()) == parts })
	produce(t, p.src, topic, parts, 200, 100)
	waitMirrored(t, p, topic, parts)
	thaw()
	waitFor(t, "A to learn that it lost its partitions", func() bool { return count(a.Owned()) < parts })
	if err := stopA(); err != nil {
		t.Logf("Run A: %v", err)
	}
	mirroredExactly(t, p, b, topic, parts, 300)
	if err := stopB(); err != nil {
		t.Fatalf("Run B: %v", err)
	}
}

// TestMirrorMapWindow mirrors in many commits with a map window of 8 segments: the map in
// memory and in the map topic (tombstones applied, as compaction would) keeps at most 9 per
// partition, E(G) of a G below the window is Compacted, never guessed, and a restarted
// engine resumes from the compacted map exactly.
func TestMirrorMapWindow(t *testing.T) {
	t.Parallel()
	p := newPair(t)
	const topic, parts = "orders-window", 2
	testkit.CreateTopic(t, testkit.Client(t, p.src), topic, parts, nil)
	cfg := testConfig(topic)
	cfg.MapWindow = 8
	e, stop := start(t, p, cfg)
	n := 0
	// One burst per commit at least: 30 commits, each a new segment (a marker between them).
	for range 30 {
		produce(t, p.src, topic, parts, n, 5)
		n += 5
		waitMirrored(t, p, topic, parts)
		waitFor(t, "the burst committed", func() bool {
			tr, ok := e.Translate(topic, 0, int64(n))
			return ok && tr.Known
		})
	}
	for part := int32(0); part < parts; part++ {
		pm, ok := e.Map(topic, part)
		if !ok || len(pm.Segments) > 9 {
			t.Fatalf("partition %d: %d segments in memory, want at most 9", part, len(pm.Segments))
		}
		if tr, _ := e.Translate(topic, part, 3); tr.Known || !tr.Compacted {
			t.Fatalf("partition %d: E(3), long compacted: %+v, want Compacted", part, tr)
		}
	}
	if err := stop(); err != nil {
		t.Fatal(err)
	}
	persisted := readPersisted(t, p, "kmirror-offsets.A.internal")
	for part := int32(0); part < parts; part++ {
		if segs := persisted[fmt.Sprintf("%s/%d", topic, part)]; len(segs) > 9+1 {
			t.Fatalf("partition %d: %d segments live in the map topic, want at most 10 (9 and the origin)", part, len(segs))
		}
	}
	e2, stop2 := start(t, p, cfg)
	produce(t, p.src, topic, parts, n, 50)
	n += 50
	waitMirrored(t, p, topic, parts)
	for part := int32(0); part < parts; part++ {
		sameRecords(t, p, topic, part)
		waitFor(t, "the last records committed", func() bool {
			tr, ok := e2.Translate(topic, part, int64(n))
			return ok && tr.Known
		})
		tr, _ := e2.Translate(topic, part, int64(n))
		dst := readAll(t, p.dst, topic, part)
		if want := dst[len(dst)-1].Offset + 1; tr.Target != want {
			t.Fatalf("partition %d: E(%d) = %d after the resume from a compacted map, want %d", part, n, tr.Target, want)
		}
	}
	if err := stop2(); err != nil {
		t.Fatal(err)
	}
}

// TestMirrorResumedAfterStopCommits: a partition stopped at resume (the source listed its end
// below the map's, as a truncated log would be) and resumed by its re-check once the listing
// is right again writes through its bucket: its records are committed, to read_committed
// readers, and its map answers.
func TestMirrorResumedAfterStopCommits(t *testing.T) {
	t.Parallel()
	p := newPair(t)
	const topic = "orders-stopped-resumed"
	testkit.CreateTopic(t, testkit.Client(t, p.src), topic, 1, nil)
	produce(t, p.src, topic, 1, 0, 50)
	cfg := testConfig(topic)
	l := startLogged(t, p, cfg)
	waitMirrored(t, p, topic, 1)
	if err := l.stop(t); err != nil {
		t.Fatal(err)
	}
	var lie atomic.Bool
	lie.Store(true)
	p.src.ControlKey(int16(kmsg.ListOffsets), func(kr kmsg.Request) (kmsg.Response, error, bool) {
		p.src.KeepControl()
		if !lie.Load() {
			return nil, nil, false
		}
		req := kr.(*kmsg.ListOffsetsRequest)
		resp := req.ResponseKind().(*kmsg.ListOffsetsResponse)
		for _, rt := range req.Topics {
			st := kmsg.NewListOffsetsResponseTopic()
			st.Topic = rt.Topic
			for _, rp := range rt.Partitions {
				sp := kmsg.NewListOffsetsResponseTopicPartition()
				sp.Partition, sp.LeaderEpoch, sp.Timestamp = rp.Partition, -1, -1
				if rp.Timestamp == -1 { // the end: below the 50 records mapped
					sp.Offset = 10
				}
				st.Partitions = append(st.Partitions, sp)
			}
			resp.Topics = append(resp.Topics, st)
		}
		return resp, nil, true
	})
	produce(t, p.src, topic, 1, 50, 10)
	l = startLogged(t, p, cfg)
	l.waitStopped(t, topic, 0, "source_truncated", 1)
	lie.Store(false)
	waitFor(t, "the re-check to resume the partition", func() bool {
		return strings.Contains(l.logs.String(), "partition resumed: the condition it stopped for has cleared")
	})
	produce(t, p.src, topic, 1, 60, 10)
	waitMirrored(t, p, topic, 1)
	sameRecords(t, p, topic, 0)
	mapComplete(t, l.e, topic, 0, 70)
	if err := l.stop(t); err != nil {
		t.Fatal(err)
	}
}
