package verify

import (
	"context"
	"errors"
	"fmt"
	"net/http/httptest"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/kmigrate/kmigrate/align"
	"github.com/kmigrate/kmigrate/digest"
	"github.com/kmigrate/kmigrate/internal/testkit"
	"github.com/kmigrate/kmigrate/mm2"
)

// txnTarget is a source and a target cluster with one single-partition topic each, and a
// transactional client of the target.
type txnTarget struct {
	src, dst *kgo.Client
	fake     *kfake.Cluster
	topic    string
}

func newTxnTarget(t *testing.T) *txnTarget {
	t.Helper()
	fake := testkit.StartCluster(t)
	e := &txnTarget{src: newCluster(t), dst: testkit.Client(t, fake, kgo.ProducerLinger(0)), fake: fake, topic: testkit.TopicName("txn")}
	testkit.CreateTopic(t, e.src, e.topic, 1, nil)
	testkit.CreateTopic(t, e.dst, e.topic, 1, nil)
	return e
}

// txn writes recs to the target in one transaction of a new transactional client and ends it
// with end; kgo.TryAbort leaves an aborted batch and its marker, as a killed or fenced mirror
// does. With open the transaction is left open (the client is closed when the test ends).
func (e *txnTarget) txn(t *testing.T, end kgo.TransactionEndTry, open bool, recs ...*kgo.Record) {
	t.Helper()
	testkit.WriteTxn(t, e.fake, e.topic, 0, end, open, recs...)
}

// abortedThenCopied writes source records 0-9 and copies them to the target as a mirror killed
// in a transaction leaves them: 0-4, then aborted in one aborted transaction (with its
// marker), then 5-9 written again.
func (e *txnTarget) abortedThenCopied(t *testing.T, aborted ...*kgo.Record) {
	t.Helper()
	testkit.Produce(t, e.src, e.topic, 0, span(0, 9)...)
	testkit.Produce(t, e.dst, e.topic, 0, span(0, 4)...)
	e.txn(t, kgo.TryAbort, false, aborted...)
	testkit.Produce(t, e.dst, e.topic, 0, span(5, 9)...)
}

// A mirror killed in a transaction leaves its records aborted on the target and writes them
// again after: read_committed the target is identical, and the report counts the aborted
// records and that each is a copy of a committed one.
func TestDiffAbortedCopies(t *testing.T) {
	e := newTxnTarget(t)
	e.abortedThenCopied(t, span(5, 9)...) // target 0-4, 5-9 aborted, marker 10, 11-15

	res, _ := diff(t, e.src, e.dst, Config{SourceTopic: e.topic})
	if !res.Identical || res.Summary != (align.Counts{Matched: 10}) {
		t.Fatalf("read_committed: got identical=%v %+v, want identical with 10 matched", res.Identical, res.Summary)
	}
	want := []TxnPartition{{Partition: 0, Txns: digest.Txns{Aborted: 5, AbortedCopies: 5, AbortedRanges: []align.TargetRange{{From: 5, To: 9}}}}}
	if res.Aborted != 5 || res.AbortedCopies != 5 || !reflect.DeepEqual(res.Transactions, want) {
		t.Errorf("got aborted %d, copies %d, %+v; want 5, 5, %+v", res.Aborted, res.AbortedCopies, res.Transactions, want)
	}

	// Read as a read_uncommitted consumer reads the target, the copies are duplicates.
	res, _ = diff(t, e.src, e.dst, Config{SourceTopic: e.topic, TargetReadUncommitted: true})
	if res.Identical || res.Summary != (align.Counts{Matched: 10, Duplicated: 5}) || !res.TargetReadUncommitted {
		t.Fatalf("target read_uncommitted: got identical=%v %+v, want 10 matched and 5 duplicated", res.Identical, res.Summary)
	}
	if res.Aborted != 5 || res.AbortedCopies != 5 || !reflect.DeepEqual(res.Transactions, want) {
		t.Errorf("target read_uncommitted: got aborted %d, copies %d, %+v; want 5, 5, %+v", res.Aborted, res.AbortedCopies, res.Transactions, want)
	}
}

// Aborted records that copy nothing committed are counted, not as copies; read as
// read_uncommitted they are extra.
func TestDiffAbortedNotCopies(t *testing.T) {
	e := newTxnTarget(t)
	e.abortedThenCopied(t, span(100, 102)...) // target 0-4, 5-7 aborted, marker 8, 9-13

	res, _ := diff(t, e.src, e.dst, Config{SourceTopic: e.topic})
	want := []TxnPartition{{Partition: 0, Txns: digest.Txns{Aborted: 3, AbortedRanges: []align.TargetRange{{From: 5, To: 7}}}}}
	if !res.Identical || res.Aborted != 3 || res.AbortedCopies != 0 || !reflect.DeepEqual(res.Transactions, want) {
		t.Errorf("got identical=%v, aborted %d, copies %d, %+v; want identical, 3, 0, %+v", res.Identical, res.Aborted, res.AbortedCopies, res.Transactions, want)
	}
	res, _ = diff(t, e.src, e.dst, Config{SourceTopic: e.topic, TargetReadUncommitted: true})
	if res.Identical || res.Summary != (align.Counts{Matched: 10, Extra: 3}) || res.Aborted != 3 {
		t.Errorf("target read_uncommitted: got identical=%v %+v, aborted %d; want 10 matched, 3 extra, 3 aborted", res.Identical, res.Summary, res.Aborted)
	}
}

// Committed transactions only: nothing aborted, nothing open, nothing to say.
func TestDiffNoAborted(t *testing.T) {
	e := newTxnTarget(t)
	testkit.Produce(t, e.src, e.topic, 0, span(0, 9)...)
	e.txn(t, kgo.TryCommit, false, span(0, 4)...)
	e.txn(t, kgo.TryCommit, false, span(5, 9)...)
	for _, uncommitted := range []bool{false, true} {
		res, _ := diff(t, e.src, e.dst, Config{SourceTopic: e.topic, TargetReadUncommitted: uncommitted})
		if !res.Identical || res.Aborted != 0 || res.AbortedCopies != 0 || res.Transactions != nil {
			t.Errorf("target read_uncommitted %v: got identical=%v, aborted %d, copies %d, %+v; want identical and nothing aborted", uncommitted, res.Identical, res.Aborted, res.AbortedCopies, res.Transactions)
		}
	}
}

// A transaction still open on the target is reported open, its records neither read nor
// counted (not extra, not aborted).
func TestDiffOpenTransaction(t *testing.T) {
	e := newTxnTarget(t)
	testkit.Produce(t, e.src, e.topic, 0, span(0, 9)...)
	testkit.Produce(t, e.dst, e.topic, 0, span(0, 9)...)
	e.txn(t, kgo.TryCommit, true, span(100, 102)...) // 10-12, open

	for _, uncommitted := range []bool{false, true} {
		res, _ := diff(t, e.src, e.dst, Config{SourceTopic: e.topic, TargetReadUncommitted: uncommitted})
		want := []TxnPartition{{Partition: 0, Txns: digest.Txns{OpenTransaction: &align.TargetRange{From: 10, To: 12}}}}
		if !res.Identical || res.Summary != (align.Counts{Matched: 10}) || res.Aborted != 0 || !reflect.DeepEqual(res.Transactions, want) {
			t.Errorf("target read_uncommitted %v: got identical=%v %+v, aborted %d, %+v; want identical, 10 matched, open 10-12",
				uncommitted, res.Identical, res.Summary, res.Aborted, res.Transactions)
		}
		if ps, n := res.OpenTransactions(); !reflect.DeepEqual(ps, []int32{0}) || n != 3 {
			t.Errorf("OpenTransactions: got %v, %d; want [0], 3", ps, n)
		}
	}
}

// Both read_uncommitted flags together are refused.
func TestDiffReadUncommittedFlagsExclusive(t *testing.T) {
	cfg := Config{SourceTopic: "t", ReadUncommitted: true, TargetReadUncommitted: true}
	cfg.SetDefaults()
	if err := cfg.Validate(); err == nil {
		t.Fatal("got no error, want one")
	}
}

// DiffTopics counts each topic's aborted target records and sums them; a merge of the
// shards' reports keeps them; with TargetReadUncommitted the copies make the topic differ.
func TestDiffTopicsAborted(t *testing.T) {
	e := newTxnTarget(t)
	clean := testkit.TopicName("clean")
	testkit.CreateTopic(t, e.src, clean, 1, nil)
	testkit.CreateTopic(t, e.dst, clean, 1, nil)
	testkit.Produce(t, e.src, clean, 0, span(0, 4)...)
	testkit.Produce(t, e.dst, clean, 0, span(0, 4)...)
	e.abortedThenCopied(t, span(5, 9)...)

	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	flow := mm2.NewFlow("s", "t", mm2.IdentityPolicy{})
	names := []string{clean, e.topic}
	mr, err := DiffTopics(ctx, e.src, e.dst, MultiConfig{Flow: flow, Names: names})
	if err != nil {
		t.Fatal(err)
	}
	if !mr.Identical || mr.Total.Aborted != 5 || mr.Total.AbortedCopies != 5 {
		t.Fatalf("got identical=%v, total %+v; want identical, 5 aborted, 5 copies", mr.Identical, mr.Total)
	}
	for _, tr := range mr.Topics {
		if want := int64(5 * boolInt(tr.SourceTopic == e.topic)); tr.Aborted != want || tr.AbortedCopies != want || len(tr.Transactions) != int(want/5) {
			t.Errorf("%s: got aborted %d, copies %d, %+v; want %d", tr.SourceTopic, tr.Aborted, tr.AbortedCopies, tr.Transactions, want)
		}
	}

	var shards []ShardReport
	for i := range 2 {
		r, err := DiffTopics(ctx, e.src, e.dst, MultiConfig{Flow: flow, Names: names, Shard: Shard{Index: i, Count: 2}})
		if err != nil {
			t.Fatal(err)
		}
		shards = append(shards, ShardReport{Name: fmt.Sprint(i), Result: r})
	}
	merged, err := MergeShards(shards)
	if err != nil || merged.Total.Aborted != 5 || merged.Total.AbortedCopies != 5 {
		t.Fatalf("merge: got %v, total %+v; want 5 aborted, 5 copies", err, merged.Total)
	}

	mr, err = DiffTopics(ctx, e.src, e.dst, MultiConfig{Flow: flow, Names: names, Base: Config{TargetReadUncommitted: true}})
	if err != nil {
		t.Fatal(err)
	}
	if mr.Identical || mr.Total.Duplicated != 5 || mr.Total.Aborted != 5 || mr.Selection.Isolation != "source read_committed, target read_uncommitted" {
		t.Errorf("target read_uncommitted: got identical=%v, total %+v, isolation %q; want 5 duplicated", mr.Identical, mr.Total, mr.Selection.Isolation)
	}
}

func boolInt(b bool) int {
	if b {
		return 1
	}
	return 0
}

// A state counts the aborted target records of every run, each once; a state of a target read
// as read_uncommitted resumes (its boundary, aborted records among the marks, holds) and is
// refused by a run that reads otherwise. The follow metrics show the counts.
func TestStateAborted(t *testing.T) {
	for _, uncommitted := range []bool{false, true} {
		e := newTxnTarget(t)
		cfg := Config{SourceTopic: e.topic, TargetReadUncommitted: uncommitted}
		run := func(prev *State) *StateRun {
			t.Helper()
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			defer cancel()
			r, err := DiffState(ctx, e.src, e.dst, cfg, prev, StateOptions{Name: "test.state"})
			if err != nil {
				t.Fatalf("DiffState: %v", err)
			}
			return r
		}
		e.abortedThenCopied(t, span(5, 9)...)
		first := run(nil)
		if ps := first.State.Partition(0); ps == nil || ps.Aborted != 5 || ps.AbortedCopies != 5 || first.Result.Aborted != 5 || first.Result.Identical == uncommitted {
			t.Fatalf("uncommitted %v: first run: identical=%v, aborted %d, state %+v; want 5 aborted copies in both", uncommitted, first.Result.Identical, first.Result.Aborted, ps)
		}
		testkit.Produce(t, e.src, e.topic, 0, span(10, 14)...)
		e.txn(t, kgo.TryAbort, false, span(10, 11)...)
		testkit.Produce(t, e.dst, e.topic, 0, span(10, 14)...)
		second := run(first.State)
		if len(second.Boundary) > 0 || second.Result.Aborted != 2 || second.Result.AbortedCopies != 2 {
			t.Fatalf("uncommitted %v: second run: boundary %v, aborted %d, copies %d; want no finding, 2 aborted copies", uncommitted, second.Boundary, second.Result.Aborted, second.Result.AbortedCopies)
		}
		if ps := second.State.Partition(0); ps.Aborted != 7 || ps.AbortedCopies != 7 || ps.Verified.Duplicated != 7*int64(boolInt(uncommitted)) {
			t.Errorf("uncommitted %v: second state %+v; want 7 aborted copies over both runs", uncommitted, ps)
		}
		if second.State.TargetReadUncommitted != uncommitted {
			t.Errorf("state target_read_uncommitted %v, want %v", second.State.TargetReadUncommitted, uncommitted)
		}

		m := NewFollowMetrics()
		m.Set(second.State, second)
		rec := httptest.NewRecorder()
		m.Handler().ServeHTTP(rec, httptest.NewRequest("GET", "/metrics", nil))
		for _, want := range []string{"kverify_target_aborted_records 7", "kverify_target_aborted_copies 7", "kverify_target_open_transactions 0"} {
			if !strings.Contains(rec.Body.String(), want) {
				t.Errorf("metrics lack %q", want)
			}
		}

		cfg.TargetReadUncommitted = !uncommitted
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		_, err := DiffState(ctx, e.src, e.dst, cfg, second.State, StateOptions{Name: "test.state"})
		cancel()
		if !errors.Is(err, ErrStateMismatch) {
			t.Errorf("a run reading the target otherwise: got %v, want ErrStateMismatch", err)
		}
	}
}

// The follow metrics of a target without aborted records or open transactions have none of
// the target transaction metrics.
func TestFollowMetricsNoTxns(t *testing.T) {
	m := NewFollowMetrics()
	m.Set(&State{SourceTopic: "t", Partitions: []PartitionState{{Partition: 0, SourceEnd: 10}}}, &StateRun{Result: &Result{}})
	rec := httptest.NewRecorder()
	m.Handler().ServeHTTP(rec, httptest.NewRequest("GET", "/metrics", nil))
	if strings.Contains(rec.Body.String(), "kverify_target_") || !strings.Contains(rec.Body.String(), "kverify_lag_records") {
		t.Errorf("metrics:\n%s", rec.Body.String())
	}
}

// DiffRanges (the drill of `kverify compare --drill`) counts the aborted target records of
// its ranges.
func TestDiffRangesAborted(t *testing.T) {
	e := newTxnTarget(t)
	e.abortedThenCopied(t, span(5, 9)...)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	specs := []PartitionSpec{
		{SourceTopic: e.topic, SourceFrom: 0, SourceTo: 3, TargetFrom: 0, TargetTo: 3, StrictTargetFrom: true},
		{SourceTopic: e.topic, SourceFrom: 3, SourceTo: 10, TargetFrom: 3, TargetTo: 16, StrictTargetFrom: true},
	}
	res, err := DiffRanges(ctx, e.src, e.dst, specs, 2)
	if err != nil {
		t.Fatal(err)
	}
	want := []TxnPartition{{Partition: 0, Txns: digest.Txns{Aborted: 5, AbortedCopies: 5, AbortedRanges: []align.TargetRange{{From: 5, To: 9}}}}}
	if !res.Identical || res.Aborted != 5 || res.AbortedCopies != 5 || !reflect.DeepEqual(res.Transactions, want) {
		t.Errorf("got identical=%v, aborted %d, copies %d, %+v; want identical, %+v", res.Identical, res.Aborted, res.AbortedCopies, res.Transactions, want)
	}
}
