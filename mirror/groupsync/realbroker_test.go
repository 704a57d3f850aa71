package groupsync_test

import (
	"context"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/kmigrate/kmigrate/integration/cluster"
	"github.com/kmigrate/kmigrate/internal/testkit"
	"github.com/kmigrate/kmigrate/mirror/groupsync"
	"github.com/kmigrate/kmigrate/mm2"
)

// TestRealBrokers runs the sync from a Kafka 2.3.0 source (ZooKeeper) to a 3.7.1 target
// (KRaft), both real JVM brokers: list and fetch on the old protocol versions, the checkpoints
// topic created with the broker's default factor, an active target group refused by us and by
// the broker, idempotence and a rewind. It skips without Java 17 (see integration/cluster).
func TestRealBrokers(t *testing.T) {
	e, tgtClient := realBrokers(t, cluster.V230, cluster.V371, 2) // orders/0 and 1: E(G) = G + 5
	ctx := e.ctx

	e.commitSource("idle", "orders", 0, 30, "m30")
	e.commitSource("idle", "orders", 1, 45, "") // beyond the mirror: pending
	e.commitSource("busy", "orders", 0, 10, "")

	member := tgtClient(kgo.ConsumerGroup("busy"), kgo.ConsumeTopics(prefix+"orders"), kgo.DisableAutoCommit())
	keepPolling(ctx, t, member)
	for {
		dg, err := e.tgtAdm.DescribeGroups(ctx, "busy")
		if err == nil && dg["busy"].State == "Stable" && len(dg["busy"].Members) == 1 {
			break
		}
		if ctx.Err() != nil {
			t.Fatalf("target group busy never became stable: %v", err)
		}
		time.Sleep(100 * time.Millisecond)
	}

	cfg := e.config()
	start := time.Now()
	rep := e.syncOnce(cfg)
	t.Logf("first pass: %v, committed %d, emitted %d", time.Since(start).Round(time.Millisecond), rep.Committed, rep.Emitted)
	wantPartition(t, rep, "idle", "orders", 0, groupsync.StatusSynced, groupsync.StatusSynced)
	wantPartition(t, rep, "idle", "orders", 1, groupsync.StatusPending, groupsync.StatusPending)
	wantPartition(t, rep, "busy", "orders", 0, groupsync.StatusSkippedActive, groupsync.StatusSynced)
	e.wantTarget("idle", prefix+"orders", 0, 35)
	e.wantTarget("idle", prefix+"orders", 1, -1)
	e.wantTarget("busy", prefix+"orders", 0, -1)

	// The broker refuses a generation -1 commit to a group with members too: the second line
	// of defence if a consumer joins between our describe and our commit.
	err := simpleCommit(ctx, e.tgtAdm, "busy", prefix+"orders")
	if err == nil {
		t.Fatalf("commit to an active group on 3.7.1: got no error, want one")
	}
	t.Logf("3.7.1 refuses a simple commit to an active group: %v", err)

	td, err := e.tgtAdm.ListTopics(ctx, cpTop)
	if err != nil || td[cpTop].Err != nil || len(td[cpTop].Partitions) != 1 {
		t.Fatalf("checkpoints topic on the target: %v %+v", err, td[cpTop])
	}
	want := mm2.Checkpoint{Group: "idle", Topic: prefix + "orders", Partition: 0, Upstream: 30, Downstream: 35, Metadata: "m30"}
	if got := e.lastCheckpoints()[want.ID()]; got != want {
		t.Fatalf("checkpoint: got %+v, want %+v", got, want)
	}

	before := len(e.checkpointRecords())
	rep = e.syncOnce(cfg)
	if rep.Committed != 0 || rep.Emitted != 0 {
		t.Fatalf("second pass: got committed %d emitted %d, want 0 0", rep.Committed, rep.Emitted)
	}
	if after := len(e.checkpointRecords()); after != before {
		t.Fatalf("checkpoint records: got %d after the second pass, want %d", after, before)
	}

	e.commitSource("idle", "orders", 0, 12, "")
	e.tr.mirrored("orders", 1, 45, 5) // the mirror passes partition 1's G=45
	rep = e.syncOnce(cfg)
	wantPartition(t, rep, "idle", "orders", 0, groupsync.StatusRewound, groupsync.StatusRewound)
	wantPartition(t, rep, "idle", "orders", 1, groupsync.StatusSynced, groupsync.StatusSynced)
	e.wantTarget("idle", prefix+"orders", 0, 17)
	e.wantTarget("idle", prefix+"orders", 1, 50)
	if got, _, ok := testkit.Committed(t, e.srcAdm, "idle", "orders", 0); !ok || got != 12 {
		t.Fatalf("source offset: got %d (present %v), want 12 untouched", got, ok)
	}
}

// realBrokers starts a source of srcVersion and a target of tgtVersion, real brokers (it
// skips in -short mode, and without Java 17: see integration/cluster), and returns an env on
// them bounded to 3 minutes, and tgtClient, which opens one more client on the target. The
// env has topic orders with parts partitions; the target holds 45 records in each, copies of
// source 0..39 after 5 records that were there before (so E(G) = G + 5), as the translator
// knows.
func realBrokers(t *testing.T, srcVersion, tgtVersion string, parts int32) (e *env, tgtClient func(opts ...kgo.Opt) *kgo.Client) {
	t.Helper()
	if testing.Short() {
		t.Skip("skip: real brokers in -short mode")
	}
	srcC := cluster.StartT(t, cluster.Spec{Version: srcVersion, Name: "groupsync-src"})
	tgtC := cluster.StartT(t, cluster.Spec{Version: tgtVersion, Name: "groupsync-tgt"})
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	t.Cleanup(cancel)

	client := func(seeds []string, opts ...kgo.Opt) *kgo.Client {
		t.Helper()
		cl, err := kgo.NewClient(append([]kgo.Opt{kgo.SeedBrokers(seeds...)}, opts...)...)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(cl.Close)
		return cl
	}
	e = &env{t: t, ctx: ctx, tr: &fakeTranslator{}}
	e.src, e.tgt = client(srcC.Bootstrap()), client(tgtC.Bootstrap())
	e.srcAdm, e.tgtAdm = kadm.NewClient(e.src), kadm.NewClient(e.tgt)
	e.topic("orders", parts)
	var recs []*kgo.Record
	for p := range parts {
		for i := range 45 {
			recs = append(recs, &kgo.Record{Topic: prefix + "orders", Partition: p, Value: []byte{byte(i)}})
		}
	}
	producer := client(tgtC.Bootstrap(), kgo.RecordPartitioner(kgo.ManualPartitioner()))
	if err := producer.ProduceSync(ctx, recs...).FirstErr(); err != nil {
		t.Fatalf("produce to target: %v", err)
	}
	for p := range parts {
		e.tr.mirrored("orders", p, 40, 5)
	}
	return e, func(opts ...kgo.Opt) *kgo.Client { return client(tgtC.Bootstrap(), opts...) }
}

// keepPolling polls cl in the background, so that its member stays in its group, until the
// test ends.
func keepPolling(ctx context.Context, t *testing.T, cl *kgo.Client) {
	pollCtx, stop := context.WithCancel(ctx)
	done := make(chan struct{})
	go func() {
		defer close(done)
		for pollCtx.Err() == nil {
			cl.PollFetches(pollCtx)
		}
	}()
	t.Cleanup(func() { stop(); <-done })
}

// simpleCommit commits offset 1 of topic/0 for group with generation -1, as a tool outside
// the group does, and returns the broker's error.
func simpleCommit(ctx context.Context, adm *kadm.Client, group, topic string) error {
	os := make(kadm.Offsets)
	os.Add(kadm.Offset{Topic: topic, Partition: 0, At: 1, LeaderEpoch: -1})
	resp, err := adm.CommitOffsets(ctx, group, os)
	if err == nil {
		err = resp.Error()
	}
	return err
}
