package verify

import (
	"context"
	"fmt"
	"log/slog"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/kmigrate/kmigrate/align"
	"github.com/kmigrate/kmigrate/offsetmap"
)

// AlignPartition aligns one partition over explicit ranges, for the tests of partJob.run. It
// reads the two ranges directly (raw fetches,
// no consumer group) and is cheap for small ranges: the window is cut to the range size.
func AlignPartition(ctx context.Context, src, dst *kgo.Client, spec PartitionSpec) (align.PartitionResult, *offsetmap.PartitionMap, error) {
	if spec.TargetTopic == "" {
		spec.TargetTopic = spec.SourceTopic
	}
	if spec.SourceTo < 0 || spec.TargetTo < 0 {
		for _, side := range []struct {
			cl    *kgo.Client
			name  string
			topic string
			to    *int64
		}{{src, "source", spec.SourceTopic, &spec.SourceTo}, {dst, "target", spec.TargetTopic, &spec.TargetTo}} {
			if *side.to >= 0 {
				continue
			}
			adm := kadm.NewClient(side.cl)
			var l kadm.ListedOffsets
			var err error
			if spec.ReadUncommitted {
				l, err = adm.ListEndOffsets(ctx, side.topic)
			} else {
				l, err = adm.ListCommittedOffsets(ctx, side.topic)
			}
			if err == nil {
				err = l.Error()
			}
			if err != nil {
				return align.PartitionResult{Partition: spec.Partition}, nil, fmt.Errorf("list end offset of %s topic %q partition %d: %w", side.name, side.topic, spec.Partition, err)
			}
			o, ok := l.Lookup(side.topic, spec.Partition)
			if !ok {
				return align.PartitionResult{Partition: spec.Partition}, nil, fmt.Errorf("%s topic %q has no partition %d", side.name, side.topic, spec.Partition)
			}
			*side.to = o.Offset
		}
	}
	if spec.Window <= 0 {
		spec.Window = align.DefaultWindow
	}
	size := (spec.SourceTo - spec.SourceFrom) + (spec.TargetTo - spec.TargetFrom)
	spec.Window = int(max(64, min(int64(spec.Window), size)))
	if spec.History <= 0 {
		spec.History = align.DefaultHistory
	}
	spec.History = int(max(int64(spec.Window), min(int64(spec.History), size)))
	job := partJob{spec: spec, logger: slog.New(slog.DiscardHandler)}
	return job.run(ctx, src, dst)
}

// segs builds segments from (source, target, len) triples.
func segs(v ...int64) []offsetmap.Segment {
	var out []offsetmap.Segment
	for i := 0; i+2 < len(v); i += 3 {
		out = append(out, offsetmap.Segment{Source: v[i], Target: v[i+1], Len: v[i+2]})
	}
	return out
}

// copies builds duplicate copies from (target, source) pairs.
func copies(v ...int64) []offsetmap.Copy {
	var out []offsetmap.Copy
	for i := 0; i+1 < len(v); i += 2 {
		out = append(out, offsetmap.Copy{Target: v[i], Source: v[i+1]})
	}
	return out
}
