package mm2

// SyncIndex holds MM2 offset syncs per source partition, in the order they were written (the
// order of the offset-syncs topic), and answers the one question kmigrate asks of them: where
// on the target, at the lowest, does the copy of a source record lie.
//
// Two questions, two rules. MM2 3.7.1 (OffsetSyncStore.translateDownstream) translates a
// consumer group's offset: it keeps a sparse set of recent syncs, forgets every sync before one
// whose upstream offset is below the newest's (a rewind: a restarted task copies again from an
// earlier source offset), and answers from the newest kept sync (u, d) with u <= G: d when
// u = G, d + 1 when u < G, nothing usable (-1) when every kept sync is above G. That is where a
// group resumes in the newest copy, and after a rewind it is above the first copy of the
// records the earlier task had copied already. kmigrate instead wants a target offset at or
// below the first copy of source record X, from which it reads forward and aligns by content
// (kverify's start of a range, kreconcile's window): reading from above the first copy would
// hide it, so LowerBound does not follow MM2 across a rewind.
//
// The rule. (u, d) says record u was copied at target offset d. The target records after d,
// up to the next sync's downstream, were written by the same task (a task writes a sync for its
// first record), copies of u, u+1, ... in order, so they reach source offset at most u plus
// their count: that is how far the sync's "interval" may hold copies. A sync above X proves
// its task copied X before it. LowerBound therefore answers the downstream of the first sync
// (in write order), among those written before the first sync above X, that has upstream <= X
// and whose interval may hold X: it is the last such sync before one above X, the last sync
// of all, or X is within its reach. A task that continues without a replay fills its interval
// with at most the source offsets up to the next sync, so a later sync at or below X is chosen
// instead; a rewind (a restarted task that copies again from an earlier offset, with a lower
// upstream) or a task restarted above its last flushed sync after copying more (a lost tail:
// MM2 writes syncs only at offset flushes) leaves more target offsets in the interval than its
// upstream step, and the interval keeps X.
//
// Why this is safe: every copy of X lies in the interval of some sync at or below X (or after
// the last one); intervals before the chosen sync cannot reach X, and later ones lie above
// its downstream. The reach counts one source offset per target offset, so the one case the
// syncs cannot show is an interval that skips source offsets (records compacted away before
// they were copied) and still reached X although the next sync is not above X: there the bound
// may be above that first copy, but it is never above the copy made in the interval it comes
// from. Callers treat the bound as a hint and prove every answer by content
// (docs/design.md "What exact means: E(G)").
//
// The rules rejected: the largest downstream over the syncs with upstream <= X (kverify's old
// rule) is above the first copy of every record an earlier task copied once a rewind sync
// exists; the sync with the largest upstream <= X over all syncs (kreconcile's old rule) is
// above it for the records between a rewind's upstream and what the earlier task had reached.
//
// A sync whose downstream is below an earlier one's says the target partition was truncated
// or recreated: the syncs before it describe a log that is gone, and IndexSyncs drops them.
type SyncIndex struct {
	parts map[syncPartition][]OffsetSync
}

type syncPartition struct {
	topic     string
	partition int32
}

// IndexSyncs groups syncs (in the order they were written) per source partition.
func IndexSyncs(syncs []OffsetSync) *SyncIndex {
	x := &SyncIndex{parts: make(map[syncPartition][]OffsetSync)}
	for _, s := range syncs {
		k := syncPartition{s.Topic, s.Partition}
		l := x.parts[k]
		if n := len(l); n > 0 && s.Downstream < l[n-1].Downstream {
			l = l[:0] // the target log was replaced
		}
		x.parts[k] = append(l, s)
	}
	return x
}

// Syncs returns the syncs kept for a source partition, in write order. A nil index has none.
func (x *SyncIndex) Syncs(topic string, partition int32) []OffsetSync {
	if x == nil {
		return nil
	}
	return x.parts[syncPartition{topic, partition}]
}

// MaxUpstream is the highest upstream offset MM2 recorded for the partition (how far the
// mirror is known to have copied), or -1 when it has no sync.
func (x *SyncIndex) MaxUpstream(topic string, partition int32) int64 {
	m := int64(-1)
	for _, s := range x.Syncs(topic, partition) {
		m = max(m, s.Upstream)
	}
	return m
}

// LowerBound returns a target offset at or below the first copy of source offset off of the
// partition, by the rule of the type's doc, and false when no sync at or below off is known.
func (x *SyncIndex) LowerBound(topic string, partition int32, off int64) (int64, bool) {
	s, ok := x.Below(topic, partition, off)
	return s.Downstream, ok
}

// Below returns the sync LowerBound takes its answer from: its Downstream is at or below the
// first copy of source offset off, and the target holds copies of source records from its
// Upstream on after it.
func (x *SyncIndex) Below(topic string, partition int32, off int64) (OffsetSync, bool) {
	syncs := x.Syncs(topic, partition)
	for j, s := range syncs {
		if s.Upstream > off {
			break // this task and every later one copied off after an earlier interval did
		}
		if j+1 == len(syncs) || syncs[j+1].Upstream > off {
			return s, true // the last interval that can hold off
		}
		if reach := s.Upstream + (syncs[j+1].Downstream - s.Downstream - 1); off <= reach {
			return s, true
		}
	}
	return OffsetSync{}, false
}
