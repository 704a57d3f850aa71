package reconcile

import (
	"context"
	"testing"

	"github.com/kmigrate/kmigrate/offsetmap"
)

// sparseLog is a log reader over records at the offsets of fps (a compacted log: offsets
// without a record are absent), as the planner's readers return them.
func sparseLog(fps map[int64]uint64) logReader {
	return func(_ context.Context, from, to int64, max int) ([]rec, error) {
		var out []rec
		for o := from; o < to && (max <= 0 || len(out) < max); o++ {
			if fp, ok := fps[o]; ok {
				out = append(out, rec{off: o, fp: fp})
			}
		}
		return out, nil
	}
}

// offs is the offsets [from, to).
func offs(from, to int64) []int64 {
	var s []int64
	for o := from; o < to; o++ {
		s = append(s, o)
	}
	return s
}

// TestCheckedPairAfterCleaning: kmirror's map is checked by content at s* and its copy; when
// a compacted topic's cleaner removed either, the check moves to the nearest copy both logs
// still hold, below s* or, where the cleaner left nothing below, above it, so E(G) stays the
// map's (exact: compaction keeps offsets). A nearest pair that differs, or none within reach,
// leaves the answer to content.
func TestCheckedPairAfterCleaning(t *testing.T) {
	pm := &offsetmap.PartitionMap{SourceFrom: 0, SourceTo: 100, TargetTo: 110, Segments: []offsetmap.Segment{{Source: 0, Target: 10, Len: 100}}}
	tr := pm.ExactTarget(60) // s* 59 at target 69
	if !tr.Known || tr.Target != 70 || tr.Prev != 59 || tr.PrevTarget != 69 {
		t.Fatalf("map answer %+v, want E=70 from 59->69", tr)
	}
	log := func(from, n int64, skip ...int64) map[int64]uint64 {
		m := map[int64]uint64{}
		for i := range n {
			m[from+i] = uint64(1000 + i) // record i of the partition, wherever it sits
		}
		for _, o := range skip {
			delete(m, o)
		}
		return m
	}
	for _, tc := range []struct {
		name        string
		src, dst    map[int64]uint64
		ok, cleaned bool
		at          int64 // the source offset the check settled on
	}{
		{"nothing cleaned", log(0, 100), log(10, 100), true, false, 59},
		{"the copy of s* cleaned on the target", log(0, 100), log(10, 100, 69, 68), true, true, 57},
		{"s* cleaned on the source, the next copy on the target", log(0, 100, 59), log(10, 100, 68), true, true, 57},
		{"the nearest pair differs", log(0, 100), func() map[int64]uint64 { m := log(10, 100, 69); m[68] = 7; return m }(), false, true, 58},
		{"nothing both logs hold below, a copy above", log(0, 100), log(10, 100, offs(0, 75)...), true, true, 65},
		{"nothing the target still holds", log(0, 100), log(10, 100, offs(0, 110)...), false, true, -1},
		{"the nearest copy above differs", log(0, 100), func() map[int64]uint64 { m := log(10, 100, offs(0, 75)...); m[75] = 7; return m }(), false, true, 65},
	} {
		t.Run(tc.name, func(t *testing.T) {
			pair, _, cleaned, ok, err := checkedPair(context.Background(), locateIO{src: sparseLog(tc.src), dst: sparseLog(tc.dst)}, pm, tr)
			if err != nil {
				t.Fatal(err)
			}
			if ok != tc.ok || cleaned != tc.cleaned || tc.at >= 0 && pair.Prev != tc.at {
				t.Errorf("ok %v cleaned %v at source %d, want %v %v %d", ok, cleaned, pair.Prev, tc.ok, tc.cleaned, tc.at)
			}
		})
	}
}
