// Package verify proves, record by record, that a target topic is a complete and unaltered
// copy of a source topic, and recovers the exact offset map M between them.
//
// # The types to know
//
//   - Diff reads a topic on both clusters (partitions in parallel, at most Config.Parallel)
//     and returns a Result (the JSON of `kverify diff`) and an offsetmap.TopicMap (the file of
//     `kverify diff --offset-map`, read by kreconcile).
//   - Diff feeds each partition to align.Partition, the aligner (package align says how records
//     are classified and which invariants hold), from two raw-fetch streams (package logread).
//
// # Nothing to compare
//
// Decided per partition: a partition with no source record in [From, To) and no target
// record found to differ (From past its end as an offset or a time, To at its start, an empty
// log, a range of only transaction markers) proves nothing. It is not compared:
// align.PartitionResult.NotCompared says why, Result.NotCompared lists it, the report shows it as
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
// align.PartitionResult.TargetSkipped. With To latest the target is read to its end and trailing
// records are extra; with a bounded To the comparison ends at the first target record after
// the copy of the last source record that repeats nothing.
//
// # Explicit ranges
//
// DiffRanges (ranges.go) aligns given offset ranges of both sides, strictly on both ends
// (only those ranges are fetched), and merges the ranges of a partition into one
// PartitionResult of the same Result: the report of `kverify compare --drill`, which drills
// the regions two digests differ in (package digest).
//
// # Offset map file
//
// `kverify diff --offset-map FILE` writes the map with offsetmap.Write; its format (version 1)
// and the checks offsetmap.Parse makes are in package offsetmap.
//
// # Preflight
//
// Preflight (`kverify topics`, preflight.go and preflight_rules.go) compares the metadata of
// every topic a flow mirrors before the producers move, and returns a PreflightResult: per
// topic a status (ok, differs, risk, missing) and findings {field, source, target, severity,
// note, mm2_syncs}, plus the brokers of both clusters (version derived from ApiVersions, rack)
// and cluster-level findings. preflight_rules.go states each rule, including whether MM2 3.7.1
// would sync a config and how the largest source record is found (every source record read,
// or only bounded by the source's max.message.bytes, which the finding then says). It only
// reads; no topic selected is ErrNoTopics, never "all ok".
//
// # Resuming from a state
//
// DiffState (state.go) is Diff resumed from a State, the file of `kverify diff --state`: per
// partition the verified end on both sides (the next target record must copy the source
// record at the source end), the log starts, the counts found so far, and the offsets and
// fingerprints of the last 8 records below each end. Before it compares a partition it
// re-checks the boundary: the topic ID (where the broker has them), the log end (not below the
// verified end), the log start (not before where it was, not past the boundary records), and
// the boundary records themselves (the same offsets, the same fingerprints, nothing between).
// A boundary that no longer holds is a finding in Result.Problems; that partition is not
// compared and keeps its state. A resumed partition is read strictly from its verified ends;
// one with nothing new is compared (its boundary held), never "nothing to compare". Earlier
// findings are problems of every later run. The verified end stops after the last source
// record the target has a copy of: later source records are missing in this run (or, with
// StateOptions.Follow, the lag, left out of the counts) and read again by the next. A replay
// of records from before the boundary is extra, not duplicated, in a resumed run (the
// aligner's history is not kept in the state): a finding either way. The offset map of a
// resumed run covers its own range only (SourceFrom is where it resumed); kreconcile uses a
// map only where it covers a group's offset, and finds the others by content.
//
// # Several topics, shards and their merge
//
// DiffTopics (multi_diff.go) is Diff over every topic a MultiConfig selects from a flow (all
// its topics, those matching MM2-style regexes, or exact names), with one metadata request per
// cluster (whose leaders every partition read takes, through one logread.Leaders per cluster,
// as Diff's reads take those of its topic listing), one offset listing per kind for all topics
// and one pool of Parallel partition workers shared by all topics; it returns a MultiResult
// (per topic the Result of Diff and a status, totals, the selection). Unlike Diff, a target
// topic or partition that does not exist has every source record missing (read against an empty
// target). Shard assigns partition p of topic t to shard (xxhash64(t) + p) mod COUNT, a
// function of the name and the number only; MergeShards joins the MultiResults of every shard
// and refuses incomplete, duplicated, overlapping or mismatched ones. Diff and DiffTopics share
// every rule of a topic: its problems (topicProblems), its offset listing (listOffsets), its
// partition pool (runPool) and its verdict (Result.verdict, which a merge applies too).
// docs/verify-topics.md describes the selection, the verdict, the shards and the JSON form.
//
// # Testing
//
// `go test ./verify` runs Diff against two kfake clusters (the aligner's own tables and fuzz
// tests are in package align). Real brokers (2.3.0 -> MM2 3.7.1 -> 3.7.1) are exercised in
// integration/verify_test.go (Preflight in preflight_test.go, DiffState in
// verify_state_test.go); the throughput benchmark is scripts/bench-verify.sh.
package verify
