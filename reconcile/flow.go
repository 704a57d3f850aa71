package reconcile

import (
	"fmt"
	"regexp"
	"sort"
	"strings"

	"github.com/kmigrate/kmigrate/mm2"
)

// Topic names come from the flow (mm2.Flow: replication policy, checkpoints and offset-syncs
// topics, topic filter); MM2's offset syncs and checkpoints are read by mm2.ReadOffsetSyncs and
// mm2.ReadCheckpoints, as MM2 3.7.1's readers do.

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

// indexSyncs groups offset syncs per source partition, keeping MM2's order.
func indexSyncs(syncs []mm2.OffsetSync) syncIndex {
	idx := make(syncIndex)
	for _, os := range syncs {
		k := tp{os.Topic, os.Partition}
		idx[k] = append(idx[k], os)
	}
	return idx
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
