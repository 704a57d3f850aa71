package align

import (
	"fmt"
	"math"
	"slices"
	"sort"
	"sync"
)

// Locate finds E(G) for one partition from content alone: which target records copy which
// source records around a committed offset G, when the records repeat (a few distinct values,
// null keys, long runs of identical records) as real topics do.
//
// A mirror copies a partition in order; what can break the order is an event: a replay (the
// mirror restarts at an earlier source record and copies forward again), a loss (it skips
// source records), or extra target records (copies of nothing). Locate considers every
// explanation of the window, a label per target record (the source record it copies, a
// record below or past the source window, or extra), and keeps those with the fewest events,
// then the fewest records left unexplained by the source window. E(G) is known when all of
// them agree on it, and so do the explanations with up to Margin events more that the
// content after their last event backs (TailBits) and that call no more records extra
// although they equal source records (by TailBits of content); otherwise the positions are
// indistinguishable by content and Locate says so (Located.Ambiguous), naming the offsets
// (Outcomes, Near).
//
// So a target record past the copy of G-1 is a replay only when no source record at or after
// G accounts for it: an in-order copy of the source past G explains it with no event at all.
// The caller must read the source past G as far as the target window goes (Located.NeedSource
// says when it must read more) and the target to its end: a replay of a record below G can
// come any time after its first copy.
//
// Facts from an exact source (kmirror's offset map, MM2's offset syncs) enter as Pins: target
// offset t copies source offset s. Every explanation must agree with them.

// LocateInput is one window of a partition around a committed offset G.
type LocateInput struct {
	// Source holds the source records read, in offset order: some below G and some at or
	// after it. Target holds the target records read, in offset order, without the records of
	// aborted transactions (no reader who skips them sees them).
	Source, Target []Item
	// G is the committed source offset.
	G int64
	// SourceAtEnd says that no source record follows the last of Source (the source log end).
	SourceAtEnd bool
	// NoSourceBelow says that the source holds no record below G: the group has consumed no
	// record that is still on the source.
	NoSourceBelow bool
	// TargetAtEnd says that Target reaches the target's end.
	TargetAtEnd bool
	// Start is the source offset Target[0] is expected to copy (the hint both windows were
	// read from): an explanation that starts anywhere else pays an event, and Located.StartsOff
	// says when every best one does. -1: Source[0]; -2: no expectation (every start is an
	// event alike).
	Start int64
	// Pins are known copies: target offset Pin.Target holds a copy of source offset
	// Pin.Source. Pins outside the window are ignored; a pin content contradicts is reported
	// in Located.BadPins and ignored.
	Pins []Pin
	// MaxWork bounds the explanation states examined (0: DefaultLocateWork).
	MaxWork int
}

// Pin is a known copy: source offset Source was copied to target offset Target; Source -1
// says the record at Target is known to copy no record of the flow (a map that covers it has
// no copy there).
type Pin struct{ Source, Target int64 }

// DefaultLocateWork bounds Locate's work: about a second of CPU.
const DefaultLocateWork = 40_000_000

// OutcomeKind says what one optimal explanation makes of G.
type OutcomeKind uint8

const (
	// Known: E(G) is 1 + the last copy of s*, or (with no source record below G) the first
	// copy of a record at or after G.
	Known OutcomeKind = iota + 1
	// Pending: the mirror has not yet copied the source record below G nor anything after it.
	Pending
	// NotFound: no source record below G of the window has a copy in the target window.
	NotFound
)

// Outcome is what the optimal explanations make of G; Locate returns one per distinct answer.
type Outcome struct {
	Kind OutcomeKind
	// Bits is the evidence behind the copy that decides E(G): how unlikely, in bits, the
	// unbroken run of matching records through it is by chance, given how often each
	// record's content occurs in Source. A short match of content that repeats is weak.
	Bits float64
	// E is E(G) for Known.
	E int64
	// Prev is the source offset of s* and PrevTarget the offset of its last copy, for Known
	// with a source record below G (HasPrev).
	HasPrev          bool
	Prev, PrevTarget int64
}

// Located is Locate's answer.
type Located struct {
	// Outcomes are the distinct answers of the explanations with the fewest events; exactly
	// one when the window decides E(G).
	Outcomes []Outcome
	// Events is the fewest events that explain the window: replays, losses, extra records.
	Events int
	// Overflow says the window has more optimal explanations (or states) than Locate tracks:
	// treat as ambiguous.
	Overflow bool
	// NeedSource says an optimal explanation copies source records past the source window:
	// read more source after it.
	NeedSource bool
	// StartsOff says no best explanation starts with the copy of Start: the windows do not
	// start where the hint said; read the target from earlier.
	StartsOff bool
	// Extras are the target offsets every optimal explanation calls extra, after the first
	// copy of a record of the window (before it: copies of records below the window, deleted
	// from the source or not read).
	Extras []int64
	// BadPins are the pins content contradicts (ignored).
	BadPins []Pin
	// Run, when set, is a run of identical source records around G (Run[0] < G <= Run[1],
	// offsets) whose copy is not clean in every best explanation: a replay, a loss or an
	// extra record touches it, and could lie anywhere among the identical records, so G's
	// position within it is unknown. Outcomes are not to be trusted then.
	Run *[2]int64
	// Near are the answers, other than the one Known answer of the best explanations, of
	// explanations with at most Margin events more: a near tie, not to be trusted.
	Near []Outcome
	// Work is the number of states examined.
	Work int
}

// Ambiguous reports whether the optimal explanations disagree (or are too many to follow).
func (l *Located) Ambiguous() bool {
	return l.Overflow || l.Run != nil || len(l.Outcomes) != 1 || len(l.Near) > 0
}

// String describes an outcome for messages.
func (o Outcome) String() string {
	switch o.Kind {
	case Known:
		if o.HasPrev {
			return fmt.Sprintf("E(G) %d (after target offset %d, copy of source offset %d)", o.E, o.PrevTarget, o.Prev)
		}
		return fmt.Sprintf("E(G) %d (the first copy of a record at or after G)", o.E)
	case Pending:
		return "pending (the mirror has not reached G)"
	default:
		return "no copy of the records below G"
	}
}

// Labels of a target record besides source indices 0..n-1 (and n, extra).
const labNone = -9

// maxSummaries bounds the distinct partial answers tracked per state, maxJump those of a
// whole row (every state's, the ones a jump may continue).
const (
	maxSummaries = 128
	maxJump      = 1024
)

// summary is what a partial explanation has decided about G so far.
type summary struct {
	m  int32 // the highest label below G so far, or -2 for none
	jl int32 // the last target row with label m
	// firstPass is the first row with a label at or after G, or -1; once m is known only
	// whether there is one matters (0).
	firstPass int32
	// c is the fewest events of the partial explanations with this summary so far (not
	// part of what the summary decides: two summaries that differ only in c merge, keeping
	// the least).
	c int32
	// tb is the evidence, in bits, of the copies since the explanation's last event
	// (saturating at TailBits): how well the content after that event backs it.
	tb float32
	// xb is the content, in bits, of the records the explanation calls extra although a
	// source record of the window holds the same (saturating at TailBits): how unlikely it
	// is that such a record is not a copy.
	xb   float32
	tail bool // a copy follows row jl
}

// sumKey is what a summary decides: two summaries with one key merge (merge).
type sumKey struct {
	m, jl, firstPass int32
	tail             bool
}

func (s summary) key() sumKey { return sumKey{s.m, s.jl, s.firstPass, s.tail} }

// merge keeps, of two summaries that decide the same, the cheaper partial explanation: any
// future of the dearer one gives the same answer at a higher cost. At equal cost, kept apart
// they would be two explanations; merged, the one kept is at least as plausible as either
// (more evidence after its last event, fewer copies called extra), so no near explanation is
// lost.
func merge(d, s summary) summary {
	switch {
	case s.c < d.c:
		return s
	case s.c == d.c:
		d.tb, d.xb = max(d.tb, s.tb), min(d.xb, s.xb)
	}
	return d
}

type state struct {
	lab  int // source index, labPre, or n (extra)
	f, b int
	sums []summary
	over bool
}

// Locate explains the window and returns the answers of its best explanations.
func Locate(in LocateInput) Located {
	l := locator{in: in, n: len(in.Source)}
	mem := memPool.Get().(*locateMem)
	l.mem = mem
	defer func() {
		clear(mem.rows)
		memPool.Put(mem)
	}()
	return l.run()
}

// locateMem is a locator's memory, kept between calls: the states of a window are most of
// Locate's work to allocate and clear.
type locateMem struct {
	states []state
	rows   [][]state
	jump   []summary
	jumpAt map[sumKey]int
}

var memPool = sync.Pool{New: func() any { return new(locateMem) }}

type locator struct {
	in      LocateInput
	n       int
	start   int // the source index Target[0] is expected to copy
	idxG    int // the index of the first source record at or after G
	rows    [][]state
	byFP    map[uint64][]int
	pinned  map[int]int // target row -> source index; -1: a copy of a record outside Source
	mem     *locateMem
	bitsOf  []float32 // bits of each source record, computed on first use
	shared  []bool    // rows where every best explanation has an event (markSharedEvents)
	work    int
	maxWork int
}

func (l *locator) extra() int { return l.n }

func (l *locator) run() Located {
	in := l.in
	out := Located{}
	l.maxWork = in.MaxWork
	if l.maxWork <= 0 {
		l.maxWork = DefaultLocateWork
	}
	l.idxG = sort.Search(l.n, func(i int) bool { return in.Source[i].Offset >= in.G })
	switch {
	case in.Start >= 0:
		l.start = sort.Search(l.n, func(i int) bool { return in.Source[i].Offset >= in.Start })
	case in.Start == -2:
		l.start = -1 // no label
	}
	l.byFP = make(map[uint64][]int, l.n)
	for i, s := range in.Source {
		l.byFP[s.FP] = append(l.byFP[s.FP], i)
	}
	out.BadPins = l.pins()
	if len(in.Target) == 0 {
		out.Outcomes = []Outcome{l.outcome(summary{m: -2, jl: -1, firstPass: -1})}
		return out
	}
	if !l.build() {
		out.Overflow, out.Work = true, l.work
		return out
	}
	a, b, straddles := l.straddle()
	if straddles && a == 0 && !l.pinnedRun(a, b) {
		// The source window starts inside the run around G: no explanation can bound it
		// (cleanRun), so there is nothing to explain yet.
		out.Run = &[2]int64{in.Source[a].Offset, in.Source[b].Offset}
		out.Work = l.work
		return out
	}
	l.forward()
	l.backward()
	best := -1
	for _, s := range l.rows[len(l.rows)-1] {
		if best < 0 || s.f < best {
			best = s.f
		}
	}
	out.Events = best
	for _, row := range l.rows {
		for _, s := range row {
			if s.f+s.b <= best+Margin && s.lab == l.n-1 && !in.SourceAtEnd {
				out.NeedSource = true
			}
		}
	}
	if straddles && !l.pinnedRun(a, b) && !l.cleanRun(best, a, b) {
		// G's place in the run is unknown whatever the explanations say: no need to
		// follow them.
		out.Run = &[2]int64{in.Source[a].Offset, in.Source[b].Offset}
		out.Work = l.work
		return out
	}
	l.markSharedEvents(best)
	if !l.propagate(best) {
		out.Overflow, out.Work = true, l.work
		return out
	}
	out.Work = l.work
	l.inspect(best, &out)
	return out
}

// straddle returns the run of identical source records that holds both the last record
// below G and the first at or after it.
func (l *locator) straddle() (a, b int, ok bool) {
	src, g := l.in.Source, l.idxG
	if g == 0 || g >= l.n || src[g-1].FP != src[g].FP {
		return 0, 0, false
	}
	a, b = g-1, g
	for a > 0 && src[a-1].FP == src[g].FP {
		a--
	}
	for b+1 < l.n && src[b+1].FP == src[g].FP {
		b++
	}
	return a, b, true
}

// pinnedRun reports whether every target record that may copy a record of the run is pinned.
func (l *locator) pinnedRun(a, b int) bool {
	for j, row := range l.rows {
		if _, ok := l.pinned[j]; ok {
			continue
		}
		for _, s := range row {
			if s.lab >= a && s.lab <= b {
				return false
			}
		}
	}
	return true
}

// cleanRun reports whether every best explanation copies the run a..b once, as one unbroken
// diagonal that the windows bound on both sides: the copy of a follows the copy of a-1 (a
// different record) by continuing, and the copy of b is there. Anything else (an event in or
// at the edge of the run, a window that starts or ends inside it) could hide a loss, a replay
// or an extra record anywhere among the identical records.
func (l *locator) cleanRun(best, a, b int) bool {
	if a == 0 {
		return false // the source window starts inside the run
	}
	opt := func(s state) bool { return s.f+s.b == best }
	in := func(lab int) bool { return lab >= a && lab <= b }
	seen := map[int]int{}
	for j, row := range l.rows {
		for _, s := range row {
			if !opt(s) || !in(s.lab) {
				continue
			}
			seen[s.lab]++
			if seen[s.lab] > 1 || j == 0 {
				return false // two rows may hold it (a replay, or a choice), or no row before it
			}
			// Entered only by continuing from the previous label.
			prev := l.rows[j-1]
			k := find(prev, s.lab-1)
			if k < 0 || !opt(prev[k]) || prev[k].f != s.f || rowMin(prev)+1 == s.f {
				return false
			}
		}
	}
	return seen[b] == 1
}

// pins maps the pins inside the window to rows, dropping those content contradicts.
func (l *locator) pins() []Pin {
	var bad []Pin
	l.pinned = map[int]int{}
	for _, p := range l.in.Pins {
		if p.Source < 0 {
			if j := sort.Search(len(l.in.Target), func(j int) bool { return l.in.Target[j].Offset >= p.Target }); j < len(l.in.Target) && l.in.Target[j].Offset == p.Target {
				l.pinned[j] = -1
			}
			continue
		}
		j := sort.Search(len(l.in.Target), func(j int) bool { return l.in.Target[j].Offset >= p.Target })
		i := sort.Search(l.n, func(i int) bool { return l.in.Source[i].Offset >= p.Source })
		if j == len(l.in.Target) || l.in.Target[j].Offset != p.Target {
			continue // outside the target window
		}
		if i == l.n || l.in.Source[i].Offset != p.Source {
			if l.n == 0 || p.Source < l.in.Source[0].Offset || p.Source > l.in.Source[l.n-1].Offset {
				l.pinned[j] = -1 // a known copy of a record outside the source window
			}
			continue
		}
		if l.in.Target[j].FP != l.in.Source[i].FP {
			bad = append(bad, p)
			continue
		}
		l.pinned[j] = i
	}
	return bad
}

// build lists the possible labels of every target record, sorted.
func (l *locator) build() bool {
	total := 0
	for j, t := range l.in.Target {
		if _, ok := l.pinned[j]; ok {
			total++
		} else {
			total += len(l.byFP[t.FP]) + 1
		}
	}
	l.work += total
	if l.work > l.maxWork {
		return false
	}
	m := l.mem
	if cap(m.states) < total {
		m.states = make([]state, total)
	}
	arena := m.states[:total]
	for k := range arena {
		arena[k] = state{sums: arena[k].sums[:0]} // keep the summaries' memory
	}
	if cap(m.rows) < len(l.in.Target) {
		m.rows = make([][]state, len(l.in.Target))
	}
	m.rows = m.rows[:len(l.in.Target)]
	l.rows = m.rows
	for j, t := range l.in.Target {
		var row []state
		if i, ok := l.pinned[j]; ok {
			row, arena = arena[:1:1], arena[1:]
			row[0].lab = i
			if i < 0 {
				row[0].lab = l.extra() // it copies nothing of the window
			}
		} else {
			labs := l.byFP[t.FP]
			row, arena = arena[:len(labs)+1:len(labs)+1], arena[len(labs)+1:]
			for k, lab := range labs {
				row[k].lab = lab
			}
			row[len(labs)].lab = l.extra()
		}
		l.rows[j] = row
	}
	return true
}

// startCost is the cost of the first target record's label: the window starts at the copy
// of the first source record read (the caller reads both from one hint), so starting
// anywhere else, or with an extra record, is an event.
func (l *locator) startCost(lab int) int {
	if lab == l.start {
		return 0
	}
	return 1
}

// cont is the label that continues lab with no event, or labNone.
func (l *locator) cont(lab int) int {
	if lab >= 0 && lab < l.n-1 {
		return lab + 1
	}
	return labNone
}

func find(row []state, lab int) int {
	k := sort.Search(len(row), func(k int) bool { return row[k].lab >= lab })
	if k < len(row) && row[k].lab == lab {
		return k
	}
	return -1
}

// rowMin is the least f of a row.
func rowMin(row []state) int {
	m := row[0].f
	for _, s := range row {
		m = min(m, s.f)
	}
	return m
}

func (l *locator) forward() {
	for k := range l.rows[0] {
		l.rows[0][k].f = l.startCost(l.rows[0][k].lab)
	}
	for j := 1; j < len(l.rows); j++ {
		prev, row := l.rows[j-1], l.rows[j]
		minPrev := rowMin(prev)
		for k := range row {
			row[k].f = minPrev + 1
		}
		// Both rows are sorted by label: walk them together for the continuations.
		k := 0
		for _, p := range prev {
			c := l.cont(p.lab)
			if c == labNone {
				continue
			}
			for k < len(row) && row[k].lab < c {
				k++
			}
			if k < len(row) && row[k].lab == c {
				row[k].f = min(row[k].f, p.f)
			}
		}
	}
}

func (l *locator) backward() {
	last := len(l.rows) - 1
	for j := last - 1; j >= 0; j-- {
		row, next := l.rows[j], l.rows[j+1]
		minNext := next[0].b
		for _, s := range next {
			minNext = min(minNext, s.b)
		}
		n := 0
		for k := range row {
			s := &row[k]
			s.b = 1 + minNext
			c := l.cont(s.lab)
			if c == labNone {
				continue
			}
			for n < len(next) && next[n].lab < c {
				n++
			}
			if n < len(next) && next[n].lab == c {
				s.b = min(s.b, next[n].b)
			}
		}
	}
}

// update extends a summary by label lab at row j.
func (l *locator) update(s summary, lab, j int) summary {
	switch {
	case lab >= 0 && lab < l.idxG:
		if lab32 := int32(lab); lab32 > s.m {
			s.m, s.jl, s.tail = lab32, int32(j), false
		} else if lab32 == s.m {
			s.jl, s.tail = int32(j), false
		} else {
			s.tail = true
		}
		return s.norm(l)
	case lab >= l.idxG && lab < l.n:
		if s.firstPass < 0 {
			s.firstPass = int32(j)
		}
		s.tail = s.tail || s.m != -2
	}
	return s.norm(l)
}

// norm forgets what no outcome depends on, so that explanations that agree merge.
func (s summary) norm(l *locator) summary {
	if s.m >= 0 || !(l.idxG == 0 && l.in.NoSourceBelow) {
		if s.firstPass >= 0 {
			s.firstPass = 0
		}
		if int(s.m) >= l.idxG-1 {
			s.tail = false
		}
	}
	return s
}

func addSummary(dst []summary, s summary) ([]summary, bool) {
	for k := range dst {
		if dst[k].key() == s.key() {
			dst[k] = merge(dst[k], s)
			return dst, true
		}
	}
	if len(dst) >= maxSummaries {
		return dst, false
	}
	return append(dst, s), true
}

// markSharedEvents finds the rows where every best explanation has an event (no best one
// continues into the row): an explanation within Margin that has its event there too does
// not differ from the best ones by it, so the evidence after it still counts (TailBits).
func (l *locator) markSharedEvents(best int) {
	opt := func(s state) bool { return s.f+s.b == best }
	l.shared = make([]bool, len(l.rows))
	for j, row := range l.rows {
		shared := true
		for _, s := range row {
			if !opt(s) {
				continue
			}
			if j == 0 {
				shared = shared && l.startCost(s.lab) > 0
				continue
			}
			if p := l.rows[j-1]; s.lab > 0 && s.lab < l.n {
				if k := find(p, s.lab-1); k >= 0 && opt(p[k]) && p[k].f == s.f {
					shared = false // a best explanation continues into this row
				}
			}
		}
		l.shared[j] = shared
	}
}

// Margin is how many events more than the fewest an explanation may have and still count:
// Locate answers only when every explanation within Margin events of the best agrees on
// E(G). A mirror's history need not be the simplest one its copy allows (a loss next to a
// record that repeats looks like a longer loss and a copy of a later equal record); one
// event of margin keeps such a near tie from deciding.
const Margin = 1

// TailBits is the evidence the copies after its extra event must give an explanation
// within Margin for it to count: an event at the end of the target window that nothing after
// it backs (the last record read a replay of an equal one, say) is always possible and says
// nothing.
const TailBits = 32

// extraBits is what calling target row j extra costs in plausibility: the bits of its
// content when a source record of the window holds the same (else nothing: a record no
// source record explains is extra in every explanation).
func (l *locator) extraBits(j int) float32 {
	if ids := l.byFP[l.in.Target[j].FP]; len(ids) > 0 {
		return l.bits(ids[0])
	}
	return 0
}

// bits is the evidence of a copy of source record i: how unlikely its content is by chance.
func (l *locator) bits(i int) float32 {
	if i < 0 || i >= l.n {
		return 0
	}
	if l.bitsOf == nil {
		l.bitsOf = make([]float32, l.n)
		byCount := map[int]float32{}
		for k, s := range l.in.Source {
			c := len(l.byFP[s.FP])
			b, ok := byCount[c]
			if !ok {
				b = 32 // content no other record of the window has: a fingerprint match
				if c > 1 {
					b = float32(math.Log2(float64(l.n) / float64(c)))
				}
				byCount[c] = b
			}
			l.bitsOf[k] = b
		}
	}
	return l.bitsOf[i]
}

// propagate carries the summaries along every explanation of at most best+Margin events;
// a summary's c is the cost of its cheapest partial explanation.
func (l *locator) propagate(best int) bool {
	limit := best + Margin
	near := func(s state) bool { return s.f+s.b <= limit }
	for k := range l.rows[0] {
		s := &l.rows[0][k]
		if near(*s) {
			x := l.update(summary{m: -2, jl: -1, firstPass: -1}, s.lab, 0)
			x.c = int32(s.f)
			if s.f == 0 || l.shared[0] {
				x.tb = min(TailBits, l.bits(s.lab))
			}
			if s.lab == l.extra() {
				x.xb = min(TailBits, l.extraBits(0))
			}
			s.sums = append(s.sums[:0], x)
		}
	}
	for j := 1; j < len(l.rows); j++ {
		prev, row := l.rows[j-1], l.rows[j]
		add := func(s *state, x summary, c int32) {
			y := l.update(x, s.lab, j)
			y.c = c
			if c == x.c || l.shared[j] {
				y.tb = min(TailBits, x.tb+l.bits(s.lab))
			} else {
				y.tb = 0 // an event of its own: only what follows backs it
			}
			if s.lab == l.extra() {
				y.xb = min(TailBits, x.xb+l.extraBits(j))
			}
			var ok bool
			if s.sums, ok = addSummary(s.sums, y); !ok {
				s.over = true
			}
		}
		jump := l.mem.jump[:0] // the summaries of the previous row, each at its least cost
		jumpAt := l.mem.jumpAt
		if jumpAt == nil {
			jumpAt = map[sumKey]int{}
			l.mem.jumpAt = jumpAt
		}
		clear(jumpAt)
		jumpOver := false
		next := 0 // rows are sorted by label: walk row along prev for the continuations
		for _, p := range prev {
			if len(p.sums) == 0 && !p.over {
				continue
			}
			jumpOver = jumpOver || p.over
			for _, x := range p.sums {
				k, ok := jumpAt[x.key()]
				switch {
				case ok:
					jump[k] = merge(jump[k], x)
				case len(jump) >= maxJump:
					jumpOver = true
				default:
					jumpAt[x.key()] = len(jump)
					jump = append(jump, x)
				}
			}
			// The continuation of p: no event.
			if c := l.cont(p.lab); c != labNone {
				for next < len(row) && row[next].lab < c {
					next++
				}
				if k := next; k < len(row) && row[k].lab == c && near(row[k]) {
					s := &row[k]
					for _, x := range p.sums {
						if int(x.c)+s.b <= limit {
							l.work++
							add(s, x, x.c)
						}
					}
					if p.over {
						s.over = true
					}
				}
			}
		}
		// Cheapest first: a state takes the jumps whose cost keeps it near, a prefix.
		slices.SortStableFunc(jump, func(a, b summary) int { return int(a.c) - int(b.c) })
		for k := range row {
			s := &row[k]
			if !near(*s) {
				continue
			}
			for _, x := range jump {
				if int(x.c)+1+s.b > limit {
					break
				}
				l.work++
				add(s, x, x.c+1)
			}
			if jumpOver && rowMin(prev)+1+s.b <= limit {
				s.over = true
			}
		}
		l.mem.jump = jump
		if l.work > l.maxWork {
			return false
		}
		for _, s := range row {
			if s.over {
				return false // too many answers to follow: no need to go on
			}
		}
	}
	return true
}

// inspect reads the answers off the optimal explanations.
func (l *locator) inspect(best int, out *Located) {
	in := l.in
	opt := func(s state) bool { return s.f+s.b == best }
	out.StartsOff = l.start >= 0
	for _, s := range l.rows[0] {
		if opt(s) && s.lab == l.start {
			out.StartsOff = false
		}
	}
	started := false // a copy of a record of the window has been seen: extras count from here
	for j, row := range l.rows {
		var optLabs []int
		for _, s := range row {
			if !opt(s) {
				continue
			}
			optLabs = append(optLabs, s.lab)
		}
		if len(optLabs) == 1 && optLabs[0] == l.extra() {
			if started {
				out.Extras = append(out.Extras, in.Target[j].Offset)
			}
		} else {
			started = true
		}
	}
	seen := map[Outcome]bool{}
	type nearOne struct {
		o  Outcome
		xb float32
	}
	var near []nearOne
	bestXB := float32(TailBits)
	for _, s := range l.rows[len(l.rows)-1] {
		if s.f+s.b > best+Margin {
			continue // (no state is over here: propagate stops at the first)
		}
		for _, x := range s.sums {
			if int(x.c) > best+Margin {
				continue
			}
			o := l.outcome(x)
			if int(x.c) > best {
				if x.tb >= TailBits {
					near = append(near, nearOne{o, x.xb})
				}
				continue
			}
			bestXB = min(bestXB, x.xb)
			if !seen[o] {
				seen[o] = true
				out.Outcomes = append(out.Outcomes, o)
			}
		}
	}
	// An explanation with up to Margin events more that answers otherwise makes a Known
	// answer a near tie; a Pending one stays (it moves no offset).
	if len(out.Outcomes) == 1 && out.Outcomes[0].Kind == Known {
		for _, n := range near {
			// An explanation that calls more records extra although they equal source
			// records, by TailBits of their content, is not near.
			if (n.o.Kind != Known || n.o.E != out.Outcomes[0].E) && n.xb-bestXB < TailBits {
				out.Near = append(out.Near, n.o)
			}
		}
	}
	for k := range out.Outcomes {
		out.Outcomes[k].Bits = l.evidence(best, out.Outcomes[k])
	}
	sort.Slice(out.Outcomes, func(a, b int) bool {
		x, y := out.Outcomes[a], out.Outcomes[b]
		if x.Kind != y.Kind {
			return x.Kind < y.Kind
		}
		return x.E < y.E
	})
}

// evidence is the information of the unbroken diagonal through the row that decides o: from
// that row back and forth while the neighbouring rows continue it in a best explanation.
func (l *locator) evidence(best int, o Outcome) float64 {
	if o.Kind != Known {
		return 0
	}
	in := l.in
	row := sort.Search(len(in.Target), func(j int) bool { return in.Target[j].Offset >= o.E })
	lab := -1
	if o.HasPrev {
		row--
		lab = sort.Search(l.n, func(i int) bool { return in.Source[i].Offset >= o.Prev })
	} else if row < len(l.rows) {
		for _, s := range l.rows[row] {
			if s.f+s.b == best && s.lab >= l.idxG && s.lab < l.n && (lab < 0 || s.lab < lab) {
				lab = s.lab
			}
		}
	}
	if row < 0 || row >= len(l.rows) || lab < 0 {
		return 0
	}
	opt := func(j, lab int) bool {
		if j < 0 || j >= len(l.rows) || lab < 0 || lab >= l.n {
			return false
		}
		k := find(l.rows[j], lab)
		return k >= 0 && l.rows[j][k].f+l.rows[j][k].b == best
	}
	bits := 0.0
	add := func(i int) {
		if c := len(l.byFP[in.Source[i].FP]); c > 1 {
			bits += math.Log2(float64(l.n) / float64(c))
		} else {
			bits += 32 // content no other record of the window has: a fingerprint match
		}
	}
	add(lab)
	for j, i := row-1, lab-1; opt(j, i) && l.cont(i) == i+1; j, i = j-1, i-1 {
		add(i)
	}
	for j, i := row+1, lab+1; opt(j, i); j, i = j+1, i+1 {
		add(i)
	}
	return bits
}

// outcome turns a whole explanation's summary into its answer.
func (l *locator) outcome(x summary) Outcome {
	in := l.in
	if l.idxG == 0 && in.NoSourceBelow {
		// The group consumed nothing still on the source: E is the first copy at or after G.
		if x.firstPass >= 0 {
			return Outcome{Kind: Known, E: in.Target[x.firstPass].Offset}
		}
		return Outcome{Kind: Pending}
	}
	switch {
	case x.m >= 0:
		m := int(x.m)
		t := in.Target[x.jl].Offset
		o := Outcome{Kind: Known, E: t + 1, HasPrev: true, Prev: in.Source[m].Offset, PrevTarget: t}
		if m < l.idxG-1 && !x.tail {
			// No copy follows the copy of s*: the mirror has not copied the records after it.
			o.Kind, o.E = Pending, 0
		}
		return o
	default:
		return Outcome{Kind: NotFound}
	}
}
