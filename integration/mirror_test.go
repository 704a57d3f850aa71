package integration

import (
	"bufio"
	"context"
	"encoding/hex"
	"fmt"
	"math/rand/v2"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/kmigrate/kmigrate/align"
	"github.com/kmigrate/kmigrate/integration/cluster"
	"github.com/kmigrate/kmigrate/internal/peakrss"
	"github.com/kmigrate/kmigrate/mirror"
	"github.com/kmigrate/kmigrate/mm2"
	"github.com/kmigrate/kmigrate/offsetmap"
	"github.com/kmigrate/kmigrate/reconcile"
	"github.com/kmigrate/kmigrate/verify"
)

// TestMirror runs kmirror from a Kafka 2.3.0 source to a 3.7.1 target:
//   - topics: a plain, a compacted (with compaction gaps) and a transactional topic (with
//     aborted transactions), mirrored by the engine in process, verified identical by
//     align.Partition record by record and by verify.Diff (kverify's library); an idle and an
//     active group (still consuming on the source) synced by the engine are exact on the
//     target by reconcile.Plan, without Apply;
//   - kill9: the kmirror binary killed with SIGKILL five times during a large run (records
//     keep coming), then a final run: 0 missing, 0 duplicated;
//   - shared: two kmirror processes share 12 partitions, one is killed, the other takes its
//     partitions over; diff clean;
//   - stale-owner: one of two kmirror processes is stopped (SIGSTOP) past its session timeout
//     while records keep arriving, the other takes every partition over, the first is woken
//     with records still in its producer: its late writes are fenced, 0 duplicated;
//   - seed: the seed case (idle group, 30 more records) with kmirror's exact group sync:
//     target lag equals source lag, the MM2-format checkpoint agrees, and reconcile.Plan finds
//     the idle group and an active one exact.
//
// KMIGRATE_MIRROR_RECORDS sets the size of the kill -9 run (default 200000; an acceptance run
// uses 1000000). $KMIGRATE_PAIR (pair_test.go) picks other versions.
func TestMirror(t *testing.T) {
	srcV, dstV := bedPair(t)
	mirSuite(t, srcV, dstV)
}

// TestMirrorKafka4 runs TestMirror's cases against a Kafka 4.3.1 target, where transactions
// version 2 is on (the producer epoch moves at every commit) and a kill -9 or a stale owner
// must be fenced all the same.
func TestMirrorKafka4(t *testing.T) {
	if srcV, dstV := bedPair(t); srcV == cluster.V230 && dstV == cluster.V431 {
		t.Skipf("%s=%s-%s: TestMirror runs this pair", envPair, srcV, dstV)
	}
	mirSuite(t, cluster.V230, cluster.V431)
}

// mirSuite runs TestMirror's cases from a source of version srcV to a target of version dstV.
// bucket-count runs first, among the package's serial tests, and the rest in parallel with
// the other parallel tests (bedParallelLong): p1 stays frozen until the target's transaction
// timeout (2 minutes) aborts its open transaction, and on a loaded machine a freeze that
// caught it committing lets its 90 s commit bound expire, so that it stops on that, before
// the group's refusal of its bucket count, which the case checks, reaches it.
func mirSuite(t *testing.T, srcV, dstV string) {
	src := cluster.StartT(t, cluster.Spec{Version: srcV, Name: "mirror-src"})
	dst := cluster.StartT(t, cluster.Spec{Version: dstV, Name: "mirror-dst"})
	if t.Failed() || t.Skipped() {
		return
	}
	bin := filepath.Join(bedBuild(t, "kmirror"), "kmirror")
	t.Run("bucket-count", func(t *testing.T) { mirBucketCount(t, src, dst, bin) })
	bedParallelLong(t)
	t.Run("topics", func(t *testing.T) { mirTopics(t, src, dst) })
	t.Run("kill9", func(t *testing.T) { mirKill9(t, src, dst, bin) })
	t.Run("shared", func(t *testing.T) { mirShared(t, src, dst, bin) })
	t.Run("stale-owner", func(t *testing.T) { mirStaleOwner(t, src, dst, bin) })
	t.Run("seed", func(t *testing.T) { mirSeed(t, src, dst, mirBinary(bin)) })
}

// mirSeed is the seed case (docs/design.md "Root cause: the 30-vs-38 gap") with kmirror in
// place of MM2: a consumer group works, stops (idle), 30 more records arrive, the producer
// stops; meanwhile a second group keeps consuming on the source and committing (active).
// kmirror's group sync must leave both target groups exactly where the source groups are:
// target lag equals source lag, the checkpoint says the same, and reconcile.Plan finds every
// partition of both groups exact without any Apply, although the target partition held 10
// foreign records before mirroring (so every target offset is the source offset + 10).
func mirSeed(t *testing.T, src, dst cluster.Cluster, launch mirLauncher) {
	const parts = 3
	topic, group, activeGroup := bedUnique("mir-seed"), bedUnique("app"), bedUnique("app-active")
	bedCreateTopic(t, src, topic, parts, nil)
	bedCreateTopic(t, dst, topic, parts, nil)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	produceN := func(c cluster.Cluster, from, n int) {
		cl := bedClient(t, c.Bootstrap(), kgo.RecordPartitioner(kgo.ManualPartitioner()))
		var recs []*kgo.Record
		for p := int32(0); p < parts; p++ {
			for i := from; i < from+n; i++ {
				recs = append(recs, &kgo.Record{Topic: topic, Partition: p, Value: fmt.Appendf(nil, "seed-%d-%d", p, i)})
			}
		}
		if err := cl.ProduceSync(ctx, recs...).FirstErr(); err != nil {
			t.Fatalf("produce to %s: %v", c.Name(), err)
		}
	}
	produceN(dst, 0, 10) // foreign records already on the target
	produceN(src, 0, 100)

	// The application consumes some records and commits, then stops: an idle group.
	consumer := bedClient(t, src.Bootstrap(), kgo.ConsumerGroup(group), kgo.ConsumeTopics(topic),
		kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()), kgo.DisableAutoCommit())
	var consumed []*kgo.Record
	for len(consumed) < 150 && ctx.Err() == nil {
		consumed = append(consumed, consumer.PollRecords(ctx, 150-len(consumed)).Records()...)
	}
	if len(consumed) < 150 {
		t.Fatalf("the idle group %s consumed %d of 150 records on the source when the deadline came", group, len(consumed))
	}
	if err := consumer.CommitRecords(ctx, consumed...); err != nil {
		t.Fatalf("commit: %v", err)
	}
	consumer.Close()

	// Another application keeps consuming on the source and commits after every poll: an
	// active group, still a member while the target is checked.
	stopActive := mirActiveGroup(ctx, t, src, activeGroup, topic)
	defer stopActive()

	props := mirProps(t, src, dst, "S3", "T3", topic)
	text, _ := os.ReadFile(props)
	text = []byte(strings.Replace(string(text), "emit.checkpoints.enabled=false", `emit.checkpoints.enabled=true
emit.checkpoints.interval.seconds=1
sync.group.offsets.enabled=true
sync.group.offsets.interval.seconds=1`, 1))
	if err := os.WriteFile(props, text, 0o600); err != nil {
		t.Fatal(err)
	}
	p := launch(t, props, "S3->T3", "kmirror-seed")
	produceN(src, 100, 30) // 30 more records after the consumer stopped; then the producer stops

	srcAdm, dstAdm := bedAdmin(t, src), bedAdmin(t, dst)
	// committed is group g's offsets of topic on the cluster of adm.
	committed := func(ctx context.Context, adm *kadm.Client, g string) (map[int32]int64, error) {
		out := map[int32]int64{}
		got, err := adm.FetchOffsets(ctx, g)
		if err == nil {
			err = got.Error()
		}
		got.Each(func(o kadm.OffsetResponse) {
			if o.Topic == topic && o.Err == nil && o.At >= 0 {
				out[o.Partition] = o.At
			}
		})
		return out, err
	}
	ends := func(ctx context.Context, adm *kadm.Client) (map[int32]int64, error) {
		out := map[int32]int64{}
		got, err := adm.ListEndOffsets(ctx, topic)
		if err == nil {
			err = got.Error()
		}
		got.Each(func(o kadm.ListedOffset) {
			if o.Err == nil {
				out[o.Partition] = o.Offset
			}
		})
		return out, err
	}
	srcCommitted, err := committed(ctx, srcAdm, group)
	if err != nil {
		t.Fatalf("fetch offsets of %s on the source: %v", group, err)
	}
	srcEnd := bedEndOffsets(ctx, t, src, topic)
	t.Logf("source group %s committed %v, source end %v", group, srcCommitted, srcEnd)
	// Every call of the wait is bounded by its own deadline (not the test's), and a call that
	// fails is the state it reports: a hung broker shows as such after 2 minutes.
	wctx, wcancel := context.WithTimeout(ctx, 2*time.Minute)
	defer wcancel()
	bedWaitFor(wctx, t, 200*time.Millisecond, "every record mirrored and both target groups at the exact offsets", func() string {
		dstEnd, err := ends(wctx, dstAdm)
		if err != nil {
			return fmt.Sprintf("list end offsets of %s on %s: %v", topic, dst.Name(), err)
		}
		idleDst, err := committed(wctx, dstAdm, group)
		if err != nil {
			return fmt.Sprintf("fetch offsets of %s on %s: %v", group, dst.Name(), err)
		}
		activeSrc, err := committed(wctx, srcAdm, activeGroup)
		if err != nil {
			return fmt.Sprintf("fetch offsets of %s on %s: %v", activeGroup, src.Name(), err)
		}
		activeDst, err := committed(wctx, dstAdm, activeGroup)
		if err != nil {
			return fmt.Sprintf("fetch offsets of %s on %s: %v", activeGroup, dst.Name(), err)
		}
		state := fmt.Sprintf("source end %v, target end %v (offsets; the target's count transaction markers too); idle group source %v target %v; active group source %v target %v",
			srcEnd, dstEnd, srcCommitted, idleDst, activeSrc, activeDst)
		// Records, not offsets: the target holds the 10 foreign records and every source
		// record; the idle group has read on the target what it read on the source (and the
		// foreign records before it) and has the rest still to read; the active group, which
		// consumed everything, has nothing left on the target either.
		for part := int32(0); part < parts; part++ {
			if bedRecordsFrom(wctx, t, dst, topic, part, 0) != srcEnd[part]+10 {
				return state + fmt.Sprintf("; partition %d: target records %d, want %d", part, bedRecordsFrom(wctx, t, dst, topic, part, 0), srcEnd[part]+10)
			}
			if g, ok := srcCommitted[part]; ok {
				if _, synced := idleDst[part]; !synced || bedRecordsFrom(wctx, t, dst, topic, part, idleDst[part]) != srcEnd[part]-g {
					return state
				}
			}
			if _, synced := activeDst[part]; activeSrc[part] != srcEnd[part] || !synced || bedRecordsFrom(wctx, t, dst, topic, part, activeDst[part]) != 0 {
				return state
			}
		}
		return ""
	})
	if len(srcCommitted) == 0 {
		t.Fatalf("the source group committed nothing: the test is broken")
	}
	dstCommitted, err := committed(ctx, dstAdm, group)
	if err != nil {
		t.Fatalf("fetch offsets of %s on the target: %v", group, err)
	}
	dstEnd := bedEndOffsets(ctx, t, dst, topic)
	cps, err := mm2.ReadCheckpoints(ctx, bedClient(t, dst.Bootstrap()), "S3.checkpoints.internal")
	if err != nil {
		t.Fatalf("read checkpoints: %v", err)
	}
	for part := range srcCommitted {
		srcLag, dstLeft := srcEnd[part]-srcCommitted[part], bedRecordsFrom(ctx, t, dst, topic, part, dstCommitted[part])
		t.Logf("seed %s/%d: source committed %d lag %d; target committed %d, %d records left to read (offset lag %d, transaction markers included)",
			topic, part, srcCommitted[part], srcLag, dstCommitted[part], dstLeft, dstEnd[part]-dstCommitted[part])
		if srcLag != dstLeft {
			t.Errorf("partition %d: %d records left to read on the target, source lag %d: want equal", part, dstLeft, srcLag)
		}
		cp, ok := cps[mm2.CheckpointKey{Group: group, Topic: topic, Partition: part}]
		if !ok || cp.Upstream != srcCommitted[part] || cp.Downstream != dstCommitted[part] {
			t.Errorf("partition %d: checkpoint %+v (found %v), want upstream %d downstream %d", part, cp, ok, srcCommitted[part], dstCommitted[part])
		}
	}

	// kreconcile's plan of the target, with the active group still a member on the source:
	// every partition of both groups exact, nothing to apply.
	d, err := srcAdm.DescribeGroups(ctx, activeGroup)
	if err != nil {
		t.Fatalf("describe %s on the source: %v", activeGroup, err)
	}
	if st := d[activeGroup].State; st != "Stable" {
		t.Errorf("active group %s on the source: state %q, want Stable (the consumer still runs)", activeGroup, st)
	}
	res, err := reconcile.Plan(ctx, bedClient(t, src.Bootstrap()), bedClient(t, dst.Bootstrap()), reconcile.Config{Flow: bedFlow(t, string(text), "S3->T3"),
		Groups: regexp.MustCompile(regexp.QuoteMeta(group) + "|" + regexp.QuoteMeta(activeGroup))})
	if err != nil {
		t.Fatalf("Plan: %v", err)
	}
	bedReport(t, "mirror-seed-kreconcile", res)
	if bad := mirNotExact(res, map[string]int{group: len(srcCommitted), activeGroup: parts}, mirLeft(ctx, t, dst), topic); bad != "" {
		t.Errorf("plan of the target: %s", bad)
	}
	for _, g := range res.Groups {
		for _, pp := range g.Partitions {
			t.Logf("plan %s %s/%d: G=%d target=%s E=%s status=%s proof=%q", g.Group, pp.Topic, pp.Partition, pp.SourceCommitted, fmtP(pp.TargetCommitted), fmtP(pp.ExactTarget), pp.Status, pp.Proof)
			// G+10, or past the transaction markers that follow it up to the next record.
			lo := pp.SourceCommitted + 10
			if hi := rcReadable(ctx, t, dst, pp.Topic, pp.Partition, lo); pp.ExactTarget == nil || *pp.ExactTarget < lo || *pp.ExactTarget > hi {
				t.Errorf("plan %s %s/%d: E=%s, want G+10 = %d (10 foreign records first), or up to %d past the markers after it", g.Group, pp.Topic, pp.Partition, fmtP(pp.ExactTarget), lo, hi)
			}
		}
	}
	stopActive()
	p.term(t)
}

func mirTopics(t *testing.T, src, dst cluster.Cluster) {
	plain, compacted, txn := bedUnique("mir-plain"), bedUnique("mir-compacted"), bedUnique("mir-txn")
	bedCreateTopic(t, src, plain, 3, nil)
	bedCreateTopic(t, src, compacted, 1, map[string]*string{
		"cleanup.policy": bedPtr("compact"), "segment.ms": bedPtr("100"), "min.cleanable.dirty.ratio": bedPtr("0.01"),
		"delete.retention.ms": bedPtr("100"),
	})
	bedCreateTopic(t, src, txn, 2, nil)

	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	defer cancel()
	prod := bedClient(t, src.Bootstrap(), kgo.RecordPartitioner(kgo.ManualPartitioner()))
	var recs []*kgo.Record
	for p := int32(0); p < 3; p++ {
		for i := 0; i < 2000; i++ {
			r := &kgo.Record{Topic: plain, Partition: p, Value: fmt.Appendf(nil, "plain-%d-%d", p, i),
				Headers: []kgo.RecordHeader{{Key: "n", Value: []byte(strconv.Itoa(i))}}}
			if i%5 != 0 {
				r.Key = fmt.Appendf(nil, "k%d", i%97)
			}
			recs = append(recs, r)
		}
	}
	if err := prod.ProduceSync(ctx, recs...).FirstErr(); err != nil {
		t.Fatalf("produce: %v", err)
	}
	// Bursts more than segment.ms apart roll segments, so the cleaner has closed segments to
	// compact.
	for burst := 0; burst < 6; burst++ {
		recs = recs[:0]
		for i := 0; i < 500; i++ {
			n := burst*500 + i
			recs = append(recs, &kgo.Record{Topic: compacted, Key: fmt.Appendf(nil, "key-%d", n%40), Value: fmt.Appendf(nil, "v-%d-%s", n, strings.Repeat("x", 100))})
		}
		if err := prod.ProduceSync(ctx, recs...).FirstErr(); err != nil {
			t.Fatalf("produce: %v", err)
		}
		time.Sleep(300 * time.Millisecond)
	}
	tx := bedClient(t, src.Bootstrap(), kgo.TransactionalID(bedUnique("mir-tx")), kgo.RecordPartitioner(kgo.ManualPartitioner()))
	for b := 0; b < 20; b++ {
		if err := tx.BeginTransaction(); err != nil {
			t.Fatal(err)
		}
		for i := 0; i < 50; i++ {
			tx.Produce(ctx, &kgo.Record{Topic: txn, Partition: int32(i % 2), Value: fmt.Appendf(nil, "tx-%d-%d", b, i)}, nil)
		}
		if err := tx.Flush(ctx); err != nil {
			t.Fatal(err)
		}
		commit := kgo.TryCommit
		if b%4 == 3 {
			commit = kgo.TryAbort
		}
		if err := tx.EndTransaction(ctx, commit); err != nil {
			t.Fatalf("end transaction: %v", err)
		}
	}
	// Wait until the source compacted something, so the mirror meets offset gaps.
	deadline := time.Now().Add(90 * time.Second)
	for {
		n := len(bedReadPartition(ctx, t, src, compacted, 0, 0))
		end := bedEndOffsets(ctx, t, src, compacted)[0]
		if int64(n) < end {
			t.Logf("compacted topic: %d records left of %d offsets", n, end)
			break
		}
		if time.Now().After(deadline) {
			t.Logf("compacted topic: the %s cleaner has not run yet; mirroring without gaps", src.Version())
			break
		}
		time.Sleep(2 * time.Second)
	}

	// Two applications read the topics on the source: an idle group that committed and
	// stopped (at a log start, in the middle, at the end, in the compacted topic's cleaned
	// range and among the transaction markers), and an active group that keeps consuming
	// (read_committed) and committing while kmirror mirrors and after. The engine syncs both
	// to the target; reconcile.Plan must find every partition of both exact without Apply.
	idle, activeGroup := bedUnique("mir-idle"), bedUnique("mir-active")
	idleAt := kadm.Offsets{}
	for p, at := range []int64{0, 1000, 2000} {
		idleAt.Add(kadm.Offset{Topic: plain, Partition: int32(p), At: at, LeaderEpoch: -1})
	}
	idleAt.Add(kadm.Offset{Topic: compacted, Partition: 0, At: bedEndOffsets(ctx, t, src, compacted)[0] / 2, LeaderEpoch: -1})
	for p, end := range bedEndOffsets(ctx, t, src, txn) {
		idleAt.Add(kadm.Offset{Topic: txn, Partition: p, At: end/2 + int64(p), LeaderEpoch: -1})
	}
	if resp, err := bedAdmin(t, src).CommitOffsets(ctx, idle, idleAt); err != nil || resp.Error() != nil {
		t.Fatalf("commit the idle group %s on the source: %v %v", idle, err, resp.Error())
	}
	stopActive := mirActiveGroup(ctx, t, src, activeGroup, plain, compacted, txn)
	defer stopActive()

	flow := bedFlow(t, bedProperties(src, dst, "S0", "T0", strings.Join([]string{plain, compacted, txn}, ",")), "S0->T0")
	e, err := mirror.New(mirror.Config{
		SourceAlias: "S0", TargetAlias: "T0",
		Topics:           []string{plain, compacted, txn},
		Flow:             flow,
		SyncTopicConfigs: true,
		SyncGroupOffsets: true, SyncGroupOffsetsInterval: time.Second,
		EmitCheckpoints: true, EmitCheckpointsInterval: time.Second,
		OffsetSyncsOnTarget: true,
		// The target must not compact what the test compares: leave its cleaner settings default.
		ConfigExclude:             []string{`segment\..*`, `min\.cleanable\.dirty\.ratio`, `delete\.retention\.ms`},
		ReplicationFactor:         1,
		InternalReplicationFactor: 1,
		SessionTimeout:            6 * time.Second,
		CommitLatency:             200 * time.Millisecond,
	}, []kgo.Opt{kgo.SeedBrokers(src.Bootstrap()...)}, []kgo.Opt{kgo.SeedBrokers(dst.Bootstrap()...)}, nil)
	if err != nil {
		t.Fatal(err)
	}
	rctx, stop := context.WithCancel(ctx)
	done := make(chan error, 1)
	go func() { done <- e.Run(rctx) }()
	for _, tc := range []struct {
		kind, topic string
		parts       int32
	}{{"plain", plain, 3}, {"compacted", compacted, 1}, {"txn", txn, 2}} {
		srcEnd := bedEndOffsets(ctx, t, src, tc.topic)
		bedWaitFor(ctx, t, 200*time.Millisecond, "the engine to mirror "+tc.topic, func() string {
			// Translated (the transaction committed) and visible to read_committed readers:
			// the commit markers, written after the commit returns, moved the last stable
			// offset past the copies.
			lso, err := bedAdmin(t, dst).ListCommittedOffsets(ctx, tc.topic)
			if err != nil {
				return err.Error()
			}
			for p := int32(0); p < tc.parts; p++ {
				tr, ok := e.Translate(tc.topic, p, srcEnd[p])
				if !ok || !tr.Known {
					return fmt.Sprintf("partition %d: source end %d not translated yet (%+v, owned %v)", p, srcEnd[p], tr, ok)
				}
				if o, _ := lso.Lookup(tc.topic, p); o.Offset < tr.Target {
					return fmt.Sprintf("partition %d: last stable offset %d below E(source end) %d", p, o.Offset, tr.Target)
				}
			}
			return ""
		})
		// kverify's library on the whole topic: identical.
		dres, _, err := verify.Diff(ctx, bedClient(t, src.Bootstrap()), bedClient(t, dst.Bootstrap()), verify.Config{SourceTopic: tc.topic})
		if err != nil {
			t.Fatalf("verify.Diff %s: %v", tc.topic, err)
		}
		bedReport(t, "mirror-"+tc.kind+"-kverify", dres)
		if !dres.Identical || dres.Summary.Matched == 0 || len(dres.Partitions) != int(tc.parts) {
			t.Errorf("verify.Diff %s: got identical=%v summary %+v, %d partitions, problems %v; want identical, %d partitions",
				tc.topic, dres.Identical, dres.Summary, len(dres.Partitions), dres.Problems, tc.parts)
		} else {
			t.Logf("verify.Diff %s: identical, %+v", tc.topic, dres.Summary)
		}
		for p := int32(0); p < tc.parts; p++ {
			res := mirAlign(ctx, t, src, dst, tc.topic, p)
			mirClean(t, tc.topic, p, res)
			// The engine's exact map agrees with the content alignment.
			pm, _ := e.Map(tc.topic, p)
			if tr := pm.ExactTarget(srcEnd[p]); !tr.Known || tr.Target <= 0 || bedRecordsFrom(ctx, t, dst, tc.topic, p, tr.Target) != 0 {
				t.Errorf("%s/%d: E(source end) = %+v, want a target offset with no record after it", tc.topic, p, tr)
			}
		}
	}
	// The groups: exact on the target once the engine's group sync has run, with the active
	// group still consuming on the source.
	var res *reconcile.Result
	bedWaitFor(ctx, t, time.Second, "the target groups at E(G) (reconcile.Plan all exact, no Apply)", func() string {
		var err error
		res, err = reconcile.Plan(ctx, bedClient(t, src.Bootstrap()), bedClient(t, dst.Bootstrap()), reconcile.Config{Flow: flow,
			Groups: regexp.MustCompile(regexp.QuoteMeta(idle) + "|" + regexp.QuoteMeta(activeGroup))})
		if err != nil {
			return fmt.Sprintf("Plan: %v", err)
		}
		return mirNotExact(res, map[string]int{idle: 6, activeGroup: 6}, mirLeft(ctx, t, dst), plain)
	})
	bedReport(t, "mirror-topics-kreconcile", res)
	for _, g := range res.Groups {
		for _, pp := range g.Partitions {
			t.Logf("plan %s %s/%d: G=%d target=%s E=%s status=%s, source lag %d, target lag %d", g.Group, pp.Topic, pp.Partition,
				pp.SourceCommitted, fmtP(pp.TargetCommitted), fmtP(pp.ExactTarget), pp.Status, pp.SourceEnd-pp.SourceCommitted, pp.TargetEnd-deref(pp.TargetCommitted))
		}
	}
	d, err := bedAdmin(t, src).DescribeGroups(ctx, activeGroup)
	if err != nil || d[activeGroup].State != "Stable" {
		t.Errorf("active group %s on the source: state %q (%v), want Stable (the consumer still runs)", activeGroup, d[activeGroup].State, err)
	}
	stopActive()
	stop()
	if err := <-done; err != nil {
		t.Fatalf("Run: %v", err)
	}
}

// mirActiveGroup runs a consumer of topics on c as group (read_committed, committing after
// every poll) until the returned stop is called; a fetch or commit error fails the test there.
func mirActiveGroup(ctx context.Context, t *testing.T, c cluster.Cluster, group string, topics ...string) (stop func()) {
	t.Helper()
	actx, cancel := context.WithCancel(ctx)
	cl := bedClient(t, c.Bootstrap(), kgo.ConsumerGroup(group), kgo.ConsumeTopics(topics...),
		kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()), kgo.DisableAutoCommit(), kgo.FetchMaxWait(200*time.Millisecond),
		kgo.FetchIsolationLevel(kgo.ReadCommitted()))
	var errs atomic.Value
	var wg sync.WaitGroup
	wg.Go(func() {
		for actx.Err() == nil {
			fs := cl.PollFetches(actx)
			if actx.Err() != nil {
				return
			}
			fs.EachError(func(tp string, p int32, err error) {
				errs.Store(fmt.Errorf("active group %s: fetch %s/%d: %w", group, tp, p, err))
			})
			if err := cl.CommitUncommittedOffsets(actx); err != nil && actx.Err() == nil {
				errs.Store(fmt.Errorf("active group %s: commit: %w", group, err))
			}
		}
	})
	var once sync.Once
	return func() {
		once.Do(func() {
			cancel()
			wg.Wait()
			if err, _ := errs.Load().(error); err != nil {
				t.Errorf("%v", err)
			}
		})
	}
}

// mirLeft counts, on dst, the records a consumer committed at an offset has left to read.
func mirLeft(ctx context.Context, t testing.TB, dst cluster.Cluster) func(topic string, p int32, from int64) int64 {
	return func(topic string, p int32, from int64) int64 { return bedRecordsFrom(ctx, t, dst, topic, p, from) }
}

// mirNotExact is "" when res has, for every group of want, want[group] partitions, all exact,
// and in the gapless source topics (no compaction, no transactions: offsets count records)
// as many records left to read on the target (left) as the source lag; else what differs
// (got and want).
func mirNotExact(res *reconcile.Result, want map[string]int, left func(topic string, p int32, from int64) int64, gapless ...string) string {
	var bad []string
	seen := map[string]bool{}
	for _, g := range res.Groups {
		seen[g.Group] = true
		if g.Err != "" {
			bad = append(bad, fmt.Sprintf("group %s: %s", g.Group, g.Err))
		}
		if len(g.Partitions) != want[g.Group] {
			bad = append(bad, fmt.Sprintf("group %s: %d partitions planned, want %d", g.Group, len(g.Partitions), want[g.Group]))
		}
		for _, p := range g.Partitions {
			srcLag, dstLag := p.SourceEnd-p.SourceCommitted, int64(-1)
			if p.TargetCommitted != nil && slices.Contains(gapless, p.Topic) {
				dstLag = left(p.Topic, p.Partition, *p.TargetCommitted)
			}
			if p.Status != reconcile.StatusExact || p.TargetCommitted == nil || (slices.Contains(gapless, p.Topic) && srcLag != dstLag) {
				bad = append(bad, fmt.Sprintf("%s %s/%d: got %s (G=%d target=%s E=%s %s; source lag %d, target lag %d), want exact (and target records left = source lag in %v)",
					g.Group, p.Topic, p.Partition, p.Status, p.SourceCommitted, fmtP(p.TargetCommitted), fmtP(p.ExactTarget), p.Reason, srcLag, dstLag, gapless))
			}
		}
	}
	for g := range want {
		if !seen[g] {
			bad = append(bad, "no group "+g+" in the plan")
		}
	}
	return strings.Join(bad, "; ")
}

// mirAlign aligns source and target partition record by record (key, value, headers,
// timestamp) with align.Partition.
func mirAlign(ctx context.Context, t *testing.T, src, dst cluster.Cluster, topic string, p int32) align.PartitionResult {
	t.Helper()
	fields := offsetmap.DefaultFields | offsetmap.FieldTimestamp
	s := mirStream(ctx, t, src, topic, p, fields)
	d := mirStream(ctx, t, dst, topic, p, fields)
	res, _, err := align.Partition(ctx, s, d, align.Options{Partition: p, Fields: fields, StrictTargetFrom: true, StrictTargetTo: true})
	if err != nil {
		t.Fatalf("align %s/%d: %v", topic, p, err)
	}
	return res
}

func mirClean(t *testing.T, topic string, p int32, res align.PartitionResult) {
	t.Helper()
	if res.Missing+res.Duplicated+res.Mismatched+res.Extra != 0 || res.Matched == 0 {
		t.Errorf("%s/%d: matched %d, missing %d %v, duplicated %d %v, mismatched %d, extra %d %v; want all matched",
			topic, p, res.Matched, res.Missing, res.MissingRanges, res.Duplicated, res.Duplicates, res.Mismatched, res.Extra, res.ExtraRanges)
	} else {
		t.Logf("%s/%d: %d records identical, 0 missing, 0 duplicated", topic, p, res.Matched)
	}
}

// partStream reads one partition from its start to its end at creation, read_committed,
// without control records.
type partStream struct {
	cl     *kgo.Client
	end    int64
	buf    []*kgo.Record
	done   bool
	fields offsetmap.Fields
}

func mirStream(ctx context.Context, t *testing.T, c cluster.Cluster, topic string, p int32, fields offsetmap.Fields) *partStream {
	t.Helper()
	end := bedEndOffsets(ctx, t, c, topic)[p]
	cl := bedClient(t, c.Bootstrap(),
		kgo.ConsumePartitions(map[string]map[int32]kgo.Offset{topic: {p: kgo.NewOffset().AtStart()}}),
		kgo.FetchIsolationLevel(kgo.ReadCommitted()), kgo.KeepControlRecords())
	return &partStream{cl: cl, end: end, done: end == 0, fields: fields}
}

func (s *partStream) Next(ctx context.Context) (align.Item, bool, error) {
	for len(s.buf) == 0 {
		if s.done {
			return align.Item{}, false, nil
		}
		fs := s.cl.PollFetches(ctx)
		if err := ctx.Err(); err != nil {
			return align.Item{}, false, err
		}
		var ferr error
		fs.EachError(func(_ string, _ int32, err error) { ferr = err })
		if ferr != nil {
			return align.Item{}, false, ferr
		}
		fs.EachRecord(func(r *kgo.Record) {
			if r.Offset >= s.end-1 {
				s.done = true
			}
			if r.Offset < s.end && !r.Attrs.IsControl() {
				s.buf = append(s.buf, r)
			}
		})
	}
	r := s.buf[0]
	s.buf = s.buf[1:]
	return align.NewItem(r, s.fields), true, nil
}

// mirProps writes an mm2.properties for flow srcAlias->dstAlias mirroring topics.
func mirProps(t *testing.T, src, dst cluster.Cluster, srcAlias, dstAlias, topics string) string {
	t.Helper()
	props := bedProperties(src, dst, srcAlias, dstAlias, topics,
		"emit.checkpoints.enabled=false",
		"refresh.topics.interval.seconds=5",
		srcAlias+".consumer.session.timeout.ms=6000",
		dstAlias+".producer.linger.ms=10")
	path := filepath.Join(t.TempDir(), "mm2.properties")
	if err := os.WriteFile(path, []byte(props), 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

// mirProc is a running kmirror process.
type mirProc struct {
	cmd       *exec.Cmd
	log       string
	metrics   string
	exited    chan error
	container string // the container's name when kmirror runs in kmigrate's image
}

// mirLauncher starts kmirror on the flow of an mm2.properties file.
type mirLauncher func(t *testing.T, props, flow, name string) *mirProc

// mirBinary launches the kmirror binary at bin.
func mirBinary(bin string) mirLauncher {
	return func(t *testing.T, props, flow, name string) *mirProc { return mirStart(t, bin, props, flow, name) }
}

func mirStart(t *testing.T, bin, props, flow, name string) *mirProc {
	t.Helper()
	return mirStartOwned(t, t, bin, props, flow, name)
}

// mirStartOwned is mirStart for a process owned by owner, not by the subtest t that starts it
// (mirLaunchOwned).
func mirStartOwned(t, owner *testing.T, bin, props, flow, name string) *mirProc {
	t.Helper()
	return mirLaunchOwned(t, owner, name, "", func(addr, level string) []string {
		return []string{bin, "run", "--config", props, "--flow", flow, "--metrics-addr", addr, "--log-level", level}
	})
}

// mirLaunch runs the command argv gives for a free metrics address and the log level, with its
// output in a log file; container names the container it runs in, if any, for kill.
func mirLaunch(t *testing.T, name, container string, argv func(addr, level string) []string) *mirProc {
	t.Helper()
	return mirLaunchOwned(t, t, name, container, argv)
}

// mirLaunchOwned is mirLaunch for a process that outlives the subtest t starting it: owner's
// cleanup kills it and owner's temporary directory holds its log; t gets the failures.
func mirLaunchOwned(t, owner *testing.T, name, container string, argv func(addr, level string) []string) *mirProc {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	dir := os.Getenv("KMIGRATE_LOGDIR") // kept after the test when set
	if dir == "" {
		dir = owner.TempDir()
	}
	logPath := filepath.Join(dir, name+".log")
	f, err := os.Create(logPath)
	if err != nil {
		t.Fatal(err)
	}
	level := os.Getenv("KMIGRATE_MIRROR_LOG_LEVEL")
	if level == "" {
		level = "info"
	}
	args := argv(addr, level)
	cmd := exec.Command(args[0], args[1:]...)
	cmd.Stdout, cmd.Stderr = f, f
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	if err := cmd.Start(); err != nil {
		t.Fatalf("start kmirror: %v", err)
	}
	p := &mirProc{cmd: cmd, log: logPath, metrics: "http://" + addr + "/metrics", exited: make(chan error, 1), container: container}
	go func() {
		p.exited <- cmd.Wait()
		f.Close()
	}()
	owner.Cleanup(func() {
		p.kill()
		if owner.Failed() {
			b, _ := os.ReadFile(logPath)
			lines := strings.Split(string(b), "\n")
			owner.Logf("tail of %s:\n%s", name, strings.Join(lines[max(0, len(lines)-40):], "\n"))
		}
	})
	return p
}

// mirHeldRE finds, in kmirror's error at its commit bound, the broker it names to restart
// over a transaction the target decided but did not finish (PrepareCommit, PrepareAbort).
var mirHeldRE = regexp.MustCompile(`\(the commit bound\).*in state Prepare(?:Commit|Abort).*?restart broker (\d+)`)

// mirFenceRE finds kmirror's warning that its fence (the initialisation of a bucket's
// transactional id, at a start or after an engine restart) waits for the target to end a
// transaction the target decided but did not finish, and the broker it names to restart.
var mirFenceRE = regexp.MustCompile(`fencing the previous owner waits for the target to end its transaction.*in state Prepare(?:Commit|Abort).*?restart broker (\d+)`)

// mirFenceHeld is how many such warnings p's log holds and the target broker (node id) the
// last one names, -1 when none does. kmirror runs on meanwhile: the fence goes on once the
// target ends the transaction, which the broker it names does once restarted.
func mirFenceHeld(p *mirProc) (n, broker int) {
	b, _ := os.ReadFile(p.log)
	all := mirFenceRE.FindAllSubmatch(b, -1)
	if len(all) == 0 {
		return 0, -1
	}
	broker, err := strconv.Atoi(string(all[len(all)-1][1]))
	if err != nil {
		broker = -1
	}
	return len(all), broker
}

// mirHeldBroker is the target broker (node id) p's log names to restart over such a
// transaction, or -1.
func mirHeldBroker(p *mirProc) int {
	b, _ := os.ReadFile(p.log)
	if m := mirHeldRE.FindSubmatch(b); m != nil {
		if n, err := strconv.Atoi(string(m[1])); err == nil {
			return n
		}
	}
	return -1
}

// exit reports, without waiting, whether p has exited and with what (the value stays in
// p.exited for the next reader).
func (p *mirProc) exit() (exited bool, err error) {
	select {
	case err := <-p.exited:
		p.exited <- err
		return true, err
	default:
		return false, nil
	}
}

// mirLastError is the last line of p's log at level ERROR (kmirror logs the error it stops on
// so), at most 2,000 bytes of it, or "none logged".
func mirLastError(p *mirProc) string {
	b, _ := os.ReadFile(p.log)
	lines := strings.Split(string(b), "\n")
	for i := len(lines) - 1; i >= 0; i-- {
		if strings.Contains(lines[i], "level=ERROR") {
			if len(lines[i]) > 2000 {
				return lines[i][:2000] + "..."
			}
			return lines[i]
		}
	}
	return "none logged"
}

// logCount counts the log lines of the process that contain s.
func (p *mirProc) logCount(s string) int {
	b, _ := os.ReadFile(p.log)
	return strings.Count(string(b), s)
}

func (p *mirProc) kill() {
	if p.container != "" {
		// SIGKILL to the docker client would leave the container running.
		_ = exec.Command("docker", "kill", "--signal", "KILL", p.container).Run()
	}
	if p.cmd.ProcessState == nil {
		p.cmd.Process.Signal(syscall.SIGKILL)
	}
}

// term sends SIGTERM and waits for a clean exit.
func (p *mirProc) term(t *testing.T) {
	t.Helper()
	p.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case err := <-p.exited:
		if err != nil {
			t.Errorf("kmirror exited with %v after SIGTERM, want 0", err)
		}
	case <-time.After(60 * time.Second):
		t.Errorf("kmirror did not exit within 60s of SIGTERM")
	}
}

var ownedRE = regexp.MustCompile(`(?m)^kmirror_owned_partitions (\d+)$`)

// mirStaleTakeover stops p (SIGSTOP) past its 6 s session timeout, starts a new process that
// takes all parts partitions over, then wakes p, and returns the new process.
func mirStaleTakeover(ctx context.Context, t *testing.T, p *mirProc, parts int, start func() *mirProc) *mirProc {
	t.Helper()
	if err := p.cmd.Process.Signal(syscall.SIGSTOP); err != nil {
		t.Fatal(err)
	}
	q := start()
	wctx, cancel := context.WithTimeout(ctx, 2*time.Minute)
	defer cancel()
	mirTakesAll(wctx, t, q, parts)
	if err := p.cmd.Process.Signal(syscall.SIGCONT); err != nil {
		t.Fatal(err)
	}
	return q
}

// mirTakesAll waits until the new process q owns all parts partitions.
func mirTakesAll(ctx context.Context, t *testing.T, q *mirProc, parts int) {
	t.Helper()
	bedWaitFor(ctx, t, 200*time.Millisecond, "the new owner to take every partition over", func() string {
		if n := q.owned(); n != parts {
			return fmt.Sprintf("the new process owns %d of %d", n, parts)
		}
		return ""
	})
}

// owned scrapes the process's metrics for the number of partitions it owns (-1: no answer).
func (p *mirProc) owned() int {
	resp, err := http.Get(p.metrics)
	if err != nil {
		return -1
	}
	defer resp.Body.Close()
	sc := bufio.NewScanner(resp.Body)
	var b strings.Builder
	for sc.Scan() {
		b.WriteString(sc.Text() + "\n")
	}
	m := ownedRE.FindStringSubmatch(b.String())
	if m == nil {
		return -1
	}
	n, _ := strconv.Atoi(m[1])
	return n
}

// mirProducer produces total records to topic's partitions in the background, spread over
// about span, so that the mirror is killed while records keep coming.
func mirProducer(ctx context.Context, t *testing.T, c cluster.Cluster, topic string, partitions int32, total int, span time.Duration) (wait func(), produced *atomic.Int64) {
	t.Helper()
	cl := bedClient(t, c.Bootstrap(), kgo.RecordPartitioner(kgo.ManualPartitioner()), kgo.ProducerLinger(5*time.Millisecond))
	produced = &atomic.Int64{}
	var wg sync.WaitGroup
	var perr atomic.Value
	wg.Go(func() {
		pad := strings.Repeat("p", 80)
		const chunk = 1000
		pause := span / time.Duration(max(1, total/chunk))
		for i := 0; i < total && ctx.Err() == nil; i++ {
			if i > 0 && i%chunk == 0 {
				time.Sleep(pause)
			}
			r := &kgo.Record{Topic: topic, Partition: int32(i) % partitions,
				Key: fmt.Appendf(nil, "k%d", i%1000), Value: fmt.Appendf(nil, "%d-%s", i, pad)}
			cl.Produce(ctx, r, func(_ *kgo.Record, err error) {
				if err != nil {
					perr.Store(err)
				} else {
					produced.Add(1)
				}
			})
		}
		cl.Flush(ctx)
	})
	return func() {
		wg.Wait()
		if err, _ := perr.Load().(error); err != nil {
			t.Fatalf("background producer: %v", err)
		}
	}, produced
}

// mirBehind is "" when topic on dst holds want records in all, else how many it holds.
func mirBehind(ctx context.Context, t *testing.T, dst cluster.Cluster, topic string, want int64) string {
	if got := sumEnds(ctx, t, dst, topic); got < want { // cheap: offsets are at least records
		return fmt.Sprintf("target log ends at %d offsets, want at least %d records", got, want)
	}
	if got := sumRecords(ctx, t, dst, topic); got < want {
		return fmt.Sprintf("target has %d of %d committed records", got, want)
	}
	return ""
}

// sumRecords counts the committed records of every partition of topic (transaction markers
// and aborted records take offsets: sumEnds counts them too).
func sumRecords(ctx context.Context, t *testing.T, c cluster.Cluster, topic string) int64 {
	var n int64
	for p := range bedEndOffsets(ctx, t, c, topic) {
		n += bedRecordsFrom(ctx, t, c, topic, p, 0)
	}
	return n
}

func sumEnds(ctx context.Context, t *testing.T, c cluster.Cluster, topic string) int64 {
	var n int64
	for _, o := range bedEndOffsets(ctx, t, c, topic) {
		n += o
	}
	return n
}

func mirKill9(t *testing.T, src, dst cluster.Cluster, bin string) {
	total := 200000
	if v := os.Getenv("KMIGRATE_MIRROR_RECORDS"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil {
			t.Fatalf("KMIGRATE_MIRROR_RECORDS=%q: %v", v, err)
		}
		total = n
	}
	const parts = 6
	topic := bedUnique("mir-kill9")
	bedCreateTopic(t, src, topic, parts, nil)
	props := mirProps(t, src, dst, "S1", "T1", topic)
	ctx, cancel := context.WithTimeout(context.Background(), 15*time.Minute)
	defer cancel()
	waitProduced, produced := mirProducer(ctx, t, src, topic, parts, total, 60*time.Second)

	var procs []*mirProc
	for kill := 1; kill <= 5; kill++ {
		p := mirStart(t, bin, props, "S1->T1", fmt.Sprintf("kmirror-kill%d", kill))
		procs = append(procs, p)
		before := sumRecords(ctx, t, dst, topic)
		// Let it own partitions and commit a good share before the crash (committed records:
		// what it wrote after its last commit is aborted by the next owner and mirrored again).
		bedWaitFor(ctx, t, time.Second, fmt.Sprintf("run %d to mirror and commit records", kill), func() string {
			owned, srcN := p.owned(), sumEnds(ctx, t, src, topic)
			if owned != parts {
				return fmt.Sprintf("owns %d of %d partitions", owned, parts)
			}
			if got := sumRecords(ctx, t, dst, topic); got <= before+int64(total/50) && got < srcN {
				return fmt.Sprintf("target %d committed records (%d before), source %d", got, before, srcN)
			}
			return ""
		})
		// Killed frozen with records in an open transaction: the next owner must abort them and
		// mirror them again (a kill right after a commit would leave nothing to resume).
		freezeOpen(ctx, t, fmt.Sprintf("kmirror-kill%d", kill), p.cmd.Process.Pid, dst, topic)
		p.kill()
		<-p.exited
		t.Logf("kill -9 #%d: target log ends at %d offsets (aborted records and markers included), source %d produced", kill, sumEnds(ctx, t, dst, topic), produced.Load())
	}
	waitProduced()
	p := mirStart(t, bin, props, "S1->T1", "kmirror-final")
	procs = append(procs, p)
	want := sumEnds(ctx, t, src, topic)
	bedWaitFor(ctx, t, 200*time.Millisecond, "the final run to mirror everything", func() string { return mirBehind(ctx, t, dst, topic, want) })
	p.term(t)
	if got := sumRecords(ctx, t, dst, topic); got != want {
		t.Errorf("target has %d committed records, source %d: duplicates", got, want)
	}
	// The kills must have left records produced but not committed, aborted and mirrored again
	// at resume (or, without transactions, found again by the tail check).
	tails := 0
	for i, p := range procs[1:] {
		n := p.logCount(`msg="target tail reconciled"`) + p.logCount(`msg="an earlier owner's uncommitted records were aborted`)
		if n == 0 {
			t.Errorf("the run after kill -9 #%d reconciled no target tail, although the kill left a transaction open", i+1)
		}
		tails += n
	}
	t.Logf("kill -9: %d partition resumes reconciled an unpersisted target tail", tails)
	for part := int32(0); part < parts; part++ {
		mirClean(t, topic, part, mirAlign(ctx, t, src, dst, topic, part))
	}
}

func mirShared(t *testing.T, src, dst cluster.Cluster, bin string) {
	const parts = 12
	topic := bedUnique("mir-shared")
	bedCreateTopic(t, src, topic, parts, nil)
	props := mirProps(t, src, dst, "S2", "T2", topic)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	waitProduced, _ := mirProducer(ctx, t, src, topic, parts, 120000, 20*time.Second)
	p1 := mirStart(t, bin, props, "S2->T2", "kmirror-p1")
	p2 := mirStart(t, bin, props, "S2->T2", "kmirror-p2")
	bedWaitFor(ctx, t, 200*time.Millisecond, "both processes to share the partitions", func() string {
		if a, b := p1.owned(), p2.owned(); a <= 0 || b <= 0 || a+b != parts {
			return fmt.Sprintf("p1 owns %d, p2 owns %d of %d", a, b, parts)
		}
		return ""
	})
	t.Logf("shared: p1 owns %d, p2 owns %d partitions; killing p1", p1.owned(), p2.owned())
	p1.kill()
	<-p1.exited
	bedWaitFor(ctx, t, 200*time.Millisecond, "p2 to take every partition over", func() string {
		if n := p2.owned(); n != parts {
			return fmt.Sprintf("p2 owns %d of %d", n, parts)
		}
		return ""
	})
	waitProduced()
	want := sumEnds(ctx, t, src, topic)
	bedWaitFor(ctx, t, 200*time.Millisecond, "everything to be mirrored", func() string { return mirBehind(ctx, t, dst, topic, want) })
	p2.term(t)
	if got := sumRecords(ctx, t, dst, topic); got != want {
		t.Errorf("target has %d records, source %d", got, want)
	}
	for part := int32(0); part < parts; part++ {
		mirClean(t, topic, part, mirAlign(ctx, t, src, dst, topic, part))
	}
}

// mirStaleOwner is the stale owner on real brokers: p1 loses its
// source-group session without noticing (SIGSTOP for longer than the 6 s session timeout,
// records still arriving, its producer holding records), p2 takes every partition over, then
// p1 wakes up and sends what it held. The transactional fence makes the target refuse those
// writes; the target ends with every record exactly once.
func mirStaleOwner(t *testing.T, src, dst cluster.Cluster, bin string) {
	const parts = 6
	topic := bedUnique("mir-stale")
	bedCreateTopic(t, src, topic, parts, nil)
	props := mirProps(t, src, dst, "S4", "T4", topic)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	waitProduced, produced := mirProducer(ctx, t, src, topic, parts, 150000, 30*time.Second)
	p1 := mirStart(t, bin, props, "S4->T4", "kmirror-stale")
	mirOwnsAll(ctx, t, p1, dst, topic, parts)
	stoppedAt := produced.Load()
	p2 := mirStaleTakeover(ctx, t, p1, parts, func() *mirProc { return mirStart(t, bin, props, "S4->T4", "kmirror-new-owner") })
	t.Logf("stale-owner: p1 stopped at %d records produced, woken after p2 took over at %d", stoppedAt, produced.Load())
	waitProduced()
	want := mirAllCopied(ctx, t, src, dst, topic)
	fenced := p1.logCount(`msg="partition fenced`)
	p1.term(t)
	p2.term(t)
	t.Logf("stale-owner: p1 logged %d fenced partitions", fenced)
	mirEachOnce(ctx, t, src, dst, topic, parts, want)
}

// mirOwnsAll waits until p owns every partition of topic and has written 5,000 offsets of it.
func mirOwnsAll(ctx context.Context, t *testing.T, p *mirProc, dst cluster.Cluster, topic string, parts int) {
	t.Helper()
	bedWaitFor(ctx, t, 200*time.Millisecond, "the first process to own every partition and mirror", func() string {
		if n, got := p.owned(), sumEnds(ctx, t, dst, topic); n != parts || got < 5000 {
			return fmt.Sprintf("owns %d of %d, target log at %d offsets", n, parts, got)
		}
		return ""
	})
}

// mirAllCopied waits until the target holds every record of the source topic and returns how
// many offsets the source has.
func mirAllCopied(ctx context.Context, t *testing.T, src, dst cluster.Cluster, topic string) int64 {
	t.Helper()
	want := sumEnds(ctx, t, src, topic)
	bedWaitFor(ctx, t, 500*time.Millisecond, "everything to be mirrored", func() string { return mirBehind(ctx, t, dst, topic, want) })
	return want
}

// mirEachOnce checks that the target holds want committed records and each partition every
// source record once, in order.
func mirEachOnce(ctx context.Context, t *testing.T, src, dst cluster.Cluster, topic string, parts int, want int64) {
	t.Helper()
	if got := sumRecords(ctx, t, dst, topic); got != want {
		t.Errorf("target has %d committed records, source %d", got, want)
	}
	for part := int32(0); part < int32(parts); part++ {
		mirClean(t, topic, part, mirAlign(ctx, t, src, dst, topic, part))
	}
}

// mirBucketCount changes the flow's bucket count under a stale owner: p1 (the default 16
// buckets) is frozen mid-flow, with a transaction open, until the group expires it; p2 starts
// with --fence-buckets 4, finds the map written under 16 buckets and fences their
// transactional ids before it reads the target. When p1 thaws, its open transactions are
// refused, and the group refuses p1 itself (another bucket count): it stops with an error that
// says so. The target ends with every source record once.
func mirBucketCount(t *testing.T, src, dst cluster.Cluster, bin string) {
	const parts = 6
	topic := bedUnique("mir-buckets")
	bedCreateTopic(t, src, topic, parts, nil)
	props := mirProps(t, src, dst, "S5", "T5", topic)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	waitProduced, _ := mirProducer(ctx, t, src, topic, parts, 100000, 20*time.Second)
	p1 := mirStart(t, bin, props, "S5->T5", "kmirror-16")
	mirOwnsAll(ctx, t, p1, dst, topic, parts)
	// p1 freezes with a transaction open; only once the group has expired it does p2 start (a
	// process of another count is refused while a member of the old one is in the group).
	freezeOpen(ctx, t, "kmirror-16", p1.cmd.Process.Pid, dst, topic)
	adm := bedAdmin(t, src)
	bedWaitFor(ctx, t, 200*time.Millisecond, "the group to expire the frozen p1", func() string {
		d, err := adm.DescribeGroups(ctx, "kmirror-S5-T5")
		if err != nil {
			return err.Error()
		}
		if n := len(d["kmirror-S5-T5"].Members); n > 0 {
			return fmt.Sprintf("%d members", n)
		}
		return ""
	})
	p2 := mirLaunch(t, "kmirror-4", "", func(addr, level string) []string {
		return []string{bin, "run", "--config", props, "--flow", "S5->T5", "--fence-buckets", "4", "--metrics-addr", addr, "--log-level", level}
	})
	mirTakesAll(ctx, t, p2, parts)
	if err := p1.cmd.Process.Signal(syscall.SIGCONT); err != nil {
		t.Fatal(err)
	}
	select {
	case <-p1.exited:
	case <-ctx.Done():
		t.Fatalf("p1 (16 buckets) still runs after the group went to p2 (4 buckets)")
	}
	if p1.logCount("refused this process") == 0 || p1.logCount("16 buckets") == 0 {
		t.Errorf("p1 stopped without saying the group refused its bucket count; its log: %s", p1.log)
	}
	if p2.logCount("the offset map was written under another fencing scheme") == 0 {
		t.Errorf("p2 did not fence the 16 buckets' transactional ids; its log: %s", p2.log)
	}
	waitProduced()
	want := mirAllCopied(ctx, t, src, dst, topic)
	p2.term(t)
	mirEachOnce(ctx, t, src, dst, topic, parts, want)
}

// TestMirrorBench compares, on the same brokers (2.3.0 -> 3.7.1) and the same data, the time
// to copy N records and the peak RSS of: kmirror (the binary), MirrorMaker 2 3.7.1 with
// default settings, MM2 tuned, and a bare franz-go consume-to-produce loop (this test binary
// re-run as a helper process). It runs only with KMIGRATE_BENCH=1 (scripts/bench-mirror-fence.sh);
// KMIGRATE_BENCH_RECORDS sets N (default 500000, 200-byte values compressible ~2:1, 6
// partitions, snappy as franz-go produces by default). It prints a
// Markdown table.
func TestMirrorBench(t *testing.T) {
	if os.Getenv("KMIGRATE_BENCH") != "1" {
		t.Skip("set KMIGRATE_BENCH=1 (or run scripts/bench-mirror-fence.sh) to run the 200-byte mirror benchmark")
	}
	n := 500000
	if v := os.Getenv("KMIGRATE_BENCH_RECORDS"); v != "" {
		var err error
		if n, err = strconv.Atoi(v); err != nil {
			t.Fatalf("KMIGRATE_BENCH_RECORDS=%q: %v", v, err)
		}
	}
	const parts = 6
	src := cluster.StartT(t, cluster.Spec{Version: "2.3.0", Name: "bench-src"})
	dst := cluster.StartT(t, cluster.Spec{Version: "3.7.1", Name: "bench-dst"})
	if t.Failed() || t.Skipped() {
		return
	}
	topic := bedUnique("bench")
	bedCreateTopic(t, src, topic, parts, nil)
	ctx, cancel := context.WithTimeout(context.Background(), 40*time.Minute)
	defer cancel()
	{
		cl := bedClient(t, src.Bootstrap(), kgo.RecordPartitioner(kgo.ManualPartitioner()), kgo.ProducerLinger(10*time.Millisecond))
		// Values of 200 hex characters from a seeded generator: compressible about 2:1, like
		// typical payloads (a run of one byte would decompress to many times the fetch size).
		rng := rand.New(rand.NewPCG(1, 2))
		raw := make([]byte, 100)
		var wg sync.WaitGroup
		var perr atomic.Value
		for i := 0; i < n; i++ {
			for j := range raw {
				raw[j] = byte(rng.Uint32())
			}
			value := []byte(hex.EncodeToString(raw))
			wg.Add(1)
			cl.Produce(ctx, &kgo.Record{Topic: topic, Partition: int32(i % parts), Key: fmt.Appendf(nil, "key-%d", i), Value: value},
				func(_ *kgo.Record, err error) {
					if err != nil {
						perr.Store(err)
					}
					wg.Done()
				})
		}
		wg.Wait()
		if err, _ := perr.Load().(error); err != nil {
			t.Fatalf("seed the source: %v", err)
		}
	}
	t.Logf("source topic %s: %d records in %d partitions", topic, n, parts)

	type result struct {
		name          string
		total, steady time.Duration
		rssKiB        int64
	}
	var results []result
	// waitCopied polls the target topic until it holds n records, returning the time of the
	// first record and of the end.
	waitCopied := func(target string, started time.Time, alive func() bool) (first, end time.Time) {
		for {
			got := sumEnds(ctx, t, dst, target)
			if got > 0 && first.IsZero() {
				first = time.Now()
			}
			if got >= int64(n) {
				return first, time.Now()
			}
			if ctx.Err() != nil || !alive() {
				t.Fatalf("%s: %d of %d records copied after %v", target, got, n, time.Since(started))
			}
			time.Sleep(100 * time.Millisecond)
		}
	}

	// bare franz-go loop
	{
		target := "bare." + topic
		bedCreateTopic(t, dst, target, parts, nil)
		cmd := exec.Command(os.Args[0], "-test.run=^TestMirrorBareHelper$")
		cmd.Env = append(os.Environ(), "KMIGRATE_BARE_HELPER=1",
			"KMIGRATE_BARE_SRC="+strings.Join(src.Bootstrap(), ","), "KMIGRATE_BARE_DST="+strings.Join(dst.Bootstrap(), ","),
			"KMIGRATE_BARE_TOPIC="+topic, "KMIGRATE_BARE_TARGET="+target, fmt.Sprintf("KMIGRATE_BARE_N=%d", n))
		out := &strings.Builder{}
		cmd.Stdout, cmd.Stderr = out, out
		start := time.Now()
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		watch := peakrss.Start(cmd.Process.Pid)
		exited := make(chan struct{})
		go func() { cmd.Wait(); close(exited) }()
		first, end := waitCopied(target, start, func() bool {
			select {
			case <-exited:
				return sumEnds(ctx, t, dst, target) >= int64(n)
			default:
				return true
			}
		})
		<-exited
		if !cmd.ProcessState.Success() {
			t.Fatalf("bare loop helper: %v\n%s", cmd.ProcessState, out)
		}
		results = append(results, result{"bare franz-go loop", end.Sub(start), end.Sub(first), watch.Stop()})
	}

	// kmirror: the default (a transactional producer per bucket of partitions, fencing a stale owner)
	// and without the fence (B.exactly.once.source.support=disabled), so the fence's cost is
	// measured in the same run.
	bin := filepath.Join(bedBuild(t, "kmirror"), "kmirror")
	for _, km := range []struct{ alias, name, extra string }{
		{"km", "kmirror", ""},
		{"kn", "kmirror (no fence: B.exactly.once.source.support=disabled)", "B.exactly.once.source.support=disabled\n"},
	} {
		props := filepath.Join(t.TempDir(), "bench.properties")
		text := fmt.Sprintf(`clusters=%[1]s,B
%[1]s.bootstrap.servers=%[2]s
B.bootstrap.servers=%[3]s
%[1]s->B.enabled=true
%[1]s->B.topics=%[4]s
replication.factor=1
offset-syncs.topic.replication.factor=1
checkpoints.topic.replication.factor=1
offset-syncs.topic.location=target
`, km.alias, strings.Join(src.Bootstrap(), ","), strings.Join(dst.Bootstrap(), ","), topic) + km.extra
		// Extra kmirror keys to try settings, e.g. "km.consumer.fetch.max.bytes=16777216".
		text += strings.ReplaceAll(os.Getenv("KMIGRATE_BENCH_KMIRROR_PROPS"), ";", "\n") + "\n"
		if err := os.WriteFile(props, []byte(text), 0o600); err != nil {
			t.Fatal(err)
		}
		target := km.alias + "." + topic
		start := time.Now()
		p := mirStart(t, bin, props, km.alias+"->B", "kmirror-bench-"+km.alias)
		watch := peakrss.Start(p.cmd.Process.Pid)
		first, end := waitCopied(target, start, func() bool { return p.cmd.ProcessState == nil })
		rss := watch.Stop() // before the stop signal: the peak of the run, not of shutting down
		p.term(t)
		results = append(results, result{km.name, end.Sub(start), end.Sub(first), rss})
	}

	// MirrorMaker 2, default and tuned (KMIGRATE_BENCH_SKIP_MM2=1 leaves them out)
	mms := []struct{ alias, name, extra string }{
		{"md", "MirrorMaker 2 3.7.1 (defaults)", ""},
		// Tuned, best effort, each value for a reason:
		//   tasks.max = the partition count: one task per partition, the most parallelism
		//     MM2 can use (the default, 1, runs every partition through one task);
		//   linger.ms 20 and batch.size 512 KiB: full producer batches instead of one request
		//     per poll (defaults 0 ms and 16 KiB);
		//   max.poll.records 5000, max.partition.fetch.bytes 4 MiB, fetch.max.bytes 50 MiB:
		//     larger polls and fetches per task (defaults 500, 1 MiB, 50 MiB);
		//   offset.flush.interval.ms 10 s: fewer offset commits and offset syncs to wait
		//     for (default 60 s would hold more in flight on a crash, not speed the copy).
		{"mt", "MirrorMaker 2 3.7.1 (tuned)", fmt.Sprintf(`tasks.max=%d
B.producer.linger.ms=20
B.producer.batch.size=524288
mt.consumer.max.poll.records=5000
mt.consumer.max.partition.fetch.bytes=4194304
mt.consumer.fetch.max.bytes=52428800
offset.flush.interval.ms=10000
`, parts)},
	}
	if os.Getenv("KMIGRATE_BENCH_SKIP_MM2") == "1" {
		mms = nil
	}
	for _, mm := range mms {
		text := bpMM2Props(src, dst, mm.alias, topic, mm.extra)
		target := mm.alias + "." + topic
		start := time.Now()
		// MM2 as its own start script runs it: the script's heap and G1 options, full JIT.
		m, err := cluster.StartMM2(ctx, cluster.MM2Spec{Properties: text, Target: "B", Name: "bench-" + mm.alias, Dir: t.TempDir(), JVMFlags: cluster.MM2ScriptJVMFlags})
		if err != nil {
			t.Fatalf("start %s: %v", mm.name, err)
		}
		first, end := waitCopied(target, start, func() bool { return m.Pid() != 0 })
		rss, _ := peakrss.VmHWM(m.Pid())
		m.Close()
		results = append(results, result{mm.name, end.Sub(start), end.Sub(first), rss})
	}

	var b strings.Builder
	fmt.Fprintf(&b, "\n%d records of 200 B in %d partitions, Kafka 2.3.0 -> 3.7.1, one broker each, same machine:\n\n", n, parts)
	fmt.Fprintf(&b, "| mirror | wall time | records/s (wall) | records/s (first to last record) | peak RSS |\n|---|---|---|---|---|\n")
	for _, r := range results {
		fmt.Fprintf(&b, "| %s | %.1f s | %.0f | %.0f | %.0f MiB |\n", r.name, r.total.Seconds(),
			float64(n)/r.total.Seconds(), float64(n)/r.steady.Seconds(), float64(r.rssKiB)/1024)
	}
	km, kn, bare := results[1], results[2], results[0]
	fmt.Fprintf(&b, "\nsteady-state throughput ratios: kmirror / bare loop %.2f; kmirror without the fence / bare loop %.2f; fenced / unfenced %.2f",
		bare.steady.Seconds()/km.steady.Seconds(), bare.steady.Seconds()/kn.steady.Seconds(), kn.steady.Seconds()/km.steady.Seconds())
	if len(results) == 5 {
		md, mt := results[3], results[4]
		fmt.Fprintf(&b, "; kmirror / MM2 default %.2f; kmirror / MM2 tuned %.2f", md.steady.Seconds()/km.steady.Seconds(), mt.steady.Seconds()/km.steady.Seconds())
	}
	fmt.Fprintf(&b, "\n")
	t.Log(b.String())
	if out := os.Getenv("KMIGRATE_BENCH_OUT"); out != "" {
		if err := os.WriteFile(out, []byte(b.String()), 0o644); err != nil {
			t.Errorf("write %s: %v", out, err)
		}
	}
}

// TestMirrorBareHelper is the bare consume-to-produce loop of TestMirrorBench, run as its own
// process: every record of the source topic to the same partition of the target topic, with
// an idempotent acks=all producer, and nothing else (no offset map, no group).
// KMIGRATE_BARE_COMPRESSION sets the producer's compression (TestMirrorBenchProd: as the
// source's).
func TestMirrorBareHelper(t *testing.T) {
	if os.Getenv("KMIGRATE_BARE_HELPER") != "1" {
		t.Skip("helper process of TestMirrorBench")
	}
	n, _ := strconv.ParseInt(os.Getenv("KMIGRATE_BARE_N"), 10, 64)
	target := os.Getenv("KMIGRATE_BARE_TARGET")
	src, err := kgo.NewClient(kgo.SeedBrokers(strings.Split(os.Getenv("KMIGRATE_BARE_SRC"), ",")...),
		kgo.ConsumeTopics(os.Getenv("KMIGRATE_BARE_TOPIC")), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()),
		kgo.FetchMaxPartitionBytes(1<<20))
	if err != nil {
		t.Fatal(err)
	}
	defer src.Close()
	opts := []kgo.Opt{kgo.SeedBrokers(strings.Split(os.Getenv("KMIGRATE_BARE_DST"), ",")...),
		kgo.RecordPartitioner(kgo.ManualPartitioner()), kgo.ProducerLinger(5 * time.Millisecond),
		kgo.ProducerBatchMaxBytes(1 << 20), kgo.MaxBufferedRecords(10000)}
	if c := os.Getenv("KMIGRATE_BARE_COMPRESSION"); c != "" { // else franz-go's default, snappy
		codec, err := bpCodec(c)
		if err != nil {
			t.Fatal(err)
		}
		opts = append(opts, kgo.ProducerBatchCompression(codec))
	}
	dst, err := kgo.NewClient(opts...)
	if err != nil {
		t.Fatal(err)
	}
	defer dst.Close()
	ctx := context.Background()
	var acked atomic.Int64
	var polled int64
	for polled < n {
		fs := src.PollRecords(ctx, 5000)
		fs.EachRecord(func(r *kgo.Record) {
			polled++
			dst.Produce(ctx, &kgo.Record{Topic: target, Partition: r.Partition, Key: r.Key, Value: r.Value, Headers: r.Headers, Timestamp: r.Timestamp},
				func(_ *kgo.Record, err error) {
					if err != nil {
						panic(err)
					}
					acked.Add(1)
				})
		})
	}
	if err := dst.Flush(ctx); err != nil {
		t.Fatal(err)
	}
}
