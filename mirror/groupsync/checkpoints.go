package groupsync

import (
	"context"
	"errors"
	"fmt"
	"log/slog"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/kmigrate/kmigrate/mm2"
)

// ensureCheckpointsTopic creates the checkpoints topic on the target when it is absent:
// compacted, one partition, as MM2 creates it. An existing topic must have one partition,
// because checkpoints are written to and read from partition 0 only.
func ensureCheckpointsTopic(ctx context.Context, adm *kadm.Client, topic string, rf int16, cluster string, log *slog.Logger) error {
	details, err := adm.ListTopics(ctx, topic)
	if err != nil {
		return fmt.Errorf("describe checkpoints topic %q on target %s: %w", topic, cluster, err)
	}
	if d, ok := details[topic]; ok && d.Err == nil {
		if n := len(d.Partitions); n != 1 {
			return fmt.Errorf("checkpoints topic %q on target %s has %d partitions, MM2 readers and writers use exactly 1: delete it (it is rebuilt from the source groups) or point the flow at another checkpoints topic", topic, cluster, n)
		}
		return nil
	} else if ok && !errors.Is(d.Err, kerr.UnknownTopicOrPartition) {
		return fmt.Errorf("describe checkpoints topic %q on target %s: %w", topic, cluster, d.Err)
	}
	resp, err := adm.CreateTopic(ctx, 1, rf, map[string]*string{"cleanup.policy": kadm.StringPtr("compact")}, topic)
	if err == nil {
		err = resp.Err
	}
	if err != nil && !errors.Is(err, kerr.TopicAlreadyExists) {
		return fmt.Errorf("create checkpoints topic %q on target %s (replication factor %d; set checkpoints.topic.replication.factor to what the target can hold): %w", topic, cluster, rf, err)
	}
	log.Info("checkpoints topic created", "cluster", cluster, "topic", topic, "replication_factor", rf)
	return nil
}

// readCheckpoints reads partition 0 of the checkpoints topic from its start to its current end
// and keeps the last checkpoint per key, as MM2's readers do. A topic that does not exist reads
// as empty. Unlike mm2.ReadCheckpoints, records that do not decode (not written by MM2 or
// kmirror, or tombstones) do not fail the pass: they are skipped and counted in a log line.
func readCheckpoints(ctx context.Context, target *kgo.Client, topic, cluster string, log *slog.Logger) (map[mm2.CheckpointKey]mm2.Checkpoint, error) {
	out := make(map[mm2.CheckpointKey]mm2.Checkpoint)
	bad := 0
	err := mm2.ReadPartition0(ctx, target, topic, func(r *kgo.Record) error {
		c, err := mm2.DecodeCheckpoint(r.Key, r.Value)
		if err != nil {
			bad++
			return nil
		}
		out[c.ID()] = c
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("read checkpoints topic %q on target %s: %w", topic, cluster, err)
	}
	if bad > 0 {
		log.Warn("checkpoint records not decoded", "cluster", cluster, "topic", topic, "count", bad)
	}
	return out, nil
}
