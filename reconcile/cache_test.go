package reconcile

import (
	"context"
	"testing"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/kmigrate/kmigrate/offsetmap"
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

// TestRecordCacheFingerprints: the fingerprints the cache keeps are those of its records over
// its fields, also after puts that overlap and interleave (the two slices stay parallel), and a
// read over other fields computes its own instead of taking the cached ones.
func TestRecordCacheFingerprints(t *testing.T) {
	rec := func(off int64, v string) *kgo.Record {
		return &kgo.Record{Offset: off, Key: []byte("k" + v), Value: []byte("v" + v)}
	}
	c := newRecordCache()
	c.fields = offsetmap.FieldValue
	c.put("t", 0, 10, 14, []*kgo.Record{rec(10, "a"), rec(12, "b"), rec(13, "c")})
	c.put("t", 0, 4, 12, []*kgo.Record{rec(4, "d"), rec(7, "e"), rec(10, "a"), rec(11, "f")})
	c.put("t", 0, 13, 16, []*kgo.Record{rec(13, "c"), rec(15, "g")})
	recs, fps, end, ok := c.lookup("t", 0, 5)
	if !ok || end != 16 || len(recs) != 6 || len(fps) != len(recs) {
		t.Fatalf("lookup(5): ok=%v end=%d %d records %d fingerprints, want ok end=16 6 and 6", ok, end, len(recs), len(fps))
	}
	for i, r := range recs {
		if want := offsetmap.Fingerprint(r, offsetmap.FieldValue); fps[i] != want {
			t.Errorf("record at %d: cached fingerprint %016x, want %016x (its value's)", r.Offset, fps[i], want)
		}
	}

	s := &side{name: "test", cache: c, topics: map[string]kadm.TopicDetail{"t": {Topic: "t", Partitions: kadm.PartitionDetails{0: {}}}}}
	for _, fields := range []offsetmap.Fields{offsetmap.FieldValue, offsetmap.FieldKey} {
		got, err := s.read(context.Background(), "t", 0, 7, 16, 0, fields)
		if err != nil || len(got) != 6 {
			t.Fatalf("read over %v: %d records, %v; want 6 from the cache", fields, len(got), err)
		}
		for _, g := range got {
			if want := offsetmap.Fingerprint(g.r, fields); g.fp != want {
				t.Errorf("read over %v: record at %d has fingerprint %016x, want %016x", fields, g.off, g.fp, want)
			}
		}
	}
}

// TestTxnCacheBound: the transaction cache never holds more than txnCacheMax offsets, however
// many partitions it is given: what does not fit once the partition being added to is emptied
// is not kept, and the partitions already held still answer.
func TestTxnCacheBound(t *testing.T) {
	c := newTxnCache()
	offs := func(from, n int64) []int64 {
		out := make([]int64, n)
		for i := range out {
			out[i] = from + int64(i)
		}
		return out
	}
	half := int64(txnCacheMax / 2)
	c.put("t", 0, 0, half, offs(0, half), nil)
	c.put("t", 1, 0, half, offs(0, half-10), offs(half-10, 10))
	c.put("t", 2, 0, 10, offs(0, 10), nil)
	if c.total > txnCacheMax {
		t.Fatalf("the cache holds %d offsets, more than its bound %d", c.total, txnCacheMax)
	}
	if _, _, _, ok := c.lookup("t", 2, 0); ok {
		t.Errorf("partition 2: got a hit, want none (it did not fit)")
	}
	for p := range int32(2) {
		if committed, aborted, end, ok := c.lookup("t", p, 0); !ok || end != half || int64(len(committed)+len(aborted)) != half {
			t.Errorf("partition %d: got ok=%v end=%d %d offsets, want ok end=%d %d offsets", p, ok, end, len(committed)+len(aborted), half, half)
		}
	}
}
