package offsetmap

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// goodMap is a valid version-1 offset map: two partitions, a gap, a duplicate copy.
const goodMap = `{
 "version": 1,
 "source_topic": "orders", "target_topic": "orders",
 "partitions": [
  {"partition": 0, "source_from": 0, "source_to": 1200, "target_to": 1215,
   "segments": [{"source": 0, "target": 0, "len": 800}, {"source": 801, "target": 805, "len": 399}],
   "duplicates": [{"target_offset": 800, "source_offset": 796}]},
  {"partition": 1, "source_from": 5, "source_to": 5, "target_to": 0, "segments": []}
 ]
}
`

func writeMap(t *testing.T, text string) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "orders.map.json")
	if err := os.WriteFile(path, []byte(text), 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

func TestReadOffsetMapRoundTrip(t *testing.T) {
	m, err := ReadFile(writeMap(t, goodMap))
	if err != nil {
		t.Fatalf("read a valid map: %v", err)
	}
	var b bytes.Buffer
	if err := Write(&b, m); err != nil {
		t.Fatal(err)
	}
	again, err := ReadFile(writeMap(t, b.String()))
	if err != nil {
		t.Fatalf("read what Write wrote: %v\n%s", err, b.String())
	}
	if got := again.Partition(0).ExactTarget(1000); !got.Known || got.Target != 1004 {
		t.Errorf("ExactTarget(1000) = %+v, want 1004", got)
	}
}

// TestReadOffsetMapRejects: a corrupt, truncated or crafted file is an error naming the file
// and what is wrong, never a panic and never a map that answers.
func TestReadOffsetMapRejects(t *testing.T) {
	part := func(body string) string {
		return `{"version": 1, "source_topic": "orders", "target_topic": "orders", "partitions": [` + body + `]}`
	}
	tests := []struct {
		name, text, want string
	}{
		{name: "empty file", text: "", want: "empty"},
		{name: "not JSON", text: "orders 0 1200", want: "not JSON"},
		{name: "truncated", text: goodMap[:len(goodMap)/2], want: "truncated"},
		{name: "trailing bytes", text: goodMap + "{}", want: "after the offset map"},
		{name: "trailing garbage", text: goodMap + "garbage", want: "after the offset map"},
		{name: "two maps", text: goodMap + goodMap, want: "after the offset map"},
		{name: "an array", text: "[]", want: "not JSON"},
		{name: "wrong version", text: strings.Replace(goodMap, `"version": 1`, `"version": 2`, 1), want: "version 2"},
		{name: "no version", text: `{"source_topic": "orders", "target_topic": "orders", "partitions": []}`, want: "version 0"},
		{name: "unknown field", text: strings.Replace(goodMap, `"segments": []`, `"segment": []`, 1), want: `"segment"`},
		{name: "no source topic", text: `{"version": 1, "target_topic": "orders", "partitions": []}`, want: "source_topic"},
		{name: "no partitions", text: `{"version": 1, "source_topic": "orders", "target_topic": "orders"}`, want: "partitions"},
		{name: "null partition", text: part(`null`), want: "null"},
		{name: "negative partition", text: part(`{"partition": -1, "source_from": 0, "source_to": 0, "target_to": 0, "segments": []}`), want: "partition -1"},
		{name: "partition twice", text: part(`{"partition": 0, "source_from": 0, "source_to": 0, "target_to": 0, "segments": []}, {"partition": 0, "source_from": 0, "source_to": 0, "target_to": 0, "segments": []}`), want: "twice"},
		{name: "reversed range", text: part(`{"partition": 0, "source_from": 10, "source_to": 5, "target_to": 0, "segments": []}`), want: "source_from 10"},
		{name: "negative source_from", text: part(`{"partition": 0, "source_from": -3, "source_to": 5, "target_to": 0, "segments": []}`), want: "negative"},
		{name: "negative target_to", text: part(`{"partition": 0, "source_from": 0, "source_to": 5, "target_to": -1, "segments": []}`), want: "negative"},
		{name: "empty segment", text: part(`{"partition": 0, "source_from": 0, "source_to": 5, "target_to": 5, "segments": [{"source": 0, "target": 0, "len": 0}]}`), want: "len 0"},
		{name: "negative segment", text: part(`{"partition": 0, "source_from": 0, "source_to": 5, "target_to": 5, "segments": [{"source": -2, "target": 0, "len": 2}]}`), want: "segment"},
		{name: "negative target", text: part(`{"partition": 0, "source_from": 0, "source_to": 5, "target_to": 5, "segments": [{"source": 0, "target": -2, "len": 2}]}`), want: "segment"},
		{name: "segment past source_to", text: part(`{"partition": 0, "source_from": 0, "source_to": 5, "target_to": 9, "segments": [{"source": 0, "target": 0, "len": 6}]}`), want: "source_to 5"},
		{name: "segment before source_from", text: part(`{"partition": 0, "source_from": 3, "source_to": 5, "target_to": 9, "segments": [{"source": 0, "target": 0, "len": 2}]}`), want: "source_from 3"},
		{name: "segment past target_to", text: part(`{"partition": 0, "source_from": 0, "source_to": 5, "target_to": 3, "segments": [{"source": 0, "target": 0, "len": 5}]}`), want: "target_to 3"},
		{name: "overflowing segment", text: part(`{"partition": 0, "source_from": 0, "source_to": 9223372036854775807, "target_to": 9223372036854775807, "segments": [{"source": 9223372036854775800, "target": 0, "len": 9223372036854775807}]}`), want: "segment"},
		{name: "overlapping source", text: part(`{"partition": 0, "source_from": 0, "source_to": 20, "target_to": 20, "segments": [{"source": 0, "target": 0, "len": 5}, {"source": 4, "target": 10, "len": 2}]}`), want: "overlap"},
		{name: "overlapping target", text: part(`{"partition": 0, "source_from": 0, "source_to": 20, "target_to": 20, "segments": [{"source": 0, "target": 0, "len": 5}, {"source": 6, "target": 3, "len": 2}]}`), want: "overlap"},
		{name: "unsorted segments", text: part(`{"partition": 0, "source_from": 0, "source_to": 20, "target_to": 20, "segments": [{"source": 10, "target": 10, "len": 2}, {"source": 0, "target": 0, "len": 5}]}`), want: "order"},
		{name: "duplicate of nothing mapped", text: part(`{"partition": 0, "source_from": 0, "source_to": 20, "target_to": 20, "segments": [{"source": 0, "target": 0, "len": 5}], "duplicates": [{"target_offset": 6, "source_offset": 9}]}`), want: "duplicate"},
		{name: "duplicate inside a segment", text: part(`{"partition": 0, "source_from": 0, "source_to": 20, "target_to": 20, "segments": [{"source": 0, "target": 0, "len": 5}], "duplicates": [{"target_offset": 2, "source_offset": 1}]}`), want: "duplicate"},
		{name: "duplicate past target_to", text: part(`{"partition": 0, "source_from": 0, "source_to": 20, "target_to": 20, "segments": [{"source": 0, "target": 0, "len": 5}], "duplicates": [{"target_offset": 20, "source_offset": 1}]}`), want: "duplicate"},
		{name: "duplicate target twice", text: part(`{"partition": 0, "source_from": 0, "source_to": 20, "target_to": 20, "segments": [{"source": 0, "target": 0, "len": 5}], "duplicates": [{"target_offset": 7, "source_offset": 1}, {"target_offset": 7, "source_offset": 2}]}`), want: "duplicate"},
		{name: "number as string", text: part(`{"partition": 0, "source_from": "0", "source_to": 5, "target_to": 5, "segments": []}`), want: "source_from"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			path := writeMap(t, tt.text)
			m, err := ReadFile(path)
			if err == nil {
				t.Fatalf("read %q: got a map %+v, want an error", tt.text, m)
			}
			if !strings.Contains(err.Error(), path) || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("error %q, want it to name the file and %q", err, tt.want)
			}
		})
	}
	t.Run("missing file", func(t *testing.T) {
		path := filepath.Join(t.TempDir(), "nope.json")
		if _, err := ReadFile(path); err == nil || !strings.Contains(err.Error(), path) {
			t.Errorf("got %v, want an error naming %s", err, path)
		}
	})
}

// FuzzReadOffsetMap: no input panics, and a map that is accepted answers every query without
// panicking and survives a round trip through Write.
func FuzzReadOffsetMap(f *testing.F) {
	f.Add([]byte(goodMap))
	f.Add([]byte(`{"version":1,"source_topic":"a","target_topic":"a","partitions":[null]}`))
	f.Add([]byte(`{"version":1,"source_topic":"a","target_topic":"a","partitions":[{"partition":0,"source_from":0,"source_to":3,"target_to":3,"segments":[{"source":0,"target":0,"len":3}]}]}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		m, err := Parse(bytes.NewReader(data), "fuzz.json")
		if err != nil {
			if !strings.Contains(err.Error(), "fuzz.json") {
				t.Fatalf("error %q does not name the file", err)
			}
			return
		}
		for _, pm := range m.Partitions {
			for _, g := range []int64{0, 1, pm.SourceFrom, pm.SourceTo, pm.SourceTo - 1, pm.SourceTo + 1, 1 << 62} {
				pm.ExactTarget(g)
			}
		}
		var b bytes.Buffer
		if err := Write(&b, m); err != nil {
			t.Fatal(err)
		}
		if _, err := Parse(&b, "again.json"); err != nil {
			t.Fatalf("an accepted map does not read back: %v", err)
		}
	})
}

// TestCompact: a compacted map keeps its last segments and answers exactly above ExactFrom,
// and not at all (Compacted) at or below it; an uncompacted map is unchanged by a larger keep.
func TestCompact(t *testing.T) {
	pm := PartitionMap{}
	// One record a segment, a marker after each: source i -> target 2i.
	for i := int64(0); i < 100; i++ {
		if _, err := pm.Extend(i, 2*i); err != nil {
			t.Fatal(err)
		}
	}
	if n := pm.Compact(200); n != 0 || len(pm.Segments) != 100 {
		t.Fatalf("Compact(200) of 100 segments dropped %d, left %d", n, len(pm.Segments))
	}
	if n := pm.Compact(10); n != 90 || len(pm.Segments) != 10 || pm.ExactFrom != 90 {
		t.Fatalf("Compact(10): dropped %d, left %d, ExactFrom %d; want 90, 10, 90", n, len(pm.Segments), pm.ExactFrom)
	}
	for g := int64(0); g <= 100; g++ {
		tr := pm.ExactTarget(g)
		if g <= 90 {
			if tr.Known || !tr.Compacted {
				t.Fatalf("E(%d) below the kept history: %+v, want Compacted and not Known", g, tr)
			}
			continue
		}
		if !tr.Known || tr.Compacted || tr.Target != 2*(g-1)+1 {
			t.Fatalf("E(%d) = %+v, want %d", g, tr, 2*(g-1)+1)
		}
	}
}
