package mirror

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"
)

// readRange over a log that ends before end (truncated since end was listed) is an error
// naming where the log ends, not a wait until the context ends; a range ending in a marker
// delivers it.
func TestReadRangeEnds(t *testing.T) {
	t.Parallel()
	const topic = "read-range"
	fake, err := kfake.NewCluster(kfake.NumBrokers(1), kfake.SeedTopics(1, topic))
	if err != nil {
		t.Fatal(err)
	}
	defer fake.Close()
	opts := []kgo.Opt{kgo.SeedBrokers(fake.ListenAddrs()...)}
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	txn, err := kgo.NewClient(append(opts, kgo.TransactionalID("read-range"), kgo.DefaultProduceTopic(topic))...)
	if err != nil {
		t.Fatal(err)
	}
	defer txn.Close()
	if err := txn.BeginTransaction(); err != nil {
		t.Fatal(err)
	}
	if err := txn.ProduceSync(ctx, &kgo.Record{Value: []byte("a")}, &kgo.Record{Value: []byte("b")}).FirstErr(); err != nil {
		t.Fatal(err)
	}
	if err := txn.EndTransaction(ctx, kgo.TryCommit); err != nil {
		t.Fatal(err)
	}
	var offs []int64
	controls := 0
	err = readRange(ctx, opts, topic, 0, 0, 3, true, func(r *kgo.Record) (bool, error) {
		offs = append(offs, r.Offset)
		if r.Attrs.IsControl() {
			controls++
		}
		return true, nil
	})
	if err != nil || len(offs) != 3 || controls != 1 {
		t.Fatalf("range [0, 3): got offsets %v (%d controls), %v; want 0, 1 and the marker at 2", offs, controls, err)
	}
	err = readRange(ctx, opts, topic, 0, 0, 10, true, func(*kgo.Record) (bool, error) { return true, nil })
	if err == nil || ctx.Err() != nil || !strings.Contains(err.Error(), "the log ends at 3, before the end offset 10") {
		t.Fatalf("range past the log: got %v (context %v), want an error naming the end of the log", err, ctx.Err())
	}
}
