package offsetmap

import (
	"encoding/binary"
	"errors"
	"sort"
)

// kmirror's offset map topic, the exact map it persists on the target (docs/design.md "The
// offset map topic"). Partition 0 of a compacted topic; all fields big-endian; STRING is an
// int16 length and bytes. One record per segment, keyed by source topic, partition and the
// segment's first source offset, so that compaction keeps the newest length of each:
//
//	key:   version INT16 = 1, topic STRING, partition INT32, sourceStart INT64
//	value: version INT16 = 1, targetStart INT64, length INT64
//
// A segment of length 0 is an origin: where mirroring of the partition began. A null value (a
// tombstone) deletes the segment of its key. Records of format version 2 carry a kind:
//
//	key:   version INT16 = 2, kind INT8, name STRING, ...
//
// kind 1 identity and kind 2 fencing scheme (kmirror's own), kind 3 history: where a
// partition's exact map starts once older segments were compacted away (exactFrom) and where
// mirroring began (sourceFrom):
//
//	key:   version INT16 = 2, kind INT8 = 3, topic STRING, partition INT32
//	value: version INT16 = 2, exactFrom INT64, sourceFrom INT64

// MapTopicName is the offset map topic kmirror keeps on the target for a flow from the
// cluster with alias source.
func MapTopicName(source string) string { return "kmirror-offsets." + source + ".internal" }

const (
	segmentVersion = 1
	kindVersion    = 2
	// HistoryKind is the kind of a history record.
	HistoryKind = 3
)

// ErrNotSegment is returned for a map topic record that is not a segment of this format.
var ErrNotSegment = errors.New("not a kmirror offset map record")

// ErrNotKind is returned for a record that is not a version-2 record of the kind asked for.
var ErrNotKind = errors.New("not a kmirror offset map record of that kind")

// SegmentKey is the key of the segment of topic/partition that starts at source offset
// sourceStart (and of its tombstone).
func SegmentKey(topic string, partition int32, sourceStart int64) []byte {
	b := binary.BigEndian.AppendUint16(make([]byte, 0, 16+len(topic)), segmentVersion)
	b = binary.BigEndian.AppendUint16(b, uint16(len(topic)))
	b = append(b, topic...)
	b = binary.BigEndian.AppendUint32(b, uint32(partition))
	return binary.BigEndian.AppendUint64(b, uint64(sourceStart))
}

// SegmentValue is the value of segment s.
func SegmentValue(s Segment) []byte {
	b := binary.BigEndian.AppendUint16(make([]byte, 0, 18), segmentVersion)
	b = binary.BigEndian.AppendUint64(b, uint64(s.Target))
	return binary.BigEndian.AppendUint64(b, uint64(s.Len))
}

// DecodeSegmentKey parses the key of a segment record or of its tombstone.
func DecodeSegmentKey(key []byte) (topic string, partition int32, sourceStart int64, err error) {
	if len(key) < 2+2+4+8 || binary.BigEndian.Uint16(key) != segmentVersion {
		return "", 0, 0, ErrNotSegment
	}
	n := int(binary.BigEndian.Uint16(key[2:]))
	if len(key) < 4+n+4+8 {
		return "", 0, 0, ErrNotSegment
	}
	return string(key[4 : 4+n]), int32(binary.BigEndian.Uint32(key[4+n:])), int64(binary.BigEndian.Uint64(key[8+n:])), nil
}

// DecodeSegment parses a segment record. Records of another format version return
// ErrNotSegment and are skipped by readers, so a newer writer never breaks an older reader.
func DecodeSegment(key, value []byte) (topic string, partition int32, s Segment, err error) {
	topic, partition, src, err := DecodeSegmentKey(key)
	if err != nil || len(value) < 18 || binary.BigEndian.Uint16(value) != segmentVersion {
		return "", 0, Segment{}, ErrNotSegment
	}
	return topic, partition, Segment{Source: src, Target: int64(binary.BigEndian.Uint64(value[2:])), Len: int64(binary.BigEndian.Uint64(value[10:]))}, nil
}

// KindKey is the key of a version-2 record of kind: version INT16 = 2, kind INT8, name STRING.
func KindKey(kind byte, name string) []byte {
	b := binary.BigEndian.AppendUint16(make([]byte, 0, 9+len(name)), kindVersion)
	b = append(b, kind)
	b = binary.BigEndian.AppendUint16(b, uint16(len(name)))
	return append(b, name...)
}

// DecodeKindKey parses a KindKey of kind: its name and the bytes after it.
func DecodeKindKey(key []byte, kind byte) (name string, rest []byte, ok bool) {
	if len(key) < 5 || binary.BigEndian.Uint16(key) != kindVersion || key[2] != kind {
		return "", nil, false
	}
	n := int(binary.BigEndian.Uint16(key[3:]))
	if len(key) < 5+n {
		return "", nil, false
	}
	return string(key[5 : 5+n]), key[5+n:], true
}

// KindValue starts the value of a version-2 record: its version.
func KindValue(capacity int) []byte {
	return binary.BigEndian.AppendUint16(make([]byte, 0, capacity), kindVersion)
}

// IsKindValue reports whether value is a version-2 value of at least n bytes.
func IsKindValue(value []byte, n int) bool {
	return len(value) >= n && binary.BigEndian.Uint16(value) == kindVersion
}

// HistoryKey is the key of the history record of topic/partition.
func HistoryKey(topic string, partition int32) []byte {
	return binary.BigEndian.AppendUint32(KindKey(HistoryKind, topic), uint32(partition))
}

// HistoryValue is the value of a history record.
func HistoryValue(exactFrom, sourceFrom int64) []byte {
	b := binary.BigEndian.AppendUint64(KindValue(18), uint64(exactFrom))
	return binary.BigEndian.AppendUint64(b, uint64(sourceFrom))
}

// DecodeHistory parses a history record.
func DecodeHistory(key, value []byte) (topic string, partition int32, exactFrom, sourceFrom int64, err error) {
	topic, rest, ok := DecodeKindKey(key, HistoryKind)
	if !ok || len(rest) < 4 || !IsKindValue(value, 18) {
		return "", 0, 0, 0, ErrNotKind
	}
	return topic, int32(binary.BigEndian.Uint32(rest)), int64(binary.BigEndian.Uint64(value[2:])), int64(binary.BigEndian.Uint64(value[10:])), nil
}

// TopicPartition names a source partition in the map topic.
type TopicPartition struct {
	Topic     string
	Partition int32
}

// PersistedPart is one partition's persisted map: its segments sorted by source offset
// (origins have Len 0) and, once older segments were compacted away, where the exact map
// starts (ExactFrom, above 0) and where mirroring began (SourceFrom).
type PersistedPart struct {
	Segments              []Segment
	ExactFrom, SourceFrom int64
}

// TopicReader gathers the map topic's records, read in offset order, into the map they
// describe: the newest record of each key wins, as compaction would decide.
type TopicReader struct {
	latest    map[TopicPartition]map[int64]Segment
	histories map[TopicPartition]PersistedPart
}

// Add takes one record (control records excluded). It returns false for a record that is
// neither a segment, its tombstone nor a history record (an identity or scheme record), for
// the caller to decode.
func (r *TopicReader) Add(key, value []byte) bool {
	if r.latest == nil {
		r.latest = map[TopicPartition]map[int64]Segment{}
		r.histories = map[TopicPartition]PersistedPart{}
	}
	if value == nil { // a tombstone of a compacted segment
		if t, p, src, err := DecodeSegmentKey(key); err == nil {
			delete(r.latest[TopicPartition{t, p}], src)
			return true
		}
		return false
	}
	if t, p, s, err := DecodeSegment(key, value); err == nil {
		k := TopicPartition{t, p}
		if r.latest[k] == nil {
			r.latest[k] = map[int64]Segment{}
		}
		r.latest[k][s.Source] = s
		return true
	}
	if t, p, exact, from, err := DecodeHistory(key, value); err == nil {
		r.histories[TopicPartition{t, p}] = PersistedPart{ExactFrom: exact, SourceFrom: from}
		return true
	}
	return false
}

// Parts returns every partition with segments, those below its history's start dropped
// (compacted, whether their tombstones were read or not).
func (r *TopicReader) Parts() map[TopicPartition]PersistedPart {
	out := map[TopicPartition]PersistedPart{}
	for k, bySource := range r.latest {
		h := r.histories[k]
		segs := make([]Segment, 0, len(bySource))
		for _, s := range bySource {
			if s.Source >= h.ExactFrom {
				segs = append(segs, s)
			}
		}
		if len(segs) == 0 {
			continue
		}
		sort.Slice(segs, func(i, j int) bool { return segs[i].Source < segs[j].Source })
		h.Segments = segs
		out[k] = h
	}
	return out
}

// PartitionMap is the persisted map as an exact offset map: its segments (origins left out),
// E(G) answered from ExactFrom on (ExactTarget says Compacted below it).
func (p PersistedPart) PartitionMap(partition int32) *PartitionMap {
	pm := &PartitionMap{Partition: partition, SourceFrom: p.SourceFrom, ExactFrom: p.ExactFrom}
	for _, s := range p.Segments {
		if s.Len == 0 {
			continue
		}
		pm.Segments = append(pm.Segments, s)
		pm.SourceTo = max(pm.SourceTo, s.Source+s.Len)
		pm.TargetTo = max(pm.TargetTo, s.Target+s.Len)
	}
	if len(p.Segments) > 0 && p.SourceFrom == 0 && p.ExactFrom == 0 {
		pm.SourceFrom = p.Segments[0].Source
	}
	return pm
}
