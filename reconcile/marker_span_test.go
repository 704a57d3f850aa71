package reconcile

import (
	"fmt"
	"path/filepath"
	"regexp"
	"testing"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/kmigrate/kmigrate/internal/testkit"
	"github.com/kmigrate/kmigrate/mm2"
)

// TestPlanCommitPastMarkerIsExact: on a transactional target the copy of source offsets 0..9
// sits at 0..9 and its commit marker at 10. A group that read to the end on the target
// committed 11 (a consumer's position passes the marker); E(G=10) is 10. Every offset from 10
// to 11 is the same position for a reader (a marker holds no record), so the group is exact,
// not "ahead: would skip 0". The same holds for a commit at 10 with E past the marker.
func TestPlanCommitPastMarkerIsExact(t *testing.T) {
	e := newEnv(t)
	topic := uniqueTopic("marker-span")
	group := "g-" + topic
	testkit.CreateTopic(t, e.src, topic, 1, nil)
	testkit.CreateTopic(t, e.dst, topic, 1, nil)
	testkit.Produce(t, e.src, topic, 0, values("v", 0, 10)...)                                                           // source 0..9
	testkit.ProduceTxn(t, testkit.Client(t, e.dstK, kgo.TransactionalID("txn-"+topic)), topic, 0, values("v", 0, 10)...) // target 0..9, commit marker at 10
	testkit.Commit(t, e.srcAdm, group, topic, 0, 10, "")
	testkit.Commit(t, e.dstAdm, group, topic, 0, 11, "")
	res, err := Plan(testCtx(t), e.src, e.dst, Config{Groups: regexp.MustCompile(regexp.QuoteMeta(group))})
	if err != nil {
		t.Fatalf("Plan: %v", err)
	}
	p := findPartition(t, res, group, topic, 0)
	if p.Status != StatusExact || p.SkippedIfUnchanged != 0 || p.RedeliveredIfUnchanged != 0 {
		t.Fatalf("committed 11, E(G)=%s, only the marker between: got %s (skip %d, redeliver %d, %s), want exact",
			fmtPtr(p.ExactTarget), p.Status, p.SkippedIfUnchanged, p.RedeliveredIfUnchanged, p.Reason)
	}
	// Apply leaves it as it is: nothing to write, no rewind.
	if err := Apply(testCtx(t), e.dst, res, ApplyConfig{Backup: filepath.Join(t.TempDir(), "b.json")}); err != nil {
		t.Fatalf("Apply: %v", err)
	}
	if p := findPartition(t, res, group, topic, 0); p.Status != StatusExact || p.Applied {
		t.Errorf("after apply: %s, applied %v (%s); want exact and nothing written", p.Status, p.Applied, p.Action)
	}
	if at, _, _ := testkit.Committed(t, e.dstAdm, group, topic, 0); at != 11 {
		t.Errorf("target commit after apply: %d, want 11 (unchanged)", at)
	}
}

// TestPlanCommitInAbortedSpanIsExact: between the copy of source record 9 (target 9) and the
// end, the target holds a commit marker (10), the records of an aborted transaction (11..13)
// and its ABORT marker (14). A read_committed consumer resumes at the same record from any
// offset of 10..15: a group committed anywhere there is exact. E(G) is 15, past the aborted
// records, so that a read_uncommitted consumer of a group Apply writes does not read them; a
// group left at 12 reads 12 and 13, and the plan says so.
func TestPlanCommitInAbortedSpanIsExact(t *testing.T) {
	e := newEnv(t)
	topic := uniqueTopic("aborted-span")
	testkit.CreateTopic(t, e.src, topic, 1, nil)
	testkit.CreateTopic(t, e.dst, topic, 1, nil)
	testkit.Produce(t, e.src, topic, 0, values("v", 0, 10)...) // source 0..9
	w := newTxnWriter(t, e, topic, "txn-"+topic)
	w.commit(values("v", 0, 10)...) // target 0..9, commit marker at 10
	w.abort(values("v", 10, 13)...) // 11..13 aborted, abort marker at 14
	for _, tc := range []int64{10, 11, 12, 14, 15} {
		group := fmt.Sprintf("g-%s-%d", topic, tc)
		testkit.Commit(t, e.srcAdm, group, topic, 0, 10, "")
		testkit.Commit(t, e.dstAdm, group, topic, 0, tc, "")
		// A checkpoint (MM2's, or kmirror's group sync's) anywhere in the span is exact too.
		writeCheckpoints(t, e, "source", mm2.Checkpoint{Group: group, Topic: topic, Upstream: 10, Downstream: tc})
	}
	res, err := Plan(testCtx(t), e.src, e.dst, Config{Groups: regexp.MustCompile(regexp.QuoteMeta("g-"+topic+"-") + ".*")})
	if err != nil {
		t.Fatalf("Plan: %v", err)
	}
	for tc, aborted := range map[int64]string{10: "3", 11: "3", 12: "2", 14: "0", 15: "0"} {
		p := findPartition(t, res, fmt.Sprintf("g-%s-%d", topic, tc), topic, 0)
		if p.Status != StatusExact || fmtPtr(p.ExactTarget) != "15" || p.SkippedIfUnchanged != 0 || p.RedeliveredIfUnchanged != 0 {
			t.Errorf("committed %d: got %s E=%s (skip %d, redeliver %d, %s), want exact, E=15",
				tc, p.Status, fmtPtr(p.ExactTarget), p.SkippedIfUnchanged, p.RedeliveredIfUnchanged, p.Reason)
		}
		if fmtPtr(p.AbortedAhead) != aborted {
			t.Errorf("committed %d: %s aborted records ahead, want %s", tc, fmtPtr(p.AbortedAhead), aborted)
		}
		if p.CheckpointStatus != StatusExact {
			t.Errorf("checkpoint at %d: %s, want exact (E=15, only markers and aborted records between)", tc, p.CheckpointStatus)
		}
	}
}
