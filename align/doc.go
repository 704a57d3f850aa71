// Package align lines up the records of one source partition with those of its mirrored copy
// by content, classifies every record (matched, missing, duplicated, mismatched, extra,
// ambiguous) and builds the exact offset map between them (an offsetmap.PartitionMap).
//
// Partition is pure and in memory: it reads two Streams of Items (offset, fingerprint, record)
// and never touches a cluster. kverify's Diff feeds it whole partitions from raw fetches;
// kreconcile feeds it the few records around a group's committed offset. Both tools therefore
// classify replays, losses, extras and altered records the same way.
//
// # Alignment
//
// Records of one partition keep their order through a mirror, so alignment is a streaming
// merge with a bounded look-ahead (Options.Window records per side, default 10000), not a
// general diff. While the heads of the two streams are equal they are matched. At a
// divergence the aligner fills both windows and looks for the nearest resynchronisation point
// (source i, target j: the smallest i+j at which a run of equal records starts; direct
// comparison for small skips, a hash index of the source window for large ones). The skipped
// records are then classified:
//
//   - duplicated: a target record equal to one of the last History matched source records
//     (default 100000), or to the altered copy of one (a replay); the result says which
//     source offset it repeats. The older part of a replay longer than the history is
//     reported as extra: raise the history to the longest replay (an MM2 task restart replays
//     what it read since its last offset flush, offset.flush.interval.ms, 60 s by default);
//   - mismatched: a target record paired with a skipped source record at the same position
//     between two matched anchors (when both blocks have the same length), or with the same key;
//     offsetmap.DiffFields says which fields differ;
//   - missing: a skipped source record left unpaired;
//   - extra: a skipped target record left unpaired.
//
// With no resynchronisation point in the windows, a target record repeating a matched source
// record is a duplicate; equal keys on both sides pair as mismatches (values re-encoded in
// place); otherwise the side whose head is older by timestamp is behind and its records up to
// the other head's timestamp are missing (source) or extra (target). So a run of missing or
// extra records longer than the window is decided by timestamps: right for records lost from
// a copy that keeps CreateTime, and for a target that rewrote every timestamp (LogAppendTime)
// the copy is still found once the windows reach it; a run of records written directly into
// the middle of the target, longer than the window, is misread as missing source records
// followed by extra ones (the counts stay consistent and the result differs). Raise the window
// (kverify --window) above the longest run to classify it exactly. Memory is bounded by the
// windows and the replay history, never by the topic (offsetmap.PartitionMap.Duplicates and the ranges
// grow only with the differences found; the ranges are capped by Options.MaxListed, and
// PartitionResult.Truncated says so; counts are always complete).
//
// Identical neighbouring records (a run of equal consecutive source records) cannot be told
// apart: their matched records are counted in Counts.Ambiguous and listed in AmbiguousRanges
// (target offsets). They are mapped in order, which is exact unless a record of the run was
// lost or replayed, in which case the missing or duplicate offset could be any of the run.
//
// # Invariants (checked by the tests and the fuzz test)
//
// A mismatch is a pair: one source record and one target record. Per partition:
//
//	matched + mismatched + missing                 = source records read
//	matched + mismatched + duplicated + extra      = target records read, less TargetSkipped
//	                                                 and records beyond a bounded range
//	ambiguous <= matched
//
// The segments of the map cover exactly the matched and mismatched pairs (a mismatched record
// is still the copy at that position, so a group that consumed its source must skip it), in
// increasing source and target order; offsetmap.PartitionMap.Duplicates lists every duplicate copy.
// kverify calls a topic identical when, over all its compared partitions, nothing is missing,
// duplicated, mismatched or extra (ambiguous records are matched).
//
// # Testing
//
// `go test ./align` runs the tables on synthetic sequences; `go test ./align -fuzz FuzzAlign`
// and `-fuzz FuzzAlignExact` fuzz the invariants and the exactness of the map.
package align
