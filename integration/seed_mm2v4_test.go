package integration

import (
	"context"
	"fmt"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/kmigrate/kmigrate/integration/cluster"
)

// runSeedScenarioOn is runSeedScenario with the target cluster and MirrorMaker 2 of the given
// versions (runSeedScenario runs 3.7.1 for both): the same user's file, records, pacing and
// group, and the same waits for MM2's mirror, checkpoint and group offset sync.
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
	produced := make(chan error, 1)
	go func() { produced <- produce(0, seedPhase1) }()
	f.Consumed = seedConsume(ctx, t, src, seedPhase1)
	if err := <-produced; err != nil {
		t.Fatal(err)
	}
	if err := produce(seedPhase1, seedPhase1+seedPhase2); err != nil {
		t.Fatal(err)
	}
	for i := seedPhase1; i < seedPhase1+seedPhase2; i++ {
		f.Unconsumed = append(f.Unconsumed, value(i))
	}
	if f.SourceCommitted = seedCommitted(ctx, t, src); f.SourceCommitted < 0 {
		t.Fatalf("group %s has no committed offset for %s/0 on the source", seedGroup, seedTopic)
	}
	srcEnd := bedEndOffsets(ctx, t, src, seedTopic)[0]
	f.SourceLag = srcEnd - f.SourceCommitted
	if err := seedWait(ctx, t, f, srcEnd); err != nil {
		t.Fatalf("%v\nMM2 log: %s", err, f.MM2.LogPath())
	}
	f.TargetLag = bedEndOffsets(ctx, t, dst, seedTopic)[0] - f.TargetCommitted
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
	if log, err := os.ReadFile(f.MM2.LogPath()); err != nil || !strings.Contains(string(log), "Kafka version: "+mm2Version) {
		t.Fatalf("MM2's log %s does not say Kafka version: %s (%v)", f.MM2.LogPath(), mm2Version, err)
	}
	return f
}

// TestSeedScenarioMM2v4 runs the seed case 2.3.0 -> 4.3.1 with Kafka 4.3.1's own MirrorMaker
// 2 and the user's file, and reports where MM2 leaves the idle group: its lag on the target
// against the source's 30, and how many consumed records a switch would read again.
func TestSeedScenarioMM2v4(t *testing.T) {
	start := time.Now()
	f := runSeedScenarioOn(t, cluster.V431, cluster.V431)
	var syncs string
	for _, s := range f.OffsetSyncs {
		syncs += fmt.Sprintf(" %d->%d", s.Upstream, s.Downstream)
	}
	t.Logf("MM2 4.3.1, 2.3.0 -> 4.3.1: offset syncs on the target (upstream->downstream):%s", syncs)
	t.Logf("checkpoint: group %s %s/0 upstream %d -> downstream %d", f.Checkpoint.Group, f.Checkpoint.Topic, f.Checkpoint.Upstream, f.Checkpoint.Downstream)
	t.Logf("source lag: %d (end %d, committed %d)", f.SourceLag, f.SourceCommitted+f.SourceLag, f.SourceCommitted)
	t.Logf("target lag: %d (end %d, committed %d by MM2 4.3.1)", f.TargetLag, f.TargetCommitted+f.TargetLag, f.TargetCommitted)
	t.Logf("re-read after switching to the target: %d already consumed records", f.Reread)
	t.Logf("seed scenario with MM2 4.3.1 took %s", time.Since(start).Round(time.Second))

	if got, want := f.SourceLag, int64(seedPhase2); got != want {
		t.Errorf("source lag: got %d, want %d", got, want)
	}
	if f.TargetLag < f.SourceLag {
		t.Errorf("target lag: got %d, below the source lag %d: MM2 4.3.1 would skip records", f.TargetLag, f.SourceLag)
	}
	if got, want := f.Reread, f.TargetLag-f.SourceLag; got != want {
		t.Errorf("re-read records: got %d, want target lag - source lag = %d", got, want)
	}
}
