package groupsync

import (
	"errors"
	"fmt"
	"log/slog"
	"math"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/kmigrate/kmigrate/mm2"
	"github.com/kmigrate/kmigrate/offsetmap"
)

// Config configures the group offset sync and the checkpoint emitter of one flow. NewConfig
// fills it from the flow's mm2.properties keys; the caller then sets the clients and the
// Translator.
type Config struct {
	// Source is a client of the flow's source cluster. Group sync only reads from it (list
	// groups, fetch committed offsets); it never writes to the source.
	Source *kgo.Client
	// Target is a client of the flow's target cluster: checkpoints are produced and group
	// offsets committed with it, and the checkpoints topic is read through it.
	Target *kgo.Client
	// Flow is the replication flow. GroupMatches, TopicMatches, TargetTopic and
	// CheckpointsTopic below default to its methods.
	Flow *mm2.Flow
	// Translator answers E(G); required.
	Translator offsetmap.Translator

	// GroupMatches selects source groups (groups / groups.exclude). Default: Flow.GroupMatches.
	GroupMatches func(group string) bool
	// TopicMatches selects the source topics the flow mirrors (topics / topics.exclude).
	// Default: Flow.TopicMatches.
	TopicMatches func(topic string) bool
	// TargetTopic names a source topic on the target (replication.policy.class).
	// Default: Flow.TargetTopic.
	TargetTopic func(sourceTopic string) string
	// CheckpointsTopic is the target topic checkpoints are written to.
	// Default: Flow.CheckpointsTopic() ("<source-alias>.checkpoints.internal").
	CheckpointsTopic string
	// IgnoreGroups are source groups never synced whatever the flow says, e.g. kmirror's own
	// consumer group on the source.
	IgnoreGroups []string

	// SyncGroupOffsets commits translated offsets to target groups that have no active
	// member (sync.group.offsets.enabled). Default: false, as in MM2.
	SyncGroupOffsets bool
	// Interval is the period of group offset sync (sync.group.offsets.interval.seconds).
	// Default: 60s.
	Interval time.Duration
	// EmitCheckpoints writes MM2-format checkpoints (emit.checkpoints.enabled). NewConfig
	// defaults it to true, as MM2 does.
	EmitCheckpoints bool
	// CheckpointInterval is the period of checkpoint emission
	// (emit.checkpoints.interval.seconds). Default: 60s.
	CheckpointInterval time.Duration
	// RefreshGroupsInterval is how often Run lists the source groups again
	// (refresh.groups.interval.seconds); between listings it fetches the offsets of the groups
	// it knows. Default: 10m, as in MM2.
	RefreshGroupsInterval time.Duration
	// CheckpointsReplicationFactor is the replication factor the checkpoints topic is created
	// with when it is absent (checkpoints.topic.replication.factor, else replication.factor).
	// Default: -1, the target broker's default.replication.factor (Kafka 2.4+; MM2 itself
	// defaults to 3, which a single-broker target cannot satisfy).
	CheckpointsReplicationFactor int16
	// Concurrency bounds how many groups are synced at once. Default: 8.
	Concurrency int
	// Logger receives the sync's logs. Default: a logger that discards.
	Logger *slog.Logger
	// OnPass, when set, is called by Run after every pass with its report and error, e.g. to
	// update the engine's checkpoint-age metric. It runs on Run's goroutine: keep it short.
	OnPass func(Report, error)
}

// Defaults of Config (MM2 3.7.1's defaults where MM2 has the key).
const (
	DefaultInterval              = 60 * time.Second
	DefaultCheckpointInterval    = 60 * time.Second
	DefaultRefreshGroupsInterval = 10 * time.Minute
	DefaultConcurrency           = 8
)

// SetDefaults fills every unset field with its documented default.
func (c *Config) SetDefaults() {
	if f := c.Flow; f != nil {
		if c.GroupMatches == nil {
			c.GroupMatches = f.GroupMatches
		}
		if c.TopicMatches == nil {
			c.TopicMatches = f.TopicMatches
		}
		if c.TargetTopic == nil {
			c.TargetTopic = f.TargetTopic
		}
		if c.CheckpointsTopic == "" {
			c.CheckpointsTopic = f.CheckpointsTopic()
		}
	}
	if c.Interval <= 0 {
		c.Interval = DefaultInterval
	}
	if c.CheckpointInterval <= 0 {
		c.CheckpointInterval = DefaultCheckpointInterval
	}
	if c.RefreshGroupsInterval <= 0 {
		c.RefreshGroupsInterval = DefaultRefreshGroupsInterval
	}
	if c.CheckpointsReplicationFactor == 0 {
		c.CheckpointsReplicationFactor = -1
	}
	if c.Concurrency <= 0 {
		c.Concurrency = DefaultConcurrency
	}
	if c.Logger == nil {
		c.Logger = slog.New(slog.DiscardHandler)
	}
}

// Validate reports every field that is missing or out of range, after SetDefaults.
func (c *Config) Validate() error {
	var errs []error
	if c.Source == nil {
		errs = append(errs, errors.New("groupsync: Source client is required"))
	}
	if c.Target == nil {
		errs = append(errs, errors.New("groupsync: Target client is required"))
	}
	if c.Translator == nil {
		errs = append(errs, errors.New("groupsync: Translator is required"))
	}
	if c.GroupMatches == nil || c.TopicMatches == nil || c.TargetTopic == nil {
		errs = append(errs, errors.New("groupsync: set Flow, or GroupMatches, TopicMatches and TargetTopic"))
	}
	if c.EmitCheckpoints && c.CheckpointsTopic == "" {
		errs = append(errs, errors.New("groupsync: emit.checkpoints.enabled=true needs a checkpoints topic: set Flow or CheckpointsTopic"))
	}
	if c.CheckpointsReplicationFactor < -1 {
		errs = append(errs, fmt.Errorf("groupsync: checkpoints.topic.replication.factor=%d: use -1 (broker default) or a positive factor", c.CheckpointsReplicationFactor))
	}
	if c.Interval <= 0 || c.CheckpointInterval <= 0 || c.RefreshGroupsInterval <= 0 {
		errs = append(errs, errors.New("groupsync: intervals must be positive (call SetDefaults)"))
	}
	if c.Concurrency <= 0 {
		errs = append(errs, errors.New("groupsync: Concurrency must be positive (call SetDefaults)"))
	}
	return errors.Join(errs...)
}

// NewConfig reads the group sync and checkpoint keys of flow.Settings (flow-prefixed keys
// already resolved by the mm2 parser) with mm2's one reader of flow keys, so that they mean
// here what they mean to mirror.FromFlow. Absent keys take MM2 3.7.1's defaults:
//
//	sync.group.offsets.enabled             false
//	sync.group.offsets.interval.seconds    60
//	emit.checkpoints.enabled               true
//	emit.checkpoints.interval.seconds      60
//	refresh.groups.enabled                 true
//	refresh.groups.interval.seconds        600
//	checkpoints.topic.replication.factor   replication.factor, else -1 (see Config)
//
// A negative interval, or false, switches its task off (refresh.groups off: the groups are
// listed once, at the first pass); zero is refused (mm2.Flow.Schedule says why). A value that
// does not parse is an error naming the key and the flow. The caller sets Source, Target,
// Translator and Logger.
func NewConfig(flow *mm2.Flow) (Config, error) {
	c := Config{Flow: flow, EmitCheckpoints: true}
	if flow == nil {
		return c, errors.New("groupsync: no flow given")
	}
	var errs []error
	schedule := func(t mm2.Task, on *bool, interval *time.Duration) {
		s, err := flow.Schedule(t)
		if err != nil {
			errs = append(errs, err)
			return
		}
		*on = s.On()
		if s.Interval > 0 {
			*interval = s.Interval
		}
	}
	schedule(mm2.TaskSyncGroupOffsets, &c.SyncGroupOffsets, &c.Interval)
	schedule(mm2.TaskEmitCheckpoints, &c.EmitCheckpoints, &c.CheckpointInterval)
	var refresh bool
	schedule(mm2.TaskRefreshGroups, &refresh, &c.RefreshGroupsInterval)
	if !refresh {
		c.RefreshGroupsInterval = math.MaxInt64
	}
	for _, key := range []string{"checkpoints.topic.replication.factor", "replication.factor"} {
		rf, set, err := flow.ReplicationFactor(key)
		if err != nil {
			errs = append(errs, err)
		}
		if set {
			c.CheckpointsReplicationFactor = rf
			break
		}
	}
	c.SetDefaults()
	return c, errors.Join(errs...)
}
