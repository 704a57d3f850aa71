package verify

import (
	"context"
	"errors"
	"reflect"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/kmigrate/kmigrate/align"
	"github.com/kmigrate/kmigrate/internal/testkit"
	"github.com/kmigrate/kmigrate/mm2"
	"github.com/kmigrate/kmigrate/offsetmap"
)

// newCluster starts a kfake cluster and returns a client of it that sends each record at
// once (no linger).
func newCluster(t *testing.T) *kgo.Client {
	return testkit.Client(t, testkit.StartCluster(t), kgo.ProducerLinger(0))
}

func diff(t *testing.T, src, dst *kgo.Client, cfg Config) (*Result, *offsetmap.TopicMap) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	res, om, err := Diff(ctx, src, dst, cfg)
	if err != nil {
		t.Fatalf("Diff: %v", err)
	}
	return res, om
}

func TestDiffIdenticalWithOtherBase(t *testing.T) {
	src, dst := newCluster(t), newCluster(t)
	topic := testkit.TopicName("t")
	testkit.CreateTopic(t, src, topic, 3, nil)
	testkit.CreateTopic(t, dst, topic, 3, nil)
	testkit.Produce(t, src, topic, 0, span(0, 99)...)
	testkit.Produce(t, src, topic, 1, span(100, 149)...)
	// Partition 2 stays empty on both sides. Partition 0 starts at offset 5 on the target.
	testkit.Produce(t, dst, topic, 0, span(1000, 1004)...)
	ctx := context.Background()
	if _, err := kadm.NewClient(dst).DeleteRecords(ctx, kadm.Offsets{topic: {0: {At: 5}}}); err != nil {
		t.Fatalf("delete records: %v", err)
	}
	testkit.Produce(t, dst, topic, 0, span(0, 99)...)
	testkit.Produce(t, dst, topic, 1, span(100, 149)...)

	res, om := diff(t, src, dst, Config{SourceTopic: topic})
	if !res.Identical {
		t.Fatalf("got not identical, want identical: %+v", res)
	}
	if got, want := res.Summary, (align.Counts{Matched: 150}); got != want {
		t.Errorf("summary: got %+v, want %+v", got, want)
	}
	if len(res.Partitions) != 3 {
		t.Fatalf("got %d partitions, want 3", len(res.Partitions))
	}
	pm := om.Partition(0)
	if pm == nil || !reflect.DeepEqual(pm.Segments, segs(0, 5, 100)) {
		t.Errorf("partition 0 map: got %+v, want one segment 0->5 of 100", pm)
	}
	if got := pm.ExactTarget(40); !got.Known || got.Target != 45 {
		t.Errorf("ExactTarget(40): got %+v, want 45", got)
	}
}

func TestDiffFaults(t *testing.T) {
	src, dst := newCluster(t), newCluster(t)
	topic := testkit.TopicName("t")
	testkit.CreateTopic(t, src, topic, 1, nil)
	testkit.CreateTopic(t, dst, topic, 1, nil)
	testkit.Produce(t, src, topic, 0, span(0, 59)...)
	target := cat(
		span(0, 9), // 10..12 left out
		span(13, 24),
		span(20, 24), // replayed: target 22..26 repeat 20..24
		span(25, 29),
		with(r(30), func(c *kgo.Record) { c.Value = []byte("re-encoded") }), // target 32
		span(31, 39),
		with(r(40), func(c *kgo.Record) { c.Headers = nil }), // target 42
		span(41, 59),
		[]*kgo.Record{{Value: []byte("direct-1")}, {Value: []byte("direct-2")}}, // target 62, 63
	)
	testkit.Produce(t, dst, topic, 0, target...)

	res, om := diff(t, src, dst, Config{SourceTopic: topic})
	if res.Identical {
		t.Fatalf("got identical, want differences")
	}
	p := res.Partitions[0]
	if got, want := p.Counts, (align.Counts{Matched: 55, Missing: 3, Duplicated: 5, Mismatched: 2, Extra: 2}); got != want {
		t.Errorf("counts: got %+v, want %+v", got, want)
	}
	if want := []align.SourceRange{{From: 10, To: 12}}; !reflect.DeepEqual(p.MissingRanges, want) {
		t.Errorf("missing: got %v, want %v", p.MissingRanges, want)
	}
	if want := copies(22, 20, 23, 21, 24, 22, 25, 23, 26, 24); !reflect.DeepEqual(p.Duplicates, want) {
		t.Errorf("duplicates: got %v, want %v", p.Duplicates, want)
	}
	if want := []align.Mismatch{{SourceOffset: 30, TargetOffset: 32, Fields: []string{"value"}}, {SourceOffset: 40, TargetOffset: 42, Fields: []string{"headers"}}}; !reflect.DeepEqual(p.Mismatches, want) {
		t.Errorf("mismatches: got %v, want %v", p.Mismatches, want)
	}
	if want := []align.TargetRange{{From: 62, To: 63}}; !reflect.DeepEqual(p.ExtraRanges, want) {
		t.Errorf("extra: got %v, want %v", p.ExtraRanges, want)
	}
	// A group that consumed source 0..24 resumes on the target after the replayed copy of 24.
	if got := om.Partition(0).ExactTarget(25); !got.Known || got.Target != 27 {
		t.Errorf("ExactTarget(25): got %+v, want 27", got)
	}
}

func TestDiffTopicProblems(t *testing.T) {
	src, dst := newCluster(t), newCluster(t)
	topic := testkit.TopicName("t")
	testkit.CreateTopic(t, src, topic, 3, nil)
	for p := int32(0); p < 3; p++ {
		testkit.Produce(t, src, topic, p, span(0, 9)...)
	}
	t.Run("missing target topic", func(t *testing.T) {
		res, _ := diff(t, src, dst, Config{SourceTopic: topic})
		if res.Identical || len(res.Problems) != 1 {
			t.Fatalf("got identical=%v problems=%v, want not identical and one problem", res.Identical, res.Problems)
		}
	})
	t.Run("partition count mismatch", func(t *testing.T) {
		testkit.CreateTopic(t, dst, topic, 2, nil)
		for p := int32(0); p < 2; p++ {
			testkit.Produce(t, dst, topic, p, span(0, 9)...)
		}
		res, _ := diff(t, src, dst, Config{SourceTopic: topic})
		if res.Identical || len(res.Problems) != 1 {
			t.Fatalf("got identical=%v problems=%v, want not identical and one problem", res.Identical, res.Problems)
		}
		if res.Summary.Matched != 20 || res.Partitions[2].Err == "" {
			t.Errorf("got summary %+v, partition 2 err %q; want 20 matched and an error on partition 2", res.Summary, res.Partitions[2].Err)
		}
		res, _ = diff(t, src, dst, Config{SourceTopic: topic, Partitions: []int32{1}})
		if len(res.Partitions) != 1 || res.Partitions[0].Matched != 10 || !res.Identical || len(res.Problems) != 0 {
			t.Errorf("--partitions 1: got %+v problems %v, want partition 1 identical with 10 matched, no problem", res.Partitions, res.Problems)
		}
		res, _ = diff(t, src, dst, Config{SourceTopic: topic, Partitions: []int32{1, 2}})
		if res.Identical || len(res.Problems) != 1 {
			t.Errorf("--partitions 1,2: got identical=%v problems %v, want the count mismatch reported", res.Identical, res.Problems)
		}
	})
	t.Run("missing source topic", func(t *testing.T) {
		_, _, err := Diff(context.Background(), src, dst, Config{SourceTopic: "nope-" + topic})
		if err == nil {
			t.Fatalf("got nil error, want missing source topic")
		}
	})
	t.Run("unknown partition", func(t *testing.T) {
		_, _, err := Diff(context.Background(), src, dst, Config{SourceTopic: topic, Partitions: []int32{7}})
		if err == nil {
			t.Fatalf("got nil error, want unknown partition")
		}
	})
}

func TestDiffTransactionalSource(t *testing.T) {
	srcCl, dst := newCluster(t), newCluster(t)
	topic := testkit.TopicName("t")
	testkit.CreateTopic(t, srcCl, topic, 1, nil)
	testkit.CreateTopic(t, dst, topic, 1, nil)
	txn, err := kgo.NewClient(append(srcCl.Opts(), kgo.TransactionalID("tx-"+topic))...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(txn.Close)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	var committed []*kgo.Record
	for b := 0; b < 6; b++ {
		if err := txn.BeginTransaction(); err != nil {
			t.Fatal(err)
		}
		recs := span(b*10, b*10+9)
		for _, r := range recs {
			c := *r
			c.Topic = topic
			if err := txn.ProduceSync(ctx, &c).FirstErr(); err != nil {
				t.Fatal(err)
			}
		}
		commit := b%3 != 1 // batches 1 and 4 are aborted
		if err := txn.EndTransaction(ctx, kgo.TransactionEndTry(commit)); err != nil {
			t.Fatal(err)
		}
		if commit {
			committed = append(committed, recs...)
		}
	}
	testkit.Produce(t, dst, topic, 0, committed...)
	res, om := diff(t, srcCl, dst, Config{SourceTopic: topic})
	if !res.Identical || res.Summary.Matched != int64(len(committed)) {
		t.Fatalf("got identical=%v summary=%+v, want identical with %d matched", res.Identical, res.Summary, len(committed))
	}
	if n := len(om.Partition(0).Segments); n < 2 {
		t.Errorf("got %d segments, want one per committed transaction (markers are gaps)", n)
	}
	// read_uncommitted sees the two aborted transactions on the source: not on the target.
	res, _ = diff(t, srcCl, dst, Config{SourceTopic: topic, ReadUncommitted: true})
	if res.Identical || res.Summary.Missing != 20 || res.Summary.Matched != int64(len(committed)) {
		t.Errorf("read_uncommitted: got %+v, want the 20 aborted records missing", res.Summary)
	}
}

func TestDiffProgress(t *testing.T) {
	src, dst := newCluster(t), newCluster(t)
	topic := testkit.TopicName("t")
	testkit.CreateTopic(t, src, topic, 3, nil)
	testkit.CreateTopic(t, dst, topic, 3, nil)
	for p := int32(0); p < 3; p++ {
		testkit.Produce(t, src, topic, p, span(0, 9999)...)
		testkit.Produce(t, dst, topic, p, span(0, 9999)...)
	}
	var mu sync.Mutex
	done := map[int32]bool{}
	var events int
	res, _ := diff(t, src, dst, Config{SourceTopic: topic, Parallel: 2, Progress: func(p Progress) {
		mu.Lock()
		defer mu.Unlock()
		events++
		if p.Done {
			done[p.Partition] = true
		} else if p.SourceOffset <= 0 || p.SourceOffset >= p.SourceTo {
			t.Errorf("progress of partition %d at source offset %d, want inside (0, %d)", p.Partition, p.SourceOffset, p.SourceTo)
		}
	}})
	if !res.Identical || len(done) != 3 || events <= 3 {
		t.Errorf("got identical=%v, done %v after %d events; want identical, 3 partitions done, progress in between", res.Identical, done, events)
	}
}

func TestDiffFromOffsetReadsTargetFromHint(t *testing.T) {
	src, dst := newCluster(t), newCluster(t)
	topic := testkit.TopicName("t")
	testkit.CreateTopic(t, src, topic, 1, nil)
	testkit.CreateTopic(t, dst, topic, 1, nil)
	testkit.Produce(t, src, topic, 0, span(0, 999)...)
	testkit.Produce(t, dst, topic, 0, span(0, 999)...)
	res, om := diff(t, src, dst, Config{SourceTopic: topic, From: Position{Kind: AtOffset, Offset: 600}, To: Position{Kind: AtOffset, Offset: 700}})
	p := res.Partitions[0]
	if !res.Identical || p.Matched != 100 {
		t.Fatalf("got identical=%v counts=%+v, want identical, 100 matched", res.Identical, p.Counts)
	}
	if p.TargetSkipped == 0 || p.TargetSkipped > hintMargin {
		t.Errorf("got %d target records skipped, want 1..%d (the margin before the hint)", p.TargetSkipped, hintMargin)
	}
	if want := segs(600, 600, 100); !reflect.DeepEqual(om.Partition(0).Segments, want) {
		t.Errorf("segments: got %v, want %v", om.Partition(0).Segments, want)
	}
}

func TestAlignPartitionSmallRange(t *testing.T) {
	src, dst := newCluster(t), newCluster(t)
	topic := testkit.TopicName("t")
	testkit.CreateTopic(t, src, topic, 1, nil)
	testkit.CreateTopic(t, dst, topic, 1, nil)
	testkit.Produce(t, src, topic, 0, span(0, 199)...)
	testkit.Produce(t, dst, topic, 0, cat(span(0, 120), span(118, 199))...) // 118..120 replayed
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	pr, pm, err := AlignPartition(ctx, src, dst, PartitionSpec{
		SourceTopic: topic, Partition: 0, SourceFrom: 110, SourceTo: 130, TargetFrom: 100, TargetTo: 140,
	})
	if err != nil {
		t.Fatal(err)
	}
	if pr.Matched != 20 || pr.Duplicated != 3 {
		t.Errorf("got %+v, want 20 matched, 3 duplicated", pr.Counts)
	}
	if got := pm.ExactTarget(121); !got.Known || got.Target != 124 {
		t.Errorf("ExactTarget(121): got %+v, want 124", got)
	}
}

func TestDiffFromOffsetUsesOffsetSyncs(t *testing.T) {
	src, dst := newCluster(t), newCluster(t)
	topic := testkit.TopicName("t")
	syncs := "mm2-offset-syncs.source.internal"
	testkit.CreateTopic(t, src, topic, 1, nil)
	testkit.CreateTopic(t, dst, topic, 1, nil)
	testkit.CreateTopic(t, dst, syncs, 1, nil)
	testkit.Produce(t, src, topic, 0, span(0, 999)...)
	// The target rewrote the timestamps (LogAppendTime): they say nothing about where a
	// source record landed, so only the offset sync 500 -> 500 narrows the target start.
	var copied []*kgo.Record
	for _, r := range span(0, 999) {
		c := *r
		c.Timestamp = time.Now()
		copied = append(copied, &c)
	}
	testkit.Produce(t, dst, topic, 0, copied...)
	s := mm2.OffsetSync{Topic: topic, Partition: 0, Upstream: 500, Downstream: 500}
	testkit.Produce(t, dst, syncs, 0, []*kgo.Record{{Key: s.Key(), Value: s.Value()}}...)

	res, _ := diff(t, src, dst, Config{SourceTopic: topic, From: Position{Kind: AtOffset, Offset: 600},
		OffsetSyncsTopic: syncs, OffsetSyncsClient: dst})
	p := res.Partitions[0]
	if !res.Identical || p.Matched != 400 {
		t.Fatalf("got identical=%v counts=%+v, want identical, 400 matched", res.Identical, p.Counts)
	}
	if want := int64(600 - (500 - hintMargin)); p.TargetSkipped != want {
		t.Errorf("got %d target records skipped, want %d (read from the sync's downstream offset less the margin)", p.TargetSkipped, want)
	}
}

func TestAlignPartitionRangeBeyondTheLogFails(t *testing.T) {
	src, dst := newCluster(t), newCluster(t)
	topic := testkit.TopicName("t")
	testkit.CreateTopic(t, src, topic, 1, nil)
	testkit.CreateTopic(t, dst, topic, 1, nil)
	testkit.Produce(t, src, topic, 0, span(0, 9)...)
	testkit.Produce(t, dst, topic, 0, span(0, 9)...)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	_, _, err := AlignPartition(ctx, src, dst, PartitionSpec{SourceTopic: topic, Partition: 0, SourceFrom: 0, SourceTo: 50, TargetFrom: 0, TargetTo: -1})
	if err == nil || ctx.Err() != nil {
		t.Fatalf("got err=%v (ctx %v), want an error naming the end of the log before the deadline", err, ctx.Err())
	}
	if !strings.Contains(err.Error(), "partition 0") {
		t.Errorf("error %q does not name the partition", err)
	}
}

// TestDiffNothingToCompare: a partition with no source record in range is not compared (never
// identical, no offset map); a run that compares nothing is ErrNothingToCompare.
func TestDiffNothingToCompare(t *testing.T) {
	src, dst := newCluster(t), newCluster(t)
	topic := testkit.TopicName("t")
	testkit.CreateTopic(t, src, topic, 2, nil)
	testkit.CreateTopic(t, dst, topic, 2, nil)
	testkit.Produce(t, src, topic, 0, span(0, 9)...)
	testkit.Produce(t, dst, topic, 0, span(0, 9)...)
	tests := []struct {
		name string
		cfg  Config
	}{
		{name: "from an offset past the end", cfg: Config{From: Position{Kind: AtOffset, Offset: 10}}},
		{name: "the empty partition only", cfg: Config{Partitions: []int32{1}}},
		{name: "the empty partition by range", cfg: Config{PartitionRanges: []PartitionRange{{From: 1, To: 1}}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tt.cfg.SourceTopic = topic
			res, om, err := Diff(context.Background(), src, dst, tt.cfg)
			if !errors.Is(err, ErrNothingToCompare) || res != nil || om != nil {
				t.Fatalf("got %+v, %v; want ErrNothingToCompare and no result", res, err)
			}
			if !strings.Contains(err.Error(), "partition") || !strings.Contains(err.Error(), topic) {
				t.Errorf("error %q does not name the topic and partition", err)
			}
		})
	}
	t.Run("one partition of two", func(t *testing.T) {
		res, om := diff(t, src, dst, Config{SourceTopic: topic})
		if !res.Identical || !reflect.DeepEqual(res.NotCompared, []int32{1}) || res.Partitions[1].NotCompared == "" || res.Partitions[0].NotCompared != "" {
			t.Errorf("got identical=%v not_compared=%v partitions %+v; want partition 0 identical, 1 not compared", res.Identical, res.NotCompared, res.Partitions)
		}
		if om.Partition(1) != nil || om.Partition(0) == nil {
			t.Errorf("offset map partitions %+v, want 0 only", om.Partitions)
		}
	})
	t.Run("a huge range is refused at once", func(t *testing.T) {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		_, _, err := Diff(ctx, src, dst, Config{SourceTopic: topic, PartitionRanges: []PartitionRange{{From: 0, To: 1 << 30}}})
		if err == nil || ctx.Err() != nil || !strings.Contains(err.Error(), "no partitions 2-1073741824") {
			t.Errorf("got %v (ctx %v), want a refusal naming partitions 2-1073741824 before the deadline", err, ctx.Err())
		}
	})
}
