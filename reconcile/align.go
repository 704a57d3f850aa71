package reconcile

import (
	"context"
	"fmt"
	"sort"
	"strings"

	"github.com/kmigrate/kmigrate/offsetmap"
	"github.com/kmigrate/kmigrate/verify"
)

// This file finds E(G) for one group partition by aligning content locally: the few source
// records around G against a bounded target window, merged by verify.Align (the aligner kverify
// uses, so replays, losses, extras and altered records are classified the same way in both
// tools). What stays here is what only reconcile needs: which records to read (walking back
// over gaps below G, extending the target window lazily), and the rules for the answer (the
// last copy of s*, ambiguity, pending).

// job is one source partition and committed offset to translate.
type job struct {
	srcTopic, dstTopic string
	part               int32
	g                  int64
	srcStart, srcEnd   int64
	dstStart, dstEnd   int64
}

// answer is E(G) or why it is not known.
type answer struct {
	known  bool
	e      int64
	status Status // "" when known; StatusPending or StatusUnmappable otherwise
	reason string
	proof  string
	// extras are target offsets inside the aligned window that copy no source record read.
	extras []int64
	// winFrom, winTo bound the target window that was aligned.
	winFrom, winTo int64
}

func unmappable(format string, args ...any) answer {
	return answer{status: StatusUnmappable, reason: fmt.Sprintf(format, args...)}
}

func pending(format string, args ...any) answer {
	return answer{status: StatusPending, reason: fmt.Sprintf(format, args...)}
}

// locate computes E(G) for j from content.
func (p *planner) locate(ctx context.Context, j job) (answer, error) {
	cfg := p.cfg
	if j.g > j.srcEnd {
		return unmappable("committed offset %d is above the source log end %d of %s/%d", j.g, j.srcEnd, j.srcTopic, j.part), nil
	}
	// The source records just below G. G-1 may not exist (transaction markers, compaction,
	// deleted records): walk back until a record is found or the log start is reached.
	var below []rec
	span := int64(cfg.Before)
	for try := 0; j.g > j.srcStart; try++ {
		from := max(j.srcStart, j.g-span)
		recs, err := p.src.read(ctx, j.srcTopic, j.part, from, j.g, 0, cfg.Fields)
		if err != nil {
			return answer{}, err
		}
		if len(recs) > 0 {
			if len(recs) > cfg.Before {
				recs = recs[len(recs)-cfg.Before:]
			}
			below = recs
			break
		}
		if from <= j.srcStart || try >= 12 {
			break
		}
		span *= 8
	}
	after, err := p.src.read(ctx, j.srcTopic, j.part, max(j.g, j.srcStart), j.srcEnd, cfg.Before, cfg.Fields)
	if err != nil {
		return answer{}, err
	}
	S := append(append([]rec(nil), below...), after...)
	star := len(below) - 1 // index of s* in S, -1 when no source record is below G
	if len(S) == 0 {
		return answer{known: true, e: j.dstEnd,
			proof: fmt.Sprintf("the source has no record below or at offset %d (log %d..%d): the group's next record will be mirrored at or after target end %d", j.g, j.srcStart, j.srcEnd, j.dstEnd)}, nil
	}

	a := &aligner{p: p, j: j, S: S}
	// Where to start reading the target: hints bound it, they never decide it.
	lb := p.targetLowerBound(ctx, j, S[0])
	from := max(j.dstStart, lb-int64(cfg.Before))
	for try := 0; ; try++ {
		if err := a.reset(ctx, from); err != nil {
			return answer{}, err
		}
		ans, retry, err := a.run(ctx, star)
		if err != nil {
			return answer{}, err
		}
		if !retry || from <= j.dstStart || try >= 3 {
			return ans, nil
		}
		from = max(j.dstStart, from-int64(cfg.Window)*int64(try+1)*4)
	}
}

// targetLowerBound returns a target offset at or below the copy of source record r, from
// MM2's offset syncs or from r's timestamp, else the target log start.
func (p *planner) targetLowerBound(ctx context.Context, j job, r rec) int64 {
	lb, found := p.syncs.LowerBound(j.srcTopic, j.part, r.off)
	// What earlier alignments of this partition found: the first copy of a source record at or
	// below r lies at or below the copy of r.
	if d, ok := p.anchorBelow(j, r.off); ok {
		lb, found = max(lb, d), true
	}
	if found {
		return lb
	}
	if ts := r.r.Timestamp.UnixMilli(); ts > 0 {
		if o, err := p.dst.offsetAfterMilli(ctx, j.dstTopic, j.part, ts); err == nil && o >= 0 {
			return o
		}
	}
	return j.dstStart
}

// aligner matches source records S against a target window T read forward from a start.
type aligner struct {
	p *planner
	j job
	S []rec
	T []rec

	tFrom, tNext int64 // the target window [tFrom, tNext) read so far
	read         int
	copies       [][]int // per source index, indices into T of its copies
	weak         []bool  // per source index: a copy was placed without confirming context
	extras       []int64
}

func (a *aligner) reset(ctx context.Context, from int64) error {
	a.T, a.tFrom, a.tNext, a.read, a.extras = nil, from, from, 0, nil
	a.copies = make([][]int, len(a.S))
	a.weak = make([]bool, len(a.S))
	_, err := a.more(ctx)
	return err
}

// more reads the next chunk of the target window; false when at the end or the budget.
func (a *aligner) more(ctx context.Context) (bool, error) {
	cfg := a.p.cfg
	if a.tNext >= a.j.dstEnd || a.read >= cfg.MaxTargetRead {
		return false, nil
	}
	to := min(a.j.dstEnd, a.tNext+int64(cfg.Window))
	recs, err := a.p.dst.read(ctx, a.j.dstTopic, a.j.part, a.tNext, to, cfg.Window, cfg.Fields)
	if err != nil {
		return false, err
	}
	if len(recs) == 0 {
		a.tNext = to
		return to < a.j.dstEnd, nil
	}
	a.T = append(a.T, recs...)
	a.read += len(recs)
	a.tNext = recs[len(recs)-1].off + 1
	return true, nil
}

// atEnd reports whether the window reaches the target log end.
func (a *aligner) atEnd() bool { return a.tNext >= a.j.dstEnd }

// run aligns the windows read so far with verify.Align (the aligner kverify uses), reading
// more target records while s* has not been passed or the look-ahead after its last copy is
// not covered. retry asks for an earlier window start: the first records of S were not found.
func (a *aligner) run(ctx context.Context, star int) (ans answer, retry bool, err error) {
	j := a.j
	var dups int64
	for {
		pr, pm, err := a.align(ctx)
		if err != nil {
			return answer{}, false, err
		}
		dups = pr.Duplicated
		a.fromMap(pm, pr)
		for k := range a.S {
			if len(a.copies[k]) > 0 {
				a.p.addAnchor(j, a.S[k].off, a.T[a.copies[k][0]].off)
				break
			}
		}
		matched, lastStar := -1, int64(-1)
		for k := range a.S {
			if n := len(a.copies[k]); n > 0 {
				matched = k
				if k <= star {
					lastStar = max(lastStar, a.T[a.copies[k][n-1]].off)
				}
			}
		}
		need := matched < 0 || star >= 0 && matched <= star
		if lastStar >= 0 && lastStar+int64(a.p.cfg.Window) >= a.tNext {
			need = true
		}
		if !need {
			break
		}
		ok, err := a.more(ctx)
		if err != nil {
			return answer{}, false, err
		}
		if !ok {
			break
		}
	}
	first := -1
	for k := range a.S {
		if len(a.copies[k]) > 0 {
			first = k
			break
		}
	}
	if first < 0 {
		if !a.atEnd() {
			return unmappable("record not found: no copy of source %s/%d offsets %d..%d in target %s/%d offsets %d..%d (read budget %d records)",
				j.srcTopic, j.part, a.S[0].off, a.S[len(a.S)-1].off, j.dstTopic, j.part, a.tFrom, a.tNext-1, a.p.cfg.MaxTargetRead), false, nil
		}
		if a.tFrom > j.dstStart {
			return answer{}, true, nil
		}
		if j.dstEnd == j.dstStart {
			return pending("the target partition %s/%d is empty: the mirror has not copied it yet", j.dstTopic, j.part), false, nil
		}
		if up := a.p.syncs.MaxUpstream(j.srcTopic, j.part); up >= 0 && up < a.S[0].off {
			return pending("the mirror's newest offset sync is for source offset %d, below %d", up, a.S[0].off), false, nil
		}
		return unmappable("record not found: no copy of source %s/%d offsets %d..%d in target %s/%d offsets %d..%d",
			j.srcTopic, j.part, a.S[0].off, a.S[len(a.S)-1].off, j.dstTopic, j.part, a.tFrom, a.tNext-1), false, nil
	}
	if star >= 0 && first > star && a.tFrom > j.dstStart {
		return answer{}, true, nil // the copies of the records below G start before the window
	}
	return a.answer(star, int(dups)), false, nil
}

// align runs verify.Align over the source records S and the target window T.
func (a *aligner) align(ctx context.Context) (verify.PartitionResult, *offsetmap.PartitionMap, error) {
	items := func(rs []rec) []verify.Item {
		out := make([]verify.Item, len(rs))
		for i, r := range rs {
			out[i] = verify.Item{Offset: r.off, FP: r.fp, Record: r.r}
		}
		return out
	}
	n := len(a.S) + len(a.T)
	return verify.Align(ctx, &verify.SliceStream{Items: items(a.S)}, &verify.SliceStream{Items: items(a.T)}, verify.AlignOptions{
		Partition: a.j.part, Fields: a.p.cfg.Fields, Window: n + 8, MaxListed: n + 1,
		SourceFrom: a.S[0].off, SourceTo: a.S[len(a.S)-1].off + 1,
		TargetFrom: a.tFrom, TargetTo: a.tNext,
		// Every target record of the window is classified: a replay of s* after the copies of
		// the records read is what the look-ahead is for.
		StrictTargetTo: true,
	})
}

// fromMap turns the alignment into copies per source index and the extras. A lone duplicate
// found after the last in-order copy is only a content match that nothing confirms (it may be
// a later record with the same content, beyond the source window): weak.
func (a *aligner) fromMap(pm *offsetmap.PartitionMap, pr verify.PartitionResult) {
	at := make(map[int64]int, len(a.T)) // target offset -> index in T
	for i, t := range a.T {
		at[t.off] = i
	}
	src := make(map[int64]int, len(a.S)) // source offset -> index in S
	for i, s := range a.S {
		src[s.off] = i
	}
	a.copies = make([][]int, len(a.S))
	a.weak = make([]bool, len(a.S))
	a.extras = nil
	var seqEnd int64 = -1 // target offset of the last in-order copy
	for _, sg := range pm.Segments {
		for d := range sg.Len {
			k, ok1 := src[sg.Source+d]
			ti, ok2 := at[sg.Target+d]
			if ok1 && ok2 {
				a.copies[k] = append(a.copies[k], ti)
				seqEnd = max(seqEnd, sg.Target+d)
			}
		}
	}
	// Duplicates past seqEnd: a run of two or more consecutive target records copying
	// consecutive source records is a replay; a lone one is weak.
	type dup struct{ k, ti int }
	var late []dup
	for _, c := range pm.Duplicates {
		k, ok1 := src[c.Source]
		ti, ok2 := at[c.Target]
		if !ok1 || !ok2 {
			continue
		}
		a.copies[k] = append(a.copies[k], ti)
		if c.Target > seqEnd {
			late = append(late, dup{k, ti})
		}
	}
	sort.Slice(late, func(x, y int) bool { return late[x].ti < late[y].ti })
	for x, d := range late {
		prev := x > 0 && late[x-1].ti == d.ti-1 && late[x-1].k == d.k-1
		next := x+1 < len(late) && late[x+1].ti == d.ti+1 && late[x+1].k == d.k+1
		if !prev && !next {
			a.weak[d.k] = true
		}
	}
	for k := range a.copies {
		sort.Ints(a.copies[k])
	}
	// Extras count only below the last in-order copy: past it, target records may copy
	// source records beyond the window.
	for _, r := range pr.ExtraRanges {
		for _, t := range a.T {
			if t.off >= r.From && t.off <= r.To && t.off < seqEnd {
				a.extras = append(a.extras, t.off)
			}
		}
	}
}

// answer turns the alignment into E(G), refusing whenever content cannot tell.
func (a *aligner) answer(star, dups int) answer {
	j := a.j
	base := answer{extras: a.extras, winFrom: a.tFrom, winTo: a.tNext}
	matchedUpTo := -1
	for k := range a.S {
		if len(a.copies[k]) > 0 {
			matchedUpTo = k
		}
	}
	if star < 0 {
		// No source record below G: E is the first copy of the first mirrored record >= G.
		for k := range a.S {
			if len(a.copies[k]) > 0 {
				t := a.T[a.copies[k][0]]
				base.known, base.e = true, t.off
				base.proof = fmt.Sprintf("no source record below %d (log start %d); fingerprint %016x of source offset %d = target offset %d", j.g, j.srcStart, a.S[k].fp, a.S[k].off, t.off)
				return base
			}
		}
		base.status, base.reason = StatusPending, fmt.Sprintf("the mirror has not copied source %s/%d offset %d yet", j.srcTopic, j.part, a.S[0].off)
		return base
	}
	s := -1 // the largest mirrored source index below G
	for k := star; k >= 0; k-- {
		if len(a.copies[k]) > 0 {
			s = k
			break
		}
	}
	if s < star && matchedUpTo <= star {
		// Nothing at or after s* has arrived: the mirror is behind G.
		if a.atEnd() {
			base.status = StatusPending
			last := "nothing"
			if matchedUpTo >= 0 {
				last = fmt.Sprintf("source offset %d", a.S[matchedUpTo].off)
			}
			base.reason = fmt.Sprintf("the mirror has copied %s/%d up to %s, not yet offset %d below the committed %d", j.srcTopic, j.part, last, a.S[star].off, j.g)
			return base
		}
		base.status = StatusUnmappable
		base.reason = fmt.Sprintf("record not found: source %s/%d offset %d has no copy in target offsets %d..%d (read budget reached)", j.srcTopic, j.part, a.S[star].off, a.tFrom, a.tNext-1)
		return base
	}
	if s < 0 {
		base.status = StatusUnmappable
		base.reason = fmt.Sprintf("record not found: none of source %s/%d offsets %d..%d is on the target near offset %d", j.srcTopic, j.part, a.S[0].off, a.S[star].off, a.tFrom)
		return base
	}
	if a.weak[s] {
		base.status = StatusUnmappable
		last := a.T[a.copies[s][len(a.copies[s])-1]]
		base.reason = fmt.Sprintf("ambiguous: target offset %d repeats source offset %d but nothing after it confirms a replay (it may be a new identical record)", last.off, a.S[s].off)
		return base
	}
	// A run of identical records that straddles G: only exact when the target holds exactly
	// one copy of each (no duplicate or loss inside the run).
	lo, hi := s, s
	for lo > 0 && a.S[lo-1].fp == a.S[s].fp {
		lo--
	}
	for hi+1 < len(a.S) && a.S[hi+1].fp == a.S[s].fp {
		hi++
	}
	if hi > s {
		n := 0
		for k := lo; k <= hi; k++ {
			n += len(a.copies[k])
		}
		if n != hi-lo+1 {
			base.status = StatusUnmappable
			base.reason = fmt.Sprintf("ambiguous run of identical records: source offsets %d..%d are identical and the target holds %d copies of them", a.S[lo].off, a.S[hi].off, n)
			return base
		}
	}
	last := a.T[a.copies[s][len(a.copies[s])-1]]
	if last.fp != a.S[s].fp {
		base.status = StatusUnmappable
		base.reason = fmt.Sprintf("record altered: target offset %d sits where source offset %d was copied but differs in %v", last.off, a.S[s].off, offsetmap.DiffFields(a.S[s].r, last.r, a.p.cfg.Fields))
		return base
	}
	base.known, base.e = true, last.off+1
	var notes []string
	if s < star {
		notes = append(notes, fmt.Sprintf("source offsets %d..%d are missing on the target", a.S[s+1].off, a.S[star].off))
	}
	if n := len(a.copies[s]); n > 1 {
		notes = append(notes, fmt.Sprintf("%d copies of it, the last one counts", n))
	} else if dups > 0 {
		notes = append(notes, fmt.Sprintf("%d replayed records in the window", dups))
	}
	// Target records between E and the copy of the next source record copy nothing that is on
	// the source now: compacted there after mirroring, or written to the target directly. E
	// stays below them: never above the truth, at the price of re-reading them.
	for k := star + 1; k < len(a.S); k++ {
		if len(a.copies[k]) == 0 {
			continue
		}
		next, n := a.T[a.copies[k][0]].off, 0
		for _, x := range a.extras {
			if x >= base.e && x < next {
				n++
			}
		}
		if n > 0 {
			notes = append(notes, fmt.Sprintf("%d target records after E copy no record the source holds now (compacted after mirroring, or written to the target): a consumer at E reads them", n))
		}
		break
	}
	if a.atEnd() {
		notes = append(notes, fmt.Sprintf("checked to target end %d", j.dstEnd))
	} else {
		notes = append(notes, fmt.Sprintf("no later copy up to target offset %d", a.tNext-1))
	}
	base.proof = fmt.Sprintf("fingerprint %016x of source offset %d = target offset %d (%s)", a.S[s].fp, a.S[s].off, last.off, strings.Join(notes, "; "))
	return base
}

// anchor is a source record and the target offset of its first copy, found by an alignment.
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

// anchorBelow returns the first-copy target offset of the highest known source record at or
// below off.
func (p *planner) anchorBelow(j job, off int64) (int64, bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	best := anchor{src: -1}
	for _, a := range p.anchors[tp{j.srcTopic, j.part}] {
		if a.src <= off && a.src > best.src {
			best = a
		}
	}
	return best.dst, best.src >= 0
}
