package mirror

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/kmigrate/kmigrate/internal/testkit"
	"github.com/kmigrate/kmigrate/offsetmap"
)

// readRange over a log that ends before end (truncated since end was listed) is an error
// naming where the log ends, not a wait until the context ends; a range ending in a marker
// delivers it.
func TestReadRangeEnds(t *testing.T) {
	t.Parallel()
	const topic = "read-range"
	fake := testkit.StartCluster(t, kfake.SeedTopics(1, topic))
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	testkit.ProduceTxn(t, testkit.Client(t, fake, kgo.TransactionalID("read-range")), topic, 0, &kgo.Record{Value: []byte("a")}, &kgo.Record{Value: []byte("b")})
	var offs []int64
	controls := 0
	err := readRange(ctx, testkit.Client(t, fake), topic, 0, 0, 3, true, func(r *kgo.Record) (bool, error) {
		offs = append(offs, r.Offset)
		if r.Attrs.IsControl() {
			controls++
		}
		return true, nil
	})
	if err != nil || len(offs) != 3 || controls != 1 {
		t.Fatalf("range [0, 3): got offsets %v (%d controls), %v; want 0, 1 and the marker at 2", offs, controls, err)
	}
	err = readRange(ctx, testkit.Client(t, fake), topic, 0, 0, 10, true, func(*kgo.Record) (bool, error) { return true, nil })
	if err == nil || ctx.Err() != nil || !strings.Contains(err.Error(), "the log ends at 3, before the end offset 10") {
		t.Fatalf("range past the log: got %v (context %v), want an error naming the end of the log", err, ctx.Err())
	}
}

// TestReadMapAboveOpenTransaction: the map topic is shared by the transactions of every
// bucket. When another bucket's transaction is open (its owner committing, stalled or dead)
// and a segment was committed after it began, a resume must still see that segment: reading
// only to the last stable offset listed then misses it, and the partition is mirrored again
// from an older point (duplicates). It must not wait for the open transaction either (a dead
// owner's ends only at the target's transaction timeout), nor trust what that transaction
// holds: it may still abort.
func TestReadMapAboveOpenTransaction(t *testing.T) {
	t.Parallel()
	const topic = "map-open-txn"
	fake := testkit.StartCluster(t, kfake.SeedTopics(1, topic))
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	producer := func(id string) *kgo.Client {
		cl := testkit.Client(t, fake, kgo.TransactionalID(id), kgo.DefaultProduceTopic(topic))
		if err := cl.BeginTransaction(); err != nil {
			t.Fatal(err)
		}
		return cl
	}
	other, mine := tp{"orders", 0}, tp{"orders", 1}
	// The other partition's owner opens its transaction first and leaves it open.
	open := producer("owner-of-0")
	if err := open.ProduceSync(ctx, &kgo.Record{Key: mapKey(other, 0), Value: mapValue(offsetmap.Segment{Source: 0, Target: 0, Len: 5})}).FirstErr(); err != nil {
		t.Fatal(err)
	}
	// The resumed partition's earlier owner commits its segment after that.
	done := producer("owner-of-1")
	if err := done.ProduceSync(ctx, &kgo.Record{Key: mapKey(mine, 0), Value: mapValue(offsetmap.Segment{Source: 0, Target: 0, Len: 7})}).FirstErr(); err != nil {
		t.Fatal(err)
	}
	if err := done.EndTransaction(ctx, kgo.TryCommit); err != nil {
		t.Fatal(err)
	}
	admCl := testkit.Client(t, fake)
	adm := kadm.NewClient(admCl)
	end, err := mapEnd(ctx, adm, topic) // listed while the other transaction is open
	if err != nil {
		t.Fatal(err)
	}
	m, _, _, err := readMap(ctx, admCl, topic, end, true, "") // the other transaction still open
	if err != nil {
		t.Fatal(err)
	}
	if got := m[mine].segs; len(got) != 1 || got[0].Len != 7 {
		t.Fatalf("segments of %v read from the map up to %d: %v, want the committed segment of 7 records (all read: %v)", mine, end, got, m)
	}
	if got, ok := m[other]; ok {
		t.Fatalf("segments of %v, in a transaction still open: %v, want none trusted", other, got.segs)
	}
	if err := open.EndTransaction(ctx, kgo.TryAbort); err != nil {
		t.Fatal(err)
	}
	end, err = mapEnd(ctx, adm, topic)
	if err != nil {
		t.Fatal(err)
	}
	if m, _, _, err = readMap(ctx, admCl, topic, end, true, ""); err != nil {
		t.Fatal(err)
	}
	if got, ok := m[other]; ok || len(m[mine].segs) != 1 {
		t.Fatalf("after the abort: segments of %v %v, of %v %v; want none, and the committed one", other, got.segs, mine, m[mine].segs)
	}
}
