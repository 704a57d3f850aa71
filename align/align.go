package align

import (
	"bytes"
	"context"
	"fmt"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/kmigrate/kmigrate/offsetmap"
)

// Item is one record of a stream the aligner reads: its offset, its fingerprint over the
// compared fields, and the record itself (kept only while it is inside the look-ahead window,
// to say which fields differ at a mismatch).
type Item struct {
	Offset int64
	FP     uint64
	Record *kgo.Record
}

// NewItem fingerprints r over f.
func NewItem(r *kgo.Record, f offsetmap.Fields) Item {
	return Item{Offset: r.Offset, FP: offsetmap.Fingerprint(r, f), Record: r}
}

// Stream yields the records of one side of a partition in offset order.
type Stream interface {
	// Next returns the next item, or ok == false at the end of the range.
	Next(ctx context.Context) (it Item, ok bool, err error)
}

// SliceStream is a Stream over items in memory (tests, small ranges).
type SliceStream struct{ Items []Item }

// Next implements Stream.
func (s *SliceStream) Next(context.Context) (Item, bool, error) {
	if len(s.Items) == 0 {
		return Item{}, false, nil
	}
	it := s.Items[0]
	s.Items = s.Items[1:]
	return it, true, nil
}

// Options tune Partition.
type Options struct {
	Partition int32
	// Fields are the compared fields, used to say which ones differ at a mismatch.
	// Default: offsetmap.DefaultFields.
	Fields offsetmap.Fields
	// Window is the look-ahead in records on each side: the longest run of missing or extra
	// records resolved in place. Memory is proportional to it (records). Default: DefaultWindow.
	Window int
	// History is how many recently matched source records are remembered (16 bytes each,
	// plus an index built at the first divergence) to recognise a replay of them: an MM2 task
	// restart replays up to offset.flush.interval.ms worth of records. At least Window.
	// Default: DefaultHistory.
	History int
	// MaxListed caps each list of ranges, duplicates and mismatches in the PartitionResult
	// (the counts and the offsetmap.PartitionMap stay complete). Default: 1000.
	MaxListed int

	// SourceFrom and SourceTo bound the source range read ([SourceFrom, SourceTo)); they go
	// into the offsetmap.PartitionMap. TargetFrom is where the target was read from.
	SourceFrom, SourceTo int64
	TargetFrom, TargetTo int64

	// StrictTargetFrom says that TargetFrom is where the copy of the range starts: leading
	// target records that copy nothing are extra. Default false: TargetFrom is a lower bound
	// (a hint), and target records before the first copy of a record of the range are skipped
	// and counted in PartitionResult.TargetSkipped, not as extra.
	StrictTargetFrom bool
	// StrictTargetTo says that every target record after the copy of the last source record is
	// part of the comparison (extra unless it repeats a source record). Default false: the
	// first such record ends the comparison (it is beyond the range).
	StrictTargetTo bool

	// Progress, when set, is called every few thousand records with the current positions.
	Progress func(sourceOffset, targetOffset, records int64)
}

// DefaultWindow is the default look-ahead: runs of a few thousand missing or extra records
// (and replays of them) resolved in place, for the memory of 10000 records per side.
const DefaultWindow = 10000

// DefaultHistory is the default replay memory: 100000 records, ~1.6 MiB plus an index of
// ~4 MiB once a divergence needs it.
const DefaultHistory = 100000

// confirmRun is how many consecutive equal records confirm a resynchronisation point.
const confirmRun = 8

// smallSearch is the largest skip (source + target records) tried by direct comparison
// before the hashed search over the whole window.
const smallSearch = 24

func (o *Options) setDefaults() {
	if o.Fields == 0 {
		o.Fields = offsetmap.DefaultFields
	}
	if o.Window <= 0 {
		o.Window = DefaultWindow
	}
	if o.MaxListed <= 0 {
		o.MaxListed = 1000
	}
	if o.History <= 0 {
		o.History = DefaultHistory
	}
	o.History = max(o.History, o.Window)
}

// Partition merges a source and a target stream of one partition, as docs/design.md "Alignment"
// defines, with look-ahead bounded by opt.Window. It returns the classes as compact ranges
// and the exact offset map. The error is the first error of a stream or of ctx.
func Partition(ctx context.Context, src, dst Stream, opt Options) (PartitionResult, *offsetmap.PartitionMap, error) {
	opt.setDefaults()
	a := &aligner{
		opt:  opt,
		src:  src,
		dst:  dst,
		hist: newHistory(opt.History),
		// Recent records called missing and extra, to notice a copy left unpaired.
		missed: newHistory(opt.History),
		extras: newHistory(opt.History),
	}
	a.res.Partition = opt.Partition
	a.res.SourceStart, a.res.SourceEnd = opt.SourceFrom, opt.SourceTo
	a.res.TargetStart = opt.TargetFrom
	a.pm = &offsetmap.PartitionMap{Partition: opt.Partition, SourceFrom: opt.SourceFrom, SourceTo: opt.SourceTo, TargetTo: opt.TargetFrom}
	err := a.run(ctx)
	a.finish()
	if err == nil {
		err = a.mapErr
	}
	return a.res, a.pm, err
}

type class uint8

const (
	classNone class = iota
	classMatched
	classMismatched
	classMissing
	classDuplicated
	classExtra
)

type aligner struct {
	opt      Options
	src, dst Stream
	sq, tq   queue
	srcEOF   bool
	dstEOF   bool
	hist     *history
	// repeat says a source record repeated a recently matched one; events that a replay,
	// loss or extra record broke the copy's order. Either can leave the map unproven
	// (PartitionResult.MapLeftOut).
	repeat, events bool
	// missed and extras remember the latest records called missing and extra.
	missed, extras *history
	res            PartitionResult
	pm             *offsetmap.PartitionMap
	mapErr         error // the first copy the map refused (never, for a correct alignment)

	srcClass, tgtClass class // class of the last source / target record, for ranges
	tailFrom           int64 // first source offset of a tail the target never reached
	tail               bool

	// Ambiguity: the run of identical consecutive source records being read.
	runFP      uint64
	runLen     int64
	runValid   bool
	runFirstT  int64 // target offset of the run's first record, if matched
	runFirstOK bool

	records  int64
	lastProg int64
	srcPos   int64 // just past the last source record classified
	// After a hashed search that found nothing, the positions (counted in records popped) up
	// to which the windows it covered reach: records below them are known to have no copy in
	// the other window, and the next search waits until half of a window has been consumed.
	searched           bool
	horizonS, horizonT int64
	blindS, blindT     int64
}

// run aligns the streams to their ends, or to the first target record beyond the range; the error is a stream's.
func (a *aligner) run(ctx context.Context) error {
	if !a.opt.StrictTargetFrom {
		if err := a.seek(ctx); err != nil {
			return err
		}
	}
	for {
		if a.opt.Progress != nil && a.records-a.lastProg >= 4096 {
			a.progress()
		}
		if a.sq.len() == 0 && a.tq.len() == 0 && !a.srcEOF && !a.dstEOF {
			// Fast path: nothing pending, take one record from each side.
			a.searched = false
			s, sok, err := a.src.Next(ctx)
			if err != nil {
				return err
			}
			t, tok, err := a.dst.Next(ctx)
			if err != nil {
				return err
			}
			a.records += 2
			if sok && tok && s.FP == t.FP {
				a.match(s, t)
				continue
			}
			a.queueHeads(s, sok, t, tok)
		}
		if err := a.fill(ctx, &a.sq, a.src, &a.srcEOF, 1); err != nil {
			return err
		}
		if err := a.fill(ctx, &a.tq, a.dst, &a.dstEOF, 1); err != nil {
			return err
		}
		ns, nt := a.sq.len(), a.tq.len()
		switch {
		case ns == 0 && nt == 0:
			return nil
		case ns == 0:
			if !a.targetAfterSource() {
				return nil // beyond the range: leave it unexamined
			}
		case nt == 0:
			a.missingTail(a.sq.pop())
		case a.sq.front().FP == a.tq.front().FP:
			a.match(a.sq.pop(), a.tq.pop())
		default:
			if err := a.resolve(ctx); err != nil {
				return err
			}
		}
	}
}

// progress reports the current positions to opt.Progress.
func (a *aligner) progress() {
	a.lastProg = a.records
	a.opt.Progress(a.lastSource(), a.pm.TargetTo, a.records)
}

// queueHeads queues the heads the fast path read and could not match (ok false: that stream ended).
func (a *aligner) queueHeads(s Item, sok bool, t Item, tok bool) {
	if sok {
		a.sq.push(s)
	} else {
		a.srcEOF = true
		a.records--
	}
	if tok {
		a.tq.push(t)
	} else {
		a.dstEOF = true
		a.records--
	}
}

// targetAfterSource classifies the next target record after the source's end as a duplicate, or extra if StrictTargetTo, else reports false (beyond the range, unexamined).
func (a *aligner) targetAfterSource() bool {
	t := a.tq.front()
	if src, ok := a.hist.get(t.FP); ok {
		a.duplicate(a.tq.pop(), src)
	} else if a.opt.StrictTargetTo {
		a.extra(a.tq.pop())
	} else {
		return false
	}
	return true
}

// missingTail classifies s, read after the target ended, as missing, noting where that tail starts.
func (a *aligner) missingTail(s Item) {
	if !a.tail {
		a.tail, a.tailFrom = true, s.Offset
	}
	a.missing(s)
}

func (a *aligner) lastSource() int64 {
	if a.sq.len() > 0 {
		return a.sq.front().Offset
	}
	return max(a.srcPos, a.opt.SourceFrom)
}

// fill reads from st until q holds n items or st ends.
func (a *aligner) fill(ctx context.Context, q *queue, st Stream, eof *bool, n int) error {
	for !*eof && q.len() < n {
		it, ok, err := st.Next(ctx)
		if err != nil {
			return err
		}
		if !ok {
			*eof = true
			return nil
		}
		q.push(it)
		a.records++
	}
	return nil
}

// seek skips target records read from before the copy of the range (TargetFrom is a lower
// bound): it reads on until a target record starts a confirmed run of copies of records in
// the source window. Source records before that point are missing.
func (a *aligner) seek(ctx context.Context) error {
	w := a.opt.Window
	if err := a.fill(ctx, &a.sq, a.src, &a.srcEOF, w); err != nil {
		return err
	}
	if a.sq.len() == 0 {
		return nil
	}
	idx := make(map[uint64]int, a.sq.len())
	for i := a.sq.len() - 1; i >= 0; i-- {
		idx[a.sq.at(i).FP] = i
	}
	limit := 10 * w
	for skipped := 0; skipped < limit; skipped++ {
		if err := a.fill(ctx, &a.tq, a.dst, &a.dstEOF, confirmRun); err != nil {
			return err
		}
		if a.tq.len() == 0 {
			break
		}
		if i, ok := idx[a.tq.front().FP]; ok && a.confirmed(i, 0) {
			for ; i > 0; i-- {
				a.missing(a.sq.pop())
			}
			return nil
		}
		t := a.tq.pop()
		a.res.TargetSkipped++
		if a.res.TargetSkippedRange == nil {
			a.res.TargetSkippedRange = &TargetRange{From: t.Offset}
		}
		a.res.TargetSkippedRange.To = t.Offset
		a.pm.TargetTo = t.Offset + 1
	}
	// Nothing of the source window was found: align from here as if strict.
	return nil
}

// resolve handles a divergence of the two heads.
func (a *aligner) resolve(ctx context.Context) error {
	w := a.opt.Window
	if err := a.fill(ctx, &a.sq, a.src, &a.srcEOF, w); err != nil {
		return err
	}
	if err := a.fill(ctx, &a.tq, a.dst, &a.dstEOF, w); err != nil {
		return err
	}
	// A resynchronisation point is confirmed by a run of equal records; when faults are
	// dense, a shorter run is accepted near the heads before looking further away.
	for _, run := range []int{confirmRun, 2} {
		if i, j, ok := a.searchSmall(run); ok {
			a.classify(i, j)
			return nil
		}
	}
	t := a.tq.front()
	if src, ok := a.hist.get(t.FP); ok {
		a.duplicate(a.tq.pop(), src)
		return nil
	}
	if a.searched && a.sq.popped < a.blindS && a.tq.popped < a.blindT {
		// The last hashed search found no common record in the windows: until half of one
		// has been consumed, a new one cannot find a near resynchronisation point either.
	} else if i, j, ok := a.searchWindow(); ok {
		a.searched = false
		a.classify(i, j)
		return nil
	} else {
		ns, nt := int64(a.sq.len()), int64(a.tq.len())
		a.searched = true
		a.horizonS, a.horizonT = a.sq.popped+ns, a.tq.popped+nt
		a.blindS, a.blindT = a.sq.popped+max(1, ns/2), a.tq.popped+max(1, nt/2)
	}
	if a.keysAligned() {
		a.mismatch(a.sq.pop(), a.tq.pop())
		return nil
	}
	a.fallback()
	return nil
}

// confirmed reports whether source i and target j start a run of confirmRun equal records (or
// a shorter run that reaches the end of a stream).
func (a *aligner) confirmed(i, j int) bool { return a.confirmedRun(i, j, confirmRun) }

func (a *aligner) confirmedRun(i, j, run int) bool {
	ns, nt := a.sq.len(), a.tq.len()
	si, tj, skips := i, j, 0
	for matched := 0; matched < run; {
		if si >= ns {
			return a.srcEOF
		}
		if tj >= nt {
			return a.dstEOF
		}
		tf := a.tq.at(tj).FP
		if a.sq.at(si).FP == tf {
			si, tj, matched = si+1, tj+1, matched+1
			continue
		}
		// A replay interleaved with the copies (of a record matched before, or of one of
		// this run) does not break the run.
		if skips < maxConfirmSkips && a.repeats(tf, i, si) {
			tj, skips = tj+1, skips+1
			continue
		}
		return false
	}
	return true
}

// maxConfirmSkips bounds the replayed records a confirmation run may step over.
const maxConfirmSkips = 64

// repeats reports whether fingerprint fp is a recently matched source record or one of the
// source records from..to-1 of the window.
func (a *aligner) repeats(fp uint64, from, to int) bool {
	for k := from; k < to; k++ {
		if a.sq.at(k).FP == fp {
			return true
		}
	}
	_, ok := a.hist.get(fp)
	return ok
}

// searchSmall tries every split of a skip of k = 1..smallSearch records, balanced splits
// first (so an altered record is preferred to a missing plus an extra one).
func (a *aligner) searchSmall(run int) (int, int, bool) {
	ns, nt := a.sq.len(), a.tq.len()
	for k := 1; k <= smallSearch; k++ {
		for d := 0; d <= k; d++ {
			// d walks away from the balanced split: i = k/2 ± ...
			i := k/2 + (d+1)/2*sign(d)
			if i < 0 || i > k {
				continue
			}
			j := k - i
			if i >= ns || j >= nt {
				continue
			}
			if a.sq.at(i).FP == a.tq.at(j).FP && a.confirmedRun(i, j, run) {
				return i, j, true
			}
		}
	}
	return 0, 0, false
}

func sign(d int) int {
	if d%2 == 1 {
		return 1
	}
	return -1
}

// searchWindow finds the resynchronisation point (i, j) with the smallest i+j over the whole
// windows, through a hash index of the source window.
func (a *aligner) searchWindow() (int, int, bool) {
	ns, nt := a.sq.len(), a.tq.len()
	idx := make(map[uint64]int, ns)
	for i := ns - 1; i >= 0; i-- {
		idx[a.sq.at(i).FP] = i
	}
	best, bi, bj := -1, 0, 0
	for j := 0; j < nt; j++ {
		if best >= 0 && j >= best {
			break
		}
		i, ok := idx[a.tq.at(j).FP]
		if !ok || (best >= 0 && i+j >= best) {
			continue
		}
		if a.confirmed(i, j) {
			best, bi, bj = i+j, i, j
		}
	}
	return bi, bj, best >= 0
}

// keysAligned reports whether the heads and the next few records on both sides have equal
// keys pairwise: values re-encoded in place.
func (a *aligner) keysAligned() bool {
	n := min(a.sq.len(), a.tq.len(), confirmRun)
	for k := 0; k < n; k++ {
		s, t := a.sq.at(k).Record, a.tq.at(k).Record
		if s == nil || t == nil || !bytes.Equal(s.Key, t.Key) || (s.Key == nil) != (t.Key == nil) {
			return false
		}
	}
	return n > 0
}

// fallback handles a divergence with no resynchronisation point inside the windows: the
// side whose head is older (by timestamp) is behind, so its records up to the other head's
// timestamp are missing (source) or extra (target). Only records that the last hashed search
// covered are consumed in a block (a record read since could start a resynchronisation); the
// head always is, so there is progress.
func (a *aligner) fallback() {
	s, t := a.sq.front(), a.tq.front()
	var st, tt int64
	if s.Record != nil && t.Record != nil {
		st, tt = s.Record.Timestamp.UnixMilli(), t.Record.Timestamp.UnixMilli()
		// The same key (and, for null keys, the same timestamp) at both heads: the copy of
		// this record, altered.
		if sameKey(s.Record, t.Record) && (s.Record.Key != nil || st == tt) {
			a.mismatch(a.sq.pop(), a.tq.pop())
			return
		}
	}
	if st <= tt {
		a.missing(a.sq.pop())
		for a.sq.len() > 0 && a.sq.popped < a.horizonS && a.sq.front().Record != nil && a.sq.front().Record.Timestamp.UnixMilli() < tt {
			a.missing(a.sq.pop())
		}
		return
	}
	a.extraOrDup(a.tq.pop())
	for a.tq.len() > 0 && a.tq.popped < a.horizonT && a.tq.front().Record != nil && a.tq.front().Record.Timestamp.UnixMilli() < st {
		a.extraOrDup(a.tq.pop())
	}
}

// classify explains the source records before i and the target records before j, the skipped
// blocks before a resynchronisation point: target copies of recently matched source records
// are duplicates; the others pair with the source records as mismatches (by position when the
// blocks have the same length, else by equal key in order); what is left is missing (source)
// or extra (target).
func (a *aligner) classify(i, j int) {
	srcs := make([]Item, i)
	for k := range srcs {
		srcs[k] = a.sq.pop()
	}
	tgts := make([]Item, j)
	for k := range tgts {
		tgts[k] = a.tq.pop()
	}
	// Allocated here, not in the helpers, so that small blocks stay on the stack.
	dup := make([]int64, j) // source offset repeated, or -1
	twin := make([]int, j)  // index of an earlier equal target record of this block, or -1
	rest := a.markRepeats(tgts, dup, twin)
	// pair[k] is the index in srcs of the source record target k is a mismatch of, or -1.
	pair := make([]int, j)
	pairMismatches(pair, srcs, tgts, dup, twin, rest == i)
	// Emit in order on both sides: source records up to each pair, then the pair.
	si := 0
	for k, t := range tgts {
		switch {
		case dup[k] >= 0:
			a.duplicate(t, dup[k])
		case twin[k] >= 0:
			if p := pair[twin[k]]; p >= 0 {
				a.duplicate(t, srcs[p].Offset)
			} else {
				a.extra(t)
			}
		case pair[k] >= 0:
			for ; si < pair[k]; si++ {
				a.missing(srcs[si])
			}
			if srcs[si].FP == t.FP {
				a.match(srcs[si], t)
			} else {
				a.mismatch(srcs[si], t)
			}
			si++
		default:
			a.extra(t)
		}
	}
	for ; si < i; si++ {
		a.missing(srcs[si])
	}
}

// markRepeats sets dup[k] to the recent source offset tgts[k] copies and twin[k] to an earlier equal target's index (else -1), and counts the targets that repeat nothing.
func (a *aligner) markRepeats(tgts []Item, dup []int64, twin []int) (rest int) {
	first := map[uint64]int{}
	for k, t := range tgts {
		dup[k], twin[k] = -1, -1
		if s, ok := a.hist.get(t.FP); ok {
			dup[k] = s
		} else if e, ok := first[t.FP]; ok {
			twin[k] = e // a replay of a record of this block: what that one is, this repeats
		} else {
			first[t.FP] = k
			rest++
		}
	}
	return rest
}

// pairMismatches sets pair[k], for each target of a block that repeats nothing, to the index in srcs of the record it mismatches (by position if byPosition, else by equal key in order), else -1.
func pairMismatches(pair []int, srcs, tgts []Item, dup []int64, twin []int, byPosition bool) {
	for k := range pair {
		pair[k] = -1
	}
	si := 0
	for k, t := range tgts {
		if dup[k] >= 0 || twin[k] >= 0 {
			continue
		}
		if byPosition {
			pair[k] = si
			si++
			continue
		}
		for x := si; x < len(srcs); x++ {
			if sameKey(srcs[x].Record, t.Record) {
				pair[k] = x
				si = x + 1
				break
			}
		}
	}
}

func sameKey(s, t *kgo.Record) bool {
	if s == nil || t == nil {
		return false
	}
	return (s.Key == nil) == (t.Key == nil) && bytes.Equal(s.Key, t.Key)
}

func (a *aligner) extraOrDup(t Item) {
	if s, ok := a.hist.get(t.FP); ok {
		a.duplicate(t, s)
		return
	}
	a.extra(t)
}

// --- emitting ---

// noteSource notes whether source record s repeats a recently matched one: then a
// resynchronisation could have paired the wrong copies.
func (a *aligner) noteSource(s Item) {
	if !a.repeat {
		_, a.repeat = a.hist.get(s.FP)
	}
}

func (a *aligner) match(s, t Item) {
	a.res.Matched++
	a.noteSource(s)
	a.hist.add(s.FP, s.Offset)
	a.mapCopy(s.Offset, t.Offset)
	a.sourceRun(s, true, t.Offset)
	a.srcClass, a.tgtClass = classMatched, classMatched
}

func (a *aligner) mismatch(s, t Item) {
	a.res.Mismatched++
	a.noteSource(s)
	a.events = true
	_, matched := a.hist.get(t.FP)
	_, missed := a.missed.get(t.FP)
	if matched || missed {
		a.repeat = true // the "altered" copy equals another source record: a replay or a late copy
	}
	a.hist.add(s.FP, s.Offset)
	// A replay of the altered copy repeats source s too.
	a.hist.add(t.FP, s.Offset)
	a.mapCopy(s.Offset, t.Offset)
	a.sourceRun(s, false, 0)
	if len(a.res.Mismatches) < a.opt.MaxListed {
		var fields []string
		if s.Record != nil && t.Record != nil {
			fields = offsetmap.DiffFields(s.Record, t.Record, a.opt.Fields)
		}
		if len(fields) == 0 {
			fields = a.opt.Fields.Names()
		}
		a.res.Mismatches = append(a.res.Mismatches, Mismatch{SourceOffset: s.Offset, TargetOffset: t.Offset, Fields: fields})
	} else {
		a.res.Truncated = true
	}
	a.srcClass, a.tgtClass = classMismatched, classMismatched
}

func (a *aligner) missing(s Item) {
	a.res.Missing++
	a.noteSource(s)
	if _, ok := a.extras.get(s.FP); ok {
		a.repeat = true // an extra record equal to it: a copy the alignment did not pair
	}
	a.missed.add(s.FP, s.Offset)
	a.events = a.events || !a.tail // a loss; the tail is only not copied yet
	a.sourceRun(s, false, 0)
	r := a.res.MissingRanges
	if n := len(r); n > 0 && a.srcClass == classMissing {
		r[n-1].To = s.Offset
	} else if n < a.opt.MaxListed {
		a.res.MissingRanges = append(r, SourceRange{From: s.Offset, To: s.Offset})
	} else {
		a.res.Truncated = true
	}
	a.srcClass = classMissing
}

func (a *aligner) duplicate(t Item, src int64) {
	a.res.Duplicated++
	a.events = true
	a.mapCopy(src, t.Offset)
	if len(a.res.Duplicates) < a.opt.MaxListed {
		a.res.Duplicates = append(a.res.Duplicates, offsetmap.Copy{Target: t.Offset, Source: src})
	} else {
		a.res.Truncated = true
	}
	a.tgtClass = classDuplicated
}

func (a *aligner) extra(t Item) {
	a.res.Extra++
	a.events = true
	if _, ok := a.missed.get(t.FP); ok {
		a.repeat = true // equal to a record called missing: a copy the alignment did not pair
	}
	a.extras.add(t.FP, t.Offset)
	r := a.res.ExtraRanges
	if n := len(r); n > 0 && a.tgtClass == classExtra {
		r[n-1].To = t.Offset
	} else if n < a.opt.MaxListed {
		a.res.ExtraRanges = append(r, TargetRange{From: t.Offset, To: t.Offset})
	} else {
		a.res.Truncated = true
	}
	a.tgtClass = classExtra
	a.pm.TargetTo = t.Offset + 1
}

// mapCopy records in the offset map that source s was copied at target t (a pair, or a
// replay of a source record mapped before). The aligner emits copies in source and target
// order, so Extend refuses none; if it did, the alignment is wrong and Partition says so.
func (a *aligner) mapCopy(s, t int64) {
	if _, err := a.pm.Extend(s, t); err != nil && a.mapErr == nil {
		a.mapErr = fmt.Errorf("offset map of partition %d: %w (an aligner defect: report it with the two topics' records around these offsets)", a.opt.Partition, err)
	}
}

// sourceRun tracks runs of identical consecutive source records: their matched records are
// ambiguous (which copy is which cannot be told from content).
func (a *aligner) sourceRun(s Item, matched bool, t int64) {
	a.srcPos = s.Offset + 1
	if a.runValid && a.runFP == s.FP {
		a.runLen++
		if a.runLen == 2 && a.runFirstOK {
			a.ambiguous(a.runFirstT)
		}
		if matched {
			a.ambiguous(t)
		}
		return
	}
	a.runValid, a.runFP, a.runLen = true, s.FP, 1
	a.runFirstOK, a.runFirstT = matched, t
}

func (a *aligner) ambiguous(t int64) {
	a.res.Ambiguous++
	r := a.res.AmbiguousRanges
	if n := len(r); n > 0 && r[n-1].To < t && t-r[n-1].To <= 1 {
		r[n-1].To = t
	} else if n < a.opt.MaxListed {
		a.res.AmbiguousRanges = append(r, TargetRange{From: t, To: t})
	} else {
		a.res.Truncated = true
	}
}

func (a *aligner) finish() {
	if a.opt.StrictTargetTo && a.dstEOF && a.tq.len() == 0 && a.opt.TargetTo > a.pm.TargetTo {
		a.pm.TargetTo = a.opt.TargetTo // markers or a compacted gap after the last record
	}
	a.res.TargetEnd = a.pm.TargetTo
	switch {
	case a.events && a.repeat:
		// A resynchronisation point is the nearest confirmed run of equal records: where
		// records repeat, or a record called extra equals one called missing (a short
		// stretch of copies between two events), copies can be paired wrongly.
		a.res.MapLeftOut = "records repeat and the copy has replays, losses or extra records: which copy is which was chosen by the alignment, not proven"
	case a.res.Ambiguous > 0:
		a.res.MapLeftOut = "runs of identical records: which copy is which was chosen by content, not proven"
	case a.repeat && a.tail:
		a.res.MapLeftOut = "records repeat and the copy ends before the source does: where it ends was chosen by content, not proven"
	}
	if a.tail {
		// The target ended before these source records: until it has them they are pending
		// in the map, never guessed.
		a.pm.SourceTo = a.tailFrom
	}
}

// --- queue and history ---

// queue is a FIFO of items over a slice that is compacted as it is consumed.
type queue struct {
	items  []Item
	head   int
	popped int64 // items ever popped: the absolute position of the front
}

func (q *queue) len() int       { return len(q.items) - q.head }
func (q *queue) at(i int) *Item { return &q.items[q.head+i] }
func (q *queue) front() *Item   { return &q.items[q.head] }
func (q *queue) push(it Item)   { q.compact(); q.items = append(q.items, it) }
func (q *queue) pop() (it Item) { it = q.items[q.head]; q.items[q.head] = Item{}; q.head++; return it }
func (q *queue) String() string { return fmt.Sprintf("queue(%d)", q.len()) }
func (q *queue) compact() {
	if q.head == 0 || len(q.items) < cap(q.items) {
		return
	}
	if q.head == len(q.items) {
		q.items, q.head = q.items[:0], 0
		return
	}
	if q.head >= len(q.items)/2 {
		n := copy(q.items, q.items[q.head:])
		clear(q.items[n:])
		q.items, q.head = q.items[:n], 0
	}
}

// history remembers the fingerprints of the last n matched source records, to recognise a
// target record that repeats one of them (a replay). Adding is a ring store; the index is
// brought up to date only when a lookup needs it (at a divergence), so a long matched run
// costs no map work.
type history struct {
	ring   []histEntry      // grows to n, then wraps: entry k lives in ring[k%n] while k >= adds-n
	n      int64            // capacity
	adds   int64            // entries ever added
	synced int64            // entries reflected in index
	index  map[uint64]int64 // fingerprint -> k of its latest entry (stale ones fail the check)
}

type histEntry struct {
	fp     uint64
	offset int64
}

func newHistory(n int) *history {
	return &history{ring: make([]histEntry, 0, min(n, 4096)), n: int64(n), index: map[uint64]int64{}}
}

func (h *history) add(fp uint64, offset int64) {
	if int64(len(h.ring)) < h.n {
		h.ring = append(h.ring, histEntry{fp, offset})
	} else {
		h.ring[h.adds%h.n] = histEntry{fp, offset}
	}
	h.adds++
}

func (h *history) sync() {
	n := h.n
	from := h.synced
	if h.adds-from > n || int64(len(h.index)) > 2*n {
		clear(h.index)
		from = max(0, h.adds-n)
	}
	for k := from; k < h.adds; k++ {
		h.index[h.ring[k%n].fp] = k
	}
	h.synced = h.adds
}

// get returns the latest source offset of a remembered record with fingerprint fp.
func (h *history) get(fp uint64) (int64, bool) {
	if h.synced != h.adds {
		h.sync()
	}
	k, ok := h.index[fp]
	n := h.n
	if !ok || k < h.adds-n {
		return 0, false
	}
	e := h.ring[k%n]
	if e.fp != fp {
		return 0, false
	}
	return e.offset, true
}
