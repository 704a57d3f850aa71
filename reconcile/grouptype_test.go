package reconcile

import (
	"context"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/kmigrate/kmigrate/internal/testkit"
)

// consumer848 starts a member of group on topic with the consumer group protocol of KIP-848
// (the broker assigns), waits until the group lists as a "consumer" group with it as member,
// and returns it with the records it polled meanwhile; the caller closes it to leave.
func consumer848(t *testing.T, cl *kgo.Client, group, topic string) (*kgo.Client, []*kgo.Record) {
	t.Helper()
	cons, err := kgo.NewClient(append(seedsOf(t, cl), kgo.ConsumerGroup(group), kgo.ConsumeTopics(topic),
		kgo.ServerSideBalancer(), kgo.Balancers(kgo.RangeBalancer()), kgo.DisableAutoCommit(),
		kgo.FetchMaxWait(100*time.Millisecond))...)
	if err != nil {
		t.Fatalf("consumer: %v", err)
	}
	t.Cleanup(cons.Close)
	adm := kadm.NewClient(cl)
	ctx := testCtx(t)
	var polled []*kgo.Record
	for {
		pctx, cancel := context.WithTimeout(ctx, 200*time.Millisecond)
		polled = append(polled, cons.PollRecords(pctx, 100).Records()...)
		cancel()
		listed, _ := adm.ListGroups(ctx)
		d, _ := adm.DescribeConsumerGroups(ctx, group)
		if listed[group].GroupType == "consumer" && len(d[group].Members) == 1 && d[group].State == "Stable" {
			return cons, polled
		}
		if ctx.Err() != nil {
			t.Fatalf("group %s never became a stable consumer group: listed %+v, described %+v", group, listed[group], d[group])
		}
	}
}

// waitEmpty848 waits until the consumer group has no member.
func waitEmpty848(t *testing.T, adm *kadm.Client, group string) {
	t.Helper()
	ctx := testCtx(t)
	for {
		d, err := adm.DescribeConsumerGroups(ctx, group)
		if err == nil && d[group].Err == nil && len(d[group].Members) == 0 {
			return
		}
		if ctx.Err() != nil {
			t.Fatalf("group %s still has members: %+v (%v)", group, d[group], err)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// TestApplyConsumerGroupIdle: on the target the group is a consumer group of the new protocol
// (KIP-848) that its consumer left. Plan describes it as such (the classic DescribeGroups of
// Kafka 4 does not find it), apply writes E(G) to it, and a new-protocol consumer joining it
// reads from E(G).
func TestApplyConsumerGroupIdle(t *testing.T) {
	a := newApplyEnv(t)
	group := "kip848-idle-" + a.topic
	testkit.Commit(t, a.srcAdm, group, a.topic, 0, 30, "src-meta-0")
	testkit.Commit(t, a.dstAdm, group, a.topic, 0, 21, "old-meta") // behind, as MM2 leaves it
	cons, _ := consumer848(t, a.dst, group, a.topic)
	cons.Close()
	waitEmpty848(t, a.dstAdm, group)

	res := a.plan(t, group)
	g := findGroup(t, res, group)
	if g.Err != "" || g.TargetType != "consumer" || g.TargetState != "Empty" {
		t.Fatalf("plan: got error %q, target %s/%s, want no error and an Empty consumer group", g.Err, g.TargetType, g.TargetState)
	}
	if p := findPartition(t, res, group, a.topic, 0); p.Status != StatusBehind || fmtPtr(p.ExactTarget) != "35" {
		t.Fatalf("plan p0: got %s E(G)=%s, want behind, 35", p.Status, fmtPtr(p.ExactTarget))
	}
	if err := Apply(testCtx(t), a.dst, res, ApplyConfig{Backup: filepath.Join(t.TempDir(), "backup.json")}); err != nil {
		t.Fatalf("Apply: %v", err)
	}
	if g := findGroup(t, res, group); !g.Applied || g.Refused != "" {
		t.Fatalf("apply: got applied=%v refused=%q, want applied", g.Applied, g.Refused)
	}
	if at, meta, ok := testkit.Committed(t, a.dstAdm, group, a.topic, 0); !ok || at != 35 || meta != "src-meta-0" {
		t.Fatalf("target commit p0: got %d %q (exists %v), want 35 src-meta-0", at, meta, ok)
	}

	// A new-protocol consumer of the group starts at E(G) on partition 0.
	cons, polled := consumer848(t, a.dst, group, a.topic)
	ctx := testCtx(t)
	var first *kgo.Record
	for first == nil && ctx.Err() == nil {
		for _, r := range polled {
			if r.Partition == 0 && first == nil {
				first = r
			}
		}
		polled = cons.PollRecords(ctx, 100).Records()
	}
	if first == nil || first.Offset != 35 {
		t.Fatalf("first record the consumer read on p0: %+v, want offset 35", first)
	}
}

// TestApplyRefusesActiveConsumerGroup: a consumer group of the new protocol with a member on
// the target is active: plan says so, apply refuses it and writes nothing.
func TestApplyRefusesActiveConsumerGroup(t *testing.T) {
	a := newApplyEnv(t)
	group := "kip848-active-" + a.topic
	testkit.Commit(t, a.srcAdm, group, a.topic, 0, 30, "")
	testkit.Commit(t, a.dstAdm, group, a.topic, 0, 21, "")
	consumer848(t, a.dst, group, a.topic)

	res := a.plan(t, group)
	g := findGroup(t, res, group)
	if g.Err != "" || g.TargetType != "consumer" || g.TargetState != "Stable" {
		t.Fatalf("plan: got error %q, target %s/%s, want a Stable consumer group", g.Err, g.TargetType, g.TargetState)
	}
	if err := Apply(testCtx(t), a.dst, res, ApplyConfig{Backup: filepath.Join(t.TempDir(), "backup.json")}); err != nil {
		t.Fatalf("Apply: %v", err)
	}
	g = findGroup(t, res, group)
	if !strings.Contains(g.Refused, "is Stable with 1 member") || !strings.Contains(g.Refused, "group.protocol=consumer") || g.Applied || res.Applied {
		t.Errorf("refusal: got refused=%q applied=%v, want the active consumer group named and nothing applied", g.Refused, g.Applied)
	}
	if at, _, _ := testkit.Committed(t, a.dstAdm, group, a.topic, 0); at != 21 {
		t.Errorf("target commit: got %d, want 21 (unchanged)", at)
	}
}

// TestPlanSourceConsumerGroup: on the source the group uses the new protocol and has left;
// plan reads its offsets and answers exactly, as for a classic group.
func TestPlanSourceConsumerGroup(t *testing.T) {
	a := newApplyEnv(t)
	group := "kip848-src-" + a.topic
	testkit.Commit(t, a.srcAdm, group, a.topic, 0, 30, "")
	testkit.Commit(t, a.dstAdm, group, a.topic, 1, 40, "") // the target group exists, classic
	cons, _ := consumer848(t, a.src, group, a.topic)
	cons.Close()
	waitEmpty848(t, a.srcAdm, group)
	res := a.plan(t, group)
	g := findGroup(t, res, group)
	if g.Err != "" || g.SourceType != "consumer" || g.SourceState != "Empty" {
		t.Fatalf("plan: got error %q, source %s/%s, want an Empty consumer group", g.Err, g.SourceType, g.SourceState)
	}
	if g.TargetType != "classic" || g.TargetState != "Empty" {
		t.Errorf("plan: target %s/%s, want an Empty classic group", g.TargetType, g.TargetState)
	}
	if p := findPartition(t, res, group, a.topic, 0); p.Status != StatusMissingTargetOffset || fmtPtr(p.ExactTarget) != "35" {
		t.Fatalf("plan p0: got %s E(G)=%s, want missing-target-offset, 35", p.Status, fmtPtr(p.ExactTarget))
	}
}

// TestPlanShareGroupNotMigrated: a share group (KIP-932) on the source is listed with why it
// is not migrated; nothing of it is read or written.
func TestPlanShareGroupNotMigrated(t *testing.T) {
	a := newApplyEnv(t)
	group := "share-" + a.topic
	sc, err := kgo.NewClient(append(seedsOf(t, a.src), kgo.ShareGroup(group), kgo.ConsumeTopics(a.topic))...)
	if err != nil {
		t.Fatalf("share consumer: %v", err)
	}
	t.Cleanup(sc.Close)
	ctx := testCtx(t)
	for {
		pctx, cancel := context.WithTimeout(ctx, 200*time.Millisecond)
		sc.PollRecords(pctx, 1)
		cancel()
		if listed, _ := a.srcAdm.ListGroups(ctx); listed[group].GroupType == "share" {
			break
		}
		if ctx.Err() != nil {
			t.Fatal("the share group was never listed")
		}
	}
	res := a.plan(t, group)
	g := findGroup(t, res, group)
	if g.Err != "" || g.SourceType != "share" || !strings.Contains(g.NotMigrated, "share group (KIP-932)") || len(g.Partitions) != 0 {
		t.Fatalf("plan: got %+v, want the share group listed as not migrated, with why", g)
	}
	if err := Apply(testCtx(t), a.dst, res, ApplyConfig{Backup: filepath.Join(t.TempDir(), "backup.json")}); err != nil || res.Applied {
		t.Fatalf("Apply: %v (applied %v), want nothing written", err, res.Applied)
	}
}

// TestRollbackConsumerGroup: a rollback restores an empty consumer group of the new protocol
// and refuses one with a member.
func TestRollbackConsumerGroup(t *testing.T) {
	a := newApplyEnv(t)
	group := "kip848-rb-" + a.topic
	testkit.Commit(t, a.srcAdm, group, a.topic, 0, 30, "")
	testkit.Commit(t, a.dstAdm, group, a.topic, 0, 21, "old")
	cons, _ := consumer848(t, a.dst, group, a.topic)
	cons.Close()
	waitEmpty848(t, a.dstAdm, group)
	backup := filepath.Join(t.TempDir(), "backup.json")
	res := a.plan(t, group)
	if err := Apply(testCtx(t), a.dst, res, ApplyConfig{Backup: backup}); err != nil || !res.Applied {
		t.Fatalf("Apply: %v (applied %v)", err, res.Applied)
	}

	member, _ := consumer848(t, a.dst, group, a.topic)
	rb, err := Rollback(testCtx(t), a.dst, backup, RollbackConfig{})
	if err == nil || len(rb.Groups) != 1 || !strings.Contains(rb.Groups[0].Refused, "group.protocol=consumer") {
		t.Fatalf("rollback with a member: %v %+v, want the consumer group refused", err, rb)
	}
	if at, _, _ := testkit.Committed(t, a.dstAdm, group, a.topic, 0); at != 35 {
		t.Fatalf("target commit after the refused rollback: %d, want 35", at)
	}
	member.Close()
	waitEmpty848(t, a.dstAdm, group)
	rb, err = Rollback(testCtx(t), a.dst, backup, RollbackConfig{})
	if err != nil || rb.Groups[0].Restored != 1 {
		t.Fatalf("rollback: %v %+v, want 1 restored", err, rb)
	}
	if at, meta, _ := testkit.Committed(t, a.dstAdm, group, a.topic, 0); at != 21 || meta != "old" {
		t.Fatalf("target commit after the rollback: %d %q, want 21 old", at, meta)
	}
}
