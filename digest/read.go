package digest

import (
	"context"
	"fmt"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/kmigrate/kmigrate/logread"
	"github.com/kmigrate/kmigrate/offsetmap"
)

// Range is one partition's offsets [From, To) on one cluster, and how it is read.
type Range struct {
	Cluster   string // "source" or "target", for errors
	Topic     string
	Partition int32
	From, To  int64
	Fields    offsetmap.Fields
	Committed bool // read_committed
}

// Read reads r with logread (raw fetches, exact positions; the log ending before To is an
// error) and returns the partition's digest: its chunks under p, the record count, the
// record bytes (keys, values, header keys and values) and the root.
func Read(ctx context.Context, cl *kgo.Client, r Range, p Params) (Partition, error) {
	out := Partition{Partition: r.Partition, From: r.From, To: r.To}
	b := NewBuilder(p)
	var h offsetmap.Hasher
	fields := r.Fields
	if fields == 0 {
		fields = offsetmap.DefaultFields
	}
	s := logread.Start(ctx, cl, logread.Options{
		Cluster: r.Cluster, Topic: r.Topic, Partition: r.Partition, From: r.From, To: r.To,
		Committed: r.Committed, Short: logread.ShortError,
	}, func(rec *kgo.Record) item {
		return item{offset: rec.Offset, fp: h.Sum(rec, fields), bytes: recordBytes(rec)}
	})
	defer s.Close()
	for {
		it, ok, err := s.Next(ctx)
		if err != nil {
			return out, fmt.Errorf("digest %s topic %q partition %d [%d, %d): %w", r.Cluster, r.Topic, r.Partition, r.From, r.To, err)
		}
		if !ok {
			break
		}
		b.Add(it.offset, it.fp)
		out.Bytes += it.bytes
	}
	var root Root
	out.Chunks, out.Records, root = b.Finish()
	out.Root = root.String()
	return out, nil
}

type item struct {
	offset int64
	fp     uint64
	bytes  int64
}

// recordBytes is what a record carries: key, value, header keys and values (less than its
// size in the log, so a size bound against it is conservative).
func recordBytes(r *kgo.Record) int64 {
	n := len(r.Key) + len(r.Value)
	for _, h := range r.Headers {
		n += len(h.Key) + len(h.Value)
	}
	return int64(n)
}
