package verify

import (
	"cmp"
	"context"
	"fmt"
	"hash/maphash"
	"slices"
	"strings"

	"github.com/cespare/xxhash/v2"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"

	"github.com/kmigrate/kmigrate/align"
)

// Judgement is how a topic is judged: as a log (record by record, align.Partition) or as a
// table (the latest record of every key, what a compacted topic keeps).
type Judgement string

const (
	// JudgeAuto judges a topic as a table when its cleanup.policy includes compact on the
	// source or the target, else as a log.
	JudgeAuto Judgement = "auto"
	// JudgeLog compares record by record.
	JudgeLog Judgement = "log"
	// JudgeTable compares the latest record of every key.
	JudgeTable Judgement = "table"
)

// ParseJudgement parses "auto", "log" or "table" (empty: auto).
func ParseJudgement(s string) (Judgement, error) {
	switch j := Judgement(strings.TrimSpace(s)); j {
	case "", JudgeAuto:
		return JudgeAuto, nil
	case JudgeLog, JudgeTable:
		return j, nil
	}
	return "", fmt.Errorf("%q: give auto (a table when the topic is compacted), log (record by record) or table (the latest record of every key)", s)
}

// TablePartition is the table judgement of one partition: both sides read whole, the latest
// record of every key compared. A key is the same when its latest records are equal in the
// compared fields (tombstones included), or when one side's latest is a tombstone and the
// other has no record of the key (a cleaner removed the tombstone after delete.retention.ms).
type TablePartition struct {
	Partition     int32 `json:"partition"`
	SourceRecords int64 `json:"source_records"`
	TargetRecords int64 `json:"target_records"`
	// SourceSuperseded and TargetSuperseded count records whose key has a later record on the
	// same side: not part of the table, so one side's cleaner may have removed what the other
	// still keeps. They are neither missing nor extra.
	SourceSuperseded int64 `json:"source_superseded"`
	TargetSuperseded int64 `json:"target_superseded"`
	// Keys counts the distinct keys on either side; Same those judged the same, of them
	// TombstonesCleaned the keys deleted on one side and absent on the other.
	Keys              int64 `json:"keys"`
	Same              int64 `json:"same"`
	TombstonesCleaned int64 `json:"tombstones_cleaned,omitempty"`
	// Differing keys have another latest record on the target (a value for a tombstone
	// counts); Missing keys have a latest value on the source and no record on the target;
	// Extra keys a latest value on the target only.
	Differing int64 `json:"differing"`
	Missing   int64 `json:"missing"`
	Extra     int64 `json:"extra"`
	// Differences lists the first MaxListed keys that are not the same, by the offsets of
	// their latest records.
	Differences []KeyDifference `json:"differences,omitempty"`
	Truncated   bool            `json:"truncated,omitempty"`
}

// KeyDifference is a key whose latest records differ: Class is "differs", "missing" or
// "extra"; an offset is -1 on the side with no record of the key.
type KeyDifference struct {
	Class        string `json:"class"`
	SourceOffset int64  `json:"source_offset"`
	TargetOffset int64  `json:"target_offset"`
}

// Differs reports whether any key differs, is missing or is extra.
func (t TablePartition) Differs() bool { return t.Differing+t.Missing+t.Extra > 0 }

// keyID names a key by two independent 64-bit hashes of its bytes (xxhash64 and a hash/maphash
// seeded once per process): two keys share an ID with a chance near 2^-128.
type keyID [2]uint64

var keySeed = maphash.MakeSeed()

func keyOf(k []byte) keyID { return keyID{xxhash.Sum64(k), maphash.Bytes(keySeed, k)} }

// latestRecord is what the table keeps of a key: its latest record's offset, fingerprint over
// the compared fields, and whether it is a tombstone.
type latestRecord struct {
	off  int64
	fp   uint64
	tomb bool
}

// tableSide is one side of a partition read as a table.
type tableSide struct {
	cluster   string
	latest    map[keyID]latestRecord
	records   int64
	nullKeys  int64
	firstNull int64
}

// read reads s to its end into the table.
func (t *tableSide) read(ctx context.Context, s align.Stream) error {
	t.latest = map[keyID]latestRecord{}
	for {
		it, ok, err := s.Next(ctx)
		if err != nil || !ok {
			return err
		}
		t.records++
		if it.Record.Key == nil {
			if t.nullKeys == 0 {
				t.firstNull = it.Offset
			}
			t.nullKeys++
			continue
		}
		t.latest[keyOf(it.Record.Key)] = latestRecord{off: it.Offset, fp: it.FP, tomb: it.Record.Value == nil}
	}
}

// judgeTable reads both sides of partition p whole and compares their tables. The counts of
// the align.PartitionResult it returns are of keys: Matched the same, Missing, Mismatched (the
// differing) and Extra. Records without a key are an error: a table holds keyed records only.
func judgeTable(ctx context.Context, p int32, src, dst align.Stream, maxListed int) (align.PartitionResult, TablePartition, error) {
	pr := align.PartitionResult{Partition: p}
	tp := TablePartition{Partition: p}
	s, t := &tableSide{cluster: "source"}, &tableSide{cluster: "target"}
	if err := s.read(ctx, src); err != nil {
		return pr, tp, err
	}
	if err := t.read(ctx, dst); err != nil {
		return pr, tp, err
	}
	for _, side := range []*tableSide{s, t} {
		if side.nullKeys > 0 {
			return pr, tp, fmt.Errorf("partition %d has %d records without a key on the %s (the first at offset %d): a table holds keyed records only; compare the topic record by record with --judge log",
				p, side.nullKeys, side.cluster, side.firstNull)
		}
	}
	tp.SourceRecords, tp.TargetRecords = s.records, t.records
	tp.SourceSuperseded, tp.TargetSuperseded = s.records-int64(len(s.latest)), t.records-int64(len(t.latest))
	note := func(class string, so, to int64) {
		tp.Differences = append(tp.Differences, KeyDifference{Class: class, SourceOffset: so, TargetOffset: to})
	}
	for k, sr := range s.latest {
		tr, onTarget := t.latest[k]
		switch {
		case onTarget && tr.fp == sr.fp:
			tp.Same++
		case onTarget:
			tp.Differing++
			note("differs", sr.off, tr.off)
		case sr.tomb:
			tp.Same++
			tp.TombstonesCleaned++
		default:
			tp.Missing++
			note("missing", sr.off, -1)
		}
	}
	tp.Keys = int64(len(s.latest))
	for k, tr := range t.latest {
		if _, onSource := s.latest[k]; onSource {
			continue
		}
		tp.Keys++
		if tr.tomb {
			tp.Same++
			tp.TombstonesCleaned++
			continue
		}
		tp.Extra++
		note("extra", -1, tr.off)
	}
	slices.SortFunc(tp.Differences, func(a, b KeyDifference) int {
		return cmp.Or(cmp.Compare(a.first(), b.first()), cmp.Compare(a.TargetOffset, b.TargetOffset))
	})
	if len(tp.Differences) > maxListed {
		tp.Differences, tp.Truncated = tp.Differences[:maxListed], true
	}
	pr.Matched, pr.Missing, pr.Mismatched, pr.Extra = tp.Same, tp.Missing, tp.Differing, tp.Extra
	pr.MapLeftOut = "judged as a table (the latest record of every key): records are not paired one by one"
	return pr, tp, nil
}

// first is the offset the difference is listed by: its source record's, else its target record's.
func (d KeyDifference) first() int64 {
	if d.SourceOffset >= 0 {
		return d.SourceOffset
	}
	return d.TargetOffset
}

// judged is how one topic is judged, and why.
type judged struct {
	table bool
	why   string
}

// judgements decides, for each pair of source and target topic (the target may be absent),
// how it is judged under j. With JudgeAuto it reads cleanup.policy on both clusters: compact
// on either side makes a table. A cluster that will not describe a topic's configs (denied,
// or a target topic that does not exist) leaves that side out of the decision, and the why
// says so.
func judgements(ctx context.Context, sadm, tadm *kadm.Client, j Judgement, pairs [][2]string) map[string]judged {
	out := make(map[string]judged, len(pairs))
	switch j {
	case JudgeLog:
		for _, p := range pairs {
			out[p[0]] = judged{why: "asked (--judge log)"}
		}
		return out
	case JudgeTable:
		for _, p := range pairs {
			out[p[0]] = judged{table: true, why: "asked (--judge table)"}
		}
		return out
	}
	var srcs, dsts []string
	for _, p := range pairs {
		srcs = append(srcs, p[0])
		dsts = append(dsts, p[1])
	}
	sp := policies(ctx, sadm, srcs)
	tp := policies(ctx, tadm, dsts)
	for _, p := range pairs {
		s, t := sp[p[0]], tp[p[1]]
		var on []string
		if strings.Contains(s.policy, "compact") {
			on = append(on, "the source")
		}
		if strings.Contains(t.policy, "compact") {
			on = append(on, "the target")
		}
		if len(on) > 0 {
			out[p[0]] = judged{table: true, why: "cleanup.policy includes compact on " + strings.Join(on, " and ")}
			continue
		}
		why := "cleanup.policy is delete on both sides"
		if s.err != "" || t.err != "" {
			why = "cleanup.policy " + strings.Join(nonEmpty(s.err, t.err), "; ") + ": judged as a log, so a compacted topic's cleaned records would show as missing or extra (pass --judge table to judge it as a table)"
		}
		out[p[0]] = judged{why: why}
	}
	return out
}

// topicPolicy is a topic's cleanup.policy, or why it could not be read.
type topicPolicy struct{ policy, err string }

// policies reads the cleanup.policy of topics on one cluster in one request.
func policies(ctx context.Context, adm *kadm.Client, topics []string) map[string]topicPolicy {
	out := map[string]topicPolicy{}
	rcs, err := adm.DescribeTopicConfigs(ctx, topics...)
	if err != nil {
		for _, t := range topics {
			out[t] = topicPolicy{err: fmt.Sprintf("of %s not read (%v)", t, err)}
		}
		return out
	}
	for _, rc := range rcs {
		if rc.Err != nil {
			if rc.Err == kerr.UnknownTopicOrPartition {
				continue // no such target topic: nothing there to judge
			}
			out[rc.Name] = topicPolicy{err: fmt.Sprintf("of %s not read (%v)", rc.Name, rc.Err)}
			continue
		}
		for _, c := range rc.Configs {
			if c.Key == "cleanup.policy" && c.Value != nil {
				out[rc.Name] = topicPolicy{policy: *c.Value}
			}
		}
	}
	return out
}

func nonEmpty(ss ...string) []string {
	var out []string
	for _, s := range ss {
		if s != "" {
			out = append(out, s)
		}
	}
	return out
}

// tableRangeErr is the refusal of a table judgement over less than whole partitions.
func tableRangeErr(topic, why string, from, to Position) error {
	return fmt.Errorf("topic %q is judged as a table (%s), which needs whole partitions, but --from %s --to %s was asked: drop --from and --to, or pass --judge log to compare the records in the range one by one",
		topic, why, from, to)
}
