package verify

import (
	"context"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/kmigrate/kmigrate/align"
	"github.com/kmigrate/kmigrate/internal/testkit"
)

// DiffRanges aligns only the ranges given, strictly, and merges a partition's ranges into one
// result with the findings of each at their exact offsets.
func TestDiffRanges(t *testing.T) {
	src, dst := newCluster(t), newCluster(t)
	topic := testkit.TopicName("t")
	testkit.CreateTopic(t, src, topic, 1, nil)
	testkit.CreateTopic(t, dst, topic, 1, nil)
	testkit.Produce(t, src, topic, 0, span(0, 59)...)
	testkit.Produce(t, dst, topic, 0, cat(
		span(0, 9), span(13, 29), // source 10..12 lost
		with(r(30), func(c *kgo.Record) { c.Value = []byte("re-encoded") }), // target 30
		span(31, 39),
		with(r(40), func(c *kgo.Record) { c.Headers = nil }), // target 40
		span(41, 59),
	)...)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	specs := []PartitionSpec{
		{SourceTopic: topic, Partition: 0, SourceFrom: 28, SourceTo: 45, TargetFrom: 25, TargetTo: 42, StrictTargetFrom: true},
		{SourceTopic: topic, Partition: 0, SourceFrom: 0, SourceTo: 15, TargetFrom: 0, TargetTo: 12, StrictTargetFrom: true},
	}
	res, err := DiffRanges(ctx, src, dst, specs, 2)
	if err != nil {
		t.Fatal(err)
	}
	if res.Identical || len(res.Partitions) != 1 {
		t.Fatalf("got identical %v, %d partitions; want differences in one", res.Identical, len(res.Partitions))
	}
	p := res.Partitions[0]
	if want := (align.Counts{Matched: 12 + 15, Missing: 3, Mismatched: 2}); p.Counts != want {
		t.Errorf("counts %+v, want %+v (only the two ranges)", p.Counts, want)
	}
	if want := []align.SourceRange{{From: 10, To: 12}}; !reflect.DeepEqual(p.MissingRanges, want) {
		t.Errorf("missing %v, want %v", p.MissingRanges, want)
	}
	if want := []align.Mismatch{{SourceOffset: 30, TargetOffset: 27, Fields: []string{"value"}}, {SourceOffset: 40, TargetOffset: 37, Fields: []string{"headers"}}}; !reflect.DeepEqual(p.Mismatches, want) {
		t.Errorf("mismatches %v, want %v", p.Mismatches, want)
	}
	if p.SourceStart != 0 || p.SourceEnd != 45 || p.TargetStart != 0 || p.TargetEnd != 42 {
		t.Errorf("bounds source [%d, %d) target [%d, %d), want [0, 45) and [0, 42)", p.SourceStart, p.SourceEnd, p.TargetStart, p.TargetEnd)
	}

	// A range past the target's end is that partition's error, not a short answer.
	res, err = DiffRanges(ctx, src, dst, []PartitionSpec{{SourceTopic: topic, Partition: 0, SourceFrom: 50, SourceTo: 60, TargetFrom: 47, TargetTo: 80, StrictTargetFrom: true}}, 1)
	if err != nil || res.Identical || !strings.Contains(res.Partitions[0].Err, "80") {
		t.Errorf("range past the end: got %+v, %v; want the partition's error naming the end", res, err)
	}
}
