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
// and target end offset at that moment), written before the first record is produced.
const mapFormatVersion = 1

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

// decodeMapRecord parses one offset map record. Records of another format version return
// errMapRecord and are skipped by readers, so a newer writer never breaks an older reader.
func decodeMapRecord(key, value []byte) (tp, offsetmap.Segment, error) {
	if len(key) < 2+2+4+8 || binary.BigEndian.Uint16(key) != mapFormatVersion ||
		len(value) < 18 || binary.BigEndian.Uint16(value) != mapFormatVersion {
		return tp{}, offsetmap.Segment{}, errMapRecord
	}
	n := int(binary.BigEndian.Uint16(key[2:]))
	if len(key) < 4+n+4+8 {
		return tp{}, offsetmap.Segment{}, errMapRecord
	}
	t := tp{topic: string(key[4 : 4+n]), partition: int32(binary.BigEndian.Uint32(key[4+n:]))}
	s := offsetmap.Segment{
		Source: int64(binary.BigEndian.Uint64(key[8+n:])),
		Target: int64(binary.BigEndian.Uint64(value[2:])),
		Len:    int64(binary.BigEndian.Uint64(value[10:])),
	}
	return t, s, nil
}

// persistedMap is the offset map topic's content: per partition, segments sorted by source
// offset; origins have Len 0.
type persistedMap map[tp][]offsetmap.Segment

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
	ids := map[string]topicIDs{}
	scheme := 0
	if end > 0 {
		err := readRange(ctx, cl, topic, 0, 0, end, committed, func(r *kgo.Record) (bool, error) {
			if r.Attrs.IsControl() {
				return true, nil
			}
			t, s, err := decodeMapRecord(r.Key, r.Value)
			if err != nil {
				if name, id, err := decodeIdentityRecord(r.Key, r.Value); err == nil {
					ids[name] = id
				} else if g, n, err := decodeSchemeRecord(r.Key, r.Value); err == nil && g == group {
					scheme = n
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
		segs := make([]offsetmap.Segment, 0, len(bySource))
		for _, s := range bySource {
			segs = append(segs, s)
		}
		sort.Slice(segs, func(i, j int) bool { return segs[i].Source < segs[j].Source })
		out[t] = segs
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
