package reconcile

import (
	"sort"
	"sync"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/kmigrate/kmigrate/offsetmap"
)

// recordCache keeps what raw fetches returned, per partition, so that groups positioned near
// each other share reads: a fetch answers with up to a megabyte of records, far more than one
// group partition needs. It knows which offset ranges it holds completely (offsets without a
// record in such a range have none: markers, compaction). It is bounded: past maxRecords the
// partition being added to is emptied first. It also keeps each record's fingerprint over
// fields, computed once when the record is added: Plan reads the same target records for many
// group partitions, and fingerprinting them again on every read was most of its CPU time.
type recordCache struct {
	mu     sync.Mutex
	parts  map[tp]*cachedPart
	total  int
	max    int
	fields offsetmap.Fields // what fps are computed over; set before the first put
}

type cachedPart struct {
	known []span        // sorted, disjoint, not adjacent
	recs  []*kgo.Record // sorted by offset, unique
	fps   []uint64      // fps[i] is the fingerprint of recs[i] over the cache's fields
}

type span struct{ from, to int64 }

// cacheMaxRecords bounds a side's cache (about 100-200 MiB for small records).
const cacheMaxRecords = 200_000

func newRecordCache() *recordCache {
	return &recordCache{parts: make(map[tp]*cachedPart), max: cacheMaxRecords, fields: offsetmap.DefaultFields}
}

// get returns the records at or after off of the known range containing off, and that range's
// end; ok is false when off is not in a known range.
func (c *recordCache) get(topic string, part int32, off int64) (recs []*kgo.Record, end int64, ok bool) {
	recs, _, end, ok = c.lookup(topic, part, off)
	return recs, end, ok
}

// lookup is get with the records' fingerprints over c.fields.
func (c *recordCache) lookup(topic string, part int32, off int64) (recs []*kgo.Record, fps []uint64, end int64, ok bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	p := c.parts[tp{topic, part}]
	if p == nil {
		return nil, nil, 0, false
	}
	end, ok = spanEnd(p.known, off)
	if !ok {
		return nil, nil, 0, false
	}
	lo := sort.Search(len(p.recs), func(j int) bool { return p.recs[j].Offset >= off })
	hi := sort.Search(len(p.recs), func(j int) bool { return p.recs[j].Offset >= end })
	return p.recs[lo:hi], p.fps[lo:hi], end, true
}

// put records that [from, to) holds exactly recs.
func (c *recordCache) put(topic string, part int32, from, to int64, recs []*kgo.Record) {
	if from >= to {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	p := partEntry(c.parts, topic, part)
	if c.total+len(recs) > c.max {
		c.total -= len(p.recs)
		*p = cachedPart{}
		if c.total+len(recs) > c.max {
			return // the other partitions fill the cache: do not keep these
		}
	}
	// Merge the records.
	before := len(p.recs)
	merged := make([]*kgo.Record, 0, len(p.recs)+len(recs))
	fps := make([]uint64, 0, len(p.recs)+len(recs))
	i, j := 0, 0
	for i < len(p.recs) || j < len(recs) {
		switch {
		case j == len(recs) || i < len(p.recs) && p.recs[i].Offset < recs[j].Offset:
			merged, fps = append(merged, p.recs[i]), append(fps, p.fps[i])
			i++
		case i == len(p.recs) || recs[j].Offset < p.recs[i].Offset:
			merged, fps = append(merged, recs[j]), append(fps, offsetmap.Fingerprint(recs[j], c.fields))
			j++
		default: // same offset
			merged, fps = append(merged, recs[j]), append(fps, offsetmap.Fingerprint(recs[j], c.fields))
			i++
			j++
		}
	}
	p.recs, p.fps = merged, fps
	c.total += len(p.recs) - before
	p.known = addSpan(p.known, from, to)
}

// partEntry returns the entry of topic/part in parts, adding an empty one when there is none.
func partEntry[P any](parts map[tp]*P, topic string, part int32) *P {
	k := tp{topic, part}
	p := parts[k]
	if p == nil {
		p = new(P)
		parts[k] = p
	}
	return p
}

// spanEnd is the end of the span of known (sorted, disjoint) that contains off; ok is false
// when none does.
func spanEnd(known []span, off int64) (end int64, ok bool) {
	i := sort.Search(len(known), func(i int) bool { return known[i].to > off })
	if i == len(known) || known[i].from > off {
		return 0, false
	}
	return known[i].to, true
}

// addSpan adds [from, to] to known (sorted, disjoint, not adjacent), merging what it touches.
func addSpan(known []span, from, to int64) []span {
	var out []span
	for _, s := range known {
		if s.to < from || s.from > to {
			out = append(out, s)
			continue
		}
		from, to = min(from, s.from), max(to, s.to)
	}
	out = append(out, span{from, to})
	sort.Slice(out, func(a, b int) bool { return out[a].from < out[b].from })
	return out
}
