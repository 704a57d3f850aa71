package reconcile

import (
	"context"
	"fmt"
	"sort"
	"sync"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/kmigrate/kmigrate/logread"
)

// This file reads what the two isolation levels see differently. An exactly-once mirror
// (kmirror, MirrorMaker 2 with exactly-once support) writes transactions to the target; a
// writer that crashed or was fenced leaves the records of an aborted transaction in the log,
// and the mirror writes those source records again after them. A read_committed consumer
// never reads them; a read_uncommitted one (the Java client's default) does, a second time.
// Plan reads such spans through logread.ReadAborted (one read_committed fetch, the aborted
// records set apart), bounded by Config.ScanLimit offsets and below the last stable offset
// (records of a transaction still open are neither counted nor guessed).

// txnView is what a read_committed read of [from, to) of one partition found.
type txnView struct {
	from, to int64 // what was read: to is below the end asked when the read stopped early
	// committed are the offsets of the records a read_committed consumer reads there (of
	// committed transactions, or written outside any); aborted those of the records of aborted
	// transactions. An offset in neither holds a marker, or a record compacted or deleted.
	committed []int64
	aborted   []int64
}

// complete reports whether the view covers [from, to).
func (v txnView) complete(to int64) bool { return v.to >= to }

// txnCache keeps, per partition, the offset ranges read with logread.ReadAborted and what
// they hold, so that groups at nearby positions share reads. It holds at most txnCacheMax
// offsets (8 bytes each): past it the partition being added to is emptied first, and what
// still does not fit is not kept.
type txnCache struct {
	mu    sync.Mutex
	parts map[tp]*txnPart
	total int
}

type txnPart struct {
	known              []span  // sorted, disjoint, not adjacent
	committed, aborted []int64 // sorted, unique
}

const txnCacheMax = 2_000_000

func newTxnCache() *txnCache { return &txnCache{parts: make(map[tp]*txnPart)} }

// lookup returns what the known range containing off holds at or after off, and its end.
func (c *txnCache) lookup(topic string, part int32, off int64) (committed, aborted []int64, end int64, ok bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	p := c.parts[tp{topic, part}]
	if p == nil {
		return nil, nil, 0, false
	}
	if end, ok = spanEnd(p.known, off); !ok {
		return nil, nil, 0, false
	}
	return within(p.committed, off, end), within(p.aborted, off, end), end, true
}

// put records that [from, to) holds exactly these committed and aborted records.
func (c *txnCache) put(topic string, part int32, from, to int64, committed, aborted []int64) {
	if from >= to {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	p := partEntry(c.parts, topic, part)
	n := len(committed) + len(aborted)
	if c.total+n > txnCacheMax {
		c.total -= len(p.committed) + len(p.aborted)
		*p = txnPart{}
		if c.total+n > txnCacheMax {
			return // the other partitions fill the cache: do not keep these
		}
	}
	before := len(p.committed) + len(p.aborted)
	p.committed, p.aborted = mergeOffsets(p.committed, committed), mergeOffsets(p.aborted, aborted)
	c.total += len(p.committed) + len(p.aborted) - before
	p.known = addSpan(p.known, from, to)
}

// within returns the offsets of the sorted offs in [from, to).
func within(offs []int64, from, to int64) []int64 {
	lo := sort.Search(len(offs), func(i int) bool { return offs[i] >= from })
	hi := sort.Search(len(offs), func(i int) bool { return offs[i] >= to })
	return offs[lo:hi:hi]
}

// mergeOffsets merges two sorted lists of unique offsets into a new one.
func mergeOffsets(a, b []int64) []int64 {
	out := make([]int64, 0, len(a)+len(b))
	i, j := 0, 0
	for i < len(a) || j < len(b) {
		switch {
		case j == len(b) || i < len(a) && a[i] < b[j]:
			out = append(out, a[i])
			i++
		case i == len(a) || b[j] < a[i]:
			out = append(out, b[j])
			j++
		default:
			out = append(out, a[i])
			i++
			j++
		}
	}
	return out
}

func recordOffsets(recs []*kgo.Record) []int64 {
	out := make([]int64, 0, len(recs))
	for _, r := range recs {
		if !r.Attrs.IsControl() {
			out = append(out, r.Offset)
		}
	}
	return out
}

// scan reads [from, to) of topic/partition under read_committed with the aborted records set
// apart (logread.ReadAborted), from the side's cache where it covers the range. With
// untilCommitted it stops after the first range holding a committed record. Callers keep to
// at or below the last stable offset; the read also ends at the end of the log (a log
// truncated since it was listed): the view then says where it stopped.
func (s *side) scan(ctx context.Context, topic string, part int32, from, to int64, untilCommitted bool) (txnView, error) {
	v := txnView{from: from, to: from}
	add := func(committed, aborted []int64, end int64) {
		v.committed = append(v.committed, within(committed, from, to)...)
		v.aborted = append(v.aborted, within(aborted, from, to)...)
		v.to = min(end, to)
	}
	done := func() bool { return v.to >= to || untilCommitted && len(v.committed) > 0 }
	for !done() {
		if c, a, end, ok := s.txn.lookup(topic, part, v.to); ok {
			add(c, a, end)
			continue
		}
		cached := false // the read reached what the cache holds: go on from it
		o := logread.Options{Cluster: s.name, Topic: topic, Partition: part, From: v.to, To: to, Short: logread.ShortStop, Leaders: s.leaders}
		err := logread.ReadAborted(ctx, s.cl, o, func(c logread.TxnChunk) (bool, error) {
			committed, aborted := recordOffsets(c.Records), recordOffsets(c.Aborted)
			s.txn.put(topic, part, c.From, c.To, committed, aborted)
			add(committed, aborted, c.To)
			if done() {
				return false, nil
			}
			_, _, _, cached = s.txn.lookup(topic, part, v.to)
			return !cached, nil
		})
		if err != nil {
			return v, err
		}
		if !cached {
			break // read to the end asked, to the first committed record, or to the end of the log
		}
	}
	return v, nil
}

// AbortedAheadNote says who reads the records of aborted transactions after E(G) again, as
// kreconcile prints it: "3 aborted records after E(G) on orders/0: consumers reading
// read_uncommitted ...". Empty when none were counted.
func (p *Partition) AbortedAheadNote() string {
	if p.AbortedAhead == nil || *p.AbortedAhead <= 0 {
		return ""
	}
	return fmt.Sprintf("%s after E(G) on %s/%d: consumers reading read_uncommitted (the Java default) will read them again after the switch; read_committed consumers will not",
		plural(int(*p.AbortedAhead), "aborted record", "aborted records"), p.TargetTopic, p.Partition)
}

// plain returns how many records [from, to) holds when the side's record cache (what the
// alignment read, read_uncommitted) covers the range and none of them is transactional: then
// a read_committed consumer reads exactly those, and no aborted record is there. ok is false
// otherwise, and the range must be read under read_committed.
func (s *side) plain(topic string, part int32, from, to int64) (n int64, ok bool) {
	for next := from; next < to; {
		recs, end, known := s.cache.get(topic, part, next)
		if !known {
			return 0, false
		}
		for _, r := range recs {
			if r.Offset >= to {
				break
			}
			if r.Attrs.IsTransactional() {
				return 0, false
			}
			n++
		}
		next = end
	}
	return n, true
}

// OffsetRange is a range of offsets, both ends included.
type OffsetRange struct {
	First int64 `json:"first"`
	Last  int64 `json:"last"`
}

func (r OffsetRange) String() string {
	if r.First == r.Last {
		return fmt.Sprint(r.First)
	}
	return fmt.Sprintf("%d..%d", r.First, r.Last)
}

// maxAbortedRanges bounds the ranges of aborted records a partition lists (the count is
// always whole).
const maxAbortedRanges = 1000

// countAborted counts the records of aborted transactions in [from, to) of topic/partition as
// it reads them, over a span of any length, and lists their first maxAbortedRanges ranges.
// reached is where the read ended: to, or the end of a log truncated since it was listed.
func (s *side) countAborted(ctx context.Context, topic string, part int32, from, to int64) (n int64, rs []OffsetRange, reached int64, err error) {
	reached = from
	o := logread.Options{Cluster: s.name, Topic: topic, Partition: part, From: from, To: to, Short: logread.ShortStop, Leaders: s.leaders}
	err = logread.ReadAborted(ctx, s.cl, o, func(c logread.TxnChunk) (bool, error) {
		for _, r := range c.Aborted {
			if r.Attrs.IsControl() || r.Offset < from || r.Offset >= to {
				continue
			}
			n++
			if k := len(rs); k > 0 && rs[k-1].Last+1 == r.Offset {
				rs[k-1].Last = r.Offset
			} else if k < maxAbortedRanges {
				rs = append(rs, OffsetRange{r.Offset, r.Offset})
			}
		}
		reached = max(reached, min(c.To, to))
		return true, nil
	})
	return n, rs, reached, err
}

// ranges groups sorted offsets into runs of consecutive offsets.
func ranges(offs []int64) []OffsetRange {
	var out []OffsetRange
	for _, o := range offs {
		if n := len(out); n > 0 && out[n-1].Last+1 == o {
			out[n-1].Last = o
			continue
		}
		out = append(out, OffsetRange{o, o})
	}
	return out
}

// dropAborted removes from recs (target records in offset order, as side.read returns them,
// read_uncommitted) the records of aborted transactions below the last stable offset: they
// copy nothing a read_committed consumer reads, and the alignment must not take them for
// copies. A window without transactional records is returned as it is, unread again.
func (p *planner) dropAborted(ctx context.Context, j job, recs []rec) ([]rec, error) {
	txn := false
	for _, r := range recs {
		if r.r != nil && r.r.Attrs.IsTransactional() {
			txn = true
			break
		}
	}
	if !txn {
		return recs, nil
	}
	lo, hi := recs[0].off, min(recs[len(recs)-1].off+1, j.dstStable)
	if lo >= hi {
		return recs, nil
	}
	v, err := p.dst.scan(ctx, j.dstTopic, j.part, lo, hi, false)
	if err != nil || len(v.aborted) == 0 {
		return recs, err
	}
	out := make([]rec, 0, len(recs))
	for _, r := range recs {
		if len(within(v.aborted, r.off, r.off+1)) == 0 {
			out = append(out, r)
		}
	}
	return out, nil
}

// settle chooses, among the offsets that are the same E(G) for a read_committed consumer, the
// one to commit. Between the copy of the last source record below G (ans.e is the offset
// after it) and the copy of the next one, a transactional target can hold markers and the
// records of aborted transactions: a read_committed consumer resumes at the same record from
// any offset there. When that span holds only markers and aborted records of ended
// transactions up to a record (or, up to the last stable offset, nothing at all with no
// transaction open), E(G) becomes the offset of that record (or the last stable offset):
// a read_uncommitted consumer then does not read the aborted records either. When a
// transaction still open lies in the span, or the span is longer than Config.ScanLimit,
// E(G) stays right after the copy. The proof says which and why.
func (p *planner) settle(ctx context.Context, j job, ans *answer) error {
	e0 := ans.e
	if e0 >= j.dstStable {
		if j.dstStable < j.dstEnd {
			ans.proof += fmt.Sprintf("; E(G) is the offset after the copy: a transaction is open from offset %d", j.dstStable)
		}
		return nil
	}
	if recs, _, ok := p.dst.cache.get(j.dstTopic, j.part, e0); ok && len(recs) > 0 && recs[0].Offset == e0 && !recs[0].Attrs.IsTransactional() {
		return nil // the alignment read a record outside any transaction at E(G): nothing to step over
	}
	to := min(j.dstStable, e0+int64(p.cfg.ScanLimit))
	v, err := p.dst.scan(ctx, j.dstTopic, j.part, e0, to, true)
	if err != nil {
		return err
	}
	next := int64(-1) // the offset of the next record a read_committed consumer reads
	switch {
	case len(v.committed) > 0:
		next = v.committed[0]
	case !v.complete(to):
		return nil // the log ended early (truncated since listed): keep the offset after the copy
	case to < j.dstStable:
		ans.proof += fmt.Sprintf("; E(G) is the offset after the copy: target offsets %d..%d hold no record a read_committed consumer reads, and the span goes on past the scan bound of %d offsets", e0, to-1, p.cfg.ScanLimit)
		return nil
	case j.dstStable < j.dstEnd:
		ans.proof += fmt.Sprintf("; E(G) is the offset after the copy: target offsets %d..%d hold no record a read_committed consumer reads, then a transaction is open at offset %d", e0, j.dstStable-1, j.dstStable)
		return nil
	default:
		next = j.dstStable
	}
	if next <= e0 {
		return nil
	}
	aborted := int64(len(within(v.aborted, e0, next)))
	what := "transaction markers or offsets a log cleaner emptied"
	if aborted > 0 {
		what = plural(int(aborted), "record", "records") + " of aborted transactions, transaction markers or offsets a log cleaner emptied"
	}

	reader := "the next record"
	if next == j.dstStable && len(v.committed) == 0 {
		reader = "the target end"
	}
	spares := fmt.Sprintf("%d is where a read_uncommitted one resumes too", next)
	if aborted > 0 {
		spares = fmt.Sprintf("%d spares a read_uncommitted one the aborted records", next)
	}
	ans.proof += fmt.Sprintf("; E(G) is %d (%s), not %d (after the copy): offsets %d..%d hold no record a read_committed consumer reads (%s), the same position for it; %s",
		next, reader, e0, e0, next-1, what, spares)
	ans.e = next
	return nil
}

// txnCounts fills what the isolation levels change for one group partition: the aborted
// records a read_uncommitted consumer reads after the position the group resumes from (E(G),
// or the target commit when it is exact), the transaction open at the last
// stable offset, and the records left to a read_committed consumer on both clusters.
func (p *planner) txnCounts(ctx context.Context, j job, part *Partition) error {
	for _, t := range []struct {
		s     *side
		topic string
	}{{p.src, j.srcTopic}, {p.dst, j.dstTopic}} {
		if td, ok, err := t.s.topic(ctx, t.topic); err != nil || !ok {
			return err // a topic that does not exist: the status says so
		} else if _, ok := td.Partitions[j.part]; !ok {
			return nil
		}
	}
	part.TargetLastStable = j.dstStable
	if j.dstStable < j.dstEnd {
		open := j.dstStable
		part.OpenTransaction = &open
	}
	var err error
	if part.TargetCommitted != nil {
		if part.TargetRecordsLeft, err = p.recordsLeft(ctx, p.dst, j.dstTopic, j.part, max(*part.TargetCommitted, j.dstStart), j.dstStable, j.dstEnd); err != nil {
			return err
		}
	}
	if part.SourceRecordsLeft, err = p.recordsLeft(ctx, p.src, j.srcTopic, j.part, max(j.g, j.srcStart), j.srcStable, j.srcEnd); err != nil {
		return err
	}
	if part.ExactTarget == nil {
		return nil
	}
	from := *part.ExactTarget
	if tc := part.TargetCommitted; tc != nil && part.Status == StatusExact {
		from = *tc // the group resumes there: Apply leaves an exact commit as it is
	}
	from = max(from, j.dstStart)
	switch {
	case from >= j.dstStable:
		zero := int64(0)
		part.AbortedAhead = &zero
	case j.dstStable-from > int64(p.cfg.ScanLimit):
		// A long span is counted as it is read, as kverify counts it: memory holds the ranges
		// listed, never the span.
		n, rs, reached, err := p.dst.countAborted(ctx, j.dstTopic, j.part, from, j.dstStable)
		if err != nil {
			return err
		}
		if reached < j.dstStable {
			part.AbortedNote = fmt.Sprintf("not counted (the target log ended at %d while reading to %d)", reached, j.dstStable)
			break
		}
		part.AbortedAhead, part.AbortedRanges = &n, rs
		if len(rs) == maxAbortedRanges {
			part.AbortedNote = fmt.Sprintf("counted in full; the first %d ranges of them are listed", maxAbortedRanges)
		}
	default:
		if _, ok := p.dst.plain(j.dstTopic, j.part, from, j.dstStable); ok {
			zero := int64(0)
			part.AbortedAhead = &zero
			break
		}
		v, err := p.dst.scan(ctx, j.dstTopic, j.part, from, j.dstStable, false)
		if err != nil {
			return err
		}
		if !v.complete(j.dstStable) {
			part.AbortedNote = fmt.Sprintf("not counted (the target log ended at %d while reading to %d)", v.to, j.dstStable)
			break
		}
		n := int64(len(v.aborted))
		part.AbortedAhead, part.AbortedRanges = &n, ranges(v.aborted)
	}
	if part.OpenTransaction != nil {
		note := fmt.Sprintf("open transaction at offset %d: its records are not counted", *part.OpenTransaction)
		if part.AbortedNote != "" {
			note = part.AbortedNote + "; " + note
		}
		part.AbortedNote = note
	}
	return nil
}

// recordsLeft counts the records a read_committed consumer at offset from (at or above the log
// start: below it, a consumer starts over at the log start) still reads on one cluster: the
// records up to the end, without markers and aborted records. It is nil when that is not
// known: a transaction still open (the last stable offset below the end: its records count
// only once it ended), a span larger than Config.ScanLimit, or a read that did not reach its
// end.
func (p *planner) recordsLeft(ctx context.Context, s *side, topic string, part int32, from, stable, end int64) (*int64, error) {
	if from >= end {
		zero := int64(0)
		return &zero, nil
	}
	if stable < end {
		return nil, nil
	}
	if stable-from > int64(p.cfg.ScanLimit) {
		return nil, nil
	}
	if n, ok := s.plain(topic, part, from, stable); ok {
		return &n, nil
	}
	v, err := s.scan(ctx, topic, part, from, stable, false)
	if err != nil || !v.complete(stable) {
		return nil, err
	}
	n := int64(len(v.committed))
	return &n, nil
}
