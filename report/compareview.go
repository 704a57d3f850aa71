package report

import (
	"strings"

	"github.com/kmigrate/kmigrate/verify"
)

// compareItems bounds the offset ranges of one line of CompareTxnDetails.
const compareItems = 20

// CompareTxnClauses are what the text form of `kverify compare` says beside its verdict of the
// aborted records and open transactions of a target digest, given as a Result holds them
// (Aborted, AbortedCopies, Transactions): kverify diff's words. None when there are neither.
func CompareTxnClauses(r *verify.Result) []string { return txnClauses(r) }

// CompareTxnDetails lists the aborted target offsets and the open transaction of partition p
// of r.Transactions, one line each ("label: 5-9, 12"), as kverify diff lists them; none when
// it has neither.
func CompareTxnDetails(r *verify.Result, p int32) []string {
	var out []string
	for i := range r.Transactions {
		if r.Transactions[i].Partition != p {
			continue
		}
		for _, d := range txnDetails(&r.Transactions[i]) {
			items := d.Items
			if len(items) > compareItems {
				items = append(items[:compareItems:compareItems], "…")
			}
			out = append(out, d.Label+": "+strings.Join(items, ", "))
		}
	}
	return out
}
