package reconcile

import (
	"context"
	"fmt"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/kmigrate/kmigrate/internal/testkit"
)

// txnWriter writes to one partition in transactions of one transactional producer, as an
// exactly-once mirror does: committed, aborted (a crashed or fenced writer), or left open.
type txnWriter struct {
	t     *testing.T
	cl    *kgo.Client
	topic string
}

func newTxnWriter(t *testing.T, e *env, topic, id string) txnWriter {
	return txnWriter{t: t, cl: testkit.Client(t, e.dstK, kgo.TransactionalID(id)), topic: topic}
}

// commit writes recs in a committed transaction (a marker follows them).
func (w txnWriter) commit(recs ...*kgo.Record) []int64 {
	w.t.Helper()
	return testkit.ProduceTxn(w.t, w.cl, w.topic, 0, recs...)
}

// abort writes recs in a transaction and aborts it (an ABORT marker follows them).
func (w txnWriter) abort(recs ...*kgo.Record) []int64 {
	w.t.Helper()
	offs := w.open(recs...)
	w.end(kgo.TryAbort)
	return offs
}

// end ends the open transaction with how.
func (w txnWriter) end(how kgo.TransactionEndTry) {
	w.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := w.cl.EndTransaction(ctx, how); err != nil {
		w.t.Fatalf("end the transaction to %s: %v", w.topic, err)
	}
}

// open writes recs in a transaction left open.
func (w txnWriter) open(recs ...*kgo.Record) []int64 {
	w.t.Helper()
	if err := w.cl.BeginTransaction(); err != nil {
		w.t.Fatalf("begin a transaction to %s: %v", w.topic, err)
	}
	return testkit.Produce(w.t, w.cl, w.topic, 0, recs...)
}

// isolationBed is a source partition with plain records v-0..v-19 and a group at G=10 on it,
// and an empty target partition of the same name.
func isolationBed(t *testing.T, prefix string) (e *env, topic, group string) {
	e = newEnv(t)
	topic = uniqueTopic(prefix)
	group = "g-" + topic
	testkit.CreateTopic(t, e.src, topic, 1, nil)
	testkit.CreateTopic(t, e.dst, topic, 1, nil)
	testkit.Produce(t, e.src, topic, 0, values("v", 0, 20)...)
	testkit.Commit(t, e.srcAdm, group, topic, 0, 10, "")
	return e, topic, group
}

func planGroup(t *testing.T, e *env, group string, cfg Config) *Result {
	t.Helper()
	cfg.Groups = regexp.MustCompile(regexp.QuoteMeta(group))
	res, err := Plan(testCtx(t), e.src, e.dst, cfg)
	if err != nil {
		t.Fatalf("Plan: %v", err)
	}
	return res
}

func fmtRanges(rs []OffsetRange) string {
	var s []string
	for _, r := range rs {
		s = append(s, r.String())
	}
	return strings.Join(s, " ")
}

// TestPlanAbortedAhead: the records of aborted transactions on the target, before E(G),
// across it and after it. Those after the position the group resumes from are counted, with
// their offsets: what a read_uncommitted consumer reads again after the switch. Those before
// it are not, and E(G) steps over those right after the copy of s*.
func TestPlanAbortedAhead(t *testing.T) {
	tests := []struct {
		name string
		// target writes the target partition; it returns the target commit of the group.
		target        func(w txnWriter) int64
		wantE         int64
		wantStatus    Status
		wantAborted   int64
		wantRanges    string
		wantProof     string
		wantRedeliver int64
	}{{
		// 0..2 aborted copies of v-0..2, 3 marker, 4..23 v-0..19, 24 marker.
		name: "before E(G)",
		target: func(w txnWriter) int64 {
			w.abort(values("v", 0, 3)...)
			w.commit(values("v", 0, 20)...)
			return 14
		},
		wantE: 14, wantStatus: StatusExact, wantAborted: 0,
	}, {
		// 0..9 v-0..9, 10 marker, 11..20 aborted copies of v-5..14 (of s* = v-9 at 15, of G =
		// v-10 at 16), 21 marker, 22..31 v-10..19, 32 marker. The aborted copies are no copies:
		// E(G) is after the committed copy of s*, and moves past the marker and aborted records
		// to the copy of G, 22. A group committed at 10 is exact, and its read_uncommitted
		// consumers read the 10 aborted records; a group at 5 is behind by the 5 records v-5..9
		// only.
		name: "across E(G), group exact at the committed copy",
		target: func(w txnWriter) int64 {
			w.commit(values("v", 0, 10)...)
			w.abort(values("v", 5, 15)...)
			w.commit(values("v", 10, 20)...)
			return 10
		},
		wantE: 22, wantStatus: StatusExact, wantAborted: 10, wantRanges: "11..20",
		wantProof: "E(G) is 22 (the next record), not 10 (after the copy): offsets 10..21 hold no record a read_committed consumer reads (10 records of aborted transactions, transaction markers or offsets a log cleaner emptied)",
	}, {
		name: "across E(G), group behind",
		target: func(w txnWriter) int64 {
			w.commit(values("v", 0, 10)...)
			w.abort(values("v", 5, 15)...)
			w.commit(values("v", 10, 20)...)
			return 5
		},
		wantE: 22, wantStatus: StatusBehind, wantAborted: 0, wantRedeliver: 5,
	}, {
		// 0..12 v-0..12, 13 marker, 14..16 aborted copies of v-8..10, 17 marker: a fenced
		// writer's aborted replay of s* after its committed copy. E(G) is 10, after the
		// committed copy: taking the aborted copy at 15 for the last one would skip v-10..12
		// for every reader.
		name: "aborted replay of s* after its committed copy",
		target: func(w txnWriter) int64 {
			w.commit(values("v", 0, 13)...)
			w.abort(values("v", 8, 11)...)
			return 10
		},
		wantE: 10, wantStatus: StatusExact, wantAborted: 3, wantRanges: "14..16",
	}, {
		// 0..14 v-0..14, 15 marker, 16..18 aborted v-15..17, 19 marker, 20..21 aborted
		// v-15..16, 22 marker, 23..27 v-15..19, 28 marker.
		name: "after E(G)",
		target: func(w txnWriter) int64 {
			w.commit(values("v", 0, 15)...)
			w.abort(values("v", 15, 18)...)
			w.abort(values("v", 15, 17)...)
			w.commit(values("v", 15, 20)...)
			return 10
		},
		wantE: 10, wantStatus: StatusExact, wantAborted: 5, wantRanges: "16..18 20..21",
	}}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			e, topic, group := isolationBed(t, "aborted")
			tc := tt.target(newTxnWriter(t, e, topic, "txn-"+topic))
			testkit.Commit(t, e.dstAdm, group, topic, 0, tc, "")
			res := planGroup(t, e, group, Config{})
			p := findPartition(t, res, group, topic, 0)
			if fmtPtr(p.ExactTarget) != fmt.Sprint(tt.wantE) || p.Status != tt.wantStatus || p.RedeliveredIfUnchanged != tt.wantRedeliver {
				t.Fatalf("got E=%s %s (re-deliver %d, %s; proof %s), want E=%d %s (re-deliver %d)", fmtPtr(p.ExactTarget), p.Status,
					p.RedeliveredIfUnchanged, p.Reason, p.Proof, tt.wantE, tt.wantStatus, tt.wantRedeliver)
			}
			if fmtPtr(p.AbortedAhead) != fmt.Sprint(tt.wantAborted) || fmtRanges(p.AbortedRanges) != tt.wantRanges || p.AbortedNote != "" || p.OpenTransaction != nil {
				t.Errorf("got %s aborted ahead at %q (%q, open %s), want %d at %q", fmtPtr(p.AbortedAhead), fmtRanges(p.AbortedRanges),
					p.AbortedNote, fmtPtr(p.OpenTransaction), tt.wantAborted, tt.wantRanges)
			}
			if g := findGroup(t, res, group); g.AbortedAhead != tt.wantAborted {
				t.Errorf("group: %d aborted ahead, want %d", g.AbortedAhead, tt.wantAborted)
			}
			if !strings.Contains(p.Proof, tt.wantProof) {
				t.Errorf("proof %q, want it to say %q", p.Proof, tt.wantProof)
			}
		})
	}
}

// TestPlanAbortedAheadOpenTransaction: a transaction still open after E(G) is past the last
// stable offset: its records are not counted (it may yet commit), and the result says where it
// is. The aborted records before it are counted.
func TestPlanAbortedAheadOpenTransaction(t *testing.T) {
	e, topic, group := isolationBed(t, "open-txn")
	w := newTxnWriter(t, e, topic, "txn-"+topic)
	w.commit(values("v", 0, 15)...) // 0..14, marker 15
	w.abort(values("v", 15, 17)...) // 16..17, marker 18
	open := newTxnWriter(t, e, topic, "open-"+topic)
	open.open(values("v", 15, 18)...) // 19..21, open
	testkit.Commit(t, e.dstAdm, group, topic, 0, 10, "")
	p := findPartition(t, planGroup(t, e, group, Config{}), group, topic, 0)
	if p.Status != StatusExact || fmtPtr(p.ExactTarget) != "10" {
		t.Fatalf("got %s E=%s (%s), want exact at 10", p.Status, fmtPtr(p.ExactTarget), p.Reason)
	}
	if fmtPtr(p.AbortedAhead) != "2" || fmtRanges(p.AbortedRanges) != "16..17" {
		t.Errorf("got %s aborted ahead at %q, want 2 at 16..17 (not the open transaction's records)", fmtPtr(p.AbortedAhead), fmtRanges(p.AbortedRanges))
	}
	if fmtPtr(p.OpenTransaction) != "19" || p.TargetLastStable != 19 || !strings.Contains(p.AbortedNote, "open transaction at offset 19") {
		t.Errorf("got open transaction %s, last stable %d, note %q; want 19 named", fmtPtr(p.OpenTransaction), p.TargetLastStable, p.AbortedNote)
	}
	// Records left are not known while the transaction is open (it may commit or abort its
	// 3 records): null, not the 5 committed below it, which the offset lag beside it would
	// contradict.
	if p.TargetRecordsLeft != nil {
		t.Errorf("target records left %s, want null while a transaction is open", fmtPtr(p.TargetRecordsLeft))
	}
	// Once it ended, they are counted: 10..14 and the 3 it committed.
	open.end(kgo.TryCommit)
	p = findPartition(t, planGroup(t, e, group, Config{}), group, topic, 0)
	if fmtPtr(p.TargetRecordsLeft) != "8" {
		t.Errorf("after the commit: target records left %s, want 8", fmtPtr(p.TargetRecordsLeft))
	}
}

// TestPlanOpenTransactionInSpan: when a transaction is open right after the copy of s* (the
// span of markers and aborted records reaches it), E(G) stays right after the copy: the open
// transaction may hold the copy of G.
func TestPlanOpenTransactionInSpan(t *testing.T) {
	e, topic, group := isolationBed(t, "open-span")
	w := newTxnWriter(t, e, topic, "txn-"+topic)
	w.commit(values("v", 0, 10)...) // 0..9, marker 10
	w.abort(values("v", 10, 12)...) // 11..12, marker 13
	w.open(values("v", 10, 20)...)  // 14..23, open
	testkit.Commit(t, e.dstAdm, group, topic, 0, 14, "")
	p := findPartition(t, planGroup(t, e, group, Config{}), group, topic, 0)
	if fmtPtr(p.ExactTarget) != "10" || !strings.Contains(p.Proof, "a transaction is open at offset 14") {
		t.Fatalf("got E=%s (%s; proof %s), want 10 with the open transaction named", fmtPtr(p.ExactTarget), p.Status, p.Proof)
	}
	// Committed at 14, the start of the open transaction: the same position for a
	// read_committed consumer (only a marker and aborted records between).
	if p.Status != StatusExact {
		t.Errorf("committed 14: got %s (%s), want exact", p.Status, p.Reason)
	}
	if fmtPtr(p.AbortedAhead) != "0" || fmtPtr(p.OpenTransaction) != "14" {
		t.Errorf("got %s aborted ahead, open transaction %s; want 0 (from 14) and 14", fmtPtr(p.AbortedAhead), fmtPtr(p.OpenTransaction))
	}
}

// TestPlanRecordsLeft: a transactional target shows an offset lag that counts markers and
// aborted records; the records left are what a read_committed consumer still reads. Both are
// reported, on both clusters.
func TestPlanRecordsLeft(t *testing.T) {
	e := newEnv(t)
	topic := uniqueTopic("left")
	group := "g-" + topic
	testkit.CreateTopic(t, e.src, topic, 1, nil)
	testkit.CreateTopic(t, e.dst, topic, 1, nil)
	// Source: v-0..19 at 0..19 in one transaction, marker at 20 (end 21).
	testkit.ProduceTxn(t, testkit.Client(t, e.srcK, kgo.TransactionalID("src-"+topic)), topic, 0, values("v", 0, 20)...)
	testkit.Commit(t, e.srcAdm, group, topic, 0, 10, "")
	// Target: 0..14 v-0..14, 15 marker, 16..18 aborted, 19 marker, 20..24 v-15..19, 25 marker
	// (end 26).
	w := newTxnWriter(t, e, topic, "txn-"+topic)
	w.commit(values("v", 0, 15)...)
	w.abort(values("v", 15, 18)...)
	w.commit(values("v", 15, 20)...)
	testkit.Commit(t, e.dstAdm, group, topic, 0, 10, "")
	p := findPartition(t, planGroup(t, e, group, Config{}), group, topic, 0)
	if p.Status != StatusExact {
		t.Fatalf("got %s (%s), want exact", p.Status, p.Reason)
	}
	if lag := p.TargetEnd - *p.TargetCommitted; lag != 16 || fmtPtr(p.TargetRecordsLeft) != "10" {
		t.Errorf("target: offset lag %d, %s records left; want 16 and 10", lag, fmtPtr(p.TargetRecordsLeft))
	}
	if lag := p.SourceEnd - p.SourceCommitted; lag != 11 || fmtPtr(p.SourceRecordsLeft) != "10" {
		t.Errorf("source: offset lag %d, %s records left; want 11 and 10", lag, fmtPtr(p.SourceRecordsLeft))
	}

	// Records left over a span longer than the scan bound are not counted, and say so: never
	// a 0 over records not read. The aborted records ahead are counted over any span.
	p = findPartition(t, planGroup(t, e, group, Config{ScanLimit: 4}), group, topic, 0)
	if p.TargetRecordsLeft != nil || p.SourceRecordsLeft != nil {
		t.Errorf("scan limit 4: got records left %s/%s; want none counted",
			fmtPtr(p.SourceRecordsLeft), fmtPtr(p.TargetRecordsLeft))
	}
	if fmtPtr(p.AbortedAhead) != "3" || len(p.AbortedRanges) != 1 || p.AbortedRanges[0] != (OffsetRange{16, 18}) {
		t.Errorf("scan limit 4: got %s aborted ahead %v (%q), want 3 at 16..18: counted over a span of any length",
			fmtPtr(p.AbortedAhead), p.AbortedRanges, p.AbortedNote)
	}
}

// TestPlanRecordsLeftPlain: without transactions the records left are the offset lag, and no
// aborted record is ahead (counted, 0).
func TestPlanRecordsLeftPlain(t *testing.T) {
	e, topic, group := isolationBed(t, "plain")
	testkit.Produce(t, e.dst, topic, 0, values("v", 0, 20)...)
	testkit.Commit(t, e.dstAdm, group, topic, 0, 10, "")
	p := findPartition(t, planGroup(t, e, group, Config{}), group, topic, 0)
	if p.Status != StatusExact || fmtPtr(p.TargetRecordsLeft) != "10" || fmtPtr(p.SourceRecordsLeft) != "10" ||
		fmtPtr(p.AbortedAhead) != "0" || p.AbortedNote != "" || p.TargetLastStable != 20 {
		t.Errorf("got %s, records left %s/%s, aborted ahead %s (%q), last stable %d; want exact, 10/10, 0, 20",
			p.Status, fmtPtr(p.SourceRecordsLeft), fmtPtr(p.TargetRecordsLeft), fmtPtr(p.AbortedAhead), p.AbortedNote, p.TargetLastStable)
	}
}

// TestApplyForgetsRecordsLeftOfTheOldCommit: the plan counts the records left from the target
// commit it saw; once Apply moved the commit to E(G), that count is of another position and
// must not stand beside the new offset lag (it read "41 (90 records)" on the cutover
// walkthrough). The next plan counts from the new commit.
func TestApplyForgetsRecordsLeftOfTheOldCommit(t *testing.T) {
	e, topic, group := isolationBed(t, "apply-left")
	w := newTxnWriter(t, e, topic, "txn-"+topic)
	w.commit(values("v", 0, 20)...) // 0..19, marker 20
	testkit.Commit(t, e.dstAdm, group, topic, 0, 5, "")
	res := planGroup(t, e, group, Config{})
	p := findPartition(t, res, group, topic, 0)
	if p.Status != StatusBehind || fmtPtr(p.TargetRecordsLeft) != "15" {
		t.Fatalf("plan: %s, records left %s; want behind with 15 left (5..19)", p.Status, fmtPtr(p.TargetRecordsLeft))
	}
	if err := Apply(testCtx(t), e.dst, res, ApplyConfig{Backup: filepath.Join(t.TempDir(), "b.json")}); err != nil {
		t.Fatalf("Apply: %v", err)
	}
	if p := findPartition(t, res, group, topic, 0); fmtPtr(p.TargetCommitted) != "10" || p.TargetRecordsLeft != nil {
		t.Errorf("after apply: committed %s, records left %s; want 10 and null (the 15 were counted from 5)", fmtPtr(p.TargetCommitted), fmtPtr(p.TargetRecordsLeft))
	}
	if p := findPartition(t, planGroup(t, e, group, Config{}), group, topic, 0); fmtPtr(p.TargetRecordsLeft) != "10" {
		t.Errorf("next plan: records left %s, want 10 (10..19)", fmtPtr(p.TargetRecordsLeft))
	}
}
