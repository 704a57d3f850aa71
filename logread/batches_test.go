package logread

import (
	"encoding/binary"
	"strings"
	"testing"

	"github.com/twmb/franz-go/pkg/kmsg"
)

func TestSplitBatches(t *testing.T) {
	batch := func(offset int64, body int) []byte {
		b := make([]byte, 12+body)
		binary.BigEndian.PutUint64(b, uint64(offset))
		binary.BigEndian.PutUint32(b[8:], uint32(body))
		return b
	}
	a, b, c := batch(0, 50), batch(10, 7), batch(20, 30)
	all := append(append(append([]byte{}, a...), b...), c[:20]...) // c truncated
	tests := []struct {
		name string
		in   []byte
		want []int
	}{
		{name: "two whole batches and a truncated one", in: all, want: []int{len(a), len(b)}},
		{name: "empty", in: nil, want: nil},
		{name: "only a truncated batch is passed on for the decoder to report", in: c[:20], want: []int{20}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := splitBatches(tt.in)
			if len(got) != len(tt.want) {
				t.Fatalf("got %d pieces, want %d", len(got), len(tt.want))
			}
			for i := range got {
				if len(got[i]) != tt.want[i] {
					t.Errorf("piece %d: got %d bytes, want %d", i, len(got[i]), tt.want[i])
				}
			}
		})
	}
}

func TestLastOffset(t *testing.T) {
	v2 := func(base int64, lastDelta int32) []byte {
		b := make([]byte, 61) // a record batch header
		binary.BigEndian.PutUint64(b, uint64(base))
		binary.BigEndian.PutUint32(b[8:], uint32(len(b)-12))
		b[16] = 2
		binary.BigEndian.PutUint32(b[23:], uint32(lastDelta))
		return b
	}
	v1 := make([]byte, 30)
	binary.BigEndian.PutUint64(v1, 41)
	binary.BigEndian.PutUint32(v1[8:], 18)
	v1[16] = 1
	tests := []struct {
		name string
		in   []byte
		want int64
		ok   bool
	}{
		{name: "last batch of two", in: append(v2(0, 9), v2(10, 4)...), want: 14, ok: true},
		{name: "empty (compacted) or control batch still covers its offsets", in: v2(100, 0), want: 100, ok: true},
		{name: "v1 message set", in: v1, want: 41, ok: true},
		{name: "truncated", in: v2(0, 9)[:40], ok: false},
		{name: "nothing", in: nil, ok: false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, ok := lastOffset(tt.in)
			if ok != tt.ok || (ok && got != tt.want) {
				t.Errorf("got %d, %v; want %d, %v", got, ok, tt.want, tt.ok)
			}
		})
	}
}

// A batch that stays partial at the largest fetch size is an error, not an endless loop.
func TestJudgeNoProgressAtLargestFetch(t *testing.T) {
	r := newReader(nil, Options{Cluster: "target", Topic: "t", Partition: 3, From: 0, To: 10})
	part := &kmsg.FetchResponseTopicPartition{HighWatermark: 10, LastStableOffset: 10, RecordBatches: make([]byte, 40)}
	binary.BigEndian.PutUint32(part.RecordBatches[8:], 1000) // longer than what came back
	_, _, again, err := r.judge(part, 0)
	if err != nil || !again || r.partBytes != 2<<20 {
		t.Fatalf("below the largest size: got again=%v err=%v size %d; want a retry with 2 MiB", again, err, r.partBytes)
	}
	r.partBytes = maxPartitionBytes
	_, _, again, err = r.judge(part, 0)
	if err == nil || again || !strings.Contains(err.Error(), `target topic "t" partition 3 at offset 0 made no progress`) {
		t.Fatalf("at the largest size: got again=%v err=%v; want an error naming the partition", again, err)
	}
}
