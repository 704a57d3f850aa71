package reconcile

import (
	"context"
	"fmt"
	"sort"
	"strings"

	"github.com/kmigrate/kmigrate/align"
	"github.com/kmigrate/kmigrate/mm2"
	"github.com/kmigrate/kmigrate/offsetmap"
)

// This file finds E(G) for one group partition from content: the source records around G
// and a target window, explained by align.Locate (the fewest mirror events; an answer only
// when every such explanation agrees). What stays here is which records to read: the source
// below G (walking back over gaps), the source past G as far as the target window goes, and
// the target far enough past every copy of a record below G to see a replay of it.

// job is one source partition and committed offset to translate.
type job struct {
	srcTopic, dstTopic string
	part               int32
	g                  int64
	srcStart, srcEnd   int64
	dstStart, dstEnd   int64
	// srcStable and dstStable are the last stable offsets (the end of the log under
	// read_committed), at most srcEnd and dstEnd.
	srcStable, dstStable int64
}

// Where an answer came from, as Partition.ProofSource says.
const (
	SourceContent     = "content"
	SourceKmirrorMap  = "kmirror-map"
	SourceOffsetSyncs = "offset-syncs"
)

// answer is E(G) or why it is not known.
type answer struct {
	known  bool
	e      int64
	status Status // "" when known; StatusPending or StatusUnmappable otherwise
	reason string
	proof  string
	// from is where the answer came from (SourceContent, SourceKmirrorMap, ...).
	from string
	// extras are target offsets inside the window that every explanation calls extra.
	extras []int64
}

func unmappable(format string, args ...any) answer {
	return answer{status: StatusUnmappable, reason: fmt.Sprintf(format, args...)}
}

func pending(format string, args ...any) answer {
	return answer{status: StatusPending, reason: fmt.Sprintf(format, args...)}
}

// logReader reads the records of one side of the partition with offsets in [from, to), at
// most max of them (max <= 0: no limit), in offset order. The target's reader leaves out the
// records of aborted transactions.
type logReader func(ctx context.Context, from, to int64, max int) ([]rec, error)

// mapRef is an exact map, the mirror's own (kmirror's, the only one: a map file from kverify
// only checks answers), and where it came from (SourceKmirrorMap).
type mapRef struct {
	pm   *offsetmap.PartitionMap
	from string
}

// pinsIn returns the known copies whose target offset lies in [from, to): every copy a map
// holds there, a record kmirror's map covers but holds no copy at (Source -1: it copies
// nothing of the flow; the mirror wrote every copy it maps), and MM2's offset syncs.
func (io locateIO) pinsIn(from, to int64, targets []rec) []pin {
	var out []pin
	for _, m := range io.maps {
		held := map[int64]bool{}
		for _, c := range m.pm.CopiesIn(from, to) {
			out = append(out, pin{align.Pin{Source: c.Source, Target: c.Target}, m.from})
			held[c.Target] = true
		}
		lo := m.pm.TargetFrom()
		for _, t := range targets {
			if t.off >= lo && t.off < m.pm.TargetTo && !held[t.off] {
				out = append(out, pin{align.Pin{Source: -1, Target: t.off}, m.from})
			}
		}
	}
	for _, s := range io.syncs {
		if s.Downstream >= from && s.Downstream < to {
			out = append(out, pin{align.Pin{Source: s.Upstream, Target: s.Downstream}, SourceOffsetSyncs})
		}
	}
	return out
}

// pin is a known copy and who knows it (SourceKmirrorMap, SourceOffsetSyncs).
type pin struct {
	align.Pin
	from string
}

// locateIO is what locating reads: both logs, where the target window may start, and the
// known copies.
type locateIO struct {
	src, dst logReader
	// lowerBound returns a target offset at or below the copy of source record r, and a
	// source offset at or below every record the target holds from there up to that copy.
	lowerBound func(ctx context.Context, r rec) (dst, src int64)
	// maps are the exact maps of the partition (kmirror's) and syncs
	// MM2's offset syncs: the known copies.
	maps  []mapRef
	syncs []mm2.OffsetSync
	// mirroredUpTo is the highest source offset MM2's offset syncs say was copied, or -1.
	mirroredUpTo func() int64
}

// locate computes E(G) for j from content.
func (p *planner) locate(ctx context.Context, j job) (answer, error) {
	io := locateIO{
		src: func(ctx context.Context, from, to int64, max int) ([]rec, error) {
			return p.src.read(ctx, j.srcTopic, j.part, from, to, max, p.cfg.Fields)
		},
		dst: func(ctx context.Context, from, to int64, max int) ([]rec, error) {
			recs, err := p.dst.read(ctx, j.dstTopic, j.part, from, to, max, p.cfg.Fields)
			if err != nil || len(recs) == 0 {
				return recs, err
			}
			return p.dropAborted(ctx, j, recs)
		},
		lowerBound:   func(ctx context.Context, r rec) (int64, int64) { return p.targetLowerBound(ctx, j, r) },
		maps:         p.mapsOf(j),
		syncs:        p.syncs.Syncs(j.srcTopic, j.part),
		mirroredUpTo: func() int64 { return p.syncs.MaxUpstream(j.srcTopic, j.part) },
	}
	ans, err := locateIn(ctx, j, p.cfg, io)
	if err == nil && ans.known && ans.anchor.ok {
		p.addAnchor(j, ans.anchor.src, ans.anchor.dst)
	}
	return ans.answer, err
}

// targetLowerBound returns a target offset at or below the copy of source record r, from
// MM2's offset syncs, earlier alignments or r's timestamp, else the target log start; and the
// source offset the target holds copies from there on: the sync's or anchor's upstream
// offset, the first source record of r's timestamp, else the source log start. A wrong bound
// costs reads, never the answer: a window that misses the copies is read again from earlier.
func (p *planner) targetLowerBound(ctx context.Context, j job, r rec) (dst, src int64) {
	dst, src = j.dstStart, j.srcStart
	found := false
	if s, ok := p.syncs.Below(j.srcTopic, j.part, r.off); ok {
		dst, src, found = s.Downstream, s.Upstream, true
	}
	// What earlier alignments of this partition found: the copy of a source record at or
	// below r lies at or below the copy of r.
	if a, ok := p.anchorBelow(j, r.off); ok && (!found || a.dst > dst) {
		dst, src, found = a.dst, a.src, true
	}
	if found {
		return dst, src
	}
	if ts := r.r.Timestamp.UnixMilli(); ts > 0 {
		if o, err := p.dst.offsetAfterMilli(ctx, j.dstTopic, j.part, ts); err == nil && o >= 0 {
			dst = o
			if so, err := p.src.offsetAfterMilli(ctx, j.srcTopic, j.part, ts); err == nil && so >= 0 {
				src = so
			}
		}
	}
	return dst, src
}

// located is an answer and, when it is the only copy of s*, an anchor for later hints.
type located struct {
	answer
	anchor struct {
		ok       bool
		src, dst int64
	}
}

// minBits is the evidence a content answer needs: the unbroken run of matching records
// through the copy that decides it must be this unlikely by chance (2^-32) for the content
// that repeats as often as it does in the source window.
const minBits = 32

// window is the source and target records read so far for one job.
type window struct {
	j     job
	cfg   Config
	io    locateIO
	below []rec // source records below G, oldest first
	after []rec // source records at or after G
	// belowAll says no source record lies below below[0] (or below G when below is empty);
	// afterAll that none follows the last of after.
	belowAll, afterAll bool
	T                  []rec
	tFrom, tNext       int64 // the target window [tFrom, tNext) read so far
	read               int
	pinned             []pin // the known copies within the target window
	// lb is where the target window starts: at or below the copy of the first source record
	// read, by the hint; start is the source offset the hint says it copies (-1: none).
	lb, start int64
	// distrust names the sources of pins content contradicted: none of their pins is used,
	// and distrusted says why.
	distrust   map[string]bool
	distrusted []string
}

// locateIn computes E(G) for j, reading through io.
func locateIn(ctx context.Context, j job, cfg Config, io locateIO) (located, error) {
	if j.g > j.srcEnd {
		return located{answer: unmappable("committed offset %d is above the source log end %d of %s/%d", j.g, j.srcEnd, j.srcTopic, j.part)}, nil
	}
	if ans, ok, err := fromMaps(ctx, j, io); err != nil || ok {
		return ans, err
	}
	w := &window{j: j, cfg: cfg, io: io}
	if err := w.readBelow(ctx, cfg.Before); err != nil {
		return located{}, err
	}
	if err := w.readAfter(ctx, cfg.Window+cfg.Before); err != nil {
		return located{}, err
	}
	S := w.source()
	if len(S) == 0 {
		return located{answer: answer{known: true, e: j.dstEnd, from: SourceContent,
			proof: fmt.Sprintf("the source has no record below or at offset %d (log %d..%d): the group's next record will be mirrored at or after target end %d", j.g, j.srcStart, j.srcEnd, j.dstEnd)}}, nil
	}
	lb, srcFrom := io.lowerBound(ctx, S[0])
	if len(w.below) == 0 && w.belowAll {
		// E is the first copy of a record at or after G: read the target from its start.
		lb, srcFrom = j.dstStart, S[0].off
	}
	w.lb, w.start = max(j.dstStart, lb), srcFrom
	if srcFrom < S[0].off {
		// The target from lb on copies source records from srcFrom on: read them, so that
		// every target record of the window can be explained (as far as the budget goes).
		if err := w.readBelow(ctx, int(min(int64(cfg.MaxTargetRead), j.g-max(srcFrom, j.srcStart)))); err != nil {
			return located{}, err
		}
	}
	if err := w.resetTarget(ctx, w.lb); err != nil {
		return located{}, err
	}
	widen := 0 // how often the source below was widened to explain the window's events
	lastEvents := -1
	for retries := 0; ; {
		loc := align.Locate(w.input())
		var err error
		switch {
		case len(loc.BadPins) > 0:
			w.distrustPins(loc.BadPins)
		case loc.Overflow:
			return located{answer: unmappable("ambiguous: source %s/%d around offset %d and target offsets %d..%d hold too many identical records to follow every explanation (%d states); kmirror's offset map of the flow or an offset sync of source offset %d settles it",
				j.srcTopic, j.part, j.g, w.tFrom, w.tNext-1, loc.Work, j.g-1)}, nil
		case (w.hasKind(loc, align.NotFound) || loc.Run != nil || loc.StartsOff) && w.tFrom > j.dstStart && retries < 4:
			// The copies of the records below G (or the start of the run of identical records
			// around G) may lie before the window: start earlier.
			retries++
			lb := max(j.dstStart, w.tFrom-int64(cfg.Window)*4*int64(retries))
			// The target records added copy about as many source records below.
			if err = w.readBelow(ctx, min(cfg.MaxTargetRead, len(w.below)+2*int(w.tFrom-lb)+cfg.Before)); err == nil {
				w.lb, w.start = lb, -2 // no hint says what the new start copies
				err = w.resetTarget(ctx, w.lb)
			}
		case !w.afterAll && len(w.after) < len(w.T)+cfg.Before:
			// Every target record of the window may copy a record past G: read as many.
			err = w.readAfter(ctx, 2*(len(w.T)+cfg.Before))
		case loc.NeedSource && !w.afterAll:
			err = w.readAfter(ctx, 2*len(w.after)+cfg.Window)
		case loc.Events > 0 && loc.Events != lastEvents && !w.belowAll && widen < 6 && len(w.below) < cfg.MaxTargetRead:
			// Events may be target records that copy source records below the window (a replay
			// from further back): widen the source below until that explains no more of them.
			widen++
			lastEvents = loc.Events
			err = w.readBelow(ctx, min(cfg.MaxTargetRead, 2*len(w.below)+cfg.Before))
		case w.needTarget(loc):
			var more bool
			if more, err = w.moreTarget(ctx); err == nil && !more {
				return w.answer(loc), nil
			}
		default:
			return w.answer(loc), nil
		}
		if err != nil {
			return located{}, err
		}
	}
}

// distrustPins stops using every pin of the sources that pinned a copy content contradicts:
// such a map or sync is older than the topic (recreated) or not this flow's.
func (w *window) distrustPins(bad []align.Pin) {
	if w.distrust == nil {
		w.distrust = map[string]bool{}
	}
	for _, b := range bad {
		for _, p := range w.pinned {
			if p.Pin == b && !w.distrust[p.from] {
				w.distrust[p.from] = true
				w.distrusted = append(w.distrusted, fmt.Sprintf("%s not used: it says target offset %d copies source offset %d, content differs", p.from, b.Target, b.Source))
			}
		}
	}
}

// fromMaps answers from an exact map that saw the whole target: E(G) as the map computes it
// (offsetmap.PartitionMap.ExactTarget), its copy of s* checked by content, or pending while
// the map has not reached G. A map that has not seen every record of the target up to its
// last stable offset (the mirror wrote on, or another writer did), or that content
// contradicts, does not answer here: its copies are pinned in the content alignment instead.
func fromMaps(ctx context.Context, j job, io locateIO) (located, bool, error) {
	for _, m := range io.maps {
		if seen, err := sawTarget(ctx, j, io, m.pm); err != nil || !seen {
			if err != nil {
				return located{}, false, err
			}
			continue
		}
		g, err := sourceGapEnd(ctx, j, io, m.pm)
		if err != nil {
			return located{}, false, err
		}
		tr := m.pm.ExactTarget(g)
		switch {
		case tr.Compacted || tr.Known && tr.Target > j.dstEnd:
			continue
		case !tr.Known:
			if j.g <= m.pm.SourceTo {
				continue
			}
			return located{answer: pending("%s says the mirror has copied %s/%d up to source offset %d, not yet the records below the committed %d", m.from, j.srcTopic, j.part, m.pm.SourceTo-1, j.g)}, true, nil
		case !tr.HasPrev:
			if j.srcStart < m.pm.SourceFrom && j.g > j.srcStart {
				continue // the map began above records still on the source: content decides
			}
			if len(m.pm.CopiesIn(tr.Target, tr.Target+1)) == 0 {
				return located{answer: pending("%s says no source record below %d is mirrored and none at or after it yet", m.from, j.g)}, true, nil
			}
			return located{answer: answer{known: true, e: tr.Target, from: m.from,
				proof: fmt.Sprintf("%sno source record below %d is mirrored; the first copy of a record at or after it is target offset %d", proofPrefix[m.from], j.g, tr.Target)}}, true, nil
		}
		pair, fp, cleaned, ok, err := checkedPair(ctx, io, m.pm, tr)
		if err != nil {
			return located{}, false, err
		}
		if !ok {
			continue
		}
		proof := fmt.Sprintf("%sfingerprint %016x of source offset %d = target offset %d (its last copy; the map saw the target to offset %d)", proofPrefix[m.from], fp, pair.Prev, pair.PrevTarget, m.pm.TargetTo-1)
		if cleaned {
			proof = fmt.Sprintf("%sthe copy of source offset %d, target offset %d, is gone from a log (compaction); the map is checked at the nearest copy both logs still hold: fingerprint %016x of source offset %d = target offset %d (the map saw the target to offset %d), and compaction keeps offsets",
				proofPrefix[m.from], tr.Prev, tr.PrevTarget, fp, pair.Prev, pair.PrevTarget, m.pm.TargetTo-1)
		}
		ans := located{answer: answer{known: true, e: tr.Target, from: m.from, proof: proof}}
		if !cleaned {
			ans.anchor.ok, ans.anchor.src, ans.anchor.dst = true, tr.Prev, tr.PrevTarget
		}
		return ans, true, nil
	}
	return located{}, false, nil
}

// maxCleanedWalk bounds how many copies below s* checkedPair looks at for one both logs hold.
const maxCleanedWalk = 64

// checkedPair checks map pm's answer tr by content: the source record s* and its copy must
// have the same fingerprint. When either is gone from its log (a compacted topic's cleaner
// removed it: the offset then holds no record), the check moves down the map's copies to the
// nearest one both logs still hold, at most maxCleanedWalk copies; cleaned says it did. ok is
// false when the records differ or no copy both logs hold was found: content decides then.
func checkedPair(ctx context.Context, io locateIO, pm *offsetmap.PartitionMap, tr offsetmap.Translation) (pair offsetmap.Translation, fp uint64, cleaned, ok bool, err error) {
	pair = tr
	for range maxCleanedWalk {
		s, err := io.src(ctx, pair.Prev, pair.Prev+1, 1)
		if err != nil {
			return pair, 0, false, false, err
		}
		t, err := io.dst(ctx, pair.PrevTarget, pair.PrevTarget+1, 1)
		if err != nil {
			return pair, 0, false, false, err
		}
		sHas, tHas := len(s) > 0 && s[0].off == pair.Prev, len(t) > 0 && t[0].off == pair.PrevTarget
		if sHas && tHas {
			return pair, s[0].fp, cleaned, s[0].fp == t[0].fp, nil
		}
		cleaned = true
		if pair = pm.ExactTarget(pair.Prev); !pair.Known || !pair.HasPrev {
			break
		}
	}
	return checkedAbove(ctx, io, pm, tr)
}

// checkedAbove checks pm at the first copies above s*'s that both logs still hold, at most
// maxCleanedWalk target records: a compacted topic keeps the latest record of each key, so
// below G a cleaned log may hold nothing for thousands of offsets while above it the copies
// of later records remain. The map is one mapping: agreeing there, it is this flow's.
func checkedAbove(ctx context.Context, io locateIO, pm *offsetmap.PartitionMap, tr offsetmap.Translation) (pair offsetmap.Translation, fp uint64, cleaned, ok bool, err error) {
	from := tr.PrevTarget + 1
	for range maxCleanedWalk {
		t, err := io.dst(ctx, from, pm.TargetTo, 1)
		if err != nil || len(t) == 0 {
			return tr, 0, true, false, err
		}
		from = t[0].off + 1
		src, ok := sourceOf(pm, t[0].off)
		if !ok {
			continue // a target record the map does not place
		}
		s, err := io.src(ctx, src, src+1, 1)
		if err != nil {
			return tr, 0, true, false, err
		}
		if len(s) > 0 && s[0].off == src {
			return offsetmap.Translation{Known: true, HasPrev: true, Prev: src, PrevTarget: t[0].off}, s[0].fp, true, s[0].fp == t[0].fp, nil
		}
	}
	return tr, 0, true, false, nil
}

// sourceOf is the source offset whose copy pm places at target offset t.
func sourceOf(pm *offsetmap.PartitionMap, t int64) (int64, bool) {
	segs := pm.Segments
	i := sort.Search(len(segs), func(i int) bool { return segs[i].Target+segs[i].Len > t })
	if i < len(segs) && segs[i].Target <= t {
		return segs[i].Source + t - segs[i].Target, true
	}
	for _, c := range pm.Duplicates {
		if c.Target == t {
			return c.Source, true
		}
	}
	return 0, false
}

// sourceGapEnd is the position G has in pm: G itself, or the map's end when G lies past it
// with nothing but transaction markers and aborted records between (a transactional
// source's last commit marker, which no mirror copies). A consumer at either position reads
// the same records.
func sourceGapEnd(ctx context.Context, j job, io locateIO, pm *offsetmap.PartitionMap) (int64, error) {
	if j.g <= pm.SourceTo {
		return j.g, nil
	}
	if none, err := noRecordIn(ctx, io.src, pm.SourceTo, j.g); err != nil || !none {
		return j.g, err
	}
	return pm.SourceTo, nil
}

// sawTarget reports whether a map saw every record of the target up to its last stable offset:
// past the map's end only transaction markers and aborted records (a transactional mirror's
// last commit marker) may lie.
func sawTarget(ctx context.Context, j job, io locateIO, pm *offsetmap.PartitionMap) (bool, error) {
	return noRecordIn(ctx, io.dst, pm.TargetTo, j.dstStable)
}

// maxMarkerSpan is the longest span past a map's end that noRecordIn reads: a window's worth.
const maxMarkerSpan = 4096

// noRecordIn reports whether read finds no record in [from, to): only transaction markers and
// aborted records lie there. A span longer than maxMarkerSpan is not read and counts as
// holding records.
func noRecordIn(ctx context.Context, read logReader, from, to int64) (bool, error) {
	if to <= from {
		return true, nil
	}
	if to-from > maxMarkerSpan {
		return false, nil
	}
	recs, err := read(ctx, from, to, 1)
	return len(recs) == 0, err
}

// source is the source records read, in offset order.
func (w *window) source() []rec { return append(append([]rec(nil), w.below...), w.after...) }

// readBelow reads up to n source records below G, walking back over offsets without records
// (transaction markers, compacted or deleted records).
func (w *window) readBelow(ctx context.Context, n int) error {
	j := w.j
	span := int64(n)
	for try := 0; j.g > j.srcStart; try++ {
		from := max(j.srcStart, j.g-span)
		recs, err := w.io.src(ctx, from, j.g, 0)
		if err != nil {
			return err
		}
		if len(recs) >= n || from <= j.srcStart || try >= 12 {
			if len(recs) > n {
				recs = recs[len(recs)-n:]
			}
			w.below = recs
			w.belowAll = from <= j.srcStart && len(recs) <= n
			return nil
		}
		span *= 8
	}
	w.below, w.belowAll = nil, true
	return nil
}

// readAfter reads up to n source records at or after G.
func (w *window) readAfter(ctx context.Context, n int) error {
	j := w.j
	recs, err := w.io.src(ctx, max(j.g, j.srcStart), j.srcEnd, n)
	if err != nil {
		return err
	}
	w.after = recs
	w.afterAll = len(recs) < n
	return nil
}

// resetTarget starts the target window again at from and reads its first chunk.
func (w *window) resetTarget(ctx context.Context, from int64) error {
	w.T, w.tFrom, w.tNext, w.read = nil, from, from, 0
	_, err := w.moreTarget(ctx)
	return err
}

// moreTarget reads the next chunk of the target window; false at the end or the budget.
func (w *window) moreTarget(ctx context.Context) (bool, error) {
	cfg, j := w.cfg, w.j
	chunk := max(cfg.Window, len(w.T)) // doubling: each chunk re-runs the alignment
	for w.tNext < j.dstEnd && w.read < cfg.MaxTargetRead {
		to := min(j.dstEnd, w.tNext+int64(chunk))
		recs, err := w.io.dst(ctx, w.tNext, to, chunk)
		if err != nil {
			return false, err
		}
		w.tNext = to
		if len(recs) > 0 {
			w.tNext = max(recs[len(recs)-1].off+1, w.tNext)
			if len(recs) == chunk {
				w.tNext = recs[len(recs)-1].off + 1
			}
			w.read += len(recs)
			w.T = append(w.T, recs...)
			return true, nil
		}
	}
	return false, nil
}

func (w *window) atEnd() bool { return w.tNext >= w.j.dstEnd }

func items(rs []rec) []align.Item {
	out := make([]align.Item, len(rs))
	for i, r := range rs {
		out[i] = align.Item{Offset: r.off, FP: r.fp, Record: r.r}
	}
	return out
}

// input is the window as align.Locate takes it.
func (w *window) input() align.LocateInput {
	w.pinned = nil
	if len(w.T) > 0 {
		for _, p := range w.io.pinsIn(w.T[0].off, w.T[len(w.T)-1].off+1, w.T) {
			if !w.distrust[p.from] {
				w.pinned = append(w.pinned, p)
			}
		}
	}
	pins := make([]align.Pin, len(w.pinned))
	for i, p := range w.pinned {
		pins[i] = p.Pin
	}
	return align.LocateInput{
		Source: items(w.source()), Target: items(w.T), G: w.j.g,
		SourceAtEnd: w.afterAll, NoSourceBelow: len(w.below) == 0 && w.belowAll,
		TargetAtEnd: w.atEnd(), Start: w.start,
		Pins: pins,
	}
}

func (w *window) hasKind(loc align.Located, k align.OutcomeKind) bool {
	for _, o := range loc.Outcomes {
		if o.Kind == k {
			return true
		}
	}
	return false
}

// needTarget reports whether more of the target is to be read: always, up to the target end
// or the read budget. A replay of s* can come any time after its first copy (an MM2 task
// restart replays what it read since its last offset commit), and only the records after
// the window can show that none did.
func (w *window) needTarget(loc align.Located) bool {
	return !w.atEnd() && w.read < w.cfg.MaxTargetRead
}

// answer turns Locate's result into E(G), pending, or a refusal that says why.
func (w *window) answer(loc align.Located) located {
	j := w.j
	if len(loc.Outcomes) == 0 && loc.Run == nil {
		return located{answer: unmappable("record not found: no explanation of target %s/%d offsets %d..%d", j.dstTopic, j.part, w.tFrom, w.tNext-1)}
	}
	if loc.Ambiguous() {
		return located{answer: w.ambiguous(loc)}
	}
	o := loc.Outcomes[0]
	S := w.source()
	switch o.Kind {
	case align.Pending:
		if o.HasPrev {
			if why := w.altered(align.Outcome{Prev: o.Prev, E: o.PrevTarget + 1}, loc); why != "" {
				return located{answer: unmappable("%s", why)}
			}
		}
		upTo := "nothing of the source records read"
		if len(w.T) > 0 {
			upTo = fmt.Sprintf("target offset %d", w.T[len(w.T)-1].off)
		}
		if o.HasPrev {
			upTo = fmt.Sprintf("source offset %d (target offset %d)", o.Prev, o.PrevTarget)
		}
		return located{answer: pending("the mirror has copied %s/%d up to %s, not yet offset %d below the committed %d", j.srcTopic, j.part, upTo, w.lastBelowG(), j.g)}
	case align.NotFound:
		if j.dstEnd == j.dstStart {
			return located{answer: pending("the target partition %s/%d is empty: the mirror has not copied it yet", j.dstTopic, j.part)}
		}
		if up := w.io.mirroredUpTo(); w.atEnd() && up >= 0 && up < S[0].off {
			return located{answer: pending("the mirror's newest offset sync is for source offset %d, below %d", up, S[0].off)}
		}
		if !w.atEnd() && w.read >= w.cfg.MaxTargetRead {
			return located{answer: unmappable("record not found: no copy of source %s/%d offsets %d..%d in target %s/%d offsets %d..%d (read budget %d records)",
				j.srcTopic, j.part, S[0].off, w.lastBelowG(), j.dstTopic, j.part, w.tFrom, w.tNext-1, w.cfg.MaxTargetRead)}
		}
		return located{answer: unmappable("record not found: no copy of source %s/%d offsets %d..%d in target %s/%d offsets %d..%d",
			j.srcTopic, j.part, S[0].off, w.lastBelowG(), j.dstTopic, j.part, w.tFrom, w.tNext-1)}
	}
	if !w.atEnd() {
		if why := w.laterReplay(o); why != "" {
			return located{answer: unmappable("%s", why)}
		}
	}
	from, pinned := w.pinnedAt(o.PrevTarget)
	if !pinned && o.Bits < minBits {
		return located{answer: unmappable("too little evidence: the copy that decides E(G) of %s/%d at %d is matched by content that repeats (%.0f bits of it in a row, %d needed): the target may not hold the copies of these source records at all (the mirror behind, or far back); kmirror's offset map, an MM2 offset sync, or a window where the content differs settles it",
			j.srcTopic, j.part, j.g, o.Bits, minBits)}
	}
	ans := located{answer: answer{known: true, e: o.E, extras: loc.Extras, from: SourceContent}}
	if pinned && o.HasPrev {
		ans.from = from
	}
	if !o.HasPrev {
		ans.proof = fmt.Sprintf("no source record below %d (log start %d); the first copy of a record at or after it is target offset %d", j.g, j.srcStart, o.E)
		return ans
	}
	if why := w.altered(o, loc); why != "" {
		return located{answer: unmappable("%s", why)}
	}
	fp := uint64(0)
	for _, r := range S {
		if r.off == o.Prev {
			fp = r.fp
		}
	}
	ans.proof = fmt.Sprintf("%sfingerprint %016x of source offset %d = target offset %d (%s)", proofPrefix[ans.from], fp, o.Prev, o.PrevTarget, strings.Join(w.notes(o, loc, ans.from), "; "))
	ans.anchor.ok, ans.anchor.src, ans.anchor.dst = true, o.Prev, o.PrevTarget
	return ans
}

// laterReplay says why an answer from a window that stops short of the target end (the read
// budget) cannot stand: MM2's offset syncs show a copy of a record at or below s* past the
// window (a task restart replayed it), or "".
func (w *window) laterReplay(o align.Outcome) string {
	for _, s := range w.io.syncs {
		if s.Downstream >= w.tNext && s.Upstream <= o.Prev {
			return fmt.Sprintf("unproven: MM2's offset sync (source offset %d, target offset %d) shows a replay of %s/%d at or below source offset %d past the target records read (offsets %d..%d, read budget %d records)",
				s.Upstream, s.Downstream, w.j.srcTopic, w.j.part, o.Prev, w.tFrom, w.tNext-1, w.cfg.MaxTargetRead)
		}
	}
	return ""
}

// lastBelowG is the offset of the last source record read below G, or G-1.
func (w *window) lastBelowG() int64 {
	if len(w.below) > 0 {
		return w.below[len(w.below)-1].off
	}
	return w.j.g - 1
}

// pinnedAt says who pinned target offset t, if anyone.
func (w *window) pinnedAt(t int64) (string, bool) {
	for _, p := range w.pinned {
		if p.Target == t {
			return p.from, true
		}
	}
	return "", false
}

// altered refuses an answer whose s* is below the last source record before G while the
// target record right after the copy of s* copies nothing: a copy of the records between,
// re-encoded (kverify names the fields), or a loss with an extra record in its place.
func (w *window) altered(o align.Outcome, loc align.Located) string {
	last := w.lastBelowG()
	if o.Prev >= last || w.extrasFrom(o.E, loc.Extras) == 0 {
		return ""
	}
	return fmt.Sprintf("record altered or lost: source %s/%d offsets %d..%d have no copy and target offset %d, where their copy would be, copies no source record (kverify diff names the fields that differ)",
		w.j.srcTopic, w.j.part, o.Prev+1, last, o.E)
}

// proofPrefix names where an answer came from at the start of its proof.
var proofPrefix = map[string]string{
	SourceKmirrorMap:  "kmirror's offset map; ",
	SourceOffsetSyncs: "MM2 offset sync; ",
}

// notes are what the proof says besides the fingerprints.
func (w *window) notes(o align.Outcome, loc align.Located, from string) []string {
	j := w.j
	var notes []string
	if from == SourceContent {
		notes = append(notes, fmt.Sprintf("content: the only answer of the explanations with the fewest mirror events (%d)", loc.Events))
	}
	notes = append(notes, w.distrusted...)
	if last := w.lastBelowG(); o.Prev < last {
		notes = append(notes, fmt.Sprintf("source offsets %d..%d are missing on the target", o.Prev+1, last))
	}
	// Target records right after E that copy nothing the source holds now: compacted there
	// after mirroring, or written to the target directly. E stays below them: never above the
	// truth, at the price of re-reading them.
	if n := w.extrasFrom(o.E, loc.Extras); n > 0 {
		notes = append(notes, fmt.Sprintf("%d target records after E copy no record the source holds now (compacted after mirroring, or written to the target): a consumer at E reads them", n))
	}
	if w.atEnd() {
		notes = append(notes, fmt.Sprintf("checked to target end %d", j.dstEnd))
	} else {
		notes = append(notes, fmt.Sprintf("no later copy up to target offset %d", w.tNext-1))
	}
	return notes
}

// extrasFrom counts the target records from offset e on that are extra, up to the first that
// is not.
func (w *window) extrasFrom(e int64, extras []int64) int {
	is := map[int64]bool{}
	for _, x := range extras {
		is[x] = true
	}
	n := 0
	for _, t := range w.T {
		if t.off < e {
			continue
		}
		if !is[t.off] {
			break
		}
		n++
	}
	return n
}

// ambiguous is the refusal when the best explanations disagree: the offsets they give and
// what would settle it.
func (w *window) ambiguous(loc align.Located) answer {
	j := w.j
	var alts []string
	for k, o := range loc.Outcomes {
		if k == 3 {
			alts = append(alts, fmt.Sprintf("and %d more", len(loc.Outcomes)-3))
			break
		}
		alts = append(alts, o.String())
	}
	if loc.Run != nil && !loc.Overflow {
		return unmappable("ambiguous: source %s/%d offsets %d..%d around the committed %d are identical records, and content cannot prove their copy clean: a replay, a loss or an extra record could lie anywhere among them (with the last copies still to come) and move E(G); "+
			"kmirror's offset map of the flow or an MM2 offset sync of source offset %d settles it", j.srcTopic, j.part, loc.Run[0], loc.Run[1], j.g, w.lastBelowG())
	}
	budget := ""
	if !w.atEnd() {
		budget = fmt.Sprintf(" within the read budget (%d target records)", w.cfg.MaxTargetRead)
	}
	if len(loc.Outcomes) == 1 && len(loc.Near) > 0 {
		return unmappable("ambiguous: the records of %s/%d around offset %d repeat: the explanations of the copy with the fewest mirror events (%d) give %s, but one with %d event more gives %s%s, and content cannot tell which history the mirror had; "+
			"kmirror's offset map of the flow or an MM2 offset sync of source offset %d settles it",
			j.srcTopic, j.part, j.g, loc.Events, loc.Outcomes[0], align.Margin, loc.Near[0], budget, w.lastBelowG())
	}
	return unmappable("ambiguous: the records of %s/%d around offset %d repeat, and the explanations of the copy with the fewest mirror events (%d) disagree%s: %s; "+
		"kmirror's offset map of the flow or an MM2 offset sync of source offset %d settles it",
		j.srcTopic, j.part, j.g, loc.Events, budget, strings.Join(alts, "; "), w.lastBelowG())
}

// anchor is a source record and the target offset of its only copy, found by an alignment.
type anchor struct{ src, dst int64 }

func (p *planner) addAnchor(j job, src, dst int64) {
	p.mu.Lock()
	defer p.mu.Unlock()
	k := tp{j.srcTopic, j.part}
	if p.anchors == nil {
		p.anchors = make(map[tp][]anchor)
	}
	if len(p.anchors[k]) < 4096 {
		p.anchors[k] = append(p.anchors[k], anchor{src, dst})
	}
}

// anchorBelow returns the highest known source record at or below off, with its copy.
func (p *planner) anchorBelow(j job, off int64) (anchor, bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	best := anchor{src: -1}
	for _, a := range p.anchors[tp{j.srcTopic, j.part}] {
		if a.src <= off && a.src > best.src {
			best = a
		}
	}
	return best, best.src >= 0
}
