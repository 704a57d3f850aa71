package verify

import (
	"sort"

	"github.com/kmigrate/kmigrate/align"
	"github.com/kmigrate/kmigrate/digest"
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

// txnPartition is what tally (digest.TxnTally, kverify digest's too) saw in partition p's
// compared target range [from, to); nil when there is nothing to say.
func txnPartition(tally *digest.TxnTally, p int32, from, to int64, maxListed int) *TxnPartition {
	x := tally.Txns(from, to, maxListed)
	if x.Aborted == 0 && x.OpenTransaction == nil {
		return nil
	}
	tp := &TxnPartition{Partition: p, Aborted: x.Aborted, AbortedCopies: x.AbortedCopies, Truncated: x.Truncated}
	for _, r := range x.AbortedRanges {
		tp.AbortedRanges = append(tp.AbortedRanges, align.TargetRange{From: r.From, To: r.To})
	}
	if o := x.OpenTransaction; o != nil {
		tp.OpenTransaction = &align.TargetRange{From: o.From, To: o.To}
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
