package integration

import (
	"bytes"
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/kmigrate/kmigrate/integration/cluster"
	"github.com/kmigrate/kmigrate/logread"
	"github.com/kmigrate/kmigrate/mm2"
	"github.com/kmigrate/kmigrate/reconcile"
)

// kreconcile's plan on real brokers. Each test computes the true E(G) on its own,
// by reading both partitions whole and matching unique values, and checks Plan against it.

// rcTruth is E(G) computed from the whole partitions: 1 + the last target offset holding the
// value of the largest source record below G; with none below G, the first target offset
// holding the value of the first source record at or after G. Values must be unique.
func rcTruth(t *testing.T, srcRecs, dstRecs []*kgo.Record, g int64) int64 {
	t.Helper()
	var prev, next *kgo.Record
	for _, r := range srcRecs {
		if r.Offset < g {
			prev = r
		} else if next == nil {
			next = r
		}
	}
	if prev != nil {
		last := int64(-1)
		for _, r := range dstRecs {
			if bytes.Equal(r.Value, prev.Value) {
				last = r.Offset
			}
		}
		if last < 0 {
			t.Fatalf("truth: source record %d (%q) is not on the target", prev.Offset, prev.Value)
		}
		return last + 1
	}
	if next != nil {
		for _, r := range dstRecs {
			if bytes.Equal(r.Value, next.Value) {
				return r.Offset
			}
		}
		t.Fatalf("truth: source record %d (%q) is not on the target", next.Offset, next.Value)
	}
	if len(dstRecs) == 0 {
		return 0
	}
	return dstRecs[len(dstRecs)-1].Offset + 1
}

// rcReadable is where the span of offsets that are all E(G) ends, given its start truth
// (rcTruth): the offset of the first record a read_committed reader gets at or after truth, or
// the partition's end when none. Between the two a transactional target holds only markers
// and aborted records, so every offset in [truth, rcReadable] serves a read_committed reader
// alike; kreconcile commits the last of them, which also spares a read_uncommitted one.
func rcReadable(ctx context.Context, t *testing.T, c cluster.Cluster, topic string, part int32, truth int64) int64 {
	t.Helper()
	end := bedEndOffsets(ctx, t, c, topic)[part]
	next := end
	o := logread.Options{Cluster: c.Name(), Topic: topic, Partition: part, From: truth, To: end, Committed: true, Short: logread.ShortStop, MaxRecords: 1}
	if err := logread.Each(ctx, bedClient(t, c.Bootstrap()), o, func(r *kgo.Record) (bool, error) {
		next = r.Offset
		return false, nil
	}); err != nil {
		t.Fatalf("read %s/%d on %s from %d: %v", topic, part, c.Name(), truth, err)
	}
	return next
}

func rcCommit(t *testing.T, c cluster.Cluster, group, topic string, part int32, at int64, meta string) {
	t.Helper()
	offs := kadm.Offsets{}
	offs.Add(kadm.Offset{Topic: topic, Partition: part, At: at, LeaderEpoch: -1, Metadata: meta})
	resp, err := bedAdmin(t, c).CommitOffsets(bedCtx(t, time.Minute), group, offs)
	if err == nil {
		err = resp.Error()
	}
	if err != nil {
		t.Fatalf("commit %s %s/%d=%d on %s: %v", group, topic, part, at, c.Name(), err)
	}
}

// rcCommitted is the group's offset of topic/part on c, or nil.
func rcCommitted(t *testing.T, c cluster.Cluster, group, topic string, part int32) *int64 {
	t.Helper()
	offs, err := bedAdmin(t, c).FetchOffsets(bedCtx(t, time.Minute), group)
	if err != nil {
		t.Fatalf("fetch offsets of %s on %s: %v", group, c.Name(), err)
	}
	o, ok := offs.Lookup(topic, part)
	if !ok || o.Err != nil || o.At < 0 {
		return nil
	}
	at := o.At
	return &at
}

func rcPartition(t *testing.T, res *reconcile.Result, group, topic string) *reconcile.Partition {
	t.Helper()
	for gi := range res.Groups {
		if res.Groups[gi].Group != group {
			continue
		}
		for pi := range res.Groups[gi].Partitions {
			if p := &res.Groups[gi].Partitions[pi]; p.Topic == topic {
				return p
			}
		}
	}
	t.Fatalf("plan has no %s/%s", group, topic)
	return nil
}

func rcGroup(t *testing.T, res *reconcile.Result, group string) *reconcile.Group {
	t.Helper()
	for gi := range res.Groups {
		if res.Groups[gi].Group == group {
			return &res.Groups[gi]
		}
	}
	t.Fatalf("plan has no group %s", group)
	return nil
}

// rcConsumeGroup consumes topic on c as group, from its committed offset, until nothing more
// comes for 5 s, and returns the values. It commits nothing.
func rcConsumeGroup(t *testing.T, c cluster.Cluster, group, topic string) [][]byte {
	t.Helper()
	ctx := bedCtx(t, 2*time.Minute)
	cl := bedClient(t, c.Bootstrap(), kgo.ConsumerGroup(group), kgo.ConsumeTopics(topic), kgo.DisableAutoCommit(),
		kgo.ConsumeResetOffset(kgo.NewOffset().AtEnd()), kgo.FetchMaxWait(200*time.Millisecond))
	var out [][]byte
	for idle := 30 * time.Second; ctx.Err() == nil; idle = 5 * time.Second { // the first poll also joins
		pctx, cancel := context.WithTimeout(ctx, idle)
		recs := cl.PollFetches(pctx).Records()
		cancel()
		if len(recs) == 0 {
			break
		}
		out = append(out, rcValues(recs)...)
	}
	cl.LeaveGroup()
	return out
}

func rcValues(recs []*kgo.Record) [][]byte {
	out := make([][]byte, len(recs))
	for i, r := range recs {
		out[i] = r.Value
	}
	return out
}

func rcSameValues(t *testing.T, what string, got, want [][]byte) {
	t.Helper()
	if len(got) != len(want) {
		t.Errorf("%s: got %d records, want %d", what, len(got), len(want))
	}
	for i := 0; i < min(len(got), len(want)); i++ {
		if !bytes.Equal(got[i], want[i]) {
			t.Errorf("%s: record %d: got %q, want %q", what, i, got[i], want[i])
			return
		}
	}
}

// TestReconcileSeed: on the seed fixture (2.3.0 -> 3.7.1 with MirrorMaker 2) the plan shows the
// discrepancy with the fixture's re-read count; after Apply the target lag equals the source
// lag and a consumer of the group on the target reads exactly the unconsumed records.
// Under $KMIGRATE_PAIR (pair_test.go) the target is the pair's, MirrorMaker 2 stays 3.7.1.
func TestReconcileSeed(t *testing.T) {
	bedSkipSource(t, cluster.V230, "the seed fixture's source is Kafka 2.3.0 (runSeedScenarioOn takes the target's version only)")
	_, dstV := bedPair(t)
	f := runSeedScenarioOn(t, dstV, cluster.V371)
	// The cut-over stops the mirror first (docs/cutover.md). A MirrorMaker 2 left running
	// rewrites the group's offset after Apply: its checkpoint task remembers a target group's
	// offsets only when it finds the group empty, and writes its translation (102) to any group
	// it did not find empty, such as one a consumer had joined, once that consumer has left.
	if err := f.MM2.Close(); err != nil {
		t.Fatalf("stop MirrorMaker 2: %v", err)
	}
	flow := bedFlow(t, f.MM2Properties, "")
	src := bedClient(t, f.Source.Bootstrap())
	dst := bedClient(t, f.Target.Bootstrap())
	ctx := bedCtx(t, 3*time.Minute)

	start := time.Now()
	res, err := reconcile.Plan(ctx, src, dst, reconcile.Config{Flow: flow, Groups: regexp.MustCompile(regexp.QuoteMeta(f.Group))})
	if err != nil {
		t.Fatalf("Plan: %v", err)
	}
	t.Logf("plan took %s", time.Since(start).Round(time.Millisecond))
	bedReport(t, "reconcile-seed-kreconcile", res)
	p := rcPartition(t, res, f.Group, f.Topic)
	t.Logf("plan: G=%d target=%s E=%s checkpoint=%s status=%s redelivered=%d proof=%q", p.SourceCommitted, fmtP(p.TargetCommitted), fmtP(p.ExactTarget), fmtP(p.Checkpoint), p.Status, p.RedeliveredIfUnchanged, p.Proof)
	if p.Status != reconcile.StatusBehind {
		t.Fatalf("status: got %s (%s), want behind", p.Status, p.Reason)
	}
	if p.RedeliveredIfUnchanged != f.Reread {
		t.Errorf("redelivered_if_unchanged: got %d, want the fixture's re-read count %d", p.RedeliveredIfUnchanged, f.Reread)
	}
	if p.Checkpoint == nil || *p.Checkpoint != f.Checkpoint.Downstream || p.CheckpointStatus != reconcile.StatusBehind {
		t.Errorf("checkpoint: got %s (%s), want %d (behind)", fmtP(p.Checkpoint), p.CheckpointStatus, f.Checkpoint.Downstream)
	}
	truth := rcTruth(t, bedReadPartition(ctx, t, f.Source, f.Topic, 0, 0), bedReadPartition(ctx, t, f.Target, f.Topic, 0, 0), f.SourceCommitted)
	if p.ExactTarget == nil || *p.ExactTarget != truth {
		t.Fatalf("exact_target: got %s, want %d", fmtP(p.ExactTarget), truth)
	}

	backup := filepath.Join(t.TempDir(), "backup.json")
	if err := reconcile.Apply(ctx, dst, res, reconcile.ApplyConfig{Backup: backup}); err != nil {
		t.Fatalf("Apply: %v", err)
	}
	bedReport(t, "reconcile-seed-apply-kreconcile", res)
	tc := rcCommitted(t, f.Target, f.Group, f.Topic, 0)
	end := bedEndOffsets(ctx, t, f.Target, f.Topic)[0]
	if tc == nil || end-*tc != f.SourceLag {
		t.Errorf("target lag after apply: got %d (end %d, committed %s), want the source lag %d", end-deref(tc), end, fmtP(tc), f.SourceLag)
	}
	got := rcConsumeGroup(t, f.Target, f.Group, f.Topic)
	rcSameValues(t, "consumer of the group on the target after apply", got, f.Unconsumed)

	// Apply twice: nothing changes.
	res2, err := reconcile.Plan(ctx, src, dst, reconcile.Config{Flow: flow, Groups: regexp.MustCompile(regexp.QuoteMeta(f.Group))})
	if err != nil {
		t.Fatalf("second Plan: %v", err)
	}
	if p := rcPartition(t, res2, f.Group, f.Topic); p.Status != reconcile.StatusExact {
		t.Errorf("second plan: got %s, want exact", p.Status)
	}
}

func fmtP(p *int64) string {
	if p == nil {
		return "null"
	}
	return fmt.Sprint(*p)
}

func deref(p *int64) int64 {
	if p == nil {
		return 0
	}
	return *p
}

// rcProperties is an mm2.properties for the flow source->destination of topics, as the seed
// case runs it (IdentityReplicationPolicy, offset syncs on the target, group offset sync on),
// with 2 s intervals and replication factors 1 (explicit, for 2.3.0).
func rcProperties(src, dst cluster.Cluster, topics ...string) string {
	return bedProperties(src, dst, "source", "destination", strings.Join(topics, ","), append(append([]string(nil), bedMM2Worker...),
		"refresh.topics.interval.seconds=2",
		"refresh.groups.interval.seconds=2",
		"emit.heartbeats.interval.seconds=2",
		"emit.checkpoints.interval.seconds=2",
		"sync.group.offsets.enabled=true",
		"sync.group.offsets.interval.seconds=2",
	)...)
}

// rcRecords makes records "<prefix>-<i>" for i in [from, to) with key "<keyPrefix><i>".
func rcRecords(prefix, keyPrefix string, from, to int) []*kgo.Record {
	var out []*kgo.Record
	for i := from; i < to; i++ {
		out = append(out, &kgo.Record{Key: fmt.Appendf(nil, "%s%d", keyPrefix, i), Value: fmt.Appendf(nil, "%s-%d", prefix, i)})
	}
	return out
}

// rcProduceTxn writes records in one committed transaction on c.
func rcProduceTxn(t *testing.T, c cluster.Cluster, topic string, recs ...*kgo.Record) {
	t.Helper()
	ctx := bedCtx(t, time.Minute)
	cl := bedClient(t, c.Bootstrap(), kgo.RecordPartitioner(kgo.ManualPartitioner()), kgo.TransactionalID(bedUnique("rc-txn")))
	if err := cl.BeginTransaction(); err != nil {
		t.Fatalf("begin transaction: %v", err)
	}
	for _, r := range recs {
		r.Topic, r.Partition = topic, 0
	}
	if err := cl.ProduceSync(ctx, recs...).FirstErr(); err != nil {
		t.Fatalf("produce in transaction to %s on %s: %v", topic, c.Name(), err)
	}
	if err := cl.EndTransaction(ctx, kgo.TryCommit); err != nil {
		t.Fatalf("commit transaction on %s: %v", c.Name(), err)
	}
}

// rcHasValue reports whether topic/0 on c holds a record with value v.
func rcHasValue(ctx context.Context, t *testing.T, c cluster.Cluster, topic string, v []byte) bool {
	t.Helper()
	if _, ok := bedEndOffsets(ctx, t, c, topic)[0]; !ok {
		return false
	}
	for _, r := range bedReadPartition(ctx, t, c, topic, 0, 0) {
		if bytes.Equal(r.Value, v) {
			return true
		}
	}
	return false
}

// TestReconcileCases runs the group cases on Kafka 2.3.0 -> 3.7.1 mirrored by MirrorMaker
// 2: an idle group at the end of a topic, a group at log start, a group whose previous record
// was compacted away, groups at and after a transaction's commit marker, a topic that is not
// mirrored, an active target group (refused, nothing written), apply twice, rollback.
// $KMIGRATE_PAIR (pair_test.go) picks other versions.
func TestReconcileCases(t *testing.T) {
	bedParallel(t)
	srcV, dstV := bedPair(t)
	src := cluster.StartT(t, cluster.Spec{Version: srcV, Name: "source"})
	dst := cluster.StartT(t, cluster.Spec{Version: dstV, Name: "destination"})
	ctx := bedCtx(t, 10*time.Minute)
	run := fmt.Sprintf("%x", time.Now().UnixNano())
	plain, compact, txn, unmirrored := "rc-plain-"+run, "rc-compact-"+run, "rc-txn-"+run, "rc-unmirrored-"+run

	bedCreateTopic(t, src, plain, 1, nil)
	bedProduce(ctx, t, src, plain, 0, rcRecords("plain-"+run, "k", 0, 50))

	// Compacted: records 10..19 are overwritten by 20..29 (same keys), then the segment rolls
	// and the cleaner removes them; G=20 then has no record at G-1..G-10.
	bedCreateTopic(t, src, compact, 1, map[string]*string{"cleanup.policy": bedPtr("compact"), "segment.ms": bedPtr("200"),
		"min.cleanable.dirty.ratio": bedPtr("0.01"), "delete.retention.ms": bedPtr("100"), "min.compaction.lag.ms": bedPtr("0")})
	bedProduce(ctx, t, src, compact, 0, rcRecords("compact-"+run, "c", 0, 20))
	over := rcRecords("compact-"+run+"-new", "c", 10, 20)
	bedProduce(ctx, t, src, compact, 0, over)
	bedWaitFor(ctx, t, 500*time.Millisecond, "the source cleaner to compact "+compact, func() string {
		n := time.Now().UnixNano() // unique keys: nothing else to compact, on either side
		bedProduce(ctx, t, src, compact, 0, []*kgo.Record{{Key: fmt.Appendf(nil, "roll-%d", n), Value: fmt.Appendf(nil, "roll-%d", n)}})
		for _, r := range bedReadPartition(ctx, t, src, compact, 0, 0) {
			if r.Offset == 19 {
				return "offset 19 is still there"
			}
		}
		return ""
	})

	// Transactions: 5 plain records, 5 in a transaction and its commit marker, 5 plain.
	bedCreateTopic(t, src, txn, 1, nil)
	bedProduce(ctx, t, src, txn, 0, rcRecords("txn-"+run, "t", 0, 5))
	rcProduceTxn(t, src, txn, rcRecords("txn-"+run, "t", 5, 10)...)
	// EndTxn returns before the coordinator has written the marker: wait for it, so that the
	// next records come after it.
	bedWaitFor(ctx, t, 500*time.Millisecond, "the commit marker on "+txn, func() string {
		if end := bedEndOffsets(ctx, t, src, txn)[0]; end != 11 {
			return fmt.Sprintf("end offset %d, want 11", end)
		}
		return ""
	})
	bedProduce(ctx, t, src, txn, 0, rcRecords("txn-"+run, "t", 11, 16))

	// Where the commit marker is: the first offset without a record.
	marker := int64(-1)
	var txnOffsets []int64
	for i, r := range bedReadPartition(ctx, t, src, txn, 0, 0) {
		txnOffsets = append(txnOffsets, r.Offset)
		if marker < 0 && r.Offset != int64(i) {
			marker = int64(i)
		}
	}
	t.Logf("source %s record offsets: %v (commit marker at %d)", txn, txnOffsets, marker)
	if marker < 0 {
		t.Fatalf("source %s has no gap for the commit marker: offsets %v", txn, txnOffsets)
	}

	bedCreateTopic(t, src, unmirrored, 1, nil)
	bedProduce(ctx, t, src, unmirrored, 0, rcRecords("unmirrored-"+run, "u", 0, 10))

	type gcase struct {
		group, topic string
		g            int64
	}
	cases := []gcase{
		{"rc-idle-" + run, plain, 50},
		{"rc-start-" + run, plain, 0},
		{"rc-mid-" + run, plain, 25},
		{"rc-compacted-" + run, compact, 20},
		{"rc-txn-marker-" + run, txn, marker},    // G is the marker itself
		{"rc-txn-after-" + run, txn, marker + 1}, // G-1 is the marker
		{"rc-unmirrored-" + run, unmirrored, 3},
		{"rc-active-" + run, plain, 30},
	}
	for _, c := range cases {
		rcCommit(t, src, c.group, c.topic, 0, c.g, "meta-"+c.group)
	}

	props := rcProperties(src, dst, plain, compact, txn)
	m := cluster.StartMM2T(t, cluster.MM2Spec{Properties: props, Target: "destination"})

	// The active group consumes on the target before MM2 could sync it.
	active := cases[len(cases)-1]
	bedCreateTopic(t, dst, plain, 1, nil) // MM2 would create it too; the member needs it now
	member := bedClient(t, dst.Bootstrap(), kgo.ConsumerGroup(active.group), kgo.ConsumeTopics(plain), kgo.DisableAutoCommit(),
		kgo.SessionTimeout(45*time.Second))
	bedWaitFor(ctx, t, 500*time.Millisecond, "the active group to be Stable on the target", func() string {
		pctx, cancel := context.WithTimeout(ctx, time.Second)
		member.PollFetches(pctx)
		cancel()
		d, err := bedAdmin(t, dst).DescribeGroups(ctx, active.group)
		if err != nil {
			return err.Error()
		}
		if s := d[active.group].State; s != "Stable" {
			return "state " + s
		}
		return ""
	})

	lastTxn := rcRecords("txn-"+run, "t", 15, 16)[0].Value
	bedWaitFor(ctx, t, 500*time.Millisecond, "MM2 to mirror every topic and checkpoint the idle group", func() string {
		for _, v := range []struct {
			topic string
			value []byte
		}{{plain, rcRecords("plain-"+run, "k", 49, 50)[0].Value}, {compact, over[len(over)-1].Value}, {txn, lastTxn}} {
			if !rcHasValue(ctx, t, dst, v.topic, v.value) {
				return v.topic + " not mirrored yet"
			}
		}
		if rcCommitted(t, dst, cases[0].group, plain, 0) == nil {
			return "no target offset for the idle group yet"
		}
		return ""
	})
	if err := m.Close(); err != nil { // freeze the target groups
		t.Logf("stop MM2: %v", err)
	}
	before := map[string]*int64{}
	for _, c := range cases {
		before[c.group] = rcCommitted(t, dst, c.group, c.topic, 0)
	}

	flow := bedFlow(t, props, "")
	srcCl, dstCl := bedClient(t, src.Bootstrap()), bedClient(t, dst.Bootstrap())
	cfg := reconcile.Config{Flow: flow, Groups: regexp.MustCompile(`rc-.*-` + run)}
	res, err := reconcile.Plan(ctx, srcCl, dstCl, cfg)
	if err != nil {
		t.Fatalf("Plan: %v", err)
	}
	bedReport(t, "reconcile-cases-kreconcile", res)
	srcData, dstData := map[string][]*kgo.Record{}, map[string][]*kgo.Record{}
	for _, tp := range []string{plain, compact, txn} {
		srcData[tp], dstData[tp] = bedReadPartition(ctx, t, src, tp, 0, 0), bedReadPartition(ctx, t, dst, tp, 0, 0)
	}
	for _, c := range cases {
		t.Run("plan "+strings.TrimSuffix(c.group, "-"+run), func(t *testing.T) {
			p := rcPartition(t, res, c.group, c.topic)
			t.Logf("G=%d target=%s checkpoint=%s(%s) E=%s status=%s reason=%q proof=%q", p.SourceCommitted, fmtP(p.TargetCommitted), fmtP(p.Checkpoint), p.CheckpointStatus, fmtP(p.ExactTarget), p.Status, p.Reason, p.Proof)
			if c.topic == unmirrored {
				if p.Status != reconcile.StatusUnmappable || !strings.Contains(p.Reason, "not mirrored") {
					t.Errorf("got %s %q, want unmappable: topic not mirrored", p.Status, p.Reason)
				}
				return
			}
			truth := rcTruth(t, srcData[c.topic], dstData[c.topic], c.g)
			if p.ExactTarget == nil || *p.ExactTarget != truth {
				t.Fatalf("exact_target: got %s, want %d (%s)", fmtP(p.ExactTarget), truth, p.Reason)
			}
			tc := before[c.group]
			want := reconcile.StatusMissingTargetOffset
			if tc != nil {
				want = map[bool]reconcile.Status{true: reconcile.StatusExact, false: reconcile.StatusBehind}[*tc == truth]
				if *tc > truth {
					want = reconcile.StatusAhead
				}
			}
			if p.Status != want {
				t.Errorf("status: got %s, want %s (target commit %s, E %d)", p.Status, want, fmtP(tc), truth)
			}
			if want == reconcile.StatusBehind && p.RedeliveredIfUnchanged != truth-*tc {
				t.Errorf("redelivered_if_unchanged: got %d, want %d", p.RedeliveredIfUnchanged, truth-*tc)
			}
		})
	}

	backup := filepath.Join(t.TempDir(), "backup.json")
	if err := reconcile.Apply(ctx, dstCl, res, reconcile.ApplyConfig{Backup: backup}); err != nil {
		t.Fatalf("Apply: %v", err)
	}
	bedReport(t, "reconcile-cases-apply-kreconcile", res)
	if g := rcGroup(t, res, active.group); !strings.Contains(g.Refused, active.group) {
		t.Errorf("active group: refused %q, want a refusal naming %s", g.Refused, active.group)
	}
	if got := rcCommitted(t, dst, active.group, plain, 0); fmtP(got) != fmtP(before[active.group]) {
		t.Errorf("active group: target commit got %s, want %s (nothing written)", fmtP(got), fmtP(before[active.group]))
	}
	for _, c := range cases[:6] {
		p := rcPartition(t, res, c.group, c.topic)
		if got := rcCommitted(t, dst, c.group, c.topic, 0); fmtP(got) != fmtP(p.ExactTarget) {
			t.Errorf("%s after apply: target commit got %s, want E %s", c.group, fmtP(got), fmtP(p.ExactTarget))
		}
	}
	// The mid group on the target reads exactly what it had not consumed on the source.
	mid := cases[2]
	rcSameValues(t, "mid group on the target after apply", rcConsumeGroup(t, dst, mid.group, plain), rcValues(srcData[plain][25:]))
	// ... and the compacted and transaction groups too.
	var wantCompact [][]byte
	for _, r := range srcData[compact] {
		if r.Offset >= 20 {
			wantCompact = append(wantCompact, r.Value)
		}
	}
	rcSameValues(t, "compacted group on the target after apply", rcConsumeGroup(t, dst, cases[3].group, compact), wantCompact)

	// Apply twice: the second plan is exact and writes nothing.
	res2, err := reconcile.Plan(ctx, srcCl, dstCl, cfg)
	if err != nil {
		t.Fatalf("second Plan: %v", err)
	}
	bedReport(t, "reconcile-cases-replan-kreconcile", res2)
	for _, c := range cases[:6] {
		if p := rcPartition(t, res2, c.group, c.topic); p.Status != reconcile.StatusExact {
			t.Errorf("second plan %s: got %s, want exact", c.group, p.Status)
		}
	}
	if err := reconcile.Apply(ctx, dstCl, res2, reconcile.ApplyConfig{Backup: filepath.Join(t.TempDir(), "b2.json")}); err != nil {
		t.Fatalf("second Apply: %v", err)
	}
	if res2.Backup != "" || res2.Applied {
		t.Errorf("second apply: got backup %q applied %v, want nothing written", res2.Backup, res2.Applied)
	}

	// Rollback restores what MM2 had left (or nothing).
	member.Close() // the active group may be rolled back only once it is empty; it had nothing written anyway
	if _, err := reconcile.Rollback(ctx, dstCl, backup, reconcile.RollbackConfig{}); err != nil {
		t.Fatalf("Rollback: %v", err)
	}
	for _, c := range cases[:6] {
		if got := rcCommitted(t, dst, c.group, c.topic, 0); fmtP(got) != fmtP(before[c.group]) {
			t.Errorf("%s after rollback: got %s, want %s", c.group, fmtP(got), fmtP(before[c.group]))
		}
	}
}

// TestReconcile371To371 mirrors between two 3.7.1 clusters with a test mirror that replays
// records (as a restarted mirror does), then plans, applies and consumes.
func TestReconcile371To371(t *testing.T) {
	bedParallel(t)
	src := cluster.StartT(t, cluster.Spec{Version: cluster.V371, Name: "source"})
	dst := cluster.StartT(t, cluster.Spec{Version: cluster.V371, Name: "target"})
	ctx := bedCtx(t, 5*time.Minute)
	run := fmt.Sprintf("%x", time.Now().UnixNano())
	topic, group := "rc371-"+run, "rc371-g-"+run
	bedCreateTopic(t, src, topic, 1, nil)
	bedCreateTopic(t, dst, topic, 1, nil)
	recs := rcRecords("v-"+run, "k", 0, 60)
	bedProduce(ctx, t, src, topic, 0, recs)
	var copies []*kgo.Record
	for _, i := range append(append(rcSeq(0, 40), rcSeq(35, 40)...), rcSeq(40, 60)...) {
		copies = append(copies, &kgo.Record{Key: recs[i].Key, Value: recs[i].Value})
	}
	bedProduce(ctx, t, dst, topic, 0, copies)
	rcCommit(t, src, group, topic, 0, 50, "m")
	rcCommit(t, dst, group, topic, 0, 41, "") // what a sparse-sync translation would give

	srcCl, dstCl := bedClient(t, src.Bootstrap()), bedClient(t, dst.Bootstrap())
	res, err := reconcile.Plan(ctx, srcCl, dstCl, reconcile.Config{Groups: regexp.MustCompile(regexp.QuoteMeta(group))})
	if err != nil {
		t.Fatalf("Plan: %v", err)
	}
	bedReport(t, "reconcile-371-kreconcile", res)
	p := rcPartition(t, res, group, topic)
	if p.Status != reconcile.StatusBehind || fmtP(p.ExactTarget) != "55" || p.RedeliveredIfUnchanged != 14 {
		t.Fatalf("plan: got %s E=%s redelivered=%d (%s), want behind E=55 redelivered=14", p.Status, fmtP(p.ExactTarget), p.RedeliveredIfUnchanged, p.Reason)
	}
	if err := reconcile.Apply(ctx, dstCl, res, reconcile.ApplyConfig{Backup: filepath.Join(t.TempDir(), "b.json")}); err != nil {
		t.Fatalf("Apply: %v", err)
	}
	rcSameValues(t, "group on the target after apply", rcConsumeGroup(t, dst, group, topic), rcValues(recs[50:]))
}

func rcSeq(from, to int) []int {
	var out []int
	for i := from; i < to; i++ {
		out = append(out, i)
	}
	return out
}

// TestReconcileBench is the plan benchmark: 1,000 groups (KMIGRATE_BENCH_GROUPS) x 24 partitions on real 3.7.1
// clusters mirrored by MirrorMaker 2; it reports the plan time and how many partitions MM2's
// own checkpoints got exact against Plan's proven E(G). It runs only with KMIGRATE_BENCH=1:
//
//	KMIGRATE_BENCH=1 go test ./integration/ -run TestReconcileBench -v -timeout 30m
func TestReconcileBench(t *testing.T) {
	if os.Getenv("KMIGRATE_BENCH") != "1" {
		t.Skip("benchmark: set KMIGRATE_BENCH=1 to run it (real 3.7.1 brokers and MirrorMaker 2, a few minutes)")
	}
	const (
		partitions = 24
		perPart    = 500
	)
	groups := 1000 // KMIGRATE_BENCH_GROUPS: fewer for make bench-quick
	if v := os.Getenv("KMIGRATE_BENCH_GROUPS"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n <= 0 {
			t.Fatalf("KMIGRATE_BENCH_GROUPS=%q: want a positive integer", v)
		}
		groups = n
	}
	src := cluster.StartT(t, cluster.Spec{Version: cluster.V371, Name: "source"})
	dst := cluster.StartT(t, cluster.Spec{Version: cluster.V371, Name: "destination"})
	ctx := bedCtx(t, 25*time.Minute)
	run := fmt.Sprintf("%x", time.Now().UnixNano())
	topic := "rc-bench-" + run
	bedCreateTopic(t, src, topic, partitions, nil)
	prod := bedClient(t, src.Bootstrap(), kgo.RecordPartitioner(kgo.ManualPartitioner()), kgo.ProducerLinger(5*time.Millisecond))
	var recs []*kgo.Record
	for p := range int32(partitions) {
		for i := range perPart {
			recs = append(recs, &kgo.Record{Topic: topic, Partition: p, Key: fmt.Appendf(nil, "k%d", i%50), Value: fmt.Appendf(nil, "bench-%s-%d-%d", run, p, i)})
		}
	}
	if err := prod.ProduceSync(ctx, recs...).FirstErr(); err != nil {
		t.Fatalf("produce: %v", err)
	}
	rng := rand.New(rand.NewPCG(1, 2))
	adm := bedAdmin(t, src)
	for g := range groups {
		offs := kadm.Offsets{}
		for p := range int32(partitions) {
			offs.Add(kadm.Offset{Topic: topic, Partition: p, At: rng.Int64N(perPart + 1), LeaderEpoch: -1})
		}
		resp, err := adm.CommitOffsets(ctx, fmt.Sprintf("bench-%s-%04d", run, g), offs)
		if err == nil {
			err = resp.Error()
		}
		if err != nil {
			t.Fatalf("commit group %d: %v", g, err)
		}
	}

	props := rcProperties(src, dst, topic) + "destination.offset.flush.interval.ms=5000\n"
	m := cluster.StartMM2T(t, cluster.MM2Spec{Properties: props, Target: "destination"})
	want := groups * partitions
	cpTopic := "source.checkpoints.internal"
	mm2Start := time.Now()
	// MM2 never checkpoints some group partitions (its 64-sync index cannot translate them):
	// wait until the count stops growing for 20 s.
	checkpointed, lastChange := 0, time.Now()
	bedWaitFor(ctx, t, 500*time.Millisecond, "MM2 to mirror the topic and finish checkpointing", func() string {
		ends := bedEndOffsets(ctx, t, dst, topic)
		for p := range int32(partitions) {
			if ends[p] < perPart {
				return fmt.Sprintf("partition %d has %d of %d records on the target", p, ends[p], perPart)
			}
		}
		if _, ok := bedEndOffsets(ctx, t, dst, cpTopic)[0]; !ok {
			return "no checkpoints topic yet"
		}
		keys := map[mm2.CheckpointKey]bool{}
		for _, r := range bedReadPartition(ctx, t, dst, cpTopic, 0, 0) {
			if c, err := mm2.DecodeCheckpoint(r.Key, r.Value); err == nil && c.Topic == topic {
				keys[c.ID()] = true
			}
		}
		if len(keys) != checkpointed {
			checkpointed, lastChange = len(keys), time.Now()
		}
		if len(keys) < want && time.Since(lastChange) < 20*time.Second {
			return fmt.Sprintf("%d of %d group partitions checkpointed", len(keys), want)
		}
		return ""
	})
	t.Logf("MM2 mirrored the topic and checkpointed %d of %d group partitions in %s", checkpointed, want, time.Since(mm2Start).Round(time.Second))
	if err := m.Close(); err != nil {
		t.Logf("stop MM2: %v", err)
	}

	flow := bedFlow(t, props, "")
	srcCl, dstCl := bedClient(t, src.Bootstrap()), bedClient(t, dst.Bootstrap())
	start := time.Now()
	res, err := reconcile.Plan(ctx, srcCl, dstCl, reconcile.Config{Flow: flow, Groups: regexp.MustCompile(`bench-` + run + `-.*`)})
	if err != nil {
		t.Fatalf("Plan: %v", err)
	}
	took := time.Since(start)
	var total, proven, cpExact, cpBehind, cpAhead, cpNone int
	statuses := map[reconcile.Status]int{}
	for _, g := range res.Groups {
		if g.Err != "" {
			t.Errorf("group %s: %s", g.Group, g.Err)
		}
		for _, p := range g.Partitions {
			total++
			statuses[p.Status]++
			if p.ExactTarget != nil {
				proven++
			}
			switch p.CheckpointStatus {
			case reconcile.StatusExact:
				cpExact++
			case reconcile.StatusBehind:
				cpBehind++
			case reconcile.StatusAhead:
				cpAhead++
			default:
				cpNone++
			}
		}
	}
	t.Logf("BENCH plan: %d groups x %d partitions = %d group partitions in %s (goal < 30s)", len(res.Groups), partitions, total, took.Round(time.Millisecond))
	t.Logf("BENCH E(G) proven by content: %d of %d; target statuses %v", proven, total, statuses)
	t.Logf("BENCH MM2 checkpoints: %d exact, %d behind, %d ahead, %d none/unjudged (of %d)", cpExact, cpBehind, cpAhead, cpNone, total)
	if total != want {
		t.Errorf("group partitions planned: got %d, want %d", total, want)
	}
	if proven != total {
		t.Errorf("E(G) proven: got %d, want all %d", proven, total)
	}
	if cpAhead > 0 {
		t.Errorf("MM2 checkpoints ahead of E(G): %d (MM2 would lose records)", cpAhead)
	}
	if took > 30*time.Second {
		t.Errorf("plan time: got %s, want under 30s", took.Round(time.Millisecond))
	}

	// The same plan without MM2's offset syncs as hints (a mirror that writes none): target
	// windows come from timestamps and from earlier alignments of the partition.
	start = time.Now()
	res2, err := reconcile.Plan(ctx, srcCl, dstCl, reconcile.Config{Flow: flow, Groups: regexp.MustCompile(`bench-` + run + `-.*`), OffsetSyncsTopic: "kreconcile-bench-no-syncs"})
	if err != nil {
		t.Fatalf("Plan without syncs: %v", err)
	}
	took2 := time.Since(start)
	same := 0
	for gi, g := range res2.Groups {
		for pi, p := range g.Partitions {
			if q := res.Groups[gi].Partitions[pi]; fmtP(p.ExactTarget) == fmtP(q.ExactTarget) {
				same++
			}
		}
	}
	t.Logf("BENCH plan without offset syncs: %s; same E(G) as with them: %d of %d", took2.Round(time.Millisecond), same, total)
	if same != total {
		t.Errorf("E(G) without syncs: %d of %d agree, want all", same, total)
	}
}

// TestReconcileRollbackSafety checks rollback and apply on real brokers (2.3.0 source, 3.7.1
// target, a test mirror that replays 5 records): the backup records both cluster IDs as the
// brokers report them and a rollback against the source is refused with nothing written; after
// the group consumed on the target, rollback leaves that partition alone (and --force restores
// it); and a consumer that joins between Apply's check and its commit makes the broker refuse
// the commit, which Apply names, on either version as the target. $KMIGRATE_PAIR
// (pair_test.go) picks other versions.
func TestReconcileRollbackSafety(t *testing.T) {
	bedParallel(t)
	srcV, dstV := bedPair(t)
	src, dst := bedSharedPair(t)
	ctx := bedCtx(t, 8*time.Minute)
	run := fmt.Sprintf("%x", time.Now().UnixNano())
	topic := "rcsafe-" + run
	bedCreateTopic(t, src, topic, 1, nil)
	bedCreateTopic(t, dst, topic, 1, nil)
	recs := rcRecords("v-"+run, "k", 0, 60)
	bedProduce(ctx, t, src, topic, 0, recs)
	var copies []*kgo.Record
	for _, i := range append(append(rcSeq(0, 40), rcSeq(35, 40)...), rcSeq(40, 60)...) {
		copies = append(copies, &kgo.Record{Key: recs[i].Key, Value: recs[i].Value})
	}
	bedProduce(ctx, t, dst, topic, 0, copies) // E(50) = 55
	srcCl, dstCl := bedClient(t, src.Bootstrap()), bedClient(t, dst.Bootstrap())

	ids := map[string]string{}
	srcName, dstName := "source "+srcV, "target "+dstV
	for _, c := range []struct {
		name string
		cl   *kgo.Client
	}{{srcName, srcCl}, {dstName, dstCl}} {
		m, err := kadm.NewClient(c.cl).BrokerMetadata(ctx)
		if err != nil {
			t.Fatalf("%s: metadata: %v", c.name, err)
		}
		if m.Cluster == "" {
			t.Fatalf("%s reports no cluster ID", c.name)
		}
		ids[c.name] = m.Cluster
		t.Logf("%s reports cluster ID %q", c.name, m.Cluster)
	}
	srcID, dstID := ids[srcName], ids[dstName]
	if srcID == dstID {
		t.Fatalf("both clusters report cluster ID %q", srcID)
	}

	group := "rcsafe-progress-" + run
	rcCommit(t, src, group, topic, 0, 50, "m")
	rcCommit(t, dst, group, topic, 0, 41, "mm2")
	res, err := reconcile.Plan(ctx, srcCl, dstCl, reconcile.Config{Groups: regexp.MustCompile(regexp.QuoteMeta(group))})
	if err != nil {
		t.Fatalf("Plan: %v", err)
	}
	backup := filepath.Join(t.TempDir(), "backup.json")
	if err := reconcile.Apply(ctx, dstCl, res, reconcile.ApplyConfig{Backup: backup}); err != nil {
		t.Fatalf("Apply: %v", err)
	}
	if got := rcCommitted(t, dst, group, topic, 0); fmtP(got) != "55" {
		t.Fatalf("after apply: target commit %s, want 55", fmtP(got))
	}
	b, err := reconcile.ReadBackup(backup)
	if err != nil {
		t.Fatalf("ReadBackup: %v", err)
	}
	if b.SourceCluster.ID != srcID || b.TargetCluster.ID != dstID {
		t.Errorf("backup clusters: got %+v / %+v, want IDs %s / %s", b.SourceCluster, b.TargetCluster, srcID, dstID)
	}

	t.Run("rollback against the source is refused", func(t *testing.T) {
		rb, err := reconcile.Rollback(ctx, srcCl, backup, reconcile.RollbackConfig{TargetAlias: "source"})
		if err == nil || rb != nil || !strings.Contains(err.Error(), "source cluster") || !strings.Contains(err.Error(), srcID) {
			t.Errorf("got %+v, %v; want a refusal naming the source cluster %s", rb, err, srcID)
		}
		if got := rcCommitted(t, src, group, topic, 0); fmtP(got) != "50" {
			t.Errorf("source commit: got %s, want 50 (untouched)", fmtP(got))
		}
	})

	t.Run("rollback keeps what the group consumed on the target", func(t *testing.T) {
		// The group consumes a few records on the target, commits and leaves.
		cons := bedClient(t, dst.Bootstrap(), kgo.ConsumerGroup(group), kgo.ConsumeTopics(topic), kgo.DisableAutoCommit(),
			kgo.FetchMaxWait(200*time.Millisecond), kgo.FetchMaxBytes(1))
		var got int
		bedWaitFor(ctx, t, 100*time.Millisecond, "the group to consume on the target", func() string {
			pctx, cancel := context.WithTimeout(ctx, 2*time.Second)
			got += len(cons.PollRecords(pctx, 3).Records())
			cancel()
			if got == 0 {
				return "no record yet"
			}
			return ""
		})
		if err := cons.CommitUncommittedOffsets(ctx); err != nil {
			t.Fatalf("consumer commit: %v", err)
		}
		cons.LeaveGroup()
		moved := rcCommitted(t, dst, group, topic, 0)
		if moved == nil || *moved <= 55 {
			t.Fatalf("target commit after consuming: %s, want above 55", fmtP(moved))
		}
		rb, err := reconcile.Rollback(ctx, dstCl, backup, reconcile.RollbackConfig{})
		if err == nil || !strings.Contains(err.Error(), topic+"/0") || !strings.Contains(err.Error(), "--force") {
			t.Errorf("rollback: got %v, want a refusal naming %s/0 and --force", err, topic)
		}
		if rb == nil || len(rb.Groups) != 1 || len(rb.Groups[0].Conflicts) != 1 || rb.Groups[0].Restored != 0 {
			t.Errorf("rollback result: got %+v, want one conflict and nothing restored", rb)
		}
		if got := rcCommitted(t, dst, group, topic, 0); fmtP(got) != fmtP(moved) {
			t.Errorf("target commit after rollback: got %s, want %s (progress kept)", fmtP(got), fmtP(moved))
		}
		if _, err := reconcile.Rollback(ctx, dstCl, backup, reconcile.RollbackConfig{Force: true}); err != nil {
			t.Fatalf("rollback --force: %v", err)
		}
		if got := rcCommitted(t, dst, group, topic, 0); fmtP(got) != "41" {
			t.Errorf("target commit after rollback --force: got %s, want 41", fmtP(got))
		}
	})

	// A consumer joins between Apply's check and its commit, with the target (3.7.1) and the
	// source (2.3.0) as the cluster written to (for the source the roles are swapped: the
	// copies are the "source"). On a pair of one version the source's case says so.
	back, backTag := srcV+" target", srcV
	if srcV == dstV {
		back, backTag = srcV+" source as target", srcV+"-source"
	}
	for _, c := range []struct {
		name, tag    string
		from, to     cluster.Cluster
		fromCl, toCl *kgo.Client
	}{{dstV + " target", dstV, src, dst, srcCl, dstCl}, {back, backTag, dst, src, dstCl, srcCl}} {
		t.Run("consumer joins before the commit, "+c.name, func(t *testing.T) {
			g := "rcsafe-join-" + c.tag + "-" + run
			rcCommit(t, c.from, g, topic, 0, 30, "m")
			res, err := reconcile.Plan(ctx, c.fromCl, c.toCl, reconcile.Config{Groups: regexp.MustCompile(regexp.QuoteMeta(g))})
			if err != nil {
				t.Fatalf("Plan: %v", err)
			}
			if p := rcPartition(t, res, g, topic); p.ExactTarget == nil {
				t.Fatalf("plan: %s %q, want E(G) known", p.Status, p.Reason)
			}
			err = reconcile.Apply(ctx, c.toCl, res, reconcile.ApplyConfig{Backup: filepath.Join(t.TempDir(), "b.json"),
				BeforeCommit: func(group string) {
					member := bedClient(t, c.to.Bootstrap(), kgo.ConsumerGroup(group), kgo.ConsumeTopics(topic), kgo.DisableAutoCommit(),
						kgo.SessionTimeout(45*time.Second))
					bedWaitFor(ctx, t, 200*time.Millisecond, "the member to join "+group, func() string {
						pctx, cancel := context.WithTimeout(ctx, time.Second)
						member.PollFetches(pctx)
						cancel()
						d, err := bedAdmin(t, c.to).DescribeGroups(ctx, group)
						if err != nil {
							return err.Error()
						}
						if s := d[group].State; s != "Stable" {
							return "state " + s
						}
						return ""
					})
				}})
			p := rcPartition(t, res, g, topic)
			t.Logf("apply: %v; partition: action %q apply_error %q", err, p.Action, p.ApplyError)
			if err == nil || !strings.Contains(err.Error(), "joined") || !strings.Contains(err.Error(), g) {
				t.Errorf("Apply: got %v, want an error saying a consumer of %s joined", err, g)
			}
			if got := rcCommitted(t, c.to, g, topic, 0); got != nil {
				t.Errorf("target commit: got %s, want none (nothing written)", fmtP(got))
			}
			if res.Applied || p.Applied {
				t.Errorf("applied: got result %v partition %v, want false", res.Applied, p.Applied)
			}
		})
	}
}
