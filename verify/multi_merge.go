package verify

import (
	"bytes"
	"cmp"
	"encoding/json"
	"fmt"
	"reflect"
	"slices"
	"sort"
	"strings"

	"github.com/kmigrate/kmigrate/align"
)

// ShardReport is one report given to MergeShards, named for errors (its file).
type ShardReport struct {
	Name   string
	Result *MultiResult
}

// ParseMultiResult reads the JSON report of `kverify diff` over several topics. Anything
// else (not JSON, another tool's report, a single-topic report, another version) is an error
// saying what it is.
func ParseMultiResult(data []byte) (*MultiResult, error) {
	var probe struct {
		Kind        *string `json:"kind"`
		Version     int     `json:"version"`
		SourceTopic *string `json:"source_topic"`
	}
	if err := json.Unmarshal(data, &probe); err != nil {
		return nil, fmt.Errorf("not a JSON report: %w", err)
	}
	switch {
	case probe.Kind == nil && probe.SourceTopic != nil:
		return nil, fmt.Errorf("a single-topic report of kverify diff, which has no shard: merge takes the JSON reports of kverify diff --shard")
	case probe.Kind == nil || *probe.Kind != MultiKind:
		return nil, fmt.Errorf("not a JSON report of kverify diff over several topics (kind %q): merge takes the reports of kverify diff --shard --format json", strings.TrimSpace(fmt.Sprint(deref(probe.Kind))))
	case probe.Version != MultiVersion:
		return nil, fmt.Errorf("report version %d: this kverify reads version %d", probe.Version, MultiVersion)
	}
	var mr MultiResult
	dec := json.NewDecoder(bytes.NewReader(data))
	if err := dec.Decode(&mr); err != nil {
		return nil, fmt.Errorf("not a JSON report of kverify diff: %w", err)
	}
	return &mr, nil
}

func deref(s *string) string {
	if s == nil {
		return ""
	}
	return *s
}

// MergeShards joins the reports of every shard of one sharded run into one result, as if
// one process had compared the whole selection. It refuses, naming the report: a report that
// is not a shard's, shards of different runs (flow, clusters, selection, range, fields,
// isolation, the topics and their partition counts, shard count), a shard given twice or
// missing, a partition in two reports or in none.
func MergeShards(reports []ShardReport) (*MultiResult, error) {
	if len(reports) == 0 {
		return nil, fmt.Errorf("no report given: give the JSON report of every shard")
	}
	if err := checkShards(reports); err != nil {
		return nil, err
	}
	first := reports[0].Result
	byTopic, err := coverage(reports)
	if err != nil {
		return nil, err
	}
	out := &MultiResult{Kind: MultiKind, Version: MultiVersion, Selection: first.Selection, MergedShards: first.Shard.Count, Topics: []TopicResult{}}
	for _, st := range first.Selection.Topics {
		parts := byTopic[st.Source]
		if len(parts) == 0 {
			continue // a topic with no partition
		}
		res := Result{SourceTopic: st.Source, TargetTopic: st.Target, Compared: first.Selection.Compared, Partitions: []align.PartitionResult{}}
		for _, r := range reports {
			for _, t := range r.Result.Topics {
				if t.SourceTopic == st.Source {
					res.Partitions = append(res.Partitions, t.Partitions...)
					res.Transactions = append(res.Transactions, t.Transactions...)
					res.Tables = append(res.Tables, t.Tables...)
					res.TargetReadUncommitted = res.TargetReadUncommitted || t.TargetReadUncommitted
					switch {
					case res.Judged == "":
						res.Judged, res.JudgedWhy = t.Judged, t.JudgedWhy
					case t.Judged != "" && t.Judged != res.Judged:
						// Shards of one run judge a topic alike unless its policy changed between them.
						res.Problems = append(res.Problems, fmt.Sprintf("the shards judged topic %s differently (%s in %s, %s in another): run them again", st.Source, t.Judged, r.Name, res.Judged))
					}
					for _, p := range t.Problems {
						if !slices.Contains(res.Problems, p) {
							res.Problems = append(res.Problems, p)
						}
					}
				}
			}
		}
		slices.SortFunc(res.Tables, func(a, b TablePartition) int { return cmp.Compare(a.Partition, b.Partition) })
		finishTopic(&res)
		out.Topics = append(out.Topics, TopicResult{Result: res})
	}
	out.Finish()
	return out, nil
}

// checkShards checks that reports are every shard of one run, each once.
func checkShards(reports []ShardReport) error {
	first := reports[0]
	seen := map[int]string{}
	for _, r := range reports {
		s := r.Result.Shard
		if s == nil {
			return fmt.Errorf("%s: not a shard's report (kverify diff was run without --shard): merge joins the reports of --shard 0/N ... N-1/N", r.Name)
		}
		if err := s.Validate(); err != nil {
			return fmt.Errorf("%s: %w", r.Name, err)
		}
		if s.Count != first.Result.Shard.Count {
			return fmt.Errorf("%s is shard %s but %s is shard %s: the reports come from runs with different shard counts", r.Name, s, first.Name, first.Result.Shard)
		}
		if why := selectionDiff(first.Result.Selection, r.Result.Selection); why != "" {
			return fmt.Errorf("%s and %s are reports of different runs: %s", first.Name, r.Name, why)
		}
		if prev, dup := seen[s.Index]; dup {
			return fmt.Errorf("%s and %s are both shard %s: give each shard's report once", prev, r.Name, s)
		}
		seen[s.Index] = r.Name
	}
	var missing []string
	for i := 0; i < first.Result.Shard.Count; i++ {
		if _, ok := seen[i]; !ok {
			missing = append(missing, Shard{Index: i, Count: first.Result.Shard.Count}.String())
		}
	}
	if len(missing) > 0 {
		return fmt.Errorf("shard %s missing: give the report of every shard (%d given of %d)", strings.Join(missing, ", "), len(reports), first.Result.Shard.Count)
	}
	return nil
}

// selectionDiff says how two selections differ, or "" when they are the same.
func selectionDiff(a, b Selection) string {
	switch {
	case a.Flow != b.Flow:
		return fmt.Sprintf("flow %s and flow %s", a.Flow, b.Flow)
	case a.SourceCluster != b.SourceCluster || a.TargetCluster != b.TargetCluster:
		return fmt.Sprintf("clusters %s->%s and %s->%s", a.SourceCluster, a.TargetCluster, b.SourceCluster, b.TargetCluster)
	case a.All != b.All || a.TopicsRegex != b.TopicsRegex || !slices.Equal(a.Names, b.Names):
		return fmt.Sprintf("topics selected by %s and by %s", selectionName(a), selectionName(b))
	case a.From != b.From || a.To != b.To:
		return fmt.Sprintf("range --from %s --to %s and --from %s --to %s", a.From, a.To, b.From, b.To)
	case !slices.Equal(a.Compared, b.Compared) || a.Isolation != b.Isolation:
		return fmt.Sprintf("compared %s (%s) and %s (%s)", strings.Join(a.Compared, ","), a.Isolation, strings.Join(b.Compared, ","), b.Isolation)
	case !reflect.DeepEqual(a.Topics, b.Topics):
		return "the topics or their partition counts differ (the flow changed between the shards' runs: run every shard again)"
	}
	return ""
}

func selectionName(s Selection) string {
	switch {
	case s.TopicsRegex != "":
		return fmt.Sprintf("--topics %q", s.TopicsRegex)
	case s.All:
		return "--all"
	}
	return "--topic " + strings.Join(s.Names, ",")
}

// coverage checks that every partition of every selected topic is in exactly one report, and
// returns, per topic, the report covering each partition.
func coverage(reports []ShardReport) (map[string]map[int32]string, error) {
	sel := reports[0].Result.Selection
	size := map[string]int{}
	for _, t := range sel.Topics {
		size[t.Source] = t.Partitions
	}
	by := map[string]map[int32]string{}
	for _, r := range reports {
		for _, t := range r.Result.Topics {
			n, ok := size[t.SourceTopic]
			if !ok {
				return nil, fmt.Errorf("%s: topic %q is not one of the topics its run selected", r.Name, t.SourceTopic)
			}
			if by[t.SourceTopic] == nil {
				by[t.SourceTopic] = map[int32]string{}
			}
			for _, p := range t.Partitions {
				if p.Partition < 0 || int(p.Partition) >= n {
					return nil, fmt.Errorf("%s: topic %q has no partition %d (%d partitions)", r.Name, t.SourceTopic, p.Partition, n)
				}
				if prev, dup := by[t.SourceTopic][p.Partition]; dup {
					return nil, fmt.Errorf("%s and %s both cover topic %q partition %d: the reports overlap", prev, r.Name, t.SourceTopic, p.Partition)
				}
				by[t.SourceTopic][p.Partition] = r.Name
			}
		}
	}
	for _, t := range sel.Topics {
		for p := int32(0); int(p) < t.Partitions; p++ {
			if _, ok := by[t.Source][p]; !ok {
				return nil, fmt.Errorf("no report covers topic %q partition %d (shard %d of %d should): the reports are incomplete", t.Source, p, ShardOf(t.Source, p, reports[0].Result.Shard.Count), reports[0].Result.Shard.Count)
			}
		}
	}
	return by, nil
}

// finishTopic sorts the partitions of r and sets its Summary, NotCompared and Identical as
// Diff does.
func finishTopic(r *Result) {
	sort.Slice(r.Partitions, func(i, j int) bool { return r.Partitions[i].Partition < r.Partitions[j].Partition })
	r.NotCompared = nil
	for _, pr := range r.Partitions {
		if pr.NotCompared != "" {
			r.NotCompared = append(r.NotCompared, pr.Partition)
		}
	}
	r.tally()
}
