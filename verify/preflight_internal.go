package verify

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"

	"github.com/kmigrate/kmigrate/mm2"
)

// MirrorMaker 2 keeps its state in compacted topics: the checkpoints (a group's translated
// offsets), the offset syncs, the heartbeats and, in a dedicated MM2 cluster, Connect's
// offsets, configs and status. It creates them compacted when they are missing; a topic that
// something else created first (a broker with auto.create.topics.enable, a tool, an operator)
// gets the broker's default policy, delete, and loses its records at retention.ms: a published
// migration runbook lost every checkpoint after 7 days so. Preflight checks each one that
// exists on the cluster MM2 keeps it on.

// mm2Internal is one internal topic MirrorMaker 2 relies on for a flow.
type mm2Internal struct {
	name    string
	target  bool   // on the target cluster (else the source)
	what    string // what MM2 keeps in it
	rfKey   string // the flow's replication factor key
	enabled bool   // the flow uses it
}

// mm2Internals lists the internal topics of flow f, with whether the flow uses each.
func mm2Internals(f *mm2.Flow) ([]mm2Internal, error) {
	var errs []error
	flag := func(key string) bool {
		b, _, err := f.Bool(key, true)
		errs = append(errs, err)
		return b
	}
	checkpoints, heartbeats := flag("emit.checkpoints.enabled"), flag("emit.heartbeats.enabled")
	syncs := flag("emit.offset-syncs.enabled")
	topic := func(key, def string) string {
		if v := strings.TrimSpace(f.Settings[key]); v != "" {
			return v
		}
		return def
	}
	src := f.Source
	out := []mm2Internal{
		{f.CheckpointsTopic(), true, "the groups' translated offsets (checkpoints)", "checkpoints.topic.replication.factor", checkpoints},
		{f.OffsetSyncsTopic(), f.OffsetSyncsOnTarget(), "the offset syncs every checkpoint is translated with", "offset-syncs.topic.replication.factor", syncs},
		{f.HeartbeatsTopic(), true, "the heartbeats", "heartbeats.topic.replication.factor", heartbeats},
		{topic("offset.storage.topic", "mm2-offsets."+src+".internal"), true, "Connect's source offsets (where each task resumes)", "offset.storage.replication.factor", true},
		{topic("config.storage.topic", "mm2-configs."+src+".internal"), true, "Connect's connector and task configs", "config.storage.replication.factor", true},
		{topic("status.storage.topic", "mm2-status."+src+".internal"), true, "Connect's connector and task status", "status.storage.replication.factor", true},
	}
	return out, errors.Join(errs...)
}

// internalTopicFindings checks, on each side, the MM2 internal topics of f that exist: cleanup
// policy compact (a risk when not) and a replication factor of at least the one the flow asks
// for (MM2's default 3, or the flow's key; a warning when below). Missing topics and those of a
// feature the flow turns off are not findings: MM2 creates what it uses, compacted.
func internalTopicFindings(ctx context.Context, sa, da *kadm.Client, f *mm2.Flow) ([]Finding, error) {
	topics, err := mm2Internals(f)
	if err != nil {
		return nil, err
	}
	var out []Finding
	for _, side := range []struct {
		target bool
		adm    *kadm.Client
		alias  string
		name   string
	}{{false, sa, f.Source, "source"}, {true, da, f.Target, "target"}} {
		var names []string
		for _, t := range topics {
			if t.enabled && t.target == side.target && !slices.Contains(names, t.name) {
				names = append(names, t.name)
			}
		}
		if len(names) == 0 {
			continue
		}
		td, err := side.adm.ListTopics(ctx, names...)
		if err != nil {
			return nil, fmt.Errorf("%s cluster %s: describe MirrorMaker 2's internal topics: %w", side.name, side.alias, err)
		}
		var present []string
		for _, n := range names {
			if d, ok := td[n]; ok && d.Err == nil {
				present = append(present, n)
			} else if ok && d.Err != nil && !errors.Is(d.Err, kerr.UnknownTopicOrPartition) {
				return nil, fmt.Errorf("%s cluster %s: describe topic %s: %w", side.name, side.alias, n, d.Err)
			}
		}
		cfgs, err := topicConfigs(ctx, side.adm, side.alias, side.name, present)
		if err != nil {
			return nil, err
		}
		for _, t := range topics {
			if !t.enabled || t.target != side.target || !slices.Contains(present, t.name) {
				continue
			}
			fs, err := internalTopicChecks(f, t, side.name, side.alias, td[t.name], cfgs[t.name])
			if err != nil {
				return nil, err
			}
			out = append(out, fs...)
		}
	}
	return out, nil
}

// internalTopicChecks judges one existing internal topic t on side (alias) from its
// description d and configuration c.
func internalTopicChecks(f *mm2.Flow, t mm2Internal, side, alias string, d kadm.TopicDetail, c map[string]kadm.Config) ([]Finding, error) {
	var out []Finding
	value := func(f Finding, v string) Finding {
		if side == "source" {
			f.Source = v
		} else {
			f.Target = v
		}
		return f
	}
	field := fmt.Sprintf("MM2 internal topic %s (%s)", t.name, side)
	policy := ""
	if cp, ok := c["cleanup.policy"]; ok && cp.Value != nil {
		policy = *cp.Value
	}
	if strings.ReplaceAll(policy, " ", "") != "compact" {
		retention := "the topic's retention.ms"
		if r, ok := c["retention.ms"]; ok && r.Value != nil {
			retention = "retention.ms=" + *r.Value
		}
		out = append(out, value(Finding{Field: field + " cleanup.policy", Severity: SeverityRisk,
			Note: fmt.Sprintf("MirrorMaker 2 keeps %s in it and relies on compaction alone: with cleanup.policy=%s every record older than %s is deleted, and with it what MM2 kept there. Fix: kafka-configs --alter --entity-type topics --entity-name %s --add-config cleanup.policy=compact on cluster %s",
				t.what, policy, retention, t.name, alias)}, "cleanup.policy="+policy))
	}
	flowRF, set, err := f.ReplicationFactor(t.rfKey)
	if err != nil {
		return nil, err
	}
	def, _ := mm2.DefaultReplicationFactor(t.rfKey)
	want := int(flowRF)
	if !set {
		want = def
	}
	if len(d.Partitions) > 0 {
		rf := len(d.Partitions.Sorted()[0].Replicas)
		if want > 0 && rf < want {
			out = append(out, value(Finding{Field: field + " replication factor", Severity: SeverityWarning,
				Note: fmt.Sprintf("the flow asks for %s=%d (MM2's default %d when unset); the topic has %d: a broker's loss can take %s with it", t.rfKey, want, def, rf, t.what)},
				strconv.Itoa(rf)))
		}
	}
	return out, nil
}
