package integration

import (
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
	"golang.org/x/sync/errgroup"

	"github.com/kmigrate/kmigrate/integration/cluster"
	"github.com/kmigrate/kmigrate/internal/testkit"
	"github.com/kmigrate/kmigrate/mm2"
	"github.com/kmigrate/kmigrate/reconcile"
)

// TestReconcileGrowth is how kreconcile's cost grows: the plan time of `kreconcile groups`
// at several group counts (default 1,000 and 10,000 groups x 24 partitions) with MM2's
// checkpoints present, on a Kafka 2.3.0 source and a 3.7.1 target. The real MirrorMaker 2
// 3.7.1 mirrors the topic and writes its offset syncs; the groups are committed on the source
// with kadm (OffsetCommit, no members, one request per group), and their checkpoints are
// written to the target's checkpoints topic in MM2's byte format (mm2.Checkpoint), translated
// as MM2 3.7.1 does (mm2Translate), with the target commits MM2's group offset sync would
// write. The counts grow in one run: each size adds groups to the previous ones and plans them
// all. It runs only with KMIGRATE_BENCH=1 (scripts/bench-growth.sh):
//
//	KMIGRATE_GROWTH_GROUPS   comma-separated group counts (default 1000,10000)
//	KMIGRATE_GROWTH_RECORDS  records per partition (default 2000)
//	KMIGRATE_GROWTH_MIRROR   "copy": no MM2, the test copies the records and writes the
//	                         offset syncs itself (for KMIGRATE_PROVIDER=kfake profiling runs)
//	KMIGRATE_BENCH_OUT       also write the Markdown table to this file
func TestReconcileGrowth(t *testing.T) {
	if os.Getenv("KMIGRATE_BENCH") != "1" {
		t.Skip("benchmark: set KMIGRATE_BENCH=1 (scripts/bench-growth.sh) to run it")
	}
	const partitions = 24
	sizes := growthInts(t, "KMIGRATE_GROWTH_GROUPS", []int{1000, 10000})
	perPart := growthInts(t, "KMIGRATE_GROWTH_RECORDS", []int{2000})[0]
	src := cluster.StartT(t, cluster.Spec{Version: cluster.V230, Name: "source"})
	dst := cluster.StartT(t, cluster.Spec{Version: cluster.V371, Name: "destination"})
	ctx := bedCtx(t, 60*time.Minute)
	run := fmt.Sprintf("%x", time.Now().UnixNano())
	topic := "rg-" + run
	var props string
	how := fmt.Sprintf("Kafka %s -> %s, MirrorMaker 2 3.7.1's offset syncs", src.Version(), dst.Version())
	if os.Getenv("KMIGRATE_GROWTH_MIRROR") == "copy" {
		props = rgCopy(ctx, t, src, dst, topic, partitions, perPart)
		how = fmt.Sprintf("%s -> %s, records copied and offset syncs written by the test", src.Version(), dst.Version())
	} else {
		props = rgMirror(ctx, t, src, dst, topic, partitions, perPart)
	}
	flow := bedFlow(t, props, "")
	syncs, err := mm2.ReadOffsetSyncs(ctx, bedClient(t, dst.Bootstrap()), flow.OffsetSyncsTopic())
	if err != nil || len(syncs) == 0 {
		t.Fatalf("read MM2's offset syncs on the target: %d syncs, %v", len(syncs), err)
	}
	idx := mm2.IndexSyncs(syncs)
	if tds, err := bedAdmin(t, dst).ListTopics(ctx, flow.CheckpointsTopic()); err != nil || !tds.Has(flow.CheckpointsTopic()) {
		bedCreateTopic(t, dst, flow.CheckpointsTopic(), 1, map[string]*string{"cleanup.policy": bedPtr("compact")})
	}

	rng := rand.New(rand.NewPCG(1, 2))
	positions := map[[2]int64]bool{} // distinct (partition, G): Plan aligns each once
	var rows []string
	done := 0
	for _, size := range sizes {
		commits := rgCommits(rng, run, done, size, partitions, perPart)
		for _, c := range commits {
			for p, g := range c.offs {
				positions[[2]int64{int64(p), g}] = true
			}
		}
		rgSeed(ctx, t, src, dst, flow, topic, idx, commits)
		done = size
		row := rgPlan(ctx, t, src, dst, flow, run, size, partitions, len(positions))
		rows = append(rows, row)
	}
	rgReport(t, rows, fmt.Sprintf("%d partitions of %d records, %s, MM2-format checkpoints", partitions, perPart, how))
}

// growthInts reads a comma-separated list of positive integers from the environment.
func growthInts(t *testing.T, name string, def []int) []int {
	t.Helper()
	v := os.Getenv(name)
	if v == "" {
		return def
	}
	var out []int
	for _, f := range strings.Split(v, ",") {
		n, err := strconv.Atoi(strings.TrimSpace(f))
		if err != nil || n < 1 {
			t.Fatalf("%s=%q: want positive integers separated by commas", name, v)
		}
		out = append(out, n)
	}
	return out
}

// rgMirror writes perPart records to each partition of topic on src and lets MirrorMaker 2
// mirror them to dst with its offset syncs (no checkpoints: emit.checkpoints.enabled=false);
// it returns the mm2.properties.
func rgMirror(ctx context.Context, t *testing.T, src, dst cluster.Cluster, topic string, partitions int32, perPart int) string {
	t.Helper()
	bedCreateTopic(t, src, topic, partitions, nil)
	prod := bedClient(t, src.Bootstrap(), kgo.RecordPartitioner(kgo.ManualPartitioner()), kgo.ProducerLinger(5*time.Millisecond))
	var recs []*kgo.Record
	for p := range partitions {
		for i := range perPart {
			recs = append(recs, &kgo.Record{Topic: topic, Partition: p, Key: fmt.Appendf(nil, "k%d", i%50), Value: fmt.Appendf(nil, "%s-%d-%d", topic, p, i)})
		}
	}
	if err := prod.ProduceSync(ctx, recs...).FirstErr(); err != nil {
		t.Fatalf("produce to %s: %v", topic, err)
	}
	props := rcProperties(src, dst, topic) + "emit.checkpoints.enabled=false\nsync.group.offsets.enabled=false\n" +
		"destination.offset.flush.interval.ms=2000\n"
	m := cluster.StartMM2T(t, cluster.MM2Spec{Properties: props, Target: "destination"})
	flow := bedFlow(t, props, "")
	bedWaitFor(ctx, t, 500*time.Millisecond, "MM2 to mirror "+topic+" and write offset syncs up to its end", func() string {
		ends := bedEndOffsets(ctx, t, dst, topic)
		for p := range partitions {
			if ends[p] < int64(perPart) {
				return fmt.Sprintf("partition %d has %d of %d records on the target", p, ends[p], perPart)
			}
		}
		syncs, err := mm2.ReadOffsetSyncs(ctx, bedClient(t, dst.Bootstrap()), flow.OffsetSyncsTopic())
		if err != nil {
			return err.Error()
		}
		idx := mm2.IndexSyncs(syncs)
		for p := range partitions {
			if idx.MaxUpstream(topic, p) < 0 {
				return fmt.Sprintf("no offset sync of partition %d yet", p)
			}
		}
		return ""
	})
	if err := m.Close(); err != nil {
		t.Logf("stop MM2: %v", err)
	}
	return props
}

// rgCopy is rgMirror without MirrorMaker 2: it writes the same records to topic on both
// clusters, and an MM2-format offset sync (u, u) every 100 records of each partition to the
// target's offset-syncs topic.
func rgCopy(ctx context.Context, t *testing.T, src, dst cluster.Cluster, topic string, partitions int32, perPart int) string {
	t.Helper()
	props := rcProperties(src, dst, topic)
	flow := bedFlow(t, props, "")
	var syncs []*kgo.Record
	for _, c := range []cluster.Cluster{src, dst} {
		bedCreateTopic(t, c, topic, partitions, nil)
		prod := bedClient(t, c.Bootstrap(), kgo.RecordPartitioner(kgo.ManualPartitioner()), kgo.ProducerLinger(5*time.Millisecond))
		var recs []*kgo.Record
		for p := range partitions {
			for i := range perPart {
				recs = append(recs, &kgo.Record{Topic: topic, Partition: p, Key: fmt.Appendf(nil, "k%d", i%50), Value: fmt.Appendf(nil, "%s-%d-%d", topic, p, i)})
				if c == dst && i%100 == 0 {
					s := mm2.OffsetSync{Topic: topic, Partition: p, Upstream: int64(i), Downstream: int64(i)}
					syncs = append(syncs, &kgo.Record{Topic: flow.OffsetSyncsTopic(), Partition: 0, Key: s.Key(), Value: s.Value()})
				}
			}
		}
		if err := prod.ProduceSync(ctx, recs...).FirstErr(); err != nil {
			t.Fatalf("produce to %s on %s: %v", topic, c.Name(), err)
		}
	}
	bedCreateTopic(t, dst, flow.OffsetSyncsTopic(), 1, nil)
	prod := bedClient(t, dst.Bootstrap(), kgo.RecordPartitioner(kgo.ManualPartitioner()))
	if err := prod.ProduceSync(ctx, syncs...).FirstErr(); err != nil {
		t.Fatalf("write offset syncs: %v", err)
	}
	return props
}

// rgCommit is one group's source commits, per partition.
type rgCommit struct {
	group string
	offs  []int64
}

// rgCommits draws the commits of groups [from, to): each partition at a uniform offset in
// [0, perPart].
func rgCommits(rng *rand.Rand, run string, from, to, partitions, perPart int) []rgCommit {
	out := make([]rgCommit, 0, to-from)
	for g := from; g < to; g++ {
		c := rgCommit{group: fmt.Sprintf("rg-%s-%05d", run, g), offs: make([]int64, partitions)}
		for p := range c.offs {
			c.offs[p] = rng.Int64N(int64(perPart) + 1)
		}
		out = append(out, c)
	}
	return out
}

// syncsOf are the offsets of syncs, for testkit's model of MM2's translation.
func syncsOf(syncs []mm2.OffsetSync) []testkit.Sync {
	out := make([]testkit.Sync, len(syncs))
	for i, s := range syncs {
		out[i] = testkit.Sync{Upstream: s.Upstream, Downstream: s.Downstream}
	}
	return out
}

// rgSeed commits the groups on the source (kadm, no members), writes their checkpoints to the
// target in MM2's format and commits the checkpointed offsets on the target, as MM2's group
// offset sync does.
func rgSeed(ctx context.Context, t *testing.T, src, dst cluster.Cluster, flow *mm2.Flow, topic string, idx *mm2.SyncIndex, commits []rgCommit) {
	t.Helper()
	start := time.Now()
	srcAdm, dstAdm := bedAdmin(t, src), bedAdmin(t, dst)
	var cps []*kgo.Record
	eg, ectx := errgroup.WithContext(ctx)
	eg.SetLimit(16)
	for _, c := range commits {
		so, do := kadm.Offsets{}, kadm.Offsets{}
		for p, g := range c.offs {
			so.Add(kadm.Offset{Topic: topic, Partition: int32(p), At: g, LeaderEpoch: -1})
			// MM2 3.7.1's translation for a mirror that never rewound: the newest sync.
			d, ok := testkit.MM2TranslateNewest(syncsOf(idx.Syncs(topic, int32(p))), g)
			if !ok {
				continue // MM2 writes no checkpoint it cannot translate
			}
			cp := mm2.Checkpoint{Group: c.group, Topic: flow.TargetTopic(topic), Partition: int32(p), Upstream: g, Downstream: d}
			cps = append(cps, &kgo.Record{Topic: flow.CheckpointsTopic(), Partition: 0, Key: cp.Key(), Value: cp.Value()})
			do.Add(kadm.Offset{Topic: flow.TargetTopic(topic), Partition: int32(p), At: d, LeaderEpoch: -1})
		}
		eg.Go(func() error {
			for _, x := range []struct {
				adm  *kadm.Client
				offs kadm.Offsets
				side string
			}{{srcAdm, so, "source"}, {dstAdm, do, "target"}} {
				resp, err := x.adm.CommitOffsets(ectx, c.group, x.offs)
				if err == nil {
					err = resp.Error()
				}
				if err != nil {
					return fmt.Errorf("commit group %s on the %s: %w", c.group, x.side, err)
				}
			}
			return nil
		})
	}
	if err := eg.Wait(); err != nil {
		t.Fatal(err)
	}
	prod := bedClient(t, dst.Bootstrap(), kgo.RecordPartitioner(kgo.ManualPartitioner()), kgo.ProducerLinger(5*time.Millisecond))
	if err := prod.ProduceSync(ctx, cps...).FirstErr(); err != nil {
		t.Fatalf("write checkpoints to %s: %v", flow.CheckpointsTopic(), err)
	}
	t.Logf("committed %d groups on both clusters and wrote %d checkpoints in %s", len(commits), len(cps), time.Since(start).Round(time.Millisecond))
}

// rgPlan plans every group of the run so far and returns its table row; it checks that every
// group partition is planned and proven, and that no checkpoint is judged ahead.
func rgPlan(ctx context.Context, t *testing.T, src, dst cluster.Cluster, flow *mm2.Flow, run string, groups, partitions, positions int) string {
	t.Helper()
	srcCl, dstCl := bedClient(t, src.Bootstrap()), bedClient(t, dst.Bootstrap())
	start := time.Now()
	res, err := reconcile.Plan(ctx, srcCl, dstCl, reconcile.Config{Flow: flow, Groups: regexp.MustCompile(`rg-` + run + `-.*`)})
	if err != nil {
		t.Fatalf("Plan: %v", err)
	}
	took := time.Since(start)
	var total, proven, withCP, cpAhead int
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
			if p.Checkpoint != nil {
				withCP++
			}
			if p.CheckpointStatus == reconcile.StatusAhead {
				cpAhead++
			}
		}
	}
	t.Logf("GROWTH plan: %d groups, %d group partitions (%d distinct positions) in %s; proven %d; checkpoints %d; statuses %v",
		len(res.Groups), total, positions, took.Round(time.Millisecond), proven, withCP, statuses)
	if want := groups * partitions; total != want || proven != total {
		t.Errorf("plan of %d groups: %d group partitions planned, %d proven, want %d and %d", groups, total, proven, want, want)
	}
	if cpAhead > 0 {
		t.Errorf("checkpoints judged ahead of E(G): %d, want 0 (MM2's translation is never above E(G) without a rewind)", cpAhead)
	}
	perGP := took.Seconds() * 1e6 / float64(total)
	return fmt.Sprintf("| %d | %d | %d | %d | %.2f s | %.0f µs | %s |", groups, total, positions, withCP, took.Seconds(), perGP, goalWord(took < 30*time.Second))
}

func goalWord(met bool) string {
	if met {
		return "met"
	}
	return "not met"
}

// rgReport prints the table (and writes it to KMIGRATE_BENCH_OUT).
func rgReport(t *testing.T, rows []string, setup string) {
	t.Helper()
	var b strings.Builder
	fmt.Fprintf(&b, "\nkreconcile groups plan (reconcile.Plan), %s:\n\n", setup)
	b.WriteString("| groups | group partitions | distinct (partition, G) | with a checkpoint | plan time | per group partition | goal < 30 s |\n|---|---|---|---|---|---|---|\n")
	b.WriteString(strings.Join(rows, "\n") + "\n")
	t.Log(b.String())
	if out := os.Getenv("KMIGRATE_BENCH_OUT"); out != "" {
		if err := os.WriteFile(out, []byte(b.String()), 0o644); err != nil {
			t.Errorf("write %s: %v", out, err)
		}
	}
}
