package reconcile

import (
	"context"
	"fmt"
	"math/rand/v2"
	"regexp"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/kmigrate/kmigrate/align"
	"github.com/kmigrate/kmigrate/internal/testkit"
	"github.com/kmigrate/kmigrate/offsetmap"
)

// statusEvents are n records with no key, one of five values drawn at random (one seed),
// all with one timestamp: what log lines and status events look like.
func statusEvents(n int) []*kgo.Record {
	r := rand.New(rand.NewPCG(5, 5))
	return records(n, func(int) int { return r.IntN(5) })
}

// cycleEvents are n such records whose values repeat with a period of 15, as a job that
// reports the same states in the same order does.
func cycleEvents(n int) []*kgo.Record {
	return records(n, func(i int) int { return (i*7 + i/3) % 5 })
}

func records(n int, value func(i int) int) []*kgo.Record {
	out := make([]*kgo.Record, n)
	for i := range out {
		out[i] = &kgo.Record{Value: []byte(fmt.Sprintf("status-%d", value(i))), Timestamp: time.UnixMilli(1_700_000_000_000)}
	}
	return out
}

// A clean copy of repeating records: every group position answers its true offset or refuses,
// never a later copy of an equal record taken for a replay (which put E(G) 624 records too far
// and committed it) nor an earlier one (which called an exact group a data-loss risk). Content
// that cycles is the hard case: a copy shifted by one period differs from the truth by one
// mirror event, so those positions are refused; random values are answered.
func TestPlanRepeatedRecords(t *testing.T) {
	for _, tc := range []struct {
		name      string
		recs      []*kgo.Record
		minAnswer int
	}{
		{"random five values", statusEvents(600), 5},
		{"five values in a cycle", cycleEvents(600), 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e := newEnv(t)
			topic := uniqueTopic("repeat")
			testkit.CreateTopic(t, e.src, topic, 1, nil)
			testkit.CreateTopic(t, e.dst, topic, 1, nil)
			testkit.Produce(t, e.src, topic, 0, tc.recs...)
			mirrorTopic(t, e, topic, topic, 0, step{0, 600})
			answered := 0
			for _, g := range []int64{1, 17, 200, 333, 418, 599, 600} {
				group := fmt.Sprintf("g%d-%s", g, topic)
				testkit.Commit(t, e.srcAdm, group, topic, 0, g, "")
				testkit.Commit(t, e.dstAdm, group, topic, 0, g, "")
				res, err := Plan(testCtx(t), e.src, e.dst, Config{Groups: regexp.MustCompile(regexp.QuoteMeta(group))})
				if err != nil {
					t.Fatalf("Plan: %v", err)
				}
				p := findPartition(t, res, group, topic, 0)
				switch {
				case p.ExactTarget != nil && *p.ExactTarget != g:
					t.Errorf("G=%d: got E=%d (%s), want %d: the copy is clean", g, *p.ExactTarget, p.Proof, g)
				case p.ExactTarget != nil:
					answered++
					if p.Status != StatusExact || p.ProofSource != SourceContent {
						t.Errorf("G=%d: got %s from %q, want exact from content", g, p.Status, p.ProofSource)
					}
				case p.Status != StatusUnmappable:
					t.Errorf("G=%d: got %s (%s), want exact or unmappable", g, p.Status, p.Reason)
				}
			}
			if answered < tc.minAnswer {
				t.Errorf("answered %d of 7 positions of a clean copy: want at least %d", answered, tc.minAnswer)
			}
		})
	}
}

// A kmirror flow answers from kmirror's offset map topic, found by the flow's source alias
// (no flag), where the map saw the whole target: here up to kmirror's last commit marker.
func TestPlanKmirrorMap(t *testing.T) {
	e := newEnv(t)
	topic := uniqueTopic("kmap")
	group := "g-" + topic
	testkit.CreateTopic(t, e.src, topic, 1, nil)
	testkit.CreateTopic(t, e.dst, topic, 1, nil)
	recs := statusEvents(300)
	testkit.Produce(t, e.src, topic, 0, recs...)
	// kmirror's copy: one transaction, records at 0..299, its commit marker at 300.
	newTxnWriter(t, e, topic, "kmirror-"+topic).commit(statusEvents(300)...)
	mapTopic := offsetmap.MapTopicName("source")
	testkit.CreateTopic(t, e.dst, mapTopic, 1, nil)
	testkit.Produce(t, e.dst, mapTopic, 0, &kgo.Record{Key: offsetmap.SegmentKey(topic, 0, 0), Value: offsetmap.SegmentValue(offsetmap.Segment{Source: 0, Target: 0, Len: 300})})
	for _, g := range []int64{1, 150, 300} {
		gr := fmt.Sprintf("%s-%d", group, g)
		testkit.Commit(t, e.srcAdm, gr, topic, 0, g, "")
		res, err := Plan(testCtx(t), e.src, e.dst, Config{Groups: regexp.MustCompile(regexp.QuoteMeta(gr))})
		if err != nil {
			t.Fatalf("Plan: %v", err)
		}
		p := findPartition(t, res, gr, topic, 0)
		want := g
		if g == 300 {
			want = 301 // after the copy, the commit marker: the same position, kept by settle
		}
		t.Logf("G=%d: %s E=%s proof %q", g, p.Status, fmtPtr(p.ExactTarget), p.Proof)
		if fmtPtr(p.ExactTarget) != fmt.Sprint(want) || p.ProofSource != SourceKmirrorMap {
			t.Errorf("G=%d: got E=%s from %q (%s%s), want %d from kmirror's map", g, fmtPtr(p.ExactTarget), p.ProofSource, p.Proof, p.Reason, want)
		}
	}
}

// TestPlanKmirrorMapSourceEndsInMarker: a transactional source (an exactly-once application's
// changelog or repartition topic) ends in a commit marker, which no mirror copies, so
// kmirror's map ends below it. A group committed at the source's end, past the marker, has
// nothing left to copy: E(G) comes from the map, never "pending" for a marker.
func TestPlanKmirrorMapSourceEndsInMarker(t *testing.T) {
	e := newEnv(t)
	topic := uniqueTopic("kmap-txn")
	group := "g-" + topic
	testkit.CreateTopic(t, e.src, topic, 1, nil)
	testkit.CreateTopic(t, e.dst, topic, 1, nil)
	app := testkit.Client(t, e.srcK, kgo.TransactionalID("app-"+topic))
	testkit.ProduceTxn(t, app, topic, 0, statusEvents(100)...) // records 0..99, its marker at 100
	newTxnWriter(t, e, topic, "kmirror-"+topic).commit(statusEvents(100)...)
	mapTopic := offsetmap.MapTopicName("source")
	testkit.CreateTopic(t, e.dst, mapTopic, 1, nil)
	testkit.Produce(t, e.dst, mapTopic, 0, &kgo.Record{Key: offsetmap.SegmentKey(topic, 0, 0), Value: offsetmap.SegmentValue(offsetmap.Segment{Source: 0, Target: 0, Len: 100})})
	testkit.Commit(t, e.srcAdm, group, topic, 0, 101, "") // past the marker: the source's end
	res, err := Plan(testCtx(t), e.src, e.dst, Config{Groups: regexp.MustCompile(regexp.QuoteMeta(group))})
	if err != nil {
		t.Fatalf("Plan: %v", err)
	}
	p := findPartition(t, res, group, topic, 0)
	if fmtPtr(p.ExactTarget) != "101" || p.ProofSource != SourceKmirrorMap {
		t.Errorf("G=101 past the source's marker: got %s E=%s from %q (%s%s), want E=101 from kmirror's map", p.Status, fmtPtr(p.ExactTarget), p.ProofSource, p.Proof, p.Reason)
	}
}

// An offset map file from kverify diff is an alignment by content: on a copy of two values
// with replays (what MirrorMaker 2 leaves after restarts) it pairs records wrongly. Plan
// checks it against the answer and never takes it for one: every position is the true E(G)
// or refused, and the map's wrong answers are named as not used.
func TestPlanOffsetMapFromRepeatingCopy(t *testing.T) {
	c := genOracle(115) // 58 records of 2 values, replays, no losses, no gaps in the offsets
	if c.srcEnd-c.srcStart != int64(len(c.src)) || c.dstEnd-c.dstStart != int64(len(c.dst)) {
		t.Fatalf("%s: the case has offset gaps, want none (the generator changed?)", c.desc)
	}
	// The same case with offsets from 0, as the topics below hold it.
	for i := range c.src {
		c.src[i].off = int64(i)
	}
	for k := range c.dst {
		c.dst[k].off = int64(k)
	}
	c.srcStart, c.srcEnd, c.dstStart, c.dstEnd = 0, int64(len(c.src)), 0, int64(len(c.dst))
	_, pm, err := align.Partition(context.Background(), &align.SliceStream{Items: items(c.src)}, &align.SliceStream{Items: items(c.dst)},
		align.Options{SourceFrom: 0, SourceTo: c.srcEnd, TargetFrom: 0, TargetTo: c.dstEnd, StrictTargetFrom: true, StrictTargetTo: true})
	if err != nil {
		t.Fatal(err)
	}
	value := func(r rec) *kgo.Record {
		return &kgo.Record{Value: fmt.Appendf(nil, "status-%d", r.fp), Timestamp: time.UnixMilli(1_700_000_000_000)}
	}
	e := newEnv(t)
	topic := uniqueTopic("kvmap")
	testkit.CreateTopic(t, e.src, topic, 1, nil)
	testkit.CreateTopic(t, e.dst, topic, 1, nil)
	var srcRecs, dstRecs []*kgo.Record
	for _, r := range c.src {
		srcRecs = append(srcRecs, value(r))
	}
	for _, r := range c.dst {
		dstRecs = append(dstRecs, value(r))
	}
	testkit.Produce(t, e.src, topic, 0, srcRecs...)
	testkit.Produce(t, e.dst, topic, 0, dstRecs...)
	pm.Partition = 0
	om := &offsetmap.TopicMap{Version: offsetmap.Version, SourceTopic: topic, TargetTopic: topic, Partitions: []*offsetmap.PartitionMap{pm}}

	mapWrong, answered := 0, 0
	for g := int64(1); g <= c.srcEnd; g++ {
		want, known := c.truth(g)
		if tr := pm.ExactTarget(g); tr.Known && tr.HasPrev && known && tr.Target != want {
			mapWrong++
		}
		group := fmt.Sprintf("g%d-%s", g, topic)
		testkit.Commit(t, e.srcAdm, group, topic, 0, g, "")
		res, err := Plan(testCtx(t), e.src, e.dst, Config{Groups: regexp.MustCompile(regexp.QuoteMeta(group)), OffsetMap: om})
		if err != nil {
			t.Fatalf("Plan: %v", err)
		}
		p := findPartition(t, res, group, topic, 0)
		if p.ExactTarget == nil {
			continue
		}
		answered++
		if !known || *p.ExactTarget != want {
			t.Errorf("G=%d: got E=%d (%s), want %s", g, *p.ExactTarget, p.Proof, wantString(want, known))
		}
	}
	t.Logf("%s: kverify's map wrong at %d positions; kreconcile answered %d of %d, all true", c.desc, mapWrong, answered, c.srcEnd)
	if mapWrong == 0 {
		t.Fatalf("kverify's map is right everywhere: the case no longer shows what it is for")
	}
}
