package mm2

import "testing"

// copyPass is one task's copying: source offsets [from, to), less gaps, written in order to
// consecutive target offsets from dst.
type copyPass struct {
	from, to, dst int64
	gaps          [][2]int64 // source offsets [a, b) with no record (markers, compaction)
}

// syncHistory is a mirror's history: the passes, in the order they ran, and the syncs that
// reached the offset-syncs topic, each the copy of a source offset by a pass.
type syncHistory struct {
	name   string
	passes []copyPass
	syncs  [][2]int64 // pass index, source offset
}

func (p copyPass) gap(off int64) bool {
	for _, g := range p.gaps {
		if off >= g[0] && off < g[1] {
			return true
		}
	}
	return false
}

// copyOf is where pass p copied source offset off.
func (p copyPass) copyOf(off int64) (int64, bool) {
	if off < p.from || off >= p.to || p.gap(off) {
		return 0, false
	}
	t := p.dst
	for o := p.from; o < off; o++ {
		if !p.gap(o) {
			t++
		}
	}
	return t, true
}

// firstCopy is the lowest target offset holding a copy of off.
func (h syncHistory) firstCopy(off int64) (int64, bool) {
	best, found := int64(0), false
	for _, p := range h.passes {
		if t, ok := p.copyOf(off); ok && (!found || t < best) {
			best, found = t, true
		}
	}
	return best, found
}

func (h syncHistory) offsetSyncs(t *testing.T) []OffsetSync {
	t.Helper()
	var out []OffsetSync
	for _, s := range h.syncs {
		d, ok := h.passes[s[0]].copyOf(s[1])
		if !ok {
			t.Fatalf("%s: pass %d did not copy source offset %d", h.name, s[0], s[1])
		}
		out = append(out, OffsetSync{Topic: "orders", Partition: 0, Upstream: s[1], Downstream: d})
	}
	return out
}

func (h syncHistory) maxSource() int64 {
	var m int64
	for _, p := range h.passes {
		m = max(m, p.to)
	}
	return m
}

// syncHistories are the cases LowerBound and the MM2 oracle are checked on.
var syncHistories = []syncHistory{
	{
		name:   "one task, a gap",
		passes: []copyPass{{from: 0, to: 300, dst: 0, gaps: [][2]int64{{150, 160}}}},
		syncs:  [][2]int64{{0, 0}, {0, 100}, {0, 160}, {0, 250}},
	},
	{
		// The task copied 0..119 but flushed its syncs only up to 100; the restarted task
		// copies again from 90.
		name:   "unclean restart",
		passes: []copyPass{{from: 0, to: 120, dst: 0}, {from: 90, to: 400, dst: 120}},
		syncs:  [][2]int64{{0, 0}, {0, 100}, {1, 90}, {1, 200}, {1, 300}},
	},
	{
		// The last sync's record is where the next task starts: same upstream, later copy.
		name:   "restart at the last sync",
		passes: []copyPass{{from: 0, to: 101, dst: 0}, {from: 50, to: 200, dst: 101}},
		syncs:  [][2]int64{{0, 0}, {0, 50}, {1, 50}, {1, 150}},
	},
	{
		// The first task crashed before it wrote any sync but its first: all it copied after
		// 0 is in a tail no sync shows.
		name:   "lost tail",
		passes: []copyPass{{from: 0, to: 100, dst: 0}, {from: 20, to: 250, dst: 100}},
		syncs:  [][2]int64{{0, 0}, {1, 20}, {1, 200}},
	},
	{
		name:   "two rewinds",
		passes: []copyPass{{from: 0, to: 81, dst: 0}, {from: 40, to: 131, dst: 81}, {from: 100, to: 300, dst: 172}},
		syncs:  [][2]int64{{0, 0}, {0, 60}, {1, 40}, {1, 120}, {2, 100}, {2, 250}},
	},
}

// The rules the two tools used before SyncIndex, kept here to show where they fail.
func maxDownstreamRule(syncs []OffsetSync, off int64) (int64, bool) {
	best, ok := int64(-1), false
	for _, s := range syncs {
		if s.Upstream <= off && s.Downstream > best {
			best, ok = s.Downstream, true
		}
	}
	return best, ok
}

func largestUpstreamRule(syncs []OffsetSync, off int64) (int64, bool) {
	best, bestUp, ok := int64(-1), int64(-1), false
	for _, s := range syncs {
		if s.Upstream <= off && s.Upstream >= bestUp {
			bestUp, best, ok = s.Upstream, s.Downstream, true
		}
	}
	return best, ok
}

// TestLowerBoundNeverAboveFirstCopy: for every record of every history, LowerBound is at or
// below its first copy, while each rejected rule is above it somewhere after a rewind.
func TestLowerBoundNeverAboveFirstCopy(t *testing.T) {
	overshoots := map[string]map[string]int{}
	for _, h := range syncHistories {
		syncs := h.offsetSyncs(t)
		x := IndexSyncs(syncs)
		overshoots[h.name] = map[string]int{}
		for off := int64(0); off < h.maxSource(); off++ {
			first, copied := h.firstCopy(off)
			if !copied {
				continue
			}
			b, ok := x.LowerBound("orders", 0, off)
			if !ok {
				t.Errorf("%s: no bound for source offset %d", h.name, off)
			} else if b > first {
				t.Errorf("%s: LowerBound(%d) = %d, above the first copy %d", h.name, off, b, first)
			}
			for name, rule := range map[string]func([]OffsetSync, int64) (int64, bool){"max downstream": maxDownstreamRule, "largest upstream": largestUpstreamRule} {
				if r, ok := rule(syncs, off); ok && r > first {
					overshoots[h.name][name]++
				}
			}
		}
	}
	want := map[string]map[string]int{
		"one task, a gap":          {},
		"unclean restart":          {"max downstream": 30, "largest upstream": 10}, // 90..119; 90..99
		"restart at the last sync": {"max downstream": 51, "largest upstream": 51}, // 50..100 both
		"lost tail":                {"max downstream": 80, "largest upstream": 80}, // 20..99 both
		"two rewinds":              {"max downstream": 72, "largest upstream": 40}, // 40..80, 100..130; 40..59, 100..119
	}
	for h, w := range want {
		for _, rule := range []string{"max downstream", "largest upstream"} {
			if got := overshoots[h][rule]; got != w[rule] {
				t.Errorf("%s: the %s rule is above the first copy for %d records, want %d", h, rule, got, w[rule])
			}
		}
	}
}

// TestLowerBound pins the rule's answers, including an index without syncs, another
// partition, a truncated target and the unclean restart's regions.
func TestLowerBound(t *testing.T) {
	idx := func(s ...[2]int64) *SyncIndex {
		var l []OffsetSync
		for _, p := range s {
			l = append(l, OffsetSync{Topic: "orders", Partition: 0, Upstream: p[0], Downstream: p[1]})
		}
		return IndexSyncs(l)
	}
	restart := idx([2]int64{0, 0}, [2]int64{100, 100}, [2]int64{90, 150}, [2]int64{300, 360})
	tests := []struct {
		name string
		x    *SyncIndex
		part int32
		off  int64
		want int64 // -1: none
	}{
		{"nil index", nil, 0, 5, -1},
		{"other partition", restart, 1, 5, -1},
		{"below every sync", idx([2]int64{10, 10}), 0, 5, -1},
		{"before the rewind's upstream", restart, 0, 50, 0},
		{"between the rewind and what the task had passed", restart, 0, 95, 0},
		{"at the earlier task's last sync", restart, 0, 100, 100},
		{"in the earlier task's tail", restart, 0, 140, 100},
		{"past the earlier task's tail", restart, 0, 200, 150},
		{"past the last sync", restart, 0, 500, 360},
		{"truncated target drops older syncs", idx([2]int64{0, 500}, [2]int64{600, 1100}, [2]int64{700, 20}), 0, 650, -1},
		{"truncated target, after", idx([2]int64{0, 500}, [2]int64{600, 1100}, [2]int64{700, 20}), 0, 800, 20},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, ok := tt.x.LowerBound("orders", tt.part, tt.off)
			if !ok {
				got = -1
			}
			if got != tt.want {
				t.Errorf("LowerBound(%d) = %d, want %d", tt.off, got, tt.want)
			}
		})
	}
	if got := restart.MaxUpstream("orders", 0); got != 300 {
		t.Errorf("MaxUpstream = %d, want 300", got)
	}
	var none *SyncIndex
	if got := none.MaxUpstream("orders", 0); got != -1 {
		t.Errorf("MaxUpstream of nil = %d, want -1", got)
	}
}
