// Package groupsync translates the committed offsets of source consumer groups exactly and
// carries them to the target: as MM2-format checkpoints (emit.checkpoints.*) and, when
// sync.group.offsets.enabled, as commits of the target groups.
//
// The types to know: Config (NewConfig reads the MM2 keys of a flow with mm2's reader of flow
// keys, the one mirror.FromFlow uses, so both give a key one meaning; SetDefaults, Validate),
// Run (the loop kmirror runs) and SyncOnce (one pass, returning a Report: per group partition
// what was written and why).
//
// Each pass lists the source groups the flow selects, fetches their committed offsets G on the
// source (read-only: the source is never written), keeps the partitions of mirrored topics that
// this process owns, and asks the Translator for E(G), the exact target offset (docs/design.md,
// "What exact means: E(G)"). A partition whose E(G) is not known yet is pending and tried again at
// the next pass, so an idle group is translated exactly as soon as the mirror passes G.
//
// Guarantees, each checked by a test against two kfake clusters:
//   - A target group with active members (or in a rebalance) is never written; the group is
//     logged and reported as skipped-active. Commits use generation -1, which brokers reject
//     for a group that gained a member after the check.
//   - A target offset never moves backwards, unless the source group rewound: the target still
//     holds the E this package committed and the source offset went below the G it came from.
//     A target that consumers moved ahead is held, whatever the source does.
//   - On a transactional target the offset written is the one kreconcile plans. Right after
//     the copy of the last mirrored record below G come transaction markers and, after a writer
//     was killed or fenced, the records of aborted transactions: every offset up to the next
//     record a read_committed consumer reads is E(G) for it. When that span holds only markers
//     and records of ended aborted transactions up to that record (or up to the last stable
//     offset, nothing following yet), the sync writes the record's offset (or the last stable
//     offset), so that a read_uncommitted consumer (the Java default) does not read the
//     aborted records either; when a transaction still open lies in it, the span goes on past
//     10,000 offsets (kreconcile's default scan limit) or the target cannot be read, it writes
//     the offset right after the copy. Reason says which and why. The span is read only when
//     the map does not show the copy of G at that offset: read_committed, once a pass per
//     target partition and offset, at most 4 fetch responses a pass, from where the last read
//     ended; a span that ends at a record is not read again.
//   - A target commit anywhere in that span is E(G): it is reported unchanged (with why in
//     Reason), neither rewritten nor held; so is a checkpoint, with the same G and metadata,
//     in it. Checkpoints carry the offset committed: the record format is MM2's (see below),
//     MM2's tools and RemoteClusterUtils.translateOffsets hand the downstream offset to
//     consumers that seek to it, and every offset of the span is that position (MM2's own
//     1 + the last copy is its first). So a checkpoint says where the target group was put,
//     and, written in the same pass, equals the commit.
//   - A checkpoint is not re-emitted when unchanged and never replaced by a lower one unless
//     the source group rewound (as MM2 does). Checkpoints are byte-compatible with MM2 3.7.1
//     (mm2.Checkpoint), keep the source commit metadata, and go to partition 0 of the flow's
//     checkpoints topic, created compacted with one partition when absent.
//   - Idempotent: a pass that finds nothing new writes nothing, also after a restart, because
//     the state starts from the checkpoints topic.
//   - Per-group failures are data (GroupReport.Error, PartitionReport.Error, with the same as
//     an error value in Err: a *SyncError for errors.Is and errors.As, as kadm's results carry
//     theirs); groups are synced concurrently, at most Config.Concurrency at a time. A
//     checkpoints topic that cannot be read or created stops that pass's checkpoints
//     (Report.Error, Report.Err), not its offset sync.
//
// Group types: a source group is synced when it is a consumer group of either protocol
// (classic, or KIP-848's group.protocol=consumer) or only holds commits; a share group, and a
// streams group (KIP-1071: an application kreconcile moves as one unit once it is stopped),
// is reported with why it is not synced (GroupReport.NotMigrated). Before each commit
// the target group is described by its type (mm2.DescribeGroups, with the target's listing
// taken once a pass) and written only when mm2.GroupWritable allows it.
//
// Clients: Source is used only for ListGroups and OffsetFetch. Target produces checkpoints
// outside any transaction and commits with generation -1, so it must be neither a group
// consumer nor a transactional producer; the checkpoints topic is read with a short-lived
// client built from Target's options. Target also lists the last stable offsets and high
// watermarks of the target topics and fetches them read_committed after E(G) (the ACLs kmirror
// needs to resume from the target's tail).
//
// Limits: MM2's rewind detection and ours both need memory. A fresh process learns the last G
// from the checkpoints topic; if a rewind happened while the target group was active and
// checkpoints recorded it, a restarted process holds the target offset instead of rewinding it
// (the safe side). Without checkpoints a fresh process never rewinds a target group. After a
// restart a rewind is recognised when the target holds the checkpoint's downstream offset; a
// target commit elsewhere in that offset's span is held (the safe side again).
//
// Testing: go test -short ./mirror/groupsync/ runs against two in-process kfake clusters and a
// Translator built from an offsetmap.PartitionMap (under a second). Without -short,
// TestRealBrokers also runs a Kafka 2.3.0 source and a 3.7.1 target as JVM processes
// (integration/cluster; about 12 s; skipped without Java 17 unless KMIGRATE_REQUIRE_REAL=1),
// and TestRealBrokersKafka4 a 2.3.0 source and a 4.3.1 target whose groups use the consumer
// group protocol of KIP-848 (about 13 s).
// go test -run X -bench IdlePass measures passes over 200 groups.
package groupsync
