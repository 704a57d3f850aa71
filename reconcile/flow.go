package reconcile

import (
	"context"
	"fmt"
	"regexp"
	"sort"
	"strings"

	"github.com/kmigrate/kmigrate/mirror/mm2"
)

// Topic names come from the flow (mm2.Flow: replication policy, checkpoints and offset-syncs
// topics, topic filter). The offset syncs and checkpoints are read here with the same raw
// reader Plan uses for records, as MM2 3.7.1 readers do: every record of partition 0, the last
// checkpoint per key.

// topicMirrored reports whether flow f replicates source topic t, and why not.
func topicMirrored(f *mm2.Flow, t string) (bool, string) {
	if f.TopicMatches(t) {
		return true, ""
	}
	return false, fmt.Sprintf("topic not mirrored: flow %s does not replicate %q (topics = %s, topics.exclude = %s, or an internal or cyclic topic)",
		f.Name(), t, strings.Join(f.Topics, ","), strings.Join(f.TopicsExclude, ","))
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
