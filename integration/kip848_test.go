package integration

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/kmigrate/kmigrate/integration/cluster"
	"github.com/kmigrate/kmigrate/reconcile"
)

// k848Records is how many records the source topic holds, k848G the group's offset there, and
// k848Txn how many records each target transaction copies (its commit marker takes an offset,
// so E(G) is not G).
const (
	k848Records = 100
	k848G       = 60
	k848Txn     = 10
)

// TestKIP848Reconcile runs the consumer group protocol of KIP-848 on a Kafka 4.3.1 target of a
// 2.3.0 source. The group consumed 60 of 100 records on the source (classic protocol); on the
// target, where the copy sits in transactions, a consumer with group.protocol=consumer ran once
// and left, so the group is a "consumer"-type group the classic DescribeGroups does not find.
// kreconcile groups --apply commits E(G) on it, and Kafka 4.3.1's own console consumer with
// group.protocol=consumer then reads exactly the 40 records the group had left. With a member
// of the new protocol active on the target, kreconcile refuses to write the group.
func TestKIP848Reconcile(t *testing.T) {
	bedParallel(t)
	start := time.Now()
	ctx, cancel := context.WithTimeout(context.Background(), 6*time.Minute)
	defer cancel()
	topic, group := bedUnique("kip848"), bedUnique("kip848-group")
	src, dst, recs := k848Bed(ctx, t, cluster.V230, topic, group)
	rcCommit(t, dst, group, topic, 0, 22, "") // behind, where a mirror's checkpoint may leave it

	// A new-protocol consumer runs on the target and leaves: the group is now of type consumer.
	member := k848Member(ctx, t, dst, group, topic)
	member.Close()
	adm := bedAdmin(t, dst)
	k848WaitEmpty(ctx, t, adm, group, "the consumer group to be empty")
	listed, err := adm.ListGroups(ctx)
	if err != nil {
		t.Fatalf("list groups on the target: %v", err)
	}
	classic, err := adm.DescribeGroups(ctx, group)
	if err != nil {
		t.Fatalf("describe groups on the target: %v", err)
	}
	t.Logf("target group before the apply: listed as type %q state %q; the classic DescribeGroups answers state %q, %v",
		listed[group].GroupType, listed[group].State, classic[group].State, classic[group].Err)
	if listed[group].GroupType != "consumer" || !errors.Is(classic[group].Err, kerr.GroupIDNotFound) {
		t.Fatalf("the target group is not the consumer group the classic describe misses: listed %+v, described %+v", listed[group], classic[group])
	}

	bin := bedBuild(t, "kreconcile")
	kreconcile := filepath.Join(bin, "kreconcile")
	props := filepath.Join(t.TempDir(), "mm2.properties")
	if err := os.WriteFile(props, []byte(bedProperties(src, dst, "source", "target", topic)), 0o600); err != nil {
		t.Fatal(err)
	}
	code, out, errOut := bedOutput(t, kreconcile, "groups", "--mm2-config", props, "--group", group, "--apply",
		"--backup", filepath.Join(t.TempDir(), "backup.json"), "--format", "json")
	res := k848Result(t, out)
	g := rcGroup(t, res, group)
	p := rcPartition(t, res, group, topic)
	t.Logf("kreconcile groups --apply: exit %d, target %s/%s, E(G) %s, %s", code, g.TargetType, g.TargetState, k848Offset(p.ExactTarget), p.Action)
	if code != 0 || g.Err != "" || !g.Applied || g.TargetType != "consumer" {
		t.Fatalf("kreconcile groups --apply: exit %d, group %+v, want the consumer group applied\n%s\n%s", code, g, out, errOut)
	}
	truth := rcTruth(t, bedReadPartition(ctx, t, src, topic, 0, 0), bedReadPartition(ctx, t, dst, topic, 0, 0), k848G)
	hi := rcReadable(ctx, t, dst, topic, 0, truth)
	if got := rcCommitted(t, dst, group, topic, 0); got == nil || *got < truth || *got > hi || p.ExactTarget == nil || *p.ExactTarget != *got {
		t.Fatalf("target commit %s, plan's E(G) %s, want the same, within the true E(G) %d-%d", k848Offset(got), k848Offset(p.ExactTarget), truth, hi)
	}

	// Kafka 4.3.1's console consumer joins with the new protocol and reads from E(G).
	read := k848ConsoleConsumer(ctx, t, dst, group, topic)
	want := k848Records - k848G
	ends := []string{"", ""}
	if len(read) > 0 {
		ends = []string{read[0], read[len(read)-1]}
	}
	t.Logf("console consumer (group.protocol=consumer): read %d records, want the %d the group had left (E(G)=%d); first %q, last %q",
		len(read), want, truth, ends[0], ends[1])
	if len(read) != want {
		t.Fatalf("console consumer read %d records, want %d", len(read), want)
	}
	for i, v := range read {
		if w := string(recs[k848G+i].Value); v != w {
			t.Fatalf("console consumer record %d: got %q, want %q", i, v, w)
		}
	}

	// A member of the new protocol is active on the target: kreconcile never writes the group.
	before := rcCommitted(t, dst, group, topic, 0)
	member = k848Member(ctx, t, dst, group, topic)
	defer member.Close()
	code, out, errOut = bedOutput(t, kreconcile, "groups", "--mm2-config", props, "--group", group, "--apply", "--allow-rewind",
		"--backup", filepath.Join(t.TempDir(), "backup2.json"), "--format", "json")
	g = rcGroup(t, k848Result(t, out), group)
	t.Logf("kreconcile groups --apply --allow-rewind with an active member: exit %d, refused: %s", code, g.Refused)
	if code != 1 || g.Applied || !strings.Contains(g.Refused, "group.protocol=consumer") || !strings.Contains(g.Refused, "1 member") {
		t.Fatalf("with an active member: exit %d, group %+v, want exit 1 and the group refused\n%s", code, g, errOut)
	}
	if after := rcCommitted(t, dst, group, topic, 0); k848Offset(after) != k848Offset(before) {
		t.Fatalf("target commit moved from %s to %s while refused", k848Offset(before), k848Offset(after))
	}
	t.Logf("KIP-848 on 2.3.0 -> 4.3.1 took %s", time.Since(start).Round(time.Second))
}

// k848Bed starts a source of srcVersion and a 4.3.1 target, each with topic (one partition):
// the source holds k848Records records (keys k0 to k4, values topic-000 on), the target their
// copy in transactions (k848CopyInTransactions), and group's offset on the source is k848G. It
// returns the records.
func k848Bed(ctx context.Context, t *testing.T, srcVersion, topic, group string) (src, dst cluster.Cluster, recs []*kgo.Record) {
	t.Helper()
	src = cluster.StartT(t, cluster.Spec{Version: srcVersion, Name: "source"})
	dst = cluster.StartT(t, cluster.Spec{Version: cluster.V431, Name: "target"})
	bedCreateTopic(t, src, topic, 1, nil)
	bedCreateTopic(t, dst, topic, 1, nil)
	recs = make([]*kgo.Record, k848Records)
	for i := range recs {
		recs[i] = &kgo.Record{Key: fmt.Appendf(nil, "k%d", i%5), Value: fmt.Appendf(nil, "%s-%03d", topic, i)}
	}
	bedProduce(ctx, t, src, topic, 0, recs)
	k848CopyInTransactions(ctx, t, dst, topic, recs)
	rcCommit(t, src, group, topic, 0, k848G, "")
	return src, dst, recs
}

// k848WaitEmpty waits (what in the failure) until the consumer group (KIP-848) group that adm
// describes has no member.
func k848WaitEmpty(ctx context.Context, t *testing.T, adm *kadm.Client, group, what string) {
	t.Helper()
	bedWaitFor(ctx, t, 200*time.Millisecond, what, func() string {
		d, err := adm.DescribeConsumerGroups(ctx, group)
		if err != nil || d[group].Err != nil || len(d[group].Members) != 0 {
			return fmt.Sprintf("%+v %v", d[group], err)
		}
		return ""
	})
}

// k848CopyInTransactions copies recs to topic/0 on c in transactions of k848Txn records, as a
// transactional mirror writes them.
func k848CopyInTransactions(ctx context.Context, t *testing.T, c cluster.Cluster, topic string, recs []*kgo.Record) {
	t.Helper()
	cl := bedClient(t, c.Bootstrap(), kgo.TransactionalID(bedUnique("kip848-copy")), kgo.RecordPartitioner(kgo.ManualPartitioner()),
		kgo.DefaultProduceTopic(topic))
	for from := 0; from < len(recs); from += k848Txn {
		if err := cl.BeginTransaction(); err != nil {
			t.Fatal(err)
		}
		for _, r := range recs[from:min(from+k848Txn, len(recs))] {
			if err := cl.ProduceSync(ctx, &kgo.Record{Topic: topic, Partition: 0, Key: r.Key, Value: r.Value}).FirstErr(); err != nil {
				t.Fatalf("copy to %s on %s: %v", topic, c.Name(), err)
			}
		}
		if err := cl.EndTransaction(ctx, kgo.TryCommit); err != nil {
			t.Fatalf("commit the copy's transaction on %s: %v", c.Name(), err)
		}
	}
}

// k848Member joins group on c with the consumer group protocol of KIP-848 (auto-commit off)
// and returns once the group lists it as a member. The caller closes it to leave.
func k848Member(ctx context.Context, t *testing.T, c cluster.Cluster, group, topic string) *kgo.Client {
	t.Helper()
	cl, err := kgo.NewClient(kgo.SeedBrokers(c.Bootstrap()...), kgo.ConsumerGroup(group), kgo.ConsumeTopics(topic),
		kgo.ServerSideBalancer(), kgo.Balancers(kgo.RangeBalancer()), kgo.DisableAutoCommit(),
		kgo.FetchMaxWait(200*time.Millisecond))
	if err != nil {
		t.Fatal(err)
	}
	adm := bedAdmin(t, c)
	bedWaitFor(ctx, t, 0, "a member of the new protocol in the group", func() string {
		pctx, cancel := context.WithTimeout(ctx, 500*time.Millisecond)
		cl.PollRecords(pctx, 1)
		cancel()
		d, err := adm.DescribeConsumerGroups(ctx, group)
		if err != nil || d[group].Err != nil || len(d[group].Members) != 1 {
			return fmt.Sprintf("%+v %v", d[group], err)
		}
		return ""
	})
	return cl
}

// k848ConsoleConsumer runs Kafka 4.3.1's console consumer as group on topic with
// group.protocol=consumer until no record arrives for 15 s, and returns the values it printed.
func k848ConsoleConsumer(ctx context.Context, t *testing.T, c cluster.Cluster, group, topic string) []string {
	t.Helper()
	return bedConsole(ctx, t, c, topic, func(line string) bool { return strings.HasPrefix(line, topic+"-") },
		"--group", group, "--consumer-property", "group.protocol=consumer")
}

func k848Result(t *testing.T, out string) *reconcile.Result {
	t.Helper()
	var res reconcile.Result
	if err := json.Unmarshal([]byte(out), &res); err != nil {
		t.Fatalf("kreconcile JSON: %v\n%s", err, out)
	}
	return &res
}

func k848Offset(p *int64) string {
	if p == nil {
		return "none"
	}
	return fmt.Sprint(*p)
}

// TestKIP848Plan4To4 plans a 4.3.1 -> 4.3.1 flow whose source group used the consumer group
// protocol of KIP-848 and left: kreconcile describes it by its type on the source and answers
// E(G) exactly. A share group of the source (KIP-932) is listed as not migrated, with why,
// when the source runs share groups.
func TestKIP848Plan4To4(t *testing.T) {
	bedParallel(t)
	start := time.Now()
	ctx, cancel := context.WithTimeout(context.Background(), 6*time.Minute)
	defer cancel()
	topic, group, share := bedUnique("kip848-44"), bedUnique("kip848-44-group"), bedUnique("kip848-44-share")
	src, dst, _ := k848Bed(ctx, t, cluster.V431, topic, group)
	member := k848Member(ctx, t, src, group, topic)
	member.Close()

	// A share group on the source, if the source runs them.
	sc, err := kgo.NewClient(kgo.SeedBrokers(src.Bootstrap()...), kgo.ShareGroup(share), kgo.ConsumeTopics(topic))
	if err != nil {
		t.Fatal(err)
	}
	defer sc.Close()
	sharing := false
	adm := bedAdmin(t, src)
	for i := 0; i < 20 && !sharing; i++ {
		pctx, pcancel := context.WithTimeout(ctx, 500*time.Millisecond)
		sc.PollRecords(pctx, 1)
		pcancel()
		listed, _ := adm.ListGroups(ctx)
		sharing = listed[share].GroupType == "share"
	}
	t.Logf("share group on the 4.3.1 source: listed %v", sharing)

	k848WaitEmpty(ctx, t, adm, group, "the source consumer group to be empty")
	props := bedProperties(src, dst, "source", "target", topic)
	flow := bedFlow(t, props, "")
	res, err := reconcile.Plan(ctx, bedClient(t, src.Bootstrap()), bedClient(t, dst.Bootstrap()),
		reconcile.Config{Flow: flow, Groups: regexp.MustCompile(regexp.QuoteMeta(group) + "|" + regexp.QuoteMeta(share))})
	if err != nil {
		t.Fatalf("Plan: %v", err)
	}
	g := rcGroup(t, res, group)
	p := rcPartition(t, res, group, topic)
	truth := rcTruth(t, bedReadPartition(ctx, t, src, topic, 0, 0), bedReadPartition(ctx, t, dst, topic, 0, 0), k848G)
	hi := rcReadable(ctx, t, dst, topic, 0, truth)
	t.Logf("plan: source group %s/%s, G=%d, E(G)=%s (true %d-%d), %s", g.SourceType, g.SourceState, p.SourceCommitted, k848Offset(p.ExactTarget), truth, hi, p.Status)
	if g.Err != "" || g.SourceType != "consumer" || g.SourceState != "Empty" || p.ExactTarget == nil || *p.ExactTarget < truth || *p.ExactTarget > hi {
		t.Fatalf("plan of the consumer group: %+v, partition %+v, want an Empty consumer group with E(G) within %d-%d", g, p, truth, hi)
	}
	if sharing {
		sg := rcGroup(t, res, share)
		t.Logf("plan: share group %s: not migrated: %s", share, sg.NotMigrated)
		if sg.SourceType != "share" || !strings.Contains(sg.NotMigrated, "KIP-932") || len(sg.Partitions) != 0 || sg.Err != "" {
			t.Fatalf("plan of the share group: %+v, want it listed as not migrated", sg)
		}
	}
	t.Logf("KIP-848 plan on 4.3.1 -> 4.3.1 took %s", time.Since(start).Round(time.Second))
}
