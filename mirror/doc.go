// Package mirror is kmirror's engine: it mirrors the topics of one MirrorMaker 2 flow from a
// source cluster to a target cluster and knows, exactly, where every record landed.
//
// # Types to know
//
//   - Config: what the engine needs; FromFlow builds it from an mm2.Flow and lists every MM2
//     key it does not honour (Ignored). SetDefaults/Validate as usual.
//   - Engine: New, then Run(ctx). It implements offsetmap.Translator, which answers E(G) for
//     the partitions this process owns (group offset sync, mirror/groupsync, uses it).
//
// # Guarantees
//
// Each source partition is copied in order to the same partition number of the target topic
// (named by the replication policy) with an idempotent producer and acks=all. Key, value,
// headers and timestamp are copied unchanged (the timestamp as CreateTime); no header is added.
// Transactions are read with read_committed: aborted records are not mirrored and transaction
// markers are gaps in the source offsets.
//
// The produce result gives the target offset of every record, so the engine keeps an exact
// offsetmap.PartitionMap per partition (run-length segments) and persists it on the target.
//
// Fencing (Config.Fencing, default transactions): each owned partition writes through a
// transactional producer of its own, whose transactional id names the flow's group, the source
// topic and the partition ("<group>-<topic>-<partition>"). The partition's records, its map
// segments and its offset syncs go into one transaction, committed every PersistInterval.
// A new owner initialises the same id before it reads anything from the target: the broker
// aborts the previous owner's open transaction and refuses every write that owner still sends,
// even records already in flight, so a process that lost its group session without noticing
// (a long pause, a partitioned coordinator) cannot duplicate the new owner's records. The new
// owner then reads the target's tail with read_committed up to its last stable offset, and the
// map with read_committed up to its high watermark (the map topic is shared by every
// partition's transactions: one still open for another partition would hold the last stable
// offset below segments committed after it began, so the read waits for it to end); what the
// previous owner had not committed is invisible and is mirrored again.
// Translations (group sync) answer only from committed records. A fenced partition stops
// writing at once and is dropped when the group revokes it; if the group still assigns it to
// this process a session timeout later, two writers share the id (two flows with one group)
// and the engine stops. <target-alias>.exactly.once.source.support=disabled selects fencing none: one
// idempotent producer, no transactions, and no protection against a stale owner.
//
// docs/design.md ("kmirror's transactional writes") has the reasoning. What this means for
// readers of the target, as with MirrorMaker 2's exactly-once mode:
// consumers should use isolation.level=read_committed (a read_uncommitted consumer also sees
// the aborted records a crashed or fenced owner left, which are copies of records mirrored
// again after them); records become visible to them at the commit, up to PersistInterval
// after they were written; and each commit leaves a transaction marker, so target offsets
// advance faster than records and a group's lag in offsets on the target counts markers
// (the records it has left to read equal its source lag).
//
// After a crash (kill -9) or when a partition moves to another process, the new owner loads the
// persisted map and reconciles the target's tail: committed records after the last map segment
// (written with fencing none after the last persist, or committed in a transaction whose map
// records are not yet readable) are the next source records in order, so they are aligned one
// by one with the source (each pair checked by fingerprint), the map is extended and mirroring
// resumes at the next source offset. Never a gap, never a duplicate. If the tail is not a copy
// of the source (another writer), the partition stops with an error rather than guess.
//
// Several processes with the same flow share partitions through a consumer group on the source
// (cooperative-sticky, Config.GroupID), used only for assignment: kmirror never commits offsets
// and never writes to the source. On revoke a process stops submitting the partition's
// records, waits for those in flight and persists the map before the callback returns, so a
// partition has one writer at a time.
//
// Topics: missing target topics are created with the source's partition count and the source
// topic's own configuration overrides (not sensitive, not read-only, not excluded by
// config.properties.exclude, whose default is MM2 3.7.1's DefaultConfigPropertyFilter list:
// throttled replicas, message.timestamp.*, unclean.leader.election.enable,
// min.insync.replicas); a target topic with fewer partitions is grown (or the error says what
// to do); every refresh.topics.interval.seconds new matching topics are added and configs are
// synced again; a source topic that gains partitions is followed (the group rebalances and
// the target grows first).
//
// Access (access.go): before it writes anything (creates a topic, joins its group, initialises
// a transactional id, produces), Run asks both clusters what the principal may do, with
// requests that change nothing: the authorized operations of the topics and groups that exist,
// and for the target topics it will create validate_only creations and config changes, a
// Produce without records, a one-byte Fetch and a DescribeConfigs, which the broker authorizes
// before it looks for the topic. A denied operation is an error naming the cluster, the
// operation and the resource (the command adds the principal). Group sync stops the engine on
// an authorization failure too: no later pass would mend it. Kafka hides the topics and
// groups a principal may not Describe, so a topic named literally in the flow's topics that the
// source does not show is refused; one hidden from a pattern, or a hidden group, is not seen.
//
// Operations: the engine's metrics live in a Prometheus registry of its own (Registry; served
// by MetricsHandler, written by WriteMetrics): records and bytes mirrored, replication lag per
// partition, map segments, offset map persist age, checkpoint age, stopped partitions, fetch
// and produce errors, readiness, the replication latency histogram, franz-go's client metrics
// (plugin kprom, kmirror_kafka_*, labelled client=source|source_admin|target: the per-partition
// transactional producers and the group sync clients add to their side's counters) and the Go
// runtime and process collectors. kmirror_replication_latency_seconds observes, when the
// target acknowledges a copy, the time since the source record's timestamp: the producer's
// CreateTime (LogAppendTime on topics that use it, which excludes the source producer's own
// buffering); clock skew between the source's producers and kmirror shifts it, a negative
// value counts as 0, and a backlog mirrored after a stop shows as its age. Ready
// (ReadyHandler, /readyz) is true once every partition the group assigned to this process is
// resumed, and false before Run, while joining, from a revoke callback (a rebalance began)
// until the next assignment, while assigned partitions resume, while draining, and after a
// fatal error (health.go). Run drains on context cancellation: it leaves the group (revoking every partition:
// wait for in-flight records, persist or commit), and gives up after 35s by failing what is
// still in flight (safe: the map holds only acknowledged, and with transactions committed,
// records).
//
// # Stopped partitions
//
// kmirror stops a partition, rather than skip or guess, when
//
//   - its source or target topic is no longer the one the offset map describes (deleted and
//     created again): the topic ID differs from the one the map recorded (brokers 2.8+), the
//     log ends below the mapped end, or (without topic IDs, at resume) the last mapped source
//     record and its target copy differ by fingerprint. Checked at resume, every
//     min(refresh.topics.interval.seconds, 30s) while running, and at once on an out-of-range
//     fetch (the consumer never resets an offset by itself; records deleted by retention
//     before they were mirrored are skipped with a warning, as at resume);
//   - its next record is larger than the target takes: the size of a one-record batch (as
//     Kafka counts it) above the target topic's max.message.bytes (compression.type=none;
//     with compression the broker decides) or above the producer's batch.size.
//
// A stopped partition neither fetches nor produces; the process and the other partitions go
// on. An ERROR "partition stopped" names topic, partition, reason, offsets and what to do, and
// is repeated at every re-check (backoff 1s doubling to 5 min); kmirror_partition_stopped
// shows it. A re-check that finds the condition cleared (for example max.message.bytes
// raised on the target topic) resumes the partition where it stopped, without a restart.
// Without topic IDs, a source topic recreated while kmirror runs and refilled past the
// mirrored offset before the next check is only caught at the next resume.
//
// # The offset map topic
//
// Config.MapTopic (default kmirror-offsets.<source-alias>.internal) is a compacted topic with
// one partition on the target. It holds one record per segment; the key names the segment, so
// compaction keeps its newest length. All integers big-endian, STRING = int16 length + bytes:
//
//	key:   version INT16 = 1, source topic STRING, partition INT32, segment source start INT64
//	value: version INT16 = 1, segment target start INT64, segment length INT64
//
// Segment (source s, target t, length n) says source offsets s..s+n-1 are at target offsets
// t..t+n-1. A record with length 0 is an origin: where mirroring of the partition began (source
// offset, and the target's end offset at that moment), written before the first record of the
// partition is produced. Readers keep the last record per key and skip other versions.
//
// Identity records (key version 2, which version-1 readers skip) record, per source topic, its
// topic ID and its target topic's (all zero where the broker has none):
//
//	key:   version INT16 = 2, kind INT8 = 1, source topic STRING
//	value: version INT16 = 2, source topic ID [16]byte, target topic ID [16]byte
//
// With transactions (the default) a partition's map records are written in the same
// transaction as its records; readers use read_committed, to the high watermark listed after
// fencing (waiting for other partitions' open transactions below it to end).
//
// MM2-format offset syncs (mm2.OffsetSync) are also written, at the first record of each
// ownership and at every discontinuity, to the flow's offset-syncs topic, but only when
// offset-syncs.topic.location=target: kmirror never writes to the source cluster, so with the
// default location (source) it reports the key as not honoured and writes none.
//
// # Restarts in the process
//
// Supervisor (what kmirror run uses) starts a new engine when one stops on a transient
// error (IsTransient): a retriable Kafka error franz-go stopped retrying, such as a target
// transaction coordinator answering COORDINATOR_NOT_AVAILABLE for longer than its retries
// after the target was frozen, or a broken connection. The failed transaction's records
// are never committed; the new engine fences it and resumes every partition from what the
// target committed, exactly as a restarted process does (WARN "engine stopped on a transient
// error", kmirror_engine_restarts_total). At most 5 restarts in a row (1 s doubling to 30 s
// apart; an engine that ran 10 minutes counts as a fresh start), then the error ends the
// process. Not restarted: the commit bound (below), a fenced partition still assigned,
// authorization, configuration, a topic that disappeared and every safety stop: a restart
// does not mend those, or an operator must see them. (Until 2026-12-02 every such error ended
// the process; TestRunRestartsAfterTransientError in cmd/kmirror, found by TestContainerFaults.)
//
// # Limits
//
//   - A target that acknowledges nothing for the commit bound (90 s) stops the engine: Run
//     fails the records still in flight once the drain bound (30 s, then 5 s more) has passed,
//     closing every writer, those of partitions being revoked included, and returns the
//     error, so that a supervisor restarts the process; the restart resumes from what the
//     target committed. (Until 2026-12-02 a revoke could wait for ever on a writer the drain
//     could no longer reach; TestMirrorExitsAfterStalledCommit.) A revoke (the group moved
//     the partition, or the source session ended) waits for its records in flight within the
//     commit bound too, and past it stops the engine the same way, naming the partition and
//     the target's state of its transaction: a partition being revoked is no longer owned, so
//     no commit bounds it. (Until 2026-12-03 such a revoke waited for ever, logging nothing;
//     TestMirrorBoundsRevokeOnStalledTarget, found by TestContainerFaults.)
//   - Fenced mode costs a transactional producer per partition: at 1,000 partitions peak RSS
//     grows about 0.8 MiB a partition and throughput collapses (BENCHMARKS.md, "How the cost
//     grows"); a resumed 1,000-partition flow takes about 4 s to its first record.
//   - With fencing none, one writer per partition holds only while group membership tells the
//     truth: a process that loses its source-group session but keeps a working connection to
//     the target can duplicate the new owner's records.
//   - With transactions the map gets a new segment at every commit of an active partition
//     (one a PersistInterval: a transaction marker breaks the run of target offsets), so the
//     map grows by about 86,400 segments a day per continuously active partition (24 bytes
//     each in memory).
//   - One transactional producer (one client and its connections) per owned partition, each
//     buffering up to MaxBufferedRecords (with fencing none that bound was for the process),
//     plus up to 4,096 records held during a commit: memory grows with owned partitions.
//   - The unreplicated tail: a record the target's partition leader has written but not yet
//     replicated (above its high watermark, not acknowledged) when kmirror is killed.
//     TestUnreplicatedTail (3-broker 3.7.1 target, replication factor 3, min.insync.replicas=2;
//     partition 0's followers frozen until the leader holds records kmirror wrote after they
//     froze, 3 to 340 offsets; kmirror killed -9 there) shows, with transactions and with fencing
//     none, 0 missing and 0 duplicated in the whole topic both when the leader is killed -9 too
//     (the new leader has lost those records: they are mirrored again) and when it is kept (they
//     become committed when the followers catch up). With transactions they belong to the killed
//     owner's open transaction, which the next owner's fence aborts. With fencing none they were
//     committed before the restarted kmirror read the target's tail, which aligned them with the
//     source. Not shown and not excluded with fencing none: a next owner that reads the tail while
//     such records are still above the high watermark (a follower behind while kmirror restarts)
//     writes them again, and when they are replicated afterwards they are duplicates. kmirror says
//     so at start-up with fencing none (WARN "fencing none: ...").
//   - A transaction that does not end within the commit bound (90 s) stops the engine with
//     an error giving the target coordinator's state of it; a restart resumes exactly from
//     what the target committed. A one-broker 3.7.1 target frozen for 15 s (docker pause,
//     integration TestContainerFaults) comes back, in about half the runs, holding kmirror's
//     transactions in PrepareCommit for minutes: decided, markers never written. No client
//     can write those partitions then (a new owner's fence waits too, and says so every
//     30 s); the error names the broker to restart, which ends them.
//   - Heartbeats (MM2's heartbeats topic) are not emitted.
//   - A source group created after start is picked up at the next refresh.groups interval, as
//     in MM2.
//
// # Testing
//
// Unit tests run two kfake clusters in process (engine_test.go): data path, map, resume after a
// simulated crash (records produced but not persisted), scale-out with two engines; the metrics
// exposition and the latency histogram (metrics_test.go) and readiness through resumes and a
// rebalance, held by test hooks (health_test.go). Real-broker
// tests are in integration/mirror_test.go and integration/mirror_safety_test.go.
package mirror
