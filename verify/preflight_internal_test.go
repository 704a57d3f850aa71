package verify

import (
	"strings"
	"testing"

	"github.com/kmigrate/kmigrate/internal/testkit"
	"github.com/kmigrate/kmigrate/mm2"
)

// TestPreflightInternalTopics: MirrorMaker 2's internal topics that exist must be compacted
// (compact alone: compact,delete deletes old records too) and replicated as the flow asks.
// A checkpoints topic auto-created with the broker's delete policy loses every checkpoint at
// its retention: a risk naming the topic, the policy, the retention and the fix. A topic MM2
// will create itself (missing) or a feature the flow turns off is no finding.
func TestPreflightInternalTopics(t *testing.T) {
	src, dst := newCluster(t), newCluster(t)
	testkit.CreateTopic(t, src, "orders", 1, nil)
	testkit.CreateTopic(t, dst, "orders", 1, nil)
	compact := map[string]*string{"cleanup.policy": sp("compact")}
	testkit.CreateTopic(t, dst, "old.checkpoints.internal", 1, map[string]*string{"retention.ms": sp("604800000")})
	testkit.CreateTopic(t, src, "mm2-offset-syncs.new.internal", 1, map[string]*string{"cleanup.policy": sp("compact,delete")})
	testkit.CreateTopic(t, dst, "mm2-configs.old.internal", 1, compact)
	testkit.CreateTopic(t, dst, "heartbeats", 1, nil) // the flow turns heartbeats off below

	cfg, err := mm2.Parse(strings.NewReader("clusters=old,new\nold.bootstrap.servers=a:1\nnew.bootstrap.servers=b:1\nold->new.enabled=true\n" +
		"old->new.emit.heartbeats.enabled=false\nconfig.storage.replication.factor=1\n"))
	if err != nil {
		t.Fatal(err)
	}
	flow, err := cfg.Flow("")
	if err != nil {
		t.Fatal(err)
	}
	res := preflight(t, src, dst, PreflightConfig{Flow: flow, Topics: []string{"orders"}})
	got := map[string]Finding{}
	for _, f := range res.ClusterFindings {
		if strings.HasPrefix(f.Field, "MM2 internal topic") {
			got[f.Field] = f
		}
	}
	cp := got["MM2 internal topic old.checkpoints.internal (target) cleanup.policy"]
	if cp.Severity != SeverityRisk || cp.Target != "cleanup.policy=delete" || !strings.Contains(cp.Note, "retention.ms=604800000") ||
		!strings.Contains(cp.Note, "--add-config cleanup.policy=compact") || !strings.Contains(cp.Note, "checkpoints") {
		t.Errorf("checkpoints topic with the delete policy: %+v", cp)
	}
	if f := got["MM2 internal topic mm2-offset-syncs.new.internal (source) cleanup.policy"]; f.Severity != SeverityRisk || f.Source != "cleanup.policy=compact,delete" {
		t.Errorf("offset syncs topic compact,delete: %+v", f)
	}
	// kfake has one broker: the checkpoints and offset syncs topics have 1 replica where MM2's
	// default asks for 3; the configs topic meets the flow's 1.
	if f := got["MM2 internal topic old.checkpoints.internal (target) replication factor"]; f.Severity != SeverityWarning || f.Target != "1" {
		t.Errorf("checkpoints topic replication factor: %+v", f)
	}
	for field := range got {
		if strings.Contains(field, "mm2-configs") || strings.Contains(field, "heartbeats") || strings.Contains(field, "mm2-offsets") || strings.Contains(field, "mm2-status") {
			t.Errorf("unexpected finding %s: %+v", field, got[field])
		}
	}
	if len(got) != 4 || res.OK {
		t.Errorf("%d internal topic findings, ok %v: %+v", len(got), res.OK, got)
	}
}
