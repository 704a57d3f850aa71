package verify

import (
	"context"
	"errors"
	"fmt"
	"sync"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"golang.org/x/sync/errgroup"

	"github.com/kmigrate/kmigrate/align"
	"github.com/kmigrate/kmigrate/internal/clustermeta"
	"github.com/kmigrate/kmigrate/logread"
	"github.com/kmigrate/kmigrate/mm2"
	"github.com/kmigrate/kmigrate/offsetmap"
)

// DiffStatus is the verdict on one topic of a MultiResult.
type DiffStatus string

// The statuses of a topic.
const (
	// StatusIdentical: every partition compared is identical (some may have had nothing to
	// compare), no problem, no error.
	StatusIdentical DiffStatus = "identical"
	// StatusDiffers: differences in some partition, or a topic problem (a missing target
	// topic, a partition count mismatch).
	StatusDiffers DiffStatus = "differs"
	// StatusError: some partition could not be read, and nothing was found to differ.
	StatusError DiffStatus = "error"
	// StatusNothing: no partition had a source record in the range asked.
	StatusNothing DiffStatus = "nothing to compare"
)

// TopicResult is one topic of a MultiResult: the Result Diff gives for it (its JSON fields
// inline), for the partitions of the shard, and its status.
type TopicResult struct {
	Result
	Status DiffStatus `json:"status"`
}

// MultiTotals counts the topics by status, the partitions reported and their records.
type MultiTotals struct {
	Topics           int `json:"topics"`
	Identical        int `json:"identical_topics"`
	Differs          int `json:"differing_topics"`
	Failed           int `json:"failed_topics"`
	NothingToCompare int `json:"not_compared_topics"`
	Partitions       int `json:"partitions"`
	align.Counts
	// Aborted and AbortedCopies sum the topics' Result.Aborted and Result.AbortedCopies: the
	// records of aborted transactions on the target, and the copies of committed records
	// among them, which read_uncommitted consumers read.
	Aborted       int64 `json:"aborted,omitempty"`
	AbortedCopies int64 `json:"aborted_copies,omitempty"`
}

// IsolationTargetUncommitted is Selection.Isolation of a run with Config.TargetReadUncommitted.
const IsolationTargetUncommitted = "source read_committed, target read_uncommitted"

// MultiResult is what DiffTopics and MergeShards return and the JSON of `kverify diff` over
// several topics (--all, --topics, --topic given more than once, --shard): field names are
// stable; fields may be added, never renamed.
type MultiResult struct {
	Kind      string    `json:"kind"` // MultiKind
	Version   int       `json:"version"`
	Selection Selection `json:"selection"`
	// Shard is the share this report covers (--shard); nil for a whole run or a merge.
	Shard *Shard `json:"shard,omitempty"`
	// MergedShards is the shard count of the reports a merge joined; 0 otherwise.
	MergedShards int `json:"merged_shards,omitempty"`
	// Identical: at least one topic identical and every topic identical or with nothing to
	// compare. Never true for an empty shard.
	Identical bool `json:"identical"`
	// EmptyShard: the shard holds no partition of the selected topics (more shards than
	// partitions): it compared nothing; the merge of all shards gives the verdict.
	EmptyShard bool          `json:"empty_shard,omitempty"`
	Total      MultiTotals   `json:"total"`
	Topics     []TopicResult `json:"topics"`
}

// topicRun is one topic of a DiffTopics call.
type topicRun struct {
	d      *differ
	res    *Result
	want   []int32        // the partitions of the shard, all compared
	absent map[int32]bool // those the target lacks: read against an empty target
	onDst  bool           // the target topic exists
	done   compared
}

// DiffTopics compares every topic mc selects, as Diff compares one, with one metadata request
// per cluster for all topics, one offset listing per kind and cluster for all topics, and one
// pool of mc.Base.Parallel partition workers shared by all topics. Topic-level findings (a
// missing target topic, a partition count mismatch), partitions that cannot be read and
// topics with nothing to compare are in the result; the error is for failures of the whole
// call: a cluster that cannot be read, no topic selected, a --topic that does not exist.
func DiffTopics(ctx context.Context, src, dst *kgo.Client, mc MultiConfig) (*MultiResult, error) {
	if err := mc.validate(); err != nil {
		return nil, err
	}
	sadm, tadm := kadm.NewClient(src), kadm.NewClient(dst)
	smeta, err := sadm.Metadata(ctx)
	if err != nil {
		return nil, fmt.Errorf("source cluster %s: read metadata: %w (check --source-brokers)", mc.Flow.Source, err)
	}
	names, err := selectTopics(mc, smeta.Topics)
	if err != nil {
		return nil, err
	}
	tmeta, err := tadm.Metadata(ctx)
	if err != nil {
		return nil, fmt.Errorf("target cluster %s: read metadata: %w (check --target-brokers)", mc.Flow.Target, err)
	}
	mr := newMultiResult(mc, smeta.Cluster, tmeta.Cluster)
	// One leader cache per cluster for all topics, filled from the metadata just read: no
	// partition read asks for its leader again.
	sLeaders, tLeaders := &logread.Leaders{}, &logread.Leaders{}
	runs, err := mc.plan(mr, names, smeta.Topics, tmeta.Topics, func(cfg Config) *differ {
		d := newDiffer(cfg, src, dst, sadm, tadm)
		d.sLeaders, d.tLeaders = sLeaders, tLeaders
		rememberLeaders(sLeaders, smeta.Topics[cfg.SourceTopic])
		if td, ok := tmeta.Topics[cfg.TargetTopic]; ok && td.Err == nil {
			rememberLeaders(tLeaders, td)
		}
		return d
	})
	if err != nil {
		return nil, err
	}
	if len(runs) == 0 {
		mr.EmptyShard = true
		mr.Finish()
		return mr, nil
	}
	pairs := make([][2]string, len(runs))
	for i, r := range runs {
		pairs[i] = [2]string{r.d.cfg.SourceTopic, r.d.cfg.TargetTopic}
	}
	js := judgements(ctx, sadm, tadm, mc.Base.Judge, pairs)
	for _, r := range runs {
		if err := r.d.setJudged(r.res, js[r.d.cfg.SourceTopic]); err != nil {
			return nil, err
		}
	}
	offs, err := listAll(ctx, sadm, tadm, mc.Base, runs)
	if err != nil {
		return nil, err
	}
	syncs := (&differ{cfg: mc.Base}).syncs(ctx)
	if err := runPool(ctx, mc.Base, runs, offs, syncs); err != nil {
		return nil, err
	}
	for i, r := range runs {
		om := &offsetmap.TopicMap{}
		if err := r.d.collect(r.res, om, r.want, r.done); err != nil && !errors.Is(err, ErrNothingToCompare) {
			return nil, err
		}
		mr.Topics[i].Result = *r.res
	}
	mr.Finish()
	return mr, nil
}

func newMultiResult(mc MultiConfig, srcID, dstID string) *MultiResult {
	iso := "read_committed"
	if mc.Base.ReadUncommitted {
		iso = "read_uncommitted"
	} else if mc.Base.TargetReadUncommitted {
		iso = IsolationTargetUncommitted
	}
	mr := &MultiResult{Kind: MultiKind, Version: MultiVersion, Topics: []TopicResult{}, Selection: Selection{
		Flow: mc.Flow.Name(), SourceCluster: srcID, TargetCluster: dstID,
		All: mc.All || mc.TopicsRegex != "", TopicsRegex: mc.TopicsRegex, Names: mc.Names,
		From: mc.Base.From.String(), To: mc.Base.To.String(), Compared: mc.Base.Fields.Names(), Isolation: iso,
		Topics: []SelectedTopic{},
	}}
	if mc.Shard.Sharded() {
		s := mc.Shard
		mr.Shard = &s
	}
	return mr
}

// plan records every selected topic in mr.Selection and returns a run, with its entry in
// mr.Topics, for each topic that has partitions in the shard.
func (mc MultiConfig) plan(mr *MultiResult, names []string, src, dst kadm.TopicDetails, newDiffer func(Config) *differ) ([]*topicRun, error) {
	var runs []*topicRun
	for _, t := range names {
		target := mc.Flow.TargetTopic(t)
		sparts := clustermeta.SortedPartitions(src[t])
		mr.Selection.Topics = append(mr.Selection.Topics, SelectedTopic{Source: t, Target: target, Partitions: len(sparts)})
		var want []int32
		for _, p := range sparts {
			if mc.Shard.Owns(t, p) {
				want = append(want, p)
			}
		}
		if len(want) == 0 {
			continue
		}
		var tparts []int32
		if td, ok := dst[target]; ok && td.Err == nil {
			tparts = clustermeta.SortedPartitions(td)
		} else if ok && !errors.Is(td.Err, kerr.UnknownTopicOrPartition) {
			return nil, fmt.Errorf("target cluster %s: describe target topic %q of source topic %q: %w", mc.Flow.Target, target, t, td.Err)
		}
		cfg := mc.Base
		cfg.SourceTopic, cfg.TargetTopic = t, target
		if mc.Progress != nil {
			cfg.Progress = func(p Progress) { mc.Progress(t, p) }
		}
		res := &Result{SourceTopic: t, TargetTopic: target, Compared: cfg.Fields.Names(), Partitions: []align.PartitionResult{}, TargetReadUncommitted: cfg.TargetReadUncommitted}
		advice := topicAdvice{missing: ", every source record is missing (check the replication policy and the mirror)",
			count: "the source records of the partitions the target lacks are missing"}
		if mc.Shard.Sharded() {
			advice.count += " (in the shards that hold them)"
		}
		// The partitions the target lacks are read against an empty target: their source
		// records are all missing, a difference of the topic.
		problems, absent := topicProblems(res, sparts, tparts, want, false, advice)
		res.Problems = append(res.Problems, problems...)
		runs = append(runs, &topicRun{d: newDiffer(cfg), res: res, want: want, absent: absent, onDst: tparts != nil})
		mr.Topics = append(mr.Topics, TopicResult{Result: *res})
	}
	return runs, nil
}

// listAll lists the offsets of every topic of runs (listOffsets).
func listAll(ctx context.Context, sadm, tadm *kadm.Client, cfg Config, runs []*topicRun) (listedOffsets, error) {
	var srcTopics, dstTopics []string
	for _, r := range runs {
		srcTopics = append(srcTopics, r.d.cfg.SourceTopic)
		if r.onDst {
			dstTopics = append(dstTopics, r.d.cfg.TargetTopic)
		}
	}
	return listOffsets(ctx, sadm, tadm, cfg, srcTopics, dstTopics)
}

// runPool aligns the partitions of every run with one pool of cfg.Parallel workers.
// A partition that fails has its Err and Cause set; the error is the context's.
func runPool(ctx context.Context, cfg Config, runs []*topicRun, o listedOffsets, syncs *mm2.SyncIndex) error {
	var mu sync.Mutex
	g, gctx := errgroup.WithContext(ctx)
	g.SetLimit(cfg.Parallel)
	for _, r := range runs {
		r.done = compared{results: map[int32]align.PartitionResult{}, maps: map[int32]*offsetmap.PartitionMap{}, why: map[int32]string{},
			txns: map[int32]*TxnPartition{}, tables: map[int32]*TablePartition{}}
		for _, p := range r.want {
			from, to, why := r.d.sourceRange(o, p)
			r.done.why[p] = why
			job := r.d.job(o, p, from, to, syncs)
			if r.absent[p] {
				// Nothing on the target: every source record in range is missing.
				job.hint = false
				job.spec.TargetFrom, job.spec.TargetTo = 0, 0
				job.spec.StrictTargetFrom, job.spec.StrictTargetTo = true, true
			}
			g.Go(func() error {
				pr, pm, err := job.run(gctx, r.d.src, r.d.dst)
				if err != nil {
					if ctx.Err() != nil {
						return ctx.Err()
					}
					pr.Partition = p
					pr.Err, pr.Cause = err.Error(), err
					cfg.Logger.Warn("partition not compared", "topic", r.d.cfg.SourceTopic, "partition", p, "err", err)
				}
				mu.Lock()
				defer mu.Unlock()
				r.done.results[p] = pr
				if pm != nil && err == nil {
					r.done.maps[p] = pm
				}
				if job.txns != nil && err == nil {
					r.done.txns[p] = job.txns
				}
				if job.tablePart != nil && err == nil {
					r.done.tables[p] = job.tablePart
				}
				return nil
			})
		}
	}
	return g.Wait()
}

// Finish sets every topic's status, the totals and Identical from the topics' results.
func (mr *MultiResult) Finish() {
	mr.Total = MultiTotals{Topics: len(mr.Topics)}
	for i := range mr.Topics {
		t := &mr.Topics[i]
		t.Status = t.verdict()
		switch t.Status {
		case StatusIdentical:
			mr.Total.Identical++
		case StatusDiffers:
			mr.Total.Differs++
		case StatusError:
			mr.Total.Failed++
		default:
			mr.Total.NothingToCompare++
		}
		mr.Total.Partitions += len(t.Partitions)
		mr.Total.Add(t.Summary)
		mr.Total.Aborted += t.Aborted
		mr.Total.AbortedCopies += t.AbortedCopies
	}
	mr.Identical = mr.Total.Identical > 0 && mr.Total.Identical+mr.Total.NothingToCompare == mr.Total.Topics
}
