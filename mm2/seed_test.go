package mm2

import (
	"strings"
	"testing"
)

func TestSeedConfig(t *testing.T) {
	cfg, err := Load("testdata/seed.properties")
	if err != nil {
		t.Fatalf("Load: %v", err)
	}
	if got, want := strings.Join(cfg.Clusters, ","), "source,destination"; got != want {
		t.Errorf("clusters: got %q, want %q", got, want)
	}
	if got, want := len(cfg.Cluster["source"].Bootstrap), 3; got != want {
		t.Errorf("source bootstrap: got %d brokers, want %d", got, want)
	}
	if got, want := cfg.Cluster["destination"].Bootstrap[0], "tor1kafka1-clu1.lab.lan:9093"; got != want {
		t.Errorf("destination bootstrap[0]: got %q, want %q", got, want)
	}
	f, err := cfg.Flow("")
	if err != nil {
		t.Fatalf("Flow(\"\"): %v", err)
	}
	if got, want := f.Name(), "source->destination"; got != want {
		t.Errorf("flow: got %q, want %q", got, want)
	}
	if !f.Enabled {
		t.Errorf("flow enabled: got false, want true")
	}
	if got, want := f.Policy.Name(), IdentityPolicyClass; got != want {
		t.Errorf("policy: got %q, want %q", got, want)
	}
	for _, c := range []struct{ name, got, want string }{
		{"checkpoints topic", f.CheckpointsTopic(), "source.checkpoints.internal"},
		{"offset syncs topic", f.OffsetSyncsTopic(), "mm2-offset-syncs.source.internal"},
		{"heartbeats topic", f.HeartbeatsTopic(), "heartbeats"},
		{"target topic", f.TargetTopic("GEN.LAB.P.TEST.TESTINFO.OLD2NEW"), "GEN.LAB.P.TEST.TESTINFO.OLD2NEW"},
	} {
		if c.got != c.want {
			t.Errorf("%s: got %q, want %q", c.name, c.got, c.want)
		}
	}
	if !f.OffsetSyncsOnTarget() {
		t.Errorf("offset syncs on target: got false, want true")
	}
	if !f.TopicMatches("GEN.LAB.P.TEST.TESTINFO.OLD2NEW") || f.TopicMatches("GEN.LAB.P.TEST.TESTINFO.OLD2NEWX") {
		t.Errorf("topic filter: want exactly GEN.LAB.P.TEST.TESTINFO.OLD2NEW")
	}
	if len(cfg.Warnings) != 1 {
		t.Fatalf("warnings: got %d (%+v), want 1", len(cfg.Warnings), cfg.Warnings)
	}
	w := cfg.Warnings[0]
	if w.Key != "offset.max.lag" || w.Line != 6 || w.Suggestion != "offset.lag.max" {
		t.Errorf("warning: got %+v, want key offset.max.lag on line 6 suggesting offset.lag.max", w)
	}
}
