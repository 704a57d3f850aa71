package logread

import (
	"context"
	"errors"

	"github.com/twmb/franz-go/pkg/kgo"
)

// TxnChunk is the part of the log one read_committed fetch response covered, with the records
// of aborted transactions set apart: Records are what a read_committed consumer reads in
// [From, To) (the controls too with Options.Controls), Aborted the records of aborted
// transactions there, which only a read_uncommitted consumer reads. Both are in offset order.
type TxnChunk struct {
	Chunk
	Aborted []*kgo.Record
}

// ReadAborted reads the range as Read does, under read_committed whatever Options.Committed
// says (the log ends at the last stable offset: records of a transaction still open are not
// read), and calls fn with each response as a TxnChunk. Options.MaxRecords is not used: the
// range bounds the read.
//
// The broker answers a read_committed fetch with every batch below the last stable offset
// and the list of aborted transactions (producer ID, first offset) they overlap; the client
// drops the aborted ones. Here each response is decoded twice from the same bytes, as
// read_committed and as read_uncommitted, by the client's own decoder: the records only the
// second holds are the aborted ones. One fetch, and the client's rules (a transactional batch
// of a producer with an aborted transaction starting at or before it, up to that producer's
// ABORT marker) decide.
func ReadAborted(ctx context.Context, cl *kgo.Client, o Options, fn func(TxnChunk) (bool, error)) error {
	if o.From >= o.To {
		return nil
	}
	o.Committed, o.MaxRecords = true, 0
	r := newReader(cl, o)
	all := *r // decodes the same responses without dropping aborted records or controls
	all.o.Committed, all.o.Controls = false, true
	err := r.fetchAll(ctx, func(resp response) error {
		var every []Chunk
		if err := all.decode(resp, false, func(c Chunk) error { every = append(every, c); return nil }); err != nil {
			return err
		}
		return r.decode(resp, false, func(c Chunk) error {
			tc := TxnChunk{Chunk: c}
			kept := make(map[int64]bool, len(c.Records))
			for _, rec := range c.Records {
				kept[rec.Offset] = true
			}
			for _, e := range every {
				for _, rec := range e.Records {
					if rec.Offset >= c.From && rec.Offset < c.To && !rec.Attrs.IsControl() && !kept[rec.Offset] {
						tc.Aborted = append(tc.Aborted, rec)
					}
				}
			}
			more, err := fn(tc)
			if err != nil {
				return err
			}
			if !more {
				return errStop
			}
			return nil
		})
	})
	if errors.Is(err, errStop) {
		return nil
	}
	return err
}
