package mirror

import (
	"context"
	"encoding/binary"
	"fmt"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/kmigrate/kmigrate/logread"
	"github.com/kmigrate/kmigrate/offsetmap"
)

// The offset map topic's records (offsetmap's topic.go holds the format, docs/design.md says
// why): one record per segment, an origin (length 0) where mirroring of a partition began,
// tombstones for the segments the window compacts (Config.MapWindow), and the history record
// of a compacted partition, which says where its exact map starts.

// DefaultMapWindow is Config.MapWindow's default: 2,048 segments, a partition's last 2,048
// commits (34 minutes at one a second, at least 3.4 minutes at the default latency bound:
// commitPolicy.spacing); at most 55 KiB a partition in memory.
const DefaultMapWindow = 2048

func historyKey(t tp) []byte { return offsetmap.HistoryKey(t.topic, t.partition) }

func historyValue(exactFrom, sourceFrom int64) []byte {
	return offsetmap.HistoryValue(exactFrom, sourceFrom)
}

func decodeHistoryRecord(key, value []byte) (t tp, exactFrom, sourceFrom int64, err error) {
	topic, part, exactFrom, sourceFrom, err := offsetmap.DecodeHistory(key, value)
	return tp{topic, part}, exactFrom, sourceFrom, err
}

func mapKey(t tp, sourceStart int64) []byte {
	return offsetmap.SegmentKey(t.topic, t.partition, sourceStart)
}

func mapValue(s offsetmap.Segment) []byte { return offsetmap.SegmentValue(s) }

// decodeMapKey parses the key of a segment record (or of its tombstone).
func decodeMapKey(key []byte) (tp, int64, error) {
	topic, part, src, err := offsetmap.DecodeSegmentKey(key)
	return tp{topic, part}, src, err
}

// decodeMapRecord parses one offset map record (offsetmap.DecodeSegment).
func decodeMapRecord(key, value []byte) (tp, offsetmap.Segment, error) {
	topic, part, s, err := offsetmap.DecodeSegment(key, value)
	return tp{topic, part}, s, err
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
// bucket of the flow, and the one open transaction of another bucket (committing now, or its
// owner dead and its buckets not yet this process's to fence) holds the last stable offset
// below segments committed after it began. readMap reads to the high watermark and decides
// itself which transactions committed (committedOnly), so it never waits for such a
// transaction: one that is still open concerns only partitions this resume does not own.
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
// key wins, as compaction would decide. committed trusts only what a read_committed reader
// sees: records of aborted transactions (a fenced owner's) and of transactions still open
// (committedOnly) are not trusted.
func readMap(ctx context.Context, cl *kgo.Client, topic string, end int64, committed bool, group string) (persistedMap, map[string]topicIDs, int, error) {
	var segs offsetmap.TopicReader
	ids := map[string]topicIDs{}
	scheme := 0
	apply := func(r *kgo.Record) {
		if segs.Add(r.Key, r.Value) {
			return
		}
		if name, id, err := decodeIdentityRecord(r.Key, r.Value); err == nil {
			ids[name] = id
		} else if g, n, err := decodeSchemeRecord(r.Key, r.Value); err == nil && g == group {
			scheme = n
		}
	}
	txns := committedOnly{apply: apply, open: map[int64][]*kgo.Record{}}
	if end > 0 {
		err := readRange(ctx, cl, topic, 0, 0, end, false, func(r *kgo.Record) (bool, error) {
			switch {
			case committed:
				txns.add(r)
			case !r.Attrs.IsControl():
				apply(r)
			}
			return true, nil
		})
		if err != nil {
			return nil, nil, 0, fmt.Errorf("read offset map topic %s: %w", topic, err)
		}
	}
	out := persistedMap{}
	for k, p := range segs.Parts() {
		out[tp{k.Topic, k.Partition}] = persistedPart{segs: p.Segments, exactFrom: p.ExactFrom, sourceFrom: p.SourceFrom}
	}
	return out, ids, scheme, nil
}

// committedOnly passes the records of a read_uncommitted read to apply as a read_committed
// reader would see them, without waiting, as that reader does, for transactions still open:
// a record written without a transaction at once; a transaction's records at its commit
// marker, in their order; an aborted transaction's never, nor those of a transaction without
// a marker yet. A key of the map is written by one bucket's producer at a time (the next owner
// fences the last, ending its transaction, before it writes), so applying a transaction at
// its marker keeps every key's records in their order.
type committedOnly struct {
	apply func(*kgo.Record)
	open  map[int64][]*kgo.Record // the records of each producer's open transaction
}

func (c *committedOnly) add(r *kgo.Record) {
	switch {
	case r.Attrs.IsControl():
		recs := c.open[r.ProducerID]
		delete(c.open, r.ProducerID)
		if isCommitMarker(r.Key) {
			for _, x := range recs {
				c.apply(x)
			}
		}
	case r.Attrs.IsTransactional():
		c.open[r.ProducerID] = append(c.open[r.ProducerID], r)
	default:
		c.apply(r)
	}
}

// isCommitMarker says whether the key of a control record is a transaction's commit marker
// (version INT16, type INT16: 0 abort, 1 commit).
func isCommitMarker(key []byte) bool {
	return len(key) >= 4 && binary.BigEndian.Uint16(key[2:]) == 1
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
