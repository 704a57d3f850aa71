package groupsync_test

import (
	"math"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/kmigrate/kmigrate/mirror/groupsync"
	"github.com/kmigrate/kmigrate/mm2"
)

func TestNewConfig(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name     string
		settings map[string]string
		want     groupsync.Config // compared field by field below
		wantErr  string
	}{
		{
			name:     "MM2 defaults",
			settings: map[string]string{},
			want: groupsync.Config{SyncGroupOffsets: false, EmitCheckpoints: true, Interval: time.Minute,
				CheckpointInterval: time.Minute, RefreshGroupsInterval: 10 * time.Minute, CheckpointsReplicationFactor: -1},
		},
		{
			name: "the seed case's keys",
			settings: map[string]string{"sync.group.offsets.enabled": "true", "sync.group.offsets.interval.seconds": "10",
				"emit.checkpoints.interval.seconds": "10", "refresh.groups.interval.seconds": "30", "replication.factor": "3"},
			want: groupsync.Config{SyncGroupOffsets: true, EmitCheckpoints: true, Interval: 10 * time.Second,
				CheckpointInterval: 10 * time.Second, RefreshGroupsInterval: 30 * time.Second, CheckpointsReplicationFactor: 3},
		},
		{
			name:     "checkpoints factor wins over replication.factor",
			settings: map[string]string{"checkpoints.topic.replication.factor": "1", "replication.factor": "3", "emit.checkpoints.enabled": "false"},
			want: groupsync.Config{EmitCheckpoints: false, Interval: time.Minute, CheckpointInterval: time.Minute,
				RefreshGroupsInterval: 10 * time.Minute, CheckpointsReplicationFactor: 1},
		},
		{
			name: "negative intervals switch their task off, as in MM2",
			settings: map[string]string{"sync.group.offsets.enabled": "true", "sync.group.offsets.interval.seconds": "-1",
				"emit.checkpoints.interval.seconds": "-1", "refresh.groups.interval.seconds": "-1"},
			want: groupsync.Config{SyncGroupOffsets: false, EmitCheckpoints: false, Interval: time.Minute,
				CheckpointInterval: time.Minute, RefreshGroupsInterval: math.MaxInt64, CheckpointsReplicationFactor: -1},
		},
		{
			name:     "zero interval",
			settings: map[string]string{"sync.group.offsets.interval.seconds": "0"},
			wantErr:  "sync.group.offsets.interval.seconds",
		},
		{
			name:     "bad boolean",
			settings: map[string]string{"sync.group.offsets.enabled": "yes"},
			wantErr:  "sync.group.offsets.enabled",
		},
		{
			name:     "bad interval",
			settings: map[string]string{"emit.checkpoints.interval.seconds": "10s"},
			wantErr:  "emit.checkpoints.interval.seconds",
		},
		{
			name:     "bad factor",
			settings: map[string]string{"checkpoints.topic.replication.factor": "0"},
			wantErr:  "checkpoints.topic.replication.factor",
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			f := mm2.NewFlow("A", "B", mm2.IdentityPolicy{})
			f.Settings = tc.settings
			got, err := groupsync.NewConfig(f)
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("got error %v, want one naming %q", err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatalf("got error %v, want nil", err)
			}
			type view struct {
				sync, emit                 bool
				interval, cpInt, refresh   time.Duration
				rf                         int16
				checkpoints, target, group string
			}
			gotV := view{got.SyncGroupOffsets, got.EmitCheckpoints, got.Interval, got.CheckpointInterval,
				got.RefreshGroupsInterval, got.CheckpointsReplicationFactor, got.CheckpointsTopic, got.TargetTopic("t"), ""}
			w := tc.want
			wantV := view{w.SyncGroupOffsets, w.EmitCheckpoints, w.Interval, w.CheckpointInterval,
				w.RefreshGroupsInterval, w.CheckpointsReplicationFactor, "A.checkpoints.internal", "t", ""}
			if gotV != wantV {
				t.Fatalf("got %+v, want %+v", gotV, wantV)
			}
			if got.GroupMatches("console-consumer-1") || !got.GroupMatches("orders") {
				t.Fatalf("group filter: got the flow's defaults wrong")
			}
		})
	}
}

func TestValidate(t *testing.T) {
	t.Parallel()
	cl, err := kgo.NewClient(kgo.SeedBrokers("127.0.0.1:1"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(cl.Close)
	flow := mm2.NewFlow("A", "B", nil)
	for _, tc := range []struct {
		name    string
		cfg     groupsync.Config
		wantErr string
	}{
		{name: "complete", cfg: groupsync.Config{Source: cl, Target: cl, Flow: flow, Translator: &fakeTranslator{}, EmitCheckpoints: true}},
		{name: "no source", cfg: groupsync.Config{Target: cl, Flow: flow, Translator: &fakeTranslator{}}, wantErr: "Source"},
		{name: "no translator", cfg: groupsync.Config{Source: cl, Target: cl, Flow: flow}, wantErr: "Translator"},
		{name: "no flow", cfg: groupsync.Config{Source: cl, Target: cl, Translator: &fakeTranslator{}}, wantErr: "set Flow"},
		{name: "no checkpoints topic", cfg: groupsync.Config{Source: cl, Target: cl, Translator: &fakeTranslator{}, EmitCheckpoints: true,
			GroupMatches: func(string) bool { return true }, TopicMatches: func(string) bool { return true }, TargetTopic: func(s string) string { return s }},
			wantErr: "checkpoints topic"},
		{name: "bad factor", cfg: groupsync.Config{Source: cl, Target: cl, Flow: flow, Translator: &fakeTranslator{}, CheckpointsReplicationFactor: -2},
			wantErr: "replication.factor"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			_, err := groupsync.New(tc.cfg)
			switch {
			case tc.wantErr == "" && err != nil:
				t.Fatalf("got error %v, want nil", err)
			case tc.wantErr != "" && (err == nil || !strings.Contains(err.Error(), tc.wantErr)):
				t.Fatalf("got error %v, want one containing %q", err, tc.wantErr)
			}
		})
	}
}
