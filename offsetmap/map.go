package offsetmap

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"slices"
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
	// ExactFrom, when above SourceFrom, is where the exact history starts: the segments below
	// it were compacted away (Compact), and ExactTarget answers a G at or below it with a
	// Translation that is not Known and is Compacted. Not part of the file format: a
	// compacted map is kmirror's in-memory one.
	ExactFrom int64 `json:"-"`
}

// Compact keeps the last keep segments (at least 1) and drops the others, with the
// duplicates of the source offsets they held, and returns how many it dropped. ExactFrom moves
// to the first segment kept: E(G) for a G at or below it needs the dropped history, so it is
// no longer answered (Translation.Compacted).
func (pm *PartitionMap) Compact(keep int) int {
	keep = max(keep, 1)
	n := len(pm.Segments) - keep
	if n <= 0 {
		return 0
	}
	pm.ExactFrom = pm.Segments[n].Source
	pm.Segments = slices.Clone(pm.Segments[n:]) // a new array: the dropped ones are freed
	i := sort.Search(len(pm.Duplicates), func(i int) bool { return pm.Duplicates[i].Source >= pm.ExactFrom })
	pm.Duplicates = slices.Clone(pm.Duplicates[i:])
	return n
}

// TopicMap is the offset map of a topic: the file `kverify diff --offset-map` writes and
// `kreconcile groups --offset-map` reads (JSON, format version 1, documented in
// verify/doc.go).
type TopicMap struct {
	Version     int             `json:"version"`
	SourceTopic string          `json:"source_topic"`
	TargetTopic string          `json:"target_topic"`
	Partitions  []*PartitionMap `json:"partitions"`
}

// Version is the format version written to and accepted from offset map files.
const Version = 1

// Partition returns the map of partition p, or nil.
func (m *TopicMap) Partition(p int32) *PartitionMap {
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
	// Compacted is set, with Known false, when G's answer lies in history a compacted map
	// dropped (PartitionMap.Compact): it is found by content instead (kreconcile groups).
	Compacted bool
}

// ExactTarget computes E(G) as docs/design.md "What exact means: E(G)" defines it:
//
//	E(G) = 1 + (the last target copy of s*), s* the largest mirrored source offset below G;
//	if no such record exists, the target offset of the first mirrored record at or above G;
//	if G is beyond what has been aligned, unknown.
//
// When G lies past every mirrored record but within the aligned range (the records between
// were missing on the target), the answer is still exact: 1 + the copy of s*.
//
// In a compacted map (ExactFrom above SourceFrom) a G at or below ExactFrom is not answered:
// its s* lies in the dropped history. The Translation is then Compacted and not Known.
func (pm *PartitionMap) ExactTarget(g int64) Translation {
	if g > pm.SourceTo {
		return Translation{}
	}
	if pm.ExactFrom > pm.SourceFrom && g <= pm.ExactFrom {
		return Translation{Compacted: true}
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

// Copies returns the target offsets of every copy of source offset s the map holds (its
// segment copy, then its duplicates), in target order; none when s is not mapped.
func (pm *PartitionMap) Copies(s int64) []int64 {
	i, ok := pm.segmentOf(s, func(sg Segment) int64 { return sg.Source })
	if !ok {
		return nil
	}
	out := []int64{pm.Segments[i].Target + (s - pm.Segments[i].Source)}
	j := sort.Search(len(pm.Duplicates), func(j int) bool { return pm.Duplicates[j].Source >= s })
	for ; j < len(pm.Duplicates) && pm.Duplicates[j].Source == s; j++ {
		out = append(out, pm.Duplicates[j].Target)
	}
	slices.Sort(out)
	return out
}

// TargetFrom is the first target offset the map holds a copy at, or TargetTo when none.
func (pm *PartitionMap) TargetFrom() int64 {
	lo := pm.TargetTo
	for _, sg := range pm.Segments {
		lo = min(lo, sg.Target)
	}
	for _, c := range pm.Duplicates {
		lo = min(lo, c.Target)
	}
	return lo
}

// CopiesIn returns every copy the map holds whose target offset lies in [from, to): one per
// record of the segments that reach into the range, then the duplicates, as (target, source)
// pairs in no particular order.
func (pm *PartitionMap) CopiesIn(from, to int64) []Copy {
	var out []Copy
	for _, sg := range pm.Segments {
		lo, hi := max(from, sg.Target), min(to, sg.Target+sg.Len)
		for t := lo; t < hi; t++ {
			out = append(out, Copy{Target: t, Source: sg.Source + (t - sg.Target)})
		}
	}
	for _, c := range pm.Duplicates {
		if c.Target >= from && c.Target < to {
			out = append(out, c)
		}
	}
	return out
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

// Growth says how Extend placed a copy.
type Growth uint8

const (
	// Extended: the copy continues the last segment (both offsets advanced by one).
	Extended Growth = iota + 1
	// NewSegment: the copy starts a segment of one record (a gap on either side, or the first
	// copy of the map).
	NewSegment
	// Replayed: the source record was already mapped; the copy is a Copy in Duplicates.
	Replayed
)

// Extend is the one way a map grows: source offset s was copied at target offset t. Copies
// arrive in target order, so t must be at or above TargetTo (it was not examined yet). A
// source offset past the last mapped one extends the last segment when both offsets advance
// by one from its end, else it starts a new segment. A source offset that a segment already
// maps is a replay: the copy joins Duplicates, which stay sorted by source, then target. Extend
// keeps the extents covering the copy (SourceFrom at most s, SourceTo past s, TargetTo past t).
//
// A copy that breaks the order (t below TargetTo, or s below the last mapped source offset
// without being mapped) is an error naming both offsets and leaves the map unchanged: the map
// never claims a copy it cannot place.
func (pm *PartitionMap) Extend(s, t int64) (Growth, error) {
	if s < 0 || t < 0 {
		return 0, fmt.Errorf("partition %d: copy of source offset %d at target offset %d: offsets are never negative", pm.Partition, s, t)
	}
	if t < pm.TargetTo {
		return 0, fmt.Errorf("partition %d: copy of source offset %d at target offset %d, below target offset %d already examined: copies are mapped in target order", pm.Partition, s, t, pm.TargetTo)
	}
	var g Growth
	n := len(pm.Segments)
	switch end := pm.sourceEnd(); {
	case s >= end && n > 0 && s == end && t == pm.Segments[n-1].Target+pm.Segments[n-1].Len:
		pm.Segments[n-1].Len++
		g = Extended
	case s >= end:
		pm.Segments = append(pm.Segments, Segment{Source: s, Target: t, Len: 1})
		g = NewSegment
	default:
		if _, ok := pm.segmentOf(s, func(sg Segment) int64 { return sg.Source }); !ok {
			return 0, fmt.Errorf("partition %d: copy of source offset %d at target offset %d: the source offset was never copied before and is below the last mapped source offset %d: new records are mapped in source order", pm.Partition, s, t, end-1)
		}
		c := Copy{Target: t, Source: s}
		i := len(pm.Duplicates)
		if i > 0 && (pm.Duplicates[i-1].Source > s) {
			// t is above every target so far, so among copies of s it sorts last.
			i = sort.Search(len(pm.Duplicates), func(j int) bool { return pm.Duplicates[j].Source > s })
		}
		pm.Duplicates = slices.Insert(pm.Duplicates, i, c)
		g = Replayed
	}
	pm.SourceFrom = min(pm.SourceFrom, s)
	pm.SourceTo = max(pm.SourceTo, s+1)
	pm.TargetTo = t + 1
	return g, nil
}

// sourceEnd is the source offset just past the last segment, or 0 without segments.
func (pm *PartitionMap) sourceEnd() int64 {
	if n := len(pm.Segments); n > 0 {
		return pm.Segments[n-1].Source + pm.Segments[n-1].Len
	}
	return 0
}

// Write writes m as indented JSON.
func Write(w io.Writer, m *TopicMap) error {
	m.Version = Version
	enc := json.NewEncoder(w)
	enc.SetIndent("", " ")
	return enc.Encode(m)
}

// ReadFile reads an offset map file written by Write. A file that is not exactly
// one version-1 map, or whose map is not consistent, is an error naming the file and what is
// wrong (see Parse).
func ReadFile(path string) (*TopicMap, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("open offset map: %w", err)
	}
	defer f.Close()
	return Parse(f, path)
}

// Parse reads one offset map from r; name is the file it comes from, for the errors.
// It accepts only what Write writes: a single JSON object of version 1 with no unknown
// field and nothing after it, partitions each listed once, and ranges and segments that are
// consistent (non-negative, within [source_from, source_to) and below target_to, in
// increasing and non-overlapping source and target order; duplicates are copies of mapped
// source offsets at target offsets no segment covers). A map that breaks any of these would
// give wrong answers, so it is refused rather than used.
func Parse(r io.Reader, name string) (*TopicMap, error) {
	bad := func(format string, args ...any) error {
		return fmt.Errorf("offset map %s: %s: write it again with kverify diff --offset-map", name, fmt.Sprintf(format, args...))
	}
	dec := json.NewDecoder(r)
	dec.DisallowUnknownFields()
	var m TopicMap
	if err := dec.Decode(&m); err != nil {
		var syn *json.SyntaxError
		var typ *json.UnmarshalTypeError
		switch {
		case errors.Is(err, io.EOF):
			return nil, bad("the file is empty")
		case errors.Is(err, io.ErrUnexpectedEOF):
			return nil, bad("the file is truncated")
		case errors.As(err, &syn):
			return nil, bad("not JSON at byte %d: %v", syn.Offset, err)
		case errors.As(err, &typ) && typ.Field == "":
			return nil, bad("not JSON of an offset map: a %s where an object is expected", typ.Value)
		case errors.As(err, &typ):
			return nil, bad("field %s: a %s where a %s is expected", typ.Field, typ.Value, typ.Type)
		}
		return nil, bad("%v", err)
	}
	if _, err := dec.Token(); !errors.Is(err, io.EOF) {
		return nil, bad("unexpected data after the offset map (at byte %d)", dec.InputOffset())
	}
	if m.Version != Version {
		return nil, fmt.Errorf("offset map %s has version %d, this kverify reads version %d: write it again with this kverify", name, m.Version, Version)
	}
	if m.SourceTopic == "" || m.TargetTopic == "" {
		return nil, bad("no source_topic or target_topic")
	}
	if m.Partitions == nil {
		return nil, bad("no partitions list")
	}
	seen := make(map[int32]bool, len(m.Partitions))
	for i, pm := range m.Partitions {
		if pm == nil {
			return nil, bad("partitions[%d] is null", i)
		}
		if seen[pm.Partition] {
			return nil, bad("partition %d is listed twice", pm.Partition)
		}
		seen[pm.Partition] = true
		if err := pm.validate(); err != nil {
			return nil, bad("topic %q partition %d: %v", m.SourceTopic, pm.Partition, err)
		}
	}
	return &m, nil
}

// validate checks the invariants ExactTarget relies on (see Parse).
func (pm *PartitionMap) validate() error {
	switch {
	case pm.Partition < 0:
		return fmt.Errorf("partition %d is negative", pm.Partition)
	case pm.SourceFrom < 0 || pm.SourceTo < 0 || pm.TargetTo < 0:
		return fmt.Errorf("negative offset (source_from %d, source_to %d, target_to %d)", pm.SourceFrom, pm.SourceTo, pm.TargetTo)
	case pm.SourceFrom > pm.SourceTo:
		return fmt.Errorf("source_from %d is after source_to %d", pm.SourceFrom, pm.SourceTo)
	}
	for i, s := range pm.Segments {
		switch {
		case s.Len <= 0:
			return fmt.Errorf("segment %d has len %d: a segment holds at least one record", i, s.Len)
		case s.Source < 0 || s.Target < 0:
			return fmt.Errorf("segment %d starts at a negative offset (source %d, target %d)", i, s.Source, s.Target)
		case s.Source < pm.SourceFrom:
			return fmt.Errorf("segment %d starts at source %d, before source_from %d", i, s.Source, pm.SourceFrom)
		case s.Len > pm.SourceTo-s.Source:
			return fmt.Errorf("segment %d (source %d, len %d) ends past source_to %d", i, s.Source, s.Len, pm.SourceTo)
		case s.Len > pm.TargetTo-s.Target:
			return fmt.Errorf("segment %d (target %d, len %d) ends past target_to %d", i, s.Target, s.Len, pm.TargetTo)
		}
		if i > 0 {
			p := pm.Segments[i-1]
			if s.Source < p.Source {
				return fmt.Errorf("segments %d and %d are not in source order", i-1, i)
			}
			if s.Source < p.Source+p.Len || s.Target < p.Target+p.Len {
				return fmt.Errorf("segments %d and %d overlap (source %d+%d and %d, target %d+%d and %d)", i-1, i, p.Source, p.Len, s.Source, p.Target, p.Len, s.Target)
			}
		}
	}
	targets := make(map[int64]bool, len(pm.Duplicates))
	for i, d := range pm.Duplicates {
		if i > 0 {
			p := pm.Duplicates[i-1]
			if d.Source < p.Source || d.Source == p.Source && d.Target <= p.Target {
				return fmt.Errorf("duplicates %d and %d are not in source, then target order", i-1, i)
			}
		}
		if d.Target < 0 || d.Target >= pm.TargetTo {
			return fmt.Errorf("duplicate %d is at target offset %d, outside [0, target_to %d)", i, d.Target, pm.TargetTo)
		}
		if targets[d.Target] {
			return fmt.Errorf("duplicate %d: target offset %d is listed twice", i, d.Target)
		}
		targets[d.Target] = true
		if _, ok := pm.segmentOf(d.Source, func(s Segment) int64 { return s.Source }); !ok {
			return fmt.Errorf("duplicate %d repeats source offset %d, which no segment maps", i, d.Source)
		}
		if _, ok := pm.segmentOf(d.Target, func(s Segment) int64 { return s.Target }); ok {
			return fmt.Errorf("duplicate %d is at target offset %d, which a segment already maps", i, d.Target)
		}
	}
	return nil
}

// segmentOf returns the index of the segment whose range (by start, Source or Target; both
// increase with the index) holds offset o.
func (pm *PartitionMap) segmentOf(o int64, start func(Segment) int64) (int, bool) {
	i := sort.Search(len(pm.Segments), func(i int) bool { return start(pm.Segments[i]) > o }) - 1
	if i < 0 || o-start(pm.Segments[i]) >= pm.Segments[i].Len {
		return 0, false
	}
	return i, true
}
