package logread

import (
	"fmt"
	"testing"

	"github.com/twmb/franz-go/pkg/kgo"
)

// A read_committed read tells its TxnWatch the aborted records it passes over, within the
// range, and with Deliver yields them in offset order among the committed ones.
func TestTxnWatchAborted(t *testing.T) {
	t.Parallel()
	f := transactionalLog(t) // 0 a, 1 b, 2 marker, 3 x, 4 y (aborted), 5 marker, 6 c, 7 marker
	tests := []struct {
		name             string
		from, to         int64
		deliver          bool
		want, wantAborts string
	}{
		{"the aborted records are told, not delivered", 0, 8, false, "0:a 1:b 6:c", "3:x 4:y"},
		{"deliver yields them among the committed", 0, 8, true, "0:a 1:b 3:x 4:y 6:c", "3:x 4:y"},
		{"only those in the range", 4, 8, false, "6:c", "4:y"},
		{"none past To", 0, 4, true, "0:a 1:b 3:x", "3:x"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			for name, read := range map[string]func(*testing.T, *kgo.Client, Options) (string, error){"Each": each, "Start": stream} {
				var aborted []*kgo.Record
				o := f.opts(tt.from, tt.to)
				o.Committed = true
				o.Txns = &TxnWatch{Deliver: tt.deliver, Aborted: func(r *kgo.Record) { aborted = append(aborted, r) }}
				got, err := read(t, f.cl, o)
				if err != nil || got != tt.want || describe(aborted) != tt.wantAborts {
					t.Errorf("%s: got %q, aborted %q, %v; want %q, aborted %q", name, got, describe(aborted), err, tt.want, tt.wantAborts)
				}
			}
		})
	}
}

// A log without aborted transactions tells the watch nothing; nor does a read_uncommitted
// read, which has no aborted transactions listed.
func TestTxnWatchNothingAborted(t *testing.T) {
	t.Parallel()
	f := newFixture(t, 1)
	f.produce("a", "b")
	f.txn(true, "c")
	logged := transactionalLog(t)
	for _, c := range []struct {
		name      string
		f         *fixture
		to        int64
		committed bool
	}{{"committed only", f, 4, true}, {"read_uncommitted", logged, 8, false}} {
		o := c.f.opts(0, c.to)
		o.Committed = c.committed
		told := 0
		o.Txns = &TxnWatch{Aborted: func(*kgo.Record) { told++ }, Ends: func(lso, hw int64) {
			if lso != hw {
				told++
			}
		}}
		if _, err := each(t, c.f.cl, o); err != nil || told != 0 {
			t.Errorf("%s: told %d times, %v; want nothing", c.name, told, err)
		}
	}
}

// A transaction open at the end of the log shows in the last stable offset and the high
// watermark the watch is told.
func TestTxnWatchOpen(t *testing.T) {
	t.Parallel()
	f := newFixture(t, 1)
	f.produce("a")
	f.openTxn("b", "c")
	var open []string
	o := f.opts(0, 1)
	o.Committed = true
	o.Txns = &TxnWatch{Ends: func(lso, hw int64) { open = append(open, fmt.Sprintf("%d-%d", lso, hw)) }}
	got, err := stream(t, f.cl, o)
	if err != nil || got != "0:a" || fmt.Sprint(open) != "[1-3]" {
		t.Fatalf("got %q, open %v, %v; want \"0:a\", open [1-3]", got, open, err)
	}
}
