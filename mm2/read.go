package mm2

import (
	"context"
	"errors"
	"fmt"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
)

// ReadOffsetSyncs returns every offset sync in partition 0 of topic, in offset order, from the
// start of the partition to its end when the call began. A topic that does not exist reads as
// no syncs. A record that is not an offset sync is an error naming its offset; tombstones are
// skipped. cl is used for its connection options only (a reader of its own is built), so it
// must not be a group consumer.
func ReadOffsetSyncs(ctx context.Context, cl *kgo.Client, topic string) ([]OffsetSync, error) {
	var out []OffsetSync
	err := ReadPartition0(ctx, cl, topic, func(r *kgo.Record) error {
		if r.Value == nil {
			return nil
		}
		s, err := DecodeOffsetSync(r.Key, r.Value)
		if err != nil {
			return err
		}
		out = append(out, s)
		return nil
	})
	if err != nil {
		return nil, err
	}
	return out, nil
}

// ReadCheckpoints returns the last checkpoint per key in partition 0 of topic, as MM2's
// readers keep them, from the start of the partition to its end when the call began. A topic
// that does not exist reads as empty; a tombstone deletes its key. A record that is not a
// checkpoint is an error naming its offset.
func ReadCheckpoints(ctx context.Context, cl *kgo.Client, topic string) (map[CheckpointKey]Checkpoint, error) {
	out := map[CheckpointKey]Checkpoint{}
	err := ReadPartition0(ctx, cl, topic, func(r *kgo.Record) error {
		if r.Value == nil {
			c, err := DecodeCheckpoint(r.Key, (Checkpoint{}).Value())
			if err == nil {
				delete(out, c.ID())
			}
			return nil
		}
		c, err := DecodeCheckpoint(r.Key, r.Value)
		if err != nil {
			return err
		}
		out[c.ID()] = c
		return nil
	})
	if err != nil {
		return nil, err
	}
	return out, nil
}

// ReadPartition0 calls fn for every record of partition 0 of topic, from its start to its end
// when the call began: the read every MM2 internal topic (single-partition, compacted) needs.
// A topic that does not exist, or whose records were all deleted, reads as empty. An error
// from fn stops the read and is returned naming the offset. cl is used for its connection
// options only (a reader of its own is built), so it must not be a group consumer.
//
// It reads with read_committed up to the last stable offset: kmirror writes these topics in
// transactions, and the records of an aborted one (a fenced writer's) do not count.
// Transaction markers are skipped.
func ReadPartition0(ctx context.Context, cl *kgo.Client, topic string, fn func(*kgo.Record) error) error {
	ends, err := kadm.NewClient(cl).ListCommittedOffsets(ctx, topic)
	if err != nil {
		return fmt.Errorf("list end offset of %s partition 0: %w", topic, err)
	}
	end, ok := ends.Lookup(topic, 0)
	if !ok || errors.Is(end.Err, kerr.UnknownTopicOrPartition) {
		return nil
	}
	if end.Err != nil {
		return fmt.Errorf("list end offset of %s partition 0: %w", topic, end.Err)
	}
	if end.Offset <= 0 {
		return nil
	}
	start, err := kadm.NewClient(cl).ListStartOffsets(ctx, topic)
	if err != nil {
		return fmt.Errorf("list start offset of %s partition 0: %w", topic, err)
	}
	if s, ok := start.Lookup(topic, 0); ok && s.Err == nil && s.Offset >= end.Offset {
		return nil // everything was deleted
	}
	rd, err := kgo.NewClient(append(cl.Opts(),
		kgo.ConsumePartitions(map[string]map[int32]kgo.Offset{topic: {0: kgo.NewOffset().AtStart()}}),
		kgo.FetchIsolationLevel(kgo.ReadCommitted()),
		kgo.KeepControlRecords(),
	)...)
	if err != nil {
		return fmt.Errorf("build a reader of %s (pass a client that is not a group consumer): %w", topic, err)
	}
	defer rd.Close()
	for {
		fs := rd.PollFetches(ctx)
		if err := ctx.Err(); err != nil {
			return fmt.Errorf("read %s partition 0 up to offset %d: %w", topic, end.Offset, err)
		}
		var ferr error
		fs.EachError(func(_ string, _ int32, err error) {
			if ferr == nil {
				ferr = err
			}
		})
		if ferr != nil {
			return fmt.Errorf("read %s partition 0: %w", topic, ferr)
		}
		done := false
		var rerr error
		fs.EachRecord(func(r *kgo.Record) {
			if done || rerr != nil || r.Partition != 0 {
				return
			}
			if r.Offset >= end.Offset {
				done = true
				return
			}
			if r.Attrs.IsControl() {
				done = r.Offset+1 >= end.Offset
				return
			}
			if err := fn(r); err != nil {
				rerr = fmt.Errorf("%s partition 0 offset %d: %w (was it written by MM2 or kmirror?)", topic, r.Offset, err)
				return
			}
			if r.Offset+1 >= end.Offset {
				done = true
			}
		})
		if rerr != nil {
			return rerr
		}
		if done {
			return nil
		}
	}
}
