package logread

import (
	"context"
	"errors"

	"github.com/twmb/franz-go/pkg/kgo"
)

// errStop ends a synchronous read from inside its callbacks.
var errStop = errors.New("stop")

// Read reads the range on the caller's goroutine and calls fn with each fetch response as a
// Chunk, in offset order, until fn returns false or an error, the position reaches To, the
// log ends (ShortStop) or MaxRecords records below To were delivered (the chunk holding the
// last of them is delivered whole). A chunk is decoded whole: memory holds one response.
func Read(ctx context.Context, cl *kgo.Client, o Options, fn func(Chunk) (bool, error)) error {
	if o.From >= o.To {
		return nil
	}
	r := newReader(cl, o)
	n := 0
	err := r.fetchAll(ctx, func(resp response) error {
		return r.decode(resp, false, func(c Chunk) error {
			more, err := fn(c)
			if err != nil {
				return err
			}
			n += o.inRange(c.Records)
			if !more || o.MaxRecords > 0 && n >= o.MaxRecords {
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

// Each calls fn for every record of the range, in offset order, on the caller's goroutine,
// until fn returns false or an error; the read ends as Read's does, with no record at or
// past To and at most MaxRecords records delivered.
func Each(ctx context.Context, cl *kgo.Client, o Options, fn func(*kgo.Record) (bool, error)) error {
	n := 0
	return Read(ctx, cl, o, func(c Chunk) (bool, error) {
		for _, rec := range c.Records {
			if rec.Offset >= o.To || o.MaxRecords > 0 && n >= o.MaxRecords {
				return false, nil
			}
			n++
			if more, err := fn(rec); err != nil || !more {
				return false, err
			}
		}
		return true, nil
	})
}

// inRange counts the records below To (they are at or after From).
func (o Options) inRange(recs []*kgo.Record) int {
	n := 0
	for _, r := range recs {
		if r.Offset < o.To {
			n++
		}
	}
	return n
}
