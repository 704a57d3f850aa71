package reconcile

import (
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/kmigrate/kmigrate/internal/testkit"
)

// applyEnv is a mirrored topic with two partitions and groups positioned on it.
type applyEnv struct {
	*env
	topic string
}

func newApplyEnv(t *testing.T) *applyEnv {
	t.Helper()
	e := newEnv(t)
	topic := uniqueTopic("apply")
	testkit.CreateTopic(t, e.src, topic, 2, nil)
	testkit.CreateTopic(t, e.dst, topic, 2, nil)
	for p := int32(0); p < 2; p++ {
		testkit.Produce(t, e.src, topic, p, values("v", 0, 40)...)
	}
	mirrorTopic(t, e, topic, topic, 0, step{0, 20}, step{15, 40}) // p0: source k >= 20 at k+5
	mirrorTopic(t, e, topic, topic, 1, step{0, 40})               // p1: identity
	return &applyEnv{env: e, topic: topic}
}

func (a *applyEnv) plan(t *testing.T, group string) *Result {
	t.Helper()
	res, err := Plan(testCtx(t), a.src, a.dst, Config{Groups: regexp.MustCompile(regexp.QuoteMeta(group))})
	if err != nil {
		t.Fatalf("Plan: %v", err)
	}
	return res
}

func TestApply(t *testing.T) {
	a := newApplyEnv(t)
	group := "apply-" + a.topic
	testkit.Commit(t, a.srcAdm, group, a.topic, 0, 30, "src-meta-0")
	testkit.Commit(t, a.srcAdm, group, a.topic, 1, 25, "src-meta-1")
	testkit.Commit(t, a.dstAdm, group, a.topic, 0, 21, "old-meta") // MM2-like: behind
	// partition 1 has no target commit

	res := a.plan(t, group)
	if got := findPartition(t, res, group, a.topic, 0).Status; got != StatusBehind {
		t.Fatalf("p0 status before apply: got %s, want behind", got)
	}
	backup := filepath.Join(t.TempDir(), "backup.json")
	if err := Apply(testCtx(t), a.dst, res, ApplyConfig{Backup: backup}); err != nil {
		t.Fatalf("Apply: %v", err)
	}
	if !res.Applied || res.Backup != backup {
		t.Fatalf("result: got applied=%v backup=%q, want true and %q", res.Applied, res.Backup, backup)
	}
	for _, tc := range []struct {
		part     int32
		want     int64
		wantMeta string
	}{{0, 35, "src-meta-0"}, {1, 25, "src-meta-1"}} {
		at, meta, ok := testkit.Committed(t, a.dstAdm, group, a.topic, tc.part)
		if !ok || at != tc.want || meta != tc.wantMeta {
			t.Errorf("target commit p%d: got %d %q (exists %v), want %d %q", tc.part, at, meta, ok, tc.want, tc.wantMeta)
		}
	}
	b, err := ReadBackup(backup)
	if err != nil {
		t.Fatalf("ReadBackup: %v", err)
	}
	if len(b.Entries) != 2 || fmtPtr(b.Entries[0].Offset) != "21" || b.Entries[0].Metadata != "old-meta" || b.Entries[1].Offset != nil {
		t.Errorf("backup entries: got %+v, want p0=21 old-meta, p1=none", b.Entries)
	}

	// A consumer of the group on the target now reads exactly what the group had not consumed.
	for _, tc := range []struct {
		part int32
		from int
	}{{0, 30}, {1, 25}} {
		at, _, _ := testkit.Committed(t, a.dstAdm, group, a.topic, tc.part)
		got := readAll(t, a.dst, a.topic, tc.part, at)
		if want := 40 - tc.from; len(got) != want {
			t.Fatalf("p%d after apply: got %d records, want %d", tc.part, len(got), want)
		}
		for i, r := range got {
			if string(r.Value) != string(values("v", tc.from+i, tc.from+i+1)[0].Value) {
				t.Errorf("p%d record %d: got %q, want %q", tc.part, i, r.Value, values("v", tc.from+i, tc.from+i+1)[0].Value)
			}
		}
	}

	// Idempotent: a second plan is exact everywhere and a second apply writes nothing.
	res2 := a.plan(t, group)
	for _, p := range findGroup(t, res2, group).Partitions {
		if p.Status != StatusExact {
			t.Errorf("second plan %s/%d: got %s, want exact", p.Topic, p.Partition, p.Status)
		}
	}
	backup2 := filepath.Join(t.TempDir(), "backup2.json")
	if err := Apply(testCtx(t), a.dst, res2, ApplyConfig{Backup: backup2}); err != nil {
		t.Fatalf("second Apply: %v", err)
	}
	if res2.Applied || res2.Backup != "" {
		t.Errorf("second apply: got applied=%v backup=%q, want nothing written", res2.Applied, res2.Backup)
	}

	// Rollback restores exactly what was there: p0 back to 21 with its metadata, p1 deleted.
	rb, err := Rollback(testCtx(t), a.dst, backup, RollbackConfig{})
	if err != nil {
		t.Fatalf("Rollback: %v", err)
	}
	if len(rb.Groups) != 1 || rb.Groups[0].Restored != 1 || rb.Groups[0].Deleted != 1 {
		t.Errorf("rollback result: got %+v, want 1 restored, 1 deleted", rb.Groups)
	}
	if at, meta, ok := testkit.Committed(t, a.dstAdm, group, a.topic, 0); !ok || at != 21 || meta != "old-meta" {
		t.Errorf("p0 after rollback: got %d %q (exists %v), want 21 old-meta", at, meta, ok)
	}
	if at, _, ok := testkit.Committed(t, a.dstAdm, group, a.topic, 1); ok {
		t.Errorf("p1 after rollback: got commit %d, want none", at)
	}
}

// TestApplyCommitCoordinatorBehind: the target's group coordinator answers the first two
// commits UNKNOWN_TOPIC_OR_PARTITION (its metadata has not caught up with the topic); the
// apply sends them again and commits, instead of failing the group.
func TestApplyCommitCoordinatorBehind(t *testing.T) {
	a := newApplyEnv(t)
	group := "apply-" + a.topic
	testkit.Commit(t, a.srcAdm, group, a.topic, 0, 30, "src-meta-0")
	testkit.Commit(t, a.dstAdm, group, a.topic, 0, 21, "old-meta") // behind, as MM2 leaves it
	res := a.plan(t, group)
	refused := testkit.UnknownTopicCommits(a.dstK, 2)
	if err := Apply(testCtx(t), a.dst, res, ApplyConfig{Backup: filepath.Join(t.TempDir(), "backup.json")}); err != nil {
		t.Fatalf("Apply: %v", err)
	}
	if refused.Load() != 2 {
		t.Fatalf("%d commits refused, want 2: the fault was not staged", refused.Load())
	}
	if at, _, ok := testkit.Committed(t, a.dstAdm, group, a.topic, 0); !ok || at != 35 {
		t.Errorf("target commit p0: %d (exists %v), want 35", at, ok)
	}
}

func TestApplyRefusesActiveGroup(t *testing.T) {
	a := newApplyEnv(t)
	group := "active-" + a.topic
	testkit.Commit(t, a.srcAdm, group, a.topic, 0, 30, "")
	testkit.Commit(t, a.dstAdm, group, a.topic, 0, 21, "")

	testkit.JoinGroup(t, a.dst, group, a.topic) // a live member of the group on the target

	res := a.plan(t, group)
	backup := filepath.Join(t.TempDir(), "backup.json")
	if err := Apply(testCtx(t), a.dst, res, ApplyConfig{Backup: backup}); err != nil {
		t.Fatalf("Apply: %v", err)
	}
	g := findGroup(t, res, group)
	if !strings.Contains(g.Refused, group) || g.Applied || res.Applied {
		t.Errorf("refusal: got refused=%q applied=%v, want a message naming %s and nothing applied", g.Refused, g.Applied, group)
	}
	if at, _, _ := testkit.Committed(t, a.dstAdm, group, a.topic, 0); at != 21 {
		t.Errorf("target commit: got %d, want 21 (unchanged)", at)
	}
	if res.Backup != "" {
		t.Errorf("backup: got %q, want none (nothing to write)", res.Backup)
	}
}

func TestApplyNeverRewindsUnlessAllowed(t *testing.T) {
	a := newApplyEnv(t)
	group := "ahead-" + a.topic
	testkit.Commit(t, a.srcAdm, group, a.topic, 1, 20, "")
	testkit.Commit(t, a.dstAdm, group, a.topic, 1, 30, "")
	tests := []struct {
		name  string
		allow bool
		want  int64
	}{{"without allow-rewind", false, 30}, {"with allow-rewind", true, 20}}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			res := a.plan(t, group)
			if err := Apply(testCtx(t), a.dst, res, ApplyConfig{AllowRewind: tc.allow, Backup: filepath.Join(t.TempDir(), "b.json")}); err != nil {
				t.Fatalf("Apply: %v", err)
			}
			if at, _, _ := testkit.Committed(t, a.dstAdm, group, a.topic, 1); at != tc.want {
				t.Errorf("target commit: got %d, want %d (action %q)", at, tc.want, findPartition(t, res, group, a.topic, 1).Action)
			}
		})
	}
}

func TestBackupJSON(t *testing.T) {
	b := &Backup{Version: 1, Entries: []BackupEntry{{Group: "g", Topic: "t", Partition: 1, Offset: ptr(7), Metadata: "m"}, {Group: "g", Topic: "t", Partition: 2}}}
	path := filepath.Join(t.TempDir(), "b.json")
	if err := writeBackup(path, b); err != nil {
		t.Fatalf("writeBackup: %v", err)
	}
	got, err := ReadBackup(path)
	if err != nil {
		t.Fatalf("ReadBackup: %v", err)
	}
	if fmtPtr(got.Entries[0].Offset) != "7" || got.Entries[1].Offset != nil {
		t.Errorf("round trip: got %+v", got.Entries)
	}
	if err := writeBackup(path, b); err == nil {
		t.Errorf("writing over an existing backup: got no error, want one")
	}
}
