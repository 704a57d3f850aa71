package digest

import (
	"bytes"
	"math/rand/v2"
	"reflect"
	"strings"
	"testing"

	"github.com/kmigrate/kmigrate/align"
)

// fps is a fingerprint stream of n records (a fixed seed: the same every run).
func fps(n int) []uint64 {
	r := rand.New(rand.NewPCG(1, 2))
	out := make([]uint64, n)
	for i := range out {
		out[i] = r.Uint64()
	}
	return out
}

// partition digests a stream at offsets from..from+len-1.
func partition(p Params, from int64, s []uint64) Partition {
	b := NewBuilder(p)
	for i, fp := range s {
		b.Add(from+int64(i), fp)
	}
	chunks, n, root := b.Finish()
	return Partition{From: from, To: from + int64(len(s)), Records: n, Root: root.String(), Chunks: chunks}
}

func file(side string, p Params, parts ...Partition) *File {
	f := NewFile(p)
	f.Side, f.Topic, f.Compared, f.Isolation = side, "t", []string{"key", "value"}, "read_committed"
	f.Partitions = parts
	return f
}

// A lost, duplicated, extra or altered record changes O(1) chunks, and Compare finds one
// region holding it; the copy starts at another offset (100 000), which changes nothing.
func TestOneFaultChangesFewChunks(t *testing.T) {
	p, err := ParamsFor(256)
	if err != nil {
		t.Fatal(err)
	}
	src := fps(200_000)
	const at = 123_457
	faults := map[string]func() []uint64{
		"lost":       func() []uint64 { return cat(src[:at], src[at+1:]) },
		"duplicated": func() []uint64 { return cat(src[:at+1], src[at:]) },
		"extra":      func() []uint64 { return cat(src[:at], []uint64{42}, src[at:]) },
		"altered":    func() []uint64 { return cat(src[:at], []uint64{src[at] ^ 1}, src[at+1:]) },
	}
	sp := partition(p, 0, src)
	if n := len(sp.Chunks); n < 200_000/(256+16)/2 || n > 200_000/256*2 {
		t.Fatalf("%d chunks for 200000 records at an average of 256: the boundaries are not content-defined as documented", n)
	}
	for name, mk := range faults {
		t.Run(name, func(t *testing.T) {
			tp := partition(p, 100_000, mk())
			changed := notIn(sp.Chunks, tp.Chunks) + notIn(tp.Chunks, sp.Chunks)
			if changed == 0 || changed > 4 {
				t.Errorf("%d chunks differ between the two sides, want 1 to 4", changed)
			}
			c, err := Compare(file("source", p, sp), file("target", p, tp))
			if err != nil {
				t.Fatal(err)
			}
			if c.Identical || c.Regions != 1 {
				t.Fatalf("got %d regions (identical %v), want 1", c.Regions, c.Identical)
			}
			r := c.Partitions[0].Regions[0]
			if r.SourceFrom > at || r.SourceTo <= at || r.TargetFrom > 100_000+at || r.TargetTo <= 100_000+at {
				t.Errorf("region %+v does not hold source offset %d and target offset %d", r, at, 100_000+at)
			}
			if r.SourceRecords > 4*int64(p.MaxRecords) {
				t.Errorf("region of %d source records, want a few chunks", r.SourceRecords)
			}
		})
	}
	c, err := Compare(file("source", p, sp), file("target", p, partition(p, 100_000, src)))
	if err != nil || !c.Identical || c.Regions != 0 {
		t.Fatalf("an exact copy at other offsets: got %+v, %v; want identical", c, err)
	}
}

func cat(parts ...[]uint64) []uint64 {
	var out []uint64
	for _, p := range parts {
		out = append(out, p...)
	}
	return out
}

func notIn(a, b []Chunk) int {
	m := map[Hash]bool{}
	for _, c := range b {
		m[c.Hash] = true
	}
	n := 0
	for _, c := range a {
		if !m[c.Hash] {
			n++
		}
	}
	return n
}

// Records the target lacks at its end (the mirror is behind) and a partition one side lacks.
func TestCompareTailAndMissingPartition(t *testing.T) {
	p, _ := ParamsFor(64)
	src := fps(5000)
	sp := partition(p, 0, src)
	tp := partition(p, 0, src[:4000])
	other := partition(p, 0, fps(10))
	other.Partition = 1
	c, err := Compare(file("source", p, sp, other), file("target", p, tp))
	if err != nil {
		t.Fatal(err)
	}
	if c.Identical || len(c.Problems) != 1 || !strings.Contains(c.Problems[0], "partition 1") {
		t.Fatalf("problems %v, want partition 1 named", c.Problems)
	}
	rs := c.Partitions[0].Regions
	// The target's last chunk ends where its stream does, so it differs too: the region
	// starts at the last matched chunk, the same offset on both sides here.
	if len(rs) != 1 || rs[0].SourceTo != 5000 || rs[0].TargetTo != 4000 || rs[0].TargetFrom != rs[0].SourceFrom || rs[0].SourceFrom > 4000 || rs[0].TargetRecords > p.MaxRecords {
		t.Fatalf("regions %+v, want one: source up to 5000, target up to 4000, from the same offset at most 4000", rs)
	}
}

func TestCompareRefusesIncompatible(t *testing.T) {
	p, _ := ParamsFor(64)
	q, _ := ParamsFor(128)
	sp := partition(p, 0, fps(10))
	for name, tc := range map[string]struct {
		a, b *File
		want string
	}{
		"sides swapped":      {file("target", p, sp), file("source", p, sp), "source digest first"},
		"other chunking":     {file("source", p, sp), file("target", q, sp), "--chunk-records"},
		"other isolation":    {file("source", p, sp), func() *File { f := file("target", p, sp); f.Isolation = "read_uncommitted"; return f }(), "isolation"},
		"nothing to compare": {file("source", p, partition(p, 0, nil)), file("target", p, partition(p, 0, nil)), "nothing to compare"},
	} {
		if _, err := Compare(tc.a, tc.b); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: got %v, want an error saying %q", name, err, tc.want)
		}
	}
}

// A digest file round-trips, and Parse refuses what is not consistent.
func TestParse(t *testing.T) {
	p, _ := ParamsFor(64)
	f := file("source", p, partition(p, 10, fps(1000)))
	var b bytes.Buffer
	if err := Write(&b, f); err != nil {
		t.Fatal(err)
	}
	got, err := Parse(b.Bytes())
	if err != nil {
		t.Fatal(err)
	}
	if len(got.Partitions[0].Chunks) != len(f.Partitions[0].Chunks) || got.Partitions[0].Chunks[3] != f.Partitions[0].Chunks[3] {
		t.Fatalf("chunks did not round-trip")
	}
	good := b.String()
	for name, tc := range map[string]struct {
		edit func(string) string
		want string
	}{
		"unknown field": {func(s string) string { return strings.Replace(s, `"side"`, `"sidee":1,"side"`, 1) }, "unknown field"},
		"other version": {func(s string) string { return strings.Replace(s, `"version":1`, `"version":2`, 1) }, "version 2"},
		"records":       {func(s string) string { return strings.Replace(s, `"records":1000`, `"records":999`, 1) }, "chunks hold 1000 records"},
		"trailing data": {func(s string) string { return s + "{}" }, "after the digest"},
		"chunk past to": {func(s string) string { return strings.Replace(s, `"to":1010`, `"to":1000`, 1) }, "outside"},
		"bad hash": {func(s string) string {
			return strings.Replace(s, `,"`+f.Partitions[0].Chunks[0].Hash.String(), `,"zz`, 1)
		}, "hash"},
	} {
		if _, err := Parse([]byte(tc.edit(good))); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: got %v, want an error saying %q", name, err, tc.want)
		}
	}
}

func TestParamsFor(t *testing.T) {
	for _, bad := range []int64{0, 8, 100, 1 << 21} {
		if _, err := ParamsFor(bad); err == nil {
			t.Errorf("ParamsFor(%d): no error", bad)
		}
	}
	if p, err := ParamsFor(4096); err != nil || p != (Params{Bits: 12, MinRecords: 256, MaxRecords: 65536}) {
		t.Errorf("ParamsFor(4096) = %+v, %v", p, err)
	}
}

// A target digest's transactions round-trip and are checked against the range; Compare sums
// them, says why when they are not recorded, and keeps the verdict.
func TestTxnsParseAndCompare(t *testing.T) {
	p, _ := ParamsFor(64)
	s := fps(100)
	tp := partition(p, 0, s)
	tp.To += 4 // 4 aborted records at 100-103
	tp.Txns = &Txns{Aborted: 4, AbortedCopies: 1, AbortedRanges: []align.TargetRange{{From: 100, To: 103}}}
	dst := file("target", p, tp)
	var b bytes.Buffer
	if err := Write(&b, dst); err != nil {
		t.Fatal(err)
	}
	got, err := Parse(b.Bytes())
	if err != nil || !reflect.DeepEqual(got.Partitions[0].Txns, tp.Txns) {
		t.Fatalf("transactions did not round-trip: %v, %+v", err, got)
	}
	good := b.String()
	for name, tc := range map[string]struct{ old, new, want string }{
		"copies over count": {`"aborted_copies":1`, `"aborted_copies":5`, "not valid"},
		"range outside":     {`"target_to":103}`, `"target_to":104}`, "outside"},
		"ranges short":      {`"aborted":4`, `"aborted":5`, "hold 4 records"},
	} {
		if _, err := Parse([]byte(strings.Replace(good, tc.old, tc.new, 1))); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: got %v, want an error saying %q", name, err, tc.want)
		}
	}

	src := file("source", p, partition(p, 0, s))
	c, err := Compare(src, dst)
	if err != nil {
		t.Fatal(err)
	}
	if !c.Identical || c.Aborted == nil || *c.Aborted != 4 || *c.AbortedCopies != 1 || len(c.TargetTransactions) != 1 || c.AbortedNotRecorded != "" {
		t.Errorf("compare: identical %v, aborted %v, %+v, %q; want identical, 4 aborted, 1 copy", c.Identical, c.Aborted, c.TargetTransactions, c.AbortedNotRecorded)
	}
	dst.Partitions[0].Txns = nil
	if c, _ := Compare(src, dst); c.Aborted != nil || c.AbortedNotRecorded != NotRecordedOld {
		t.Errorf("compare of a digest without transactions: aborted %v, %q; want not recorded", c.Aborted, c.AbortedNotRecorded)
	}
	src.Isolation, dst.Isolation = "read_uncommitted", "read_uncommitted"
	if c, _ := Compare(src, dst); c.Aborted != nil || c.AbortedNotRecorded != NotRecordedUncommitted {
		t.Errorf("compare of read_uncommitted digests: aborted %v, %q; want not recorded", c.Aborted, c.AbortedNotRecorded)
	}
}
