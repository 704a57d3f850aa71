package verify

import (
	"context"
	"fmt"
	"slices"
	"sync/atomic"
	"testing"
	"time"

	"github.com/cespare/xxhash/v2"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/kmigrate/kmigrate/internal/testkit"
	"github.com/kmigrate/kmigrate/mm2"
)

// TestShardOf: every (topic, partition) pair is in exactly one of COUNT shards, the
// assignment is a function of the topic's name and the partition only (the same whatever
// else is listed, in any order), and each topic's partitions are spread evenly.
func TestShardOf(t *testing.T) {
	topics := []string{"orders", "payments", "a", "b.c", "east.orders", "x-internal-not", "t0", "t1", "t2"}
	for _, count := range []int{1, 2, 3, 7, 16} {
		for _, topic := range topics {
			per := make([]int, count)
			for p := int32(0); p < 50; p++ {
				owners := 0
				for i := 0; i < count; i++ {
					if (Shard{Index: i, Count: count}).Owns(topic, p) {
						owners++
						per[i]++
					}
				}
				if owners != 1 {
					t.Fatalf("%s/%d in %d of %d shards, want exactly 1", topic, p, owners, count)
				}
			}
			if lo, hi := slices.Min(per), slices.Max(per); hi-lo > 1 {
				t.Errorf("%s over %d shards: %v partitions per shard, want an even spread", topic, count, per)
			}
		}
	}
	// The documented formula, which every process of a sharded run must share.
	if got, want := ShardOf("orders", 7, 1000), int((xxhash.Sum64String("orders")+7)%1000); got != want {
		t.Errorf("ShardOf(orders, 7, 1000) = %d, want %d ((xxhash64(orders) + 7) mod 1000, as documented)", got, want)
	}
	for _, bad := range []Shard{{Index: 2, Count: 2}, {Index: -1, Count: 2}, {Index: 0, Count: -1}} {
		if bad.Validate() == nil {
			t.Errorf("shard %s accepted", bad)
		}
	}
}

// countingCluster is a kfake cluster that counts the Metadata and ListOffsets requests it
// answers.
type countingCluster struct {
	cl              *kgo.Client
	metadata, lists atomic.Int64
}

func newCountingCluster(t *testing.T) *countingCluster {
	t.Helper()
	c := testkit.StartCluster(t)
	cc := &countingCluster{}
	c.ControlKey(int16(kmsg.Metadata), func(kmsg.Request) (kmsg.Response, error, bool) {
		c.KeepControl()
		cc.metadata.Add(1)
		return nil, nil, false
	})
	c.ControlKey(int16(kmsg.ListOffsets), func(kmsg.Request) (kmsg.Response, error, bool) {
		c.KeepControl()
		cc.lists.Add(1)
		return nil, nil, false
	})
	cc.cl = testkit.Client(t, c, kgo.ProducerLinger(0))
	return cc
}

// counts are the Metadata and ListOffsets requests both clusters answered so far.
func counts(cs ...*countingCluster) (metadata, lists int64) {
	for _, c := range cs {
		metadata += c.metadata.Load()
		lists += c.lists.Load()
	}
	return metadata, lists
}

// TestDiffTopicsStartUp: the start-up requests of DiffTopics do not grow with the number of
// topics, where a Diff per topic makes them for every topic; the two are compared in the same
// run over the same 40 topics.
func TestDiffTopicsStartUp(t *testing.T) {
	src, dst := newCountingCluster(t), newCountingCluster(t)
	var names []string
	for i := 0; i < 40; i++ {
		name := fmt.Sprintf("topic-%02d", i)
		names = append(names, name)
		for _, c := range []*countingCluster{src, dst} {
			testkit.CreateTopic(t, c.cl, name, 2, nil)
			testkit.Produce(t, c.cl, name, 0, span(0, 2)...)
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	flow := mm2.NewFlow("source", "target", mm2.IdentityPolicy{})
	md0, lo0 := counts(src, dst)
	mr, err := DiffTopics(ctx, src.cl, dst.cl, MultiConfig{Flow: flow, All: true, Base: Config{Parallel: 4}})
	if err != nil {
		t.Fatal(err)
	}
	md1, lo1 := counts(src, dst)
	if !mr.Identical || mr.Total.Topics != 40 || mr.Total.Partitions != 80 {
		t.Fatalf("total %+v identical=%v, want 40 identical topics, 80 partitions", mr.Total, mr.Identical)
	}
	for _, n := range names {
		if _, _, err := Diff(ctx, src.cl, dst.cl, Config{SourceTopic: n, Parallel: 4}); err != nil {
			t.Fatal(err)
		}
	}
	md2, lo2 := counts(src, dst)
	multiMD, multiLO, singleMD, singleLO := md1-md0, lo1-lo0, md2-md1, lo2-lo1
	t.Logf("40 topics, 80 partitions: DiffTopics %d metadata and %d list-offsets requests, a Diff per topic %d and %d", multiMD, multiLO, singleMD, singleLO)
	if multiLO*10 > singleLO {
		t.Errorf("DiffTopics made %d list-offsets requests, a Diff per topic %d: want at most a tenth", multiLO, singleLO)
	}
	// DiffTopics makes one metadata request per cluster, never one per topic (its partition
	// reads take their leaders from it: TestDiffLeadersShared).
	if multiMD > singleMD+4 {
		t.Errorf("DiffTopics made %d metadata requests, a Diff per topic %d: want no more", multiMD, singleMD)
	}
}

// TestDiffTopicsPartitionCount: a target with fewer partitions is a problem of the topic and
// the partitions it lacks have every source record missing; a topic whose partitions all
// hold nothing in range is "nothing to compare", never identical.
func TestDiffTopicsPartitionCount(t *testing.T) {
	src, dst := newCluster(t), newCluster(t)
	testkit.CreateTopic(t, src, "grown", 3, nil)
	testkit.CreateTopic(t, dst, "grown", 2, nil)
	for p := int32(0); p < 3; p++ {
		testkit.Produce(t, src, "grown", p, span(0, 9)...)
		if p < 2 {
			testkit.Produce(t, dst, "grown", p, span(0, 9)...)
		}
	}
	testkit.CreateTopic(t, src, "empty", 1, nil)
	testkit.CreateTopic(t, dst, "empty", 1, nil)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	mr, err := DiffTopics(ctx, src, dst, MultiConfig{Flow: mm2.NewFlow("s", "t", mm2.IdentityPolicy{}), Names: []string{"grown", "empty"}})
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]DiffStatus{}
	for _, tr := range mr.Topics {
		got[tr.SourceTopic] = tr.Status
	}
	if got["grown"] != StatusDiffers || got["empty"] != StatusNothing || mr.Identical {
		t.Fatalf("statuses %v identical=%v, want grown differs, empty nothing to compare", got, mr.Identical)
	}
	g := mr.Topics[slices.IndexFunc(mr.Topics, func(tr TopicResult) bool { return tr.SourceTopic == "grown" })]
	if len(g.Problems) != 1 || g.Summary.Missing != 10 || g.Summary.Matched != 20 || g.Partitions[2].Missing != 10 {
		t.Errorf("grown: problems %q, summary %+v; want a partition count problem and partition 2's 10 records missing", g.Problems, g.Summary)
	}
}

// TestDiffLeadersShared: Diff and DiffTopics read every partition's leader from the metadata
// they asked for once, so their metadata requests do not grow with the partitions read; a
// read that looked its leader up itself would make one per partition (24 here).
func TestDiffLeadersShared(t *testing.T) {
	src, dst := newCountingCluster(t), newCountingCluster(t)
	for _, c := range []*countingCluster{src, dst} {
		testkit.CreateTopic(t, c.cl, "wide", 24, nil)
		for p := int32(0); p < 24; p++ {
			testkit.Produce(t, c.cl, "wide", p, span(0, 2)...)
		}
		for i := 0; i < 12; i++ {
			testkit.CreateTopic(t, c.cl, fmt.Sprintf("pair-%02d", i), 2, nil)
			testkit.Produce(t, c.cl, fmt.Sprintf("pair-%02d", i), 0, span(0, 2)...)
			testkit.Produce(t, c.cl, fmt.Sprintf("pair-%02d", i), 1, span(0, 2)...)
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	md0, _ := counts(src, dst)
	res, _, err := Diff(ctx, src.cl, dst.cl, Config{SourceTopic: "wide", Parallel: 4})
	if err != nil || !res.Identical || res.Summary.Matched != 24*3 {
		t.Fatalf("Diff: %v, %+v", err, res)
	}
	md1, _ := counts(src, dst)
	mr, err := DiffTopics(ctx, src.cl, dst.cl, MultiConfig{Flow: mm2.NewFlow("s", "t", mm2.IdentityPolicy{}), TopicsRegex: "pair-.*", Base: Config{Parallel: 4}})
	if err != nil || !mr.Identical || mr.Total.Partitions != 24 {
		t.Fatalf("DiffTopics: %v, %+v", err, mr)
	}
	md2, _ := counts(src, dst)
	t.Logf("metadata requests for 24 partitions on each side: Diff %d, DiffTopics %d", md1-md0, md2-md1)
	// At most one per cluster, and as many again for the client's own metadata refreshes.
	if md1-md0 > 4 || md2-md1 > 4 {
		t.Errorf("metadata requests: Diff %d, DiffTopics %d over 24 partitions; want at most 4 each (one answer per cluster, shared by the partition reads)", md1-md0, md2-md1)
	}
}
