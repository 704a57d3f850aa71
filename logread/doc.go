// Package logread reads one partition's log over an offset range [From, To): the one reader
// behind kverify (both sides of a diff), kreconcile (the records around a group's offset),
// kmirror (its offset map topic, the target tail it resumes from, the records of an identity
// check) and the MM2 internal topic readers of package mm2.
//
// # Why raw fetches, not a consumer
//
// The reader sends Fetch requests to the partition leader itself and decodes the answers with
// kgo.ProcessFetchPartition. So it knows its exact position after every response: the offset
// after the last complete batch, from the batch headers. That matters at the end of a range.
// A kgo consumer (ConsumePartitions) returns records only: it gives no position for control
// batches (transaction markers), for batches that compaction emptied, or for aborted records
// skipped under read_committed, so a reader counting on records cannot tell that a range
// ending in them is done and waits for a record that never comes. This reader stops when its
// position reaches To, never by counting records, so source offsets need not be contiguous.
// It also sees when the log ends before To (truncated since To was listed, e.g. by an
// unclean leader election) instead of waiting forever, and it shares one client between
// thousands of small reads instead of building a consumer for each.
//
// # What a read does
//
// Options.Committed chooses the isolation level: read_committed (records of aborted
// transactions are skipped; the log ends at the last stable offset) or read_uncommitted
// (every record; the log ends at the high watermark). The differences between callers are
// options, each documented on Options: what happens when the log ends before To (Short), whether
// control records (markers) are delivered (Controls), at most how many records (MaxRecords),
// and the fetch size (PartitionBytes). Leaders lets many reads of one cluster share what the
// metadata said. Txns (TxnWatch) tells a read_committed reader what it passes over: the
// records of aborted transactions (optionally delivered among the committed ones, as a
// read_uncommitted reader reads them below the last stable offset) and where each response
// says the log ends (a transaction still open there).
//
// A lost leader, a broker that cannot be reached or a retriable error is retried, with the
// leader looked up again, for about a minute; an offset out of range (records deleted while
// reading) and other errors end the read. Errors name the cluster, topic, partition and offset.
//
// Three ways to read:
//
//   - Start returns a Stream: fetching runs on one goroutine (the next request goes out as soon
//     as a response's headers are read), decoding and the caller's per-record conversion (e.g.
//     a fingerprint) on another, one record batch at a time, a few batches ahead of the
//     caller. Memory is a few responses and a few decoded batches, whatever the range.
//   - Read calls a function with each response's records as a Chunk, on the caller's
//     goroutine: the exact offset span the response covers, for a caller that caches.
//   - Each calls a function for every record, on the caller's goroutine.
//
// ReadAborted is Read under read_committed with each chunk's aborted records beside it (a
// TxnWatch that collects them), for a caller that caches what a read_uncommitted reader would
// also read.
package logread
