package logread

import (
	"encoding/binary"
	"hash/crc32"
	"strings"
	"testing"

	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// batchBytes encodes an uncompressed v2 record batch of n one-byte records at base.
func batchBytes(base int64, n int) []byte {
	var recs []byte
	for i := range n {
		r := kmsg.Record{OffsetDelta: int32(i), Key: nil, Value: []byte{byte('a' + i)}}
		body := r.AppendTo(nil)
		recs = append(recs, body...)
	}
	b := kmsg.RecordBatch{
		FirstOffset: base, Magic: 2, LastOffsetDelta: int32(n - 1),
		ProducerID: -1, ProducerEpoch: -1, FirstSequence: -1, NumRecords: int32(n), Records: recs,
	}
	out := b.AppendTo(nil)
	binary.BigEndian.PutUint32(out[8:12], uint32(len(out)-12)) // the batch length
	binary.BigEndian.PutUint32(out[17:21], crc32.Checksum(out[21:], crc32.MakeTable(crc32.Castagnoli)))
	return out
}

// TestDecodeCorruptBatchIsAnError: a response whose second batch is damaged must not be read
// as if the records after the first batch were not there (a verifier would then compare less
// than it says). Decoded whole (the response lists an aborted transaction) and batch by batch.
func TestDecodeCorruptBatchIsAnError(t *testing.T) {
	good, bad := batchBytes(0, 3), batchBytes(3, 3)
	bad[len(bad)-1] ^= 0xff // a flipped bit in the last record: the CRC no longer matches
	for _, aborted := range []bool{false, true} {
		part := &kmsg.FetchResponseTopicPartition{Partition: 0, HighWatermark: 6, LastStableOffset: 6, RecordBatches: append(append([]byte{}, good...), bad...)}
		if aborted {
			part.AbortedTransactions = []kmsg.FetchResponseTopicPartitionAbortedTransaction{{ProducerID: 99, FirstOffset: 100}}
		}
		r := &reader{o: Options{Topic: "t", Partition: 0, From: 0, To: 6}, decomp: kgo.DefaultDecompressor()}
		var got int64
		err := r.decode(response{part: part, from: 0, to: 6}, true, func(c Chunk) error {
			got = c.To
			return nil
		})
		if err == nil || !strings.Contains(err.Error(), "offset") {
			t.Fatalf("aborted=%v: decode of a response with a corrupt batch: err %v (read up to %d), want an error naming the offset", aborted, err, got)
		}
		t.Logf("aborted=%v: %v", aborted, err)
	}
}
