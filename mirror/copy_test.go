package mirror_test

import (
	"bytes"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/kmigrate/kmigrate/mirror"
)

func TestCopyRecord(t *testing.T) {
	t.Parallel()
	ts := time.UnixMilli(1_700_000_000_123)
	tests := []struct {
		name string
		in   *kgo.Record
	}{
		{"null key and value", &kgo.Record{Partition: 3, Timestamp: ts}},
		{"empty key and value", &kgo.Record{Key: []byte{}, Value: []byte{}, Timestamp: ts}},
		{"headers with null and empty values", &kgo.Record{Key: []byte("k"), Value: []byte("v"),
			Headers: []kgo.RecordHeader{{Key: "a"}, {Key: "b", Value: []byte{}}, {Key: "c", Value: []byte("x")}}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			out := mirror.CopyRecord(tt.in, "target")
			if out.Topic != "target" || out.Partition != tt.in.Partition || !out.Timestamp.Equal(tt.in.Timestamp) {
				t.Fatalf("got topic %q partition %d ts %v, want target %d %v", out.Topic, out.Partition, out.Timestamp, tt.in.Partition, tt.in.Timestamp)
			}
			same := func(what string, a, b []byte) {
				if (a == nil) != (b == nil) || !bytes.Equal(a, b) {
					t.Errorf("%s: got %q (nil %v), want %q (nil %v)", what, b, b == nil, a, a == nil)
				}
			}
			same("key", tt.in.Key, out.Key)
			same("value", tt.in.Value, out.Value)
			if len(out.Headers) != len(tt.in.Headers) {
				t.Fatalf("got %d headers, want %d", len(out.Headers), len(tt.in.Headers))
			}
			for i, h := range tt.in.Headers {
				if out.Headers[i].Key != h.Key {
					t.Errorf("header %d: got key %q, want %q", i, out.Headers[i].Key, h.Key)
				}
				same("header "+h.Key, h.Value, out.Headers[i].Value)
			}
			if len(tt.in.Value) > 0 && &out.Value[0] == &tt.in.Value[0] {
				t.Errorf("value shares memory with the fetched record")
			}
			// Appending to the key must not overwrite the value (capacities are clipped).
			if out.Key != nil && out.Value != nil {
				_ = append(out.Key, 'Z')
				same("value after append to key", tt.in.Value, out.Value)
			}
		})
	}
}
