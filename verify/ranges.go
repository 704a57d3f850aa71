package verify

import (
	"cmp"
	"context"
	"errors"
	"log/slog"
	"slices"
	"sync"

	"github.com/twmb/franz-go/pkg/kgo"
	"golang.org/x/sync/errgroup"

	"github.com/kmigrate/kmigrate/align"
	"github.com/kmigrate/kmigrate/offsetmap"
)

// DiffRanges aligns explicit offset ranges (the regions `kverify compare --drill` found) and
// returns them as one Result, the JSON of `kverify diff`: the ranges of a partition are
// merged into its one PartitionResult (counts added, lists joined, SourceStart and TargetStart
// of the first range, SourceEnd and TargetEnd of the last). Only [SourceFrom, SourceTo) and
// [TargetFrom, TargetTo) are fetched: the target end is strict (every target record up to
// TargetTo is compared), the target start as the spec says (StrictTargetFrom; false: target
// records before the copy of the first source record are skipped, not extra). All specs name
// the same topics and fields; parallel ranges are read at once. A range that cannot be read
// sets its partition's Err.
func DiffRanges(ctx context.Context, src, dst *kgo.Client, specs []PartitionSpec, parallel int) (*Result, error) {
	if len(specs) == 0 {
		return nil, errors.New("no range to compare")
	}
	first := specs[0]
	fields := first.Fields
	if fields == 0 {
		fields = offsetmap.DefaultFields
	}
	res := &Result{SourceTopic: first.SourceTopic, TargetTopic: first.TargetTopic, Compared: fields.Names(), Partitions: []align.PartitionResult{}}
	results := make([]align.PartitionResult, len(specs))
	txns := make([]*TxnPartition, len(specs))
	g, gctx := errgroup.WithContext(ctx)
	g.SetLimit(max(parallel, 1))
	var mu sync.Mutex
	for k, sp := range specs {
		job := partJob{spec: rangeSpec(sp), logger: slog.New(slog.DiscardHandler)}
		g.Go(func() error {
			pr, _, err := job.run(gctx, src, dst)
			if err != nil {
				if ctx.Err() != nil {
					return ctx.Err()
				}
				pr.Partition, pr.Err, pr.Cause = sp.Partition, err.Error(), err
			}
			mu.Lock()
			results[k] = pr
			if err == nil {
				txns[k] = job.txns
			}
			mu.Unlock()
			return nil
		})
	}
	if err := g.Wait(); err != nil {
		return nil, err
	}
	res.Partitions = mergeRanges(results)
	res.Transactions = mergeTxns(txns)
	res.tallyTxns()
	res.Identical = true
	for _, pr := range res.Partitions {
		res.Summary.Add(pr.Counts)
		if pr.Err != "" || pr.Differs() {
			res.Identical = false
		}
	}
	return res, nil
}

// rangeSpec makes sp's target end strict and cuts the window and history to the range's size.
func rangeSpec(sp PartitionSpec) PartitionSpec {
	sp.StrictTargetTo = true
	if sp.TargetTopic == "" {
		sp.TargetTopic = sp.SourceTopic
	}
	if sp.Window <= 0 {
		sp.Window = align.DefaultWindow
	}
	size := (sp.SourceTo - sp.SourceFrom) + (sp.TargetTo - sp.TargetFrom)
	sp.Window = int(max(64, min(int64(sp.Window), size)))
	if sp.History <= 0 {
		sp.History = align.DefaultHistory
	}
	sp.History = int(max(int64(sp.Window), min(int64(sp.History), size)))
	return sp
}

// mergeRanges joins the results of the ranges of each partition, in partition and offset order.
func mergeRanges(rs []align.PartitionResult) []align.PartitionResult {
	slices.SortStableFunc(rs, func(a, b align.PartitionResult) int {
		if a.Partition != b.Partition {
			return int(a.Partition - b.Partition)
		}
		return int(a.SourceStart - b.SourceStart)
	})
	var out []align.PartitionResult
	for _, r := range rs {
		n := len(out)
		if n == 0 || out[n-1].Partition != r.Partition {
			out = append(out, r)
			continue
		}
		m := &out[n-1]
		m.Counts.Add(r.Counts)
		m.SourceEnd, m.TargetEnd = r.SourceEnd, r.TargetEnd
		m.MissingRanges = append(m.MissingRanges, r.MissingRanges...)
		m.Duplicates = append(m.Duplicates, r.Duplicates...)
		m.Mismatches = append(m.Mismatches, r.Mismatches...)
		m.ExtraRanges = append(m.ExtraRanges, r.ExtraRanges...)
		m.AmbiguousRanges = append(m.AmbiguousRanges, r.AmbiguousRanges...)
		m.Truncated = m.Truncated || r.Truncated
		if m.Err == "" {
			m.Err, m.Cause = r.Err, r.Cause
		}
	}
	return out
}

// mergeTxns joins what the ranges' target reads passed over, per partition: counts added,
// aborted ranges joined in offset order, the open transaction of the last range that saw one.
func mergeTxns(ts []*TxnPartition) []TxnPartition {
	by := map[int32]*TxnPartition{}
	var out []TxnPartition
	for _, t := range ts {
		if t == nil {
			continue
		}
		m := by[t.Partition]
		if m == nil {
			c := *t
			c.AbortedRanges = slices.Clone(t.AbortedRanges)
			by[t.Partition] = &c
			continue
		}
		m.Aborted += t.Aborted
		m.AbortedCopies += t.AbortedCopies
		m.AbortedRanges = append(m.AbortedRanges, t.AbortedRanges...)
		m.Truncated = m.Truncated || t.Truncated
		if t.OpenTransaction != nil {
			m.OpenTransaction = t.OpenTransaction
		}
	}
	for _, m := range by {
		slices.SortFunc(m.AbortedRanges, func(a, b align.TargetRange) int { return cmp.Compare(a.From, b.From) })
		out = append(out, *m)
	}
	return out
}
