package reconcile

import (
	"testing"

	"github.com/twmb/franz-go/pkg/kgo"
)

func recsAt(offs ...int64) []*kgo.Record {
	var out []*kgo.Record
	for _, o := range offs {
		out = append(out, &kgo.Record{Offset: o})
	}
	return out
}

func TestRecordCache(t *testing.T) {
	c := newRecordCache()
	c.put("t", 0, 10, 15, recsAt(10, 11, 13, 14)) // 12 is a gap (a marker)
	c.put("t", 0, 15, 20, recsAt(15, 16, 17, 18, 19))
	c.put("t", 0, 30, 32, recsAt(30, 31))
	tests := []struct {
		name    string
		off     int64
		wantOK  bool
		wantEnd int64
		wantN   int
	}{
		{"inside merged spans", 12, true, 20, 7},
		{"span start", 10, true, 20, 9},
		{"between spans", 25, false, 0, 0},
		{"last span", 31, true, 32, 1},
		{"past everything", 40, false, 0, 0},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			recs, end, ok := c.get("t", 0, tc.off)
			if ok != tc.wantOK || end != tc.wantEnd || len(recs) != tc.wantN {
				t.Errorf("get(%d): got ok=%v end=%d %d records, want ok=%v end=%d %d records", tc.off, ok, end, len(recs), tc.wantOK, tc.wantEnd, tc.wantN)
			}
		})
	}
	if _, _, ok := c.get("t", 1, 12); ok {
		t.Errorf("another partition: got a hit, want none")
	}
	c.max = 12 // bounded: a put past the bound empties the partition first
	c.put("t", 0, 40, 45, recsAt(40, 41, 42, 43, 44))
	if _, _, ok := c.get("t", 0, 12); ok {
		t.Errorf("after eviction: got a hit for offset 12, want none")
	}
	if _, end, ok := c.get("t", 0, 41); !ok || end != 45 {
		t.Errorf("after eviction: get(41) got ok=%v end=%d, want ok end=45", ok, end)
	}
}
