package groupsync_test

import (
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/kmigrate/kmigrate/integration/cluster"
	"github.com/kmigrate/kmigrate/internal/testkit"
	"github.com/kmigrate/kmigrate/mirror/groupsync"
)

// TestRealBrokersKafka4 runs the sync from a Kafka 2.3.0 source to a 4.3.1 target whose groups
// use the consumer group protocol of KIP-848: a consumer group whose member left is written
// and a new-protocol consumer joining it starts at E(G); one with an active member is described
// with ConsumerGroupDescribe and left alone, and the broker refuses a commit to it too. It
// skips without Java 17 (see integration/cluster).
func TestRealBrokersKafka4(t *testing.T) {
	e, tgtClient := realBrokers(t, cluster.V230, cluster.V431, 1) // orders/0: E(G) = G + 5
	ctx := e.ctx
	e.commitSource("idle848", "orders", 0, 30, "m30")
	e.commitSource("busy848", "orders", 0, 10, "")
	testkit.Commit(t, e.tgtAdm, "idle848", prefix+"orders", 0, 7, "") // where the old consumers left it

	idle := e.join848("idle848", prefix+"orders")
	idle.Close()
	for {
		d, err := e.tgtAdm.DescribeConsumerGroups(ctx, "idle848")
		if err == nil && d["idle848"].Err == nil && len(d["idle848"].Members) == 0 {
			break
		}
		if ctx.Err() != nil {
			t.Fatalf("the member of idle848 never left: %+v %v", d, err)
		}
		time.Sleep(100 * time.Millisecond)
	}
	busy := e.join848("busy848", prefix+"orders")
	keepPolling(ctx, t, busy)

	rep := e.syncOnce(e.config())
	wantPartition(t, rep, "idle848", "orders", 0, groupsync.StatusSynced, groupsync.StatusSynced)
	wantPartition(t, rep, "busy848", "orders", 0, groupsync.StatusSkippedActive, groupsync.StatusSynced)
	for _, g := range rep.Groups {
		t.Logf("group %s on the target: type %q, state %q, %d members", g.Group, g.TargetType, g.TargetState, g.TargetMembers)
		if g.TargetType != "consumer" {
			t.Errorf("group %s: target type %q, want consumer", g.Group, g.TargetType)
		}
	}
	e.wantTarget("idle848", prefix+"orders", 0, 35)
	e.wantTarget("busy848", prefix+"orders", 0, -1)

	// Kafka 4.3.1 refuses a generation -1 commit to a consumer group with a member too.
	err := simpleCommit(ctx, e.tgtAdm, "busy848", prefix+"orders")
	if err == nil {
		t.Fatalf("commit to an active consumer group on 4.3.1: got no error, want one")
	}
	t.Logf("4.3.1 refuses a simple commit to an active consumer group: %v", err)

	// A new-protocol consumer joining idle848 starts at E(G).
	member := tgtClient(kgo.ConsumerGroup("idle848"), kgo.ConsumeTopics(prefix+"orders"),
		kgo.ServerSideBalancer(), kgo.Balancers(kgo.RangeBalancer()), kgo.DisableAutoCommit())
	var first *kgo.Record
	for first == nil && ctx.Err() == nil {
		if rs := member.PollRecords(ctx, 1).Records(); len(rs) > 0 {
			first = rs[0]
		}
	}
	if first == nil || first.Offset != 35 {
		t.Fatalf("first record of the new-protocol consumer: %+v, want offset 35", first)
	}
}
