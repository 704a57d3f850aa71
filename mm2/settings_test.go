package mm2

import (
	"errors"
	"strings"
	"testing"
	"time"
)

func flowWith(settings map[string]string) *Flow {
	f := NewFlow("A", "B", nil)
	f.Settings = settings
	return f
}

// TestSchedule: each periodic task's two keys, with MM2 3.7.1's rules for absent, false,
// negative, zero and malformed values.
func TestSchedule(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name     string
		task     Task
		settings map[string]string
		want     Schedule
		on       bool
		wantErr  string // substring; "" for none
	}{
		{name: "defaults, on", task: TaskRefreshTopics, want: Schedule{true, 600 * time.Second}, on: true},
		{name: "defaults, off", task: TaskSyncGroupOffsets, want: Schedule{false, time.Minute}},
		{name: "enabled with interval", task: TaskSyncGroupOffsets,
			settings: map[string]string{"sync.group.offsets.enabled": " TRUE ", "sync.group.offsets.interval.seconds": " 10 "},
			want:     Schedule{true, 10 * time.Second}, on: true},
		{name: "false switches off", task: TaskEmitCheckpoints,
			settings: map[string]string{"emit.checkpoints.enabled": "false"}, want: Schedule{false, time.Minute}},
		{name: "negative switches off", task: TaskRefreshGroups,
			settings: map[string]string{"refresh.groups.interval.seconds": "-1"}, want: Schedule{true, -1}},
		{name: "any negative is -1", task: TaskEmitCheckpoints,
			settings: map[string]string{"emit.checkpoints.interval.seconds": "-600"}, want: Schedule{true, -1}},
		{name: "zero refused", task: TaskSyncGroupOffsets,
			settings: map[string]string{"sync.group.offsets.enabled": "true", "sync.group.offsets.interval.seconds": "0"},
			wantErr:  `flow A->B: sync.group.offsets.interval.seconds="0": zero is no interval`},
		{name: "zero refused when disabled too", task: TaskRefreshTopics,
			settings: map[string]string{"refresh.topics.enabled": "false", "refresh.topics.interval.seconds": "0"},
			wantErr:  "or refresh.topics.enabled=false"},
		{name: "not a number", task: TaskSyncTopicConfigs,
			settings: map[string]string{"sync.topic.configs.interval.seconds": "10s"},
			wantErr:  `sync.topic.configs.interval.seconds="10s": want a whole number of seconds`},
		{name: "too large", task: TaskRefreshTopics,
			settings: map[string]string{"refresh.topics.interval.seconds": "9300000000"}, wantErr: "too large: at most 9223372036 seconds"},
		{name: "beyond int64", task: TaskRefreshTopics,
			settings: map[string]string{"refresh.topics.interval.seconds": "99999999999999999999"}, wantErr: "too large"},
		{name: "1 is not a boolean to MM2", task: TaskRefreshTopics,
			settings: map[string]string{"refresh.topics.enabled": "1"}, wantErr: `refresh.topics.enabled="1": use true or false`},
		{name: "both keys bad: both named", task: TaskEmitCheckpoints,
			settings: map[string]string{"emit.checkpoints.enabled": "yes", "emit.checkpoints.interval.seconds": "x"},
			wantErr:  "emit.checkpoints.interval.seconds"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			got, err := flowWith(tc.settings).Schedule(tc.task)
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("got error %v, want one containing %q", err, tc.wantErr)
				}
				var se *SettingError
				if !errors.As(err, &se) || se.Flow != "A->B" {
					t.Fatalf("got %T %v, want a *SettingError of flow A->B", err, err)
				}
				return
			}
			if err != nil {
				t.Fatalf("got error %v", err)
			}
			if got != tc.want || got.On() != tc.on {
				t.Fatalf("got %+v (on %v), want %+v (on %v)", got, got.On(), tc.want, tc.on)
			}
		})
	}
}

func TestFlowKeys(t *testing.T) {
	t.Parallel()
	f := flowWith(map[string]string{
		"replication.factor": " 3 ", "checkpoints.topic.replication.factor": "-1",
		"offset-syncs.topic.replication.factor": "0", "heartbeats.topic.replication.factor": "40000",
		"config.properties.exclude": "a\\..*, b", "config.properties.blacklist": "ignored",
		"topics.blacklist": "", "sasl.jaas.config": "secret", "refresh.topics.enabled": "False",
	})
	for key, want := range map[string]int16{"replication.factor": 3, "checkpoints.topic.replication.factor": -1} {
		if rf, set, err := f.ReplicationFactor(key); err != nil || !set || rf != want {
			t.Errorf("%s: got %d %v %v, want %d", key, rf, set, err, want)
		}
	}
	for _, key := range []string{"offset-syncs.topic.replication.factor", "heartbeats.topic.replication.factor"} {
		if _, _, err := f.ReplicationFactor(key); err == nil || !strings.Contains(err.Error(), key) {
			t.Errorf("%s: got %v, want an error naming it", key, err)
		}
	}
	if _, set, err := f.ReplicationFactor("absent.replication.factor"); set || err != nil {
		t.Errorf("absent key: got set %v err %v", set, err)
	}
	if got := f.ConfigExclude(); strings.Join(got, "|") != `a\..*|b` {
		t.Errorf("ConfigExclude: got %q, want the new key's list over its deprecated alias", got)
	}
	if l, ok := f.List("topics.exclude", "topics.blacklist"); !ok || l == nil || len(l) != 0 {
		t.Errorf("blank list: got %q %v, want an empty, non-nil list", l, ok)
	}
	if got := flowWith(nil).ConfigExclude(); len(got) != len(DefaultConfigExclude) {
		t.Errorf("default ConfigExclude: got %q", got)
	}
	if b, set, err := f.Bool("refresh.topics.enabled", true); b || !set || err != nil {
		t.Errorf("Bool: got %v %v %v, want false, set", b, set, err)
	}
	if err := NewSettingError("A->B", "sasl.jaas.config", "secret", "x"); strings.Contains(err.Error(), "secret\"") {
		t.Errorf("a secret-bearing value reached the error: %v", err)
	}
}

func TestParseDuration(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		in   string
		unit time.Duration
		n    int64
		d    time.Duration
		err  error
	}{
		{"10", time.Second, 10, 10 * time.Second, nil},
		{" +5 ", time.Millisecond, 5, 5 * time.Millisecond, nil},
		{"-1", time.Second, -1, -time.Second, nil},
		{"0", time.Millisecond, 0, 0, nil},
		{"9223372036854", time.Millisecond, 9223372036854, 9223372036854 * time.Millisecond, nil},
		{"9223372036855", time.Millisecond, 0, 0, ErrTooLarge},
		{"1e3", time.Second, 0, 0, ErrNotWholeNumber},
		{"", time.Second, 0, 0, ErrNotWholeNumber},
	} {
		n, d, err := ParseDuration(tc.in, tc.unit)
		if n != tc.n || d != tc.d || !errors.Is(err, tc.err) || (tc.err == nil) != (err == nil) {
			t.Errorf("ParseDuration(%q, %v) = %d, %v, %v; want %d, %v, %v", tc.in, tc.unit, n, d, err, tc.n, tc.d, tc.err)
		}
	}
}

// TestPattern: a list compiles as MM2 compiles it, joined into one anchored regex.
func TestPattern(t *testing.T) {
	t.Parallel()
	p, err := CompilePattern("topics", []string{"orders", " pay.* ", "", "a|b"})
	if err != nil {
		t.Fatal(err)
	}
	for name, want := range map[string]bool{"orders": true, "payments": true, "a": true, "b": true, "xorders": false, "orders2": false, "": false} {
		if p.Matches(name) != want {
			t.Errorf("Matches(%q) = %v, want %v", name, !want, want)
		}
	}
	if (Pattern{}).Matches("x") {
		t.Error("the zero Pattern matches")
	}
	// Joined, as in MM2: items that do not compile alone can compile together.
	if _, err := CompilePattern("topics", []string{"(a", "b)"}); err != nil {
		t.Errorf("joined items: %v", err)
	}
	if _, err := CompilePattern("groups.exclude", []string{"(x"}); err == nil || !strings.Contains(err.Error(), "groups.exclude") {
		t.Errorf("got %v, want an error naming groups.exclude", err)
	}
}
