package mirror

import (
	"context"
	"errors"
	"fmt"
	"math"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/kmigrate/kmigrate/mirror/groupsync"
)

type groupSyncer struct {
	s        *groupsync.Syncer
	src, dst *kgo.Client
}

func (g *groupSyncer) close() {
	g.src.Close()
	g.dst.Close()
}

// groupSync builds the group offset sync and checkpoint emitter of the flow (package
// groupsync) on clients of its own, with the engine as its Translator. Each pass that
// succeeds is recorded for kmirror_checkpoint_age_seconds (OnPass).
func (e *Engine) groupSync() (*groupSyncer, error) {
	if e.cfg.Flow == nil {
		return nil, errors.New("group offset sync and checkpoints need the MM2 flow (Config.Flow): build the Config with FromFlow, or set SyncGroupOffsets and EmitCheckpoints to false")
	}
	gc, err := groupsync.NewConfig(e.cfg.Flow)
	if err != nil {
		return nil, err
	}
	src, err := kgo.NewClient(append(append([]kgo.Opt(nil), e.srcOpts...), e.metrics.clientHooks(roleSourceAdmin, false))...)
	if err != nil {
		return nil, fmt.Errorf("source cluster %s: create group sync client: %w", e.cfg.SourceAlias, err)
	}
	dst, err := kgo.NewClient(append(append([]kgo.Opt(nil), e.dstOpts...), e.metrics.clientHooks(roleTarget, false))...)
	if err != nil {
		src.Close()
		return nil, fmt.Errorf("target cluster %s: create group sync client: %w", e.cfg.TargetAlias, err)
	}
	gc.Source, gc.Target, gc.Translator, gc.Logger = src, dst, e, e.log
	// A negative interval is off (FromFlow reads MM2's keys so).
	gc.SyncGroupOffsets = e.cfg.SyncGroupOffsets && e.cfg.SyncGroupOffsetsInterval > 0
	gc.EmitCheckpoints = e.cfg.EmitCheckpoints && e.cfg.EmitCheckpointsInterval > 0
	// The engine's Config wins over the flow's keys, so that a Config set in code means the same
	// to both; positive values only (a negative one is off, above).
	if e.cfg.SyncGroupOffsetsInterval > 0 {
		gc.Interval = e.cfg.SyncGroupOffsetsInterval
	}
	if e.cfg.EmitCheckpointsInterval > 0 {
		gc.CheckpointInterval = e.cfg.EmitCheckpointsInterval
	}
	switch {
	case !e.cfg.RefreshGroups || e.cfg.RefreshGroupsInterval < 0:
		// refresh.groups.enabled=false: list the groups once, at the first pass, as MM2 does.
		gc.RefreshGroupsInterval = math.MaxInt64
	case e.cfg.RefreshGroupsInterval > 0:
		gc.RefreshGroupsInterval = e.cfg.RefreshGroupsInterval
	}
	gc.CheckpointsTopic = e.cfg.CheckpointsTopic
	gc.IgnoreGroups = append(gc.IgnoreGroups, e.cfg.GroupID)
	if gc.CheckpointsReplicationFactor == 0 {
		gc.CheckpointsReplicationFactor = e.cfg.InternalReplicationFactor
	}
	gc.OnPass = func(_ groupsync.Report, err error) {
		if err == nil {
			e.CheckpointDone(time.Now())
		}
	}
	s, err := groupsync.New(gc)
	if err != nil {
		src.Close()
		dst.Close()
		return nil, err
	}
	return &groupSyncer{s: s, src: src, dst: dst}, nil
}

// groupSyncLoop runs groupsync's own loop: checkpoints every emit.checkpoints.interval.seconds,
// group offsets every sync.group.offsets.interval.seconds, the source groups listed again
// every refresh.groups.interval.seconds (between listings only the known groups' offsets are
// fetched). An idle group whose offset was pending is translated at the first pass after the
// mirror passes it.
func (e *Engine) groupSyncLoop(ctx context.Context, g *groupSyncer) {
	// Run returns only what no retry mends (a denied operation): it stops the engine.
	if err := g.s.Run(ctx); err != nil && ctx.Err() == nil {
		e.fail(fmt.Errorf("group offset sync: %w", err))
	}
}
