package logread

import (
	"errors"
	"fmt"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// TxnWatch is told, during a read_committed read (Options.Committed), what such a read
// passes over and a read_uncommitted one would not: the records of aborted transactions, and
// where the log ends (a transaction still open there). Its functions are called on the goroutine
// that decodes (Start's decoding goroutine, the caller's for Read and Each), in the order the
// responses are decoded, never concurrently, so they may keep state.
//
// Aborted records are found only in fetch responses that list aborted transactions (the
// broker lists those overlapping the response): such a response is decoded a second time as
// read_uncommitted, and the records the second decoding has and the first does not are the
// aborted ones. A response without aborted transactions costs nothing more.
type TxnWatch struct {
	// Aborted is called with every record of an aborted transaction in [From, To) (never a
	// control record), in offset order within a response, before the records of that
	// response are delivered (Start's conversion, Read's chunk, Each's function).
	Aborted func(*kgo.Record)
	// Deliver also delivers the aborted records, in offset order among the committed ones,
	// after Aborted was called with them: the read then yields what a read_uncommitted reader
	// reads below the last stable offset, and Aborted says which records are aborted. They
	// count for MaxRecords.
	Deliver bool
	// Ends is called with the last stable offset and the high watermark of every fetch
	// response of the read, in order: a last stable offset below the high watermark means the
	// records from it on belong to a transaction still open (or not yet marked), which
	// read_committed does not return until it ends.
	Ends func(lastStable, highWatermark int64)
	// wholeChunks tells Aborted the aborted records of a whole chunk, also those past
	// Options.To (ReadAborted).
	wholeChunks bool
}

// watchTxns tells the TxnWatch of a read_committed read what the response part, decoded from
// pos as committed (the records of the piece covering [pos, end)), passed over, and returns
// the records to deliver: committed, or with Deliver every record of the piece.
func (r *reader) watchTxns(part *kmsg.FetchResponseTopicPartition, pos, end int64, committed []*kgo.Record) ([]*kgo.Record, error) {
	w := r.o.Txns
	if w == nil || !r.o.Committed || len(part.AbortedTransactions) == 0 {
		return committed, nil
	}
	all, _ := kgo.ProcessFetchPartition(kgo.ProcessFetchPartitionOpts{
		KeepControlRecords: r.o.Controls,
		Offset:             pos,
		IsolationLevel:     kgo.ReadUncommitted(),
		Topic:              r.o.Topic,
		Partition:          r.o.Partition,
	}, part, r.decomp, nil)
	if all.Err != nil {
		if errors.Is(all.Err, kerr.OffsetOutOfRange) {
			return nil, r.outOfRange(part, pos)
		}
		return nil, fmt.Errorf("decode %s at offset %d for its aborted records: %w", r.o.where(), pos, all.Err)
	}
	limit := min(end, r.o.To)
	if w.wholeChunks {
		limit = end
	}
	i := 0
	for _, rec := range all.Records {
		for i < len(committed) && committed[i].Offset < rec.Offset {
			i++
		}
		if i < len(committed) && committed[i].Offset == rec.Offset {
			continue
		}
		if rec.Attrs.IsControl() || rec.Offset < pos || rec.Offset >= limit {
			continue
		}
		if w.Aborted != nil {
			w.Aborted(rec)
		}
	}
	if w.Deliver {
		return all.Records, nil
	}
	return committed, nil
}

// watchEnds tells the TxnWatch of a read_committed read where the response says the log ends.
func (r *reader) watchEnds(part *kmsg.FetchResponseTopicPartition) {
	if w := r.o.Txns; w != nil && w.Ends != nil && r.o.Committed && part.LastStableOffset >= 0 {
		w.Ends(part.LastStableOffset, part.HighWatermark)
	}
}
