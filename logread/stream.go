package logread

import (
	"context"

	"github.com/twmb/franz-go/pkg/kgo"
)

// streamBuffer is how many decoded record batches may wait for the caller of Next.
const streamBuffer = 4

// Stream delivers the records of a range one at a time, converted to T, read ahead of the
// caller on two goroutines of its own (see Start). Next, Peek and Close are for one goroutine.
type Stream[T any] struct {
	ch     chan items[T]
	cur    []T
	err    error
	cancel context.CancelFunc
	done   chan struct{}
}

type items[T any] struct {
	items []T
	err   error
}

// Start begins reading the range. Fetching runs on one goroutine: the position after a
// response comes from its batch headers, so the next request goes out at once. Decoding and
// conv run on another, one record batch at a time, at most a few batches ahead of Next;
// conv is called once per record below To, in offset order, never concurrently, so it may
// keep state (a reused hash buffer). Close must be called when done.
func Start[T any](ctx context.Context, cl *kgo.Client, o Options, conv func(*kgo.Record) T) *Stream[T] {
	ctx, cancel := context.WithCancel(ctx)
	s := &Stream[T]{ch: make(chan items[T], streamBuffer), cancel: cancel, done: make(chan struct{})}
	go func() {
		defer close(s.done)
		defer close(s.ch)
		if o.From >= o.To {
			return
		}
		if err := s.run(ctx, newReader(cl, o), conv); err != nil && ctx.Err() == nil {
			s.ch <- items[T]{err: err}
		}
	}()
	return s
}

// run fetches on this goroutine and decodes on another, so that the next request is on the
// wire while a response is decoded and converted.
func (s *Stream[T]) run(ctx context.Context, r *reader, conv func(*kgo.Record) T) error {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	raw := make(chan response, 2)
	type result struct {
		err  error
		full bool // MaxRecords delivered
	}
	decoded := make(chan result, 1)
	go func() {
		var res result
		n := 0
		for resp := range raw {
			if res.err != nil || res.full {
				continue // drain
			}
			res.err = r.decode(resp, true, func(c Chunk) error { return s.deliver(ctx, r.o, c, conv, &n) })
			res.full = r.o.MaxRecords > 0 && n >= r.o.MaxRecords
			if res.err != nil || res.full {
				cancel() // stop fetching
			}
		}
		decoded <- res
	}()
	err := r.fetchAll(ctx, func(resp response) error {
		select {
		case raw <- resp:
			return nil
		case <-ctx.Done():
			return ctx.Err()
		}
	})
	close(raw)
	if res := <-decoded; res.err != nil || res.full {
		return res.err
	}
	return err
}

// deliver converts the records of c below To, at most MaxRecords in all (*n so far), and
// sends them to Next.
func (s *Stream[T]) deliver(ctx context.Context, o Options, c Chunk, conv func(*kgo.Record) T, n *int) error {
	out := make([]T, 0, len(c.Records))
	for _, rec := range c.Records {
		if rec.Offset >= o.To || o.MaxRecords > 0 && *n >= o.MaxRecords {
			break
		}
		out = append(out, conv(rec))
		*n++
	}
	if len(out) == 0 {
		return nil
	}
	select {
	case s.ch <- items[T]{items: out}:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// Next returns the next record of the range; false when the range is read.
func (s *Stream[T]) Next(ctx context.Context) (T, bool, error) {
	var zero T
	for len(s.cur) == 0 {
		if s.err != nil {
			return zero, false, s.err
		}
		select {
		case b, ok := <-s.ch:
			if !ok {
				return zero, false, nil
			}
			if b.err != nil {
				s.err = b.err
				continue
			}
			s.cur = b.items
		case <-ctx.Done():
			return zero, false, ctx.Err()
		}
	}
	it := s.cur[0]
	s.cur[0] = zero // let the record go once the caller does
	s.cur = s.cur[1:]
	return it, true, nil
}

// Peek returns the next record without consuming it.
func (s *Stream[T]) Peek(ctx context.Context) (T, bool, error) {
	it, ok, err := s.Next(ctx)
	if ok {
		s.cur = append([]T{it}, s.cur...)
	}
	return it, ok, err
}

// Close stops the reading goroutines and waits for them.
func (s *Stream[T]) Close() {
	s.cancel()
	for range s.ch {
	}
	<-s.done
}
