package report

import (
	"strings"

	"github.com/kmigrate/kmigrate/digest"
	"github.com/kmigrate/kmigrate/verify"
)

// compareItems bounds the offset ranges of one line of CompareTxnDetails.
const compareItems = 20

// CompareTxnClauses are what the text form of `kverify compare` says beside its verdict of the
// target digest's transactions, in kverify diff's words: the aborted records and what they
// mean for consumers, a transaction open where a range ends, or that the target digest does
// not record them. None when it records neither.
func CompareTxnClauses(cmp *digest.Comparison) []string {
	if cmp.Aborted == nil {
		return []string{"aborted records on the target: not recorded (" + cmp.AbortedNotRecorded + ")"}
	}
	return txnClauses(compareResult(cmp))
}

// CompareTxnDetails lists the aborted target offsets and the open transaction of partition p of
// cmp's target digest, one line each ("label: 5-9, 12"); none when it has neither.
func CompareTxnDetails(cmp *digest.Comparison, p int32) []string {
	var out []string
	for _, tp := range compareResult(cmp).Transactions {
		if tp.Partition != p {
			continue
		}
		for _, d := range txnDetails(&tp) {
			items := d.Items
			if len(items) > compareItems {
				items = append(items[:compareItems:compareItems], "…")
			}
			out = append(out, d.Label+": "+strings.Join(items, ", "))
		}
	}
	return out
}

// compareResult is cmp's target transactions as a verify.Result holds them, so that a
// comparison of digests says what kverify diff says of them.
func compareResult(cmp *digest.Comparison) *verify.Result {
	r := &verify.Result{}
	if cmp.Aborted != nil {
		r.Aborted, r.AbortedCopies = *cmp.Aborted, *cmp.AbortedCopies
	}
	for _, tp := range cmp.TargetTransactions {
		r.Transactions = append(r.Transactions, verify.TxnPartition{Partition: tp.Partition, Aborted: tp.Aborted, AbortedCopies: tp.AbortedCopies,
			AbortedRanges: tp.AbortedRanges, OpenTransaction: tp.OpenTransaction, Truncated: tp.Truncated})
	}
	return r
}
