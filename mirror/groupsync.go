package mirror

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/kmigrate/kmigrate/mirror/groupsync"
)

type groupSyncer struct {
	s        *groupsync.Syncer
	src, dst *kgo.Client
	interval time.Duration
}

func (g *groupSyncer) close() {
	g.src.Close()
	g.dst.Close()
}

// groupSync builds the group offset sync and checkpoint emitter of the flow (package
// groupsync) on clients of its own, with the engine as its Translator.
func (e *Engine) groupSync() (*groupSyncer, error) {
	if e.cfg.Flow == nil {
		return nil, errors.New("group offset sync and checkpoints need the MM2 flow (Config.Flow): build the Config with FromFlow, or set SyncGroupOffsets and EmitCheckpoints to false")
	}
	gc, err := groupsync.NewConfig(e.cfg.Flow)
	if err != nil {
		return nil, err
	}
	src, err := kgo.NewClient(e.srcOpts...)
	if err != nil {
		return nil, fmt.Errorf("source cluster %s: create group sync client: %w", e.cfg.SourceAlias, err)
	}
	dst, err := kgo.NewClient(e.dstOpts...)
	if err != nil {
		src.Close()
		return nil, fmt.Errorf("target cluster %s: create group sync client: %w", e.cfg.TargetAlias, err)
	}
	gc.Source, gc.Target, gc.Translator, gc.Logger = src, dst, e, e.log
	gc.SyncGroupOffsets, gc.EmitCheckpoints = e.cfg.SyncGroupOffsets, e.cfg.EmitCheckpoints
	gc.CheckpointsTopic = e.cfg.CheckpointsTopic
	gc.IgnoreGroups = append(gc.IgnoreGroups, e.cfg.GroupID)
	if gc.CheckpointsReplicationFactor == 0 {
		gc.CheckpointsReplicationFactor = e.cfg.InternalReplicationFactor
	}
	s, err := groupsync.New(gc)
	if err != nil {
		src.Close()
		dst.Close()
		return nil, err
	}
	interval := time.Duration(0)
	if e.cfg.SyncGroupOffsets && e.cfg.SyncGroupOffsetsInterval > 0 {
		interval = e.cfg.SyncGroupOffsetsInterval
	}
	if e.cfg.EmitCheckpoints && e.cfg.EmitCheckpointsInterval > 0 && (interval == 0 || e.cfg.EmitCheckpointsInterval < interval) {
		interval = e.cfg.EmitCheckpointsInterval
	}
	if interval <= 0 {
		interval = time.Minute
	}
	return &groupSyncer{s: s, src: src, dst: dst, interval: interval}, nil
}

// groupSyncLoop runs a group sync pass every interval (the shorter of
// sync.group.offsets.interval.seconds and emit.checkpoints.interval.seconds) and records the
// time of each successful pass for kmirror_checkpoint_age_seconds. An idle group whose offset
// was pending is translated at the first pass after the mirror passes it.
func (e *Engine) groupSyncLoop(ctx context.Context, g *groupSyncer) {
	t := time.NewTicker(g.interval)
	defer t.Stop()
	for {
		rep, err := g.s.SyncOnce(ctx)
		if ctx.Err() != nil {
			return
		}
		if err != nil {
			e.log.Warn("group sync pass failed", "cluster", e.cfg.TargetAlias, "err", err)
		} else {
			e.CheckpointDone(time.Now())
			e.log.Debug("group sync pass done", "groups", len(rep.Groups), "committed", rep.Committed, "emitted", rep.Emitted)
		}
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}
