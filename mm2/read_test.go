package mm2

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/kmigrate/kmigrate/internal/testkit"
)

func newFake(t *testing.T, topics ...string) *kgo.Client {
	return testkit.Client(t, testkit.StartCluster(t, kfake.SeedTopics(1, topics...)), kgo.DefaultProduceTopic(topics[0]))
}

func TestReadOffsetSyncs(t *testing.T) {
	t.Parallel()
	topic := "mm2-offset-syncs.read-syncs.internal"
	cl := newFake(t, topic)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()

	got, err := ReadOffsetSyncs(ctx, cl, topic)
	if err != nil || len(got) != 0 {
		t.Fatalf("empty topic: got %v, %v; want no syncs", got, err)
	}
	if got, err := ReadOffsetSyncs(ctx, cl, "no-such-topic-read-syncs"); err != nil || len(got) != 0 {
		t.Fatalf("missing topic: got %v, %v; want no syncs, no error", got, err)
	}
	want := []OffsetSync{
		{Topic: "orders", Partition: 0, Upstream: 0, Downstream: 0},
		{Topic: "orders", Partition: 1, Upstream: 5, Downstream: 7},
		{Topic: "orders", Partition: 0, Upstream: 100, Downstream: 101}, // same key again: both kept
	}
	for _, s := range want {
		testkit.Produce(t, cl, topic, 0, &kgo.Record{Key: s.Key(), Value: s.Value()})
	}
	testkit.Produce(t, cl, topic, 0, &kgo.Record{Key: want[0].Key(), Value: nil}) // tombstone: skipped
	got, err = ReadOffsetSyncs(ctx, cl, topic)
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != len(want) {
		t.Fatalf("syncs: got %d (%v), want %d", len(got), got, len(want))
	}
	for i := range want {
		if got[i] != want[i] {
			t.Errorf("sync %d: got %+v, want %+v", i, got[i], want[i])
		}
	}
	testkit.Produce(t, cl, topic, 0, &kgo.Record{Key: []byte("x"), Value: []byte("junk")})
	if _, err := ReadOffsetSyncs(ctx, cl, topic); err == nil || !strings.Contains(err.Error(), "offset 4") {
		t.Fatalf("junk record: got %v, want an error naming offset 4", err)
	}
}

func TestReadCheckpoints(t *testing.T) {
	t.Parallel()
	topic := "read-cp.checkpoints.internal"
	cl := newFake(t, topic)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	a1 := Checkpoint{Group: "g1", Topic: "orders", Partition: 0, Upstream: 10, Downstream: 9, Metadata: "m"}
	a2 := Checkpoint{Group: "g1", Topic: "orders", Partition: 0, Upstream: 20, Downstream: 19}
	b := Checkpoint{Group: "g2", Topic: "orders", Partition: 3, Upstream: 1, Downstream: 1}
	c := Checkpoint{Group: "g3", Topic: "orders", Partition: 0, Upstream: 1, Downstream: 1}
	for _, cp := range []Checkpoint{a1, b, a2, c} {
		testkit.Produce(t, cl, topic, 0, &kgo.Record{Key: cp.Key(), Value: cp.Value()})
	}
	testkit.Produce(t, cl, topic, 0, &kgo.Record{Key: c.Key(), Value: nil})
	got, err := ReadCheckpoints(ctx, cl, topic)
	if err != nil {
		t.Fatal(err)
	}
	want := map[CheckpointKey]Checkpoint{a2.ID(): a2, b.ID(): b}
	if len(got) != len(want) {
		t.Fatalf("checkpoints: got %d (%v), want %d", len(got), got, len(want))
	}
	for k, w := range want {
		if got[k] != w {
			t.Errorf("checkpoint %v: got %+v, want %+v", k, got[k], w)
		}
	}
}

// ReadPartition0 sends Fetch requests of its own: a client that is a group consumer reads
// too (a reader built from its options would be one as well, and could not be built).
func TestReadPartition0WithGroupConsumer(t *testing.T) {
	t.Parallel()
	topic := "mm2-offset-syncs.group-client.internal"
	fake := testkit.StartCluster(t, kfake.SeedTopics(1, topic, "other"))
	prod := testkit.Client(t, fake)
	s := OffsetSync{Topic: "orders", Partition: 0, Upstream: 3, Downstream: 4}
	testkit.Produce(t, prod, topic, 0, &kgo.Record{Key: s.Key(), Value: s.Value()})
	grp, err := kgo.NewClient(kgo.SeedBrokers(fake.ListenAddrs()...), kgo.ConsumerGroup("g"), kgo.ConsumeTopics("other"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(grp.Close)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	got, err := ReadOffsetSyncs(ctx, grp, topic)
	if err != nil || len(got) != 1 || got[0] != s {
		t.Fatalf("got %v, %v; want [%+v]", got, err, s)
	}
}

// Records of an aborted transaction do not count, and a partition ending in a marker is read
// to its end.
func TestReadPartition0SkipsAborted(t *testing.T) {
	t.Parallel()
	topic := "read-aborted.checkpoints.internal"
	fake := testkit.StartCluster(t, kfake.SeedTopics(1, topic))
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	txn, err := kgo.NewClient(kgo.SeedBrokers(fake.ListenAddrs()...), kgo.TransactionalID("read-aborted"), kgo.DefaultProduceTopic(topic))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(txn.Close)
	kept := Checkpoint{Group: "g1", Topic: "orders", Partition: 0, Upstream: 10, Downstream: 9}
	lost := Checkpoint{Group: "g2", Topic: "orders", Partition: 0, Upstream: 20, Downstream: 19}
	for _, step := range []struct {
		cp     Checkpoint
		commit kgo.TransactionEndTry
	}{{kept, kgo.TryCommit}, {lost, kgo.TryAbort}} {
		if err := txn.BeginTransaction(); err != nil {
			t.Fatal(err)
		}
		if err := txn.ProduceSync(ctx, &kgo.Record{Key: step.cp.Key(), Value: step.cp.Value()}).FirstErr(); err != nil {
			t.Fatal(err)
		}
		if err := txn.EndTransaction(ctx, step.commit); err != nil {
			t.Fatal(err)
		}
	}
	got, err := ReadCheckpoints(ctx, txn, topic)
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 1 || got[kept.ID()] != kept {
		t.Fatalf("got %v, want only %+v", got, kept)
	}
}
