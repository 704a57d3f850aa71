package integration

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/signal"
	"syscall"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/kmigrate/kmigrate/integration/cluster"
)

// TestMain reaps the JVMs that a killed earlier run left behind, says which provider and
// versions run, and closes every cluster when the run is interrupted (SIGINT, SIGTERM).
func TestMain(m *testing.M) {
	for _, r := range cluster.Reap() {
		fmt.Fprintf(os.Stderr, "integration: reaped leftover %s\n", r)
	}
	fmt.Fprintf(os.Stderr, "integration: %s\n", cluster.Describe())
	sig := make(chan os.Signal, 1)
	signal.Notify(sig, syscall.SIGINT, syscall.SIGTERM)
	go func() {
		s := <-sig
		fmt.Fprintf(os.Stderr, "integration: %v: stopping every cluster and MirrorMaker\n", s)
		cluster.CloseAll()
		os.Exit(2)
	}()
	code := m.Run()
	cluster.CloseAll()
	os.Exit(code)
}

// Helpers shared by the tests of this package. They are named bed* so that the other test
// files (verify, reconcile, mirror) can define their own without clashing.

// bedClient is a franz-go client on seeds, closed in t.Cleanup.
func bedClient(t testing.TB, seeds []string, opts ...kgo.Opt) *kgo.Client {
	t.Helper()
	cl, err := kgo.NewClient(append([]kgo.Opt{kgo.SeedBrokers(seeds...)}, opts...)...)
	if err != nil {
		t.Fatalf("client for %v: %v", seeds, err)
	}
	t.Cleanup(cl.Close)
	return cl
}

// bedAdmin is a kadm client on the cluster.
func bedAdmin(t testing.TB, c cluster.Cluster) *kadm.Client {
	t.Helper()
	return kadm.NewClient(bedClient(t, c.Bootstrap()))
}

// bedCreateTopic creates topic with the given partitions and a replication factor of
// min(brokers, 3), and optional topic configs.
func bedCreateTopic(t testing.TB, c cluster.Cluster, topic string, partitions int32, configs map[string]*string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	resp, err := bedAdmin(t, c).CreateTopic(ctx, partitions, int16(min(c.Brokers(), 3)), configs, topic)
	if err == nil {
		err = resp.Err
	}
	if err != nil {
		t.Fatalf("create topic %s on cluster %s: %v", topic, c.Name(), err)
	}
}

// bedUnique is a name unique to this run: tests share clusters only within a test, but
// unique names keep parallel runs and kept log dirs apart.
func bedUnique(prefix string) string {
	return fmt.Sprintf("%s-%x", prefix, time.Now().UnixNano())
}

// bedEndOffsets returns the high watermark of every partition of topic.
func bedEndOffsets(ctx context.Context, t testing.TB, c cluster.Cluster, topic string) map[int32]int64 {
	t.Helper()
	ends, err := bedAdmin(t, c).ListEndOffsets(ctx, topic)
	if err != nil {
		t.Fatalf("list end offsets of %s on %s: %v", topic, c.Name(), err)
	}
	out := map[int32]int64{}
	ends.Each(func(o kadm.ListedOffset) {
		if o.Err == nil {
			out[o.Partition] = o.Offset
		}
	})
	return out
}

// bedReadPartition reads topic/partition from offset from up to its end at the time of the
// call and returns the records in order. It stops early when no record comes for 3 s (15 s for the first) (the end
// may be a transaction marker or a compacted gap).
func bedReadPartition(ctx context.Context, t testing.TB, c cluster.Cluster, topic string, partition int32, from int64) []*kgo.Record {
	t.Helper()
	end := bedEndOffsets(ctx, t, c, topic)[partition]
	if from >= end {
		return nil
	}
	cl := bedClient(t, c.Bootstrap(), kgo.ConsumePartitions(map[string]map[int32]kgo.Offset{
		topic: {partition: kgo.NewOffset().At(from)},
	}))
	var out []*kgo.Record
	for {
		idle := 3 * time.Second
		if len(out) == 0 {
			idle = 15 * time.Second // the first fetch also connects
		}
		pctx, cancel := context.WithTimeout(ctx, idle)
		fs := cl.PollFetches(pctx)
		cancel()
		if err := ctx.Err(); err != nil {
			t.Fatalf("read %s/%d on %s from %d: got %d of %d records when the deadline came", topic, partition, c.Name(), from, len(out), end-from)
		}
		fs.EachError(func(tp string, p int32, err error) {
			if !errors.Is(err, context.DeadlineExceeded) {
				t.Logf("fetch %s/%d on %s: %v", tp, p, c.Name(), err)
			}
		})
		n := 0
		for _, r := range fs.Records() {
			if r.Offset < end {
				out = append(out, r)
				n++
			}
		}
		if n == 0 || out[len(out)-1].Offset >= end-1 {
			return out
		}
	}
}
