package reconcile

import (
	"fmt"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/twmb/franz-go/pkg/kadm"

	"github.com/kmigrate/kmigrate/internal/testkit"
	"github.com/kmigrate/kmigrate/mm2"
)

// streamsApp is a Kafka Streams word count as the clusters see it once it stopped: its
// group (the application.id) committed on an input topic and its repartition topic, and its
// store's changelog, each of two partitions, mirrored with a replay so that target offsets
// are not the source's.
type streamsApp struct {
	*env
	id, input, repartition, changelog string
}

// newStreamsApp builds the application on both clusters; shape changes the target before the
// mirror copies: it returns how many records of the changelog's partition 1 to copy and how
// many partitions the target changelog gets.
func newStreamsApp(t *testing.T, copyChangelog1 int64, changelogParts int32) *streamsApp {
	t.Helper()
	e := newEnv(t)
	id := uniqueTopic("wordcount")
	a := &streamsApp{env: e, id: id, input: uniqueTopic("lines"), repartition: id + "-count-repartition", changelog: id + "-count-changelog"}
	for _, top := range []string{a.input, a.repartition, a.changelog} {
		testkit.CreateTopic(t, e.src, top, 2, nil)
		parts := int32(2)
		if top == a.changelog {
			parts = changelogParts
		}
		testkit.CreateTopic(t, e.dst, top, parts, nil)
		for p := int32(0); p < 2; p++ {
			testkit.Produce(t, e.src, top, p, values(top, 0, 30)...)
			to := int64(30)
			if top == a.changelog && p == 1 {
				to = copyChangelog1
			}
			if p < parts {
				mirrorTopic(t, e, top, top, p, step{0, 20}, step{12, to}) // a replay of 8: the copy of k >= 20 is at k+8
			}
		}
	}
	for _, top := range []string{a.input, a.repartition} {
		testkit.Commit(t, e.srcAdm, id, top, 0, 25, "")
		testkit.Commit(t, e.srcAdm, id, top, 1, 30, "")
	}
	testkit.Commit(t, e.dstAdm, id, a.input, 0, 21, "") // MM2's group offset sync: behind
	return a
}

func (a *streamsApp) plan(t *testing.T) *Result {
	t.Helper()
	res, err := Plan(testCtx(t), a.src, a.dst, Config{Groups: regexp.MustCompile(regexp.QuoteMeta(a.id))})
	if err != nil {
		t.Fatalf("Plan: %v", err)
	}
	return res
}

// TestStreamsAppPlannedAsOneUnit: a group whose internal topics are named after it is planned
// as a Kafka Streams application: its input, repartition and changelog topics listed, every
// changelog partition translated at its end, and Apply commits all four partitions at once.
func TestStreamsAppPlannedAsOneUnit(t *testing.T) {
	a := newStreamsApp(t, 30, 2)
	res := a.plan(t)
	g := findGroup(t, res, a.id)
	app := g.App
	if app == nil {
		t.Fatalf("group %s not recognised as an application: %+v", a.id, g)
	}
	if strings.Join(app.Inputs, ",") != a.input || strings.Join(app.Repartition, ",") != a.repartition || strings.Join(app.Changelogs, ",") != a.changelog {
		t.Errorf("topics: inputs %v repartition %v changelogs %v", app.Inputs, app.Repartition, app.Changelogs)
	}
	if !app.Ready || len(app.Problems) > 0 {
		t.Fatalf("application not ready: %v", app.Problems)
	}
	if len(app.State) != 2 {
		t.Fatalf("state: %d changelog partitions, want 2", len(app.State))
	}
	for _, s := range app.State {
		if s.SourceCommitted != 30 || s.ExactTarget == nil || *s.ExactTarget != 38 {
			t.Errorf("changelog %s/%d: source end %d, E %s; want 30 and 38 (the replay of 8)", s.Topic, s.Partition, s.SourceCommitted, fmtPtr(s.ExactTarget))
		}
	}
	if !strings.Contains(strings.Join(app.LocalState, " "), "wipe it") || !strings.Contains(strings.Join(app.LocalState, " "), "2 of 2 changelog partitions end at a higher offset") {
		t.Errorf("local state: %q", app.LocalState)
	}
	if err := Apply(testCtx(t), a.dst, res, ApplyConfig{Backup: filepath.Join(t.TempDir(), "b.json")}); err != nil {
		t.Fatalf("Apply: %v", err)
	}
	for _, top := range []string{a.input, a.repartition} {
		for p, want := range map[int32]int64{0: 33, 1: 38} {
			if got, _, ok := testkit.Committed(t, a.dstAdm, a.id, top, p); !ok || got != want {
				t.Errorf("%s/%d committed on the target: %d (%v), want %d", top, p, got, ok, want)
			}
		}
	}
}

// TestStreamsAppAllOrNone: an application with one partition it cannot switch is refused
// whole: a changelog not copied to its end, or a target changelog with fewer partitions.
// Apply then commits none of its partitions, though E(G) is known for all of them.
func TestStreamsAppAllOrNone(t *testing.T) {
	for _, tc := range []struct {
		name       string
		copied     int64
		parts      int32
		wantReason string
	}{
		{"changelog not copied to its end", 27, 2, "is not copied to its end 30"},
		{"changelog with fewer partitions on the target", 30, 1, "has 2 partitions on the source and 1 on the target"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			a := newStreamsApp(t, tc.copied, tc.parts)
			res := a.plan(t)
			g := findGroup(t, res, a.id)
			if g.App == nil || g.App.Ready || !strings.Contains(strings.Join(g.App.Problems, "; "), tc.wantReason) {
				t.Fatalf("application: %+v, want not ready with %q", g.App, tc.wantReason)
			}
			for _, p := range g.Partitions {
				if p.ExactTarget == nil {
					t.Fatalf("%s/%d: E(G) unknown; the test wants every group partition known", p.Topic, p.Partition)
				}
			}
			if err := Apply(testCtx(t), a.dst, res, ApplyConfig{Backup: filepath.Join(t.TempDir(), "b.json")}); err != nil {
				t.Fatalf("Apply: %v", err)
			}
			if g := findGroup(t, res, a.id); !strings.Contains(g.Refused, "switches as a whole") {
				t.Errorf("refused %q, want the whole application refused", g.Refused)
			}
			for _, top := range []string{a.input, a.repartition} {
				for p := int32(0); p < 2; p++ {
					got, _, ok := testkit.Committed(t, a.dstAdm, a.id, top, p)
					if ok && !(top == a.input && p == 0 && got == 21) {
						t.Errorf("%s/%d committed %d on the target: an application not ready gets nothing", top, p, got)
					}
				}
			}
		})
	}
}

// TestStreamsAppTopicsByLongestName: two applications whose ids share a prefix (wordcount and
// wordcount-v2) each own their own internal topics: the topics of wordcount-v2 are not
// wordcount's, though they start with "wordcount-".
func TestStreamsAppTopicsByLongestName(t *testing.T) {
	a := newStreamsApp(t, 30, 2)
	v2 := a.id + "-v2"
	for _, top := range []string{v2 + "-count-repartition", v2 + "-count-changelog"} {
		testkit.CreateTopic(t, a.src, top, 2, nil)
	}
	testkit.Commit(t, a.srcAdm, v2, a.input, 0, 3, "")
	testkit.Commit(t, a.srcAdm, v2, v2+"-count-repartition", 0, 0, "")
	res, err := Plan(testCtx(t), a.src, a.dst, Config{Groups: regexp.MustCompile(regexp.QuoteMeta(a.id) + ".*")})
	if err != nil {
		t.Fatalf("Plan: %v", err)
	}
	g := findGroup(t, res, a.id)
	if g.App == nil || strings.Join(g.App.Repartition, ",") != a.repartition || strings.Join(g.App.Changelogs, ",") != a.changelog {
		t.Errorf("%s: %+v, want only its own internal topics", a.id, g.App)
	}
	if g2 := findGroup(t, res, v2); g2.App == nil || strings.Join(g2.App.Changelogs, ",") != v2+"-count-changelog" || strings.Join(g2.App.Inputs, ",") != a.input {
		t.Errorf("%s: %+v, want its own topics and the shared input", v2, g2.App)
	}
}

// A streams group (KIP-1071) is an application whatever its topics are named: its topics are
// those of the topology its coordinator keeps, inputs included (not its commits: an input
// partition it never committed on is still its). Without a topology it is the application
// found by name, or one of its commits alone.
func TestStreamsGroupApp(t *testing.T) {
	offs := kadm.FetchOffsetsResponse{Group: "wc", Fetched: kadm.OffsetResponses{
		"lines": {0: {Offset: kadm.Offset{Topic: "lines", At: 5}}}, "wc-x-repartition": {0: {Offset: kadm.Offset{Topic: "wc-x-repartition", At: 3}}},
	}}
	topo := &mm2.StreamsTopology{Epoch: 1, Inputs: []string{"lines", "more-lines"}, Repartition: []string{"wc-counts-repartition"}, Changelogs: []string{"wc-store"}}
	named := &App{ID: "wc", Inputs: []string{"lines"}, Repartition: []string{"wc-x-repartition"}, Changelogs: []string{}, RecognisedBy: "names"}
	for _, tt := range []struct {
		name                                 string
		topo                                 *mm2.StreamsTopology
		named                                *App
		inputs, repartition, changelogs, why string
	}{
		{"topology", topo, named, "[lines more-lines]", "[wc-counts-repartition]", "[wc-store]", "topology the source's group coordinator keeps (epoch 1)"},
		{"no topology, named", nil, named, "[lines]", "[wc-x-repartition]", "[]", "has not initialized"},
		{"no topology, not named", nil, nil, "[lines wc-x-repartition]", "[]", "[]", "has not initialized"},
	} {
		app := streamsGroupApp("wc", tt.topo, tt.named, offs)
		got := fmt.Sprint(app.Inputs, app.Repartition, app.Changelogs)
		if want := fmt.Sprint(tt.inputs, " ", tt.repartition, " ", tt.changelogs); got != want || app.ID != "wc" || !strings.Contains(app.RecognisedBy, tt.why) {
			t.Errorf("%s: got %s recognised by %q, want %s and %q", tt.name, got, app.RecognisedBy, want, tt.why)
		}
	}
	if len(topo.Inputs) != 2 {
		t.Errorf("the topology was changed: %+v", topo)
	}
}

// TestStreamsAppRollbackWhole: an application Apply switched as one unit is rolled back as one
// unit. Once it ran on the target (one of its partitions moved past what Apply committed),
// Rollback restores none of its partitions, not the three that did not move, and says why;
// --force restores all four.
func TestStreamsAppRollbackWhole(t *testing.T) {
	a := newStreamsApp(t, 30, 2)
	res := a.plan(t)
	backup := filepath.Join(t.TempDir(), "b.json")
	if err := Apply(testCtx(t), a.dst, res, ApplyConfig{Backup: backup}); err != nil {
		t.Fatalf("Apply: %v", err)
	}
	testkit.Commit(t, a.dstAdm, a.id, a.input, 0, 35, "") // the application consumed on the target
	rb, err := Rollback(testCtx(t), a.dst, backup, RollbackConfig{})
	if err == nil || len(rb.Groups) != 1 {
		t.Fatalf("Rollback: %v %+v, want the application refused", err, rb)
	}
	g := rb.Groups[0]
	if !strings.Contains(g.Refused, "switches back as a whole") || g.Restored != 0 || g.Deleted != 0 || len(g.Conflicts) != 1 {
		t.Fatalf("Rollback: %+v, want nothing restored, one conflict, and why", g)
	}
	for _, top := range []string{a.input, a.repartition} {
		for p, want := range map[int32]int64{0: 33, 1: 38} {
			if top == a.input && p == 0 {
				want = 35
			}
			if got, _, ok := testkit.Committed(t, a.dstAdm, a.id, top, p); !ok || got != want {
				t.Errorf("%s/%d committed on the target after the refused rollback: %d (%v), want %d", top, p, got, ok, want)
			}
		}
	}
	rb, err = Rollback(testCtx(t), a.dst, backup, RollbackConfig{Force: true})
	if err != nil || rb.Groups[0].Restored+rb.Groups[0].Deleted != 4 || rb.Groups[0].Forced != 1 {
		t.Fatalf("Rollback --force: %v %+v, want all four partitions restored, one forced", err, rb.Groups[0])
	}
}
