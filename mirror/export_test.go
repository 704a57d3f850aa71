package mirror

import (
	"context"
	"math"
	"time"

	dto "github.com/prometheus/client_model/go"

	"github.com/kmigrate/kmigrate/offsetmap"
)

// Crash makes e stop like a killed process from now on: nothing more is persisted.
func (e *Engine) Crash() { e.crashed.Store(true) }

// DecodeMapRecord exposes the map record decoder.
func DecodeMapRecord(key, value []byte) (topic string, partition int32, source, target, length int64, err error) {
	t, s, err := decodeMapRecord(key, value)
	return t.topic, t.partition, s.Source, s.Target, s.Len, err
}

// CopyRecord exposes copyRecord.
var CopyRecord = copyRecord

// SetStallAfter sets how long a partition may not move before the engine warns.
func (e *Engine) SetStallAfter(d time.Duration) { e.stallAfter = d }

// IsIdentityRecord says whether a map topic record is a topic identity record (identity.go).
func IsIdentityRecord(key, value []byte) bool {
	_, _, err := decodeIdentityRecord(key, value)
	return err == nil
}

// EncodeIdentityRecord exposes the identity record encoder.
func EncodeIdentityRecord(topic string, src, dst [16]byte) (key, value []byte) {
	return identityKey(topic), identityValue(topicIDs{src, dst})
}

// DecodeIdentityRecord exposes the identity record decoder.
func DecodeIdentityRecord(key, value []byte) (topic string, src, dst [16]byte, err error) {
	t, ids, err := decodeIdentityRecord(key, value)
	return t, ids.src, ids.dst, err
}

// SetBeforeResume makes f run at the start of every resume of newly assigned partitions
// (before Run: the group's fetch offset adjustment waits for it).
func (e *Engine) SetBeforeResume(f func()) { e.testHooks.beforeResume = f }

// SetDuringRevoke makes f run in every revoke callback of the group, after the engine noted
// the end of the session and before it stops the revoked partitions.
func (e *Engine) SetDuringRevoke(f func()) { e.testHooks.duringRevoke = f }

// SetTimeouts shortens the bound of one transactional commit and of the drain at stop.
func (e *Engine) SetTimeouts(commit, drain time.Duration) {
	e.commits.timeout, e.drainTimeout = commit, drain
}

// SetFenceWarn sets how often a fence that does not end is reported.
func (e *Engine) SetFenceWarn(d time.Duration) { e.txn.fenceWarn = d }

// LoadLimits connects the engine's clients, as Run does, and reads the record size limits of
// the target topics (recsize.go).
func (e *Engine) LoadLimits(ctx context.Context, targets ...string) error {
	if e.dst == nil {
		if err := e.connect(ctx); err != nil {
			return err
		}
	}
	return e.loadLimits(ctx, targets)
}

// TopicLimit is the max.message.bytes the engine holds for target topic t (1<<62: none known).
func (e *Engine) TopicLimit(t string) int64 { return e.recordLimit(t).topic }

// CloseClients closes the clients LoadLimits connected.
func (e *Engine) CloseClients() {
	if e.dst != nil {
		e.dst.Close()
		e.srcCl.Close()
	}
}

// EnsureTargets connects the engine's clients, as Run does, and makes sure the target topics
// of src (source topic: partitions) exist with enough partitions (topics.go).
func (e *Engine) EnsureTargets(ctx context.Context, src map[string]int) error {
	if e.dst == nil {
		if err := e.connect(ctx); err != nil {
			return err
		}
	}
	return e.ensureTargets(ctx, src)
}

// IsSchemeRecord says whether a map topic record is a fencing scheme record (bucket.go).
func IsSchemeRecord(key, value []byte) bool {
	_, _, err := decodeSchemeRecord(key, value)
	return err == nil
}

// BucketTxnID is the transactional id that writes topic/partition under cfg (its defaults
// filled in).
func BucketTxnID(cfg Config, topic string, partition int32) string {
	cfg.SetDefaults()
	s := newBucketScheme(&cfg)
	return s.txnID(s.of(tp{topic, partition}))
}

// BucketOf exposes bucketOf.
func BucketOf(topic string, partition int32, n int) int { return bucketOf(tp{topic, partition}, n) }

// Writers is how many transactional producers e holds: one per owned bucket.
func (e *Engine) Writers() int {
	e.txn.mu.Lock()
	defer e.txn.mu.Unlock()
	return len(e.txn.buckets)
}

// EncodeMapRecord exposes the map record encoder: a segment of topic/partition.
func EncodeMapRecord(topic string, partition int32, source, target, length int64) (key, value []byte) {
	return mapKey(tp{topic, partition}, source), mapValue(offsetmap.Segment{Source: source, Target: target, Len: length})
}

// SetBeforeCommitEnd sets a function run in every commit after its map records were written
// and before its transaction ends.
func (e *Engine) SetBeforeCommitEnd(f func()) { e.commits.beforeEnd = f }

// IsHistoryRecord says whether a map topic record is a partition's history record.
func IsHistoryRecord(key, value []byte) bool {
	_, _, _, err := decodeHistoryRecord(key, value)
	return err == nil
}

// DecodeMapKey exposes the segment key decoder (of a segment or its tombstone).
func DecodeMapKey(key []byte) (topic string, partition int32, source int64, err error) {
	t, src, err := decodeMapKey(key)
	return t.topic, t.partition, src, err
}

// HoldCommits stops the commit policy's commits from now on: only revokes and the drain
// commit (a test that needs records produced and never committed).
func (e *Engine) HoldCommits() { e.commits.held.Store(true) }

// ReleaseCommits lets the commit policy commit again.
func (e *Engine) ReleaseCommits() { e.commits.held.Store(false) }

// Commits counts e's committed transactions by reason (kmirror_commits_total).
func (e *Engine) Commits(reason string) float64 {
	var m dto.Metric
	if err := e.metrics.commits.WithLabelValues(reason).Write(&m); err != nil {
		return -1
	}
	return m.GetCounter().GetValue()
}

// SetCommitPause sets how long a bucket's flow must pause before the policy commits it early
// (an hour: only the bound commits).
func (e *Engine) SetCommitPause(d time.Duration) { e.commits.policy.pause = d }

// CommitWaits counts e's observations of kmirror_commit_wait_seconds and returns the largest
// bucket bound below which they all fall (+Inf when one is past every bound).
func (e *Engine) CommitWaits() (n uint64, under float64) {
	var m dto.Metric
	if err := e.metrics.commitWait.Write(&m); err != nil {
		return 0, 0
	}
	h := m.GetHistogram()
	under = math.Inf(1)
	for _, b := range h.GetBucket() {
		if b.GetCumulativeCount() == h.GetSampleCount() {
			under = b.GetUpperBound()
			break
		}
	}
	return h.GetSampleCount(), under
}
