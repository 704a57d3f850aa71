package verify

import (
	"context"
	"fmt"
	"strings"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/kmigrate/kmigrate/digest"
	"github.com/kmigrate/kmigrate/internal/clustermeta"
	"github.com/kmigrate/kmigrate/offsetmap"
)

// DrillConfig names what Drill reads and how much it lists.
type DrillConfig struct {
	// Source and Target are the two digests Compare was given; SourceName and TargetName
	// name their files in errors.
	Source, Target         *digest.File
	SourceName, TargetName string
	// SourceAlias and TargetAlias name the clusters in errors.
	SourceAlias, TargetAlias string
	Parallel                 int // ranges read at once
	MaxListed                int // ranges listed per class and range
}

// Drill reads the differing regions of cmp (the comparison of cfg.Source and cfg.Target)
// from both clusters with DiffRanges and returns the Result of `kverify compare --drill`: the
// regions' records classified as Diff classifies them, with the comparison's problems. The
// clusters must be the ones the digests were taken of (their cluster IDs); a region that
// cannot be read is an error.
func Drill(ctx context.Context, src, dst *kgo.Client, cmp *digest.Comparison, cfg DrillConfig) (*Result, error) {
	fields, err := offsetmap.ParseFields(strings.Join(cfg.Source.Compared, ","))
	if err != nil {
		return nil, fmt.Errorf("digest %s: compared fields: %w", cfg.SourceName, err)
	}
	for _, side := range []struct {
		name, alias, file string
		client            *kgo.Client
		digest            *digest.File
	}{{"source", cfg.SourceAlias, cfg.SourceName, src, cfg.Source}, {"target", cfg.TargetAlias, cfg.TargetName, dst, cfg.Target}} {
		id, err := clustermeta.ID(ctx, side.client, side.name)
		if err != nil {
			return nil, err
		}
		if id != side.digest.ClusterID {
			return nil, fmt.Errorf("the %s cluster %s has ID %q, the digest %s was taken of cluster %q (%s): connect to that cluster", side.name, side.alias, id, side.file, side.digest.ClusterID, side.digest.Cluster)
		}
	}
	specs := drillSpecs(cmp, fields, cfg.Source.Isolation != "read_committed", cfg.MaxListed)
	res := &Result{SourceTopic: cmp.SourceTopic, TargetTopic: cmp.TargetTopic, Compared: fields.Names(), Identical: true, Partitions: nil}
	if len(specs) > 0 {
		if res, err = DiffRanges(ctx, src, dst, specs, cfg.Parallel); err != nil {
			return nil, fmt.Errorf("drill %s (cluster %s) -> %s (cluster %s): %w", cmp.SourceTopic, cfg.SourceAlias, cmp.TargetTopic, cfg.TargetAlias, err)
		}
	}
	var failed []string
	for _, p := range res.Partitions {
		if p.Err != "" {
			failed = append(failed, fmt.Sprintf("partition %d: %s", p.Partition, p.Err))
		}
	}
	if len(failed) > 0 {
		return nil, fmt.Errorf("drill %s (cluster %s) -> %s (cluster %s): could not read a region: %s; nothing written (take the digests again if the logs changed)",
			cmp.SourceTopic, cfg.SourceAlias, cmp.TargetTopic, cfg.TargetAlias, strings.Join(failed, "; "))
	}
	res.Problems = append(res.Problems, cmp.Problems...)
	res.Identical = res.Identical && len(res.Problems) == 0
	return res, nil
}

// drillSpecs are the ranges a drill reads: every region, from its context (the matched chunk
// before it) to its end, on both sides.
func drillSpecs(cmp *digest.Comparison, fields offsetmap.Fields, uncommitted bool, maxListed int) []PartitionSpec {
	var specs []PartitionSpec
	for _, p := range cmp.Partitions {
		for _, r := range p.Regions {
			specs = append(specs, PartitionSpec{
				SourceTopic: cmp.SourceTopic, TargetTopic: cmp.TargetTopic, Partition: p.Partition,
				SourceFrom: r.ContextSourceFrom, SourceTo: r.SourceTo, TargetFrom: r.ContextTargetFrom, TargetTo: r.TargetTo,
				Fields: fields, ReadUncommitted: uncommitted, MaxListed: maxListed, StrictTargetFrom: !r.TargetFromLowerBound,
			})
		}
	}
	return specs
}
