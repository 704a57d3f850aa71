// Package verify proves, record by record, that a target topic is a complete and unaltered
// copy of a source topic, and recovers the exact offset map M between them.
//
// # The types to know
//
//   - Diff reads a topic on both clusters (partitions in parallel, at most Config.Parallel)
//     and returns a Result (the JSON of `kverify diff`) and an offsetmap.TopicMap (the file of
//     `kverify diff --offset-map`, read by kreconcile).
//   - Align is the pure, in-memory aligner over two Streams of Items (offset, fingerprint,
//     record); Diff feeds it from raw fetches. It is table- and fuzz-tested on synthetic
//     sequences (align_test.go).
//
// # Alignment
//
// Records of one partition keep their order through a mirror, so alignment is a streaming
// merge with a bounded look-ahead (Config.Window records per side, default 10000), not a
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
// followed by extra ones (the counts stay consistent and the result differs). Raise --window
// above the longest run to classify it exactly. Memory is bounded by the
// windows and the replay history, never by the topic (offsetmap.PartitionMap.Duplicates and the ranges
// grow only with the differences found; the ranges are capped by Config.MaxListed, and
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
// Result.Identical is true when there is no problem, no partition error, and nothing missing,
// duplicated, mismatched or extra (ambiguous records are matched).
//
// # Nothing to compare
//
// Decided per partition: a partition with no source record in [From, To) and no target
// record found to differ (From past its end as an offset or a time, To at its start, an empty
// log, a range of only transaction markers) proves nothing. It is not compared:
// PartitionResult.NotCompared says why, Result.NotCompared lists it, the report shows it as
// "nothing to compare" (never identical), and the offset map leaves it out (an answer from it
// would be a guess; kreconcile then refuses that partition). The other partitions are
// compared as usual; Identical speaks for them only. When no partition asked was compared at
// all, Diff returns ErrNothingToCompare (kverify exits 2 and writes nothing). A time past the
// last record is answered -1 by ListOffsets (kadm turns it into the end offset): both mean
// nothing from there.
//
// Partitions and PartitionRanges are checked against the source topic before anything is
// expanded: a partition or a range the topic does not have is an error.
//
// # Reading
//
// Both sides are read with package logread (raw fetches to the partition leader, exact
// positions, so a range ending in transaction markers or a compacted gap is known to be done;
// its doc.go says why not a consumer). Each side fetches on one goroutine and decodes and
// fingerprints one record batch at a time on another, a few batches ahead of the aligner:
// memory per partition is a few MiB plus the windows. Source offsets need not be contiguous.
// The end offsets are resolved at the start; a log that ends before them is an error.
//
// Isolation: both sides are read with read_committed by default and the end offset is the
// last stable offset. Records of aborted transactions are skipped on both sides, so a source
// whose aborted records were (correctly) not mirrored compares identical, and the transaction
// markers are gaps in the source offsets. Records of a transaction still open when Diff starts
// are past the last stable offset and not compared. With Config.ReadUncommitted both sides are
// read up to the high watermark including aborted records: a target written by an MM2 that
// reads read_committed will then show the aborted source records as missing.
//
// Where the target is read from: with From earliest on a source whose log starts at 0 the
// whole target partition is compared (leading target records are extra). Otherwise (From an
// offset or a time, or a source log start above 0 after retention) the target start is a lower
// bound: the newest MM2 offset sync at or below the source start (Config.OffsetSyncsTopic), and
// the first target offset whose timestamp is at or after the first source record's (copies keep
// CreateTime; LogAppendTime only makes them later), less a margin of 100 records. Target records
// before the first copy of a source record in range are skipped and counted in
// PartitionResult.TargetSkipped. With To latest the target is read to its end and trailing
// records are extra; with a bounded To the comparison ends at the first target record after
// the copy of the last source record that repeats nothing.
//
// # Offset map file
//
// `kverify diff --offset-map FILE` writes the map with offsetmap.Write; its format (version 1)
// and the checks offsetmap.Parse makes are in package offsetmap.
//
// # Testing
//
// `go test ./verify` runs the aligner tables, and Diff against two kfake
// clusters; `go test ./verify -fuzz FuzzAlign` fuzzes the
// invariants. Real brokers (2.3.0 -> MM2 3.7.1 -> 3.7.1) are exercised in
// integration/verify_test.go; the throughput benchmark is scripts/bench-verify.sh.
package verify
