package reconcile

import (
	"context"
	"fmt"
	"sort"
	"strings"

	"github.com/kmigrate/kmigrate/align"
	"github.com/kmigrate/kmigrate/offsetmap"
)

// This file finds E(G) for one group partition by aligning content locally: the few source
// records around G against a bounded target window, merged by align.Partition (the aligner kverify
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
	// srcStable and dstStable are the last stable offsets (the end of the log under
	// read_committed), at most srcEnd and dstEnd.
	srcStable, dstStable int64
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

	// The last alignment of S against T: its result and its offset map.
	pr align.PartitionResult
	pm *offsetmap.PartitionMap
}

func (a *aligner) reset(ctx context.Context, from int64) error {
	a.T, a.tFrom, a.tNext, a.read, a.pm = nil, from, from, 0, nil
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
	a.read += len(recs)
	a.tNext = recs[len(recs)-1].off + 1
	// The records of aborted transactions copy nothing a read_committed consumer reads: an
	// aborted replay of s* after its committed copy (a fenced writer's) must not move E(G).
	if recs, err = a.p.dropAborted(ctx, a.j, recs); err != nil {
		return false, err
	}
	a.T = append(a.T, recs...)
	return true, nil
}

// atEnd reports whether the window reaches the target log end.
func (a *aligner) atEnd() bool { return a.tNext >= a.j.dstEnd }

// lastMapped is the highest source offset the map places, or -1.
func (a *aligner) lastMapped() int64 {
	if n := len(a.pm.Segments); n > 0 {
		return a.pm.Segments[n-1].Source + a.pm.Segments[n-1].Len - 1
	}
	return -1
}

// lastCopyUpTo is the highest target offset holding a copy of a source record at or below
// off, or -1.
func (a *aligner) lastCopyUpTo(off int64) int64 {
	last := int64(-1)
	for _, sg := range a.pm.Segments {
		if sg.Source <= off {
			last = max(last, sg.Target+min(sg.Len-1, off-sg.Source))
		}
	}
	for _, c := range a.pm.Duplicates {
		if c.Source <= off {
			last = max(last, c.Target)
		}
	}
	return last
}

// run aligns the windows read so far with align.Partition (the aligner kverify uses), reading
// more target records while s* has not been passed or the look-ahead after its last copy is
// not covered. retry asks for an earlier window start: the first records of S were not found.
func (a *aligner) run(ctx context.Context, star int) (ans answer, retry bool, err error) {
	for {
		if err := a.align(ctx); err != nil {
			return answer{}, false, err
		}
		if len(a.pm.Segments) > 0 {
			a.p.addAnchor(a.j, a.pm.Segments[0].Source, a.pm.Segments[0].Target)
		}
		if !a.needMore(star) {
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
	if len(a.pm.Segments) == 0 {
		return a.notFound()
	}
	if star >= 0 && a.pm.Segments[0].Source > a.S[star].off && a.tFrom > a.j.dstStart {
		return answer{}, true, nil // the copies of the records below G start before the window
	}
	return a.answer(star), false, nil
}

// needMore reports whether the window must grow: nothing is mapped yet, s* is not passed, or
// the look-ahead after the last copy of a record up to s* (where a replay of it would be) is
// not read yet.
func (a *aligner) needMore(star int) bool {
	last := a.lastMapped()
	if last < 0 || star >= 0 && last <= a.S[star].off {
		return true
	}
	if star < 0 {
		return false
	}
	t := a.lastCopyUpTo(a.S[star].off)
	return t >= 0 && t+int64(a.p.cfg.Window) >= a.tNext
}

// notFound explains an alignment that mapped no record of S: an earlier window, pending, or
// unmappable.
func (a *aligner) notFound() (answer, bool, error) {
	j := a.j
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

// align runs align.Partition over the source records S and the target window T. The source
// range it covers reaches G: reconcile read every source record below G.
func (a *aligner) align(ctx context.Context) error {
	items := func(rs []rec) []align.Item {
		out := make([]align.Item, len(rs))
		for i, r := range rs {
			out[i] = align.Item{Offset: r.off, FP: r.fp, Record: r.r}
		}
		return out
	}
	n := len(a.S) + len(a.T)
	pr, pm, err := align.Partition(ctx, &align.SliceStream{Items: items(a.S)}, &align.SliceStream{Items: items(a.T)}, align.Options{
		Partition: a.j.part, Fields: a.p.cfg.Fields, Window: n + 8, MaxListed: n + 1,
		// The history only has to hold the source records matched here, at most len(S): the
		// default (100,000) cost an allocation of its ring's first 4,096 entries per call.
		History:    n + 8,
		SourceFrom: a.S[0].off, SourceTo: max(a.S[len(a.S)-1].off+1, a.j.g),
		TargetFrom: a.tFrom, TargetTo: a.tNext,
		// Every target record of the window is classified: a replay of s* after the copies of
		// the records read is what the look-ahead is for.
		StrictTargetTo: true,
	})
	a.pr, a.pm = pr, pm
	return err
}

// index returns the index in S of source offset off, or -1.
func (a *aligner) index(off int64) int {
	k := sort.Search(len(a.S), func(k int) bool { return a.S[k].off >= off })
	if k < len(a.S) && a.S[k].off == off {
		return k
	}
	return -1
}

// target returns the record of the window at target offset off.
func (a *aligner) target(off int64) (rec, bool) {
	k := sort.Search(len(a.T), func(k int) bool { return a.T[k].off >= off })
	if k < len(a.T) && a.T[k].off == off {
		return a.T[k], true
	}
	return rec{}, false
}

// seqEnd is the target offset of the last in-order copy (the end of the last segment), or -1.
func (a *aligner) seqEnd() int64 {
	end := int64(-1)
	for _, sg := range a.pm.Segments {
		end = max(end, sg.Target+sg.Len-1)
	}
	return end
}

// extras are the target offsets of the window that copy no source record read, below the last
// in-order copy: past it, target records may copy source records beyond S.
func (a *aligner) extras() []int64 {
	var out []int64
	end := a.seqEnd()
	for _, r := range a.pr.ExtraRanges {
		for _, t := range a.T {
			if t.off >= r.From && t.off <= r.To && t.off < end {
				out = append(out, t.off)
			}
		}
	}
	return out
}

// weak reports whether source offset off has a lone copy after the last in-order copy: a
// content match that nothing confirms (it may be a later record with the same content, beyond
// the source window). Two or more consecutive target records copying consecutive source
// records past it are a replay, confirmed.
func (a *aligner) weak(off int64) bool {
	end := a.seqEnd()
	type dup struct {
		k int
		t int64
	}
	var late []dup
	for _, c := range a.pm.Duplicates {
		if k := a.index(c.Source); k >= 0 && c.Target > end {
			late = append(late, dup{k, c.Target})
		}
	}
	sort.Slice(late, func(x, y int) bool { return late[x].t < late[y].t })
	for x, d := range late {
		prev := x > 0 && late[x-1].t == d.t-1 && late[x-1].k == d.k-1
		next := x+1 < len(late) && late[x+1].t == d.t+1 && late[x+1].k == d.k+1
		if !prev && !next && a.S[d.k].off == off {
			return true
		}
	}
	return false
}

// answer takes E(G) from the alignment's offset map (offsetmap.PartitionMap.ExactTarget) and
// keeps it only when content can tell: it refuses when the mirror has not passed s*, when s*
// has no copy, when its last copy is a lone late match, when a run of identical records around
// G has a loss or a replay in it, and when the copy differs.
func (a *aligner) answer(star int) answer {
	j := a.j
	base := answer{extras: a.extras(), winFrom: a.tFrom, winTo: a.tNext}
	tr := a.pm.ExactTarget(j.g)
	if star < 0 {
		// No source record below G: E is the first copy of the first mirrored record >= G.
		k := a.index(a.pm.Segments[0].Source)
		base.known, base.e = true, tr.Target
		base.proof = fmt.Sprintf("no source record below %d (log start %d); fingerprint %016x of source offset %d = target offset %d", j.g, j.srcStart, a.S[k].fp, a.S[k].off, tr.Target)
		return base
	}
	if last := a.lastMapped(); last < a.S[star].off || !tr.Known {
		return a.behind(base, last, star)
	}
	if !tr.HasPrev {
		base.status = StatusUnmappable
		base.reason = fmt.Sprintf("record not found: none of source %s/%d offsets %d..%d is on the target near offset %d", j.srcTopic, j.part, a.S[0].off, a.S[star].off, a.tFrom)
		return base
	}
	s := a.index(tr.Prev) // s*, the largest mirrored source record below G
	copies := a.pm.Copies(tr.Prev)
	last, _ := a.target(tr.PrevTarget)
	if why := a.refuse(s, last); why != "" {
		base.status, base.reason = StatusUnmappable, why
		return base
	}
	base.known, base.e = true, tr.Target
	base.proof = fmt.Sprintf("fingerprint %016x of source offset %d = target offset %d (%s)", a.S[s].fp, a.S[s].off, last.off, strings.Join(a.notes(star, s, len(copies), base), "; "))
	return base
}

// behind is the answer when nothing at or after s* (index star) has been mapped: the mirror
// has not passed G (pending) when the window reaches the target end, else the read budget ran
// out. last is the highest source offset mapped, or -1.
func (a *aligner) behind(base answer, last int64, star int) answer {
	j := a.j
	if a.atEnd() {
		base.status = StatusPending
		upTo := "nothing"
		if last >= 0 {
			upTo = fmt.Sprintf("source offset %d", last)
		}
		base.reason = fmt.Sprintf("the mirror has copied %s/%d up to %s, not yet offset %d below the committed %d", j.srcTopic, j.part, upTo, a.S[star].off, j.g)
		return base
	}
	base.status = StatusUnmappable
	base.reason = fmt.Sprintf("record not found: source %s/%d offset %d has no copy in target offsets %d..%d (read budget reached)", j.srcTopic, j.part, a.S[star].off, a.tFrom, a.tNext-1)
	return base
}

// refuse says why the answer from s* (index s, its last copy at last) cannot be proven by
// content, or "".
func (a *aligner) refuse(s int, last rec) string {
	if a.weak(a.S[s].off) {
		return fmt.Sprintf("ambiguous: target offset %d repeats source offset %d but nothing after it confirms a replay (it may be a new identical record)", last.off, a.S[s].off)
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
			n += len(a.pm.Copies(a.S[k].off))
		}
		if n != hi-lo+1 {
			return fmt.Sprintf("ambiguous run of identical records: source offsets %d..%d are identical and the target holds %d copies of them", a.S[lo].off, a.S[hi].off, n)
		}
	}
	if last.fp != a.S[s].fp {
		return fmt.Sprintf("record altered: target offset %d sits where source offset %d was copied but differs in %v", last.off, a.S[s].off, offsetmap.DiffFields(a.S[s].r, last.r, a.p.cfg.Fields))
	}
	return ""
}

// notes are what the proof says besides the fingerprints: records missing below G, replays,
// extras right after E, and how far the window reached.
func (a *aligner) notes(star, s, copies int, ans answer) []string {
	j := a.j
	var notes []string
	if s < star {
		notes = append(notes, fmt.Sprintf("source offsets %d..%d are missing on the target", a.S[s+1].off, a.S[star].off))
	}
	if copies > 1 {
		notes = append(notes, fmt.Sprintf("%d copies of it, the last one counts", copies))
	} else if dups := a.pr.Duplicated; dups > 0 {
		notes = append(notes, fmt.Sprintf("%d replayed records in the window", dups))
	}
	// Target records between E and the copy of the next source record copy nothing that is on
	// the source now: compacted there after mirroring, or written to the target directly. E
	// stays below them: never above the truth, at the price of re-reading them.
	for k := star + 1; k < len(a.S); k++ {
		c := a.pm.Copies(a.S[k].off)
		if len(c) == 0 {
			continue
		}
		n := 0
		for _, x := range ans.extras {
			if x >= ans.e && x < c[0] {
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
	return notes
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
