package verify

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
	"golang.org/x/sync/errgroup"

	"github.com/kmigrate/kmigrate/align"
	"github.com/kmigrate/kmigrate/digest"
	"github.com/kmigrate/kmigrate/internal/clustermeta"
)

// EvidenceNames are what an evidence file records besides what Evidence reads: the clusters'
// aliases and the tool.
type EvidenceNames struct {
	SourceAlias, TargetAlias string
	Tool                     string
}

// Evidence reads the compared range of every compared partition of res (the Result of Diff
// with cfg) again on both clusters and returns the evidence file of `kverify diff --evidence`:
// per partition each side's range, record count and root, with both cluster IDs. Its report
// hash is left to the caller, who renders the report. A range that reads back another record
// count than the comparison counted (the log changed since) is an error.
func Evidence(ctx context.Context, src, dst *kgo.Client, cfg Config, res *Result, names EvidenceNames) (*digest.Evidence, error) {
	if cfg.TargetReadUncommitted {
		// An evidence range is read with one isolation on both sides, and a root over the
		// target's aborted records among its committed ones is not one of them.
		return nil, errors.New("evidence of a comparison with the target read as read_uncommitted cannot be recorded: run without --target-read-uncommitted for evidence")
	}
	e := digest.NewEvidence()
	e.Tool, e.Created = names.Tool, time.Now().UTC()
	e.Compared, e.Isolation, e.Identical = cfg.Fields.Names(), digest.Isolation(!cfg.ReadUncommitted), res.Identical
	var err error
	e.Source = digest.EvidenceSide{Cluster: names.SourceAlias, Topic: res.SourceTopic}
	e.Target = digest.EvidenceSide{Cluster: names.TargetAlias, Topic: res.TargetTopic}
	if e.Source.ClusterID, err = clustermeta.ID(ctx, src, "source"); err != nil {
		return nil, err
	}
	if e.Target.ClusterID, err = clustermeta.ID(ctx, dst, "target"); err != nil {
		return nil, err
	}
	var parts []align.PartitionResult
	for _, pr := range res.Partitions {
		if pr.Err == "" && pr.NotCompared == "" {
			parts = append(parts, pr)
		}
	}
	e.Partitions = make([]digest.EvidencePart, len(parts))
	var mu sync.Mutex
	g, gctx := errgroup.WithContext(ctx)
	g.SetLimit(max(cfg.Parallel, 1))
	for i, pr := range parts {
		tFrom := pr.TargetStart
		if pr.TargetSkippedRange != nil {
			tFrom = pr.TargetSkippedRange.To + 1
		}
		e.Partitions[i].Partition = pr.Partition
		for _, side := range []struct {
			cl  *kgo.Client
			r   digest.Range
			dst *digest.RangeRoot
		}{
			{src, digest.Range{Cluster: "source", Topic: res.SourceTopic, Partition: pr.Partition, From: pr.SourceStart, To: pr.SourceEnd}, &e.Partitions[i].Source},
			{dst, digest.Range{Cluster: "target", Topic: res.TargetTopic, Partition: pr.Partition, From: tFrom, To: pr.TargetEnd}, &e.Partitions[i].Target},
		} {
			side.r.Fields, side.r.Committed = cfg.Fields, !cfg.ReadUncommitted
			g.Go(func() error {
				rr, err := digest.ReadRoot(gctx, side.cl, side.r)
				mu.Lock()
				*side.dst = rr
				mu.Unlock()
				return err
			})
		}
	}
	if err := g.Wait(); err != nil {
		return nil, err
	}
	return e, sameAsCompared(e, parts, cfg.To.Kind == Latest)
}

// sameAsCompared checks that the ranges read again hold as many records as the comparison
// counted (source: matched + mismatched + missing; target, when it was read to its end:
// matched + mismatched + duplicated + extra), so that the roots are of what was compared, not
// of a log that changed since (compaction, retention, a recreated topic).
func sameAsCompared(e *digest.Evidence, parts []align.PartitionResult, wholeTarget bool) error {
	for i, pr := range parts {
		ep := e.Partitions[i]
		src := pr.Matched + pr.Mismatched + pr.Missing
		dst := pr.Matched + pr.Mismatched + pr.Duplicated + pr.Extra
		if ep.Source.Records != src || wholeTarget && ep.Target.Records != dst {
			return fmt.Errorf("partition %d changed between the comparison and the evidence read: the comparison counted %d source and %d target records, reading the ranges again gave %d and %d; run again", pr.Partition, src, dst, ep.Source.Records, ep.Target.Records)
		}
	}
	return nil
}
