package verify

import (
	"bytes"
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/kmigrate/kmigrate/align"
	"github.com/kmigrate/kmigrate/internal/testkit"
	"github.com/kmigrate/kmigrate/offsetmap"
)

// resume runs DiffState and round-trips the new state through its file form.
func resume(t *testing.T, src, dst *kgo.Client, topic string, prev *State, follow bool) *StateRun {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	run, err := DiffState(ctx, src, dst, Config{SourceTopic: topic}, prev, StateOptions{Follow: follow, Name: "test.state"})
	if err != nil {
		t.Fatalf("DiffState: %v", err)
	}
	var b bytes.Buffer
	if err := WriteState(&b, run.State); err != nil {
		t.Fatal(err)
	}
	st, err := ParseState(b.Bytes())
	if err != nil {
		t.Fatalf("ParseState of what WriteState wrote: %v\n%s", err, b.String())
	}
	run.State = st
	return run
}

func part(t *testing.T, res *Result, p int32) align.PartitionResult {
	t.Helper()
	for _, pr := range res.Partitions {
		if pr.Partition == p {
			return pr
		}
	}
	t.Fatalf("no partition %d in %+v", p, res.Partitions)
	return align.PartitionResult{}
}

// mirrored starts two clusters with topic (2 partitions) holding records 0..n-1 on both.
func mirrored(t *testing.T, n int) (src, dst *kgo.Client, topic string) {
	src, dst = newCluster(t), newCluster(t)
	topic = testkit.TopicName("t")
	testkit.CreateTopic(t, src, topic, 2, nil)
	testkit.CreateTopic(t, dst, topic, 2, nil)
	for p := int32(0); p < 2; p++ {
		testkit.Produce(t, src, topic, p, span(int(p)*10000, int(p)*10000+n-1)...)
		testkit.Produce(t, dst, topic, p, span(int(p)*10000, int(p)*10000+n-1)...)
	}
	return src, dst, topic
}

func TestStateResumeReadsOnlyNewRecords(t *testing.T) {
	src, dst, topic := mirrored(t, 100)
	first := resume(t, src, dst, topic, nil, false)
	if !first.Result.Identical || first.Result.Summary.Matched != 200 {
		t.Fatalf("first run: identical=%v summary %+v, want identical, 200 matched", first.Result.Identical, first.Result.Summary)
	}
	for p := int32(0); p < 2; p++ {
		ps := first.State.Partition(p)
		if ps == nil || ps.SourceEnd != 100 || ps.TargetEnd != 100 || len(ps.SourceMarks) != marksKept || ps.SourceMarks[marksKept-1].Offset != 99 {
			t.Fatalf("partition %d state: %+v, want verified to 100 on both sides, marks up to 99", p, ps)
		}
	}
	for p := int32(0); p < 2; p++ {
		testkit.Produce(t, src, topic, p, span(int(p)*10000+100, int(p)*10000+149)...)
		testkit.Produce(t, dst, topic, p, span(int(p)*10000+100, int(p)*10000+149)...)
	}
	second := resume(t, src, dst, topic, first.State, false)
	if !second.Result.Identical {
		t.Fatalf("second run not identical: %+v", second.Result)
	}
	for p := int32(0); p < 2; p++ {
		pr := part(t, second.Result, p)
		if pr.SourceStart != 100 || pr.TargetStart != 100 || pr.Matched != 50 || pr.Counts.Differs() {
			t.Errorf("partition %d: resumed from %d (target %d) with %+v, want from 100, 50 matched", p, pr.SourceStart, pr.TargetStart, pr.Counts)
		}
		ps := second.State.Partition(p)
		if ps.SourceStart != 0 || ps.SourceEnd != 150 || ps.Verified.Matched != 150 {
			t.Errorf("partition %d state: %+v, want 0-150 with 150 matched", p, ps)
		}
		if pm := second.Map.Partition(p); pm == nil || pm.SourceFrom != 100 || pm.SourceTo != 150 {
			t.Errorf("partition %d map: %+v, want the resumed range 100-150 only", p, pm)
		}
	}
	// Nothing new: identical again (the boundary re-read), nothing read.
	third := resume(t, src, dst, topic, second.State, false)
	if !third.Result.Identical || third.Result.Summary != (align.Counts{}) || len(third.Result.NotCompared) != 0 {
		t.Errorf("third run: %+v, want identical with nothing new", third.Result)
	}
}

func TestStateBoundaryFindings(t *testing.T) {
	ctx := context.Background()
	for _, tc := range []struct {
		name  string
		apply func(t *testing.T, src, dst *kgo.Client, topic string, st *State)
		want  string
	}{
		{"target truncated past the boundary", func(t *testing.T, _, dst *kgo.Client, topic string, _ *State) {
			if _, err := kadm.NewClient(dst).DeleteRecords(ctx, kadm.Offsets{topic: {0: {At: 100}}}); err != nil {
				t.Fatal(err)
			}
		}, `target topic "T" partition 0: the boundary record at offset 99 was deleted`},
		{"target recreated", func(t *testing.T, _, dst *kgo.Client, topic string, _ *State) {
			recreate(t, dst, topic, span(0, 99), span(10000, 10099))
		}, `target topic "T" partition 0: the topic was recreated`},
		{"target rewritten, no topic IDs", func(t *testing.T, _, dst *kgo.Client, topic string, st *State) {
			st.SourceTopicID, st.TargetTopicID = "", ""
			recreate(t, dst, topic, cat(span(0, 98), span(500, 500)), span(10000, 10099))
		}, `target topic "T" partition 0: the records at the verified boundary changed (the record at offset 99 has fingerprint`},
		{"target shorter than the boundary", func(t *testing.T, _, dst *kgo.Client, topic string, st *State) {
			st.SourceTopicID, st.TargetTopicID = "", ""
			recreate(t, dst, topic, span(0, 49), span(10000, 10099))
		}, `target topic "T" partition 0: the log ends at offset 50, below the verified end 100`},
		{"source recreated and refilled", func(t *testing.T, src, _ *kgo.Client, topic string, st *State) {
			st.SourceTopicID, st.TargetTopicID = "", ""
			st.Partitions[0].SourceLogStart = 10 // as if retention had moved it
			recreate(t, src, topic, span(0, 120), span(10000, 10099))
		}, `source topic "T" partition 0: the log starts at offset 0, before 10`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			src, dst, topic := mirrored(t, 100)
			first := resume(t, src, dst, topic, nil, false)
			if !first.Result.Identical {
				t.Fatalf("first run not identical: %+v", first.Result)
			}
			tc.apply(t, src, dst, topic, first.State)
			run := resume(t, src, dst, topic, first.State, false)
			want := strings.ReplaceAll(tc.want, `"T"`, `"`+topic+`"`)
			if run.Result.Identical || !strings.Contains(strings.Join(run.Result.Problems, "\n"), want) {
				t.Fatalf("got identical=%v problems %q, want a finding %q", run.Result.Identical, run.Result.Problems, want)
			}
			if got := part(t, run.Result, 0); got.NotCompared == "" {
				t.Errorf("partition 0 was compared past a broken boundary: %+v", got)
			}
			// The broken partition keeps its state: the next run finds it again.
			if got := run.State.Partition(0); got.SourceEnd != 100 || got.Verified.Matched != 100 {
				t.Errorf("partition 0 state moved: %+v", got)
			}
			again := resume(t, src, dst, topic, run.State, false)
			if again.Result.Identical || len(again.Boundary) == 0 {
				t.Errorf("the run after the finding: identical=%v problems %q, want the finding again", again.Result.Identical, again.Result.Problems)
			}
		})
	}
}

// recreate deletes topic and creates it again with p0 and p1 in its two partitions.
func recreate(t *testing.T, cl *kgo.Client, topic string, p0, p1 []*kgo.Record) {
	t.Helper()
	ctx := context.Background()
	adm := kadm.NewClient(cl)
	if _, err := adm.DeleteTopic(ctx, topic); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(10 * time.Second)
	for {
		resp, err := adm.CreateTopic(ctx, 2, 1, nil, topic)
		if err == nil && resp.Err == nil {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("recreate %s: %v %v", topic, err, resp.Err)
		}
		time.Sleep(50 * time.Millisecond)
	}
	// A new producer: the old one knows the old topic ID.
	fresh, err := kgo.NewClient(kgo.SeedBrokers(cl.OptValue(kgo.SeedBrokers).([]string)...), kgo.RecordPartitioner(kgo.ManualPartitioner()), kgo.ProducerLinger(0))
	if err != nil {
		t.Fatal(err)
	}
	defer fresh.Close()
	testkit.Produce(t, fresh, topic, 0, p0...)
	testkit.Produce(t, fresh, topic, 1, p1...)
}

func TestStateRefusesAnotherComparison(t *testing.T) {
	src, dst, topic := mirrored(t, 10)
	first := resume(t, src, dst, topic, nil, false)
	other := testkit.TopicName("t")
	testkit.CreateTopic(t, src, other, 2, nil)
	testkit.CreateTopic(t, dst, other, 2, nil)
	ctx := context.Background()
	_, err := DiffState(ctx, src, dst, Config{SourceTopic: other}, first.State, StateOptions{Name: "s"})
	if !errors.Is(err, ErrStateMismatch) || !strings.Contains(err.Error(), "source topic") {
		t.Errorf("another topic: got %v, want ErrStateMismatch naming the source topic", err)
	}
	// Another target cluster: the same topic name there.
	dst2 := testkit.NewCluster(t, kfake.ClusterID("another-cluster")).Client
	testkit.CreateTopic(t, dst2, topic, 2, nil)
	_, err = DiffState(ctx, src, dst2, Config{SourceTopic: topic}, first.State, StateOptions{Name: "s"})
	if !errors.Is(err, ErrStateMismatch) || !strings.Contains(err.Error(), "target cluster ID") {
		t.Errorf("another cluster: got %v, want ErrStateMismatch naming the target cluster ID", err)
	}
	all, _ := offsetmap.ParseFields("key,value,headers,timestamp")
	_, err = DiffState(ctx, src, dst, Config{SourceTopic: topic, Fields: all}, first.State, StateOptions{Name: "s"})
	if !errors.Is(err, ErrStateMismatch) {
		t.Errorf("other fields: got %v, want ErrStateMismatch", err)
	}
	if _, err := ParseState([]byte(`{"version":2,"source_topic":"a","target_topic":"a","compared":["key"],"partitions":[]}`)); err == nil {
		t.Error("a version 2 state was accepted")
	}
}

func TestStateFollowPendingTail(t *testing.T) {
	src, dst := newCluster(t), newCluster(t)
	topic := testkit.TopicName("t")
	testkit.CreateTopic(t, src, topic, 1, nil)
	testkit.CreateTopic(t, dst, topic, 1, nil)
	testkit.Produce(t, src, topic, 0, span(0, 99)...)
	testkit.Produce(t, dst, topic, 0, span(0, 59)...) // the mirror is 40 records behind
	first := resume(t, src, dst, topic, nil, true)
	pr := part(t, first.Result, 0)
	if !first.Result.Identical || pr.Matched != 60 || pr.Missing != 0 || pr.SourceEnd != 60 {
		t.Fatalf("follow round 1: identical=%v %+v source end %d, want identical, 60 matched, verified to 60", first.Result.Identical, pr.Counts, pr.SourceEnd)
	}
	if got := first.State.Lag(); got != 40 {
		t.Errorf("lag %d, want 40", got)
	}
	testkit.Produce(t, dst, topic, 0, span(60, 99)...)
	testkit.Produce(t, src, topic, 0, span(100, 109)...)
	second := resume(t, src, dst, topic, first.State, true)
	pr = part(t, second.Result, 0)
	if !second.Result.Identical || pr.SourceStart != 60 || pr.Matched != 40 || pr.SourceEnd != 100 {
		t.Fatalf("follow round 2: identical=%v from %d %+v to %d, want 40 matched from 60 to 100", second.Result.Identical, pr.SourceStart, pr.Counts, pr.SourceEnd)
	}
	if got := second.State.Lag(); got != 10 {
		t.Errorf("lag %d, want 10", got)
	}
	// Without --follow the same tail is missing, but the state does not move past it.
	once := resume(t, src, dst, topic, second.State, false)
	pr = part(t, once.Result, 0)
	if once.Result.Identical || pr.Missing != 10 || once.State.Partition(0).SourceEnd != 100 || once.State.Partition(0).Verified.Missing != 0 {
		t.Fatalf("one run: identical=%v %+v state %+v, want 10 missing now, state still at 100 with nothing missing", once.Result.Identical, pr.Counts, once.State.Partition(0))
	}
	testkit.Produce(t, dst, topic, 0, span(100, 109)...)
	last := resume(t, src, dst, topic, once.State, false)
	if pr = part(t, last.Result, 0); !last.Result.Identical || pr.SourceStart != 100 || pr.Matched != 10 {
		t.Fatalf("after the mirror caught up: identical=%v from %d %+v, want 10 matched from 100", last.Result.Identical, pr.SourceStart, pr.Counts)
	}
}

func TestStateFindingsStay(t *testing.T) {
	src, dst := newCluster(t), newCluster(t)
	topic := testkit.TopicName("t")
	testkit.CreateTopic(t, src, topic, 1, nil)
	testkit.CreateTopic(t, dst, topic, 1, nil)
	testkit.Produce(t, src, topic, 0, span(0, 49)...)
	testkit.Produce(t, dst, topic, 0, cat(span(0, 19), span(21, 49))...) // 20 lost
	first := resume(t, src, dst, topic, nil, false)
	if first.Result.Identical || first.Result.Summary.Missing != 1 {
		t.Fatalf("first: %+v, want 1 missing", first.Result.Summary)
	}
	testkit.Produce(t, src, topic, 0, span(50, 59)...)
	testkit.Produce(t, dst, topic, 0, span(50, 59)...)
	second := resume(t, src, dst, topic, first.State, false)
	pr := part(t, second.Result, 0)
	if second.Result.Identical || pr.Matched != 10 || pr.SourceStart != 50 || !strings.Contains(strings.Join(second.Result.Problems, ""), "earlier runs (state test.state) found 1 missing records in source offsets 0-49") {
		t.Fatalf("second: identical=%v %+v from %d problems %q, want 10 matched from 50 and the earlier finding", second.Result.Identical, pr.Counts, pr.SourceStart, second.Result.Problems)
	}
}
