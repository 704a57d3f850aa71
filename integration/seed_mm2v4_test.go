package integration

import (
	"fmt"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/kmigrate/kmigrate/integration/cluster"
)

// TestSeedScenarioMM2v4 runs the seed case 2.3.0 -> 4.3.1 with Kafka 4.3.1's own MirrorMaker
// 2 and the user's file, and reports where MM2 leaves the idle group: its lag on the target
// against the source's 30, and how many consumed records a switch would read again.
func TestSeedScenarioMM2v4(t *testing.T) {
	bedParallel(t)
	start := time.Now()
	f := runSeedScenarioOn(t, cluster.V431, cluster.V431)
	if log, err := os.ReadFile(f.MM2.LogPath()); err != nil || !strings.Contains(string(log), "Kafka version: "+cluster.V431) {
		t.Fatalf("MM2's log %s does not say Kafka version: %s (%v)", f.MM2.LogPath(), cluster.V431, err)
	}
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
