package integration

import (
	"bytes"
	"context"
	_ "embed"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/kmigrate/kmigrate/integration/cluster"
	"github.com/kmigrate/kmigrate/internal/testkit"
	"github.com/kmigrate/kmigrate/mm2"
)

// The seed case: the migration a user reported (a lag of 30 on the source became 38 on the
// target after the switch), with the user's names.
const (
	seedTopic = "GEN.LAB.P.TEST.TESTINFO.OLD2NEW"
	seedGroup = "test-consumer-kafkaupgrade-109"
	// seedPhase1 records are produced while the group consumes; it consumes all of them,
	// commits and stops. 120 is past MM2's default offset.lag.max (100): MM2 then writes one
	// offset sync for the first record (0->0) and one at 101->101, none near 120.
	seedPhase1 = 120
	// seedPhase2 records are produced after the consumer stopped (the user's 30).
	seedPhase2 = 30
	// seedRate paces the producer, as a live application would.
	seedRate = 20 * time.Millisecond
)

// SeedFixture is the seed scenario after MirrorMaker 2 has mirrored every record and
// checkpointed the group: the state in which users meet the bug, and on which the reconcile
// work shows the fix. MM2 still runs (close it to freeze the target group).
type SeedFixture struct {
	Source, Target cluster.Cluster // Kafka 2.3.0 (ZooKeeper) and 3.7.1 (KRaft) by default, one broker each
	MM2            *cluster.MM2    // MirrorMaker 2 3.7.1 by default, dedicated mode, --clusters destination
	Topic, Group   string          // seedTopic, seedGroup; one partition, same name on both
	// Consumed are the values the group consumed (and committed) on the source, in order;
	// Unconsumed the ones produced after it stopped. Every value is unique.
	Consumed, Unconsumed [][]byte
	// SourceLag is source end offset - source committed offset (30); TargetLag the same on the
	// target with the offset MM2 synced; Reread how many Consumed values a consumer switched
	// to the target reads again (by content).
	SourceLag, TargetLag, Reread int64
	// SourceCommitted is the group's offset on the source (G); TargetCommitted the one MM2
	// wrote on the target; Checkpoint MM2's checkpoint for G.
	SourceCommitted, TargetCommitted int64
	Checkpoint                       mm2.Checkpoint
	// OffsetSyncs are the records of mm2-offset-syncs.source.internal (on the target).
	OffsetSyncs []mm2.OffsetSync
	// MM2Properties is the mm2.properties text MM2 runs with.
	MM2Properties string
}

//go:embed testdata/seed-mm2.properties
var seedMM2 string

// seedProperties is the user's mm2.properties (testdata/seed-mm2.properties, verbatim from
// the report) with three mechanical changes: the bootstrap servers of the test clusters, every
// replication factor 1 (one broker each; 2.3.0 needs them explicit), and every 10 s interval
// shortened to 2 s. Everything else is the user's: offset.max.lag=1 stays (MM2 ignores that
// misspelt key, so offset.lag.max is its default 100), and the worker's offset flush
// interval (offset.flush.interval.ms) keeps its default of 60 s as in the user's setup, so
// MM2 publishes its delayed offset syncs as rarely as it did for them.
func seedProperties(source, target cluster.Cluster) string {
	var b strings.Builder
	for _, line := range strings.Split(strings.TrimRight(seedMM2, "\n"), "\n") {
		key, _, ok := strings.Cut(line, "=")
		switch {
		case !ok || strings.HasPrefix(line, "#"):
		case key == "source.bootstrap.servers":
			line = key + "=" + strings.Join(source.Bootstrap(), ",")
		case key == "destination.bootstrap.servers":
			line = key + "=" + strings.Join(target.Bootstrap(), ",")
		case strings.HasSuffix(key, "replication.factor"):
			line = key + "=1"
		case strings.HasSuffix(key, ".interval.seconds"):
			line = key + "=2"
		}
		b.WriteString(line + "\n")
	}
	return b.String()
}

// runSeedScenario runs the seed case on real brokers (target and MirrorMaker 2 3.7.1) and
// returns once MM2 has mirrored every record, checkpointed the group and synced the target
// group's offset. It skips like cluster.StartT when Java 17 is missing. Everything it starts
// stops in t.Cleanup.
func runSeedScenario(t *testing.T) *SeedFixture {
	t.Helper()
	return runSeedScenarioOn(t, cluster.V371, cluster.V371)
}

// runSeedScenarioOn is runSeedScenario with the target cluster and MirrorMaker 2 of the
// given versions: the same user's file, records, pacing and group, and the same waits for
// MM2's mirror, checkpoint and group offset sync.
func runSeedScenarioOn(t *testing.T, targetVersion, mm2Version string) *SeedFixture {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 6*time.Minute)
	defer cancel()
	src := cluster.StartT(t, cluster.Spec{Version: cluster.V230, Name: "source"})
	dst := cluster.StartT(t, cluster.Spec{Version: targetVersion, Name: "destination"})
	f := &SeedFixture{Source: src, Target: dst, Topic: seedTopic, Group: seedGroup}
	bedCreateTopic(t, src, seedTopic, 1, nil)

	f.MM2Properties = seedProperties(src, dst)
	f.MM2 = cluster.StartMM2T(t, cluster.MM2Spec{Version: mm2Version, Properties: f.MM2Properties, Target: "destination"})

	run := fmt.Sprintf("%x", time.Now().UnixNano())
	value := func(i int) []byte { return fmt.Appendf(nil, "seed-%s-%04d", run, i) }
	prod := bedClient(t, src.Bootstrap(), kgo.DefaultProduceTopic(seedTopic), kgo.RequiredAcks(kgo.AllISRAcks()))
	produce := func(from, to int) error {
		tick := time.NewTicker(seedRate)
		defer tick.Stop()
		for i := from; i < to; i++ {
			r := &kgo.Record{Key: fmt.Appendf(nil, "key-%d", i%7), Value: value(i)}
			if err := prod.ProduceSync(ctx, r).FirstErr(); err != nil {
				return fmt.Errorf("produce record %d to %s on source: %w", i, seedTopic, err)
			}
			<-tick.C
		}
		return nil
	}

	// Phase 1: the producer runs while the group consumes and commits after every poll.
	produced := make(chan error, 1)
	go func() { produced <- produce(0, seedPhase1) }()
	f.Consumed = seedConsume(ctx, t, src, seedPhase1)
	if err := <-produced; err != nil {
		t.Fatal(err)
	}
	// The consumer has stopped (left the group); phase 2: 30 more records, then the
	// producer stops too.
	if err := produce(seedPhase1, seedPhase1+seedPhase2); err != nil {
		t.Fatal(err)
	}
	for i := seedPhase1; i < seedPhase1+seedPhase2; i++ {
		f.Unconsumed = append(f.Unconsumed, value(i))
	}

	committed := seedCommitted(ctx, t, src)
	if committed < 0 {
		t.Fatalf("group %s has no committed offset for %s/0 on the source", seedGroup, seedTopic)
	}
	f.SourceCommitted = committed
	srcEnd := bedEndOffsets(ctx, t, src, seedTopic)[0]
	f.SourceLag = srcEnd - committed

	// Wait until MM2 has mirrored everything, checkpointed G and synced the target group.
	if err := seedWait(ctx, t, f, srcEnd); err != nil {
		t.Fatalf("%v\nMM2 log: %s", err, f.MM2.LogPath())
	}
	dstEnd := bedEndOffsets(ctx, t, dst, seedTopic)[0]
	f.TargetLag = dstEnd - f.TargetCommitted

	// A consumer switched to the target starts at the synced offset: count what it reads
	// again, by content, and check that nothing unconsumed is lost.
	consumed := map[string]bool{}
	for _, v := range f.Consumed {
		consumed[string(v)] = true
	}
	seen := map[string]bool{}
	for _, r := range bedReadPartition(ctx, t, dst, seedTopic, 0, f.TargetCommitted) {
		if consumed[string(r.Value)] {
			f.Reread++
		}
		seen[string(r.Value)] = true
	}
	for _, v := range f.Unconsumed {
		if !seen[string(v)] {
			t.Errorf("unconsumed record %q is not on the target after offset %d: lost", v, f.TargetCommitted)
		}
	}
	f.OffsetSyncs = seedOffsetSyncs(ctx, t, dst)
	return f
}

// seedConsume consumes seedTopic as the seed group until it has n records, committing after
// every poll, then commits and leaves the group. It returns the values in order.
func seedConsume(ctx context.Context, t *testing.T, src cluster.Cluster, n int) [][]byte {
	t.Helper()
	cl, err := kgo.NewClient(kgo.SeedBrokers(src.Bootstrap()...),
		kgo.ConsumerGroup(seedGroup), kgo.ConsumeTopics(seedTopic),
		kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()), kgo.DisableAutoCommit(),
		kgo.FetchMaxWait(200*time.Millisecond))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close() // leaves the group: it is empty afterwards, as in the user's case
	var out [][]byte
	for len(out) < n {
		fs := cl.PollFetches(ctx)
		if ctx.Err() != nil {
			t.Fatalf("group %s consumed %d of %d records on the source when the deadline came", seedGroup, len(out), n)
		}
		fs.EachError(func(tp string, p int32, err error) { t.Logf("consume %s/%d on source: %v", tp, p, err) })
		recs := fs.Records()
		if len(recs) == 0 {
			continue
		}
		if len(out)+len(recs) > n {
			recs = recs[:n-len(out)] // the producer is paced, so this only trims a race
		}
		for _, r := range recs {
			out = append(out, r.Value)
		}
		if err := cl.CommitRecords(ctx, recs...); err != nil {
			t.Fatalf("group %s: commit on source: %v", seedGroup, err)
		}
	}
	return out
}

// seedCommitted is the group's committed offset of seedTopic/0 on c, or -1.
func seedCommitted(ctx context.Context, t testing.TB, c cluster.Cluster) int64 {
	t.Helper()
	offs, err := bedAdmin(t, c).FetchOffsets(ctx, seedGroup)
	if err != nil {
		t.Fatalf("fetch offsets of group %s on %s: %v", seedGroup, c.Name(), err)
	}
	o, ok := offs.Lookup(seedTopic, 0)
	if !ok || o.Err != nil {
		return -1
	}
	return o.At
}

// seedWait polls (every second, until ctx ends) for: every source record on the target, the
// checkpoint MM2 keeps for G in source.checkpoints.internal (seedCheckpointFinal), and the
// group's offset on the target equal to that checkpoint's downstream offset.
func seedWait(ctx context.Context, t *testing.T, f *SeedFixture, srcEnd int64) error {
	t.Helper()
	start := time.Now()
	state := ""
	for {
		state = func() string {
			if end := bedEndOffsets(ctx, t, f.Target, seedTopic)[0]; end < srcEnd {
				return fmt.Sprintf("target has %d of %d records", end, srcEnd)
			}
			cp, ok := seedCheckpoint(ctx, t, f.Target)
			if !ok {
				return "no checkpoint for the group yet"
			}
			if why := seedCheckpointFinal(cp, f.SourceCommitted, func() []mm2.OffsetSync { return seedOffsetSyncs(ctx, t, f.Target) }); why != "" {
				return why
			}
			f.Checkpoint = cp
			got := seedCommitted(ctx, t, f.Target)
			if got != cp.Downstream {
				return fmt.Sprintf("target group offset %d, checkpoint says %d", got, cp.Downstream)
			}
			f.TargetCommitted = got
			return ""
		}()
		if state == "" {
			t.Logf("MM2 mirrored and checkpointed after %s", time.Since(start).Round(time.Second))
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("waiting for MM2 (%s): %s when the deadline came", time.Since(start).Round(time.Second), state)
		case <-time.After(time.Second):
		}
	}
}

// seedCheckpointFinal says why cp, the group's last checkpoint, is not yet the one MM2 keeps
// for G, or "" when it is. MM2 (3.x and later) emits a new checkpoint only when the
// translated downstream offset grows, so the last checkpoint can name an upstream offset the
// group committed on its way to G: when MM2 read the group at, say, 106 after the 101->101
// sync, it translated 106 to 102, and G=120 translates to 102 as well, so no checkpoint at 120
// ever comes. The checkpoint is final when it names G, or an earlier offset with the
// downstream offset that G translates to by the offset syncs on the target (read by syncs,
// only then), as MM2 translates (testkit.MM2TranslateHighest).
func seedCheckpointFinal(cp mm2.Checkpoint, g int64, syncs func() []mm2.OffsetSync) string {
	if cp.Upstream == g {
		return ""
	}
	if cp.Upstream > g {
		return fmt.Sprintf("checkpoint at upstream %d, past G=%d", cp.Upstream, g)
	}
	var ks []testkit.Sync
	for _, s := range syncs() {
		ks = append(ks, testkit.Sync{Upstream: s.Upstream, Downstream: s.Downstream})
	}
	want, ok := testkit.MM2TranslateHighest(ks, g)
	if !ok {
		return fmt.Sprintf("checkpoint at upstream %d, want %d; no offset sync at or below it on the target", cp.Upstream, g)
	}
	if cp.Downstream != want {
		return fmt.Sprintf("checkpoint at upstream %d -> %d, want %d or downstream %d (G translated by the %d offset syncs on the target)",
			cp.Upstream, cp.Downstream, g, want, len(ks))
	}
	return ""
}

// seedCheckpoint reads MM2's checkpoint of (group, topic, 0) from the target.
func seedCheckpoint(ctx context.Context, t testing.TB, dst cluster.Cluster) (mm2.Checkpoint, bool) {
	t.Helper()
	const topic = "source.checkpoints.internal"
	if _, ok := bedEndOffsets(ctx, t, dst, topic)[0]; !ok {
		return mm2.Checkpoint{}, false
	}
	var last mm2.Checkpoint
	found := false
	for _, r := range bedReadPartition(ctx, t, dst, topic, 0, 0) {
		cp, err := mm2.DecodeCheckpoint(r.Key, r.Value)
		if err != nil {
			t.Fatalf("decode checkpoint at %s/0@%d: %v", topic, r.Offset, err)
		}
		if cp.Group == seedGroup && cp.Topic == seedTopic && cp.Partition == 0 {
			last, found = cp, true
		}
	}
	return last, found
}

// seedOffsetSyncs reads mm2-offset-syncs.source.internal from the target.
func seedOffsetSyncs(ctx context.Context, t testing.TB, dst cluster.Cluster) []mm2.OffsetSync {
	t.Helper()
	const topic = "mm2-offset-syncs.source.internal"
	var out []mm2.OffsetSync
	for _, r := range bedReadPartition(ctx, t, dst, topic, 0, 0) {
		s, err := mm2.DecodeOffsetSync(r.Key, r.Value)
		if err != nil {
			t.Fatalf("decode offset sync at %s/0@%d: %v", topic, r.Offset, err)
		}
		out = append(out, s)
	}
	return out
}

// TestSeedScenario reproduces the seed case on real Kafka 2.3.0, 3.7.1 and MirrorMaker 2:
// after the switch, the target lag is larger than the source lag and already consumed records
// are read again.
func TestSeedScenario(t *testing.T) {
	bedParallel(t)
	start := time.Now()
	f := runSeedScenario(t)
	var syncs bytes.Buffer
	for _, s := range f.OffsetSyncs {
		fmt.Fprintf(&syncs, " %d->%d", s.Upstream, s.Downstream)
	}
	t.Logf("offset syncs on the target (upstream->downstream):%s", syncs.String())
	t.Logf("checkpoint: group %s %s/0 upstream %d -> downstream %d", f.Checkpoint.Group, f.Checkpoint.Topic, f.Checkpoint.Upstream, f.Checkpoint.Downstream)
	t.Logf("source lag: %d (end %d, committed %d)", f.SourceLag, f.SourceCommitted+f.SourceLag, f.SourceCommitted)
	t.Logf("target lag: %d (end %d, committed %d by MM2)", f.TargetLag, f.TargetCommitted+f.TargetLag, f.TargetCommitted)
	t.Logf("re-read after switching to the target: %d already consumed records", f.Reread)
	t.Logf("seed scenario took %s", time.Since(start).Round(time.Second))

	if got, want := f.SourceLag, int64(seedPhase2); got != want {
		t.Errorf("source lag: got %d, want %d", got, want)
	}
	if got, want := int64(len(f.Consumed)), f.SourceCommitted; got != want {
		t.Errorf("consumed records: got %d, want the committed offset %d", got, want)
	}
	if f.TargetLag <= f.SourceLag {
		t.Errorf("target lag: got %d, want more than the source lag %d (the bug as users meet it)", f.TargetLag, f.SourceLag)
	}
	if got, want := f.Reread, f.TargetLag-f.SourceLag; got != want {
		t.Errorf("re-read records: got %d, want target lag - source lag = %d", got, want)
	}
}

// TestSeedProperties checks that the test's mm2.properties is the user's but for addresses,
// replication factors and intervals.
func TestSeedProperties(t *testing.T) {
	bedParallel(t)
	src := cluster.StartT(t, cluster.Spec{Version: cluster.Kfake, Name: "source"})
	dst := cluster.StartT(t, cluster.Spec{Version: cluster.Kfake, Name: "destination"})
	parse := func(text string) map[string]string {
		m := map[string]string{}
		for _, line := range strings.Split(strings.TrimSpace(text), "\n") {
			k, v, _ := strings.Cut(line, "=")
			m[k] = v
		}
		return m
	}
	user, got := parse(seedMM2), parse(seedProperties(src, dst))
	if len(got) != len(user) {
		t.Errorf("got %d keys, want the user's %d", len(got), len(user))
	}
	for k, uv := range user {
		want := uv
		switch {
		case k == "source.bootstrap.servers":
			want = strings.Join(src.Bootstrap(), ",")
		case k == "destination.bootstrap.servers":
			want = strings.Join(dst.Bootstrap(), ",")
		case strings.HasSuffix(k, "replication.factor"):
			want = "1"
		case strings.HasSuffix(k, ".interval.seconds"):
			want = "2"
		}
		if got[k] != want {
			t.Errorf("%s: got %q, want %q", k, got[k], want)
		}
	}
	if got["offset.max.lag"] != "1" {
		t.Errorf("offset.max.lag: got %q, want the user's misspelt key kept at 1", got["offset.max.lag"])
	}
}

// TestSeedCheckpointFinal checks the seed fixture's wait against the checkpoints MM2 keeps:
// under load MM2 can read the group at 106, after the 101->101 sync, and never write a
// checkpoint at G=120 because both translate to 102; the wait must take that checkpoint as
// final, and must not take one whose translation G's would still pass.
func TestSeedCheckpointFinal(t *testing.T) {
	syncs := []mm2.OffsetSync{{Upstream: 0, Downstream: 0}, {Upstream: 101, Downstream: 101}}
	cp := func(up, down int64) mm2.Checkpoint { return mm2.Checkpoint{Upstream: up, Downstream: down} }
	for _, c := range []struct {
		name  string
		cp    mm2.Checkpoint
		syncs []mm2.OffsetSync
		final bool
	}{
		{"at G", cp(120, 102), syncs, true},
		{"read on the way, same translation", cp(106, 102), syncs, true},
		{"read before the 101 sync reached MM2", cp(106, 1), syncs, false},
		{"read before the 101 sync", cp(60, 1), syncs, false},
		{"sync at G itself", cp(110, 111), []mm2.OffsetSync{{Upstream: 0, Downstream: 0}, {Upstream: 120, Downstream: 125}}, false},
		{"sync at G, checkpoint at it", cp(120, 125), []mm2.OffsetSync{{Upstream: 0, Downstream: 0}, {Upstream: 120, Downstream: 125}}, true},
		{"no sync at or below", cp(106, 1), []mm2.OffsetSync{{Upstream: 130, Downstream: 130}}, false},
		{"past G", cp(121, 102), syncs, false},
	} {
		read := false
		why := seedCheckpointFinal(c.cp, 120, func() []mm2.OffsetSync { read = true; return c.syncs })
		if c.cp.Upstream == 120 && read {
			t.Errorf("%s: read the offset syncs for a checkpoint at G", c.name)
		}
		if got := why == ""; got != c.final {
			t.Errorf("%s: checkpoint %d->%d final = %v (%q), want %v", c.name, c.cp.Upstream, c.cp.Downstream, got, why, c.final)
		}
	}
}
