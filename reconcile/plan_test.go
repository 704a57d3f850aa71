package reconcile

import (
	"regexp"
	"strings"
	"testing"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/kmigrate/kmigrate/internal/testkit"
	"github.com/kmigrate/kmigrate/mm2"
	"github.com/kmigrate/kmigrate/offsetmap"
)

// scenario is a source topic T with one partition, a test mirror, and one group.
type scenario struct {
	name string
	// source writes the source partition (default: 100 records "v-0".."v-99").
	source func(t *testing.T, e *env, topic string)
	// before writes records directly to the target before mirroring (extras); after writes
	// to the target after mirroring.
	before   int
	after    func(t *testing.T, e *env, topic string)
	steps    []step
	noTarget bool // the topic is not created on the target
	g        int64
	// target committed offset; nil: none.
	target *int64
	// syncs, when set, are written to the offset-syncs topic and the checkpoint is MM2's
	// translation of g from them.
	syncs []mm2.OffsetSync

	wantStatus      Status
	wantE           *int64
	wantRedelivered int64
	wantSkipped     int64
	wantCheckpoint  *int64
	wantCPStatus    Status
	wantReason      string
}

func TestPlan(t *testing.T) {
	tests := []scenario{
		{
			name:  "seed case: replay in the middle, checkpoint from a sparse sync",
			steps: []step{{0, 50}, {45, 100}}, g: 70, target: ptr(51),
			syncs:      []mm2.OffsetSync{{Upstream: 0, Downstream: 0}, {Upstream: 45, Downstream: 50}},
			wantStatus: StatusBehind, wantE: ptr(75), wantRedelivered: 24, wantCheckpoint: ptr(51), wantCPStatus: StatusBehind,
		},
		{
			name:  "idle group at the end of the topic",
			steps: []step{{0, 100}}, g: 100, target: ptr(61),
			syncs:      []mm2.OffsetSync{{Upstream: 0, Downstream: 0}, {Upstream: 60, Downstream: 60}},
			wantStatus: StatusBehind, wantE: ptr(100), wantRedelivered: 39, wantCheckpoint: ptr(61), wantCPStatus: StatusBehind,
		},
		{
			name:  "checkpoint exact when a sync exists for G-1",
			steps: []step{{0, 100}}, g: 80, target: ptr(80),
			syncs:      []mm2.OffsetSync{{Upstream: 0, Downstream: 0}, {Upstream: 79, Downstream: 79}},
			wantStatus: StatusExact, wantE: ptr(80), wantCheckpoint: ptr(80), wantCPStatus: StatusExact,
		},
		{
			name:  "group at log start",
			steps: []step{{0, 100}}, g: 0, target: ptr(0),
			wantStatus: StatusExact, wantE: ptr(0),
		},
		{
			name:  "replay of the last records: the last copy counts",
			steps: []step{{0, 100}, {95, 100}}, g: 100, target: ptr(100),
			wantStatus: StatusBehind, wantE: ptr(105), wantRedelivered: 5,
		},
		{
			name:  "replay covering G-1",
			steps: []step{{0, 100}, {95, 100}}, g: 98, target: ptr(98),
			wantStatus: StatusBehind, wantE: ptr(103), wantRedelivered: 5,
		},
		{
			name:  "mirror has not reached G",
			steps: []step{{0, 60}}, g: 70, target: ptr(50),
			wantStatus: StatusPending, wantReason: "not yet",
		},
		{
			name:     "topic not mirrored",
			noTarget: true, g: 10,
			wantStatus: StatusUnmappable, wantReason: "does not exist on the target",
		},
		{
			name:  "no commit on the target",
			steps: []step{{0, 100}}, g: 50,
			wantStatus: StatusMissingTargetOffset, wantE: ptr(50),
		},
		{
			name:  "target ahead: switching would skip",
			steps: []step{{0, 100}}, g: 50, target: ptr(60),
			wantStatus: StatusAhead, wantE: ptr(50), wantSkipped: 10,
		},
		{
			name:   "extras written to the target first",
			before: 3, steps: []step{{0, 100}}, g: 50, target: ptr(50),
			wantStatus: StatusBehind, wantE: ptr(53), wantRedelivered: 3,
		},
		{
			name:  "records missing on the target below G",
			steps: []step{{0, 40}, {45, 100}}, g: 45, target: ptr(40),
			wantStatus: StatusExact, wantE: ptr(40),
		},
		{
			name: "identical run across G, copied once each",
			source: func(t *testing.T, e *env, topic string) {
				testkit.Produce(t, e.src, topic, 0, values("v", 0, 48)...)
				testkit.Produce(t, e.src, topic, 0, same(3)...)
				testkit.Produce(t, e.src, topic, 0, values("v", 51, 100)...)
			},
			steps: []step{{0, 100}}, g: 50, target: ptr(50),
			wantStatus: StatusExact, wantE: ptr(50),
		},
		{
			name: "identical run across G with a replayed copy",
			source: func(t *testing.T, e *env, topic string) {
				testkit.Produce(t, e.src, topic, 0, values("v", 0, 48)...)
				testkit.Produce(t, e.src, topic, 0, same(3)...)
				testkit.Produce(t, e.src, topic, 0, values("v", 51, 100)...)
			},
			steps: []step{{0, 50}, {49, 100}}, g: 50, target: ptr(50),
			wantStatus: StatusUnmappable, wantReason: "ambiguous",
		},
		{
			name: "group inside a transaction's gap (commit marker at G-1)",
			source: func(t *testing.T, e *env, topic string) {
				testkit.Produce(t, e.src, topic, 0, values("v", 0, 10)...)
				testkit.ProduceTxn(t, testkit.Client(t, e.srcK, kgo.TransactionalID("txn-"+topic)), topic, 0, values("t", 10, 15)...) // 10..14, marker 15
				testkit.Produce(t, e.src, topic, 0, values("v", 16, 30)...)                                                           // 16..29
			},
			steps: []step{{0, 30}}, g: 16, target: ptr(15),
			wantStatus: StatusExact, wantE: ptr(15),
		},
		{
			name: "group at the commit marker offset",
			source: func(t *testing.T, e *env, topic string) {
				testkit.Produce(t, e.src, topic, 0, values("v", 0, 10)...)
				testkit.ProduceTxn(t, testkit.Client(t, e.srcK, kgo.TransactionalID("txn-"+topic)), topic, 0, values("t", 10, 15)...)
				testkit.Produce(t, e.src, topic, 0, values("v", 16, 30)...)
			},
			steps: []step{{0, 30}}, g: 15, target: ptr(14),
			wantStatus: StatusBehind, wantE: ptr(15), wantRedelivered: 1,
		},
		{
			name: "a lone record identical to s* after it: replay or new record, cannot tell",
			source: func(t *testing.T, e *env, topic string) {
				testkit.Produce(t, e.src, topic, 0, values("v", 0, 100)...)
			},
			steps: []step{{0, 100}, {99, 100}}, g: 100, target: ptr(100),
			wantStatus: StatusUnmappable, wantReason: "ambiguous",
		},
		{
			name: "altered copy of s*",
			after: func(t *testing.T, e *env, topic string) {
				r := values("v", 99, 100)[0]
				r.Value = []byte("re-encoded")
				testkit.Produce(t, e.dst, topic, 0, r)
			},
			steps: []step{{0, 99}}, g: 100, target: ptr(100),
			wantStatus: StatusUnmappable, wantReason: "altered",
		},
		{
			name: "records below G deleted on the source",
			source: func(t *testing.T, e *env, topic string) {
				testkit.Produce(t, e.src, topic, 0, values("v", 0, 100)...)
			},
			steps: []step{{0, 100}}, g: 20, target: ptr(0),
			wantStatus: StatusBehind, wantE: ptr(30), wantRedelivered: 30,
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			e := newEnv(t)
			topic := uniqueTopic("plan")
			group := "g-" + topic
			testkit.CreateTopic(t, e.src, topic, 1, nil)
			if tc.source != nil {
				tc.source(t, e, topic)
			} else {
				testkit.Produce(t, e.src, topic, 0, values("v", 0, 100)...)
			}
			if !tc.noTarget {
				testkit.CreateTopic(t, e.dst, topic, 1, nil)
				if tc.before > 0 {
					extras := values("extra", 0, tc.before)
					for _, r := range extras {
						r.Timestamp = r.Timestamp.Add(-24 * 3600e9)
					}
					testkit.Produce(t, e.dst, topic, 0, extras...)
				}
				mirrorTopic(t, e, topic, topic, 0, tc.steps...)
				if tc.after != nil {
					tc.after(t, e, topic)
				}
			}
			if strings.HasPrefix(tc.name, "records below G deleted") {
				offs := kadm.Offsets{}
				offs.Add(kadm.Offset{Topic: topic, Partition: 0, At: 30})
				if _, err := e.srcAdm.DeleteRecords(testCtx(t), offs); err != nil {
					t.Fatalf("delete records: %v", err)
				}
			}
			testkit.Commit(t, e.srcAdm, group, topic, 0, tc.g, "meta-"+group)
			if tc.target != nil {
				testkit.Commit(t, e.dstAdm, group, topic, 0, *tc.target, "")
			}
			if tc.syncs != nil {
				model := make([]testkit.Sync, len(tc.syncs))
				for i := range tc.syncs {
					tc.syncs[i].Topic = topic
					model[i] = testkit.Sync{Upstream: tc.syncs[i].Upstream, Downstream: tc.syncs[i].Downstream}
				}
				writeSyncs(t, e.src, "mm2-offset-syncs.target.internal", tc.syncs...)
				if d, ok := testkit.MM2TranslateHighest(model, tc.g); ok {
					writeCheckpoints(t, e, "source", mm2.Checkpoint{Group: group, Topic: topic, Upstream: tc.g, Downstream: d, Metadata: "meta-" + group})
				}
			}

			res, err := Plan(testCtx(t), e.src, e.dst, Config{Groups: regexp.MustCompile(regexp.QuoteMeta(group))})
			if err != nil {
				t.Fatalf("Plan: %v", err)
			}
			p := findPartition(t, res, group, topic, 0)
			if p.Status != tc.wantStatus {
				t.Fatalf("status: got %s (%s), want %s; partition %+v", p.Status, p.Reason, tc.wantStatus, *p)
			}
			if fmtPtr(p.ExactTarget) != fmtPtr(tc.wantE) {
				t.Errorf("exact_target: got %s, want %s (proof %q, reason %q)", fmtPtr(p.ExactTarget), fmtPtr(tc.wantE), p.Proof, p.Reason)
			}
			if p.RedeliveredIfUnchanged != tc.wantRedelivered {
				t.Errorf("redelivered_if_unchanged: got %d, want %d", p.RedeliveredIfUnchanged, tc.wantRedelivered)
			}
			if p.SkippedIfUnchanged != tc.wantSkipped {
				t.Errorf("skipped_if_unchanged: got %d, want %d", p.SkippedIfUnchanged, tc.wantSkipped)
			}
			if fmtPtr(p.Checkpoint) != fmtPtr(tc.wantCheckpoint) {
				t.Errorf("checkpoint: got %s, want %s", fmtPtr(p.Checkpoint), fmtPtr(tc.wantCheckpoint))
			}
			if p.CheckpointStatus != tc.wantCPStatus {
				t.Errorf("checkpoint_status: got %q, want %q", p.CheckpointStatus, tc.wantCPStatus)
			}
			if tc.wantReason != "" && !strings.Contains(p.Reason, tc.wantReason) {
				t.Errorf("reason: got %q, want it to contain %q", p.Reason, tc.wantReason)
			}
			if p.ExactTarget != nil && p.Proof == "" {
				t.Errorf("proof: got none, want the fingerprint comparison")
			}
			if p.SourceMetadata != "meta-"+group {
				t.Errorf("source_metadata: got %q, want %q", p.SourceMetadata, "meta-"+group)
			}
		})
	}
}

// same returns n identical records.
func same(n int) []*kgo.Record {
	var out []*kgo.Record
	for range n {
		out = append(out, &kgo.Record{Key: []byte("same"), Value: []byte("same")})
	}
	return out
}

func TestPlanOffsetMap(t *testing.T) {
	e := newEnv(t)
	topic := uniqueTopic("map")
	group := "g-" + topic
	testkit.CreateTopic(t, e.src, topic, 1, nil)
	testkit.CreateTopic(t, e.dst, topic, 1, nil)
	testkit.Produce(t, e.src, topic, 0, values("v", 0, 100)...)
	mirrorTopic(t, e, topic, topic, 0, step{0, 50}, step{45, 100})
	testkit.Commit(t, e.srcAdm, group, topic, 0, 70, "")
	testkit.Commit(t, e.dstAdm, group, topic, 0, 51, "")
	om := &offsetmap.TopicMap{Version: offsetmap.Version, SourceTopic: topic, TargetTopic: topic, Partitions: []*offsetmap.PartitionMap{{
		Partition: 0, SourceFrom: 0, SourceTo: 100, TargetTo: 105,
		Segments:   []offsetmap.Segment{{Source: 0, Target: 0, Len: 50}, {Source: 50, Target: 55, Len: 50}},
		Duplicates: []offsetmap.Copy{{Target: 50, Source: 45}, {Target: 51, Source: 46}, {Target: 52, Source: 47}, {Target: 53, Source: 48}, {Target: 54, Source: 49}},
	}}}
	tests := []struct {
		name       string
		om         *offsetmap.TopicMap
		wantStatus Status
		wantE      *int64
		wantReason string
	}{
		{name: "exact map", om: om, wantStatus: StatusBehind, wantE: ptr(75)},
		{name: "map that lies", om: &offsetmap.TopicMap{Version: 1, SourceTopic: topic, TargetTopic: topic, Partitions: []*offsetmap.PartitionMap{{
			Partition: 0, SourceTo: 100, TargetTo: 100, Segments: []offsetmap.Segment{{Source: 0, Target: 0, Len: 100}}}}},
			// Content decides: the local alignment's answer, not the map's.
			wantStatus: StatusBehind, wantE: ptr(75)},
		{name: "map short of G", om: &offsetmap.TopicMap{Version: 1, SourceTopic: topic, TargetTopic: topic, Partitions: []*offsetmap.PartitionMap{{
			Partition: 0, SourceTo: 40, TargetTo: 40, Segments: []offsetmap.Segment{{Source: 0, Target: 0, Len: 40}}}}},
			wantStatus: StatusBehind, wantE: ptr(75)},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			res, err := Plan(testCtx(t), e.src, e.dst, Config{Groups: regexp.MustCompile(regexp.QuoteMeta(group)), OffsetMap: tc.om})
			if err != nil {
				t.Fatalf("Plan: %v", err)
			}
			p := findPartition(t, res, group, topic, 0)
			if p.Status != tc.wantStatus {
				t.Fatalf("status: got %s (%s), want %s", p.Status, p.Reason, tc.wantStatus)
			}
			if fmtPtr(p.ExactTarget) != fmtPtr(tc.wantE) {
				t.Errorf("exact_target: got %s, want %s", fmtPtr(p.ExactTarget), fmtPtr(tc.wantE))
			}
			if !strings.Contains(p.Reason, tc.wantReason) {
				t.Errorf("reason: got %q, want it to contain %q", p.Reason, tc.wantReason)
			}
		})
	}
}

func TestPlanTopicOutsideFlow(t *testing.T) {
	e := newEnv(t)
	topic := uniqueTopic("filtered")
	group := "g-" + topic
	testkit.CreateTopic(t, e.src, topic, 1, nil)
	testkit.CreateTopic(t, e.dst, topic, 1, nil)
	testkit.Produce(t, e.src, topic, 0, values("v", 0, 10)...)
	mirrorTopic(t, e, topic, topic, 0, step{0, 10})
	testkit.Commit(t, e.srcAdm, group, topic, 0, 5, "")
	flow := &mm2.Flow{Source: "source", Target: "target", Enabled: true, Policy: mm2.IdentityPolicy{},
		Topics: []string{".*"}, TopicsExclude: append(append([]string(nil), mm2.DefaultTopicsExclude...), "filtered-.*")}
	res, err := Plan(testCtx(t), e.src, e.dst, Config{Flow: flow, Groups: regexp.MustCompile(regexp.QuoteMeta(group))})
	if err != nil {
		t.Fatalf("Plan: %v", err)
	}
	p := findPartition(t, res, group, topic, 0)
	if p.Status != StatusUnmappable || !strings.Contains(p.Reason, "not mirrored") {
		t.Errorf("got %s %q, want unmappable: topic not mirrored", p.Status, p.Reason)
	}
}

func TestPlanDefaultExclusions(t *testing.T) {
	e := newEnv(t)
	topic := uniqueTopic("excl")
	testkit.CreateTopic(t, e.src, topic, 1, nil)
	testkit.Produce(t, e.src, topic, 0, values("v", 0, 3)...)
	for _, g := range []string{"console-consumer-1", "connect-x", "__internal", "app-" + topic} {
		testkit.Commit(t, e.srcAdm, g, topic, 0, 1, "")
	}
	res, err := Plan(testCtx(t), e.src, e.dst, Config{})
	if err != nil {
		t.Fatalf("Plan: %v", err)
	}
	var got []string
	for _, g := range res.Groups {
		got = append(got, g.Group)
	}
	if len(got) != 1 || got[0] != "app-"+topic {
		t.Errorf("groups planned: got %v, want only app-%s (MM2's default exclusions)", got, topic)
	}
}

func TestPlanExtraAfterE(t *testing.T) {
	e := newEnv(t)
	topic := uniqueTopic("extra")
	group := "g-" + topic
	testkit.CreateTopic(t, e.src, topic, 1, nil)
	testkit.CreateTopic(t, e.dst, topic, 1, nil)
	testkit.Produce(t, e.src, topic, 0, values("v", 0, 100)...)
	mirrorTopic(t, e, topic, topic, 0, step{0, 50})
	testkit.Produce(t, e.dst, topic, 0, values("direct", 0, 1)...) // target offset 50
	mirrorTopic(t, e, topic, topic, 0, step{50, 100})
	testkit.Commit(t, e.srcAdm, group, topic, 0, 50, "")
	testkit.Commit(t, e.dstAdm, group, topic, 0, 50, "")
	res, err := Plan(testCtx(t), e.src, e.dst, Config{Groups: regexp.MustCompile(regexp.QuoteMeta(group))})
	if err != nil {
		t.Fatalf("Plan: %v", err)
	}
	p := findPartition(t, res, group, topic, 0)
	if p.Status != StatusExact || fmtPtr(p.ExactTarget) != "50" {
		t.Fatalf("got %s E=%s, want exact E=50 (never above the unknown record)", p.Status, fmtPtr(p.ExactTarget))
	}
	if !strings.Contains(p.Proof, "1 target records after E copy no record") {
		t.Errorf("proof: got %q, want the record after E named", p.Proof)
	}
}
