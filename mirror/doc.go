// Package mirror is kmirror's engine: it mirrors the topics of one MirrorMaker 2 flow from a
// source cluster to a target cluster and knows, exactly, where every record landed.
//
// # Types to know
//
//   - Config: what the engine needs; FromFlow builds it from an mm2.Flow and lists every MM2
//     key it does not honour (Ignored). SetDefaults/Validate as usual.
//   - Engine: New, then Run(ctx). It implements offsetmap.Translator, which answers E(G) for
//     the partitions this process owns (group offset sync, mirror/groupsync, uses it).
//   - Supervisor: what kmirror run uses; it starts a new engine when one stops on a transient
//     error (IsTransient), at most 5 times in a row.
//
// # Inside the engine
//
// Engine (engine.go) owns the clients, the owned partitions and the loops; parts with state of
// their own get what they need of it at New: committer (commit.go, how and when kmirror
// commits), resumer (resume.go, through resumeHost), bucketScheme and bucketBalancer
// (bucket.go), writers (txn.go, txnstate.go; the engine's lock is taken before theirs),
// accessCheck (access.go), identities (identity.go), stopSet (halt.go), topicLimits (recsize.go).
//
// # Guarantees
//
//   - Each source partition is copied in order to the same partition of the target topic
//     (named by the replication policy), acks=all. Key, value, headers and timestamp are
//     copied unchanged; no header is added. The source is read with read_committed: aborted
//     records are not mirrored and transaction markers are gaps in the source offsets.
//   - The produce results give the target offset of every record: the engine keeps an exact
//     offsetmap.PartitionMap per partition and persists it on the target, in Config.MapTopic
//     (records: docs/design.md, "kmirror's offset map topic"), within a window of segments.
//   - Fencing (Config.Fencing, default transactions): each of Config.Buckets buckets of
//     partitions (bucketOf) writes through one transactional producer; its records, map
//     segments and offset syncs commit together, and no record waits longer than
//     Config.CommitLatency, from its fetch to the end of its commit (docs/design.md, "When a
//     bucket commits"). A bucket's new owner initialises its id first, so the broker refuses
//     all a stale owner still sends; a change of bucket count fences the old ids at the first
//     resume (docs/design.md, "kmirror's transactional writes"). Target consumers must read
//     with read_committed.
//   - After kill -9, a restart or a move to another process, the new owner loads the map,
//     aligns the target's committed tail with the source record by record (fingerprints) and
//     resumes at the next source offset: never a gap, never a duplicate.
//   - Processes with the same flow share partitions through a source consumer group
//     (Config.GroupID), used for assignment only: kmirror never commits on the source and
//     never writes to it. With transactions its balancer assigns whole buckets, sticky and
//     cooperative (protocol "kmirror-buckets-<n>"); without, cooperative-sticky partitions.
//     On revoke a bucket's records in flight are committed before the callback returns: one
//     writer per bucket, so per partition, at a time.
//   - Topics: missing target topics are created with the source's partition count and its
//     configuration overrides (less config.properties.exclude, MM2 3.7.1's default list); a
//     target with fewer partitions is grown; new matching topics are added every
//     refresh.topics.interval.seconds and configs synced again; a source topic that gains
//     partitions is followed. max.message.bytes and partition counts are read from every
//     target broker and used only where they agree.
//   - MM2's heartbeats (Config.EmitHeartbeats) go to "heartbeats" on the target only, from a
//     producer of their own; a failure or a denied topic is a warning, never a stop.
//   - Before it writes anything, Run asks both clusters, with requests that change nothing,
//     whether the principal may do what it will do (access.go); a denied operation is an
//     error naming the cluster, the operation and the resource.
//   - Metrics live in a Prometheus registry of the engine's own (Registry, MetricsHandler);
//     Ready (/readyz) is true once every assigned partition is resumed, false while joining,
//     rebalancing, resuming, draining and after a fatal error. On context cancellation Run
//     drains: it leaves the group, commits what is in flight, and gives up after 35 s by
//     failing the rest (the map holds only committed records).
//
// # Refusals
//
// A partition is stopped, rather than skipped or guessed, when its source or target topic is
// no longer the one the map describes (another topic ID, a log ending below the mapped end,
// or without IDs a last mapped record whose copy differs), or when its next record is larger
// than the target takes (max.message.bytes, or the producer's batch.size). A stopped
// partition neither fetches nor produces; the others go on; a re-check that finds the
// condition cleared resumes it. A topic named literally in the flow that the source does not
// show is refused; a partition fenced by another owner and still assigned stops the engine
// (not transient: an operator must see two owners). A lost producer id
// (INVALID_PRODUCER_ID_MAPPING) on partitions still assigned here is transient: the next
// engine initialises the id again. A group protocol the source group refuses (another bucket
// count or fencing mode than its members) stops the process with an error naming its own.
//
// # Limits
//
//   - The commit bound: records the target does not acknowledge within 90 s, in a commit or
//     in a revoke, stop the engine with an error naming the partition and the target's state
//     of its transaction, so that its supervisor restarts the process; the restart resumes
//     from what the target committed (docs/operations.md, "The commit bound").
//   - A target frozen and thawed can hold kmirror's transactions in PrepareCommit for minutes;
//     no client can write those partitions then, and the error names the broker to restart.
//   - Buckets bound sharing: at most Config.Buckets processes get work, and the balancer evens
//     buckets, not partitions (a bucket's partitions move together). A bucket's commit waits
//     for all its partitions' records: one slow target partition slows its bucket's commits.
//   - With fencing none (<target>.exactly.once.source.support=disabled), one writer per
//     partition holds only while group membership tells the truth, and a next owner that reads
//     the tail while records are above the target's high watermark can write them again.
//   - With transactions a commit of an active partition ends a segment. The map keeps each
//     partition's last Config.MapWindow segments (default 2,048: at least 3.4 minutes at the
//     default bound), in memory and in the map topic; E(G) older than that is Compacted,
//     which the group offset sync does not sync and kreconcile finds by content. Each owned
//     bucket buffers up to MaxBufferedRecords, plus up to 4,096 held during a commit.
//   - kmirror never writes the source's "heartbeats", so "<source>.heartbeats" on the target
//     exists only when another flow writes it (docs/operations.md). A source group created
//     after start is synced from the next refresh.groups interval, as in MM2.
package mirror
