package mirror_test

import (
	"errors"
	"math"
	"strings"
	"testing"
	"time"

	"github.com/kmigrate/kmigrate/mirror"
	"github.com/kmigrate/kmigrate/mirror/groupsync"
	"github.com/kmigrate/kmigrate/mm2"
)

func flowOf(t *testing.T, props string) (*mm2.Flow, *mm2.Config) {
	t.Helper()
	cfg, err := mm2.Parse(strings.NewReader(props))
	if err != nil {
		t.Fatalf("parse: %v", err)
	}
	f, err := cfg.Flow("")
	if err != nil {
		t.Fatalf("flow: %v", err)
	}
	return f, cfg
}

const baseProps = `clusters=A,B
A.bootstrap.servers=a:9092
B.bootstrap.servers=b:9092
A->B.enabled=true
`

func TestFromFlow(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name    string
		props   string
		check   func(t *testing.T, c mirror.Config)
		ignored []string // keys reported as not honoured
		wantErr string
	}{
		{
			name:  "MM2 defaults",
			props: baseProps,
			check: func(t *testing.T, c mirror.Config) {
				c.SetDefaults()
				if !c.RefreshTopics || !c.SyncTopicConfigs || !c.EmitCheckpoints || c.SyncGroupOffsets {
					t.Errorf("got refresh=%v sync configs=%v checkpoints=%v group sync=%v, want true true true false",
						c.RefreshTopics, c.SyncTopicConfigs, c.EmitCheckpoints, c.SyncGroupOffsets)
				}
				if c.RefreshTopicsInterval != 600*time.Second || c.ReplicationFactor != 2 {
					t.Errorf("got interval %v rf %d, want 10m0s and 2", c.RefreshTopicsInterval, c.ReplicationFactor)
				}
				if c.OffsetSyncsOnTarget {
					t.Errorf("offset syncs on target by default")
				}
			},
			ignored: []string{"offset-syncs.topic.location"},
		},
		{
			name: "seed case keys",
			props: baseProps + `offset.max.lag=1
offset-syncs.topic.location=target
sync.group.offsets.enabled=true
sync.group.offsets.interval.seconds=10
emit.heartbeats.enabled=true
replication.policy.class=org.apache.kafka.connect.mirror.IdentityReplicationPolicy
replication.factor=3
offset-syncs.topic.replication.factor=1
tasks.max=4
`,
			check: func(t *testing.T, c mirror.Config) {
				if !c.OffsetSyncsOnTarget || c.OffsetSyncsTopic != "mm2-offset-syncs.A.internal" {
					t.Errorf("got syncs on target %v topic %q, want true mm2-offset-syncs.A.internal", c.OffsetSyncsOnTarget, c.OffsetSyncsTopic)
				}
				if !c.SyncGroupOffsets || c.SyncGroupOffsetsInterval != 10*time.Second {
					t.Errorf("got group sync %v every %v, want true every 10s", c.SyncGroupOffsets, c.SyncGroupOffsetsInterval)
				}
				if c.ReplicationFactor != 3 || c.InternalReplicationFactor != 1 {
					t.Errorf("got rf %d internal %d, want 3 and 1", c.ReplicationFactor, c.InternalReplicationFactor)
				}
				if got := c.Policy.TargetTopic("A", "t"); got != "t" {
					t.Errorf("identity policy: got %q, want t", got)
				}
			},
			// offset.max.lag is not an MM2 key: the parser reports it (Config.Warnings), and
			// kmirror run prints those warnings too.
			ignored: []string{"tasks.max"},
		},
		{
			name:  "default policy with separator",
			props: baseProps + "replication.policy.separator=_\n",
			check: func(t *testing.T, c mirror.Config) {
				if got := c.Policy.TargetTopic("A", "t"); got != "A_t" {
					t.Errorf("got %q, want A_t", got)
				}
			},
		},
		{
			name: "producer and consumer overrides",
			props: baseProps + `B.producer.compression.type=zstd
B.producer.linger.ms=20
B.producer.batch.size=65536
B.producer.buffer.memory=1000
A.consumer.max.partition.fetch.bytes=2097152
A.consumer.session.timeout.ms=6000
A.consumer.auto.offset.reset=latest
`,
			check: func(t *testing.T, c mirror.Config) {
				if c.Compression != "zstd" || c.Linger != 20*time.Millisecond || c.BatchMaxBytes != 65536 {
					t.Errorf("got %q %v %d, want zstd 20ms 65536", c.Compression, c.Linger, c.BatchMaxBytes)
				}
				if c.FetchMaxPartitionBytes != 2<<20 || c.SessionTimeout != 6*time.Second || !c.StartAtEnd {
					t.Errorf("got %d %v %v, want 2097152 6s true", c.FetchMaxPartitionBytes, c.SessionTimeout, c.StartAtEnd)
				}
			},
			ignored: []string{"producer.buffer.memory"},
		},
		{
			name:    "acks other than all refused",
			props:   baseProps + "B.producer.acks=1\n",
			wantErr: "producer.acks",
		},
		{
			name:    "bad compression",
			props:   baseProps + "B.producer.compression.type=brotli\n",
			wantErr: "compression.type",
		},
		{
			name:    "bad interval",
			props:   baseProps + "refresh.topics.interval.seconds=soon\n",
			wantErr: "refresh.topics.interval.seconds",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			f, cfg := flowOf(t, tt.props)
			c, ignored, err := mirror.FromFlow(f, cfg.Cluster[f.Source], cfg.Cluster[f.Target])
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("got error %v, want one naming %s", err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatalf("FromFlow: %v", err)
			}
			if tt.check != nil {
				tt.check(t, c)
			}
			got := map[string]bool{}
			for _, ig := range ignored {
				got[ig.Key] = true
				if ig.Reason == "" {
					t.Errorf("key %s ignored without a reason", ig.Key)
				}
			}
			for _, k := range tt.ignored {
				if !got[k] {
					t.Errorf("key %s: not reported as ignored; got %v", k, ignored)
				}
			}
			for _, honoured := range []string{"topics", "replication.factor", "sync.group.offsets.enabled", "bootstrap.servers",
				"emit.heartbeats.enabled", "emit.heartbeats.interval.seconds", "heartbeats.topic.replication.factor"} {
				if got[honoured] {
					t.Errorf("honoured key %s reported as ignored", honoured)
				}
			}
			c.SetDefaults()
			if err := c.Validate(); err != nil {
				t.Errorf("Validate: %v", err)
			}
		})
	}
}

// TestFromFlowFencing: kmirror fences with transactions unless the MM2 file switches
// exactly.once.source.support off for the target cluster, in the form MirrorMaker 2 reads
// ("<target-alias>.exactly.once.source.support"; the unprefixed key MM2 ignores, and the
// parser warns about it).
func TestFromFlowFencing(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name, extra, want, wantErr string
	}{
		{name: "absent: fenced", want: mirror.FenceTransactions},
		{name: "enabled", extra: "B.exactly.once.source.support=enabled\n", want: mirror.FenceTransactions},
		{name: "preparing", extra: "B.exactly.once.source.support=preparing\n", want: mirror.FenceTransactions},
		{name: "disabled", extra: "B.exactly.once.source.support=disabled\n", want: mirror.FenceNone},
		{name: "disabled for the source cluster only", extra: "A.exactly.once.source.support=disabled\n", want: mirror.FenceTransactions},
		{name: "unprefixed, which MM2 ignores", extra: "exactly.once.source.support=disabled\n", want: mirror.FenceTransactions},
		{name: "a typo is an error", extra: "B.exactly.once.source.support=off\n", wantErr: `B.exactly.once.source.support="off": use enabled or disabled`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			f, cfg := flowOf(t, baseProps+tt.extra)
			c, ignored, err := mirror.FromFlow(f, cfg.Cluster[f.Source], cfg.Cluster[f.Target])
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("got error %v, want one containing %q", err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			c.SetDefaults()
			if c.Fencing != tt.want {
				t.Errorf("got fencing %q, want %q", c.Fencing, tt.want)
			}
			for _, ig := range ignored {
				if strings.Contains(ig.Key, "exactly.once") {
					t.Errorf("%s reported as not honoured", ig.Key)
				}
			}
		})
	}
}

// TestFromFlowAgreesWithGroupSync: kmirror's engine config and groupsync read the group sync
// and checkpoint keys with one rule, so a value that one accepts the other accepts, with the
// same meaning. (sync.group.offsets.interval.seconds=0 used to be read as off by FromFlow and
// refused by groupsync.NewConfig, so kmirror failed only once its group sync started.)
func TestFromFlowAgreesWithGroupSync(t *testing.T) {
	t.Parallel()
	for _, extra := range []string{
		"sync.group.offsets.enabled=true\nsync.group.offsets.interval.seconds=0\n",
		"sync.group.offsets.interval.seconds=0\n",
		"sync.group.offsets.enabled=true\nsync.group.offsets.interval.seconds=-1\n",
		"sync.group.offsets.enabled=true\nsync.group.offsets.interval.seconds=15\n",
		"sync.group.offsets.enabled=1\n",
		"emit.checkpoints.interval.seconds=0\n",
		"emit.checkpoints.interval.seconds=-5\n",
		"emit.checkpoints.enabled=FALSE\n",
		"refresh.groups.interval.seconds=0\n",
		"refresh.groups.interval.seconds=30\n",
		"refresh.groups.enabled=false\n",
		"checkpoints.topic.replication.factor=0\n",
	} {
		t.Run(strings.ReplaceAll(strings.TrimSpace(extra), "\n", " "), func(t *testing.T) {
			t.Parallel()
			f, cfg := flowOf(t, baseProps+extra)
			c, _, mirrorErr := mirror.FromFlow(f, cfg.Cluster[f.Source], cfg.Cluster[f.Target])
			g, groupErr := groupsync.NewConfig(f)
			if (mirrorErr == nil) != (groupErr == nil) {
				t.Fatalf("FromFlow: %v; groupsync.NewConfig: %v; want both to accept or both to refuse", mirrorErr, groupErr)
			}
			if mirrorErr != nil {
				for _, err := range []error{mirrorErr, groupErr} {
					var se *mm2.SettingError
					if !errors.As(err, &se) || se.Flow != "A->B" {
						t.Errorf("got %v, want a *mm2.SettingError of flow A->B", err)
					}
				}
				return
			}
			c.SetDefaults()
			if on := c.SyncGroupOffsets && c.SyncGroupOffsetsInterval > 0; on != g.SyncGroupOffsets {
				t.Errorf("group sync: FromFlow says %v (%v), NewConfig %v", on, c.SyncGroupOffsetsInterval, g.SyncGroupOffsets)
			}
			if on := c.EmitCheckpoints && c.EmitCheckpointsInterval > 0; on != g.EmitCheckpoints {
				t.Errorf("checkpoints: FromFlow says %v (%v), NewConfig %v", on, c.EmitCheckpointsInterval, g.EmitCheckpoints)
			}
			if g.SyncGroupOffsets && c.SyncGroupOffsetsInterval != g.Interval {
				t.Errorf("group sync interval: FromFlow %v, NewConfig %v", c.SyncGroupOffsetsInterval, g.Interval)
			}
			refresh := c.RefreshGroups && c.RefreshGroupsInterval > 0
			if refresh != (g.RefreshGroupsInterval != math.MaxInt64) || refresh && c.RefreshGroupsInterval != g.RefreshGroupsInterval {
				t.Errorf("refresh groups: FromFlow %v every %v, NewConfig every %v", c.RefreshGroups, c.RefreshGroupsInterval, g.RefreshGroupsInterval)
			}
		})
	}
}

// TestFromFlowKeyRules: the rules FromFlow now shares with mm2's reader of flow keys.
func TestFromFlowKeyRules(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name, extra, wantErr string
		check                func(t *testing.T, c mirror.Config)
	}{
		{name: "MM2 refuses 1 as a boolean", extra: "refresh.topics.enabled=1\n", wantErr: `flow A->B: refresh.topics.enabled="1": use true or false`},
		{name: "zero interval refused", extra: "refresh.topics.interval.seconds=0\n", wantErr: "refresh.topics.interval.seconds"},
		{name: "negative interval off", extra: "sync.topic.configs.interval.seconds=-1\n", check: func(t *testing.T, c mirror.Config) {
			if !c.SyncTopicConfigs || c.SyncTopicConfigsInterval != -1 {
				t.Errorf("got %v every %v, want enabled with interval -1 (no periodic sync)", c.SyncTopicConfigs, c.SyncTopicConfigsInterval)
			}
		}},
		{name: "config.properties.exclude wins over its deprecated alias", extra: "config.properties.exclude=retention\\\\..*\nconfig.properties.blacklist=cleanup\\\\.policy\n",
			check: func(t *testing.T, c mirror.Config) {
				if strings.Join(c.ConfigExclude, ",") != `retention\..*` {
					t.Errorf("got %q, want the config.properties.exclude list", c.ConfigExclude)
				}
			}},
		{name: "an empty exclude list excludes nothing, as in MM2", extra: "config.properties.exclude=\n", check: func(t *testing.T, c mirror.Config) {
			c.SetDefaults()
			if len(c.ConfigExclude) != 0 {
				t.Errorf("got %q, want no exclusion", c.ConfigExclude)
			}
		}},
		{name: "a bad linger names the key", extra: "B.producer.linger.ms=-5\n", wantErr: `producer.linger.ms="-5": want milliseconds`},
		{name: "a static member's instance id", extra: "A.consumer.group.instance.id=kmirror-0\n", check: func(t *testing.T, c mirror.Config) {
			if c.InstanceID != "kmirror-0" {
				t.Errorf("instance id %q, want kmirror-0", c.InstanceID)
			}
		}},
		{name: "kmirror's commit bound", extra: "A->B.kmirror.commit.latency.max.ms=250\n", check: func(t *testing.T, c mirror.Config) {
			if c.CommitLatency != 250*time.Millisecond {
				t.Errorf("commit latency %v, want 250ms", c.CommitLatency)
			}
		}},
		{name: "no commit bound: the default", check: func(t *testing.T, c mirror.Config) {
			c.SetDefaults()
			if c.CommitLatency != mirror.DefaultCommitLatency {
				t.Errorf("commit latency %v, want %v", c.CommitLatency, mirror.DefaultCommitLatency)
			}
		}},
		{name: "a zero commit bound names the key", extra: "kmirror.commit.latency.max.ms=0\n", wantErr: `kmirror.commit.latency.max.ms="0": want a whole number of milliseconds, 1 to 60000`},
		{name: "a commit bound past the transaction timeout", extra: "kmirror.commit.latency.max.ms=120000\n", wantErr: `kmirror.commit.latency.max.ms="120000"`},
		{name: "a bad instance id names the key", extra: "A.consumer.group.instance.id=pod 0\n", wantErr: `consumer.group.instance.id="pod 0": character ' '`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			f, cfg := flowOf(t, baseProps+tc.extra)
			c, _, err := mirror.FromFlow(f, cfg.Cluster[f.Source], cfg.Cluster[f.Target])
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("got error %v, want one containing %q", err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			tc.check(t, c)
		})
	}
}

// TestFromFlowHeartbeats: the heartbeat keys as MM2 reads them: on by default every second to
// "heartbeats" with replication factor 3; switched off globally or for the flow alone (the
// "A->B." key wins); a negative interval switches them off too; the keys are honoured, never
// listed as ignored.
func TestFromFlowHeartbeats(t *testing.T) {
	t.Parallel()
	type hb struct {
		on       bool
		interval time.Duration
		rf       int16
	}
	for _, tc := range []struct {
		name, extra string
		want        hb
		wantErr     string
	}{
		{name: "MM2's defaults", want: hb{true, time.Second, 3}},
		{name: "off globally", extra: "emit.heartbeats.enabled=false\n", want: hb{false, time.Second, 3}},
		{name: "off for the flow", extra: "A->B.emit.heartbeats.enabled=false\n", want: hb{false, time.Second, 3}},
		{name: "the flow's key wins", extra: "emit.heartbeats.enabled=false\nA->B.emit.heartbeats.enabled=true\n", want: hb{true, time.Second, 3}},
		{name: "interval and factor", extra: "emit.heartbeats.interval.seconds=5\nheartbeats.topic.replication.factor=-1\n", want: hb{true, 5 * time.Second, -1}},
		{name: "negative interval", extra: "A->B.emit.heartbeats.interval.seconds=-1\n", want: hb{true, -1, 3}},
		{name: "zero interval refused", extra: "emit.heartbeats.interval.seconds=0\n", wantErr: "emit.heartbeats.interval.seconds"},
		{name: "bad factor refused", extra: "heartbeats.topic.replication.factor=0\n", wantErr: "heartbeats.topic.replication.factor"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			f, cfg := flowOf(t, baseProps+tc.extra)
			c, ignored, err := mirror.FromFlow(f, cfg.Cluster[f.Source], cfg.Cluster[f.Target])
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("got error %v, want one naming %s", err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			for _, ig := range ignored {
				if strings.Contains(ig.Key, "heartbeats") {
					t.Errorf("heartbeat key %s listed as ignored: %s", ig.Key, ig.Reason)
				}
			}
			c.SetDefaults()
			if got := (hb{c.EmitHeartbeats, c.EmitHeartbeatsInterval, c.HeartbeatsReplicationFactor}); got != tc.want {
				t.Errorf("got %+v, want %+v", got, tc.want)
			}
			if c.HeartbeatsTopic != "heartbeats" {
				t.Errorf("topic %q, want heartbeats", c.HeartbeatsTopic)
			}
		})
	}
}

// TestValidateInstanceID: an instance id given outside the file (kmirror run
// --group-instance-id) is checked as the file's is.
func TestValidateInstanceID(t *testing.T) {
	t.Parallel()
	c := mirror.Config{SourceAlias: "A", TargetAlias: "B", InstanceID: "kmirror 0"}
	c.SetDefaults()
	if err := c.Validate(); err == nil || !strings.Contains(err.Error(), `group instance id "kmirror 0"`) {
		t.Fatalf("Validate: %v, want the instance id refused", err)
	}
	c.InstanceID = "kmirror-0"
	if err := c.Validate(); err != nil {
		t.Fatalf("Validate: %v", err)
	}
}
