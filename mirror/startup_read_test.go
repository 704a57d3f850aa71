package mirror

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/kmigrate/kmigrate/internal/testkit"
)

// A prefetched read returns exactly what the read on its own returns (records, transaction
// markers, aborted records left out with read_committed), for ranges it covers; a range it
// does not cover (past what the answer held) is not served from it.
func TestPrefetchMatchesRead(t *testing.T) {
	t.Parallel()
	const topic = "prefetch"
	fake := testkit.StartCluster(t, kfake.SeedTopics(3, topic))
	opts := []kgo.Opt{kgo.SeedBrokers(fake.ListenAddrs()...)}
	seedPrefetch(t, fake, topic)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	e, err := New(Config{SourceAlias: "A", TargetAlias: "B", Topics: []string{topic}, ReplicationFactor: 1, InternalReplicationFactor: 1}, opts, opts, nil)
	if err != nil {
		t.Fatal(err)
	}
	if err := e.connect(ctx); err != nil {
		t.Fatal(err)
	}
	defer e.closeDst()
	defer e.srcAdm.Close()
	ends, err := e.dstAdm.ListEndOffsets(ctx, topic)
	if err != nil {
		t.Fatal(err)
	}
	end, _ := offsetOf(ends, topic, 0) // 3 + 3 + 3 + 2 = 11: records and markers
	spans := []span{{topic, 0, 0, end}, {topic, 1, 2, 6}, {topic, 2, end - 1, end}}
	for _, committed := range []bool{false, true} {
		rr := e.resetLeaders()
		e.prefetch(ctx, true, spans, committed)
		for _, s := range spans {
			var want, got []string
			collect := func(out *[]string) func(r *kgo.Record) (bool, error) {
				return func(r *kgo.Record) (bool, error) {
					*out = append(*out, fmt.Sprintf("%d:%s:%v", r.Offset, r.Value, r.Attrs.IsControl()))
					return true, nil
				}
			}
			if err := readRange(ctx, e.dst, s.topic, s.partition, s.from, s.to, committed, collect(&want)); err != nil {
				t.Fatal(err)
			}
			ok, err := e.cachedRange(e.dst, s.topic, s.partition, s.from, s.to, committed, collect(&got))
			if err != nil || !ok {
				t.Fatalf("committed=%v span %+v: not served from the prefetch (ok %v, err %v)", committed, s, ok, err)
			}
			if fmt.Sprint(got) != fmt.Sprint(want) {
				t.Errorf("committed=%v span %+v: prefetched %v, read %v", committed, s, got, want)
			}
			if ok, _ := e.cachedRange(e.dst, s.topic, s.partition, s.from, end+5, committed, collect(&got)); ok {
				t.Errorf("committed=%v span %+v: a range past the answer was served from it", committed, s)
			}
		}
		e.endReads(rr)
	}
}

// seedPrefetch writes to each of the 3 partitions of topic: plain records, then a committed
// and an aborted transaction (markers and aborted records in the log), then plain records,
// each record in a request of its own.
func seedPrefetch(t *testing.T, c *kfake.Cluster, topic string) {
	t.Helper()
	plain := testkit.Client(t, c)
	txn := testkit.Client(t, c, kgo.TransactionalID("prefetch"))
	produce := func(cl *kgo.Client, p int32, n int, tag string) {
		t.Helper()
		for i := range n {
			testkit.Produce(t, cl, topic, p, &kgo.Record{Value: fmt.Appendf(nil, "%s-%d", tag, i)})
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	for p := int32(0); p < 3; p++ {
		produce(plain, p, 3, "a")
		for _, commit := range []kgo.TransactionEndTry{kgo.TryCommit, kgo.TryAbort} {
			if err := txn.BeginTransaction(); err != nil {
				t.Fatal(err)
			}
			produce(txn, p, 2, fmt.Sprint("txn", commit))
			if err := txn.EndTransaction(ctx, commit); err != nil {
				t.Fatal(err)
			}
		}
		produce(plain, p, 2, "b")
	}
}
