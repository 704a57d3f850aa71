package logread

import "github.com/twmb/franz-go/pkg/kgo"

// RecordBatchSize is the size in bytes of a Kafka v2 record batch holding only r, uncompressed,
// as a broker counts it against max.message.bytes (the smallest batch r can travel in): the 61-byte batch header and the record (length,
// attributes, timestamp and offset deltas of 0, key, value, headers).
func RecordBatchSize(r *kgo.Record) int64 {
	n := 1 + 1 + 1 + // attributes, timestamp delta 0, offset delta 0
		bytesLen(r.Key) + bytesLen(r.Value) + varintLen(int64(len(r.Headers)))
	for _, h := range r.Headers {
		n += varintLen(int64(len(h.Key))) + len(h.Key) + bytesLen(h.Value)
	}
	return int64(61 + varintLen(int64(n)) + n)
}

// bytesLen is the encoded length of a varint-prefixed byte string (null: length -1).
func bytesLen(b []byte) int {
	if b == nil {
		return 1
	}
	return varintLen(int64(len(b))) + len(b)
}

// varintLen is the length of v as a zig-zag varint.
func varintLen(v int64) int {
	u := uint64(v<<1) ^ uint64(v>>63)
	n := 1
	for u >= 0x80 {
		u >>= 7
		n++
	}
	return n
}
