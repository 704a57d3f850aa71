package verify

import (
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/kmigrate/kmigrate/align"
	"github.com/kmigrate/kmigrate/internal/testkit"
	"github.com/kmigrate/kmigrate/mm2"
)

// TestDiffFromOffsetAfterRewind: a restarted MM2 task copied source offsets 300..999 again
// after the first task had copied 0..599, and its first sync (300 -> 600) has the highest
// downstream. Diff --from 400 must still start at or below the first copy of 400 (target 400),
// as mm2.SyncIndex.LowerBound says; the largest downstream at or below 400 would start past it.
func TestDiffFromOffsetAfterRewind(t *testing.T) {
	src, dst := newCluster(t), newCluster(t)
	topic := testkit.TopicName("t")
	syncs := "mm2-offset-syncs.source.internal"
	testkit.CreateTopic(t, src, topic, 1, nil)
	testkit.CreateTopic(t, dst, topic, 1, nil)
	testkit.CreateTopic(t, dst, syncs, 1, nil)
	testkit.Produce(t, src, topic, 0, span(0, 999)...)
	copyOf := func(from, to int) []*kgo.Record {
		var out []*kgo.Record
		for _, r := range span(from, to) {
			c := *r
			c.Timestamp = time.Now() // LogAppendTime: timestamps do not narrow the start
			out = append(out, &c)
		}
		return out
	}
	testkit.Produce(t, dst, topic, 0, copyOf(0, 599)...)   // target 0..599
	testkit.Produce(t, dst, topic, 0, copyOf(300, 999)...) // target 600..1299
	var recs []*kgo.Record
	for _, s := range []mm2.OffsetSync{{Upstream: 0, Downstream: 0}, {Upstream: 500, Downstream: 500}, {Upstream: 300, Downstream: 600}} {
		s.Topic = topic
		recs = append(recs, &kgo.Record{Key: s.Key(), Value: s.Value()})
	}
	testkit.Produce(t, dst, syncs, 0, recs...)

	_, om := diff(t, src, dst, Config{SourceTopic: topic, From: Position{Kind: AtOffset, Offset: 400},
		OffsetSyncsTopic: syncs, OffsetSyncsClient: dst})
	pm := om.Partition(0)
	if pm == nil || len(pm.Segments) == 0 || pm.Segments[0].Source != 400 || pm.Segments[0].Target != 400 {
		t.Fatalf("map %+v: want the first copy of source 400 at target 400 mapped first", pm)
	}
	if got := pm.Copies(450); len(got) != 2 || got[0] != 450 || got[1] != 750 {
		t.Errorf("copies of source 450: %v, want [450 750] (the first copy and the replay)", got)
	}
}

// TestDiffPartitionCause: a partition the target lacks carries a Cause that errors.Is matches
// to ErrTargetMissing, with the same text as Err; the JSON form has Err only.
func TestDiffPartitionCause(t *testing.T) {
	src, dst := newCluster(t), newCluster(t)
	topic := testkit.TopicName("t")
	testkit.CreateTopic(t, src, topic, 2, nil)
	testkit.CreateTopic(t, dst, topic, 1, nil)
	testkit.Produce(t, src, topic, 0, span(0, 9)...)
	testkit.Produce(t, src, topic, 1, span(0, 9)...)
	testkit.Produce(t, dst, topic, 0, span(0, 9)...)
	res, _ := diff(t, src, dst, Config{SourceTopic: topic})
	var p1 *align.PartitionResult
	for i := range res.Partitions {
		if res.Partitions[i].Partition == 1 {
			p1 = &res.Partitions[i]
		}
	}
	if p1 == nil || !errors.Is(p1.Cause, ErrTargetMissing) || p1.Cause.Error() != p1.Err {
		t.Fatalf("partition 1: %+v, want Cause matching ErrTargetMissing with Err's text", p1)
	}
	if res.Partitions[0].Cause != nil {
		t.Errorf("partition 0 compared, but Cause is %v", res.Partitions[0].Cause)
	}
	b, err := json.Marshal(p1)
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(string(b), "Cause") || !strings.Contains(string(b), `"error":"target topic`) {
		t.Errorf("JSON %s: want error only", b)
	}
}
