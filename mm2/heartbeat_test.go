package mm2

import (
	"bytes"
	"strings"
	"testing"
	"time"
)

// TestHeartbeatBytes: the key and value are the bytes MM2's Heartbeat writes, laid out by
// hand from its schemas (key: two STRINGs, no version; value: the INT16 version header
// struct, then the INT64 timestamp), and decode back to the same heartbeat.
func TestHeartbeatBytes(t *testing.T) {
	t.Parallel()
	h := Heartbeat{SourceAlias: "us-west", TargetAlias: "B", Timestamp: 1_700_000_000_123}
	wantKey := []byte{
		0x00, 0x07, 'u', 's', '-', 'w', 'e', 's', 't', // sourceClusterAlias STRING
		0x00, 0x01, 'B', // targetClusterAlias STRING
	}
	wantValue := []byte{
		0x00, 0x00, // version INT16 = 0
		0x00, 0x00, 0x01, 0x8b, 0xcf, 0xe5, 0x68, 0x7b, // timestamp INT64 = 1700000000123 = 0x18bcfe5687b
	}
	if got := h.Key(); !bytes.Equal(got, wantKey) {
		t.Errorf("key % x, want % x", got, wantKey)
	}
	if got := h.Value(); !bytes.Equal(got, wantValue) {
		t.Errorf("value % x, want % x", got, wantValue)
	}
	got, err := DecodeHeartbeat(wantKey, wantValue)
	if err != nil {
		t.Fatal(err)
	}
	if got != h {
		t.Errorf("decoded %+v, want %+v", got, h)
	}
	if !got.Time().Equal(time.UnixMilli(1_700_000_000_123)) {
		t.Errorf("time %v", got.Time())
	}
	// Trailing bytes are ignored, as MM2's reader does.
	if _, err := DecodeHeartbeat(append(wantKey, 0xff), append(wantValue, 0xff)); err != nil {
		t.Errorf("trailing bytes: %v", err)
	}
}

func TestDecodeHeartbeatRefuses(t *testing.T) {
	t.Parallel()
	key := Heartbeat{SourceAlias: "A", TargetAlias: "B"}.Key()
	for _, tc := range []struct {
		name       string
		key, value []byte
		want       string
	}{
		{"short value", key, []byte{0, 0, 0, 0, 0}, "truncated"},
		{"short key", key[:4], Heartbeat{}.Value(), "truncated"},
		{"null alias", []byte{0xff, 0xff, 0, 1, 'B'}, Heartbeat{}.Value(), "null string"},
		{"unknown version", key, []byte{0, 1, 0, 0, 0, 0, 0, 0, 0, 1}, "version 1, want 0"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			_, err := DecodeHeartbeat(tc.key, tc.value)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("got %v, want an error containing %q", err, tc.want)
			}
		})
	}
}

// TestHeartbeatSchedule: MM2's defaults (on, every second) and the flow's keys.
func TestHeartbeatSchedule(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		settings map[string]string
		want     Schedule
	}{
		{nil, Schedule{true, time.Second}},
		{map[string]string{"emit.heartbeats.enabled": "false"}, Schedule{false, time.Second}},
		{map[string]string{"emit.heartbeats.interval.seconds": "5"}, Schedule{true, 5 * time.Second}},
		{map[string]string{"emit.heartbeats.interval.seconds": "-1"}, Schedule{true, -1}},
	} {
		got, err := flowWith(tc.settings).Schedule(TaskEmitHeartbeats)
		if err != nil || got != tc.want {
			t.Errorf("%v: got %+v, %v; want %+v", tc.settings, got, err, tc.want)
		}
	}
}
