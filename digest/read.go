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

// recordsTxns says whether a read of r records what it passed over (Partition.Txns): a
// read_committed read of the target, whose aborted records read_uncommitted consumers read.
// The source is read as it always was, without.
func (r Range) recordsTxns() bool { return r.Committed && r.Cluster == "target" }

// Read reads r with logread (raw fetches, exact positions; the log ending before To is an
// error) and returns the partition's digest: its chunks under p, the record count, the
// record bytes (keys, values, header keys and values) and the root; of a target range read
// read_committed also the aborted records passed over and a transaction open where the range
// ends (Txns; the read decodes a second time only the responses that list aborted
// transactions).
func Read(ctx context.Context, cl *kgo.Client, r Range, p Params) (Partition, error) {
	out := Partition{Partition: r.Partition, From: r.From, To: r.To}
	b := NewBuilder(p)
	var h offsetmap.Hasher
	fields := r.Fields
	if fields == 0 {
		fields = offsetmap.DefaultFields
	}
	var tally *TxnTally
	var watch *logread.TxnWatch
	if r.recordsTxns() {
		tally = NewTxnTally(fields, false)
		watch = tally.Watch()
	}
	s := logread.Start(ctx, cl, logread.Options{
		Cluster: r.Cluster, Topic: r.Topic, Partition: r.Partition, From: r.From, To: r.To,
		Committed: r.Committed, Short: logread.ShortError, Txns: watch,
	}, func(rec *kgo.Record) item {
		it := item{offset: rec.Offset, fp: h.Sum(rec, fields), bytes: recordBytes(rec)}
		if tally != nil {
			tally.Delivered(it.offset, it.fp)
		}
		return it
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
	if tally != nil {
		s.Close() // the tally is the decoding goroutine's until the read stopped
		out.Txns = tally.result(r.From, r.To)
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
