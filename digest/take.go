package digest

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
	"golang.org/x/sync/errgroup"

	"github.com/kmigrate/kmigrate/internal/clustermeta"
	"github.com/kmigrate/kmigrate/offsetmap"
)

// TakeConfig is what Take reads: one topic of one cluster.
type TakeConfig struct {
	Side    string // "source" or "target": recorded in the file, named in errors
	Cluster string // the cluster's alias: recorded in the file, named in errors
	Topic   string
	Tool    string // recorded in the file
	// PartitionRanges are inclusive ranges [first, last] of the partitions to read; nil
	// reads all. A partition the topic does not have is an error.
	PartitionRanges [][2]int32
	// From and To bound every partition's range [From, To); -1 is the log start (From) or
	// the end offset (To: the last stable offset read_committed, else the high watermark).
	From, To int64
	// Ranges, when set, are exactly the partitions and ranges [from, to) to read (as an
	// evidence file records them); PartitionRanges, From and To are then not used.
	Ranges    map[int32][2]int64
	Fields    offsetmap.Fields
	Committed bool // read_committed
	Params    Params
	Parallel  int // partitions read at once (at least 1)
}

// Isolation is how a file names the isolation level.
func Isolation(committed bool) string {
	if committed {
		return "read_committed"
	}
	return "read_uncommitted"
}

// Take reads the partitions asked of cfg.Topic on cl and returns the digest file. Every range
// must lie within its partition's log; a range that cannot be read fails the whole take.
func Take(ctx context.Context, cl *kgo.Client, cfg TakeConfig) (*File, error) {
	id, err := clustermeta.ID(ctx, cl, cfg.Side)
	if err != nil {
		return nil, err
	}
	ranges, err := takeRanges(ctx, cl, cfg)
	if err != nil {
		return nil, err
	}
	f := NewFile(cfg.Params)
	f.Tool, f.Created, f.Side, f.Cluster, f.ClusterID, f.Topic = cfg.Tool, time.Now().UTC(), cfg.Side, cfg.Cluster, id, cfg.Topic
	f.Compared, f.Isolation = cfg.Fields.Names(), Isolation(cfg.Committed)
	f.Partitions = make([]Partition, len(ranges))
	var mu sync.Mutex
	g, gctx := errgroup.WithContext(ctx)
	g.SetLimit(max(cfg.Parallel, 1))
	for i, r := range ranges {
		g.Go(func() error {
			p, err := Read(gctx, cl, r, cfg.Params)
			mu.Lock()
			f.Partitions[i] = p
			mu.Unlock()
			return err
		})
	}
	if err := g.Wait(); err != nil {
		return nil, fmt.Errorf("%w (cluster %s; nothing written)", err, cfg.Cluster)
	}
	return f, nil
}

// takeRanges lists the partitions asked and their ranges: [from, to) within the log.
func takeRanges(ctx context.Context, cl *kgo.Client, cfg TakeConfig) ([]Range, error) {
	adm := kadm.NewClient(cl)
	parts, td, err := clustermeta.TopicPartitions(ctx, adm, cfg.Topic)
	if err != nil {
		return nil, fmt.Errorf("list %s topic %q: %w", cfg.Side, cfg.Topic, err)
	}
	if td.Err != nil {
		return nil, fmt.Errorf("%s topic %q does not exist or cannot be described (%v): check --topic (and --target-topic)", cfg.Side, cfg.Topic, td.Err)
	}
	if parts, err = pickPartitions(parts, cfg.PartitionRanges, cfg.Side, cfg.Topic); err != nil {
		return nil, err
	}
	if cfg.Ranges != nil {
		parts = parts[:0:0]
		for p := range cfg.Ranges {
			parts = append(parts, p)
		}
		slices.Sort(parts)
	}
	starts, err := adm.ListStartOffsets(ctx, cfg.Topic)
	if err == nil {
		err = starts.Error()
	}
	if err != nil {
		return nil, fmt.Errorf("list the start offsets of %s topic %q: %w", cfg.Side, cfg.Topic, err)
	}
	list := adm.ListCommittedOffsets
	if !cfg.Committed {
		list = adm.ListEndOffsets
	}
	ends, err := list(ctx, cfg.Topic)
	if err == nil {
		err = ends.Error()
	}
	if err != nil {
		return nil, fmt.Errorf("list the end offsets of %s topic %q: %w", cfg.Side, cfg.Topic, err)
	}
	var out []Range
	for _, p := range parts {
		s, _ := starts.Lookup(cfg.Topic, p)
		e, _ := ends.Lookup(cfg.Topic, p)
		from, to := s.Offset, e.Offset
		if cfg.From >= 0 {
			from = cfg.From
		}
		if cfg.To >= 0 {
			to = cfg.To
		}
		if r, ok := cfg.Ranges[p]; ok {
			from, to = r[0], r[1]
		}
		if from < s.Offset || to > e.Offset || to < from {
			return nil, fmt.Errorf("%s topic %q partition %d: the range [%d, %d) asked is not within its log [%d, %d): check --from and --to", cfg.Side, cfg.Topic, p, from, to, s.Offset, e.Offset)
		}
		out = append(out, Range{Cluster: cfg.Side, Topic: cfg.Topic, Partition: p, From: from, To: to, Fields: cfg.Fields, Committed: cfg.Committed})
	}
	return out, nil
}

// pickPartitions returns the partitions of ranges (all without ranges); one the topic lacks is
// an error.
func pickPartitions(parts []int32, ranges [][2]int32, side, topic string) ([]int32, error) {
	if ranges == nil {
		return parts, nil
	}
	var out []int32
	for _, r := range ranges {
		if len(parts) == 0 || r[1] > parts[len(parts)-1] {
			return nil, fmt.Errorf("%s topic %q has %d partitions: --partitions %d-%d reaches past them", side, topic, len(parts), r[0], r[1])
		}
		for p := r[0]; p <= r[1]; p++ {
			if _, ok := slices.BinarySearch(parts, p); !ok {
				return nil, fmt.Errorf("%s topic %q has no partition %d: check --partitions", side, topic, p)
			}
			out = append(out, p)
		}
	}
	return out, nil
}
