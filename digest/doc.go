// Package digest makes a topic comparable across sites without reading both clusters from one
// place. Take reads one cluster's topic (`kverify digest`) and returns a File: per partition,
// content-defined chunks of the record fingerprint stream and a root. Compare aligns two Files
// and names the differing regions as source and target offset ranges (`kverify compare`);
// verify.Drill reads only those ranges from both clusters (`--drill`). An Evidence file
// (`kverify diff --evidence`, built by verify.Evidence) keeps a root per partition over the
// same fingerprints; CheckEvidence recomputes it from the clusters, digests or the report
// (`kverify check-evidence`). Read and ReadRoot read one Range.
//
// The chunking rule, the hashes and the digest and evidence file formats (version 1) are in
// docs/design.md, "Verifying across sites: digests", with the reasoning behind them.
//
// # Guarantees
//
//   - A record's fingerprint is kverify diff's (offsetmap.Fingerprint): a digest and a diff
//     agree on what "the same record" means for the same --compare fields and isolation
//     (read_committed by default).
//   - Chunk boundaries are chosen by content (Builder; ParamsFor gives the parameters of an
//     average chunk length, `--chunk-records`, default DefaultAverage = 4096), not by offset
//     or count: a record lost, duplicated, inserted or altered changes only the chunk that
//     holds it (and the next one when it was, or becomes, a boundary record), and a copy that
//     starts at another offset or has gaps the source does not (transaction markers) chunks
//     identically.
//   - Compare pairs partitions by number and matches chunks with equal hashes in order; every
//     record outside the returned Regions is in a matched pair of chunks. A Region spans from
//     just after the matched chunk before it to the first offset of the matched chunk after
//     it, so gaps are inside; a target behind the source ends in a region holding its last,
//     partial chunk. Region.ContextSourceFrom/ContextTargetFrom start at the matched chunk
//     before, so a drilled replay of it is duplicated, not extra, as in kverify diff.
//   - A target range read read_committed (Take of the target, ReadRoot of an evidence's target
//     range) records what the read passed over (Partition.Txns, RangeRoot.Aborted): the
//     records of aborted transactions, which read_uncommitted consumers read, found by
//     logread's TxnWatch (only the responses that list aborted transactions are decoded a
//     second time); the copies of committed records among them by fingerprint, kverify diff's
//     rule; and a transaction open where the range ends. Compare sums them apart from
//     Identical. The source is read as before, without them. Files of version 1 without them
//     still load (Comparison.AbortedNotRecorded); a kverify that predates them refuses a file
//     that has them (an unknown field).
//   - kverify writes the files atomically; Parse accepts exactly one object of the format, no unknown
//     field, each partition once, chunks in order inside the range whose counts add up.
//
// # Refusals
//
// Compare refuses two files whose fields, isolation or chunking differ. CheckEvidence refuses
// a cluster or digest of something else (its cluster ID, topic, fields, isolation or ranges
// differ) and reports every root that differs as a Check that is not OK.
//
// # Limits
//
// Inside a long run of identical records the boundaries depend on the position in the run,
// so a fault there changes every chunk to the end of the run. The hashes are SHA-256 over
// xxhash64 fingerprints, which are not collision resistant against crafted records: a root
// proves the fingerprint sequence is unchanged.
package digest
