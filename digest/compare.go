package digest

import (
	"errors"
	"fmt"
	"slices"
	"sort"
)

// Comparison is what Compare finds: per partition the regions where the chunk sequences of a
// source and a target digest differ. Its JSON form is the output of `kverify compare`.
type Comparison struct {
	SourceTopic     string                `json:"source_topic"`
	TargetTopic     string                `json:"target_topic"`
	SourceClusterID string                `json:"source_cluster_id"`
	TargetClusterID string                `json:"target_cluster_id"`
	Compared        []string              `json:"compared"`
	Identical       bool                  `json:"identical"`
	Regions         int                   `json:"regions"`
	Partitions      []PartitionComparison `json:"partitions"`
	// NotCompared lists partitions with no record in either digest: nothing was proved.
	NotCompared []int32 `json:"not_compared,omitempty"`
	// Problems are partitions one digest has and the other does not.
	Problems []string `json:"problems,omitempty"`
	// Aborted and AbortedCopies sum the target digest's Txns: the records of aborted
	// transactions in its ranges, which read_uncommitted consumers (the Java default) read
	// and read_committed ones do not, and the copies of committed records among them. They
	// do not change Identical, the comparison of what read_committed consumers read. nil
	// when the target digest does not record them; AbortedNotRecorded then says why.
	Aborted            *int64 `json:"aborted,omitempty"`
	AbortedCopies      *int64 `json:"aborted_copies,omitempty"`
	AbortedNotRecorded string `json:"aborted_not_recorded,omitempty"`
	// TargetTransactions lists, in partition order, the target digest's partitions with
	// aborted records or a transaction open where its range ends.
	TargetTransactions []TxnPartition `json:"target_transactions,omitempty"`
}

// TxnPartition is the Txns of one target partition: the JSON form of kverify compare's and
// kverify diff's target_transactions (verify.TxnPartition is this type).
type TxnPartition struct {
	Partition int32 `json:"partition"`
	Txns
}

// OpenTransactions lists the partitions of tps with a transaction open and counts the records
// in them that were not read.
func OpenTransactions(tps []TxnPartition) (partitions []int32, records int64) {
	for _, tp := range tps {
		if o := tp.OpenTransaction; o != nil {
			partitions = append(partitions, tp.Partition)
			records += o.To - o.From + 1
		}
	}
	return partitions, records
}

// The reasons Comparison.AbortedNotRecorded gives.
const (
	NotRecordedUncommitted = "the digests were read read_uncommitted: the aborted records are compared like the others"
	NotRecordedOld         = "the target digest does not record them (taken by an earlier kverify): take it again to count them"
)

// txns sums the Txns of the target digest dst into c.
func (c *Comparison) txns(dst *File) {
	if dst.Isolation != Isolation(true) {
		c.AbortedNotRecorded = NotRecordedUncommitted
		return
	}
	var n, copies int64
	var list []TxnPartition
	for _, p := range dst.Partitions {
		if p.Txns == nil {
			c.AbortedNotRecorded = NotRecordedOld
			return
		}
		n, copies = n+p.Txns.Aborted, copies+p.Txns.AbortedCopies
		if p.Txns.Aborted > 0 || p.Txns.OpenTransaction != nil {
			list = append(list, TxnPartition{Partition: p.Partition, Txns: *p.Txns})
		}
	}
	sort.Slice(list, func(i, j int) bool { return list[i].Partition < list[j].Partition })
	c.Aborted, c.AbortedCopies, c.TargetTransactions = &n, &copies, list
}

// PartitionComparison is one partition: both digests' ranges and chunk counts, how many chunks
// matched, and the differing regions.
type PartitionComparison struct {
	Partition     int32    `json:"partition"`
	SourceFrom    int64    `json:"source_from"`
	SourceTo      int64    `json:"source_to"`
	TargetFrom    int64    `json:"target_from"`
	TargetTo      int64    `json:"target_to"`
	SourceChunks  int      `json:"source_chunks"`
	TargetChunks  int      `json:"target_chunks"`
	MatchedChunks int      `json:"matched_chunks"`
	Regions       []Region `json:"regions"`
}

// Region is a run of unmatched chunks between two matched ones (or an end of the range):
// source offsets [SourceFrom, SourceTo) and target offsets [TargetFrom, TargetTo), ends
// exclusive, reaching from just after the matched chunk before to the first offset of the
// matched chunk after. One side may be empty (records only the other side has).
// ContextSourceFrom and ContextTargetFrom are where the matched chunk before starts: a drill
// reads from there, so that a replay of it is named duplicated, as kverify diff names it.
type Region struct {
	SourceFrom        int64 `json:"source_from"`
	SourceTo          int64 `json:"source_to"`
	TargetFrom        int64 `json:"target_from"`
	TargetTo          int64 `json:"target_to"`
	SourceChunks      int   `json:"source_chunks"`
	TargetChunks      int   `json:"target_chunks"`
	SourceRecords     int64 `json:"source_records"`
	TargetRecords     int64 `json:"target_records"`
	ContextSourceFrom int64 `json:"context_source_from"`
	ContextTargetFrom int64 `json:"context_target_from"`
	// TargetFromLowerBound is set on a partition's first region when the source digest does
	// not start at offset 0 (retention, or digest --from): the target may hold records older
	// than the source's first one there, and a drill skips the target records before the copy
	// of the first source record instead of calling them extra, as kverify diff does.
	TargetFromLowerBound bool `json:"target_from_lower_bound,omitempty"`
}

// ErrNothingToCompare is returned by Compare when no partition has a record in either digest.
var ErrNothingToCompare = errors.New("nothing to compare")

// Compatible checks that src and dst can be compared: a source and a target digest of the
// same compared fields, isolation and chunking.
func Compatible(src, dst *File) error {
	switch {
	case src.Side != "source":
		return fmt.Errorf("the first digest is of the %s side (topic %q): give the source digest first, then the target digest", src.Side, src.Topic)
	case dst.Side != "target":
		return fmt.Errorf("the second digest is of the %s side (topic %q): give the target digest second", dst.Side, dst.Topic)
	case !slices.Equal(src.Compared, dst.Compared):
		return fmt.Errorf("the source digest compares %v, the target digest %v: take both with the same --compare", src.Compared, dst.Compared)
	case src.Isolation != dst.Isolation:
		return fmt.Errorf("the source digest was read %s, the target digest %s: take both with the same isolation", src.Isolation, dst.Isolation)
	case src.Chunking != dst.Chunking:
		return fmt.Errorf("the source digest was chunked with %+v, the target digest with %+v: take both with the same --chunk-records", src.Chunking, dst.Chunking)
	}
	return nil
}

// Compare aligns the chunk sequences of each partition both digests have (the same partition
// number) and returns the regions that differ. Partitions one digest lacks are Problems. The
// aborted records the target digest records are summed, apart from the verdict.
func Compare(src, dst *File) (*Comparison, error) {
	if err := Compatible(src, dst); err != nil {
		return nil, err
	}
	c := &Comparison{SourceTopic: src.Topic, TargetTopic: dst.Topic, SourceClusterID: src.ClusterID, TargetClusterID: dst.ClusterID,
		Compared: src.Compared, Partitions: []PartitionComparison{}}
	for _, sp := range src.Partitions {
		tp, ok := dst.Lookup(sp.Partition)
		if !ok {
			c.Problems = append(c.Problems, fmt.Sprintf("partition %d of source topic %q is not in the target digest of %q", sp.Partition, src.Topic, dst.Topic))
			continue
		}
		if sp.Records == 0 && tp.Records == 0 {
			c.NotCompared = append(c.NotCompared, sp.Partition)
			continue
		}
		pc := comparePartition(&sp, tp)
		c.Regions += len(pc.Regions)
		c.Partitions = append(c.Partitions, pc)
	}
	for _, tp := range dst.Partitions {
		if _, ok := src.Lookup(tp.Partition); !ok {
			c.Problems = append(c.Problems, fmt.Sprintf("partition %d of target topic %q is not in the source digest of %q", tp.Partition, dst.Topic, src.Topic))
		}
	}
	sort.Slice(c.Partitions, func(i, j int) bool { return c.Partitions[i].Partition < c.Partitions[j].Partition })
	if len(c.Partitions) == 0 && len(c.Problems) == 0 {
		return nil, fmt.Errorf("%w: no partition of %q (source) and %q (target) holds a record in either digest", ErrNothingToCompare, src.Topic, dst.Topic)
	}
	c.Identical = c.Regions == 0 && len(c.Problems) == 0
	c.txns(dst)
	return c, nil
}

// pair is a matched chunk: index i of the source's chunks, j of the target's.
type pair struct{ i, j int }

func comparePartition(sp, tp *Partition) PartitionComparison {
	pc := PartitionComparison{Partition: sp.Partition, SourceFrom: sp.From, SourceTo: sp.To, TargetFrom: tp.From, TargetTo: tp.To,
		SourceChunks: len(sp.Chunks), TargetChunks: len(tp.Chunks), Regions: []Region{}}
	pairs := match(sp.Chunks, tp.Chunks)
	pc.MatchedChunks = len(pairs)
	prev := pair{-1, -1}
	for k := 0; k <= len(pairs); k++ {
		next := pair{len(sp.Chunks), len(tp.Chunks)}
		if k < len(pairs) {
			next = pairs[k]
		}
		if next.i-prev.i > 1 || next.j-prev.j > 1 {
			pc.Regions = append(pc.Regions, region(sp, tp, prev, next))
		}
		prev = next
	}
	return pc
}

// region is the gap between the matched chunks prev and next (indexes -1 and len: the ends).
func region(sp, tp *Partition, prev, next pair) Region {
	r := Region{SourceFrom: sp.From, SourceTo: sp.To, TargetFrom: tp.From, TargetTo: tp.To}
	r.ContextSourceFrom, r.ContextTargetFrom = sp.From, tp.From
	if prev.i >= 0 {
		r.SourceFrom, r.TargetFrom = sp.Chunks[prev.i].Last+1, tp.Chunks[prev.j].Last+1
		r.ContextSourceFrom, r.ContextTargetFrom = sp.Chunks[prev.i].First, tp.Chunks[prev.j].First
	} else {
		r.TargetFromLowerBound = sp.From > 0
	}
	if next.i < len(sp.Chunks) {
		r.SourceTo, r.TargetTo = sp.Chunks[next.i].First, tp.Chunks[next.j].First
	}
	for _, c := range sp.Chunks[prev.i+1 : next.i] {
		r.SourceChunks++
		r.SourceRecords += c.Records
	}
	for _, c := range tp.Chunks[prev.j+1 : next.j] {
		r.TargetChunks++
		r.TargetRecords += c.Records
	}
	return r
}

// match pairs equal chunks of s and t in order. Where the heads differ it takes the nearest
// pair of equal chunks ahead (the smallest number of chunks skipped on both sides together),
// as the record aligner does with records. Every pair is two chunks of equal hash; whatever a
// poor choice among repeated chunks costs is a larger region, never a missed difference.
func match(s, t []Chunk) []pair {
	sIdx, tIdx := index(s), index(t)
	var out []pair
	i, j := 0, 0
	for i < len(s) && j < len(t) {
		if s[i].Hash == t[j].Hash {
			out = append(out, pair{i, j})
			i, j = i+1, j+1
			continue
		}
		bi, bj, ok := nearest(s, t, sIdx, tIdx, i, j)
		if !ok {
			break
		}
		i, j = bi, bj
	}
	return out
}

// nearest finds the pair (bi, bj), bi >= i, bj >= j, of equal chunks with the least bi-i+bj-j.
func nearest(s, t []Chunk, sIdx, tIdx map[Hash][]int, i, j int) (bi, bj int, ok bool) {
	best := len(s) + len(t)
	for k := 0; k < best && (i+k < len(s) || j+k < len(t)); k++ {
		if i+k < len(s) {
			if pos, found := firstAtOrAfter(tIdx[s[i+k].Hash], j); found && k+pos-j < best {
				best, bi, bj, ok = k+pos-j, i+k, pos, true
			}
		}
		if j+k < len(t) {
			if pos, found := firstAtOrAfter(sIdx[t[j+k].Hash], i); found && k+pos-i < best {
				best, bi, bj, ok = k+pos-i, pos, j+k, true
			}
		}
	}
	return bi, bj, ok
}

func index(cs []Chunk) map[Hash][]int {
	m := make(map[Hash][]int, len(cs))
	for i, c := range cs {
		m[c.Hash] = append(m[c.Hash], i)
	}
	return m
}

func firstAtOrAfter(sorted []int, from int) (int, bool) {
	k := sort.SearchInts(sorted, from)
	if k == len(sorted) {
		return 0, false
	}
	return sorted[k], true
}
