package reconcile

import (
	"context"
	"fmt"
	"maps"
	"math/rand/v2"
	"os"
	"runtime"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/kmigrate/kmigrate/align"
	"github.com/kmigrate/kmigrate/offsetmap"
)

// The oracle: partitions with low-cardinality content (a few distinct values, null keys,
// equal timestamps, long runs of identical records) copied by a model mirror that knows where
// every record landed (replays of random length and position, losses, transaction markers,
// aborted transactions, compaction gaps in the source it reads), and the property that every answer
// of the content reading loop (locateIn, what Plan runs) is the true E(G) or a refusal. With
// the true map pinned (kmirror's offset map) every answer must be the true one.

// oracleCase is one partition and its copy, with the truth.
type oracleCase struct {
	src []rec // the source records now (compacted ones gone)
	dst []rec // the target records a read_committed reader sees
	// copyOf[k] is the index in src of the record dst[k] copies, or -1 (a copy of a record
	// compacted away on the source since, or of nothing).
	copyOf           []int
	srcStart, srcEnd int64
	dstStart, dstEnd int64
	maxCopied        int // the highest source index the mirror reached
	distinct         int // how many distinct values the records have
	desc             string
}

// genOracle builds a case from seed.
func genOracle(seed uint64) oracleCase {
	r := rand.New(rand.NewPCG(seed, seed^0x9e3779b97f4a7c15))
	distinct := []int{1, 2, 3, 5, 8}[r.IntN(5)]
	sticky := []float64{0, 0.3, 0.8, 0.95}[r.IntN(4)]
	n := 20 + r.IntN(280)
	pReplay := []float64{0, 0.005, 0.02}[r.IntN(3)]
	pLoss := []float64{0, 0.003, 0.01}[r.IntN(3)]
	pAbort := []float64{0, 0.02}[r.IntN(2)]
	pMarker := []float64{0, 0.05}[r.IntN(2)]
	pGap := []float64{0, 0.03}[r.IntN(2)]
	c := oracleCase{distinct: distinct, desc: fmt.Sprintf("seed %d: %d records, %d values, sticky %.2f, replay %.3f, loss %.3f, aborted %.2f, markers %.2f, compaction gaps %.2f",
		seed, n, distinct, sticky, pReplay, pLoss, pAbort, pMarker, pGap)}
	// The source: offsets with gaps (markers, compacted records), values in runs.
	type srcRec struct {
		off int64
		fp  uint64
	}
	var all []srcRec
	off, v := int64(r.IntN(3)), r.IntN(distinct)
	c.srcStart = off
	for len(all) < n {
		if r.Float64() >= sticky {
			v = r.IntN(distinct)
		}
		all = append(all, srcRec{off, uint64(v) + 1})
		off++
		if r.Float64() < pMarker {
			off++ // a transaction marker
		}
		if r.Float64() < pGap {
			off += 1 + int64(r.IntN(3)) // records the cleaner removed before the mirror read them
		}
	}
	c.srcEnd = off
	// The mirror: copies forward, restarts earlier (a replay), skips (a loss); the target
	// gets markers and aborted transactions between copies.
	stop := n
	if r.IntN(4) == 0 {
		stop = r.IntN(n + 1)
	}
	var dstAll []rec
	var dstCopy []int
	pos, t := 0, int64(r.IntN(3))
	c.dstStart = t
	c.maxCopied = -1
	for pos < stop {
		switch x := r.Float64(); {
		case x < pReplay && pos > 0:
			pos = max(0, pos-1-r.IntN(40))
			continue
		case x < pReplay+pLoss:
			pos += 1 + r.IntN(6)
			continue
		case x < pReplay+pLoss+pAbort:
			t += int64(1+r.IntN(4)) + 1 // aborted copies and their marker: no reader of ours sees them
		case x < pReplay+pLoss+pAbort+pMarker:
			t++ // a commit marker
		}
		if pos >= stop || pos >= n {
			break
		}
		dstAll = append(dstAll, rec{off: t, fp: all[pos].fp})
		dstCopy = append(dstCopy, pos)
		c.maxCopied = max(c.maxCopied, pos)
		t++
		pos++
	}
	c.dstEnd = t
	c.dst, c.copyOf = dstAll, dstCopy
	for _, s := range all {
		c.src = append(c.src, rec{off: s.off, fp: s.fp})
	}
	return c
}

// truth is E(G) as docs/design.md defines it, from the model's map: 1 + the last copy of s*,
// the largest mirrored source record below G; with none, the first copy of the first
// mirrored record at or above G; pending while the mirror has not reached the last source
// record below G.
func (c *oracleCase) truth(g int64) (e int64, known bool) {
	idxG := sort.Search(len(c.src), func(i int) bool { return c.src[i].off >= g })
	if idxG > 0 && c.maxCopied < idxG-1 {
		return 0, false // the mirror has not reached G yet
	}
	star := -1
	for _, i := range c.copyOf {
		if i < idxG {
			star = max(star, i)
		}
	}
	if star >= 0 {
		last := int64(-1)
		for k, i := range c.copyOf {
			if i == star {
				last = c.dst[k].off
			}
		}
		return last + 1, true
	}
	for k, i := range c.copyOf {
		if i >= idxG {
			return c.dst[k].off, true
		}
	}
	return 0, false
}

// truthMap is the model's map as a mirror that knows every copy keeps it (record by record,
// offsetmap.PartitionMap.Extend), or nil for a history no such map holds: a replay that
// copies for the first time records an earlier loss skipped (kmirror never writes one).
func (c *oracleCase) truthMap() *offsetmap.PartitionMap {
	pm := &offsetmap.PartitionMap{SourceFrom: c.srcStart}
	for k, i := range c.copyOf {
		if i >= 0 {
			if _, err := pm.Extend(c.src[i].off, c.dst[k].off); err != nil {
				return nil
			}
		}
	}
	pm.SourceTo, pm.TargetTo = c.srcEnd, c.dstEnd
	if c.maxCopied+1 < len(c.src) {
		pm.SourceTo = c.src[c.maxCopied+1].off
	}
	return pm
}

// oracleMode is what Plan has besides content: nothing, or kmirror's map (the truth).
type oracleMode int

const (
	contentAlone oracleMode = iota
	withKmirrorMap
)

// io reads the case in memory as Plan reads a cluster, with the maps mode gives.
func (c *oracleCase) io(r *rand.Rand, mode oracleMode) locateIO {
	read := func(recs []rec) logReader {
		return func(_ context.Context, from, to int64, max int) ([]rec, error) {
			k := sort.Search(len(recs), func(k int) bool { return recs[k].off >= from })
			var out []rec
			for ; k < len(recs) && recs[k].off < to && (max <= 0 || len(out) < max); k++ {
				out = append(out, recs[k])
			}
			return out, nil
		}
	}
	io := locateIO{src: read(c.src), dst: read(c.dst), mirroredUpTo: func() int64 { return -1 }}
	hint := r.IntN(3)
	io.lowerBound = func(_ context.Context, s rec) (int64, int64) {
		i := sort.Search(len(c.src), func(i int) bool { return c.src[i].off >= s.off })
		switch hint {
		case 0: // no hint (equal timestamps on both sides)
			return c.dstStart, c.srcStart
		case 1: // a sync-like hint: a true copy at or below the first copy of s, and its source
			for k, ci := range c.copyOf {
				if ci >= i {
					back := min(k, r.IntN(20))
					if ci2 := c.copyOf[k-back]; ci2 >= 0 && ci2 <= i {
						return c.dst[k-back].off, c.src[ci2].off
					}
					return c.dst[k].off, s.off
				}
			}
			return c.dstStart, c.srcStart
		default: // a wrong hint: above the first copy of s, some copies before it
			for k, ci := range c.copyOf {
				if ci >= i {
					d := c.dst[k].off
					return min(c.dstEnd, d+int64(r.IntN(int(c.dstEnd-d)+1))), s.off
				}
			}
			return c.dstEnd, s.off
		}
	}
	switch mode {
	case withKmirrorMap:
		io.maps = []mapRef{{c.truthMap(), SourceKmirrorMap}}
	}
	return io
}

// oracleStats counts the answers of one run.
type oracleStats struct {
	positions, known, pending, refused, wrong int
	// why counts the refusals by their reason; byValues the positions and the exact answers
	// by the number of distinct values of the case.
	why      map[string]int
	byValues map[int][2]int
}

func (s oracleStats) String() string {
	return fmt.Sprintf("%d positions: %d exact (%.1f%%), %d pending, %d refused (%.1f%%), %d wrong",
		s.positions, s.known, 100*float64(s.known)/float64(max(1, s.positions)), s.pending, s.refused, 100*float64(s.refused)/float64(max(1, s.positions)), s.wrong)
}

// add counts o's figures into s.
func (s *oracleStats) add(o oracleStats) {
	s.init()
	s.positions += o.positions
	s.known += o.known
	s.pending += o.pending
	s.refused += o.refused
	s.wrong += o.wrong
	for k, v := range o.why {
		s.count(k, v)
	}
	for k, v := range o.byValues {
		w := s.byValues[k]
		s.byValues[k] = [2]int{w[0] + v[0], w[1] + v[1]}
	}
}

func (s *oracleStats) count(why string, n int) {
	s.init()
	s.why[why] += n
}

func (s *oracleStats) init() {
	if s.why == nil {
		s.why, s.byValues = map[string]int{}, map[int][2]int{}
	}
}

// refusalClass names a refusal's reason by the rule behind it.
func refusalClass(reason string) string {
	for _, c := range []struct{ in, class string }{
		{"are identical records", "G inside a run of identical records whose copy is not clean"},
		{"too many identical records", "too many explanations to follow"},
		{"disagree", "the explanations with the fewest events disagree"},
		{"event more gives", "an explanation with one event more disagrees"},
		{"record altered or lost", "a record altered or lost"},
		{"too little evidence", "too little evidence at the deciding copy"},
		{"not found", "no copy found"},
	} {
		if strings.Contains(reason, c.in) {
			return c.class
		}
	}
	return "other: " + reason
}

// report logs the figures of a run: the refusals by reason and the answers by the number of
// distinct values.
func (s oracleStats) report(t *testing.T, name string) {
	t.Logf("%s: %s", name, s)
	for _, k := range slices.Sorted(maps.Keys(s.why)) {
		t.Logf("  refused: %5d  %s", s.why[k], k)
	}
	for _, k := range slices.Sorted(maps.Keys(s.byValues)) {
		v := s.byValues[k]
		t.Logf("  %d distinct values: %5d positions, %5.1f%% exact", k, v[0], 100*float64(v[1])/float64(max(1, v[0])))
	}
}

// check runs every group position of a case and counts; each wrong answer is reported.
func (c *oracleCase) check(t *testing.T, seed uint64, mode oracleMode, st *oracleStats) {
	t.Helper()
	pinned := mode == withKmirrorMap
	r := rand.New(rand.NewPCG(seed, 7))
	// The look-ahead (Window) is above the longest replay the model makes (40 records back):
	// a replay further from the copy it repeats is not looked for (docs/design.md).
	cfg := Config{Before: 4 + r.IntN(12), Window: 64 + r.IntN(64), MaxTargetRead: 4000}
	cfg.SetDefaults()
	positions := []int64{c.srcStart, c.srcEnd}
	for range 18 {
		positions = append(positions, c.srcStart+int64(r.IntN(int(c.srcEnd-c.srcStart)+1)))
	}
	for _, g := range positions {
		j := job{srcTopic: "t", dstTopic: "t", g: g, srcStart: c.srcStart, srcEnd: c.srcEnd, dstStart: c.dstStart, dstEnd: c.dstEnd, srcStable: c.srcEnd, dstStable: c.dstEnd}
		got, err := locateIn(context.Background(), j, cfg, c.io(r, mode))
		if err != nil {
			t.Errorf("%s: G=%d: %v", c.desc, g, err)
			return
		}
		want, known := c.truth(g)
		st.positions++
		st.init()
		v := st.byValues[c.distinct]
		v[0]++
		if got.known && known && got.e == want {
			v[1]++
		}
		st.byValues[c.distinct] = v
		switch {
		case got.known && (!known || got.e != want):
			st.wrong++
			if st.wrong <= 10 {
				t.Logf("%s (pinned %v, window %d, before %d): G=%d: got E=%d (%s), want %s", c.desc, pinned, cfg.Window, cfg.Before, g, got.e, got.proof, wantString(want, known))
			}
		case got.known:
			st.known++
		case got.status == StatusPending:
			st.pending++
			if known && pinned {
				st.wrong++
				t.Errorf("%s (pinned): G=%d: got pending (%s), want E=%d", c.desc, g, got.reason, want)
			}
		default:
			st.refused++
			st.count(refusalClass(got.reason), 1)
			if pinned && known {
				st.wrong++
				if st.wrong <= 10 {
					t.Errorf("%s (pinned): G=%d: refused (%s), want E=%d: the map covers it", c.desc, g, got.reason, want)
				}
			}
		}
	}
}

func wantString(e int64, known bool) string {
	if !known {
		return "pending"
	}
	return strconv.FormatInt(e, 10)
}

// oracleCases is how many partitions the oracle generates (20 group positions each):
// KMIGRATE_ORACLE_CASES overrides the default of 5,000 (100,000 positions; 150 with -short).
func oracleCases(t *testing.T) int {
	if v := os.Getenv("KMIGRATE_ORACLE_CASES"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil {
			t.Fatalf("KMIGRATE_ORACLE_CASES=%q: %v", v, err)
		}
		return n
	}
	if testing.Short() {
		return 150
	}
	return 5000
}

// eachCase runs check on cases 1..n, on as many goroutines as there are CPUs, and returns
// the sum of what each returned.
func eachCase[S any](n int, check func(seed uint64) S, add func(*S, S)) S {
	workers := min(runtime.GOMAXPROCS(0), n)
	parts := make([]S, workers)
	var wg sync.WaitGroup
	for w := range workers {
		wg.Go(func() {
			for seed := uint64(w + 1); seed <= uint64(n); seed += uint64(workers) {
				add(&parts[w], check(seed))
			}
		})
	}
	wg.Wait()
	var sum S
	for _, p := range parts {
		add(&sum, p)
	}
	return sum
}

// oracleRun is what TestOracleContent counts: content alone, and with kmirror's map.
type oracleRun struct {
	content, pinned oracleStats
	noMap           int
}

func (r *oracleRun) add(o oracleRun) {
	r.content.add(o.content)
	r.pinned.add(o.pinned)
	r.noMap += o.noMap
}

// TestOracleContent: every answer from content alone is the true E(G) or a refusal; with the
// true map pinned, every answer is the true one.
func TestOracleContent(t *testing.T) {
	t.Parallel()
	n := oracleCases(t)
	start := time.Now()
	run := eachCase(n, func(seed uint64) oracleRun {
		var r oracleRun
		c := genOracle(seed)
		c.check(t, seed, contentAlone, &r.content)
		if c.truthMap() != nil {
			c.check(t, seed, withKmirrorMap, &r.pinned)
		} else {
			r.noMap++
		}
		return r
	}, (*oracleRun).add)
	run.content.report(t, "content alone")
	run.pinned.report(t, fmt.Sprintf("with kmirror's map (%d cases have a history no map holds)", run.noMap))
	t.Logf("%d cases in %v", n, time.Since(start).Round(time.Millisecond))
	if run.pinned.wrong > 0 {
		t.Errorf("wrong answers with the map: %d", run.pinned.wrong)
	}
	if run.content.wrong > 0 {
		t.Errorf("wrong answers from content: %d of %d positions", run.content.wrong, run.content.positions)
	}
	if run.content.known < run.content.positions/4 {
		t.Errorf("content answered %d of %d positions: a locator that refuses everything passes no oracle", run.content.known, run.content.positions)
	}
}

// TestOracleGroupSync: kmirror's group sync translates from its own map (offsetmap.ExactTarget
// over the map the mirror extends record by record); on the model's copies that answer is the
// true E(G) wherever it is known.
func TestOracleGroupSync(t *testing.T) {
	t.Parallel()
	n := oracleCases(t)
	checked := 0
	for seed := uint64(1); seed <= uint64(n); seed++ {
		c := genOracle(seed)
		pm := c.truthMap()
		if pm == nil {
			continue
		}
		r := rand.New(rand.NewPCG(seed, 11))
		for range 20 {
			g := c.srcStart + int64(r.IntN(int(c.srcEnd-c.srcStart)+1))
			tr := pm.ExactTarget(g)
			want, known := c.truth(g)
			if !tr.Known || !tr.HasPrev && len(pm.CopiesIn(tr.Target, tr.Target+1)) == 0 {
				continue // pending; or nothing mirrored around G: the target end, a bound (ExactTarget)
			}
			checked++
			if !known || tr.Target != want {
				t.Fatalf("%s: G=%d: group sync's map says %d, want %s", c.desc, g, tr.Target, wantString(want, known))
			}
		}
	}
	t.Logf("%d positions answered from the map, all true", checked)
}

// FuzzOracle: the oracle's property for any seed: every answer is the true one or a refusal,
// and with the map every answer is the true one.
func FuzzOracle(f *testing.F) {
	for _, s := range []uint64{1, 2, 3, 42, 1 << 40} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, seed uint64) {
		c := genOracle(seed)
		var content, pinned oracleStats
		c.check(t, seed, contentAlone, &content)
		if c.truthMap() != nil {
			c.check(t, seed, withKmirrorMap, &pinned)
		}
		if pinned.wrong > 0 || content.wrong > 0 {
			t.Fatalf("wrong answers: %d from content, %d with the map", content.wrong, pinned.wrong)
		}
	})
}

// TestOracleVerifyCounts: kverify's verdict and counts of a whole partition (align.Partition,
// as kverify diff runs it) against the model's: matched (source records with a copy),
// missing (source records the mirror passed without copying), duplicated (copies beyond the
// first). The verdict (differs or identical) is always the truth about the bytes; counts that
// differ from the model's must come with the alignment saying it is ambiguous
// (Counts.Ambiguous > 0: identical records it could not tell apart).
func TestOracleVerifyCounts(t *testing.T) {
	t.Parallel()
	n := oracleCases(t)
	var exact, flagged, wrong int
	for seed := uint64(1); seed <= uint64(n); seed++ {
		c := genOracle(seed)
		if c.maxCopied+1 < len(c.src) {
			continue // a mirror that stopped early: kverify reports the tail as not yet copied
		}
		copies := map[int]int{}
		for _, i := range c.copyOf {
			copies[i]++
		}
		var want align.Counts
		for i := range c.src {
			switch k := copies[i]; {
			case k == 0:
				want.Missing++
			default:
				want.Matched++
				want.Duplicated += int64(k - 1)
			}
		}
		res, _, err := align.Partition(context.Background(), &align.SliceStream{Items: items(c.src)}, &align.SliceStream{Items: items(c.dst)},
			align.Options{SourceFrom: c.srcStart, SourceTo: c.srcEnd, TargetFrom: c.dstStart, TargetTo: c.dstEnd, StrictTargetFrom: true, StrictTargetTo: true})
		if err != nil {
			t.Fatalf("%s: %v", c.desc, err)
		}
		got := res.Counts
		// The verdict is about bytes: a copy whose records, in order, are the source's is
		// identical even if the model lost one record and replayed an identical one.
		truthDiffers := len(c.dst) != len(c.src)
		for k := 0; !truthDiffers && k < len(c.dst); k++ {
			truthDiffers = c.dst[k].fp != c.src[k].fp
		}
		if got.Differs() != truthDiffers {
			t.Errorf("%s: kverify says differs=%v (%+v), the copy's content %s the source's", c.desc, got.Differs(), got, map[bool]string{true: "differs from", false: "is"}[truthDiffers])
		}
		switch {
		case got.Matched == want.Matched && got.Missing == want.Missing && got.Duplicated == want.Duplicated && got.Extra == 0:
			exact++
		case got.Ambiguous > 0:
			flagged++
		default:
			wrong++
			if wrong <= 5 {
				t.Errorf("%s: got %+v, want %+v, not flagged ambiguous", c.desc, got, want)
			}
		}
	}
	t.Logf("kverify counts: %d exact, %d differ and flagged ambiguous, %d differ unflagged", exact, flagged, wrong)
}

// TestOracleVerifyMap: the offset map kverify diff writes (align.Partition's) holds only
// partitions whose alignment is proven, and there it gives the true E(G) wherever it answers.
// Each case is checked twice: as generated (records repeat) and with every source record
// unique (the same copy history); a partition the map cannot prove is left out (MapLeftOut).
// TestDiffFaults (verify) checks that a copy of unique records with every kind of fault keeps
// its map.
func TestOracleVerifyMap(t *testing.T) {
	t.Parallel()
	n := oracleCases(t)
	var answered, wrong, leftOut, uniqueKept int
	check := func(c *oracleCase, seed uint64, unique bool) {
		res, pm, err := align.Partition(context.Background(), &align.SliceStream{Items: items(c.src)}, &align.SliceStream{Items: items(c.dst)},
			align.Options{SourceFrom: c.srcStart, SourceTo: c.srcEnd, TargetFrom: c.dstStart, TargetTo: c.dstEnd, StrictTargetFrom: true, StrictTargetTo: true})
		if err != nil {
			t.Fatalf("%s: %v", c.desc, err)
		}
		if res.MapLeftOut != "" {
			leftOut++
			return
		}
		if unique {
			uniqueKept++
		}
		r := rand.New(rand.NewPCG(seed, 13))
		for range 20 {
			g := c.srcStart + int64(r.IntN(int(c.srcEnd-c.srcStart)+1))
			tr := pm.ExactTarget(g)
			if !tr.Known || !tr.HasPrev {
				continue
			}
			answered++
			if want, known := c.truth(g); !known || tr.Target != want {
				wrong++
				if wrong <= 5 {
					t.Errorf("%s (unique %v): G=%d: kverify's map says %d, want %s", c.desc, unique, g, tr.Target, wantString(want, known))
				}
			}
		}
	}
	for seed := uint64(1); seed <= uint64(n); seed++ {
		c := genOracle(seed)
		check(&c, seed, false)
		// The same history over records that never repeat.
		for i := range c.src {
			c.src[i].fp = uint64(i) + 1000
		}
		for k, i := range c.copyOf {
			c.dst[k].fp = uint64(i) + 1000
		}
		check(&c, seed, true)
	}
	t.Logf("kverify's map: %d of %d partitions left out (%d of %d with unique records kept); %d positions answered from the others, %d wrong", leftOut, 2*n, uniqueKept, n, answered, wrong)
}
