package logread

import (
	"testing"

	"github.com/twmb/franz-go/pkg/kgo"
)

// readAborted reads the range with ReadAborted and describes what a read_committed consumer
// gets and the aborted records, checking that the chunks cover the range without a gap.
func readAborted(t *testing.T, cl *kgo.Client, o Options) (committed, aborted string, end int64) {
	t.Helper()
	var recs, abs []*kgo.Record
	end = o.From
	err := ReadAborted(ctxFor(t), cl, o, func(c TxnChunk) (bool, error) {
		if c.From != end || c.To <= c.From {
			t.Errorf("chunk [%d, %d), want one from %d", c.From, c.To, end)
		}
		end = c.To
		recs, abs = append(recs, c.Records...), append(abs, c.Aborted...)
		return true, nil
	})
	if err != nil {
		t.Fatalf("ReadAborted: %v", err)
	}
	return describe(recs), describe(abs), end
}

// The log of transactionalLog: 0 a, 1 b (committed), 2 marker, 3 x, 4 y (aborted), 5 marker,
// 6 c (committed), 7 marker, then 8 d outside any transaction. The aborted records are told
// apart from the committed ones, also from inside the aborted batch (the transaction's first
// offset is before the fetch offset). (kfake leaves the aborted transactions out of a response
// that the request's byte limit cut, so one batch a response cannot be staged here.)
func TestReadAborted(t *testing.T) {
	t.Parallel()
	f := transactionalLog(t)
	f.produce("d") // a record outside any transaction: committed for every reader
	for _, tt := range []struct {
		name               string
		from, to           int64
		bytes              int32
		controls           bool
		committed, aborted string
	}{
		{name: "whole log", from: 0, to: 9, committed: "0:a 1:b 6:c 8:d", aborted: "3:x 4:y"},
		{name: "from inside the aborted batch", from: 4, to: 9, committed: "6:c 8:d", aborted: "4:y"},
		{name: "from the marker after it", from: 5, to: 9, committed: "6:c 8:d", aborted: ""},
		{name: "controls", from: 0, to: 9, controls: true, committed: "0:a 1:b 2:ctrl 5:ctrl 6:c 7:ctrl 8:d", aborted: "3:x 4:y"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			o := f.opts(tt.from, tt.to)
			o.Controls = tt.controls
			committed, aborted, end := readAborted(t, f.cl, o)
			if committed != tt.committed || aborted != tt.aborted || end != tt.to {
				t.Errorf("got committed %q, aborted %q up to %d; want %q, %q up to %d", committed, aborted, end, tt.committed, tt.aborted, tt.to)
			}
		})
	}
}

// A transaction still open is past the last stable offset: ReadAborted (read_committed) ends
// there with ShortStop and reads none of its records, neither as committed nor as aborted.
func TestReadAbortedStopsAtOpenTransaction(t *testing.T) {
	t.Parallel()
	f := newFixture(t, 1)
	f.txn(false, "x")
	f.produce("a")
	f.openTxn("open")
	o := f.opts(0, 4) // 0 x (aborted), 1 marker, 2 a, 3 open (the last stable offset is 3)
	o.Short = ShortStop
	committed, aborted, end := readAborted(t, f.cl, o)
	if committed != "2:a" || aborted != "0:x" || end != 3 {
		t.Errorf("got committed %q, aborted %q up to %d; want \"2:a\", \"0:x\" up to 3", committed, aborted, end)
	}
}
