package mm2

import (
	"encoding/binary"
	"errors"
	"fmt"
	"math"
)

// The byte formats of MM2's internal topics (MirrorMaker 2 3.7.1): all fields big-endian,
// written in order, no framing; STRING is an int16 length and UTF-8 bytes, never null.
// Readers ignore trailing bytes, as MM2's do.

// OffsetSync is a record of mm2-offset-syncs.<alias>.internal: source record Upstream of
// Topic/Partition was written to target offset Downstream.
type OffsetSync struct {
	Topic      string // source topic name
	Partition  int32
	Upstream   int64
	Downstream int64
}

// Key is the record key: topic STRING, partition INT32.
func (s OffsetSync) Key() []byte {
	b := appendString(nil, s.Topic)
	return binary.BigEndian.AppendUint32(b, uint32(s.Partition))
}

// Value is the record value: upstreamOffset INT64, offset INT64 (no version).
func (s OffsetSync) Value() []byte {
	b := binary.BigEndian.AppendUint64(make([]byte, 0, 16), uint64(s.Upstream))
	return binary.BigEndian.AppendUint64(b, uint64(s.Downstream))
}

// DecodeOffsetSync parses an offset-sync record.
func DecodeOffsetSync(key, value []byte) (OffsetSync, error) {
	var s OffsetSync
	r := reader{b: key}
	s.Topic = r.string()
	s.Partition = r.int32()
	v := reader{b: value}
	s.Upstream = v.int64()
	s.Downstream = v.int64()
	if err := errors.Join(r.err, v.err); err != nil {
		return OffsetSync{}, fmt.Errorf("decode offset sync: %w", err)
	}
	return s, nil
}

// CheckpointVersion is the only checkpoint value version MM2 3.7.1 writes and reads.
const CheckpointVersion = 0

// Checkpoint is a record of <source-alias>.checkpoints.internal: group Group committed
// Upstream on the source, which MM2 translated to Downstream on Topic (the target topic).
type Checkpoint struct {
	Group      string
	Topic      string // target topic name
	Partition  int32
	Upstream   int64
	Downstream int64
	Metadata   string
}

// CheckpointKey identifies the checkpoint of one group partition; readers keep the last record
// per key.
type CheckpointKey struct {
	Group     string
	Topic     string
	Partition int32
}

// ID returns the checkpoint's key fields.
func (c Checkpoint) ID() CheckpointKey { return CheckpointKey{c.Group, c.Topic, c.Partition} }

// Key is the record key: group STRING, topic STRING, partition INT32.
func (c Checkpoint) Key() []byte {
	b := appendString(nil, c.Group)
	b = appendString(b, c.Topic)
	return binary.BigEndian.AppendUint32(b, uint32(c.Partition))
}

// Value is the record value: version INT16 = 0, upstreamOffset INT64, offset INT64,
// metadata STRING.
func (c Checkpoint) Value() []byte {
	b := binary.BigEndian.AppendUint16(nil, CheckpointVersion)
	b = binary.BigEndian.AppendUint64(b, uint64(c.Upstream))
	b = binary.BigEndian.AppendUint64(b, uint64(c.Downstream))
	return appendString(b, c.Metadata)
}

// DecodeCheckpoint parses a checkpoint record.
func DecodeCheckpoint(key, value []byte) (Checkpoint, error) {
	var c Checkpoint
	r := reader{b: key}
	c.Group = r.string()
	c.Topic = r.string()
	c.Partition = r.int32()
	v := reader{b: value}
	version := v.int16()
	c.Upstream = v.int64()
	c.Downstream = v.int64()
	c.Metadata = v.string()
	if err := errors.Join(r.err, v.err); err != nil {
		return Checkpoint{}, fmt.Errorf("decode checkpoint: %w", err)
	}
	if version != CheckpointVersion {
		return Checkpoint{}, fmt.Errorf("decode checkpoint: version %d, want %d", version, CheckpointVersion)
	}
	return c, nil
}

func appendString(b []byte, s string) []byte {
	if len(s) > math.MaxInt16 {
		s = s[:math.MaxInt16] // Kafka names are far shorter; never emit a corrupt length
	}
	b = binary.BigEndian.AppendUint16(b, uint16(len(s)))
	return append(b, s...)
}

// reader reads big-endian fields and remembers the first error.
type reader struct {
	b   []byte
	err error
}

func (r *reader) take(n int) []byte {
	if r.err != nil {
		return nil
	}
	if len(r.b) < n {
		r.err = fmt.Errorf("truncated: need %d bytes, have %d", n, len(r.b))
		return nil
	}
	out := r.b[:n]
	r.b = r.b[n:]
	return out
}

func (r *reader) int16() int16 {
	if b := r.take(2); b != nil {
		return int16(binary.BigEndian.Uint16(b))
	}
	return 0
}

func (r *reader) int32() int32 {
	if b := r.take(4); b != nil {
		return int32(binary.BigEndian.Uint32(b))
	}
	return 0
}

func (r *reader) int64() int64 {
	if b := r.take(8); b != nil {
		return int64(binary.BigEndian.Uint64(b))
	}
	return 0
}

func (r *reader) string() string {
	n := r.int16()
	if n < 0 {
		if r.err == nil {
			r.err = fmt.Errorf("null string where MM2 writes none")
		}
		return ""
	}
	return string(r.take(int(n)))
}
