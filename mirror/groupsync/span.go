package groupsync

import (
	"context"
	"fmt"
	"sync"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"

	"github.com/kmigrate/kmigrate/logread"
	"github.com/kmigrate/kmigrate/offsetmap"
)

// This file chooses, among the target offsets that are all E(G) for a read_committed consumer,
// the one to write, as kreconcile does (docs/design.md, "What exact means: E(G)"). kmirror
// writes the target in transactions: right after the last copy of s* (the Translator's E(G),
// here e0) come the transaction's marker and, after a writer was killed or fenced, the records
// of aborted transactions and their markers. A read_committed consumer resumes at the same
// record from every offset of that span; a read_uncommitted one (the Java default) reads the
// aborted records in it. The sync writes the span's end when the span holds only markers and
// records of ended aborted transactions up to the next record a read_committed consumer reads
// (or up to the last stable offset, nothing following), and e0 when a transaction still open
// lies in it, the span goes on past spanLimit offsets, or the target could not be read.

// spanLimit bounds how far past e0 the target is read: past it, e0 is kept. It is
// kreconcile's default --scan-limit, so that both choose the same offset.
const spanLimit = 10_000

// spanResponses bounds the fetch responses read for one span in one pass (each at most 1 MiB
// unless a single batch is larger): a longer span is read on at the next pass.
const spanResponses = 4

// spanTimeout bounds each read of the target's log and each listing of its offsets, so that
// a slow target keeps e0 for this pass rather than holding the pass up.
const spanTimeout = 5 * time.Second

// span is what the target holds from e0, 1 + the last copy of s*, as far as it was read.
type span struct {
	e0 int64
	// end: no record a read_committed consumer reads lies in [e0, end), so every offset of
	// [e0, end] is the same position for it.
	end int64
	// closed: end is the offset to write: the next record a read_committed consumer reads,
	// or the last stable offset with no transaction open and nothing after it yet.
	closed bool
	// final: what was read no longer changes (a record at end, or spanLimit reached), so
	// later passes do not read again.
	final bool
	// aborted counts the records of aborted transactions in [e0, end).
	aborted int
	// open is set when a transaction still open on the target (from offset openAt, the last
	// stable offset, below the high watermark) lies in the span or right after it.
	open   bool
	openAt int64
	// unread says why the span was not read in this pass (e0 is kept).
	unread string
}

// exact is a span of one offset: E(G) is e, with nothing to step over.
func exact(e int64) span { return span{e0: e, end: e, final: true} }

// choice is the offset to write for E(G).
func (sp span) choice() int64 {
	if sp.closed {
		return sp.end
	}
	return sp.e0
}

// holds reports whether v is an offset of the span: the same position as E(G) for a
// read_committed consumer.
func (sp span) holds(v int64) bool { return v >= sp.e0 && v <= sp.end }

// reason explains a choice other than e0, or why e0 was kept although the span was read.
func (sp span) reason() string {
	what := "transaction markers"
	if sp.aborted > 0 {
		what = fmt.Sprintf("transaction markers and %d records of aborted transactions", sp.aborted)
		if sp.aborted == 1 {
			what = "transaction markers and 1 record of an aborted transaction"
		}
	}
	switch {
	case sp.closed && sp.end > sp.e0:
		return fmt.Sprintf("E(G) is %d, not %d right after the copy: target offsets %d..%d hold only %s, the same position for a read_committed consumer; %d spares a read_uncommitted one the aborted records",
			sp.end, sp.e0, sp.e0, sp.end-1, what, sp.end)
	case sp.open:
		return fmt.Sprintf("E(G) is %d, right after the copy: a transaction is open on the target from offset %d", sp.e0, sp.openAt)
	case sp.final && !sp.closed && sp.end > sp.e0:
		return fmt.Sprintf("E(G) is %d, right after the copy: target offsets %d..%d hold no record a read_committed consumer reads, and the span goes on past %d offsets", sp.e0, sp.e0, sp.end-1, spanLimit)
	case sp.unread != "":
		return fmt.Sprintf("E(G) is %d, right after the copy: %s", sp.e0, sp.unread)
	}
	return ""
}

type spanKey struct {
	topic     string // target topic
	partition int32
	e0        int64
}

// spanEntry is the span after one e0, shared by the groups at it; its mutex serializes the
// reads, so that one read serves them all.
type spanEntry struct {
	used uint64 // the last pass that asked for it; guarded by spans.mu

	mu   sync.Mutex
	sp   span
	pass uint64 // the last pass that brought sp up to date
}

// ends is the last stable offsets and high watermarks of one target topic, listed once a
// pass, when a span needs them.
type ends struct {
	once        sync.Once
	stable, end kadm.ListedOffsets
	err         error
}

// spans is the Syncer's memory of the spans it read.
type spans struct {
	mu      sync.Mutex
	pass    uint64
	entries map[spanKey]*spanEntry
	ends    map[string]*ends // of the current pass, by target topic
	warned  map[string]bool  // target topics whose read failure was logged as a warning
	leaders logread.Leaders
}

// startPass forgets the spans no group used in the previous pass and the listed ends.
func (s *spans) startPass() {
	s.mu.Lock()
	defer s.mu.Unlock()
	for k, e := range s.entries {
		if e.used < s.pass {
			delete(s.entries, k)
		}
	}
	s.pass++
	s.ends = make(map[string]*ends)
}

// span returns the span after E(G) tr.Target for group offset g of source topic/partition,
// copied to target topic tt. It reads the target only when the map does not show the copy of
// G at E(G), once a pass per target partition and E(G), and from where the last read ended.
func (s *Syncer) span(ctx context.Context, topic, tt string, partition int32, g int64, tr offsetmap.Translation) span {
	e0 := tr.Target
	if !tr.HasPrev {
		return exact(e0) // E(G) is the first copy at or above G: no copy below to step from
	}
	if next, ok := s.cfg.Translator.Translate(topic, partition, g+1); ok && next.Known && next.HasPrev && next.Prev == g && next.PrevTarget == e0 {
		return exact(e0) // the copy of G is at E(G)
	}
	sps := &s.spans
	sps.mu.Lock()
	if sps.entries == nil {
		sps.entries = make(map[spanKey]*spanEntry)
	}
	k := spanKey{tt, partition, e0}
	e := sps.entries[k]
	if e == nil {
		e = &spanEntry{sp: span{e0: e0, end: e0}}
		sps.entries[k] = e
	}
	pass := sps.pass
	e.used = pass
	sps.mu.Unlock()

	e.mu.Lock()
	defer e.mu.Unlock()
	if e.sp.final || e.pass == pass {
		return e.sp
	}
	e.pass = pass
	sp, err := s.readSpan(ctx, tt, partition, e.sp)
	if err != nil {
		s.spanFailed(tt, partition, e0, err)
		// What was read before still holds (below the last stable offset nothing changes):
		// the next pass reads on from its end.
		sp = e.sp
		sp.closed, sp.open, sp.unread = false, false, fmt.Sprintf("the target was not read after it (%v)", err)
	}
	e.sp = sp
	return sp
}

func (s *Syncer) spanFailed(tt string, partition int32, e0 int64, err error) {
	s.spans.mu.Lock()
	first := !s.spans.warned[tt]
	if s.spans.warned == nil {
		s.spans.warned = make(map[string]bool)
	}
	s.spans.warned[tt] = true
	s.spans.mu.Unlock()
	log := s.log.Debug
	if first {
		log = s.log.Warn
	}
	log("target not read after E(G): committing the offset right after the copy", "cluster", s.tgtName,
		"topic", tt, "partition", partition, "offset", e0, "err", err)
}

// readSpan brings sp up to date: it reads the target partition under read_committed from
// sp.end up to the last stable offset listed in this pass (at most to sp.e0+spanLimit), and
// says where the span ends and whether that is the offset to write.
func (s *Syncer) readSpan(ctx context.Context, tt string, partition int32, sp span) (span, error) {
	stable, end, err := s.targetEnds(ctx, tt, partition)
	if err != nil {
		return sp, err
	}
	sp.closed, sp.open, sp.openAt, sp.unread = false, false, 0, ""
	limit := sp.e0 + spanLimit
	to := min(stable, limit)
	if sp.end < to {
		rctx, cancel := context.WithTimeout(ctx, spanTimeout)
		defer cancel()
		from := sp.end
		pos := from
		next := int64(-1) // the first record a read_committed consumer reads
		responses, more := 0, false
		var aborted []int64
		o := logread.Options{Cluster: s.tgtName, Topic: tt, Partition: partition, From: from, To: to,
			Short: logread.ShortStop, Leaders: &s.spans.leaders}
		err := logread.ReadAborted(rctx, s.cfg.Target, o, func(c logread.TxnChunk) (bool, error) {
			for _, r := range c.Aborted {
				aborted = append(aborted, r.Offset)
			}
			for _, r := range c.Records {
				if r.Offset < to && !r.Attrs.IsControl() {
					next = r.Offset
					return false, nil
				}
			}
			pos = max(pos, min(c.To, to))
			if responses++; responses >= spanResponses && pos < to {
				more = true
				return false, nil
			}
			return true, nil
		})
		if err != nil {
			return sp, err
		}
		if next >= 0 {
			pos = next
		}
		for _, a := range aborted {
			if a >= from && a < pos {
				sp.aborted++
			}
		}
		sp.end = pos
		switch {
		case next >= 0:
			sp.closed, sp.final = true, true
			return sp, nil
		case more:
			sp.unread = fmt.Sprintf("target offsets %d..%d hold no record a read_committed consumer reads; the span is read on from %d at the next pass", sp.e0, pos-1, pos)
			return sp, nil
		}
	}
	switch {
	case sp.end >= limit:
		sp.final = true // past the bound: e0 is kept
	case stable < end && sp.end >= stable:
		sp.open, sp.openAt = true, stable
	case sp.end < stable:
		sp.unread = fmt.Sprintf("the target log ended at %d while reading to %d", sp.end, stable)
	case sp.end > end:
		sp.unread = fmt.Sprintf("the target ends at %d, below it", end)
	default:
		sp.closed = true // nothing follows yet: the span ends at the end of the log
	}
	return sp, nil
}

// targetEnds returns the last stable offset and the high watermark of a target partition as
// listed once in this pass (the last stable offset first: a transaction that begins between
// the two listings shows as open).
func (s *Syncer) targetEnds(ctx context.Context, tt string, partition int32) (stable, end int64, err error) {
	s.spans.mu.Lock()
	en := s.spans.ends[tt]
	if en == nil {
		en = &ends{}
		if s.spans.ends == nil {
			s.spans.ends = make(map[string]*ends)
		}
		s.spans.ends[tt] = en
	}
	s.spans.mu.Unlock()
	en.once.Do(func() {
		lctx, cancel := context.WithTimeout(ctx, spanTimeout)
		defer cancel()
		if en.stable, en.err = s.tgt.ListCommittedOffsets(lctx, tt); en.err == nil {
			en.end, en.err = s.tgt.ListEndOffsets(lctx, tt)
		}
	})
	if en.err != nil {
		return 0, 0, fmt.Errorf("list the offsets of %s: %w", tt, en.err)
	}
	ls, ok1 := en.stable.Lookup(tt, partition)
	le, ok2 := en.end.Lookup(tt, partition)
	switch {
	case !ok1 || !ok2:
		return 0, 0, fmt.Errorf("list the offsets of %s/%d: partition not listed", tt, partition)
	case ls.Err != nil:
		return 0, 0, fmt.Errorf("list the last stable offset of %s/%d: %w", tt, partition, ls.Err)
	case le.Err != nil:
		return 0, 0, fmt.Errorf("list the high watermark of %s/%d: %w", tt, partition, le.Err)
	}
	return ls.Offset, le.Offset, nil
}
