package verify

import (
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/cespare/xxhash/v2"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"

	"github.com/kmigrate/kmigrate/mm2"
)

// MultiKind is the "kind" of a MultiResult in JSON: kverify merge reads only reports of it.
const MultiKind = "kverify-diff-topics"

// MultiVersion is the version of the MultiResult JSON form.
const MultiVersion = 1

// Shard is a share of a flow's (topic, partition) pairs: those with ShardOf(topic, p, Count)
// == Index. The zero Shard (Count 0) is every pair.
type Shard struct {
	Index int `json:"index"`
	Count int `json:"count"`
}

// ShardOf is the shard of partition p of source topic topic among count shards:
// (xxhash64(topic) + p) mod count. It depends on the topic's name and the partition number
// only, never on which other topics exist or the order they are listed in, so every process
// of a sharded run computes the same assignment; and a topic's consecutive partitions go to
// consecutive shards, so each topic is spread evenly.
func ShardOf(topic string, p int32, count int) int {
	if count <= 1 {
		return 0
	}
	return int((xxhash.Sum64String(topic) + uint64(p)) % uint64(count))
}

// Owns reports whether partition p of topic is in shard s.
func (s Shard) Owns(topic string, p int32) bool {
	return s.Count <= 1 || ShardOf(topic, p, s.Count) == s.Index
}

// Sharded reports whether s is a share of the pairs (given with --shard), even 0/1.
func (s Shard) Sharded() bool { return s.Count > 0 }

// Validate checks 0 <= Index < Count.
func (s Shard) Validate() error {
	if s.Count == 0 && s.Index == 0 {
		return nil
	}
	if s.Count < 1 || s.Index < 0 || s.Index >= s.Count {
		return fmt.Errorf("shard %d/%d: give INDEX/COUNT with 0 <= INDEX < COUNT, e.g. 0/4", s.Index, s.Count)
	}
	return nil
}

// String is "INDEX/COUNT".
func (s Shard) String() string { return fmt.Sprintf("%d/%d", s.Index, s.Count) }

// SelectedTopic is one topic a run selected, with its source partition count: the partitions
// 0..Partitions-1 are what the shards of a run must cover together.
type SelectedTopic struct {
	Source     string `json:"source_topic"`
	Target     string `json:"target_topic"`
	Partitions int    `json:"partitions"`
}

// Selection is what a run of DiffTopics compared: the flow, how the topics were selected and
// every topic selected, the range and the fields. kverify merge joins only shards whose
// selections are equal.
type Selection struct {
	Flow          string `json:"flow"`
	SourceCluster string `json:"source_cluster_id,omitempty"`
	TargetCluster string `json:"target_cluster_id,omitempty"`
	// All is --all; TopicsRegex is --topics as given; Names are the --topic names.
	All         bool            `json:"all,omitempty"`
	TopicsRegex string          `json:"topics_regex,omitempty"`
	Names       []string        `json:"names,omitempty"`
	From        string          `json:"from"`
	To          string          `json:"to"`
	Compared    []string        `json:"compared"`
	Isolation   string          `json:"isolation"`
	Topics      []SelectedTopic `json:"topics"`
}

// MultiConfig is what DiffTopics compares.
type MultiConfig struct {
	// Flow selects the topics (with All or TopicsRegex) and names them on the target. Required.
	Flow *mm2.Flow
	// All selects every topic the flow mirrors (Flow.TopicMatches), less internal topics,
	// heartbeats topics and MirrorMaker 2's own (mm2-*).
	All bool
	// TopicsRegex, when set, narrows those topics to the ones matching one of these
	// comma-separated regexes, each matching the whole name (MM2's topics key syntax). It
	// implies All.
	TopicsRegex string
	// Names are exact source topic names (--topic): each must exist on the source; the flow's
	// filter does not apply. Not with All or TopicsRegex.
	Names []string
	// Shard is the share of the (topic, partition) pairs to compare. Default: all.
	Shard Shard
	// Base holds the settings of every topic's comparison: From, To, Fields, Window,
	// History, Parallel (one pool of partition workers for all topics), ReadUncommitted,
	// OffsetSyncs*, MaxListed, Logger. SourceTopic, TargetTopic, Partitions and
	// PartitionRanges are ignored.
	Base Config
	// Progress, when set, is called like Config.Progress, with the source topic.
	Progress func(topic string, p Progress)
}

// heartbeats reports whether t is a heartbeats topic of MM2 (heartbeats, or a copy of it such
// as A.heartbeats): MM2 writes them itself, they are no data of the flow.
func heartbeats(f *mm2.Flow, t string) bool {
	sep := f.Separator
	if sep == "" {
		sep = "."
	}
	return t == mm2.HeartbeatsTopic || strings.HasSuffix(t, sep+mm2.HeartbeatsTopic) || strings.HasSuffix(t, "."+mm2.HeartbeatsTopic)
}

// selectTopics returns the sorted source topics mc selects from the source metadata.
func selectTopics(mc MultiConfig, src kadm.TopicDetails) ([]string, error) {
	if len(mc.Names) > 0 {
		var out []string
		for _, n := range mc.Names {
			td, ok := src[n]
			if !ok || errors.Is(td.Err, kerr.UnknownTopicOrPartition) {
				return nil, fmt.Errorf("source topic %q does not exist: check --topic and --source-brokers", n)
			}
			if td.Err != nil {
				return nil, fmt.Errorf("describe source topic %q: %w", n, td.Err)
			}
			if !slices.Contains(out, n) {
				out = append(out, n)
			}
		}
		slices.Sort(out)
		return out, nil
	}
	var narrow mm2.Pattern
	if mc.TopicsRegex != "" {
		var err error
		if narrow, err = mm2.CompilePattern("--topics", strings.Split(mc.TopicsRegex, ",")); err != nil {
			return nil, err
		}
	}
	var out []string
	for _, td := range src.Sorted() {
		t := td.Topic
		if td.IsInternal || !mc.Flow.TopicMatches(t) || heartbeats(mc.Flow, t) || strings.HasPrefix(t, "mm2-") ||
			mc.TopicsRegex != "" && !narrow.Matches(t) {
			continue
		}
		if td.Err != nil {
			return nil, fmt.Errorf("describe source topic %q: %w", t, td.Err)
		}
		out = append(out, t)
	}
	if len(out) == 0 {
		how := "the flow's topics filter"
		if mc.TopicsRegex != "" {
			how += fmt.Sprintf(" and --topics %q", mc.TopicsRegex)
		}
		return nil, fmt.Errorf("flow %s: %w: %s matches none of the %d source topics (internal, heartbeats and mm2-* topics are never selected)",
			mc.Flow.Name(), ErrNoTopics, how, len(src))
	}
	return out, nil
}

// validate checks mc and fills in the defaults of its Base.
func (mc *MultiConfig) validate() error {
	if mc.Flow == nil {
		return errors.New("diff topics: no flow")
	}
	if len(mc.Names) > 0 && (mc.All || mc.TopicsRegex != "") {
		return errors.New("--topic names topics exactly; --all and --topics select them from the flow: give one or the other")
	}
	if len(mc.Names) == 0 && !mc.All && mc.TopicsRegex == "" {
		return errors.New("no topic selected: give --topic, --topics or --all")
	}
	if err := mc.Shard.Validate(); err != nil {
		return err
	}
	mc.Base.SourceTopic = "-" // Validate wants one; each topic sets its own
	mc.Base.Partitions, mc.Base.PartitionRanges = nil, nil
	mc.Base.SetDefaults()
	return mc.Base.Validate()
}
