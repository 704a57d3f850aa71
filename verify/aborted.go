package verify

import (
	"sort"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/kmigrate/kmigrate/align"
	"github.com/kmigrate/kmigrate/logread"
	"github.com/kmigrate/kmigrate/offsetmap"
)

// TxnPartition is what a read_committed comparison passed over in one target partition: the
// records of aborted transactions in the compared target range, which a read_uncommitted
// consumer (the Java client's default) reads and a read_committed one does not, and a
// transaction still open at the end of the target log. Part of the JSON form of Result.
type TxnPartition struct {
	Partition int32 `json:"partition"`
	// Aborted counts the records of aborted transactions in the compared target range.
	Aborted int64 `json:"aborted"`
	// AbortedCopies counts those whose fingerprint (the compared fields) equals that of a
	// record committed in the compared target range: what a read_uncommitted consumer reads
	// twice. A committed copy is found anywhere after the aborted record, or among the 4096
	// committed records before it.
	AbortedCopies int64 `json:"aborted_copies"`
	// AbortedRanges are the aborted target offsets as inclusive ranges of consecutive
	// offsets (at most Config.MaxListed; Truncated says when cut).
	AbortedRanges []align.TargetRange `json:"aborted_ranges,omitempty"`
	// OpenTransaction is set when the last fetch of the target showed its last stable offset
	// below its high watermark: target offsets [last stable, high watermark) are in a
	// transaction still open. They were not read and are not counted; a later run reads them
	// once the transaction ended.
	OpenTransaction *align.TargetRange `json:"open_transaction,omitempty"`
	Truncated       bool               `json:"truncated,omitempty"`
}

// OpenTransactions lists the target partitions with a transaction open and counts the records
// in them that were not compared.
func (r *Result) OpenTransactions() (partitions []int32, records int64) {
	for _, tp := range r.Transactions {
		if o := tp.OpenTransaction; o != nil {
			partitions = append(partitions, tp.Partition)
			records += o.To - o.From + 1
		}
	}
	return partitions, records
}

// recentKept is how many committed target records before an aborted one are looked at for a
// committed copy of it.
const recentKept = 4096

// abortTally follows one target partition's read_committed read: the aborted records the
// reader passes over (logread.TxnWatch) and the committed records it yields, matched by
// fingerprint. All its methods run on the reader's decoding goroutine; result is called
// after the read stopped.
type abortTally struct {
	fields  offsetmap.Fields
	deliver bool // the aborted records are delivered too (TargetReadUncommitted)
	h       offsetmap.Hasher

	recent   [recentKept]recentRec // ring of the last committed records
	nRecent  int
	index    map[uint64]int64 // fingerprint -> offset of the ring, built when first needed
	indexAt  int              // nRecent when index was built
	aborted  []abortedRec
	pending  map[uint64][]int // aborted records with no committed copy yet, by fingerprint
	queue    []int64          // deliver: aborted offsets not yet delivered
	lso, hwm int64
	ends     bool
}

type recentRec struct {
	offset int64
	fp     uint64
}

type abortedRec struct {
	offset int64
	copyAt int64 // a committed copy's offset; -1: none seen
}

func newAbortTally(fields offsetmap.Fields, deliver bool) *abortTally {
	return &abortTally{fields: fields, deliver: deliver, pending: map[uint64][]int{}, indexAt: -1}
}

// watch is the logread.TxnWatch that feeds t.
func (t *abortTally) watch() *logread.TxnWatch {
	return &logread.TxnWatch{Aborted: t.abortedRecord, Deliver: t.deliver, Ends: func(lso, hwm int64) {
		t.lso, t.hwm, t.ends = lso, hwm, true
	}}
}

func (t *abortTally) abortedRecord(r *kgo.Record) {
	fp := t.h.Sum(r, t.fields)
	a := abortedRec{offset: r.Offset, copyAt: -1}
	if t.deliver {
		t.queue = append(t.queue, r.Offset)
	}
	if t.nRecent > 0 {
		if t.indexAt != t.nRecent {
			// Once per response with aborted records: the committed records seen since
			// the last one have changed the ring.
			clear(t.index)
			if t.index == nil {
				t.index = make(map[uint64]int64, recentKept)
			}
			for i := max(0, t.nRecent-recentKept); i < t.nRecent; i++ {
				rr := t.recent[i%recentKept]
				t.index[rr.fp] = rr.offset
			}
			t.indexAt = t.nRecent
		}
		if o, ok := t.index[fp]; ok {
			a.copyAt = o
		}
	}
	if a.copyAt < 0 {
		t.pending[fp] = append(t.pending[fp], len(t.aborted))
	}
	t.aborted = append(t.aborted, a)
}

// delivered is told every record the reader yields, in offset order: a committed one, or
// with deliver an aborted one the watch was told of first.
func (t *abortTally) delivered(offset int64, fp uint64) {
	if len(t.queue) > 0 && t.queue[0] == offset {
		t.queue = t.queue[1:]
		return
	}
	t.recent[t.nRecent%recentKept] = recentRec{offset, fp}
	t.nRecent++
	if len(t.pending) > 0 {
		if is, ok := t.pending[fp]; ok {
			for _, i := range is {
				t.aborted[i].copyAt = offset
			}
			delete(t.pending, fp)
		}
	}
}

// result is what t saw in partition p's compared target range [from, to); nil when there is
// nothing to say.
func (t *abortTally) result(p int32, from, to int64, maxListed int) *TxnPartition {
	tp := &TxnPartition{Partition: p}
	for _, a := range t.aborted {
		if a.offset < from || a.offset >= to {
			continue
		}
		tp.Aborted++
		if a.copyAt >= from && a.copyAt < to {
			tp.AbortedCopies++
		}
		r := tp.AbortedRanges
		switch n := len(r); {
		case n > 0 && r[n-1].To+1 == a.offset:
			r[n-1].To = a.offset
		case n < maxListed:
			tp.AbortedRanges = append(r, align.TargetRange{From: a.offset, To: a.offset})
		default:
			tp.Truncated = true
		}
	}
	if t.ends && t.lso < t.hwm {
		tp.OpenTransaction = &align.TargetRange{From: t.lso, To: t.hwm - 1}
	}
	if tp.Aborted == 0 && tp.OpenTransaction == nil {
		return nil
	}
	return tp
}

// addTxns puts the partitions of done that passed over aborted records or an open
// transaction in r.Transactions, in partition order.
func (r *Result) addTxns(done compared) {
	for _, tp := range done.txns {
		r.Transactions = append(r.Transactions, *tp)
	}
}

// tallyTxns sorts r.Transactions and sums them in Aborted and AbortedCopies.
func (r *Result) tallyTxns() {
	sort.Slice(r.Transactions, func(i, j int) bool { return r.Transactions[i].Partition < r.Transactions[j].Partition })
	r.Aborted, r.AbortedCopies = 0, 0
	for _, tp := range r.Transactions {
		r.Aborted += tp.Aborted
		r.AbortedCopies += tp.AbortedCopies
	}
}
