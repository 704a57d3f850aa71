package verify

import (
	"context"
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/kmigrate/kmigrate/align"
	"github.com/kmigrate/kmigrate/internal/testkit"
	"github.com/kmigrate/kmigrate/mm2"
	"github.com/kmigrate/kmigrate/offsetmap"
)

// tableRec is a record of a generated compacted partition: a key out of a few, and a value
// out of a few (nil: a tombstone).
type tableRec struct {
	key   string
	value []byte
}

func (r tableRec) record(off int64) *kgo.Record {
	return &kgo.Record{Key: []byte(r.key), Value: r.value, Offset: off}
}

// items are the records of a side as a stream: offsets as given.
func tableItems(recs []tableRec, offs []int64) *align.SliceStream {
	s := &align.SliceStream{}
	for i, r := range recs {
		rec := r.record(offs[i])
		s.Items = append(s.Items, align.NewItem(rec, offsetmap.DefaultFields))
	}
	return s
}

// truthTable is the table a reader of recs ends with: the latest value of each key, a
// tombstone deleting it.
func truthTable(recs []tableRec) map[string]string {
	t := map[string]string{}
	for _, r := range recs {
		if r.value == nil {
			delete(t, r.key)
		} else {
			t[r.key] = string(r.value)
		}
	}
	return t
}

// cleaned is what a log cleaner may leave of recs: every latest record of a key, each
// superseded record with probability keep, and a key whose latest record is a tombstone
// either as it is or, with probability 1/2, gone altogether (the tombstone removed after
// delete.retention.ms, the records it superseded before it).
func cleaned(rng *rand.Rand, recs []tableRec, keep float64) (out []tableRec, offs []int64) {
	last := map[string]int{}
	for i, r := range recs {
		last[r.key] = i
	}
	gone := map[string]bool{}
	for k, i := range last {
		gone[k] = recs[i].value == nil && rng.IntN(2) == 0
	}
	for i, r := range recs {
		if !gone[r.key] && (last[r.key] == i || rng.Float64() < keep) {
			out = append(out, r)
			offs = append(offs, int64(i))
		}
	}
	return out, offs
}

// TestJudgeTableOracle generates compacted partitions (1 to 8 keys, 1 to 4 values,
// tombstones, runs of one record) and copies cleaned independently on each side, some with
// a fault (a lost latest record, an altered latest value, a key that is not the source's, a
// resurrected key), and checks judgeTable against the table a reader of each side ends with:
// identical exactly when the two readers' tables are equal, and every key's class as the
// readers' tables say.
func TestJudgeTableOracle(t *testing.T) {
	cases := 20000
	if testing.Short() {
		cases = 2000
	}
	rng := rand.New(rand.NewPCG(7, 31))
	var same, differ int
	for c := range cases {
		nk, nv := 1+rng.IntN(8), 1+rng.IntN(4)
		n := rng.IntN(60)
		src := make([]tableRec, 0, n)
		for len(src) < n {
			r := tableRec{key: fmt.Sprintf("k%d", rng.IntN(nk))}
			if rng.IntN(6) != 0 {
				r.value = fmt.Appendf(nil, "v%d", rng.IntN(nv))
			}
			for run := 1 + rng.IntN(3); run > 0 && len(src) < n; run-- {
				src = append(src, r)
			}
		}
		copyRecs := append([]tableRec(nil), src...)
		switch rng.IntN(5) {
		case 1: // the copy lost its last record
			if len(copyRecs) > 0 {
				copyRecs = copyRecs[:len(copyRecs)-1]
			}
		case 2: // the copy's last record altered
			if len(copyRecs) > 0 {
				copyRecs[len(copyRecs)-1].value = []byte("altered")
			}
		case 3: // a key the source never had
			copyRecs = append(copyRecs, tableRec{key: "other", value: []byte("v0")})
		case 4: // a record from the middle replayed at the end
			if len(copyRecs) > 0 {
				copyRecs = append(copyRecs, copyRecs[rng.IntN(len(copyRecs))])
			}
		}
		sRecs, sOffs := cleaned(rng, src, rng.Float64())
		tRecs, tOffs := cleaned(rng, copyRecs, rng.Float64())
		_, tp, err := judgeTable(context.Background(), 0, tableItems(sRecs, sOffs), tableItems(tRecs, tOffs), 1000)
		if err != nil {
			t.Fatalf("case %d: %v", c, err)
		}
		// What readers of the two cleaned logs end with, and how each key differs: a
		// key one side deleted differs when that side still has its tombstone, and is
		// missing or extra when that side has no record of it.
		st, tt := truthTable(sRecs), truthTable(tRecs)
		var wantDiffer, wantMissing, wantExtra int64
		for k, v := range st {
			switch tv, ok := tt[k]; {
			case ok && tv != v, !ok && hasKey(tRecs, k):
				wantDiffer++
			case !ok:
				wantMissing++
			}
		}
		for k := range tt {
			switch _, ok := st[k]; {
			case !ok && hasKey(sRecs, k):
				wantDiffer++
			case !ok:
				wantExtra++
			}
		}
		got := [3]int64{tp.Differing, tp.Missing, tp.Extra}
		if want := [3]int64{wantDiffer, wantMissing, wantExtra}; got != want {
			t.Fatalf("case %d: source %v (kept %v), copy %v (kept %v): differing, missing, extra %v, want %v",
				c, src, sRecs, copyRecs, tRecs, got, want)
		}
		if tp.SourceRecords != int64(len(sRecs)) || tp.TargetRecords != int64(len(tRecs)) {
			t.Fatalf("case %d: records %d, %d, want %d, %d", c, tp.SourceRecords, tp.TargetRecords, len(sRecs), len(tRecs))
		}
		// Cleaning changes no table: the verdict is the one of the uncleaned logs.
		if wantSame := fmt.Sprint(truthTable(src)) == fmt.Sprint(truthTable(copyRecs)); tp.Differs() == wantSame {
			t.Fatalf("case %d: source %v, copy %v: differs %v, want %v", c, src, copyRecs, tp.Differs(), !wantSame)
		}
		if tp.Differs() {
			differ++
		} else {
			same++
		}
	}
	t.Logf("%d generated partitions: %d tables the same, %d that differ, every one as the readers' tables say", cases, same, differ)
	if same == 0 || differ == 0 {
		t.Fatalf("the generator made %d same and %d differing tables: it must make both", same, differ)
	}
}

func hasKey(recs []tableRec, k string) bool {
	for _, r := range recs {
		if r.key == k {
			return true
		}
	}
	return false
}

// compactedPair makes a compacted topic of one partition on two kfake clusters: the source
// holds 6,001 records of 41 keys, each key's latest record last; the target holds only the
// latest record of every key, at other offsets, as after its cleaner ran. alter changes the
// target's records before they are written.
func compactedPair(t *testing.T, alter func([]*kgo.Record) []*kgo.Record) (src, dst *kgo.Client, topic string) {
	t.Helper()
	src, dst = newCluster(t), newCluster(t)
	topic = testkit.TopicName("table")
	compact := map[string]*string{"cleanup.policy": kadm.StringPtr("compact")}
	testkit.CreateTopic(t, src, topic, 1, compact)
	testkit.CreateTopic(t, dst, topic, 1, compact)
	var recs, latest []*kgo.Record
	for i := range 5960 {
		recs = append(recs, &kgo.Record{Key: fmt.Appendf(nil, "key-%d", i%41), Value: fmt.Appendf(nil, "old-%d", i%7)})
	}
	for k := range 41 {
		r := &kgo.Record{Key: fmt.Appendf(nil, "key-%d", k), Value: fmt.Appendf(nil, "latest-%d", k%3)}
		if k == 40 {
			r.Value = nil // a tombstone
		}
		recs = append(recs, r)
		latest = append(latest, &kgo.Record{Key: r.Key, Value: r.Value})
	}
	testkit.Produce(t, src, topic, 0, recs...)
	testkit.Produce(t, dst, topic, 0, append([]*kgo.Record{{Key: []byte("key-3"), Value: []byte("old-0")}}, alter(latest)...)...)
	return src, dst, topic
}

// TestDiffCompactedTable: a compacted topic whose target holds only the latest record of
// every key is judged as a table and found identical; the same topic judged as a log has
// 5,960 records missing; a differing latest value, a lost key and an extra key each fail.
func TestDiffCompactedTable(t *testing.T) {
	src, dst, topic := compactedPair(t, func(r []*kgo.Record) []*kgo.Record { return r })
	res, om := diff(t, src, dst, Config{SourceTopic: topic})
	if !res.Identical || res.Judged != JudgeTable {
		t.Fatalf("got identical %v judged %q (%s), want an identical table: %+v", res.Identical, res.Judged, res.JudgedWhy, res)
	}
	if !strings.Contains(res.JudgedWhy, "compact on the source and the target") {
		t.Errorf("judged why %q, want it to name cleanup.policy on both sides", res.JudgedWhy)
	}
	want := TablePartition{SourceRecords: 6001, TargetRecords: 42, SourceSuperseded: 5960, TargetSuperseded: 1, Keys: 41, Same: 41}
	if len(res.Tables) != 1 || fmt.Sprint(res.Tables[0]) != fmt.Sprint(want) {
		t.Fatalf("tables %+v, want [%+v]", res.Tables, want)
	}
	if len(om.Partitions) != 0 || res.Partitions[0].MapLeftOut == "" {
		t.Errorf("a table has no record-by-record map: got %d partitions, left out %q", len(om.Partitions), res.Partitions[0].MapLeftOut)
	}

	log, _ := diff(t, src, dst, Config{SourceTopic: topic, Judge: JudgeLog})
	if log.Identical || log.Judged != JudgeLog || log.Summary.Missing < 5900 {
		t.Errorf("judged as a log: identical %v, judged %q, summary %+v; want the cleaned records missing", log.Identical, log.Judged, log.Summary)
	}

	for _, tc := range []struct {
		name  string
		alter func([]*kgo.Record) []*kgo.Record
		want  align.Counts
		class string
	}{
		{"a latest value differs", func(r []*kgo.Record) []*kgo.Record { r[5].Value = []byte("old-5"); return r },
			align.Counts{Matched: 40, Mismatched: 1}, "differs"},
		{"a key lost", func(r []*kgo.Record) []*kgo.Record { return append(r[:7], r[8:]...) },
			align.Counts{Matched: 40, Missing: 1}, "missing"},
		{"a key not from the source", func(r []*kgo.Record) []*kgo.Record {
			return append(r, &kgo.Record{Key: []byte("stray"), Value: []byte("x")})
		}, align.Counts{Matched: 41, Extra: 1}, "extra"},
		{"a deleted key alive on the target", func(r []*kgo.Record) []*kgo.Record { r[40].Value = []byte("old-1"); return r },
			align.Counts{Matched: 40, Mismatched: 1}, "differs"},
		{"the tombstone cleaned on the target", func(r []*kgo.Record) []*kgo.Record { return r[:40] },
			align.Counts{Matched: 41}, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			src, dst, topic := compactedPair(t, tc.alter)
			res, _ := diff(t, src, dst, Config{SourceTopic: topic})
			if res.Summary != tc.want || res.Identical != (tc.class == "") {
				t.Fatalf("summary %+v identical %v, want %+v", res.Summary, res.Identical, tc.want)
			}
			if tc.class != "" && (len(res.Tables[0].Differences) != 1 || res.Tables[0].Differences[0].Class != tc.class) {
				t.Errorf("differences %+v, want one %q", res.Tables[0].Differences, tc.class)
			}
		})
	}
}

// TestDiffTableRefusals: a table needs whole partitions and keyed records, and is not
// resumed from a state; each refusal says what to do instead.
func TestDiffTableRefusals(t *testing.T) {
	src, dst, topic := compactedPair(t, func(r []*kgo.Record) []*kgo.Record { return r })
	ctx := testkit.Context(t, 30e9)
	_, _, err := Diff(ctx, src, dst, Config{SourceTopic: topic, From: Position{Kind: AtOffset, Offset: 10}})
	if err == nil || !strings.Contains(err.Error(), "needs whole partitions") || !strings.Contains(err.Error(), "--judge log") {
		t.Errorf("from offset 10 on a compacted topic: got %v, want a refusal naming --judge log", err)
	}
	if _, err := DiffState(ctx, src, dst, Config{SourceTopic: topic}, nil, StateOptions{}); err == nil || !strings.Contains(err.Error(), "without --state") {
		t.Errorf("state on a compacted topic: got %v, want a refusal", err)
	}
	if _, err := ParseJudgement("tables"); err == nil {
		t.Errorf("judge tables: got no error")
	}

	// A topic that is not compacted judged as a table on request: records without a key
	// cannot be in a table.
	plain := testkit.TopicName("plain")
	testkit.CreateTopic(t, src, plain, 1, nil)
	testkit.CreateTopic(t, dst, plain, 1, nil)
	keyless := append(testkit.Records(0, 3), testkit.With(testkit.Record(4), func(r *kgo.Record) { r.Key = nil })...)
	testkit.Produce(t, src, plain, 0, keyless...)
	testkit.Produce(t, dst, plain, 0, keyless...)
	res, _ := diff(t, src, dst, Config{SourceTopic: plain})
	if res.Judged != JudgeLog || !res.Identical {
		t.Errorf("plain topic: judged %q identical %v, want an identical log", res.Judged, res.Identical)
	}
	res, _ = diff(t, src, dst, Config{SourceTopic: plain, Judge: JudgeTable})
	if res.Identical || !strings.Contains(res.Partitions[0].Err, "without a key") {
		t.Errorf("null keys judged as a table: identical %v, error %q; want the partition refused", res.Identical, res.Partitions[0].Err)
	}
}

// TestDiffTopicsCompactedShards: kverify diff --all judges a compacted topic as a table beside
// a plain one judged as a log, and the merge of its shards keeps both judgements and every
// partition's table.
func TestDiffTopicsCompactedShards(t *testing.T) {
	src, dst := newCluster(t), newCluster(t)
	compact := map[string]*string{"cleanup.policy": kadm.StringPtr("compact")}
	table, plain := testkit.TopicName("table"), testkit.TopicName("plain")
	testkit.CreateTopic(t, src, table, 4, compact)
	testkit.CreateTopic(t, dst, table, 4, compact)
	testkit.CreateTopic(t, src, plain, 1, nil)
	testkit.CreateTopic(t, dst, plain, 1, nil)
	for p := int32(0); p < 4; p++ {
		var all []*kgo.Record
		for i := range 50 {
			all = append(all, &kgo.Record{Key: fmt.Appendf(nil, "k%d", i%5), Value: fmt.Appendf(nil, "v%d", i)})
		}
		testkit.Produce(t, src, table, p, all...)
		testkit.Produce(t, dst, table, p, all[45:]...) // the target's cleaner kept the latest of each key
	}
	testkit.Produce(t, src, plain, 0, testkit.Records(0, 9)...)
	testkit.Produce(t, dst, plain, 0, testkit.Records(0, 9)...)
	ctx := testkit.Context(t, 30e9)
	flow := mm2.NewFlow("s", "t", mm2.IdentityPolicy{})
	var shards []ShardReport
	for i := range 2 {
		r, err := DiffTopics(ctx, src, dst, MultiConfig{Flow: flow, Names: []string{table, plain}, Shard: Shard{Index: i, Count: 2}})
		if err != nil {
			t.Fatal(err)
		}
		shards = append(shards, ShardReport{Name: fmt.Sprint(i), Result: r})
	}
	merged, err := MergeShards(shards)
	if err != nil || !merged.Identical {
		t.Fatalf("merge: %v, identical %v", err, merged != nil && merged.Identical)
	}
	for _, tr := range merged.Topics {
		switch tr.SourceTopic {
		case table:
			if tr.Judged != JudgeTable || len(tr.Tables) != 4 || tr.Tables[3].Partition != 3 || tr.Tables[3].SourceSuperseded != 45 {
				t.Errorf("%s: judged %q, tables %+v; want a table per partition, 45 superseded records each", table, tr.Judged, tr.Tables)
			}
		case plain:
			if tr.Judged != JudgeLog || len(tr.Tables) != 0 {
				t.Errorf("%s: judged %q with %d tables, want a log", plain, tr.Judged, len(tr.Tables))
			}
		}
	}
}
