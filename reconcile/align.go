package reconcile

import (
	"context"
	"fmt"
	"strings"
)

// This file finds E(G) for one group partition by aligning content locally: the few source
// records around G against a bounded target window. It is the stand-in for
// verify.AlignPartition until that lands; the rules for the answer (the last copy of s*,
// ambiguity, pending) stay here either way.

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
	if p.syncs != nil {
		if d, ok := p.syncs.lowerBound(j.srcTopic, j.part, r.off); ok {
			return d
		}
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

// agree counts how many pairs (S[i+m], T[j+m]), m >= 0, are equal in a row, up to n.
func (a *aligner) agree(i, j, n int) int {
	m := 0
	for m < n && i+m < len(a.S) && j+m < len(a.T) && a.S[i+m].fp == a.T[j+m].fp {
		m++
	}
	return m
}

// confirmed reports whether T[j] copies S[k] with the following records agreeing as far as
// both sides go (up to 3), and whether that context was empty (weak).
func (a *aligner) confirmed(k, j int) (ok, weak bool) {
	want := min(3, len(a.S)-k, len(a.T)-j)
	if a.agree(k, j, want) != want {
		return false, false
	}
	return true, want <= 1
}

// run aligns from the current window. retry asks for an earlier window start: the first
// records of S were not found in it.
func (a *aligner) run(ctx context.Context, star int) (ans answer, retry bool, err error) {
	// Anchor: the first target record that copies a source record of S, with context.
	i0, j0 := -1, -1
	for j := 0; i0 < 0; j++ {
		for j >= len(a.T) {
			ok, err := a.more(ctx)
			if err != nil {
				return answer{}, false, err
			}
			if !ok {
				break
			}
		}
		if j >= len(a.T) {
			break
		}
		for i := range a.S {
			if a.S[i].fp != a.T[j].fp {
				continue
			}
			if ok, _ := a.confirmed(i, j); ok {
				i0, j0 = i, j
				break
			}
		}
	}
	j := a.j
	if i0 < 0 {
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
		if p := a.p.syncs; p != nil {
			if up := p.maxUpstream(j.srcTopic, j.part); up >= 0 && up < a.S[0].off {
				return pending("the mirror's newest offset sync is for source offset %d, below %d", up, a.S[0].off), false, nil
			}
		}
		return unmappable("record not found: no copy of source %s/%d offsets %d..%d in target %s/%d offsets %d..%d",
			j.srcTopic, j.part, a.S[0].off, a.S[len(a.S)-1].off, j.dstTopic, j.part, a.tFrom, a.tNext-1), false, nil
	}
	if star >= 0 && i0 > star && a.tFrom > j.dstStart {
		return answer{}, true, nil // the copies of the records below G start before the window
	}

	// Merge forward from the anchor, reading more target records while s* has not been passed
	// or the look-ahead after its last copy is not covered.
	i := i0
	lastStar := -1 // target index of the last copy of any source index <= star
	dups := 0
	hi := i0 // one past the highest source index matched so far
	for jj := j0; ; jj++ {
		for jj >= len(a.T) {
			need := i <= star || lastStar < 0 && star >= 0
			if lastStar >= 0 && a.T[lastStar].off+int64(a.p.cfg.Window) >= a.tNext {
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
		if jj >= len(a.T) {
			break
		}
		t := a.T[jj]
		before := i
		switch {
		case i < len(a.S) && a.S[i].fp == t.fp:
			a.copies[i] = append(a.copies[i], jj)
			i++
		default:
			if k, weak := a.search(i, jj, -1); k >= 0 { // a replay of an earlier record
				a.copies[k] = append(a.copies[k], jj)
				a.weak[k] = a.weak[k] || weak
				i = k + 1
			} else if k, weak := a.search(i, jj, +1); k >= 0 { // S[i..k-1] missing on the target
				a.copies[k] = append(a.copies[k], jj)
				a.weak[k] = a.weak[k] || weak
				i = k + 1
			} else {
				a.extras = append(a.extras, t.off)
			}
		}
		if placed := i - 1; i != before || placed >= 0 && placed < hi && a.copies[placed][len(a.copies[placed])-1] == jj {
			if placed < hi {
				dups++ // a source record matched before: a replayed copy
			}
			hi = max(hi, i)
		}
		if star >= 0 {
			for k := 0; k <= star; k++ {
				if n := len(a.copies[k]); n > 0 && a.copies[k][n-1] == jj {
					lastStar = jj
				}
			}
		}
	}
	return a.answer(star, dups), false, nil
}

// search looks for S[k] == T[j] with confirming context, k < i (dir -1, nearest first) or
// k > i (dir +1, nearest first).
func (a *aligner) search(i, j, dir int) (int, bool) {
	if dir < 0 {
		for k := min(i, len(a.S)) - 1; k >= 0; k-- {
			if a.S[k].fp == a.T[j].fp {
				if ok, weak := a.confirmed(k, j); ok {
					return k, weak
				}
			}
		}
		return -1, false
	}
	for k := i + 1; k < len(a.S); k++ {
		if a.S[k].fp == a.T[j].fp {
			if ok, weak := a.confirmed(k, j); ok {
				return k, weak
			}
		}
	}
	return -1, false
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
	if a.atEnd() {
		notes = append(notes, fmt.Sprintf("checked to target end %d", j.dstEnd))
	} else {
		notes = append(notes, fmt.Sprintf("no later copy up to target offset %d", a.tNext-1))
	}
	base.proof = fmt.Sprintf("fingerprint %016x of source offset %d = target offset %d (%s)", a.S[s].fp, a.S[s].off, last.off, strings.Join(notes, "; "))
	return base
}
