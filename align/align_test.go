package align

import (
	"context"
	"fmt"
	"reflect"
	"slices"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/kmigrate/kmigrate/internal/testkit"
	"github.com/kmigrate/kmigrate/offsetmap"
)

// The synthetic partition of the tests (testkit's, shared with verify's and kverify's tests).
var (
	r    = testkit.Record
	span = testkit.Records
	cat  = slices.Concat[[]*kgo.Record]
	with = testkit.With
)

// at gives the records consecutive offsets from base.
func at(base int64, recs []*kgo.Record) []*kgo.Record {
	out := make([]*kgo.Record, len(recs))
	for i, rec := range recs {
		c := *rec
		c.Offset = base + int64(i)
		out[i] = &c
	}
	return out
}

// offsets gives the records the offsets listed.
func offsets(recs []*kgo.Record, offs ...int64) []*kgo.Record {
	out := make([]*kgo.Record, len(recs))
	for i, rec := range recs {
		c := *rec
		c.Offset = offs[i]
		out[i] = &c
	}
	return out
}

func items(recs []*kgo.Record, f offsetmap.Fields) []Item {
	out := make([]Item, len(recs))
	for i, rec := range recs {
		out[i] = NewItem(rec, f)
	}
	return out
}

func align(t *testing.T, src, dst []*kgo.Record, opt Options) (PartitionResult, *offsetmap.PartitionMap) {
	t.Helper()
	if opt.Fields == 0 {
		opt.Fields = offsetmap.DefaultFields
	}
	if len(src) > 0 && opt.SourceTo == 0 {
		opt.SourceFrom, opt.SourceTo = src[0].Offset, src[len(src)-1].Offset+1
	}
	if len(dst) > 0 && opt.TargetTo == 0 {
		opt.TargetFrom, opt.TargetTo = dst[0].Offset, dst[len(dst)-1].Offset+1
	}
	res, pm, err := Partition(context.Background(), &SliceStream{items(src, opt.Fields)}, &SliceStream{items(dst, opt.Fields)}, opt)
	if err != nil {
		t.Fatalf("Align: %v", err)
	}
	checkInvariants(t, src, dst, res, pm, opt.Fields)
	return res, pm
}

// checkInvariants asserts the counting invariants of doc.go and that the map pairs records
// that are equal exactly Matched times.
func checkInvariants(t *testing.T, src, dst []*kgo.Record, res PartitionResult, pm *offsetmap.PartitionMap, f offsetmap.Fields) {
	t.Helper()
	if got, want := res.Matched+res.Mismatched+res.Missing, int64(len(src)); got != want {
		t.Errorf("matched+mismatched+missing = %d, want source count %d (%+v)", got, want, res.Counts)
	}
	// Target records left beyond the range (non-strict end) are in no class.
	tgt := res.Matched + res.Mismatched + res.Duplicated + res.Extra + res.TargetSkipped
	if tgt > int64(len(dst)) {
		t.Errorf("target classes add to %d, more than the %d target records (%+v)", tgt, len(dst), res.Counts)
	}
	if res.Ambiguous > res.Matched {
		t.Errorf("ambiguous %d > matched %d", res.Ambiguous, res.Matched)
	}
	byOff := func(recs []*kgo.Record) map[int64]*kgo.Record {
		m := make(map[int64]*kgo.Record, len(recs))
		for _, rec := range recs {
			m[rec.Offset] = rec
		}
		return m
	}
	so, to := byOff(src), byOff(dst)
	var eq, ne int64
	var lastS, lastT int64 = -1 << 62, -1 << 62
	for _, s := range pm.Segments {
		if s.Len <= 0 || s.Source <= lastS || s.Target <= lastT {
			t.Fatalf("segments not increasing: %+v", pm.Segments)
		}
		for k := int64(0); k < s.Len; k++ {
			a, b := so[s.Source+k], to[s.Target+k]
			if a == nil || b == nil {
				t.Fatalf("segment %+v maps offsets that were not read", s)
			}
			if offsetmap.Fingerprint(a, f) == offsetmap.Fingerprint(b, f) {
				eq++
			} else {
				ne++
			}
		}
		lastS, lastT = s.Source+s.Len-1, s.Target+s.Len-1
	}
	if eq != res.Matched || ne != res.Mismatched {
		t.Errorf("map pairs %d equal and %d different records, want matched %d and mismatched %d", eq, ne, res.Matched, res.Mismatched)
	}
	if int64(len(pm.Duplicates)) != res.Duplicated {
		t.Errorf("map has %d duplicate copies, want %d", len(pm.Duplicates), res.Duplicated)
	}
	copyOf := map[int64]uint64{} // source offset -> fingerprint of its aligned target copy
	for _, s := range pm.Segments {
		for k := int64(0); k < s.Len; k++ {
			copyOf[s.Source+k] = offsetmap.Fingerprint(to[s.Target+k], f)
		}
	}
	for _, d := range pm.Duplicates {
		a, b := so[d.Source], to[d.Target]
		if a == nil || b == nil {
			t.Fatalf("duplicate %+v maps offsets that were not read", d)
		}
		// A duplicate repeats its source record, or the altered copy of it.
		if fb := offsetmap.Fingerprint(b, f); fb != offsetmap.Fingerprint(a, f) && fb != copyOf[d.Source] {
			t.Errorf("duplicate %+v does not copy its source record", d)
		}
	}
}

func TestAlign(t *testing.T) {
	altered := func(i int) []*kgo.Record {
		return with(r(i), func(c *kgo.Record) { c.Value = []byte("ALTERED") })
	}
	tests := []struct {
		name     string
		src, dst []*kgo.Record
		opt      Options
		want     Counts
		missing  []SourceRange
		dups     []offsetmap.Copy
		mism     []Mismatch
		extra    []TargetRange
		segments []offsetmap.Segment
		skipped  int64
	}{
		{
			name: "identical", src: at(0, span(0, 9)), dst: at(0, span(0, 9)),
			want: Counts{Matched: 10}, segments: segs(0, 0, 10),
		},
		{
			name: "different target base", src: at(500, span(0, 9)), dst: at(70, span(0, 9)),
			want: Counts{Matched: 10}, segments: segs(500, 70, 10),
		},
		{
			name: "source gaps from markers and compaction",
			src:  offsets(span(0, 5), 0, 1, 2, 5, 6, 9), dst: at(0, span(0, 5)),
			want: Counts{Matched: 6}, segments: segs(0, 0, 3, 5, 3, 2, 9, 5, 1),
		},
		{
			name: "missing in the middle", src: at(0, span(0, 9)), dst: at(0, cat(span(0, 2), span(5, 9))),
			want: Counts{Matched: 8, Missing: 2}, missing: []SourceRange{{3, 4}},
			segments: segs(0, 0, 3, 5, 3, 5),
		},
		{
			name: "missing across a source gap is one range",
			src:  offsets(span(0, 5), 0, 1, 2, 4, 5, 6), dst: at(0, cat(span(0, 1), span(4, 5))),
			want: Counts{Matched: 4, Missing: 2}, missing: []SourceRange{{2, 4}},
			segments: segs(0, 0, 2, 5, 2, 2),
		},
		{
			name: "missing at the start", src: at(0, span(0, 9)), dst: at(0, span(3, 9)),
			opt:  Options{StrictTargetFrom: true},
			want: Counts{Matched: 7, Missing: 3}, missing: []SourceRange{{0, 2}},
			segments: segs(3, 0, 7),
		},
		{
			name: "missing long run", src: at(0, span(0, 499)), dst: at(0, cat(span(0, 99), span(400, 499))),
			want: Counts{Matched: 200, Missing: 300}, missing: []SourceRange{{100, 399}},
			segments: segs(0, 0, 100, 400, 100, 100),
		},
		{
			name: "missing run longer than the window", src: at(0, span(0, 499)), dst: at(0, cat(span(0, 99), span(400, 499))),
			opt:  Options{Window: 50},
			want: Counts{Matched: 200, Missing: 300}, missing: []SourceRange{{100, 399}},
			segments: segs(0, 0, 100, 400, 100, 100),
		},
		{
			// The target rewrote every timestamp (LogAppendTime, later than the source's): the
			// fallback cannot use them, the aligner still finds the copy past the window.
			name: "missing run longer than the window, target timestamps rewritten",
			src:  at(0, span(0, 499)), dst: at(0, appendTime(cat(span(0, 99), span(400, 499)))),
			opt:  Options{Window: 50},
			want: Counts{Matched: 200, Missing: 300}, missing: []SourceRange{{100, 399}},
			segments: segs(0, 0, 100, 400, 100, 100),
		},
		{
			name: "replayed run", src: at(0, span(0, 19)), dst: at(0, cat(span(0, 14), span(10, 19))),
			want:     Counts{Matched: 20, Duplicated: 5},
			dups:     copies(15, 10, 16, 11, 17, 12, 18, 13, 19, 14),
			segments: segs(0, 0, 15, 15, 20, 5),
		},
		{
			name: "replay of one record", src: at(0, span(0, 9)), dst: at(0, cat(span(0, 5), span(5, 9))),
			want: Counts{Matched: 10, Duplicated: 1}, dups: copies(6, 5),
			segments: segs(0, 0, 6, 6, 7, 4),
		},
		{
			name: "long replay", src: at(0, span(0, 299)), dst: at(0, cat(span(0, 199), span(100, 299))),
			want:     Counts{Matched: 300, Duplicated: 100},
			segments: segs(0, 0, 200, 200, 300, 100),
		},
		{
			// Only the last History matched records are remembered: the older part of a
			// replay longer than that cannot be told from records written directly (raise
			// --history to cover the longest replay).
			name: "replay longer than the history", src: at(0, span(0, 99)), dst: at(0, cat(span(0, 99), span(0, 99))),
			opt:  Options{Window: 30, History: 30, StrictTargetTo: true},
			want: Counts{Matched: 100, Duplicated: 30, Extra: 70}, extra: []TargetRange{{100, 169}},
			segments: segs(0, 0, 100),
		},
		{
			name: "replay longer than the window, within the history", src: at(0, span(0, 299)),
			dst:      at(0, cat(span(0, 249), span(20, 249), span(250, 299))),
			opt:      Options{Window: 30, StrictTargetTo: true},
			want:     Counts{Matched: 300, Duplicated: 230},
			segments: segs(0, 0, 250, 250, 480, 50),
		},
		{
			name: "altered value", src: at(0, span(0, 9)), dst: at(0, cat(span(0, 4), altered(5), span(6, 9))),
			want: Counts{Matched: 9, Mismatched: 1}, mism: []Mismatch{{5, 5, []string{"value"}}},
			segments: segs(0, 0, 10),
		},
		{
			name: "two adjacent altered values", src: at(0, span(0, 9)), dst: at(0, cat(span(0, 4), altered(5), altered(6), span(7, 9))),
			want: Counts{Matched: 8, Mismatched: 2}, mism: []Mismatch{{5, 5, []string{"value"}}, {6, 6, []string{"value"}}},
			segments: segs(0, 0, 10),
		},
		{
			name: "every value re-encoded", src: at(0, span(0, 99)),
			dst: at(0, func() []*kgo.Record {
				var out []*kgo.Record
				for i := 0; i < 100; i++ {
					out = append(out, altered(i)...)
				}
				return out
			}()),
			want: Counts{Mismatched: 100}, segments: segs(0, 0, 100),
		},
		{
			name: "dropped header", src: at(0, span(0, 9)),
			dst:  at(0, cat(span(0, 2), with(r(3), func(c *kgo.Record) { c.Headers = nil }), span(4, 9))),
			want: Counts{Matched: 9, Mismatched: 1}, mism: []Mismatch{{3, 3, []string{"headers"}}},
			segments: segs(0, 0, 10),
		},
		{
			name: "changed header value", src: at(0, span(0, 9)),
			dst:  at(0, cat(span(0, 2), with(r(3), func(c *kgo.Record) { c.Headers[0].Value = []byte("y") }), span(4, 9))),
			want: Counts{Matched: 9, Mismatched: 1}, mism: []Mismatch{{3, 3, []string{"headers"}}},
			segments: segs(0, 0, 10),
		},
		{
			name: "timestamp rewritten, not compared", src: at(0, span(0, 9)),
			dst:  at(0, cat(span(0, 2), with(r(3), func(c *kgo.Record) { c.Timestamp = time.UnixMilli(1) }), span(4, 9))),
			want: Counts{Matched: 10}, segments: segs(0, 0, 10),
		},
		{
			name: "timestamp rewritten, compared", src: at(0, span(0, 9)),
			dst:  at(0, cat(span(0, 2), with(r(3), func(c *kgo.Record) { c.Timestamp = time.UnixMilli(1) }), span(4, 9))),
			opt:  Options{Fields: offsetmap.DefaultFields | offsetmap.FieldTimestamp},
			want: Counts{Matched: 9, Mismatched: 1}, mism: []Mismatch{{3, 3, []string{"timestamp"}}},
			segments: segs(0, 0, 10),
		},
		{
			name: "extra at the end, strict", src: at(0, span(0, 4)), dst: at(0, cat(span(0, 4), span(100, 102))),
			opt:  Options{StrictTargetTo: true},
			want: Counts{Matched: 5, Extra: 3}, extra: []TargetRange{{5, 7}}, segments: segs(0, 0, 5),
		},
		{
			name: "extra at the end, beyond a bounded range", src: at(0, span(0, 4)), dst: at(0, cat(span(0, 4), span(100, 102))),
			want: Counts{Matched: 5}, segments: segs(0, 0, 5),
		},
		{
			name: "extra in the middle", src: at(0, span(0, 9)), dst: at(0, cat(span(0, 4), span(100, 101), span(5, 9))),
			want: Counts{Matched: 10, Extra: 2}, extra: []TargetRange{{5, 6}}, segments: segs(0, 0, 5, 5, 7, 5),
		},
		{
			name: "long extra run with null keys", src: at(0, nullKeys(span(0, 99))),
			dst:  at(0, nullKeys(cat(span(0, 49), span(1000, 1039), span(50, 99)))),
			want: Counts{Matched: 100, Extra: 40}, extra: []TargetRange{{50, 89}}, segments: segs(0, 0, 50, 50, 90, 50),
		},
		{
			name: "a missing record and an extra one at the same position",
			src:  at(0, span(0, 9)), dst: at(0, cat(span(0, 4), span(100, 100), span(6, 9))),
			want: Counts{Matched: 9, Mismatched: 1}, mism: []Mismatch{{5, 5, []string{"key", "value"}}},
			segments: segs(0, 0, 10),
		},
		{
			name: "missing and replay at once", src: at(0, span(0, 9)), dst: at(0, cat(span(0, 4), span(4, 4), span(6, 9))),
			want: Counts{Matched: 9, Missing: 1, Duplicated: 1}, missing: []SourceRange{{5, 5}}, dups: copies(5, 4),
			segments: segs(0, 0, 5, 6, 6, 4),
		},
		{
			name: "empty", want: Counts{},
		},
		{
			name: "empty target", src: at(0, span(0, 4)),
			want: Counts{Missing: 5}, missing: []SourceRange{{0, 4}},
		},
		{
			name: "empty source, strict end", dst: at(0, span(0, 2)), opt: Options{StrictTargetTo: true},
			want: Counts{Extra: 3}, extra: []TargetRange{{0, 2}},
		},
		{
			name: "target read from a lower bound", src: at(10, span(10, 19)), dst: at(7, span(7, 19)),
			want: Counts{Matched: 10}, segments: segs(10, 10, 10), skipped: 3,
		},
		{
			name: "leading target records are extra when the start is exact", src: at(0, span(10, 19)), dst: at(0, span(7, 19)),
			opt:  Options{StrictTargetFrom: true},
			want: Counts{Matched: 10, Extra: 3}, extra: []TargetRange{{0, 2}}, segments: segs(0, 3, 10),
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if !tt.opt.StrictTargetFrom && tt.skipped == 0 {
				tt.opt.StrictTargetFrom = true
			}
			res, pm := align(t, tt.src, tt.dst, tt.opt)
			got := res.Counts
			got.Ambiguous = 0
			if got != tt.want {
				t.Errorf("counts: got %+v, want %+v", got, tt.want)
			}
			if !reflect.DeepEqual(res.MissingRanges, tt.missing) && (len(res.MissingRanges)+len(tt.missing) > 0) {
				t.Errorf("missing ranges: got %v, want %v", res.MissingRanges, tt.missing)
			}
			if tt.dups != nil && !reflect.DeepEqual(res.Duplicates, tt.dups) {
				t.Errorf("duplicates: got %v, want %v", res.Duplicates, tt.dups)
			}
			if tt.mism != nil && !reflect.DeepEqual(res.Mismatches, tt.mism) {
				t.Errorf("mismatches: got %v, want %v", res.Mismatches, tt.mism)
			}
			if !reflect.DeepEqual(res.ExtraRanges, tt.extra) && (len(res.ExtraRanges)+len(tt.extra) > 0) {
				t.Errorf("extra ranges: got %v, want %v", res.ExtraRanges, tt.extra)
			}
			if !reflect.DeepEqual(pm.Segments, tt.segments) && (len(pm.Segments)+len(tt.segments) > 0) {
				t.Errorf("segments: got %v, want %v", pm.Segments, tt.segments)
			}
			if res.TargetSkipped != tt.skipped {
				t.Errorf("target skipped: got %d, want %d", res.TargetSkipped, tt.skipped)
			}
		})
	}
}

func nullKeys(recs []*kgo.Record) []*kgo.Record {
	out := make([]*kgo.Record, len(recs))
	for i, rec := range recs {
		c := *rec
		c.Key = nil
		out[i] = &c
	}
	return out
}

// same returns n copies of one record (identical neighbours).
func same(n int, v string) []*kgo.Record {
	out := make([]*kgo.Record, n)
	for i := range out {
		out[i] = &kgo.Record{Value: []byte(v)}
	}
	return out
}

func TestAlignAmbiguous(t *testing.T) {
	tests := []struct {
		name      string
		src, dst  []*kgo.Record
		want      Counts
		ambiguous []TargetRange
	}{
		{
			name: "identical run copied whole",
			src:  at(0, cat(span(0, 1), same(3, "A"), span(5, 6))), dst: at(0, cat(span(0, 1), same(3, "A"), span(5, 6))),
			want: Counts{Matched: 7, Ambiguous: 3}, ambiguous: []TargetRange{{2, 4}},
		},
		{
			name: "one of an identical run lost",
			src:  at(0, cat(span(0, 1), same(3, "A"), span(5, 6))), dst: at(0, cat(span(0, 1), same(2, "A"), span(5, 6))),
			want: Counts{Matched: 6, Missing: 1, Ambiguous: 2}, ambiguous: []TargetRange{{2, 3}},
		},
		{
			name: "no identical neighbours",
			src:  at(0, span(0, 6)), dst: at(0, span(0, 6)),
			want: Counts{Matched: 7},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			res, _ := align(t, tt.src, tt.dst, Options{StrictTargetFrom: true, StrictTargetTo: true})
			if res.Counts != tt.want {
				t.Errorf("counts: got %+v, want %+v", res.Counts, tt.want)
			}
			if !reflect.DeepEqual(res.AmbiguousRanges, tt.ambiguous) {
				t.Errorf("ambiguous ranges: got %v, want %v", res.AmbiguousRanges, tt.ambiguous)
			}
		})
	}
}

func TestAlignExactTarget(t *testing.T) {
	// Source 0..19; the target replayed 10..14 after 14 and lost 17.
	src := at(0, span(0, 19))
	dst := at(100, cat(span(0, 14), span(10, 16), span(18, 19)))
	_, pm := align(t, src, dst, Options{StrictTargetFrom: true, StrictTargetTo: true})
	tests := []struct {
		name  string
		g     int64
		known bool
		want  int64
	}{
		{name: "start", g: 0, known: true, want: 100},
		{name: "inside the first segment", g: 5, known: true, want: 105},
		{name: "after a replayed record: past its last copy", g: 12, known: true, want: 117},
		{name: "after the replay", g: 15, known: true, want: 120},
		{name: "after a missing record", g: 18, known: true, want: 122},
		{name: "end", g: 20, known: true, want: 124},
		{name: "beyond the aligned range", g: 21, known: false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tr := pm.ExactTarget(tt.g)
			if tr.Known != tt.known || (tt.known && tr.Target != tt.want) {
				t.Errorf("ExactTarget(%d): got known=%v target=%d, want known=%v target=%d", tt.g, tr.Known, tr.Target, tt.known, tt.want)
			}
		})
	}
}

func TestAlignTargetBehindIsPending(t *testing.T) {
	// The mirror has copied 0..6 of 0..9 so far: E(G) for G above 7 is not known yet.
	_, pm := align(t, at(0, span(0, 9)), at(0, span(0, 6)), Options{StrictTargetFrom: true})
	if got := pm.ExactTarget(7); !got.Known || got.Target != 7 {
		t.Errorf("ExactTarget(7): got %+v, want known 7", got)
	}
	if got := pm.ExactTarget(8); got.Known {
		t.Errorf("ExactTarget(8): got %+v, want unknown (pending)", got)
	}
}

func TestAlignMaxListed(t *testing.T) {
	src := at(0, span(0, 99))
	var dst []*kgo.Record
	for i := 0; i < 100; i += 2 {
		dst = append(dst, r(i)) // every odd record lost
	}
	res, _ := align(t, src, at(0, dst), Options{StrictTargetFrom: true, MaxListed: 10})
	if res.Missing != 50 || len(res.MissingRanges) != 10 || !res.Truncated {
		t.Errorf("got missing %d, %d ranges, truncated %v; want 50, 10, true", res.Missing, len(res.MissingRanges), res.Truncated)
	}
}

func TestAlignStreamError(t *testing.T) {
	_, _, err := Partition(context.Background(), &SliceStream{}, errStream{}, Options{})
	if err == nil {
		t.Fatalf("got nil error, want the stream's error")
	}
}

type errStream struct{}

func (errStream) Next(context.Context) (Item, bool, error) {
	return Item{}, false, fmt.Errorf("broken")
}

// FuzzAlign builds a target from a source by a program of edits (copy, lose, replay, alter,
// insert) and checks that Partition never panics and its counts add up.
func FuzzAlign(f *testing.F) {
	f.Add([]byte{0, 0, 0, 1, 2, 3, 4, 0, 0}, uint8(8), uint16(40))
	f.Add([]byte{2, 2, 2, 2, 1, 1, 3, 3, 4, 4}, uint8(3), uint16(200))
	f.Add([]byte{}, uint8(0), uint16(0))
	f.Fuzz(runFuzzAlign)
}

func runFuzzAlign(t *testing.T, prog []byte, alphabet uint8, n uint16) {
	{
		n %= 600
		// A small alphabet makes identical records, hence ambiguity and false resyncs.
		var src []*kgo.Record
		for i := 0; i < int(n); i++ {
			v := i
			if alphabet > 0 {
				v = i % (int(alphabet) + 1)
			}
			src = append(src, &kgo.Record{Key: []byte{byte(v)}, Value: []byte(fmt.Sprint(v)), Timestamp: time.UnixMilli(int64(i))})
		}
		src = at(0, src)
		var dst []*kgo.Record
		i := 0
		for pc := 0; i < len(src) && pc < 4*len(src); pc++ {
			op := byte(0)
			if len(prog) > 0 {
				op = prog[pc%len(prog)] % 6
			}
			switch op {
			case 0, 5: // copy a few
				for k := 0; k < 3 && i < len(src); k++ {
					dst = append(dst, src[i])
					i++
				}
			case 1: // lose one
				i++
			case 2: // replay the last few
				for k := max(0, i-4); k < i; k++ {
					dst = append(dst, src[k])
				}
			case 3: // alter one
				dst = append(dst, with(src[i], func(c *kgo.Record) { c.Value = append([]byte("x"), c.Value...) })...)
				i++
			case 4: // insert one
				dst = append(dst, &kgo.Record{Value: []byte{'e', byte(pc)}})
			}
		}
		dst = append(dst, src[i:]...)
		dst = at(1000, dst)
		for _, strict := range []bool{true, false} {
			opt := Options{Window: 64, StrictTargetFrom: strict, StrictTargetTo: strict}
			res, _ := align(t, src, dst, opt)
			if strict {
				if got, want := res.Matched+res.Mismatched+res.Duplicated+res.Extra, int64(len(dst)); got != want {
					t.Errorf("strict: matched+mismatched+duplicated+extra = %d, want target count %d (%+v)", got, want, res.Counts)
				}
			}
		}
	}
}

// BenchmarkAlign measures the aligner alone (in memory) per record pair: a clean copy, and a
// copy with a fault every 1000 records (a loss, a replay, an alteration in turn).
func BenchmarkAlign(b *testing.B) {
	const n = 100_000
	src := at(0, span(0, n-1))
	clean := at(0, span(0, n-1))
	var faulty []*kgo.Record
	for i := 0; i < n; i++ {
		switch {
		case i%3000 == 500:
			continue // lost
		case i%3000 == 1500:
			faulty = append(faulty, r(i), r(i-1)) // replayed
		case i%3000 == 2500:
			faulty = append(faulty, with(r(i), func(c *kgo.Record) { c.Value = []byte("x") })...)
		default:
			faulty = append(faulty, r(i))
		}
	}
	faulty = at(0, faulty)
	for _, bc := range []struct {
		name string
		dst  []*kgo.Record
	}{{"clean", clean}, {"faults", faulty}} {
		b.Run(bc.name, func(b *testing.B) {
			si, ti := items(src, offsetmap.DefaultFields), items(bc.dst, offsetmap.DefaultFields)
			b.ReportAllocs()
			b.ResetTimer()
			for b.Loop() {
				_, _, err := Partition(context.Background(), &SliceStream{si}, &SliceStream{ti}, Options{StrictTargetFrom: true, StrictTargetTo: true})
				if err != nil {
					b.Fatal(err)
				}
			}
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/n, "ns/record")
		})
	}
}

// appendTime gives the records timestamps later than any source record's, as a target topic
// with message.timestamp.type=LogAppendTime does.
func appendTime(recs []*kgo.Record) []*kgo.Record {
	out := make([]*kgo.Record, len(recs))
	for i, rec := range recs {
		c := *rec
		c.Timestamp = time.UnixMilli(1_800_000_000_000 + int64(i))
		out[i] = &c
	}
	return out
}

// FuzzAlignExact checks the classes against the truth for edits whose explanation is unique:
// distinct records, and either losses and alterations, or replays. (Dense replays that repeat
// altered copies can make some of those copies look extra: see TestAlign for the sparse case.)
func FuzzAlignExact(f *testing.F) {
	f.Add([]byte{0, 1, 0, 2, 0, 0, 1, 1, 2}, false, uint16(300))
	f.Add([]byte{0, 3, 0, 2, 3, 0}, true, uint16(300))
	f.Fuzz(runAlignExact)
}

// runAlignExact is the body of FuzzAlignExact.
func runAlignExact(t *testing.T, prog []byte, replays bool, n uint16) {
	{
		n %= 2000
		src := at(0, span(0, int(n)-1))
		var dst []*kgo.Record
		var lost, altered, dups int64
		copied := make([]*kgo.Record, len(src)) // what the target got for each source record
		i := 0
		for pc := 0; i < len(src) && pc < 4*len(src); pc++ {
			op := byte(0)
			if len(prog) > 0 {
				op = prog[pc%len(prog)] % 4
			}
			switch {
			case op == 1 && !replays:
				lost++
				i++
			case op == 2 && !replays:
				copied[i] = with(src[i], func(c *kgo.Record) { c.Value = append([]byte("x"), c.Value...) })[0]
				dst = append(dst, copied[i])
				altered++
				i++
			case op == 3 && replays: // an at-least-once replay repeats what was written
				for k := max(0, i-5); k < i; k++ {
					dst = append(dst, copied[k])
					dups++
				}
			default:
				copied[i] = src[i]
				dst = append(dst, src[i])
				i++
			}
		}
		dst = append(dst, src[i:]...)
		res, _ := align(t, src, at(0, dst), Options{Window: 64, StrictTargetFrom: true, StrictTargetTo: true})
		want := Counts{Matched: int64(n) - lost - altered, Missing: lost, Mismatched: altered, Duplicated: dups}
		if res.Counts != want {
			t.Errorf("got %+v, want %+v", res.Counts, want)
		}
	}
}
