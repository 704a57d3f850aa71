package digest

import (
	"fmt"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/kmigrate/kmigrate/align"
	"github.com/kmigrate/kmigrate/logread"
	"github.com/kmigrate/kmigrate/offsetmap"
)

// Txns is what the read_committed read of a target range passed over, which a
// read_uncommitted consumer (the Java client's default) reads and a read_committed one does
// not: the records of aborted transactions in the range, and a transaction still open where
// it ends. The range is a digested one (Partition.Txns) or kverify diff's compared target
// range (TxnPartition, which verify.Result.Transactions holds).
type Txns struct {
	// Aborted counts the records of aborted transactions in the range.
	Aborted int64 `json:"aborted"`
	// AbortedCopies counts those whose fingerprint (the compared fields) equals that of a
	// record committed in the range: what a read_uncommitted consumer reads twice. A
	// committed copy is found anywhere after the aborted record, or among the 4096 committed
	// records before it.
	AbortedCopies int64 `json:"aborted_copies"`
	// AbortedRanges are the aborted offsets as inclusive ranges of consecutive offsets (at
	// most MaxAbortedRanges in a digest, verify.Config.MaxListed in kverify diff; Truncated
	// says when cut).
	AbortedRanges []align.TargetRange `json:"aborted_ranges,omitempty"`
	// OpenTransaction is set when the read ended at the last stable offset, below the high
	// watermark: offsets [From, To] (the last stable offset to the high watermark less one)
	// are in a transaction still open. They were not read and are not counted; a later read
	// takes them once the transaction ended.
	OpenTransaction *align.TargetRange `json:"open_transaction,omitempty"`
	// Truncated is set when AbortedRanges was cut; the counts are always complete.
	Truncated bool `json:"truncated,omitempty"`
}

// MaxAbortedRanges bounds Txns.AbortedRanges (the counts stay complete).
const MaxAbortedRanges = 1000

// recentKept is how many committed records before an aborted one are looked at for a
// committed copy of it.
const recentKept = 4096

// TxnTally follows one read_committed read of a target range (kverify diff's and digest's):
// the aborted records the reader passes over (Watch, a logread.TxnWatch) and the records it
// yields (Delivered), matched by fingerprint, so that Txns can say how many aborted records
// are copies of committed ones. Its methods run on the reader's decoding goroutine; Txns is
// called after the read stopped.
type TxnTally struct {
	fields   offsetmap.Fields
	deliver  bool // the aborted records are delivered too (logread.TxnWatch.Deliver)
	h        offsetmap.Hasher
	recent   []recentRec // ring of the last committed records, allocated on the first one
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

// NewTxnTally returns a tally of a read comparing fields; with deliver the read delivers the
// aborted records among the committed ones (a read_uncommitted view below the last stable
// offset) and Delivered tells them apart.
func NewTxnTally(fields offsetmap.Fields, deliver bool) *TxnTally {
	return &TxnTally{fields: fields, deliver: deliver, pending: map[uint64][]int{}, indexAt: -1}
}

// Watch is the logread.TxnWatch that feeds t, for the read's Options.Txns.
func (t *TxnTally) Watch() *logread.TxnWatch {
	return &logread.TxnWatch{Aborted: t.abortedRecord, Deliver: t.deliver, Ends: func(lso, hwm int64) {
		t.lso, t.hwm, t.ends = lso, hwm, true
	}}
}

func (t *TxnTally) abortedRecord(r *kgo.Record) {
	fp := t.h.Sum(r, t.fields)
	a := abortedRec{offset: r.Offset, copyAt: -1}
	if t.deliver {
		t.queue = append(t.queue, r.Offset)
	}
	if t.nRecent > 0 {
		if t.indexAt != t.nRecent {
			// Once per response with aborted records: the committed records yielded since
			// the last one have changed the ring.
			if t.index == nil {
				t.index = make(map[uint64]int64, recentKept)
			}
			clear(t.index)
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

// Delivered is told every record the reader yields, in offset order: a committed one, or
// with deliver an aborted one the watch was told of first.
func (t *TxnTally) Delivered(offset int64, fp uint64) {
	if len(t.queue) > 0 && t.queue[0] == offset {
		t.queue = t.queue[1:]
		return
	}
	if t.recent == nil {
		t.recent = make([]recentRec, recentKept)
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

// Txns is what t saw in the range [from, to): the aborted records there (at most maxListed
// ranges), those with a committed copy in the range, and a transaction open where the read
// ended (the last stable offset below the high watermark of the last response).
func (t *TxnTally) Txns(from, to int64, maxListed int) Txns {
	x := Txns{}
	for _, a := range t.aborted {
		if a.offset < from || a.offset >= to {
			continue
		}
		x.Aborted++
		if a.copyAt >= from && a.copyAt < to {
			x.AbortedCopies++
		}
		r := x.AbortedRanges
		switch n := len(r); {
		case n > 0 && r[n-1].To+1 == a.offset:
			r[n-1].To = a.offset
		case n < maxListed:
			x.AbortedRanges = append(r, align.TargetRange{From: a.offset, To: a.offset})
		default:
			x.Truncated = true
		}
	}
	if t.ends && t.lso < t.hwm {
		x.OpenTransaction = &align.TargetRange{From: t.lso, To: t.hwm - 1}
	}
	return x
}

// result is what t saw in the digested range [from, to). An open transaction past the range's
// end is not what the range left out.
func (t *TxnTally) result(from, to int64) *Txns {
	x := t.Txns(from, to, MaxAbortedRanges)
	if o := x.OpenTransaction; o != nil && o.From > to {
		x.OpenTransaction = nil
	}
	return &x
}

// check checks x as read from a file, for the partition's range [from, to).
func (x *Txns) check(from, to int64) error {
	if x.Aborted < 0 || x.AbortedCopies < 0 || x.AbortedCopies > x.Aborted || x.Aborted > to-from {
		return fmt.Errorf("transactions: %d aborted records, %d copies: not valid for the range [%d, %d)", x.Aborted, x.AbortedCopies, from, to)
	}
	var listed int64
	next := from
	for _, r := range x.AbortedRanges {
		if r.From < next || r.To < r.From || r.To >= to {
			return fmt.Errorf("transactions: aborted range [%d, %d] is out of order or outside [%d, %d)", r.From, r.To, from, to)
		}
		listed += r.To - r.From + 1
		next = r.To + 1
	}
	if listed > x.Aborted || !x.Truncated && listed != x.Aborted {
		return fmt.Errorf("transactions: the aborted ranges hold %d records, the count says %d", listed, x.Aborted)
	}
	if o := x.OpenTransaction; o != nil && (o.From < 0 || o.To < o.From) {
		return fmt.Errorf("transactions: open transaction [%d, %d] is not valid", o.From, o.To)
	}
	return nil
}
