package reconcile

import (
	"encoding/json"
	"errors"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/kmigrate/kmigrate/internal/testkit"
	"github.com/kmigrate/kmigrate/mm2"
)

// TestPlanGroupAtSourceEndAfterMarker: a group committed past a transaction marker at the
// source end (no record at or after G) still gets E(G) from the offset map's ExactTarget:
// the source range the alignment covers reaches G.
func TestPlanGroupAtSourceEndAfterMarker(t *testing.T) {
	e := newEnv(t)
	topic := uniqueTopic("marker-end")
	group := "g-" + topic
	testkit.CreateTopic(t, e.src, topic, 1, nil)
	testkit.CreateTopic(t, e.dst, topic, 1, nil)
	testkit.ProduceTxn(t, testkit.Client(t, e.srcK, kgo.TransactionalID("txn-"+topic)), topic, 0, values("v", 0, 10)...) // offsets 0..9, commit marker at 10
	mirrorTopic(t, e, topic, topic, 0, step{0, 11})                                                                      // target offsets 0..9
	testkit.Commit(t, e.srcAdm, group, topic, 0, 11, "")
	testkit.Commit(t, e.dstAdm, group, topic, 0, 10, "")
	res, err := Plan(testCtx(t), e.src, e.dst, Config{Groups: regexp.MustCompile(regexp.QuoteMeta(group))})
	if err != nil {
		t.Fatalf("Plan: %v", err)
	}
	p := findPartition(t, res, group, topic, 0)
	if p.Status != StatusExact || fmtPtr(p.ExactTarget) != "10" {
		t.Fatalf("got %s E=%s (%s), want exact E=10", p.Status, fmtPtr(p.ExactTarget), p.Reason)
	}
}

// TestPlanFlowGroupSelection: without --group / --exclude-group, Plan selects the groups the
// flow does (Flow.GroupMatches), as kmirror's group sync: groups.exclude = foo.* skips foo1.
// An explicit GroupsExclude replaces the flow's selection.
func TestPlanFlowGroupSelection(t *testing.T) {
	e := newEnv(t)
	topic := uniqueTopic("flowgroups")
	testkit.CreateTopic(t, e.src, topic, 1, nil)
	testkit.Produce(t, e.src, topic, 0, values("v", 0, 3)...)
	for _, g := range []string{"foo1", "bar1"} {
		testkit.Commit(t, e.srcAdm, g, topic, 0, 1, "")
	}
	cfg, err := mm2.Parse(strings.NewReader("clusters = source, target\nsource.bootstrap.servers = s:9092\ntarget.bootstrap.servers = t:9092\nsource->target.enabled = true\ngroups.exclude = foo.*\n"))
	if err != nil {
		t.Fatal(err)
	}
	flow, err := cfg.Flow("source->target")
	if err != nil {
		t.Fatal(err)
	}
	planned := func(c Config) []string {
		t.Helper()
		c.Flow, c.Topics = flow, regexp.MustCompile(regexp.QuoteMeta(topic))
		res, err := Plan(testCtx(t), e.src, e.dst, c)
		if err != nil {
			t.Fatalf("Plan: %v", err)
		}
		var got []string
		for _, g := range res.Groups {
			if g.Group == "foo1" || g.Group == "bar1" {
				got = append(got, g.Group)
			}
		}
		return got
	}
	if got := planned(Config{}); !slices.Equal(got, []string{"bar1"}) {
		t.Errorf("flow selection: planned %v, want [bar1]", got)
	}
	if got := planned(Config{GroupsExclude: regexp.MustCompile(`bar.*`)}); !slices.Equal(got, []string{"foo1"}) {
		t.Errorf("--exclude-group bar.*: planned %v, want [foo1]", got)
	}
}

// TestPartitionErr: a partition without E(G) carries an error that errors.Is and errors.As
// understand, and its JSON form is unchanged (status and reason only).
func TestPartitionErr(t *testing.T) {
	e := newEnv(t)
	topic := uniqueTopic("typed")
	group := "g-" + topic
	testkit.CreateTopic(t, e.src, topic, 1, nil)
	testkit.CreateTopic(t, e.dst, topic, 1, nil)
	testkit.Produce(t, e.src, topic, 0, values("v", 0, 10)...)
	testkit.Commit(t, e.srcAdm, group, topic, 0, 5, "") // nothing mirrored yet
	res, err := Plan(testCtx(t), e.src, e.dst, Config{Groups: regexp.MustCompile(regexp.QuoteMeta(group))})
	if err != nil {
		t.Fatalf("Plan: %v", err)
	}
	p := findPartition(t, res, group, topic, 0)
	if p.Status != StatusPending || !errors.Is(p.Err, ErrPending) || errors.Is(p.Err, ErrUnmappable) {
		t.Fatalf("got %s, Err %v: want pending and an error that is ErrPending only", p.Status, p.Err)
	}
	var pe *PartitionError
	if !errors.As(p.Err, &pe) || pe.Reason != p.Reason || pe.Group != group || pe.Topic != topic || pe.Partition != 0 {
		t.Errorf("errors.As: %+v, want the partition's group, topic, partition and reason %q", pe, p.Reason)
	}
	b, err := json.Marshal(p)
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(string(b), "Err") || !strings.Contains(string(b), `"status":"pending"`) {
		t.Errorf("JSON %s: want status and reason only", b)
	}

	// Unmappable: a topic the flow does not mirror.
	flow := &mm2.Flow{Source: "source", Target: "target", Enabled: true, Policy: mm2.IdentityPolicy{}, Topics: []string{"nothing-matches"}}
	res, err = Plan(testCtx(t), e.src, e.dst, Config{Flow: flow, Groups: regexp.MustCompile(regexp.QuoteMeta(group))})
	if err != nil {
		t.Fatalf("Plan: %v", err)
	}
	p = findPartition(t, res, group, topic, 0)
	if p.Status != StatusUnmappable || !errors.Is(p.Err, ErrUnmappable) || errors.Is(p.Err, ErrPending) {
		t.Errorf("got %s, Err %v: want unmappable and an error that is ErrUnmappable only", p.Status, p.Err)
	}
	if p := findPartition(t, res, group, topic, 0); p.Err == nil || !strings.Contains(p.Err.Error(), topic) {
		t.Errorf("Err %v: want it to name the topic", p.Err)
	}
}
