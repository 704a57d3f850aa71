package reconcile

import (
	"context"
	"fmt"
	"regexp"
	"sort"
	"strings"

	"github.com/kmigrate/kmigrate/mirror/mm2"
)

// The helpers below read the few things Plan needs from an mm2.Flow through its exported
// fields. They stand in until the mm2 package's Flow methods (TargetTopic, TopicMatches,
// CheckpointsTopic, OffsetSyncsTopic, ReadOffsetSyncs, ReadCheckpoints) land; they follow MM2
// 3.7.1's naming rules.

// defaultTopicsExclude is MM2's topics.exclude default.
var defaultTopicsExclude = []string{`.*[\-\.]internal`, `.*\.replica`, `__.*`}

func separator(f *mm2.Flow) string {
	if f.Separator == "" {
		return "."
	}
	return f.Separator
}

// targetTopic is the name of source topic t on the target of flow f.
func targetTopic(f *mm2.Flow, t string) string {
	if f.Policy == nil {
		return t // identity: what kmirror and IdentityReplicationPolicy do
	}
	return f.Policy.TargetTopic(f.Source, t)
}

// topicMirrored reports whether flow f replicates source topic t, and why not.
func topicMirrored(f *mm2.Flow, t string) (bool, string) {
	inc := f.Topics
	if len(inc) == 0 {
		inc = []string{".*"}
	}
	exc := f.TopicsExclude
	if exc == nil {
		exc = defaultTopicsExclude
	}
	if !fullMatchAny(inc, t) {
		return false, fmt.Sprintf("topic %q is not mirrored: flow %s->%s topics = %s does not match it", t, f.Source, f.Target, strings.Join(inc, ","))
	}
	if fullMatchAny(exc, t) {
		return false, fmt.Sprintf("topic %q is not mirrored: flow %s->%s topics.exclude = %s matches it", t, f.Source, f.Target, strings.Join(exc, ","))
	}
	return true, ""
}

func fullMatchAny(patterns []string, s string) bool {
	for _, p := range patterns {
		re, err := regexp.Compile(`^(?:` + strings.TrimSpace(p) + `)$`)
		if err == nil && re.MatchString(s) {
			return true
		}
	}
	return false
}

// checkpointsTopic is "<source alias><sep>checkpoints.internal" on the target.
func checkpointsTopic(f *mm2.Flow) string {
	return f.Source + separator(f) + "checkpoints.internal"
}

// offsetSyncsTopic is "mm2-offset-syncs<sep><alias><sep>internal" and whether it lives on the
// target: the alias is the target's when the topic is on the source (MM2's default), the
// source's when offset-syncs.topic.location=target.
func offsetSyncsTopic(f *mm2.Flow) (string, bool) {
	sep := separator(f)
	if f.OffsetSyncsLocation == "target" {
		return "mm2-offset-syncs" + sep + f.Source + sep + "internal", true
	}
	return "mm2-offset-syncs" + sep + f.Target + sep + "internal", false
}

// syncIndex holds MM2's offset syncs per source partition, in the order MM2 wrote them.
type syncIndex map[tp][]mm2.OffsetSync

type tp struct {
	topic string
	part  int32
}

// readOffsetSyncs reads every offset sync of the topic (empty when it does not exist).
func readOffsetSyncs(ctx context.Context, s *side, topic string) (syncIndex, bool, error) {
	recs, ok, err := s.readAll(ctx, topic)
	if err != nil || !ok {
		return nil, ok, err
	}
	idx := make(syncIndex)
	for _, r := range recs {
		os, err := mm2.DecodeOffsetSync(r.Key, r.Value)
		if err != nil {
			continue // a foreign record; MM2 skips what it cannot read too
		}
		k := tp{os.Topic, os.Partition}
		idx[k] = append(idx[k], os)
	}
	return idx, true, nil
}

// lowerBound returns a target offset at or below the copy of source offset off, from the
// newest sync whose upstream is at or below off, and whether one exists.
func (x syncIndex) lowerBound(topic string, part int32, off int64) (int64, bool) {
	best, found := int64(-1), false
	var bestUp int64 = -1
	for _, s := range x[tp{topic, part}] {
		if s.Upstream <= off && s.Upstream >= bestUp {
			bestUp, best, found = s.Upstream, s.Downstream, true
		}
	}
	return best, found
}

// maxUpstream is the highest upstream offset MM2 recorded for the partition, or -1.
func (x syncIndex) maxUpstream(topic string, part int32) int64 {
	m := int64(-1)
	for _, s := range x[tp{topic, part}] {
		m = max(m, s.Upstream)
	}
	return m
}

// readCheckpoints reads the last checkpoint per group partition (empty when the topic does not
// exist).
func readCheckpoints(ctx context.Context, s *side, topic string) (map[mm2.CheckpointKey]mm2.Checkpoint, bool, error) {
	recs, ok, err := s.readAll(ctx, topic)
	if err != nil || !ok {
		return nil, ok, err
	}
	out := make(map[mm2.CheckpointKey]mm2.Checkpoint)
	for _, r := range recs {
		if r.Value == nil {
			continue
		}
		c, err := mm2.DecodeCheckpoint(r.Key, r.Value)
		if err != nil {
			continue
		}
		out[c.ID()] = c
	}
	return out, true, nil
}

func sortedKeys[V any](m map[string]V) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

// anchored returns re matching whole strings only (MM2 matches group and topic names whole).
func anchored(re *regexp.Regexp) *regexp.Regexp {
	if re == nil {
		return nil
	}
	return regexp.MustCompile(`^(?:` + re.String() + `)$`)
}
