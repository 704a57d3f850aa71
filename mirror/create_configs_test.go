package mirror_test

import (
	"context"
	"testing"

	"github.com/twmb/franz-go/pkg/kadm"

	"github.com/kmigrate/kmigrate/internal/testkit"
)

// TestCreateTargetKeepsSourceConfigs: with sync.topic.configs.enabled=false the target of a
// compacted source topic is still created compacted, with the source's overrides, as
// MirrorMaker 2 creates every new topic: otherwise the target would delete by retention the
// keys the source keeps. Nothing is altered afterwards (no periodic sync).
func TestCreateTargetKeepsSourceConfigs(t *testing.T) {
	t.Parallel()
	p := newPair(t)
	const topic, parts = "settings-created", 2
	compact, dirty := "compact", "0.01"
	testkit.CreateTopic(t, testkit.Client(t, p.src), topic, parts, map[string]*string{"cleanup.policy": &compact, "min.cleanable.dirty.ratio": &dirty})
	produce(t, p.src, topic, parts, 0, 20)

	cfg := testConfig(topic)
	cfg.SyncTopicConfigs = false
	_, stop := start(t, p, cfg)
	waitMirrored(t, p, topic, parts)
	if err := stop(); err != nil {
		t.Fatalf("Run: %v", err)
	}
	rcs, err := kadm.NewClient(testkit.Client(t, p.dst)).DescribeTopicConfigs(context.Background(), topic)
	if err != nil {
		t.Fatal(err)
	}
	rc, err := rcs.On(topic, nil)
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]string{}
	for _, c := range rc.Configs {
		if c.Value != nil {
			got[c.Key] = *c.Value
		}
	}
	if got["cleanup.policy"] != compact || got["min.cleanable.dirty.ratio"] != dirty {
		t.Errorf("target topic created with cleanup.policy %q, min.cleanable.dirty.ratio %q; want the source's %q, %q",
			got["cleanup.policy"], got["min.cleanable.dirty.ratio"], compact, dirty)
	}
}
