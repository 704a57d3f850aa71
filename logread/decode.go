package logread

import (
	"encoding/binary"
	"errors"
	"fmt"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
)

// decode turns a response into chunks, in order, and hands each to emit. With split it
// decodes one record batch at a time, so that memory holds one decoded batch rather than a
// whole response (compressed batches of small records decode to ten times their size and
// more), except when the response lists aborted transactions: kgo's abort tracking spans the
// batches of a response, so it is decoded whole. Without split a response is one chunk.
func (r *reader) decode(resp response, split bool, emit func(Chunk) error) error {
	pieces := [][]byte{resp.part.RecordBatches}
	if split && len(resp.part.AbortedTransactions) == 0 {
		pieces = splitBatches(resp.part.RecordBatches)
	}
	pos := resp.from
	r.watchEnds(resp.part)
	for _, piece := range pieces {
		if pos >= resp.to {
			break
		}
		sub := *resp.part
		sub.RecordBatches = piece
		fp, after := kgo.ProcessFetchPartition(kgo.ProcessFetchPartitionOpts{
			KeepControlRecords: r.o.Controls,
			Offset:             pos,
			IsolationLevel:     r.o.isolation(),
			Topic:              r.o.Topic,
			Partition:          r.o.Partition,
		}, &sub, r.decomp, nil)
		if fp.Err != nil {
			if errors.Is(fp.Err, kerr.OffsetOutOfRange) {
				return r.outOfRange(resp.part, pos)
			}
			// Never pass on the records decoded before the error as if the piece ended there:
			// the offsets after them would be skipped unread.
			return fmt.Errorf("decode %s at offset %d: %w", r.o.where(), pos, fp.Err)
		}
		// The batch headers say what the piece covers, also for control batches and
		// batches compaction emptied; the decoder's position is the fallback.
		end := max(after, pos)
		if last, ok := lastOffset(piece); ok {
			end = max(end, min(last+1, resp.to))
		}
		if end == pos && len(fp.Records) == 0 {
			continue // a batch wholly before the fetch offset
		}
		recs, err := r.watchTxns(&sub, pos, end, fp.Records)
		if err != nil {
			return err
		}
		if err := emit(Chunk{From: pos, To: end, Records: recs}); err != nil {
			return err
		}
		pos = end
	}
	return nil
}

// lastOffset returns the last offset covered by the complete batches in b, from their
// headers: base offset + last offset delta for record batches (magic 2, also when compaction
// emptied them or they are control batches), the entry's offset for v0/v1 message sets.
func lastOffset(b []byte) (int64, bool) {
	pieces := splitBatches(b)
	if len(pieces) == 0 {
		return 0, false
	}
	p := pieces[len(pieces)-1]
	if len(p) < 17 || 12+int(int32(binary.BigEndian.Uint32(p[8:12]))) != len(p) {
		return 0, false
	}
	base := int64(binary.BigEndian.Uint64(p[:8]))
	if p[16] >= 2 {
		if len(p) < 27 {
			return 0, false
		}
		return base + int64(int32(binary.BigEndian.Uint32(p[23:27]))), true
	}
	return base, true
}

// splitBatches cuts the record batches (or v0/v1 message sets) of a fetch response apart:
// each starts with an int64 offset and an int32 length. A truncated last batch (the broker
// fills up to the byte limit) is dropped; the next fetch starts before it.
func splitBatches(b []byte) [][]byte {
	var out [][]byte
	for len(b) >= 12 {
		n := 12 + int(int32(binary.BigEndian.Uint32(b[8:12])))
		if n < 12 || n > len(b) {
			break
		}
		out = append(out, b[:n:n])
		b = b[n:]
	}
	if len(out) == 0 && len(b) > 0 {
		out = append(out, b) // let the decoder report what is wrong with it
	}
	return out
}
