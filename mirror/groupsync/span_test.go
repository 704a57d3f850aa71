package groupsync_test

import (
	"fmt"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/kmigrate/kmigrate/internal/testkit"
	"github.com/kmigrate/kmigrate/mirror/groupsync"
	"github.com/kmigrate/kmigrate/offsetmap"
)

// These tests stage a transactional target, as kmirror writes it: the copies of source
// offsets 0..4 in one committed transaction (target offsets 0..4, its marker at 5), then what
// each test needs, and a group idle at G=5 on the source. E(G) right after the copy of G-1 is
// 5; the offsets from 5 to the next record a read_committed consumer reads are all E(G).

// set gives the translator the map of topic's partition pm.Partition.
func (f *fakeTranslator) set(topic string, pm *offsetmap.PartitionMap) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.maps == nil {
		f.maps = make(map[string]map[int32]*offsetmap.PartitionMap)
	}
	if f.maps[topic] == nil {
		f.maps[topic] = make(map[int32]*offsetmap.PartitionMap)
	}
	f.maps[topic][pm.Partition] = pm
}

// txnClient is a client of the target with its own transactional ID.
func (e *env) txnClient() *kgo.Client {
	e.t.Helper()
	return testkit.Client(e.t, e.tgtK, kgo.TransactionalID(testkit.TopicName("groupsync-txn")))
}

// txn writes n records to target partition prefix+topic/p in one transaction and commits or
// aborts it (a marker follows); it returns their offsets.
func (e *env) txn(topic string, p int32, commit bool, n int) []int64 {
	e.t.Helper()
	cl := e.txnClient()
	defer cl.Close()
	if err := cl.BeginTransaction(); err != nil {
		e.t.Fatal(err)
	}
	offs := testkit.Produce(e.t, cl, prefix+topic, p, testkit.Records(0, n-1)...)
	if err := cl.EndTransaction(e.ctx, kgo.TransactionEndTry(commit)); err != nil {
		e.t.Fatalf("end the transaction (commit %v): %v", commit, err)
	}
	return offs
}

// copies writes the copies of source offsets 0..4 to target partition p (offsets 0..4, the
// marker at 5).
func (e *env) copies(topic string, p int32) {
	e.t.Helper()
	if offs := e.txn(topic, p, true, 5); offs[0] != 0 || offs[4] != 4 {
		e.t.Fatalf("copies of 0..4 at %v, want 0..4", offs)
	}
}

// wantOffsets fails unless offs are from..to.
func wantOffsets(t *testing.T, what string, offs []int64, from, to int64) {
	t.Helper()
	if offs[0] != from || offs[len(offs)-1] != to {
		t.Fatalf("%s at %d..%d, want %d..%d", what, offs[0], offs[len(offs)-1], from, to)
	}
}

// fetches counts the Fetch requests the target answers from now on.
func (e *env) fetches() *atomic.Int64 {
	var n atomic.Int64
	e.tgtK.ControlKey(int16(kmsg.Fetch), func(kmsg.Request) (kmsg.Response, error, bool) {
		e.tgtK.KeepControl()
		n.Add(1)
		return nil, nil, false
	})
	return &n
}

func (e *env) wantCheckpoint(group, topic string, p int32, upstream, downstream int64) {
	e.t.Helper()
	for k, c := range e.lastCheckpoints() {
		if k.Group == group && k.Topic == prefix+topic && k.Partition == p {
			if c.Upstream != upstream || c.Downstream != downstream {
				e.t.Fatalf("checkpoint %s %s/%d: got %d -> %d, want %d -> %d", group, topic, p, c.Upstream, c.Downstream, upstream, downstream)
			}
			return
		}
	}
	e.t.Fatalf("no checkpoint for %s %s/%d", group, topic, p)
}

// A commit marker after the copy of G-1: the group is committed at the copy of G, the next
// record (partition 0); with nothing after the marker yet, at the end of the log (partition
// 1), where the copy of G will land.
func TestSpanStepsOverMarker(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	e.topic("m", 2)
	e.copies("m", 0)
	wantOffsets(t, "copy of 5", e.txn("m", 0, true, 1), 6, 6) // its marker at 7
	e.tr.set("m", &offsetmap.PartitionMap{Partition: 0, SourceTo: 6, TargetTo: 7,
		Segments: []offsetmap.Segment{{Source: 0, Target: 0, Len: 5}, {Source: 5, Target: 6, Len: 1}}})
	e.copies("m", 1)
	e.tr.set("m", &offsetmap.PartitionMap{Partition: 1, SourceTo: 5, TargetTo: 5,
		Segments: []offsetmap.Segment{{Source: 0, Target: 0, Len: 5}}})
	e.commitSource("idle", "m", 0, 5, "")
	e.commitSource("idle", "m", 1, 5, "")

	cfg := e.config()
	s, err := groupsync.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	rep, err := s.SyncOnce(e.ctx)
	if err != nil || rep.Errors() > 0 {
		t.Fatalf("SyncOnce: %v %+v", err, rep.Groups)
	}
	for p, want := range []int64{6, 6} {
		pr := wantPartition(t, rep, "idle", "m", int32(p), groupsync.StatusSynced, groupsync.StatusSynced)
		if pr.Downstream != want || !strings.Contains(pr.Reason, "transaction markers") {
			t.Fatalf("partition %d: downstream %d (reason %q), want %d stepping over the marker", p, pr.Downstream, pr.Reason, want)
		}
		e.wantTarget("idle", prefix+"m", int32(p), want)
		e.wantCheckpoint("idle", "m", int32(p), 5, want)
	}

	// The next pass writes nothing: partition 0's span is known for good, partition 1's is
	// read on from its end.
	rep, err = s.SyncOnce(e.ctx)
	if err != nil || rep.Committed != 0 || rep.Emitted != 0 {
		t.Fatalf("second pass: %v, committed %d emitted %d, want 0 0", err, rep.Committed, rep.Emitted)
	}

	// The copy of G lands on partition 1 where the group is: still nothing to write.
	wantOffsets(t, "copy of 5", e.txn("m", 1, true, 1), 6, 6)
	e.tr.set("m", &offsetmap.PartitionMap{Partition: 1, SourceTo: 6, TargetTo: 7,
		Segments: []offsetmap.Segment{{Source: 0, Target: 0, Len: 5}, {Source: 5, Target: 6, Len: 1}}})
	rep, err = s.SyncOnce(e.ctx)
	if err != nil || rep.Committed != 0 || rep.Emitted != 0 {
		t.Fatalf("after the copy of G: %v, committed %d emitted %d, want 0 0", err, rep.Committed, rep.Emitted)
	}
	wantPartition(t, rep, "idle", "m", 1, groupsync.StatusUnchanged, groupsync.StatusUnchanged)
}

// A fenced writer's aborted transaction after the copy of G-1: the group is committed past its
// records and marker, at the copy of G, and the span is read once: the next pass fetches
// nothing.
func TestSpanStepsOverAbortedRecords(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	e.topic("a", 1)
	e.copies("a", 0)
	wantOffsets(t, "aborted records", e.txn("a", 0, false, 2), 6, 7) // marker at 8
	wantOffsets(t, "copy of 5", e.txn("a", 0, true, 1), 9, 9)
	e.tr.set("a", &offsetmap.PartitionMap{Partition: 0, SourceTo: 6, TargetTo: 10,
		Segments: []offsetmap.Segment{{Source: 0, Target: 0, Len: 5}, {Source: 5, Target: 9, Len: 1}}})
	e.commitSource("g1", "a", 0, 5, "")
	e.commitSource("g2", "a", 0, 5, "")

	s, err := groupsync.New(e.config())
	if err != nil {
		t.Fatal(err)
	}
	rep, err := s.SyncOnce(e.ctx)
	if err != nil || rep.Errors() > 0 {
		t.Fatalf("SyncOnce: %v %+v", err, rep.Groups)
	}
	for _, g := range []string{"g1", "g2"} {
		pr := wantPartition(t, rep, g, "a", 0, groupsync.StatusSynced, groupsync.StatusSynced)
		if pr.Downstream != 9 || !strings.Contains(pr.Reason, "2 records of aborted transactions") {
			t.Fatalf("%s: downstream %d (reason %q), want 9 past 2 aborted records", g, pr.Downstream, pr.Reason)
		}
		e.wantTarget(g, prefix+"a", 0, 9)
		e.wantCheckpoint(g, "a", 0, 5, 9)
	}

	n := e.fetches()
	rep, err = s.SyncOnce(e.ctx)
	if err != nil || rep.Committed != 0 || rep.Emitted != 0 {
		t.Fatalf("second pass: %v, committed %d emitted %d, want 0 0", err, rep.Committed, rep.Emitted)
	}
	if got := n.Load(); got != 0 {
		t.Fatalf("second pass sent %d fetch requests to the target, want 0 (the span is known)", got)
	}
}

// A transaction still open right after the copy of G-1 (its marker at 5, the open
// transaction from 6): the group is committed right after the copy, 5. Once the transaction
// commits (it holds the copy of G), the group's commit and checkpoint at 5 are left as they
// are, and a group that had no commit is committed and checkpointed at the copy of G.
func TestSpanOpenTransactionKeepsOffsetAfterCopy(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	e.topic("o", 1)
	e.copies("o", 0)
	open := e.txnClient()
	if err := open.BeginTransaction(); err != nil {
		t.Fatal(err)
	}
	wantOffsets(t, "open transaction", testkit.Produce(t, open, prefix+"o", 0, testkit.Record(5)), 6, 6)
	e.tr.set("o", &offsetmap.PartitionMap{Partition: 0, SourceTo: 5, TargetTo: 5,
		Segments: []offsetmap.Segment{{Source: 0, Target: 0, Len: 5}}})
	e.commitSource("idle", "o", 0, 5, "")

	rep := e.syncOnce(e.config())
	pr := wantPartition(t, rep, "idle", "o", 0, groupsync.StatusSynced, groupsync.StatusSynced)
	if pr.Downstream != 5 || !strings.Contains(pr.Reason, "open on the target from offset 6") {
		t.Fatalf("downstream %d (reason %q), want 5 before the open transaction", pr.Downstream, pr.Reason)
	}
	e.wantTarget("idle", prefix+"o", 0, 5)
	e.wantCheckpoint("idle", "o", 0, 5, 5)

	if err := open.EndTransaction(e.ctx, kgo.TryCommit); err != nil {
		t.Fatal(err)
	}
	e.tr.set("o", &offsetmap.PartitionMap{Partition: 0, SourceTo: 6, TargetTo: 8,
		Segments: []offsetmap.Segment{{Source: 0, Target: 0, Len: 5}, {Source: 5, Target: 6, Len: 1}}})
	e.commitSource("fresh", "o", 0, 5, "")
	rep = e.syncOnce(e.config())
	pr = wantPartition(t, rep, "idle", "o", 0, groupsync.StatusUnchanged, groupsync.StatusUnchanged)
	if pr.Downstream != 6 {
		t.Fatalf("downstream after the commit: %d, want 6", pr.Downstream)
	}
	e.wantTarget("idle", prefix+"o", 0, 5)
	e.wantCheckpoint("idle", "o", 0, 5, 5)
	wantPartition(t, rep, "fresh", "o", 0, groupsync.StatusSynced, groupsync.StatusSynced)
	e.wantTarget("fresh", prefix+"o", 0, 6)
	e.wantCheckpoint("fresh", "o", 0, 5, 6)
}

// A target commit anywhere in the span (right after the copy of G-1, on an aborted record, at
// the copy of G) is E(G): nothing is written and it is reported unchanged, not held. One past
// the copy of G skips it: held.
func TestSpanTargetCommitInSpanIsExact(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	e.topic("s", 1)
	e.copies("s", 0)
	wantOffsets(t, "aborted records", e.txn("s", 0, false, 2), 6, 7) // marker at 8
	wantOffsets(t, "copy of 5", e.txn("s", 0, true, 1), 9, 9)        // marker at 10
	e.tr.set("s", &offsetmap.PartitionMap{Partition: 0, SourceTo: 6, TargetTo: 11,
		Segments: []offsetmap.Segment{{Source: 0, Target: 0, Len: 5}, {Source: 5, Target: 9, Len: 1}}})
	at := []int64{5, 7, 9, 10}
	for _, o := range at {
		g := fmt.Sprintf("at%d", o)
		e.commitSource(g, "s", 0, 5, "")
		testkit.Commit(t, e.tgtAdm, g, prefix+"s", 0, o, "")
	}
	cfg := e.config()
	cfg.EmitCheckpoints = false
	rep := e.syncOnce(cfg)
	if rep.Committed != 0 {
		t.Fatalf("committed %d, want 0", rep.Committed)
	}
	for _, o := range at {
		g := fmt.Sprintf("at%d", o)
		want := groupsync.StatusUnchanged
		if o == 10 {
			want = groupsync.StatusHeld
		}
		pr := wantPartition(t, rep, g, "s", 0, want, groupsync.StatusDisabled)
		if pr.Downstream != 9 || pr.TargetBefore != o {
			t.Fatalf("%s: downstream %d, target before %d, want 9 and %d", g, pr.Downstream, pr.TargetBefore, o)
		}
		e.wantTarget(g, prefix+"s", 0, o)
	}
}

// A span longer than the bound the sync reads (10,000 offsets, kreconcile's default scan
// limit; here 12,000 aborted records) keeps the offset right after the copy of G-1; a target
// commit in what was read is still E(G).
func TestSpanPastBoundKeepsOffsetAfterCopy(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	e.topic("b", 1)
	e.copies("b", 0)
	wantOffsets(t, "aborted records", e.txn("b", 0, false, 12_000), 6, 12_005) // marker at 12,006
	wantOffsets(t, "copy of 5", e.txn("b", 0, true, 1), 12_007, 12_007)
	e.tr.set("b", &offsetmap.PartitionMap{Partition: 0, SourceTo: 6, TargetTo: 12_009,
		Segments: []offsetmap.Segment{{Source: 0, Target: 0, Len: 5}, {Source: 5, Target: 12_007, Len: 1}}})
	e.commitSource("idle", "b", 0, 5, "")
	e.commitSource("moved", "b", 0, 5, "")
	testkit.Commit(t, e.tgtAdm, "moved", prefix+"b", 0, 5000, "")

	rep := e.syncOnce(e.config())
	pr := wantPartition(t, rep, "idle", "b", 0, groupsync.StatusSynced, groupsync.StatusSynced)
	if pr.Downstream != 5 || !strings.Contains(pr.Reason, "past 10000 offsets") {
		t.Fatalf("downstream %d (reason %q), want 5: the span is longer than the bound", pr.Downstream, pr.Reason)
	}
	e.wantTarget("idle", prefix+"b", 0, 5)
	wantPartition(t, rep, "moved", "b", 0, groupsync.StatusUnchanged, groupsync.StatusSynced)
	e.wantTarget("moved", prefix+"b", 0, 5000)
}
