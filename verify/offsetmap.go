package verify

import (
	"encoding/json"
	"fmt"
	"io"
	"os"
	"sort"
)

// Segment is a run of mirrored records in which both the source and the target offset advance
// by one per record: source offsets Source..Source+Len-1 were copied to target offsets
// Target..Target+Len-1. A source gap (compaction, transaction markers) or a target gap ends a
// segment.
type Segment struct {
	Source int64 `json:"source"`
	Target int64 `json:"target"`
	Len    int64 `json:"len"`
}

// Copy is one extra target copy of a source record that was already matched earlier (an
// at-least-once replay).
type Copy struct {
	Target int64 `json:"target_offset"`
	Source int64 `json:"source_offset"`
}

// PartitionMap is the exact offset map M of one partition: where every mirrored source record
// landed on the target. Segments and Duplicates are sorted by source offset (Duplicates by
// source, then target).
type PartitionMap struct {
	Partition int32 `json:"partition"`
	// SourceFrom and SourceTo bound what was aligned: every source offset in [SourceFrom,
	// SourceTo) was examined, so a source offset in that range that is in no segment is known
	// not to be on the target (missing, or a gap in the source log).
	SourceFrom int64 `json:"source_from"`
	SourceTo   int64 `json:"source_to"`
	// TargetTo is the target offset just past the last target record examined.
	TargetTo   int64     `json:"target_to"`
	Segments   []Segment `json:"segments"`
	Duplicates []Copy    `json:"duplicates,omitempty"`
}

// OffsetMap is the offset map of a topic: the file `kverify diff --offset-map` writes and
// `kreconcile groups --offset-map` reads (JSON, format version 1, documented in
// verify/doc.go).
type OffsetMap struct {
	Version     int             `json:"version"`
	SourceTopic string          `json:"source_topic"`
	TargetTopic string          `json:"target_topic"`
	Partitions  []*PartitionMap `json:"partitions"`
}

// OffsetMapVersion is the format version written to and accepted from offset map files.
const OffsetMapVersion = 1

// Partition returns the map of partition p, or nil.
func (m *OffsetMap) Partition(p int32) *PartitionMap {
	for _, pm := range m.Partitions {
		if pm.Partition == p {
			return pm
		}
	}
	return nil
}

// Translation is the answer of ExactTarget for one committed source offset.
type Translation struct {
	// Known is false when the answer is not yet determined (the mirror has not reached G):
	// the caller must report "pending" and never guess.
	Known bool
	// Target is E(G), valid when Known.
	Target int64
	// Prev is the largest mirrored source offset below G (s*), and PrevTarget the last
	// target copy of it; HasPrev is false when no mirrored record is below G.
	HasPrev    bool
	Prev       int64
	PrevTarget int64
}

// ExactTarget computes E(G) as DESIGN.md defines it:
//
//	E(G) = 1 + (the last target copy of s*), s* the largest mirrored source offset below G;
//	if no such record exists, the target offset of the first mirrored record at or above G;
//	if G is beyond what has been aligned, unknown.
//
// When G lies past every mirrored record but within the aligned range (the records between
// were missing on the target), the answer is still exact: 1 + the copy of s*.
func (pm *PartitionMap) ExactTarget(g int64) Translation {
	if g > pm.SourceTo {
		return Translation{}
	}
	// Index of the first segment whose start is >= g.
	i := sort.Search(len(pm.Segments), func(i int) bool { return pm.Segments[i].Source >= g })
	if i > 0 {
		s := pm.Segments[i-1] // starts below g
		prev := s.Source + s.Len - 1
		if prev >= g {
			prev = g - 1
		}
		t := s.Target + (prev - s.Source)
		if last, ok := pm.lastCopy(prev); ok && last > t {
			t = last
		}
		return Translation{Known: true, Target: t + 1, HasPrev: true, Prev: prev, PrevTarget: t}
	}
	if i < len(pm.Segments) {
		return Translation{Known: true, Target: pm.Segments[i].Target}
	}
	// Nothing is mirrored at or around G but the aligned range covers G (g <= SourceTo): the
	// group's next record will land at or after the target end examined, so TargetTo is never
	// above E(G).
	return Translation{Known: true, Target: pm.TargetTo}
}

// lastCopy returns the highest target offset among the duplicate copies of source offset s.
func (pm *PartitionMap) lastCopy(s int64) (int64, bool) {
	j := sort.Search(len(pm.Duplicates), func(j int) bool { return pm.Duplicates[j].Source >= s })
	var best int64 = -1
	for ; j < len(pm.Duplicates) && pm.Duplicates[j].Source == s; j++ {
		best = max(best, pm.Duplicates[j].Target)
	}
	return best, best >= 0
}

// WriteOffsetMap writes m as indented JSON.
func WriteOffsetMap(w io.Writer, m *OffsetMap) error {
	m.Version = OffsetMapVersion
	enc := json.NewEncoder(w)
	enc.SetIndent("", " ")
	return enc.Encode(m)
}

// ReadOffsetMap reads an offset map file written by WriteOffsetMap.
func ReadOffsetMap(path string) (*OffsetMap, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("open offset map: %w", err)
	}
	defer f.Close()
	var m OffsetMap
	if err := json.NewDecoder(f).Decode(&m); err != nil {
		return nil, fmt.Errorf("read offset map %s: %w", path, err)
	}
	if m.Version != OffsetMapVersion {
		return nil, fmt.Errorf("offset map %s has version %d, this kverify reads version %d: write it again with this kverify", path, m.Version, OffsetMapVersion)
	}
	for _, pm := range m.Partitions {
		sort.Slice(pm.Segments, func(i, j int) bool { return pm.Segments[i].Source < pm.Segments[j].Source })
		sort.Slice(pm.Duplicates, func(i, j int) bool {
			a, b := pm.Duplicates[i], pm.Duplicates[j]
			return a.Source < b.Source || a.Source == b.Source && a.Target < b.Target
		})
	}
	return &m, nil
}
