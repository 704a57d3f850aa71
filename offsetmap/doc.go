// Package offsetmap is the exact offset map model every tool shares: where each mirrored source
// record landed on the target, and what that means for a consumer group.
//
//   - Segment, Copy and PartitionMap hold the map M of one partition: runs in which source and
//     target offsets advance together, and the extra copies a replay wrote. PartitionMap.Extend
//     is the one way a map grows, record by record, for the aligner (kverify) and the mirror
//     (kmirror) alike.
//   - PartitionMap.ExactTarget answers E(G), the target offset a group committed at source
//     offset G must have on the target (docs/design.md "What exact means: E(G)"), as a
//     Translation; Translator is what a running mirror offers to answer it.
//   - Fields, Fingerprint and Hasher define the record fingerprint: the compared fields,
//     framed so that no two different records hash the same input.
//   - TopicMap is the offset map file (below).
//
// The package imports no tool package: verify, reconcile, mirror and the reports build on it.
//
// # The file (version 1)
//
// `kverify diff --offset-map FILE` writes Write's JSON, `kreconcile groups --offset-map` reads it:
//
//	{
//	 "version": 1,
//	 "source_topic": "orders", "target_topic": "orders",
//	 "partitions": [ {
//	   "partition": 0,
//	   "source_from": 0,      // every source offset in [source_from, source_to) was examined
//	   "source_to": 1200,
//	   "target_to": 1215,     // just past the last target record examined
//	   "segments": [ {"source": 0, "target": 0, "len": 800},
//	                 {"source": 801, "target": 805, "len": 399} ],
//	   "duplicates": [ {"target_offset": 800, "source_offset": 796} ]
//	 } ]
//	}
//
// A segment says source offsets source..source+len-1 were copied to target offsets
// target..target+len-1; segments and duplicates are sorted by source offset. A source offset
// in [source_from, source_to) in no segment is not on the target (missing, or a gap of the
// source log). When the target ends before the source range does (the mirror is behind),
// source_to is the first source offset the target has not reached, so ExactTarget answers
// "pending" past it instead of guessing. ReadFile (Parse) accepts exactly one
// version-1 object and nothing after it, no unknown field, each partition once, and
// consistent ranges: offsets non-negative, source_from <= source_to, segments non-empty,
// inside [source_from, source_to) and below target_to, increasing and non-overlapping on both
// sides, duplicates copying a mapped source offset at a target offset no segment holds.
// Anything else is an error naming the file and what is wrong, never a panic or a guess.
package offsetmap
