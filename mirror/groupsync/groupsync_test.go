package groupsync_test

import (
	"bytes"
	"context"
	"encoding/hex"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/kmigrate/kmigrate/internal/testkit"
	"github.com/kmigrate/kmigrate/mirror/groupsync"
	"github.com/kmigrate/kmigrate/mm2"
	"github.com/kmigrate/kmigrate/offsetmap"
)

// fakeTranslator answers E(G) from offset maps the test sets, as the engine does from its
// produce results.
type fakeTranslator struct {
	mu   sync.Mutex
	maps map[string]map[int32]*offsetmap.PartitionMap
	// okWhenOwned answers ok=true for every owned partition, pending ones included (Known
	// false); otherwise ok is false for pending answers too. mirror.Translator allows both.
	okWhenOwned bool
}

func (f *fakeTranslator) Translate(topic string, p int32, g int64) (offsetmap.Translation, bool) {
	f.mu.Lock()
	defer f.mu.Unlock()
	pm := f.maps[topic][p]
	if pm == nil {
		return offsetmap.Translation{}, false
	}
	tr := pm.ExactTarget(g)
	return tr, tr.Known || f.okWhenOwned
}

func (f *fakeTranslator) Owned() map[string][]int32 {
	f.mu.Lock()
	defer f.mu.Unlock()
	out := make(map[string][]int32)
	for t, ps := range f.maps {
		for p := range ps {
			out[t] = append(out[t], p)
		}
	}
	return out
}

// mirrored records that source offsets [0, n) of topic/p landed at target offsets
// [shift, shift+n): the mirror has reached source offset n.
func (f *fakeTranslator) mirrored(topic string, p int32, n, shift int64) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.maps == nil {
		f.maps = make(map[string]map[int32]*offsetmap.PartitionMap)
	}
	if f.maps[topic] == nil {
		f.maps[topic] = make(map[int32]*offsetmap.PartitionMap)
	}
	pm := &offsetmap.PartitionMap{Partition: p, SourceTo: n, TargetTo: shift + n}
	if n > 0 {
		pm.Segments = []offsetmap.Segment{{Source: 0, Target: shift, Len: n}}
	}
	f.maps[topic][p] = pm
}

func (f *fakeTranslator) disown(topic string, p int32) {
	f.mu.Lock()
	defer f.mu.Unlock()
	delete(f.maps[topic], p)
}

const (
	prefix = "src."
	cpTop  = "src.checkpoints.internal"
)

// env is a source and a target kfake cluster with clients and a translator.
type env struct {
	t        testing.TB
	ctx      context.Context
	src, tgt *kgo.Client
	srcAdm   *kadm.Client
	tgtAdm   *kadm.Client
	srcK     *kfake.Cluster // the source cluster itself, for staged answers
	tgtK     *kfake.Cluster // the target cluster itself, for staged faults
	tr       *fakeTranslator
}

func newEnv(t *testing.T) *env {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	t.Cleanup(cancel)
	return newBenchEnv(t, ctx)
}

func newBenchEnv(t testing.TB, ctx context.Context) *env {
	t.Helper()
	e := &env{t: t, ctx: ctx, tr: &fakeTranslator{}}
	e.srcK = testkit.StartCluster(t)
	e.src = testkit.Client(t, e.srcK)
	e.tgtK = testkit.StartCluster(t)
	e.tgt = testkit.Client(t, e.tgtK)
	e.srcAdm, e.tgtAdm = kadm.NewClient(e.src), kadm.NewClient(e.tgt)
	return e
}

// topic creates topic on the source and prefix+topic on the target.
func (e *env) topic(name string, partitions int32) {
	e.t.Helper()
	testkit.CreateTopic(e.t, e.src, name, partitions, nil)
	testkit.CreateTopic(e.t, e.tgt, prefix+name, partitions, nil)
}

func (e *env) config() groupsync.Config {
	return groupsync.Config{
		Source:           e.src,
		Target:           e.tgt,
		Translator:       e.tr,
		GroupMatches:     func(g string) bool { return !strings.HasPrefix(g, "excluded") },
		TopicMatches:     func(t string) bool { return !strings.HasPrefix(t, "unmirrored") },
		TargetTopic:      func(t string) string { return prefix + t },
		CheckpointsTopic: cpTop,
		SyncGroupOffsets: true,
		EmitCheckpoints:  true,
	}
}

func (e *env) commitSource(group, topic string, p int32, at int64, meta string) {
	e.t.Helper()
	testkit.Commit(e.t, e.srcAdm, group, topic, p, at, meta)
}

// checkpointRecords reads every record of the checkpoints topic.
func (e *env) checkpointRecords() []*kgo.Record {
	e.t.Helper()
	ends, err := e.tgtAdm.ListEndOffsets(e.ctx, cpTop)
	if err != nil {
		e.t.Fatalf("end offsets of %s: %v", cpTop, err)
	}
	end, ok := ends.Lookup(cpTop, 0)
	if !ok || end.Err != nil || end.Offset == 0 {
		return nil
	}
	cl, err := kgo.NewClient(append(e.tgt.Opts(), kgo.ConsumePartitions(map[string]map[int32]kgo.Offset{cpTop: {0: kgo.NewOffset().AtStart()}}))...)
	if err != nil {
		e.t.Fatal(err)
	}
	defer cl.Close()
	var out []*kgo.Record
	for int64(len(out)) < end.Offset {
		fs := cl.PollFetches(e.ctx)
		if err := e.ctx.Err(); err != nil {
			e.t.Fatalf("read %s: got %d records, want %d: %v", cpTop, len(out), end.Offset, err)
		}
		out = append(out, fs.Records()...)
	}
	return out
}

// lastCheckpoints decodes the checkpoints topic and keeps the last record per key.
func (e *env) lastCheckpoints() map[mm2.CheckpointKey]mm2.Checkpoint {
	e.t.Helper()
	out := make(map[mm2.CheckpointKey]mm2.Checkpoint)
	for _, r := range e.checkpointRecords() {
		c, err := mm2.DecodeCheckpoint(r.Key, r.Value)
		if err != nil {
			e.t.Fatalf("checkpoint at offset %d does not decode: %v", r.Offset, err)
		}
		out[c.ID()] = c
	}
	return out
}

func (e *env) syncOnce(cfg groupsync.Config) groupsync.Report {
	e.t.Helper()
	rep, err := groupsync.SyncOnce(e.ctx, cfg)
	if err != nil {
		e.t.Fatalf("SyncOnce: %v", err)
	}
	if n := rep.Errors(); n > 0 {
		e.t.Fatalf("SyncOnce: got %d errors, want 0: %+v", n, rep.Groups)
	}
	return rep
}

func wantPartition(t testing.TB, rep groupsync.Report, group, topic string, p int32, offset, checkpoint groupsync.Status) groupsync.PartitionReport {
	t.Helper()
	pr, ok := rep.Partition(group, topic, p)
	if !ok {
		t.Fatalf("report has no %s %s/%d: %+v", group, topic, p, rep.Groups)
	}
	if pr.Offset != offset || pr.Checkpoint != checkpoint {
		t.Fatalf("%s %s/%d: got offset %q checkpoint %q, want %q %q (%+v)", group, topic, p, pr.Offset, pr.Checkpoint, offset, checkpoint, pr)
	}
	return pr
}

func (e *env) wantTarget(group, topic string, p int32, want int64) {
	e.t.Helper()
	got, _, ok := testkit.Committed(e.t, e.tgtAdm, group, topic, p)
	if want < 0 {
		if ok {
			e.t.Fatalf("target %s %s/%d: got offset %d, want none", group, topic, p, got)
		}
		return
	}
	if !ok || got != want {
		e.t.Fatalf("target %s %s/%d: got %d (present %v), want %d", group, topic, p, got, ok, want)
	}
}

// An idle group is pending while the mirror is below G, then translated exactly (not
// approximately, as MM2 does for an idle group) once the mirror passes G.
func TestIdleGroupPendingThenExact(t *testing.T) {
	t.Parallel()
	for _, okWhenOwned := range []bool{false, true} {
		t.Run(fmt.Sprintf("ok when owned %v", okWhenOwned), func(t *testing.T) {
			t.Parallel()
			testIdleGroupPendingThenExact(t, okWhenOwned)
		})
	}
}

func testIdleGroupPendingThenExact(t *testing.T, okWhenOwned bool) {
	e := newEnv(t)
	e.tr.okWhenOwned = okWhenOwned
	e.topic("orders", 2)
	e.tr.mirrored("orders", 0, 5, 10) // mirror has copied source 0..4 to target 10..14
	e.tr.mirrored("orders", 1, 0, 0)
	e.commitSource("idle", "orders", 0, 8, "meta-8")

	rep := e.syncOnce(e.config())
	pr := wantPartition(t, rep, "idle", "orders", 0, groupsync.StatusPending, groupsync.StatusPending)
	if pr.Downstream != -1 {
		t.Fatalf("pending downstream: got %d, want -1", pr.Downstream)
	}
	e.wantTarget("idle", prefix+"orders", 0, -1)
	if n := len(e.checkpointRecords()); n != 0 {
		t.Fatalf("checkpoints while pending: got %d, want 0", n)
	}

	e.tr.mirrored("orders", 0, 20, 10) // the mirror passes G=8
	logs := &captureHandler{}
	cfg := e.config()
	cfg.Logger = slog.New(logs)
	rep = e.syncOnce(cfg)
	if got := logs.find("group offset synced"); got == nil || got["group"] != "idle" || got["topic"] != prefix+"orders" ||
		got["partition"] != "0" || got["offset"] != "18" || got["upstream"] != "8" {
		t.Fatalf("log of the sync: got %v, want group, topic, partition, offset and upstream", got)
	}
	pr = wantPartition(t, rep, "idle", "orders", 0, groupsync.StatusSynced, groupsync.StatusSynced)
	const want = 18 // 1 + target copy of source 7
	if pr.Downstream != want {
		t.Fatalf("E(8): got %d, want %d", pr.Downstream, want)
	}
	e.wantTarget("idle", prefix+"orders", 0, want)
	if _, meta, _ := testkit.Committed(t, e.tgtAdm, "idle", prefix+"orders", 0); meta != "meta-8" {
		t.Fatalf("target metadata: got %q, want %q", meta, "meta-8")
	}
	cps := e.lastCheckpoints()
	got := cps[mm2.CheckpointKey{Group: "idle", Topic: prefix + "orders", Partition: 0}]
	wantCp := mm2.Checkpoint{Group: "idle", Topic: prefix + "orders", Partition: 0, Upstream: 8, Downstream: want, Metadata: "meta-8"}
	if got != wantCp {
		t.Fatalf("checkpoint: got %+v, want %+v", got, wantCp)
	}
	if rep.Committed != 1 || rep.Emitted != 1 {
		t.Fatalf("counts: got committed %d emitted %d, want 1 1", rep.Committed, rep.Emitted)
	}
}

// TestCommitOnTopicCoordinatorDoesNotKnowYet: right after kmirror created a target topic, the
// group coordinator's metadata may not have it yet and answers the commit
// UNKNOWN_TOPIC_OR_PARTITION; the pass sends the partition again and syncs it, instead of
// reporting an error until the next pass.
func TestCommitOnTopicCoordinatorDoesNotKnowYet(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	e.topic("orders", 1)
	e.tr.mirrored("orders", 0, 20, 10)
	e.commitSource("idle", "orders", 0, 8, "meta-8")
	refused := testkit.UnknownTopicCommits(e.tgtK, 2)
	rep := e.syncOnce(e.config())
	if refused.Load() != 2 {
		t.Fatalf("%d commits refused, want 2: the fault was not staged", refused.Load())
	}
	wantPartition(t, rep, "idle", "orders", 0, groupsync.StatusSynced, groupsync.StatusSynced)
	e.wantTarget("idle", prefix+"orders", 0, 18)
}

// Checkpoint records are byte for byte what MM2 3.7.1 writes, on partition 0 of a compacted
// single-partition topic this package created.
func TestCheckpointBytesAndTopic(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	e.topic("t", 2)
	e.tr.mirrored("t", 1, 10, 0)
	e.commitSource("g", "t", 1, 3, "m")
	cfg := e.config()
	cfg.SyncGroupOffsets = false
	e.syncOnce(cfg)

	recs := e.checkpointRecords()
	if len(recs) != 1 {
		t.Fatalf("checkpoint records: got %d, want 1", len(recs))
	}
	r := recs[0]
	// group "g", topic "src.t", partition 1 | version 0, upstream 3, downstream 3, metadata "m".
	wantKey, _ := hex.DecodeString("0001" + "67" + "0005" + "7372632e74" + "00000001")
	wantValue, _ := hex.DecodeString("0000" + "0000000000000003" + "0000000000000003" + "0001" + "6d")
	if !bytes.Equal(r.Key, wantKey) {
		t.Fatalf("key: got %x, want %x", r.Key, wantKey)
	}
	if !bytes.Equal(r.Value, wantValue) {
		t.Fatalf("value: got %x, want %x", r.Value, wantValue)
	}
	if r.Partition != 0 {
		t.Fatalf("partition: got %d, want 0", r.Partition)
	}
	if _, err := mm2.DecodeCheckpoint(r.Key, r.Value); err != nil {
		t.Fatalf("decode: %v", err)
	}
	e.wantTarget("g", prefix+"t", 1, -1) // sync disabled: checkpoints only

	td, err := e.tgtAdm.ListTopics(e.ctx, cpTop)
	if err != nil || td[cpTop].Err != nil {
		t.Fatalf("describe %s: %v %v", cpTop, err, td[cpTop].Err)
	}
	if n := len(td[cpTop].Partitions); n != 1 {
		t.Fatalf("checkpoints topic partitions: got %d, want 1", n)
	}
	rc, err := e.tgtAdm.DescribeTopicConfigs(e.ctx, cpTop)
	if err != nil {
		t.Fatal(err)
	}
	c, err := rc.On(cpTop, nil)
	if err != nil {
		t.Fatal(err)
	}
	var policy string
	for _, kv := range c.Configs {
		if kv.Key == "cleanup.policy" {
			policy = kv.MaybeValue()
		}
	}
	if policy != "compact" {
		t.Fatalf("cleanup.policy of %s: got %q, want compact", cpTop, policy)
	}
}

// A target group with an active member is never written, and the group is reported.
func TestActiveTargetGroupNeverWritten(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	e.topic("clicks", 1)
	e.tr.mirrored("clicks", 0, 10, 0)
	e.commitSource("busy", "clicks", 0, 7, "")

	// A consumer of the target joins the group and stays.
	tgtCluster := e.tgt.OptValue(kgo.SeedBrokers).([]string)
	member, err := kgo.NewClient(kgo.SeedBrokers(tgtCluster...), kgo.ConsumerGroup("busy"),
		kgo.ConsumeTopics(prefix+"clicks"), kgo.DisableAutoCommit())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(member.Close)
	pollCtx, stop := context.WithCancel(e.ctx)
	done := make(chan struct{})
	go func() {
		defer close(done)
		for pollCtx.Err() == nil {
			member.PollFetches(pollCtx)
		}
	}()
	t.Cleanup(func() { stop(); <-done })
	for {
		dg, err := e.tgtAdm.DescribeGroups(e.ctx, "busy")
		if err == nil && dg["busy"].State == "Stable" && len(dg["busy"].Members) == 1 {
			break
		}
		if e.ctx.Err() != nil {
			t.Fatalf("target group never became stable: %v %+v", err, dg)
		}
		time.Sleep(20 * time.Millisecond)
	}

	logs := &captureHandler{}
	cfg := e.config()
	cfg.Logger = slog.New(logs)
	rep := e.syncOnce(cfg)
	wantPartition(t, rep, "busy", "clicks", 0, groupsync.StatusSkippedActive, groupsync.StatusSynced)
	if got := logs.find("target group has active members, offsets not synced"); got == nil || got["group"] != "busy" || got["cluster"] != "target" {
		t.Fatalf("log of the skipped group: got %v, want one with group=busy cluster=target", got)
	}
	if g := rep.Groups[0]; g.TargetState != "Stable" || g.TargetMembers != 1 {
		t.Fatalf("target group: got state %q members %d, want Stable 1", g.TargetState, g.TargetMembers)
	}
	e.wantTarget("busy", prefix+"clicks", 0, -1)
	if rep.Committed != 0 {
		t.Fatalf("committed: got %d, want 0", rep.Committed)
	}
}

// A target offset never moves backwards when the source did not rewind; when the source group
// rewinds, the target and the checkpoint follow.
func TestNeverBackwardsUnlessRewound(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name        string
		checkpoints bool // rewind memory from the checkpoints topic (fresh Syncer each pass) or from the Syncer
	}{
		{name: "fresh process each pass, checkpoints topic", checkpoints: true},
		{name: "one syncer, no checkpoints", checkpoints: false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			e := newEnv(t)
			e.topic("pay", 2)
			e.tr.mirrored("pay", 0, 50, 100)
			e.tr.mirrored("pay", 1, 50, 100)
			cfg := e.config()
			cfg.EmitCheckpoints = tc.checkpoints
			var syncer *groupsync.Syncer
			pass := func() groupsync.Report {
				t.Helper()
				if tc.checkpoints {
					return e.syncOnce(cfg)
				}
				if syncer == nil {
					var err error
					if syncer, err = groupsync.New(cfg); err != nil {
						t.Fatal(err)
					}
				}
				rep, err := syncer.SyncOnce(e.ctx)
				if err != nil || rep.Errors() > 0 {
					t.Fatalf("SyncOnce: %v %+v", err, rep.Groups)
				}
				return rep
			}
			cpStatus := func(s groupsync.Status) groupsync.Status {
				if tc.checkpoints {
					return s
				}
				return groupsync.StatusDisabled
			}

			// Partition 1: consumers on the target moved the target group ahead (130).
			testkit.Commit(t, e.tgtAdm, "g", prefix+"pay", 1, 130, "target")
			e.commitSource("g", "pay", 1, 20, "")
			// Partition 0: synced at G=30.
			e.commitSource("g", "pay", 0, 30, "")
			rep := pass()
			wantPartition(t, rep, "g", "pay", 0, groupsync.StatusSynced, cpStatus(groupsync.StatusSynced))
			pr := wantPartition(t, rep, "g", "pay", 1, groupsync.StatusHeld, cpStatus(groupsync.StatusSynced))
			if pr.TargetBefore != 130 {
				t.Fatalf("target before: got %d, want 130", pr.TargetBefore)
			}
			e.wantTarget("g", prefix+"pay", 0, 130)
			e.wantTarget("g", prefix+"pay", 1, 130)

			// Partition 1: the source advances, still below the target: held, never backwards.
			e.commitSource("g", "pay", 1, 25, "")
			rep = pass()
			wantPartition(t, rep, "g", "pay", 1, groupsync.StatusHeld, cpStatus(groupsync.StatusSynced))
			e.wantTarget("g", prefix+"pay", 1, 130)

			// Partition 0: the source group rewinds to 12: the target follows down to E(12).
			e.commitSource("g", "pay", 0, 12, "rewind")
			rep = pass()
			wantPartition(t, rep, "g", "pay", 0, groupsync.StatusRewound, cpStatus(groupsync.StatusRewound))
			e.wantTarget("g", prefix+"pay", 0, 112)
			if tc.checkpoints {
				c := e.lastCheckpoints()[mm2.CheckpointKey{Group: "g", Topic: prefix + "pay", Partition: 0}]
				if c.Upstream != 12 || c.Downstream != 112 || c.Metadata != "rewind" {
					t.Fatalf("checkpoint after rewind: got %+v, want upstream 12 downstream 112", c)
				}
			}
			// And forwards again from there.
			e.commitSource("g", "pay", 0, 40, "")
			rep = pass()
			wantPartition(t, rep, "g", "pay", 0, groupsync.StatusSynced, cpStatus(groupsync.StatusSynced))
			e.wantTarget("g", prefix+"pay", 0, 140)
		})
	}
}

// A second pass with nothing new writes nothing: no checkpoint record, no commit.
func TestSecondPassWritesNothing(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	e.topic("a", 3)
	for p := int32(0); p < 3; p++ {
		e.tr.mirrored("a", p, 100, int64(p)*7)
	}
	for i := range 5 {
		for p := int32(0); p < 3; p++ {
			e.commitSource(fmt.Sprintf("group-%d", i), "a", p, int64(10*i+int(p)), fmt.Sprintf("m%d", i))
		}
	}
	first := e.syncOnce(e.config())
	if first.Committed != 15 || first.Emitted != 15 {
		t.Fatalf("first pass: got committed %d emitted %d, want 15 15", first.Committed, first.Emitted)
	}
	before := len(e.checkpointRecords())
	if before != 15 {
		t.Fatalf("checkpoint records: got %d, want 15", before)
	}
	// A fresh process (state read back from the topic) and a second pass find nothing new.
	second := e.syncOnce(e.config())
	if second.Committed != 0 || second.Emitted != 0 {
		t.Fatalf("second pass: got committed %d emitted %d, want 0 0", second.Committed, second.Emitted)
	}
	for _, g := range second.Groups {
		for _, p := range g.Partitions {
			if p.Offset != groupsync.StatusUnchanged || p.Checkpoint != groupsync.StatusUnchanged {
				t.Fatalf("%s %s/%d: got %q %q, want unchanged unchanged", g.Group, p.Topic, p.Partition, p.Offset, p.Checkpoint)
			}
		}
	}
	if after := len(e.checkpointRecords()); after != before {
		t.Fatalf("checkpoint records after second pass: got %d, want %d", after, before)
	}
	for i := range 5 {
		for p := int32(0); p < 3; p++ {
			e.wantTarget(fmt.Sprintf("group-%d", i), prefix+"a", p, int64(10*i+int(p))+int64(p)*7)
		}
	}
}

// Only mirrored topics, selected groups and owned partitions are synced; the rest is reported
// or left out, and nothing is written for it.
func TestFiltersAndOwnership(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	e.topic("kept", 2)
	e.topic("unmirrored", 1)
	e.tr.mirrored("kept", 0, 10, 0)
	e.commitSource("g", "kept", 0, 5, "")
	e.commitSource("g", "kept", 1, 5, "") // partition 1 is mirrored by another process
	e.commitSource("g", "unmirrored", 0, 5, "")
	e.commitSource("excluded-g", "kept", 0, 5, "")
	e.commitSource("kmirror-self", "kept", 0, 5, "")
	cfg := e.config()
	cfg.IgnoreGroups = []string{"kmirror-self"}

	rep := e.syncOnce(cfg)
	if len(rep.Groups) != 1 || rep.Groups[0].Group != "g" {
		t.Fatalf("groups: got %+v, want only g", rep.Groups)
	}
	if n := len(rep.Groups[0].Partitions); n != 2 {
		t.Fatalf("partitions of g: got %d, want 2 (unmirrored topic left out): %+v", n, rep.Groups[0].Partitions)
	}
	wantPartition(t, rep, "g", "kept", 0, groupsync.StatusSynced, groupsync.StatusSynced)
	wantPartition(t, rep, "g", "kept", 1, groupsync.StatusNotOwned, groupsync.StatusNotOwned)
	e.wantTarget("g", prefix+"kept", 1, -1)
	e.wantTarget("excluded-g", prefix+"kept", 0, -1)
	e.wantTarget("kmirror-self", prefix+"kept", 0, -1)
	if n := len(e.checkpointRecords()); n != 1 {
		t.Fatalf("checkpoint records: got %d, want 1", n)
	}
}

// The source is only read: its group offsets are the same after a pass.
func TestSourceNeverWritten(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	e.topic("s", 1)
	e.tr.mirrored("s", 0, 10, 3)
	e.commitSource("g", "s", 0, 4, "m")
	e.syncOnce(e.config())
	got, meta, ok := testkit.Committed(t, e.srcAdm, "g", "s", 0)
	if !ok || got != 4 || meta != "m" {
		t.Fatalf("source offset: got %d %q (present %v), want 4 %q", got, meta, ok, "m")
	}
	td, err := e.srcAdm.ListTopics(e.ctx)
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := td[cpTop]; ok {
		t.Fatalf("checkpoints topic created on the source")
	}
}

// A checkpoint already in the topic (e.g. MM2's, approximate and higher) is never replaced by
// a lower one unless the source group rewound.
func TestCheckpointNeverLowerUnlessRewound(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	e.topic("x", 1)
	e.tr.mirrored("x", 0, 50, 0)
	old := mm2.Checkpoint{Group: "g", Topic: prefix + "x", Partition: 0, Upstream: 20, Downstream: 30}
	if _, err := e.tgtAdm.CreateTopic(e.ctx, 1, 1, map[string]*string{"cleanup.policy": kadm.StringPtr("compact")}, cpTop); err != nil {
		t.Fatal(err)
	}
	if err := e.tgt.ProduceSync(e.ctx, &kgo.Record{Topic: cpTop, Key: old.Key(), Value: old.Value()}).FirstErr(); err != nil {
		t.Fatal(err)
	}
	cfg := e.config()
	cfg.SyncGroupOffsets = false

	e.commitSource("g", "x", 0, 25, "") // E(25)=25 < 30, G went up: held
	rep := e.syncOnce(cfg)
	pr := wantPartition(t, rep, "g", "x", 0, groupsync.StatusDisabled, groupsync.StatusHeld)
	if pr.Reason == "" {
		t.Fatalf("held without a reason")
	}
	if n := len(e.checkpointRecords()); n != 1 {
		t.Fatalf("checkpoint records: got %d, want 1", n)
	}

	e.commitSource("g", "x", 0, 10, "") // the source rewound: emitted lower
	rep = e.syncOnce(cfg)
	wantPartition(t, rep, "g", "x", 0, groupsync.StatusDisabled, groupsync.StatusRewound)
	c := e.lastCheckpoints()[old.ID()]
	if c.Upstream != 10 || c.Downstream != 10 {
		t.Fatalf("checkpoint after rewind: got %+v, want upstream 10 downstream 10", c)
	}
}

// Run keeps syncing: an idle group is committed once the mirror passes it, without a restart.
func TestRunFollowsMirror(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	e.topic("r", 1)
	e.tr.mirrored("r", 0, 2, 0)
	e.commitSource("g", "r", 0, 6, "")
	cfg := e.config()
	cfg.Interval = 20 * time.Millisecond
	cfg.CheckpointInterval = 20 * time.Millisecond
	var passes atomic.Int64
	cfg.OnPass = func(rep groupsync.Report, err error) {
		if err == nil && rep.Errors() == 0 {
			passes.Add(1)
		}
	}
	ctx, cancel := context.WithCancel(e.ctx)
	errc := make(chan error, 1)
	go func() { errc <- groupsync.Run(ctx, cfg) }()
	t.Cleanup(func() {
		cancel()
		if err := <-errc; err != nil {
			t.Errorf("Run: got %v, want nil", err)
		}
	})
	e.tr.mirrored("r", 0, 9, 0)
	for {
		got, _, ok := testkit.Committed(t, e.tgtAdm, "g", prefix+"r", 0)
		if ok && got == 6 && passes.Load() > 0 {
			break
		}
		if e.ctx.Err() != nil {
			t.Fatalf("target offset: got %d (present %v) after %d clean passes, want 6 after at least 1", got, ok, passes.Load())
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// A rewind is followed only while the target still holds what this package wrote: once
// consumers of the target moved the group on, their progress is kept. And a target already at
// E(G) when the process starts counts as written by it.
func TestRewindKeepsTargetProgress(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	e.topic("w", 2)
	e.tr.mirrored("w", 0, 50, 0)
	e.tr.mirrored("w", 1, 50, 0)
	cfg := e.config()
	cfg.EmitCheckpoints = false // memory from this Syncer only
	s, err := groupsync.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	pass := func() groupsync.Report {
		t.Helper()
		rep, err := s.SyncOnce(e.ctx)
		if err != nil || rep.Errors() > 0 {
			t.Fatalf("SyncOnce: %v %+v", err, rep.Groups)
		}
		return rep
	}
	testkit.Commit(t, e.tgtAdm, "g", prefix+"w", 1, 30, "") // already exact before the first pass
	e.commitSource("g", "w", 0, 30, "")
	e.commitSource("g", "w", 1, 30, "")
	rep := pass()
	wantPartition(t, rep, "g", "w", 0, groupsync.StatusSynced, groupsync.StatusDisabled)
	wantPartition(t, rep, "g", "w", 1, groupsync.StatusUnchanged, groupsync.StatusDisabled)

	testkit.Commit(t, e.tgtAdm, "g", prefix+"w", 0, 45, "") // consumers of the target moved on
	e.commitSource("g", "w", 0, 10, "")
	e.commitSource("g", "w", 1, 10, "")
	rep = pass()
	wantPartition(t, rep, "g", "w", 0, groupsync.StatusHeld, groupsync.StatusDisabled)
	wantPartition(t, rep, "g", "w", 1, groupsync.StatusRewound, groupsync.StatusDisabled)
	e.wantTarget("g", prefix+"w", 0, 45)
	e.wantTarget("g", prefix+"w", 1, 10)
}

// Scale-out: a process that gains a partition reads its checkpoint back, so it continues from
// what the previous owner wrote (here: it sees the source rewind relative to that).
func TestGainedPartitionReadsPreviousOwner(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	e.topic("m", 2)
	trA, trB := &fakeTranslator{}, &fakeTranslator{}
	trA.mirrored("m", 0, 50, 0)
	trB.mirrored("m", 1, 50, 0)
	newSyncer := func(tr *fakeTranslator) *groupsync.Syncer {
		t.Helper()
		cfg := e.config()
		cfg.Translator = tr
		s, err := groupsync.New(cfg)
		if err != nil {
			t.Fatal(err)
		}
		return s
	}
	a, b := newSyncer(trA), newSyncer(trB)
	pass := func(s *groupsync.Syncer) groupsync.Report {
		t.Helper()
		rep, err := s.SyncOnce(e.ctx)
		if err != nil || rep.Errors() > 0 {
			t.Fatalf("SyncOnce: %v %+v", err, rep.Groups)
		}
		return rep
	}
	pass(b) // b has read the (empty) checkpoints topic
	e.commitSource("g", "m", 0, 30, "")
	wantPartition(t, pass(a), "g", "m", 0, groupsync.StatusSynced, groupsync.StatusSynced)

	// The partition moves from a to b; meanwhile the source group rewound.
	trA.disown("m", 0)
	trB.mirrored("m", 0, 50, 0)
	e.commitSource("g", "m", 0, 25, "")
	wantPartition(t, pass(b), "g", "m", 0, groupsync.StatusRewound, groupsync.StatusRewound)
	e.wantTarget("g", prefix+"m", 0, 25)
	wantPartition(t, pass(a), "g", "m", 0, groupsync.StatusNotOwned, groupsync.StatusNotOwned)
}

// captureHandler keeps every log record's message and attributes.
type captureHandler struct {
	mu      sync.Mutex
	records []map[string]string
}

func (h *captureHandler) Enabled(context.Context, slog.Level) bool { return true }
func (h *captureHandler) WithAttrs([]slog.Attr) slog.Handler       { return h }
func (h *captureHandler) WithGroup(string) slog.Handler            { return h }
func (h *captureHandler) Handle(_ context.Context, r slog.Record) error {
	m := map[string]string{"msg": r.Message, "level": r.Level.String()}
	r.Attrs(func(a slog.Attr) bool { m[a.Key] = a.Value.String(); return true })
	h.mu.Lock()
	defer h.mu.Unlock()
	h.records = append(h.records, m)
	return nil
}

// find returns the attributes of the first record with message msg.
func (h *captureHandler) find(msg string) map[string]string {
	h.mu.Lock()
	defer h.mu.Unlock()
	for _, r := range h.records {
		if r["msg"] == msg {
			return r
		}
	}
	return nil
}

// A checkpoints topic that cannot be created, or has more than one partition, stops the
// checkpoints (reported) but not the offset sync.
func TestCheckpointsTopicProblemsDoNotStopSync(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name    string
		prepare func(e *env, cfg *groupsync.Config)
		wantErr string
	}{
		{
			name:    "replication factor above the brokers",
			prepare: func(_ *env, cfg *groupsync.Config) { cfg.CheckpointsReplicationFactor = 3 },
			wantErr: "checkpoints.topic.replication.factor",
		},
		{
			name: "three partitions",
			prepare: func(e *env, _ *groupsync.Config) {
				if _, err := e.tgtAdm.CreateTopic(e.ctx, 3, 1, nil, cpTop); err != nil {
					e.t.Fatal(err)
				}
			},
			wantErr: "has 3 partitions",
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			e := newEnv(t)
			e.topic("c", 1)
			e.tr.mirrored("c", 0, 10, 0)
			e.commitSource("g", "c", 0, 4, "")
			cfg := e.config()
			tc.prepare(e, &cfg)
			rep, err := groupsync.SyncOnce(e.ctx, cfg)
			if err != nil {
				t.Fatalf("SyncOnce: got %v, want the problem in the report", err)
			}
			if !strings.Contains(rep.Error, tc.wantErr) || rep.Errors() != 1 {
				t.Fatalf("report error: got %q (%d errors), want one containing %q", rep.Error, rep.Errors(), tc.wantErr)
			}
			wantPartition(t, rep, "g", "c", 0, groupsync.StatusSynced, groupsync.StatusDisabled)
			e.wantTarget("g", prefix+"c", 0, 4)
		})
	}
}
