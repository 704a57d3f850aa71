package mirror

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"sort"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/kmigrate/kmigrate/logread"
	"github.com/kmigrate/kmigrate/offsetmap"
)

// The offset map topic's records (documented in docs/design.md): one record per segment, keyed by
// source topic, partition and the segment's first source offset, so that compaction keeps the
// newest length of each segment. All fields big-endian; STRING is an int16 length and bytes.
//
//	key:   version INT16 = 1, topic STRING, partition INT32, sourceStart INT64
//	value: version INT16 = 1, targetStart INT64, length INT64
//
// A record with length 0 is an origin: where mirroring of the partition began (source offset
// and target end offset at that moment), written before the first record is produced. A
// record with a null value (a tombstone) deletes the segment of its key: the map keeps a
// window of segments per partition (Config.MapWindow) and tombstones those it compacts, so
// that the topic's compaction removes them.
//
// The history record of a partition says where its exact map starts once older segments were
// compacted away (exactFrom, the first kept segment's source offset) and where mirroring
// began (sourceFrom). Readers drop every segment below exactFrom, tombstoned or not.
//
//	key:   version INT16 = 2, kind INT8 = 3, topic STRING, partition INT32
//	value: version INT16 = 2, exactFrom INT64, sourceFrom INT64
const mapFormatVersion = 1

// DefaultMapWindow is Config.MapWindow's default: 2,048 segments, about 34 minutes of a
// partition committing every second; at most 55 KiB a partition in memory.
const DefaultMapWindow = 2048

const historyKind = 3

func historyKey(t tp) []byte {
	return binary.BigEndian.AppendUint32(kindKey(historyKind, t.topic), uint32(t.partition))
}

func historyValue(exactFrom, sourceFrom int64) []byte {
	b := binary.BigEndian.AppendUint16(make([]byte, 0, 18), identityVersion)
	b = binary.BigEndian.AppendUint64(b, uint64(exactFrom))
	return binary.BigEndian.AppendUint64(b, uint64(sourceFrom))
}

var errHistoryRecord = errors.New("not a kmirror history record")

func decodeHistoryRecord(key, value []byte) (t tp, exactFrom, sourceFrom int64, err error) {
	topic, rest, ok := decodeKindKey(key, historyKind)
	if !ok || len(rest) < 4 || len(value) < 18 || binary.BigEndian.Uint16(value) != identityVersion {
		return tp{}, 0, 0, errHistoryRecord
	}
	t = tp{topic: topic, partition: int32(binary.BigEndian.Uint32(rest))}
	return t, int64(binary.BigEndian.Uint64(value[2:])), int64(binary.BigEndian.Uint64(value[10:])), nil
}

func mapKey(t tp, sourceStart int64) []byte {
	b := binary.BigEndian.AppendUint16(make([]byte, 0, 16+len(t.topic)), mapFormatVersion)
	b = binary.BigEndian.AppendUint16(b, uint16(len(t.topic)))
	b = append(b, t.topic...)
	b = binary.BigEndian.AppendUint32(b, uint32(t.partition))
	return binary.BigEndian.AppendUint64(b, uint64(sourceStart))
}

func mapValue(s offsetmap.Segment) []byte {
	b := binary.BigEndian.AppendUint16(make([]byte, 0, 18), mapFormatVersion)
	b = binary.BigEndian.AppendUint64(b, uint64(s.Target))
	return binary.BigEndian.AppendUint64(b, uint64(s.Len))
}

var errMapRecord = errors.New("not a kmirror offset map record")

// decodeMapKey parses the key of a segment record (or of its tombstone).
func decodeMapKey(key []byte) (tp, int64, error) {
	if len(key) < 2+2+4+8 || binary.BigEndian.Uint16(key) != mapFormatVersion {
		return tp{}, 0, errMapRecord
	}
	n := int(binary.BigEndian.Uint16(key[2:]))
	if len(key) < 4+n+4+8 {
		return tp{}, 0, errMapRecord
	}
	t := tp{topic: string(key[4 : 4+n]), partition: int32(binary.BigEndian.Uint32(key[4+n:]))}
	return t, int64(binary.BigEndian.Uint64(key[8+n:])), nil
}

// decodeMapRecord parses one offset map record. Records of another format version return
// errMapRecord and are skipped by readers, so a newer writer never breaks an older reader.
func decodeMapRecord(key, value []byte) (tp, offsetmap.Segment, error) {
	t, src, err := decodeMapKey(key)
	if err != nil || len(value) < 18 || binary.BigEndian.Uint16(value) != mapFormatVersion {
		return tp{}, offsetmap.Segment{}, errMapRecord
	}
	s := offsetmap.Segment{
		Source: src,
		Target: int64(binary.BigEndian.Uint64(value[2:])),
		Len:    int64(binary.BigEndian.Uint64(value[10:])),
	}
	return t, s, nil
}

// persistedPart is one partition's persisted map: its segments sorted by source offset
// (origins have Len 0) and, once older segments were compacted away, where the exact map
// starts (exactFrom, above 0) and where mirroring began (sourceFrom).
type persistedPart struct {
	segs                  []offsetmap.Segment
	exactFrom, sourceFrom int64
}

// persistedMap is the offset map topic's content by partition.
type persistedMap map[tp]persistedPart

// mapEnd is where a resume reads the offset map topic to: its high watermark, listed after the
// partitions being resumed were fenced, so that every segment their earlier owners committed
// is below it. Not the last stable offset: the map topic is shared by the transactions of every
// partition of the flow, and the one open transaction of another partition (committing now,
// or its owner stalled) holds the last stable offset below segments committed after it began.
// Reading to the high watermark with read_committed waits for such transactions to end
// (commit, or abort by the broker at the transaction timeout) instead of missing what lies
// above them.
func mapEnd(ctx context.Context, adm *kadm.Client, topic string) (int64, error) {
	ends, err := adm.ListEndOffsets(ctx, topic)
	if err != nil {
		return 0, fmt.Errorf("list end offset of offset map topic %s: %w", topic, err)
	}
	end, err := offsetOf(ends, topic, 0)
	if err != nil {
		return 0, fmt.Errorf("offset map topic %s: %w", topic, err)
	}
	return end, nil
}

// readMap reads the whole offset map topic (partition 0) up to its current end, in one pass:
// the segments, the identity records (identity.go) by source topic, and the bucket count of
// group's fencing scheme record (bucket.go; 0 when there is none). The newest record of each
// key wins, as compaction would decide. committed reads with read_committed: records of
// aborted transactions (a fenced owner's) are not trusted.
func readMap(ctx context.Context, cl *kgo.Client, topic string, end int64, committed bool, group string) (persistedMap, map[string]topicIDs, int, error) {
	latest := map[tp]map[int64]offsetmap.Segment{}
	histories := map[tp]persistedPart{} // exactFrom and sourceFrom of compacted partitions
	ids := map[string]topicIDs{}
	scheme := 0
	if end > 0 {
		err := readRange(ctx, cl, topic, 0, 0, end, committed, func(r *kgo.Record) (bool, error) {
			if r.Attrs.IsControl() {
				return true, nil
			}
			if r.Value == nil { // a tombstone of a compacted segment
				if t, src, err := decodeMapKey(r.Key); err == nil {
					delete(latest[t], src)
				}
				return true, nil
			}
			t, s, err := decodeMapRecord(r.Key, r.Value)
			if err != nil {
				if name, id, err := decodeIdentityRecord(r.Key, r.Value); err == nil {
					ids[name] = id
				} else if g, n, err := decodeSchemeRecord(r.Key, r.Value); err == nil && g == group {
					scheme = n
				} else if t, exact, from, err := decodeHistoryRecord(r.Key, r.Value); err == nil {
					histories[t] = persistedPart{exactFrom: exact, sourceFrom: from}
				}
				return true, nil
			}
			if latest[t] == nil {
				latest[t] = map[int64]offsetmap.Segment{}
			}
			latest[t][s.Source] = s
			return true, nil
		})
		if err != nil {
			return nil, nil, 0, fmt.Errorf("read offset map topic %s: %w", topic, err)
		}
	}
	out := persistedMap{}
	for t, bySource := range latest {
		h := histories[t]
		segs := make([]offsetmap.Segment, 0, len(bySource))
		for _, s := range bySource {
			// Below the history's start: compacted, whether its tombstone was read or not.
			if s.Source >= h.exactFrom {
				segs = append(segs, s)
			}
		}
		if len(segs) == 0 {
			continue
		}
		sort.Slice(segs, func(i, j int) bool { return segs[i].Source < segs[j].Source })
		h.segs = segs
		out[t] = h
	}
	return out, ids, scheme, nil
}

// readRange calls fn for every record of topic/partition with offset in [from, end), in
// order, control records included, until fn returns false. committed reads with
// read_committed (aborted records are skipped). It returns when the position reaches end
// (offsets past the last record, markers or compacted gaps, need no record) or fn stopped;
// a log that ends before end, listed by the caller, is an error. It reads with logread's raw
// fetches through cl, any client of the cluster (the engine's own: no client per read).
func readRange(ctx context.Context, cl *kgo.Client, topic string, partition int32, from, end int64, committed bool, fn func(*kgo.Record) (bool, error)) error {
	return readRangeWith(ctx, cl, nil, topic, partition, from, end, committed, fn)
}

// readRangeWith is readRange with the leaders of cl's cluster looked up once for many reads
// (leaders nil: each read asks the metadata itself).
func readRangeWith(ctx context.Context, cl *kgo.Client, leaders *logread.Leaders, topic string, partition int32, from, end int64, committed bool, fn func(*kgo.Record) (bool, error)) error {
	if from >= end {
		return nil
	}
	return logread.Each(ctx, cl, logread.Options{Topic: topic, Partition: partition, From: from, To: end, Committed: committed, Controls: true, Leaders: leaders}, fn)
}
