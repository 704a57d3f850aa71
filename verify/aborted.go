package verify

import (
	"sort"

	"github.com/kmigrate/kmigrate/digest"
)

// TxnPartition is what a read_committed comparison passed over in one target partition: the
// records of aborted transactions in the compared target range, which a read_uncommitted
// consumer (the Java client's default) reads and a read_committed one does not, and a
// transaction still open at the end of the target log. Part of the JSON form of Result; its
// fields are documented at digest.Txns (AbortedRanges holds at most Config.MaxListed ranges).
// kverify compare reports the same type for a target digest.
type TxnPartition = digest.TxnPartition

// OpenTransactions lists the target partitions with a transaction open and counts the records
// in them that were not compared.
func (r *Result) OpenTransactions() (partitions []int32, records int64) {
	return digest.OpenTransactions(r.Transactions)
}

// txnPartition is what tally (digest.TxnTally, kverify digest's too) saw in partition p's
// compared target range [from, to); nil when there is nothing to say.
func txnPartition(tally *digest.TxnTally, p int32, from, to int64, maxListed int) *TxnPartition {
	x := tally.Txns(from, to, maxListed)
	if x.Aborted == 0 && x.OpenTransaction == nil {
		return nil
	}
	return &TxnPartition{Partition: p, Txns: x}
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
