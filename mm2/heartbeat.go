package mm2

import (
	"encoding/binary"
	"errors"
	"fmt"
	"time"
)

// HeartbeatVersion is the only heartbeat value version MM2 writes and reads.
const HeartbeatVersion = 0

// Heartbeat is a record of MM2's heartbeats topic (HeartbeatsTopic, partition 0, compacted),
// which the heartbeat connector of flow Source->Target writes to the target cluster every
// emit.heartbeats.interval.seconds. The byte layout follows formats.go's rules.
type Heartbeat struct {
	SourceAlias string
	TargetAlias string
	Timestamp   int64 // milliseconds since the epoch, when the heartbeat was made
}

// Key is the record key: sourceClusterAlias STRING, targetClusterAlias STRING (no version).
func (h Heartbeat) Key() []byte {
	return appendString(appendString(nil, h.SourceAlias), h.TargetAlias)
}

// Value is the record value: version INT16 = 0 (MM2's header struct), then timestamp INT64.
func (h Heartbeat) Value() []byte {
	b := binary.BigEndian.AppendUint16(make([]byte, 0, 10), HeartbeatVersion)
	return binary.BigEndian.AppendUint64(b, uint64(h.Timestamp))
}

// Time is Timestamp as a time.
func (h Heartbeat) Time() time.Time { return time.UnixMilli(h.Timestamp) }

// DecodeHeartbeat parses a heartbeat record.
func DecodeHeartbeat(key, value []byte) (Heartbeat, error) {
	var h Heartbeat
	r := reader{b: key}
	h.SourceAlias = r.string()
	h.TargetAlias = r.string()
	v := reader{b: value}
	version := v.int16()
	h.Timestamp = v.int64()
	if err := errors.Join(r.err, v.err); err != nil {
		return Heartbeat{}, fmt.Errorf("decode heartbeat: %w", err)
	}
	if version != HeartbeatVersion {
		return Heartbeat{}, fmt.Errorf("decode heartbeat: version %d, want %d", version, HeartbeatVersion)
	}
	return h, nil
}

// TaskEmitHeartbeats is MM2's heartbeat emission (MirrorHeartbeatConfig): on by default, every
// second. MM2 turns emit.heartbeats.enabled=false or a negative interval into no heartbeat
// task at all; an interval of zero makes its task emit without pause (Flow.Schedule refuses it).
var TaskEmitHeartbeats = Task{"emit.heartbeats", true, time.Second}

// DefaultHeartbeatsReplicationFactor is heartbeats.topic.replication.factor's default.
const DefaultHeartbeatsReplicationFactor = 3
