// Package digest makes a topic comparable across sites without reading both clusters from one
// place. Take reads one cluster's topic (`kverify digest`) and returns a File: per partition,
// content-defined chunks of the record fingerprint stream and a root. Compare aligns two Files
// and names the differing regions as source and target offset ranges (`kverify compare`);
// verify.Drill reads only those ranges from both clusters (`--drill`). An Evidence file
// (`kverify diff --evidence`, built by verify.Evidence) keeps a root per partition over the
// same fingerprints; CheckEvidence recomputes it from the clusters, digests or the report
// (`kverify check-evidence`). Read and ReadRoot read one Range.
//
// # The fingerprint
//
// A record's fingerprint is kverify diff's: offsetmap.Fingerprint (computed with
// offsetmap.Hasher), xxhash64 over the compared fields, each framed by presence and length.
// A digest and a diff therefore agree on what "the same record" means, for the same
// --compare fields and isolation (read_committed by default).
//
// # Content-defined chunks
//
// Builder cuts the fingerprint stream of a partition, in offset order, into chunks. A chunk
// ends after record i when it holds at least MinRecords records and the top Bits bits of
// fingerprint(i) are all zero, or when it reaches MaxRecords. The boundaries are chosen by the
// content, not by offset or count, so a record lost, duplicated, inserted or altered changes
// only the chunk that holds it (and the next one when it was, or becomes, a boundary record):
// from the next boundary on, both sides cut the same records the same way, whatever their
// offsets. A copy that starts at another offset, or has gaps the source does not
// (transaction markers on the target), chunks identically.
//
// Parameters (ParamsFor, `kverify digest --chunk-records`, default 4096 = 2^12): Bits =
// log2(average), MinRecords = average/16, MaxRecords = average*16. The minimum keeps a run of
// boundary-like fingerprints (or identical records) from making tiny chunks; the maximum
// bounds a chunk, and so a drilled region, when no boundary comes (probability about e^-16 per
// chunk at random fingerprints). A chunk is about 60 bytes of the file ([first, last, records,
// 32 hex digits]); at 4096 records a chunk, the file is 0.1% of the record bytes for records
// of ~15 bytes and much less for any real record (1 KiB records: ~0.0015%). A smaller average
// makes the drilled regions smaller and the file larger; both digests of a comparison must use
// the same. Known limit: inside a long run of identical records, the boundaries depend on the
// position in the run, so a fault there changes every chunk to the end of the run.
//
// Chunk hash: the first 16 bytes of SHA-256 over the chunk's fingerprints, each 8 bytes
// big-endian, in order. Root (per partition, and per evidence range): SHA-256 over all the
// fingerprints of the range, the same encoding, one sequential hash (not a Merkle tree: a check
// recomputes the whole range anyway). The hashes are SHA-256; the fingerprints under them are
// xxhash64, which is not collision resistant against someone crafting records: the root proves
// that the fingerprint sequence is unchanged, which catches any accidental change and any
// change made without intent to collide.
//
// # The digest file (version 1)
//
// One JSON object, written compact, atomically (internal/atomicfile via kverify's outputs):
//
//	{"format":"kverify-digest","version":1,"tool":"kverify v1.2.0, commit ...",
//	 "created":"2026-12-02T04:00:00Z","side":"source","cluster":"old","cluster_id":"Xy3...",
//	 "topic":"orders","compared":["key","value","headers"],"isolation":"read_committed",
//	 "fingerprint":"...","chunk_hash":"...","root_hash":"...",       (how each hash is made)
//	 "chunking":{"boundary_bits":12,"min_records":256,"max_records":65536},
//	 "chunk_fields":["first_offset","last_offset","records","hash"],
//	 "partitions":[{"partition":0,"from":0,"to":1200000,"records":1200000,
//	   "record_bytes":1228800000,"root":"<64 hex>",
//	   "chunks":[[0,4211,4212,"<32 hex>"], ...]}]}
//
// [from, to) is the range read (every record in it); record_bytes counts keys, values and
// headers (less than the log's bytes, so a size ratio against it is conservative). Parse
// accepts exactly one such object, no unknown field, each partition once, chunks in order
// inside [from, to) whose counts add up to records.
//
// # Compare
//
// Compare pairs the partitions by number (each file names its own topic: the target digest
// was taken of the target's name, by the flow's replication policy or --target-topic). Both
// files must have the same fields, isolation and chunking. Per partition, chunks with equal
// hashes are matched in order; where the sequences part, the nearest pair of equal chunks
// ahead (least chunks skipped on both sides together) is where they meet again, as the record
// aligner does with records. Each run of unmatched chunks is a Region: source offsets
// [SourceFrom, SourceTo) and target offsets [TargetFrom, TargetTo), from just after the matched
// chunk before it to the first offset of the matched chunk after it (so gaps are inside).
// A target behind the source ends in a region whose target side holds the last, partial,
// chunk. Every record outside the regions is in a matched pair of chunks with equal hashes.
//
// # Drill
//
// verify.Drill aligns each region strictly on both ends of both sides, from the start of the
// matched chunk before it (ContextSourceFrom, ContextTargetFrom), so a replay of that chunk
// is duplicated, not extra, as in kverify diff. In a partition's first region, when the source
// digest does not start at offset 0 (Region.TargetFromLowerBound), target records before the
// copy of the first source record are skipped, not extra. Only these ranges are fetched.
//
// # Evidence (version 1)
//
// Per compared partition, the range read again on both clusters after the comparison (source
// [source_start, source_end); target from the first record compared to target_end), its
// record count and root; the tool version, both cluster IDs and aliases, the topics, fields,
// isolation, time (UTC), verdict and the SHA-256 of the report (the --out file's bytes, or the
// JSON rendering when the report went to standard output; report_hashed says which).
// CheckEvidence refuses a cluster or digest of something else (its cluster ID, topic, fields,
// isolation or ranges differ) and reports every root that differs as a Check that is not OK.
package digest
