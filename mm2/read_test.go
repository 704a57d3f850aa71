package mm2

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"
)

func newFake(t *testing.T, topics ...string) *kgo.Client {
	t.Helper()
	fake, err := kfake.NewCluster(kfake.NumBrokers(1), kfake.SeedTopics(1, topics...))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(fake.Close)
	cl, err := kgo.NewClient(kgo.SeedBrokers(fake.ListenAddrs()...), kgo.DefaultProduceTopic(topics[0]))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(cl.Close)
	return cl
}

func produce(t *testing.T, cl *kgo.Client, topic string, kvs ...[2][]byte) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	for _, kv := range kvs {
		if err := cl.ProduceSync(ctx, &kgo.Record{Topic: topic, Partition: 0, Key: kv[0], Value: kv[1]}).FirstErr(); err != nil {
			t.Fatal(err)
		}
	}
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
		produce(t, cl, topic, [2][]byte{s.Key(), s.Value()})
	}
	produce(t, cl, topic, [2][]byte{want[0].Key(), nil}) // tombstone: skipped
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
	produce(t, cl, topic, [2][]byte{[]byte("x"), []byte("junk")})
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
		produce(t, cl, topic, [2][]byte{cp.Key(), cp.Value()})
	}
	produce(t, cl, topic, [2][]byte{c.Key(), nil})
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
