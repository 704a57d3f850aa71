package mm2

import (
	"context"
	"errors"
	"fmt"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/kmigrate/kmigrate/logread"
)

// ReadOffsetSyncs returns every offset sync in partition 0 of topic, in offset order, from the
// start of the partition to its end when the call began. A topic that does not exist reads as
// no syncs. A record that is not an offset sync is an error naming its offset; tombstones are
// skipped. cl may be any client (see ReadPartition0).
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
// from fn stops the read and is returned naming the offset. cl may be any client, a group
// consumer too: the read sends Fetch requests of its own (package logread) and leaves cl's
// consumption alone.
//
// It reads with read_committed up to the last stable offset: kmirror writes these topics in
// transactions, and the records of an aborted one (a fenced writer's) do not count.
// Transaction markers are skipped. A log that ends before the end listed at the start
// (truncated meanwhile) is an error.
func ReadPartition0(ctx context.Context, cl *kgo.Client, topic string, fn func(*kgo.Record) error) error {
	adm := kadm.NewClient(cl)
	ends, err := adm.ListCommittedOffsets(ctx, topic)
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
	starts, err := adm.ListStartOffsets(ctx, topic)
	if err == nil {
		err = starts.Error()
	}
	if err != nil {
		return fmt.Errorf("list start offset of %s partition 0: %w", topic, err)
	}
	start, _ := starts.Lookup(topic, 0)
	if start.Offset >= end.Offset {
		return nil // everything was deleted
	}
	var fnErr error
	err = logread.Each(ctx, cl, logread.Options{Topic: topic, Partition: 0, From: start.Offset, To: end.Offset, Committed: true}, func(r *kgo.Record) (bool, error) {
		if err := fn(r); err != nil {
			fnErr = fmt.Errorf("%s partition 0 offset %d: %w (was it written by MM2 or kmirror?)", topic, r.Offset, err)
			return false, fnErr
		}
		return true, nil
	})
	if err != nil && fnErr == nil {
		return fmt.Errorf("read %s partition 0 up to offset %d: %w", topic, end.Offset, err)
	}
	return err
}
