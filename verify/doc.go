// Package verify proves, record by record, that a target topic is a complete and unaltered
// copy of a source topic, and recovers the exact offset map M between them.
//
// # The types to know
//
//   - Diff reads a topic on both clusters (partitions in parallel, at most Config.Parallel)
//     and returns a Result (the JSON of `kverify diff`) and an offsetmap.TopicMap (the file of
//     `kverify diff --offset-map`, read by kreconcile; format in package offsetmap).
//   - Diff feeds each partition to align.Partition, the aligner (package align says how records
//     are classified and which invariants hold), from two raw-fetch streams (package logread).
//   - A topic whose cleanup.policy includes compact on either side is judged as a table
//     (Config.Judge; judgeTable, TablePartition): both partitions read whole, the latest record
//     of every key compared, counts of keys, no offset map; a range, null key or State refused.
//   - DiffTopics, DiffState, DiffRanges, Preflight, Drill and Evidence: below.
//
// # Nothing to compare
//
// Decided per partition: a partition with no source record in [From, To) and no target
// record found to differ (From past its end, To at its start, an empty log, only transaction
// markers) proves nothing. align.PartitionResult.NotCompared says why, Result.NotCompared
// lists it, the report shows "nothing to compare" (never identical), and the offset map leaves
// it out (kreconcile then refuses that partition). Identical speaks for the other partitions
// only. When no partition asked was compared, Diff returns ErrNothingToCompare. A partition
// or range the source topic does not have is an error.
//
// # Reading
//
// Both sides are read with package logread (exact positions, so a range ending in markers or
// a compacted gap is known to be done), fetching and fingerprinting a few batches ahead of the
// aligner: memory is a few MiB per partition plus the windows. The end offsets are resolved
// at the start; a log that ends before them is an error. Isolation: read_committed by default
// (the end is the last stable offset); Config.ReadUncommitted reads to the high watermark.
//
// # Aborted transactions on the target
//
// A transactional mirror killed or fenced leaves aborted records on the target; read_committed
// readers skip them, read_uncommitted ones (the Java default) read them. Per target partition
// Result.Transactions (TxnPartition) has, in the compared range [TargetStart, TargetEnd), the
// aborted records (Aborted, AbortedRanges, at most MaxListed), those that copy a record
// committed in the range (AbortedCopies: by the compared fields' fingerprint, found anywhere
// after it or among the 4096 committed records before it; digest.TxnTally counts them) and a
// transaction still open at the end (OpenTransaction: not read, not counted until it ends).
// Result.Aborted and AbortedCopies sum them. They never change the read_committed verdict and
// every report states them; DiffState keeps them per partition, FollowMetrics serves the
// sums, DiffRanges counts them in its ranges.
//
// Config.TargetReadUncommitted reads the source read_committed and the target as a
// read_uncommitted reader does below its last stable offset: aborted records are then aligned
// like others (a copy of a matched record is duplicated, one of nothing extra): the verdict of
// consumers reading uncommitted. Config.ReadUncommitted reads both sides read_uncommitted (the
// source's aborted records too); the two are exclusive; Evidence refuses the first.
//
// Where the target is read from: from earliest on a source log starting at 0, the whole
// target partition (leading target records are extra). Otherwise from a lower bound (the
// newest MM2 offset sync at or below the source start, and the first target record not older
// than the first source record, less 100 records); target records before the first copy are
// skipped (PartitionResult.TargetSkipped). To latest reads the target to its end; a bounded
// To ends after the copy of the last source record that repeats nothing.
//
// # Explicit ranges, drill and evidence
//
// DiffRanges aligns given offset ranges of both sides, strictly on both ends, one
// PartitionResult per partition. Drill (`kverify compare --drill`) checks both clusters' IDs
// against two digests and runs DiffRanges over the regions they differ in. Evidence (`kverify
// diff --evidence`) reads each compared range of a Result again on both clusters and returns
// its digest.Evidence; a region or range it cannot read, or whose count changed, is an error.
//
// # Preflight
//
// Preflight (`kverify topics`) compares the metadata of every topic a flow mirrors (and, with
// ScanAborted, reads the target for aborted records) and returns a PreflightResult: per topic
// a status and findings, plus the brokers and cluster-level findings; preflight_rules.go
// states each rule. It only reads; no topic selected is ErrNoTopics, never "all ok".
//
// # Resuming from a state
//
// DiffState is Diff resumed from a State (`kverify diff --state`): per partition the verified
// ends, the log starts, the counts so far and the fingerprints of the last 8 records below
// each end. It first re-checks the boundary (topic ID, log end not below the verified end,
// log start not before where it was nor past the boundary records, the boundary records
// themselves); one that no longer holds is a finding in Result.Problems, and that partition
// is not compared and keeps its state. Earlier findings are problems of every later run. The
// verified end stops after the last source record the target has a copy of: later ones are
// missing in this run (with StateOptions.Follow, the lag) and read again by the next. A replay
// of records from before the boundary is extra, not duplicated. The offset map of a resumed
// run covers its own range only. FollowMetrics shows each round's state as Prometheus
// metrics (`kverify diff --follow --metrics-addr`).
//
// # Several topics, shards and their merge
//
// DiffTopics is Diff over every topic a MultiConfig selects from a flow, with one metadata
// request per cluster, one offset listing per kind and one pool of Parallel partition workers
// shared by all topics; it returns a MultiResult. Unlike Diff, a missing target topic or
// partition has every source record missing. Shard assigns partition p of topic t to shard
// (xxhash64(t) + p) mod COUNT; MergeShards joins the MultiResults of every shard and refuses
// incomplete, duplicated, overlapping or mismatched ones. Diff and DiffTopics share every rule
// of a topic (topicProblems, listOffsets, runPool, Result.verdict). docs/verify-topics.md
// describes the selection, the verdict, the shards and the JSON form. Tests and benchmarks:
// docs/testing.md, docs/benchmarks.md.
package verify
