package groupsync_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/kmigrate/kmigrate/internal/testkit"
	"github.com/kmigrate/kmigrate/mirror/groupsync"
)

// join848 starts a member of group on the target topic with the consumer group protocol of
// KIP-848 and waits until the target lists the group as a "consumer" group with it, Stable.
func (e *env) join848(group, topic string) *kgo.Client {
	e.t.Helper()
	seeds := e.tgt.OptValue(kgo.SeedBrokers).([]string)
	member, err := kgo.NewClient(kgo.SeedBrokers(seeds...), kgo.ConsumerGroup(group), kgo.ConsumeTopics(topic),
		kgo.ServerSideBalancer(), kgo.Balancers(kgo.RangeBalancer()), kgo.DisableAutoCommit(),
		kgo.FetchMaxWait(100*time.Millisecond))
	if err != nil {
		e.t.Fatal(err)
	}
	e.t.Cleanup(member.Close)
	for {
		pctx, cancel := context.WithTimeout(e.ctx, 200*time.Millisecond)
		member.PollRecords(pctx, 1)
		cancel()
		listed, _ := e.tgtAdm.ListGroups(e.ctx)
		d, _ := e.tgtAdm.DescribeConsumerGroups(e.ctx, group)
		if listed[group].GroupType == "consumer" && d[group].State == "Stable" && len(d[group].Members) == 1 {
			return member
		}
		if e.ctx.Err() != nil {
			e.t.Fatalf("target group %s never became a stable consumer group: %+v", group, d[group])
		}
	}
}

// A consumer group of the new protocol (KIP-848) with a member on the target is active: it is
// described as such and never written.
func TestSyncSkipsActiveConsumerGroup(t *testing.T) {
	e := newEnv(t)
	e.topic("clicks", 1)
	e.tr.mirrored("clicks", 0, 10, 0)
	e.commitSource("busy848", "clicks", 0, 7, "")
	e.join848("busy848", prefix+"clicks")

	rep := e.syncOnce(e.config())
	wantPartition(t, rep, "busy848", "clicks", 0, groupsync.StatusSkippedActive, groupsync.StatusSynced)
	if g := rep.Groups[0]; g.TargetType != "consumer" || g.TargetState == "Empty" || g.TargetMembers != 1 {
		t.Fatalf("target group: got %s %q members %d, want a consumer group with 1 member", g.TargetType, g.TargetState, g.TargetMembers)
	}
	e.wantTarget("busy848", prefix+"clicks", 0, -1)
}

// A consumer group of the new protocol whose member left is written, as an empty classic group
// is, and a new-protocol consumer joining it reads from E(G).
func TestSyncWritesIdleConsumerGroup(t *testing.T) {
	e := newEnv(t)
	e.topic("clicks", 1)
	e.tr.mirrored("clicks", 0, 10, 0)
	e.commitSource("idle848", "clicks", 0, 7, "m")
	testkit.Commit(t, e.tgtAdm, "idle848", prefix+"clicks", 0, 2, "") // as the old consumer left it
	member := e.join848("idle848", prefix+"clicks")
	member.Close()
	for {
		d, err := e.tgtAdm.DescribeConsumerGroups(e.ctx, "idle848")
		if err == nil && d["idle848"].Err == nil && len(d["idle848"].Members) == 0 {
			break
		}
		if e.ctx.Err() != nil {
			t.Fatalf("the member never left: %+v %v", d, err)
		}
		time.Sleep(20 * time.Millisecond)
	}

	rep := e.syncOnce(e.config())
	wantPartition(t, rep, "idle848", "clicks", 0, groupsync.StatusSynced, groupsync.StatusSynced)
	if g := rep.Groups[0]; g.TargetType != "consumer" || g.TargetState != "Empty" {
		t.Fatalf("target group: got %s %q, want an Empty consumer group", g.TargetType, g.TargetState)
	}
	e.wantTarget("idle848", prefix+"clicks", 0, 7)
}

// A share group on the source (KIP-932) is reported with why it is not migrated, never
// silently left out.
func TestSyncReportsShareGroup(t *testing.T) {
	e := newEnv(t)
	e.topic("clicks", 1)
	e.tr.mirrored("clicks", 0, 10, 0)
	seeds := e.src.OptValue(kgo.SeedBrokers).([]string)
	sc, err := kgo.NewClient(kgo.SeedBrokers(seeds...), kgo.ShareGroup("queue"), kgo.ConsumeTopics("clicks"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(sc.Close)
	for {
		pctx, cancel := context.WithTimeout(e.ctx, 200*time.Millisecond)
		sc.PollRecords(pctx, 1)
		cancel()
		if listed, _ := e.srcAdm.ListGroups(e.ctx); listed["queue"].GroupType == "share" {
			break
		}
		if e.ctx.Err() != nil {
			t.Fatal("the share group was never listed")
		}
	}
	e.commitSource("plain", "clicks", 0, 5, "")

	rep := e.syncOnce(e.config())
	if len(rep.Groups) != 2 || rep.Groups[0].Group != "plain" || rep.Groups[1].Group != "queue" {
		t.Fatalf("groups: got %+v, want plain and queue, sorted", rep.Groups)
	}
	q := rep.Groups[1]
	if q.Type != "share" || !strings.Contains(q.NotMigrated, "share group (KIP-932)") || len(q.Partitions) != 0 || q.Error != "" {
		t.Fatalf("share group: got %+v, want it reported as not migrated, with why", q)
	}
	wantPartition(t, rep, "plain", "clicks", 0, groupsync.StatusSynced, groupsync.StatusSynced)
}

// A streams group (KIP-1071) on the source is a Kafka Streams application, which kreconcile
// moves as one unit once it is stopped: the sync reports it, naming kreconcile, and never
// writes it. kfake has no streams groups: the source's listing names one.
func TestSyncReportsStreamsGroup(t *testing.T) {
	e := newEnv(t)
	e.topic("clicks", 1)
	e.tr.mirrored("clicks", 0, 10, 0)
	e.commitSource("plain", "clicks", 0, 5, "")
	e.srcK.ControlKey(int16(kmsg.ListGroups), func(kr kmsg.Request) (kmsg.Response, error, bool) {
		e.srcK.KeepControl()
		resp := kr.(*kmsg.ListGroupsRequest).ResponseKind().(*kmsg.ListGroupsResponse)
		for _, g := range []struct{ name, typ, proto, state string }{{"plain", "classic", "", "Empty"}, {"wordcount", "streams", "streams", "Stable"}} {
			lg := kmsg.NewListGroupsResponseGroup()
			lg.Group, lg.GroupType, lg.ProtocolType, lg.GroupState = g.name, g.typ, g.proto, g.state
			resp.Groups = append(resp.Groups, lg)
		}
		return resp, nil, true
	})

	rep := e.syncOnce(e.config())
	if len(rep.Groups) != 2 || rep.Groups[0].Group != "plain" || rep.Groups[1].Group != "wordcount" {
		t.Fatalf("groups: got %+v, want plain and wordcount, sorted", rep.Groups)
	}
	w := rep.Groups[1]
	if w.Type != "streams" || !strings.Contains(w.NotMigrated, "kreconcile groups --group") || len(w.Partitions) != 0 || w.Error != "" {
		t.Fatalf("streams group: got %+v, want it reported as not synced, naming kreconcile", w)
	}
	if _, _, ok := testkit.Committed(t, e.tgtAdm, "wordcount", prefix+"clicks", 0); ok {
		t.Fatal("the streams group was written on the target")
	}
	wantPartition(t, rep, "plain", "clicks", 0, groupsync.StatusSynced, groupsync.StatusSynced)
}
