package logread

import (
	"context"

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
// read), and calls fn with each response as a TxnChunk. Options.MaxRecords and Options.Txns
// are not used: the range bounds the read.
//
// It is Read with a TxnWatch (aborted_kverify.go) that collects a response's aborted records
// for its chunk: only a response that lists aborted transactions is decoded a second time,
// as read_uncommitted, by the client's own decoder, and the records only the second decoding
// holds are the aborted ones. Unlike a TxnWatch's, a chunk's aborted records are all those of
// the chunk, also past Options.To, so that a caller may cache the chunk whole.
func ReadAborted(ctx context.Context, cl *kgo.Client, o Options, fn func(TxnChunk) (bool, error)) error {
	var aborted []*kgo.Record
	o.Committed, o.MaxRecords = true, 0
	o.Txns = &TxnWatch{Aborted: func(r *kgo.Record) { aborted = append(aborted, r) }, wholeChunks: true}
	return Read(ctx, cl, o, func(c Chunk) (bool, error) {
		tc := TxnChunk{Chunk: c, Aborted: aborted}
		aborted = nil
		return fn(tc)
	})
}
