package mirror

import (
	"errors"
	"fmt"
	"maps"
	"slices"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/kmigrate/kmigrate/mm2"
	"github.com/kmigrate/kmigrate/offsetmap"
)

// Config is what one kmirror engine needs to mirror one flow. FromFlow builds it from an MM2
// flow; tests fill it directly. Zero values take the defaults written on each field
// (SetDefaults), which are MirrorMaker 2 3.7.1's where MM2 has the same setting.
type Config struct {
	// SourceAlias and TargetAlias are the cluster aliases of the flow ("A" and "B" in A->B).
	SourceAlias string
	TargetAlias string

	// Topics and TopicsExclude are regexes matched against whole source topic names; excludes
	// win. Default: [".*"] and [".*[\-\.]internal", ".*\.replica", "__.*"] (MM2's).
	Topics        []string
	TopicsExclude []string
	// Groups and GroupsExclude select the groups whose offsets are synced. Default: [".*"]
	// and ["console-consumer-.*", "connect-.*", "__.*"].
	Groups        []string
	GroupsExclude []string

	// Policy names a source topic on the target (the replication policy).
	// Default: mm2.IdentityPolicy, MM2's IdentityReplicationPolicy.
	Policy mm2.ReplicationPolicy

	// The periodic tasks below are read by FromFlow with mm2.Flow.Schedule, the rule groupsync
	// shares: an interval of -1 (a negative value in the file) leaves its task off; zero is
	// refused there.
	//
	// RefreshTopics turns on finding new source topics and partitions every
	// RefreshTopicsInterval. Default: 600s; FromFlow turns it on as MM2 does (refresh.topics.*).
	// (Booleans keep their zero value in SetDefaults; FromFlow applies MM2's boolean defaults.)
	RefreshTopics         bool
	RefreshTopicsInterval time.Duration
	// RefreshGroups turns on listing the source groups again every RefreshGroupsInterval for
	// group sync; off, they are listed once, at the first pass. Default: 600s; FromFlow turns
	// it on as MM2 does (refresh.groups.*).
	RefreshGroups         bool
	RefreshGroupsInterval time.Duration

	// A target topic kmirror creates gets the source topic's own configuration overrides
	// (cleanup.policy among them), whatever SyncTopicConfigs says, as MM2 creates topics.
	// SyncTopicConfigs copies them again every SyncTopicConfigsInterval (default 600s;
	// FromFlow turns it on: sync.topic.configs.*). ConfigExclude lists regexes of properties
	// never copied. Default: MM2 3.7.1's DefaultConfigPropertyFilter list.
	SyncTopicConfigs         bool
	SyncTopicConfigsInterval time.Duration
	ConfigExclude            []string

	// SyncGroupOffsets and EmitCheckpoints run the groupsync loop (which needs Flow).
	// Default: 60s intervals; FromFlow sets false and true as MM2 does (sync.group.offsets.*,
	// emit.checkpoints.*).
	SyncGroupOffsets         bool
	SyncGroupOffsetsInterval time.Duration
	EmitCheckpoints          bool
	EmitCheckpointsInterval  time.Duration

	// OffsetSyncsTopic is the MM2 offset-syncs topic; kmirror writes it only when
	// OffsetSyncsOnTarget, because kmirror never writes to the source cluster.
	// Default: "mm2-offset-syncs.<source-alias>.internal" for offset-syncs.topic.location=target.
	OffsetSyncsTopic    string
	OffsetSyncsOnTarget bool
	// CheckpointsTopic is where checkpoints go. Default: "<source-alias>.checkpoints.internal".
	CheckpointsTopic string

	// EmitHeartbeats writes MM2's heartbeat of the flow (mm2.Heartbeat) to HeartbeatsTopic on
	// the target every EmitHeartbeatsInterval, creating the topic (compacted, one partition,
	// HeartbeatsReplicationFactor) when it is missing (heartbeat.go). Never to the source.
	// Default: 1s, "heartbeats" and 3; FromFlow turns it on as MM2 does (emit.heartbeats.*,
	// heartbeats.topic.replication.factor).
	EmitHeartbeats              bool
	EmitHeartbeatsInterval      time.Duration
	HeartbeatsTopic             string
	HeartbeatsReplicationFactor int16

	// MapTopic is the compacted topic on the target that holds the exact offset map
	// (format in docs/design.md). Default: "kmirror-offsets.<source-alias>.internal".
	MapTopic string
	// GroupID is the consumer group on the source used only to share partitions between
	// kmirror processes (no offsets are committed). Default: "kmirror-<source>-<target>".
	GroupID string

	// ReplicationFactor is for the mirrored topics kmirror creates; InternalReplicationFactor
	// for MapTopic, OffsetSyncsTopic and CheckpointsTopic. -1 means the broker default (needs
	// brokers 2.4+). Default: 2 and 3 (replication.factor, offset-syncs.topic.replication.factor).
	ReplicationFactor         int16
	InternalReplicationFactor int16

	// CommitLatency is the bound of the commit policy (commit.go): with FenceTransactions no
	// mirrored record waits longer than this, from its fetch to the end of the commit that
	// makes it visible to read_committed readers, and within it a bucket commits sooner when
	// that pays (a light flow when it pauses). With FenceNone, whose records are visible at
	// once, the offset map and offset syncs are written this often. A crash loses nothing
	// either way: the next owner resumes from what the target holds. The flow key
	// kmirror.commit.latency.max.ms, or kmirror run --commit-latency-max. Default:
	// DefaultCommitLatency; at most MaxCommitLatency.
	CommitLatency time.Duration

	// Fencing says how the writes of a partition are fenced against an earlier owner that has
	// not noticed it lost the partition (its source-group session expired while its fetches
	// and its target connection kept working): FenceTransactions, one transactional producer
	// per bucket of partitions (Buckets), or FenceNone, one idempotent producer and no fence.
	// FromFlow sets FenceNone for <target-alias>.exactly.once.source.support=disabled.
	// Default: FenceTransactions.
	Fencing string

	// MapWindow is how many segments of each partition's offset map kmirror keeps, in memory
	// and in the map topic: past 9/8 of it, the older ones are compacted away (tombstoned
	// in the map topic, whose compaction removes them) and a history record says where the
	// exact map starts. E(G) for a G below it is not answered by the map (the group offset
	// sync reports it; kreconcile groups finds it by content). A segment ends at every commit
	// of an active partition, so the window covers its last MapWindow commits: at least
	// MapWindow tenths of CommitLatency (commitPolicy.spacing). Memory: 24 bytes a segment, up
	// to 9/8 of the window. Default: DefaultMapWindow.
	MapWindow int

	// Buckets is how many buckets the flow's partitions are split into with FenceTransactions:
	// each bucket has one transactional id, its partitions are always owned by one process and
	// committed in one transaction, so a process holds at most one producer per bucket it owns.
	// It bounds how many processes share the flow. Every process of a flow uses the same
	// count: the source group refuses a process with another. A change between runs fences
	// the old count's ids at the next start. Default: DefaultBuckets (16); at most MaxBuckets.
	Buckets int

	// StartAtEnd starts partitions that have never been mirrored at the source's end instead
	// of its start (consumer.auto.offset.reset=latest). Default: false (earliest, as MM2).
	StartAtEnd bool

	// Producer settings (producer.* keys). Compression default: none (compression.type);
	// Linger default: 5ms (linger.ms); BatchMaxBytes default: 1 MiB (batch.size);
	// MaxBufferedRecords default: 10000 (bounds memory: per bucket with fencing
	// transactions, per process without). In-flight requests per broker are franz-go's
	// idempotent maximum (5), so max.in.flight.requests.per.connection is ignored.
	Compression        string
	Linger             time.Duration
	BatchMaxBytes      int32
	MaxBufferedRecords int
	// Consumer settings (consumer.* keys). FetchMaxBytes default: 16 MiB (fetch.max.bytes;
	// lower than Kafka's 50 MiB to bound memory);
	// FetchMaxPartitionBytes default: 1 MiB (max.partition.fetch.bytes); FetchMaxWait
	// default: 500ms (fetch.max.wait.ms).
	FetchMaxBytes          int32
	FetchMaxPartitionBytes int32
	FetchMaxWait           time.Duration
	// ConnectTimeout bounds the check at start that both clusters answer. Default: 20s.
	ConnectTimeout time.Duration
	// SessionTimeout is the source group session timeout: how long a killed process keeps
	// its partitions before the others take them over. Default: 45s (consumer.session.timeout.ms).
	SessionTimeout time.Duration
	// InstanceID makes the process a static member of the source group
	// (consumer.group.instance.id, KIP-345): a process restarted with the same ID takes its
	// predecessor's place and partitions at once, without a rebalance or waiting for the dead
	// member's session to time out. Each process needs its own stable ID (e.g. the pod name of
	// a StatefulSet); a second process with the same ID fences the first. Default: "" (dynamic
	// members).
	InstanceID string

	// Flow is the MM2 flow the config came from (FromFlow), or nil. When set, its
	// TopicMatches decides which topics are mirrored (it also leaves out internal topics and
	// cycles), and the groupsync loop reads its group filters.
	Flow *mm2.Flow

	topics, topicsExclude, configExclude mm2.Pattern
	compiled                             bool // the Patterns hold the lists (Validate ran)
}

// SetDefaults fills zero fields with their documented defaults. Booleans cannot tell unset
// from false, so FromFlow sets the MM2 defaults of the boolean keys itself.
func (c *Config) SetDefaults() {
	if len(c.Topics) == 0 {
		c.Topics = slices.Clone(mm2.DefaultTopics)
	}
	if c.TopicsExclude == nil {
		c.TopicsExclude = slices.Clone(mm2.DefaultTopicsExclude)
	}
	if len(c.Groups) == 0 {
		c.Groups = slices.Clone(mm2.DefaultGroups)
	}
	if c.GroupsExclude == nil {
		c.GroupsExclude = slices.Clone(mm2.DefaultGroupsExclude)
	}
	if c.Policy == nil {
		c.Policy = mm2.IdentityPolicy{}
	}
	setDur(&c.RefreshTopicsInterval, 600*time.Second)
	setDur(&c.RefreshGroupsInterval, 600*time.Second)
	setDur(&c.SyncTopicConfigsInterval, 600*time.Second)
	setDur(&c.SyncGroupOffsetsInterval, 60*time.Second)
	setDur(&c.EmitCheckpointsInterval, 60*time.Second)
	setDur(&c.EmitHeartbeatsInterval, mm2.TaskEmitHeartbeats.Interval)
	if c.HeartbeatsTopic == "" {
		c.HeartbeatsTopic = mm2.HeartbeatsTopic
	}
	if c.HeartbeatsReplicationFactor == 0 {
		c.HeartbeatsReplicationFactor = mm2.DefaultHeartbeatsReplicationFactor
	}
	setDur(&c.CommitLatency, DefaultCommitLatency)
	if c.Fencing == "" {
		c.Fencing = FenceTransactions
	}
	if c.Buckets == 0 {
		c.Buckets = DefaultBuckets
	}
	if c.MapWindow == 0 {
		c.MapWindow = DefaultMapWindow
	}
	setDur(&c.Linger, 5*time.Millisecond)
	setDur(&c.FetchMaxWait, 500*time.Millisecond)
	setDur(&c.SessionTimeout, 45*time.Second)
	setDur(&c.ConnectTimeout, 20*time.Second)
	if c.ConfigExclude == nil {
		c.ConfigExclude = slices.Clone(mm2.DefaultConfigExclude)
	}
	if c.OffsetSyncsTopic == "" {
		c.OffsetSyncsTopic = mm2.OffsetSyncsTopicName(c.SourceAlias, ".")
	}
	if c.CheckpointsTopic == "" {
		c.CheckpointsTopic = mm2.CheckpointsTopicName(c.SourceAlias, ".")
	}
	if c.MapTopic == "" {
		c.MapTopic = offsetmap.MapTopicName(c.SourceAlias)
	}
	if c.GroupID == "" {
		c.GroupID = "kmirror-" + c.SourceAlias + "-" + c.TargetAlias
	}
	if c.ReplicationFactor == 0 {
		c.ReplicationFactor = 2
	}
	if c.InternalReplicationFactor == 0 {
		c.InternalReplicationFactor = 3
	}
	if c.BatchMaxBytes == 0 {
		c.BatchMaxBytes = 1 << 20
	}
	if c.MaxBufferedRecords == 0 {
		c.MaxBufferedRecords = 10000
	}
	if c.FetchMaxBytes == 0 {
		c.FetchMaxBytes = 16 << 20
	}
	if c.FetchMaxPartitionBytes == 0 {
		c.FetchMaxPartitionBytes = 1 << 20
	}
}

func setDur(d *time.Duration, def time.Duration) {
	if *d == 0 {
		*d = def
	}
}

// Validate checks c after SetDefaults and compiles its regexes.
func (c *Config) Validate() error {
	var errs []error
	if c.SourceAlias == "" || c.TargetAlias == "" {
		errs = append(errs, errors.New("the flow needs a source and a target alias"))
	}
	if err := c.compile(); err != nil {
		errs = append(errs, err)
	}
	if _, err := compression(c.Compression); err != nil {
		errs = append(errs, err)
	}
	if c.ReplicationFactor < -1 || c.InternalReplicationFactor < -1 || c.HeartbeatsReplicationFactor < -1 {
		errs = append(errs, fmt.Errorf("replication factors must be -1 (broker default) or positive, got %d, %d and %d (heartbeats)",
			c.ReplicationFactor, c.InternalReplicationFactor, c.HeartbeatsReplicationFactor))
	}
	if c.InstanceID != "" {
		if err := validInstanceID(c.InstanceID); err != nil {
			errs = append(errs, fmt.Errorf("group instance id %q (consumer.group.instance.id, kmirror run --group-instance-id): %w", c.InstanceID, err))
		}
	}
	if c.CommitLatency <= 0 || c.CommitLatency > MaxCommitLatency {
		errs = append(errs, fmt.Errorf("commit latency %s (%s, kmirror run --commit-latency-max): use more than 0 and at most %s", c.CommitLatency, CommitLatencyKey, MaxCommitLatency))
	}
	if c.MapWindow < 1 {
		errs = append(errs, fmt.Errorf("map window %d: use 1 or more segments", c.MapWindow))
	}
	if c.Buckets < 1 || c.Buckets > MaxBuckets {
		errs = append(errs, fmt.Errorf("buckets %d (kmirror run --fence-buckets): use 1 to %d", c.Buckets, MaxBuckets))
	}
	if c.Fencing != FenceTransactions && c.Fencing != FenceNone {
		errs = append(errs, fmt.Errorf("fencing %q: use %q or %q", c.Fencing, FenceTransactions, FenceNone))
	}
	if c.MaxBufferedRecords < 0 || c.BatchMaxBytes < 0 || c.FetchMaxBytes < 0 || c.FetchMaxPartitionBytes < 0 {
		errs = append(errs, errors.New("buffer and batch sizes must be positive"))
	}
	for _, t := range []string{c.MapTopic, c.OffsetSyncsTopic, c.CheckpointsTopic} {
		if c.matches(t) {
			errs = append(errs, fmt.Errorf("internal topic %q matches the topics to mirror: add it to topics.exclude", t))
		}
	}
	return errors.Join(errs...)
}

// compile compiles the filter lists as MM2 does (mm2.Pattern); it reports every list that
// does not compile.
func (c *Config) compile() error {
	var errs []error
	for _, l := range []struct {
		key  string
		list []string
		dst  *mm2.Pattern
	}{
		{"topics", c.Topics, &c.topics},
		{"topics.exclude", c.TopicsExclude, &c.topicsExclude},
		{"config.properties.exclude", c.ConfigExclude, &c.configExclude},
		{"groups", c.Groups, new(mm2.Pattern)},
		{"groups.exclude", c.GroupsExclude, new(mm2.Pattern)},
	} {
		p, err := mm2.CompilePattern(l.key, l.list)
		if err != nil {
			errs = append(errs, err)
		}
		*l.dst = p
	}
	c.compiled = true
	return errors.Join(errs...)
}

// matches reports whether source topic t is mirrored (Validate must have run).
func (c *Config) matches(t string) bool {
	if c.Flow != nil {
		return c.Flow.TopicMatches(t)
	}
	if !c.compiled {
		_ = c.compile() // a list that does not compile matches nothing
	}
	return c.topics.Matches(t) && !c.topicsExclude.Matches(t)
}

func (c *Config) excludedConfig(name string) bool { return c.configExclude.Matches(name) }

// targetTopic is the name of source topic t on the target.
func (c *Config) targetTopic(t string) string { return c.Policy.TargetTopic(c.SourceAlias, t) }

func compression(s string) (kgo.CompressionCodec, error) {
	name := strings.ToLower(strings.TrimSpace(s))
	if name == "" {
		name = "none"
	}
	if c, ok := mm2.Compression(name); ok {
		return c, nil
	}
	return kgo.CompressionCodec{}, fmt.Errorf("producer compression.type=%q: use none, gzip, snappy, lz4 or zstd", s)
}

// Ignored is an MM2 key of the flow that kmirror does not honour, and why.
type Ignored struct {
	Key    string `json:"key"`
	Value  string `json:"value"`
	Reason string `json:"reason"`
}

// honoured are the flow keys FromFlow reads (after the flow prefix is removed).
var honoured = map[string]bool{
	"clusters": true, "topics": true, "topics.exclude": true, "topics.blacklist": true,
	"groups": true, "groups.exclude": true, "groups.blacklist": true,
	"replication.policy.class": true, "replication.policy.separator": true,
	"refresh.topics.enabled": true, "refresh.topics.interval.seconds": true,
	"refresh.groups.enabled": true, "refresh.groups.interval.seconds": true,
	"sync.topic.configs.enabled": true, "sync.topic.configs.interval.seconds": true,
	"config.properties.exclude": true, "config.properties.blacklist": true,
	"sync.group.offsets.enabled": true, "sync.group.offsets.interval.seconds": true,
	"emit.checkpoints.enabled": true, "emit.checkpoints.interval.seconds": true,
	"emit.heartbeats.enabled": true, "emit.heartbeats.interval.seconds": true, "heartbeats.topic.replication.factor": true,
	"offset-syncs.topic.location": true, "replication.factor": true,
	"offset-syncs.topic.replication.factor": true, "checkpoints.topic.replication.factor": true,
	"enabled": true, "bootstrap.servers": true, "security.protocol": true,
	"exactly.once.source.support": true, CommitLatencyKey: true,
}

// producerKeys and consumerKeys are the producer./consumer. overrides mapped onto franz-go.
var producerKeys = map[string]bool{
	"compression.type": true, "linger.ms": true, "batch.size": true,
	"acks": true, "enable.idempotence": true,
}
var consumerKeys = map[string]bool{
	"fetch.max.bytes": true, "max.partition.fetch.bytes": true, "fetch.max.wait.ms": true,
	"auto.offset.reset": true, "isolation.level": true, "session.timeout.ms": true,
	"group.instance.id": true,
}

// knownIgnored explains MM2 keys kmirror deliberately does without.
var knownIgnored = map[string]string{
	"tasks.max":                                           "kmirror shares partitions between processes through a consumer group; run more processes instead",
	"offset.lag.max":                                      "kmirror knows every offset exactly and writes an offset sync at every discontinuity instead",
	"offset.flush.interval.ms":                            "MM2's worker commits source offsets this often; kmirror commits records and offset map together, within " + CommitLatencyKey + " (kmirror lint explains the difference)",
	"sync.topic.acls.enabled":                             "kmirror does not copy ACLs",
	"sync.topic.acls.interval.seconds":                    "kmirror does not copy ACLs",
	"replication.policy.class":                            "",
	"offset-syncs.topic.location":                         "",
	"key.converter":                                       "kmirror copies bytes; converters do not apply",
	"value.converter":                                     "kmirror copies bytes; converters do not apply",
	"header.converter":                                    "kmirror copies bytes; converters do not apply",
	"topic.filter.class":                                  "only the default topic filter (topics, topics.exclude) is supported",
	"group.filter.class":                                  "only the default group filter (groups, groups.exclude) is supported",
	"config.property.filter.class":                        "only the default config property filter (config.properties.exclude) is supported",
	"dedicated.mode.enable.internal.rest":                 "kmirror has no REST interface",
	"emit.offset-syncs.enabled":                           "kmirror always writes offset syncs when their topic is on the target",
	"use.defaults.from":                                   "kmirror copies only the source topic's own overrides",
	"replication.policy.internal.topic.separator.enabled": "kmirror names its internal topics itself",
}

// FromFlow builds the engine configuration of flow f and lists every key of the flow that it
// does not honour. Every MM2 key is read by mm2's one reader of flow keys (Flow.Schedule,
// Flow.ReplicationFactor, ...), so kmirror and groupsync give a key the same meaning.
// Unparsable values are errors naming the key; all of them are reported at once.
func FromFlow(f *mm2.Flow, source, target *mm2.Cluster) (Config, []Ignored, error) {
	c := Config{
		SourceAlias:      f.Source,
		TargetAlias:      f.Target,
		Topics:           f.Topics,
		TopicsExclude:    f.TopicsExclude,
		Groups:           f.Groups,
		GroupsExclude:    f.GroupsExclude,
		Policy:           f.Policy,
		Flow:             f,
		ConfigExclude:    f.ConfigExclude(),
		CheckpointsTopic: f.CheckpointsTopic(),
	}
	if c.Policy == nil {
		c.Policy = mm2.DefaultPolicy{Separator: f.Separator}
	}
	errs := []error{c.readSchedules(f), c.readReplicationFactors(f), c.readFencing(f, target), c.readCommitLatency(f), checkPolicy(f)}
	ignored, err := c.readOffsetSyncs(f)
	errs = append(errs, err)
	prodIgnored, err := c.readClientOverrides(f, source, target)
	ignored = append(ignored, prodIgnored...)
	errs = append(errs, err)
	ignored = append(ignored, unhonoured(f.Settings)...)
	sort.Slice(ignored, func(i, j int) bool { return ignored[i].Key < ignored[j].Key })
	if err := errors.Join(errs...); err != nil {
		return Config{}, ignored, err
	}
	return c, ignored, nil
}

// readSchedules reads the periodic tasks with MM2's defaults (mm2.Flow.Schedule): a negative
// interval is -1 (off), zero is refused.
func (c *Config) readSchedules(f *mm2.Flow) error {
	var errs []error
	for _, t := range []struct {
		task     mm2.Task
		enabled  *bool
		interval *time.Duration
	}{
		{mm2.TaskRefreshTopics, &c.RefreshTopics, &c.RefreshTopicsInterval},
		{mm2.TaskRefreshGroups, &c.RefreshGroups, &c.RefreshGroupsInterval},
		{mm2.TaskSyncTopicConfigs, &c.SyncTopicConfigs, &c.SyncTopicConfigsInterval},
		{mm2.TaskSyncGroupOffsets, &c.SyncGroupOffsets, &c.SyncGroupOffsetsInterval},
		{mm2.TaskEmitCheckpoints, &c.EmitCheckpoints, &c.EmitCheckpointsInterval},
		{mm2.TaskEmitHeartbeats, &c.EmitHeartbeats, &c.EmitHeartbeatsInterval},
	} {
		s, err := f.Schedule(t.task)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		*t.enabled, *t.interval = s.Enabled, s.Interval
	}
	return errors.Join(errs...)
}

// readReplicationFactors reads replication.factor for the mirrored topics, the internal
// topics' factor (offset-syncs.topic.replication.factor, else checkpoints.topic.replication.factor)
// and heartbeats.topic.replication.factor.
func (c *Config) readReplicationFactors(f *mm2.Flow) error {
	var errs []error
	rf := func(key string) (int16, bool) {
		n, set, err := f.ReplicationFactor(key)
		if err != nil {
			errs = append(errs, err)
		}
		return n, set && err == nil
	}
	if n, ok := rf("replication.factor"); ok {
		c.ReplicationFactor = n
	}
	if n, ok := rf("heartbeats.topic.replication.factor"); ok {
		c.HeartbeatsReplicationFactor = n
	}
	syncs, syncsSet := rf("offset-syncs.topic.replication.factor")
	checkpoints, checkpointsSet := rf("checkpoints.topic.replication.factor")
	switch {
	case syncsSet:
		c.InternalReplicationFactor = syncs
	case checkpointsSet:
		c.InternalReplicationFactor = checkpoints
	}
	return errors.Join(errs...)
}

// readFencing reads <target-alias>.exactly.once.source.support (mm2.Cluster).
func (c *Config) readFencing(f *mm2.Flow, target *mm2.Cluster) error {
	if target == nil || target.ExactlyOnceSourceSupport == "" {
		return nil
	}
	switch v := target.ExactlyOnceSourceSupport; strings.ToLower(v) {
	case "enabled", "preparing":
		c.Fencing = FenceTransactions
	case "disabled":
		c.Fencing = FenceNone
	default:
		return mm2.NewSettingError(f.Name(), f.Target+".exactly.once.source.support", v, "use enabled or disabled")
	}
	return nil
}

// readCommitLatency reads kmirror's own kmirror.commit.latency.max.ms (CommitLatencyKey): a
// positive number of milliseconds, at most MaxCommitLatency.
func (c *Config) readCommitLatency(f *mm2.Flow) error {
	v, ok := f.Settings[CommitLatencyKey]
	if !ok {
		return nil
	}
	n, d, err := mm2.ParseDuration(v, time.Millisecond)
	if err != nil || n <= 0 || d > MaxCommitLatency {
		return mm2.NewSettingError(f.Name(), CommitLatencyKey, v, fmt.Sprintf("want a whole number of milliseconds, 1 to %d: the longest a mirrored record may wait for the commit that makes it visible", MaxCommitLatency.Milliseconds()))
	}
	c.CommitLatency = d
	return nil
}

// readOffsetSyncs reads offset-syncs.topic.location: kmirror writes MM2 offset syncs only to
// the target.
func (c *Config) readOffsetSyncs(f *mm2.Flow) ([]Ignored, error) {
	switch loc := strings.ToLower(strings.TrimSpace(f.OffsetSyncsLocation)); loc {
	case "target":
		c.OffsetSyncsOnTarget = true
		c.OffsetSyncsTopic = f.OffsetSyncsTopic()
		return nil, nil
	case "", "source":
		return []Ignored{{Key: "offset-syncs.topic.location", Value: "source",
			Reason: "kmirror never writes to the source cluster, so it writes no MM2 offset syncs; its exact offset map on the target replaces them (set offset-syncs.topic.location=target to get MM2-format syncs on the target)"}}, nil
	}
	return nil, mm2.NewSettingError(f.Name(), "offset-syncs.topic.location", f.OffsetSyncsLocation, "use source or target")
}

func checkPolicy(f *mm2.Flow) error {
	if f.Policy == nil {
		return nil
	}
	if n := f.Policy.Name(); strings.Contains(n, "IdentityReplicationPolicy") || strings.Contains(n, "DefaultReplicationPolicy") {
		return nil
	}
	return mm2.NewSettingError(f.Name(), "replication.policy.class", f.Policy.Name(), "not supported: use DefaultReplicationPolicy or IdentityReplicationPolicy")
}

// readClientOverrides applies the producer./consumer. overrides: the flow's settings first,
// then the clusters' own "<alias>.producer." and "<alias>.consumer." maps (the more specific
// ones win). Keys with no franz-go equivalent are listed as ignored.
func (c *Config) readClientOverrides(f *mm2.Flow, source, target *mm2.Cluster) ([]Ignored, error) {
	prod := map[string]string{}
	cons := map[string]string{}
	for k, v := range f.Settings {
		if rest, ok := strings.CutPrefix(k, "producer."); ok {
			prod[rest] = v
		}
		if rest, ok := strings.CutPrefix(k, "consumer."); ok {
			cons[rest] = v
		}
	}
	if target != nil {
		maps.Copy(prod, target.Producer)
	}
	if source != nil {
		maps.Copy(cons, source.Consumer)
	}
	var errs []error
	var ignored []Ignored
	for _, side := range []struct {
		prefix string
		keys   map[string]string
		known  map[string]bool
		apply  func(k, v string) error
	}{
		{"producer.", prod, producerKeys, c.applyProducer},
		{"consumer.", cons, consumerKeys, c.applyConsumer},
	} {
		for k, v := range side.keys {
			if err := side.apply(k, v); err != nil {
				errs = append(errs, err)
			} else if !side.known[k] {
				ignored = append(ignored, Ignored{Key: side.prefix + k, Value: redact(k, v), Reason: "no franz-go equivalent kmirror maps"})
			}
		}
	}
	return ignored, errors.Join(errs...)
}

// unhonoured lists the flow keys FromFlow does not read, with the reason where one is known.
func unhonoured(settings map[string]string) []Ignored {
	var ignored []Ignored
	for k, v := range settings {
		if honoured[k] || strings.HasPrefix(k, "producer.") || strings.HasPrefix(k, "consumer.") ||
			strings.HasPrefix(k, "sasl.") || strings.HasPrefix(k, "ssl.") {
			continue
		}
		reason, known := knownIgnored[k]
		if !known || reason == "" {
			reason = "not an MM2 key kmirror reads"
		}
		ignored = append(ignored, Ignored{Key: k, Value: redact(k, v), Reason: reason})
	}
	return ignored
}

func (c *Config) applyProducer(k, v string) error {
	v = strings.TrimSpace(v)
	bad := func(what string) error { return mm2.NewSettingError("", "producer."+k, v, what) }
	switch k {
	case "compression.type":
		if _, err := compression(v); err != nil {
			return err
		}
		c.Compression = v
	case "linger.ms":
		d, err := millis(v, 0)
		if err != nil {
			return bad(err.Error())
		}
		c.Linger = d
		if d == 0 {
			c.Linger = -1 // explicit zero: no linger
		}
	case "batch.size":
		n, err := bytesValue(v)
		if err != nil {
			return bad(err.Error())
		}
		c.BatchMaxBytes = n
	case "acks":
		if v != "all" && v != "-1" {
			return bad("kmirror always produces with acks=all so that a mirrored record is never lost; remove the key")
		}
	case "enable.idempotence":
		if v != "true" {
			return bad("kmirror always uses the idempotent producer to keep order without duplicates; remove the key")
		}
	}
	return nil
}

func (c *Config) applyConsumer(k, v string) error {
	v = strings.TrimSpace(v)
	bad := func(what string) error { return mm2.NewSettingError("", "consumer."+k, v, what) }
	switch k {
	case "fetch.max.bytes", "max.partition.fetch.bytes":
		n, err := bytesValue(v)
		if err != nil {
			return bad(err.Error())
		}
		if k == "fetch.max.bytes" {
			c.FetchMaxBytes = n
		} else {
			c.FetchMaxPartitionBytes = n
		}
	case "fetch.max.wait.ms", "session.timeout.ms":
		d, err := millis(v, 1)
		if err != nil {
			return bad(err.Error())
		}
		if k == "fetch.max.wait.ms" {
			c.FetchMaxWait = d
		} else {
			c.SessionTimeout = d
		}
	case "auto.offset.reset":
		switch v {
		case "earliest":
		case "latest":
			c.StartAtEnd = true
		default:
			return bad("use earliest or latest")
		}
	case "group.instance.id":
		if err := validInstanceID(v); err != nil {
			return bad(err.Error())
		}
		c.InstanceID = v
	case "isolation.level":
		if v != "read_committed" {
			return bad("kmirror reads with read_committed so that aborted transactions are not mirrored; remove the key")
		}
	}
	return nil
}

// validInstanceID checks a group.instance.id as Kafka does: 1 to 249 characters of ASCII
// letters, digits, '.', '_' and '-'.
func validInstanceID(v string) error {
	if v == "" || len(v) > 249 {
		return errors.New("want 1 to 249 characters")
	}
	for _, r := range v {
		if !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '.' || r == '_' || r == '-') {
			return fmt.Errorf("character %q: use ASCII letters, digits, '.', '_' and '-'", r)
		}
	}
	return nil
}

// millis reads a client's milliseconds key (mm2.ParseDuration) of at least least ms.
func millis(v string, least int64) (time.Duration, error) {
	n, d, err := mm2.ParseDuration(v, time.Millisecond)
	switch {
	case errors.Is(err, mm2.ErrTooLarge):
		return 0, fmt.Errorf("too large: at most %d milliseconds", mm2.MaxDurationIn(time.Millisecond))
	case err != nil || n < least:
		if least > 0 {
			return 0, errors.New("want a positive number of milliseconds")
		}
		return 0, errors.New("want milliseconds")
	}
	return d, nil
}

// bytesValue reads a client's size key: a positive int32.
func bytesValue(v string) (int32, error) {
	n, err := strconv.ParseInt(v, 10, 32)
	if err != nil || n <= 0 {
		return 0, errors.New("want a positive number of bytes")
	}
	return int32(n), nil
}

func redact(k, v string) string {
	if mm2.IsSecretKey(k) {
		return mm2.Redacted
	}
	return v
}
