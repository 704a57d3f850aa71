package reconcile

import (
	"regexp"
	"sort"

	"github.com/kmigrate/kmigrate/mm2"
)

// Topic names come from the flow (mm2.Flow: replication policy, checkpoints and offset-syncs
// topics, topic filter); MM2's offset syncs and checkpoints are read by mm2.ReadOffsetSyncs and
// mm2.ReadCheckpoints, as MM2 3.7.1's readers do.

// topicMirrored reports whether flow f replicates source topic t, and why not.
func topicMirrored(f *mm2.Flow, t string) (bool, string) { return f.TopicMirrored(t) }

type tp struct {
	topic string
	part  int32
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
