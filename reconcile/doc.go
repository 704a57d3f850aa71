// Package reconcile computes, for every consumer group, the exact target offset E(G) of each
// partition after a migration, judges the group's target commit and MirrorMaker 2's checkpoint
// against it, and fixes the target commit safely.
//
// The types to know:
//
//   - Plan reads, never writes. For each group partition it reads the source commit G (and its
//     metadata), the source log start and end, the target commit and log end, and MM2's latest
//     checkpoint; then it computes E(G) as docs/design.md "What exact means: E(G)" defines
//     it: 1 + the last target copy of s*, the largest mirrored source record below G (or,
//     with no such record, the target offset of the first mirrored record at or after G).
//     Where the answer comes from, best first (Partition.ProofSource): kmirror's offset map
//     topic of the flow (offsetmap.MapTopicName of the flow's source alias, on the target),
//     where it saw the whole target and content agrees at the copy of s*; else content
//     (align.go): the source records around G
//     and past it, the target from a hint (MM2's offset syncs, an earlier answer, timestamps)
//     to its end, explained by align.Locate with every copy a map or an offset sync knows
//     pinned. A content answer stands only when every explanation with the fewest mirror
//     events agrees, and every one with a single event more that the records after it back
//     (align.Margin), a run of identical records around G is copied cleanly, and the matching
//     stretch through the deciding copy is unlikely by chance (docs/design.md, "Content
//     proves E(G) only when it is unique"). An offset map file from kverify diff
//     (Config.OffsetMap) is checked against each answer, never taken for it: the proof ends
//     "the offset map agrees" or says "offset map not used: <why>". Each answer carries its
//     Proof.
//   - Result (result.go) is the plan, its JSON form part of kreconcile's interface. Statuses:
//     exact, behind, ahead, pending, missing-target-offset, unmappable (with a Reason that
//     names the partition, why, and what would settle it).
//   - Plan records the cluster ID of both clusters (Result.SourceCluster, TargetCluster).
//   - Apply commits E(G) for groups that are Empty or absent on the target, saves the previous
//     offsets to a Backup first, re-reads to confirm, and is idempotent. It refuses a client
//     that is not the plan's target cluster. The backup (version 2, backup.go) records both
//     cluster IDs and, per partition, the previous offset and the one Apply commits; it is
//     written whole (internal/atomicfile: fsynced, never over an existing file) before any
//     commit. After the commit each partition says whether it was committed (Applied) or not
//     (ApplyError); a group with any failure gets an Err naming both, and the returned error
//     (kreconcile exits 2). A commit refused because a member joined after the check
//     (UNKNOWN_MEMBER_ID, ILLEGAL_GENERATION, REBALANCE_IN_PROGRESS, FENCED_INSTANCE_ID) says so.
//   - Rollback (rollback.go) restores a backup exactly (offsets that did not exist are
//     deleted). It refuses, writing nothing for what it refuses: an invalid backup; a cluster
//     whose ID is not the backup's target (kreconcile exits 2); a version 1 backup, which
//     records no cluster, unless RollbackConfig.LegacyClusterID is the connected cluster's;
//     groups with members; and partitions whose target commit is no longer the one Apply
//     wrote (the group consumed since), listed as Conflicts unless RollbackConfig.Force
//     (kreconcile exits 1), and then every partition of a group Apply switched as a Kafka
//     Streams application (Backup.Applications). Partitions at the backup's offset stay.
//   - Follow (follow.go, kreconcile groups --follow) plans every interval and applies E(G) to
//     one group at a time, as each becomes Empty on the source with nothing pending, never to a
//     group with members on the target; its one backup file is rewritten whole after each
//     group (replaceBackup), so a rollback of it restores every group applied so far.
//
// Kafka Streams applications (streams.go). A group whose internal topics are named after it
// on the source (<application.id>-...-repartition, -changelog, a foreign-key join's
// -SUBSCRIPTION-...-topic) is an App: planned as one unit, its changelog partitions judged as
// group partitions committed at the source's log end (App.State), ready only when its
// internal topics have the same names and every topic of it the same partition count on the
// target, every changelog is copied to its end, no instance runs on the source and E(G) is
// known everywhere. Apply commits every partition of a ready application or none (Refused
// says why). App.LocalState says what a kept state directory does on the target; statedir.go
// (kreconcile state) rewrites its .checkpoint entries o to E(o+1)-1, every file or none, after
// a backup, and restores a file only while it is what it wrote. A streams group (KIP-1071) is
// an application whose topics are its topology's; a share group is NotMigrated.
//
// Reading committed offsets (fetch.go): Plan, Apply and Rollback read the groups' commits
// through fetchOffsets, at most 256 groups in flight in calls of 32 (a broker before Kafka
// 3.0 takes one group per OffsetFetch and answers a connection's requests in turn), retrying
// retriable errors up to 4 times within the context's time. Every group asked for gets its
// offsets or its last error: a group left out is never read as a group without commits.
//
// Counting. RedeliveredIfUnchanged is the number of target records in [target commit, E) a
// consumer switched now would read again; SkippedIfUnchanged the same over [E, target commit).
// Extras (copies of no source record), markers and aborted records are not counted.
//
// Isolation levels (txn.go). A crashed or fenced exactly-once writer leaves the records of
// aborted transactions on the target; read_committed consumers skip them, read_uncommitted
// ones (the Java default) read them. Plan reads such spans with logread.ReadAborted, shared by
// groups at one position, never past the last stable offset (Partition.TargetLastStable) nor
// more than Config.ScanLimit offsets (10000) from one position:
//
//   - The alignment leaves the target's aborted records out: a fenced writer's aborted replay
//     of s* must not move E(G) past records every reader still has to read.
//   - E(G) among equals: up to the next record, the offsets after the copy of s* are one
//     position for a read_committed consumer. When they hold only markers and ended aborted
//     transactions, E(G) is that record's offset (or the last stable offset), which spares a
//     read_uncommitted consumer too; with an open transaction in the span, or past the bound,
//     it stays right after the copy. The proof says which. A commit or checkpoint anywhere in
//     the span is exact.
//   - AbortedAhead (with AbortedRanges) counts the aborted records from where the group
//     resumes to the last stable offset: what a read_uncommitted consumer reads again after
//     the switch, counted over a span of any length (past the bound as the records are read,
//     keeping at most 1000 ranges). Null when not counted (AbortedNote says why); a
//     transaction still open is named (OpenTransaction), never counted. Group.AbortedAhead
//     sums them and flags the group.
//   - SourceRecordsLeft and TargetRecordsLeft: the records a read_committed consumer at the
//     commit still reads. Null while a transaction is open on that side, past the bound, or
//     (after Apply moved the commit) until the next plan.
//
// Tests: two kfake clusters with a test mirror (replays, gaps, MM2-format checkpoints and
// offset syncs); integration/reconcile_test.go on real brokers with MirrorMaker 2.
package reconcile
