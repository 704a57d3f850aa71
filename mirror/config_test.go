package mirror_test

import (
	"strings"
	"testing"
	"time"

	"github.com/kmigrate/kmigrate/mirror"
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
			ignored: []string{"emit.heartbeats.enabled", "tasks.max"},
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
			for _, honoured := range []string{"topics", "replication.factor", "sync.group.offsets.enabled", "bootstrap.servers"} {
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
