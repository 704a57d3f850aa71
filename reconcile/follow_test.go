package reconcile

import (
	"context"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/kmigrate/kmigrate/internal/testkit"
)

// onTarget makes groups exist on the target with a commit on another topic: kfake answers
// GROUP_ID_NOT_FOUND to fetching the offsets of an absent group, which Plan takes for a group
// error (brokers 2.3 and 3.7 answer with no offsets).
func onTarget(t *testing.T, a *applyEnv, groups ...string) {
	t.Helper()
	ensureTopic(t, a.dstAdm, "follow-other")
	for _, g := range groups {
		testkit.Commit(t, a.dstAdm, g, "follow-other", 0, 0, "")
	}
}

// events collects a follow run's events.
type events struct {
	mu  sync.Mutex
	all []FollowEvent
}

func (e *events) add(ev FollowEvent) {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.all = append(e.all, ev)
}

// index is the position of the first event of group in state whose message contains s, -1 if none.
func (e *events) index(group string, state FollowState, s string) int {
	e.mu.Lock()
	defer e.mu.Unlock()
	for i, ev := range e.all {
		if ev.Group == group && ev.State == state && strings.Contains(ev.Message, s) {
			return i
		}
	}
	return -1
}

func (e *events) String() string {
	e.mu.Lock()
	defer e.mu.Unlock()
	var b strings.Builder
	for _, ev := range e.all {
		b.WriteString("\n  " + ev.Message)
	}
	return b.String()
}

func followGroup(t *testing.T, fr *FollowResult, group string) FollowGroup {
	t.Helper()
	for _, g := range fr.Follow {
		if g.Group == group {
			return g
		}
	}
	t.Fatalf("follow result has no group %s: %+v", group, fr.Follow)
	return FollowGroup{}
}

func groupsRe(groups ...string) *regexp.Regexp {
	for i := range groups {
		groups[i] = regexp.QuoteMeta(groups[i])
	}
	return regexp.MustCompile(strings.Join(groups, "|"))
}

// backupOffsets is the backup as "group topic/partition offset->committed" lines.
func backupOffsets(t *testing.T, path string) []string {
	t.Helper()
	b, err := ReadBackup(path)
	if err != nil {
		t.Fatalf("backup after the step: %v", err)
	}
	var out []string
	for _, e := range b.Entries {
		out = append(out, e.Group+" "+e.Topic+"/"+fmtPtr(ptr(int64(e.Partition)))+" "+fmtPtr(e.Offset)+"->"+fmtPtr(e.Committed))
	}
	return out
}

// A group still consumed on the source waits; the other is applied at once; when the first
// group stops (mid-way) it is applied too. After each step the backup is valid and holds
// exactly the groups applied so far, and a rollback of the final file restores both.
func TestFollowAppliesEachGroupAsItStops(t *testing.T) {
	a := newApplyEnv(t)
	gA, gB := "follow-a-"+a.topic, "follow-b-"+a.topic
	onTarget(t, a, gB)
	testkit.Commit(t, a.srcAdm, gA, a.topic, 0, 30, "ma")
	testkit.Commit(t, a.srcAdm, gA, a.topic, 1, 25, "ma")
	testkit.Commit(t, a.dstAdm, gA, a.topic, 0, 21, "old") // behind; p1 has no target commit
	testkit.Commit(t, a.srcAdm, gB, a.topic, 0, 10, "mb")
	testkit.Commit(t, a.srcAdm, gB, a.topic, 1, 35, "mb")
	stopB := testkit.JoinGroup(t, a.src, gB, a.topic)

	backup := filepath.Join(t.TempDir(), "cutover.json")
	ev := &events{}
	var afterA []string
	fc := FollowConfig{Apply: true, Backup: backup, Interval: 50 * time.Millisecond, OnEvent: func(e FollowEvent) {
		ev.add(e)
		if e.Group == gA && e.State == FollowExact {
			afterA = backupOffsets(t, backup)
			stopB() // the second group stops on the source now
		}
	}}
	fr, err := Follow(testCtx(t), a.src, a.dst, Config{Groups: groupsRe(gA, gB)}, fc)
	if err != nil {
		t.Fatalf("Follow: %v%s", err, ev)
	}
	if !fr.Done || fr.TimedOut || fr.Stuck {
		t.Fatalf("result: done %v timed out %v stuck %v, want done; left %v%s", fr.Done, fr.TimedOut, fr.Stuck, fr.Left(), ev)
	}
	wantA := []string{gA + " " + a.topic + "/0 21->35", gA + " " + a.topic + "/1 null->25"}
	if strings.Join(afterA, ",") != strings.Join(wantA, ",") {
		t.Errorf("backup after the first group: got %v, want %v", afterA, wantA)
	}
	want := append(wantA, gB+" "+a.topic+"/0 null->10", gB+" "+a.topic+"/1 null->35")
	if got := backupOffsets(t, backup); strings.Join(got, ",") != strings.Join(want, ",") {
		t.Errorf("final backup: got %v, want %v", got, want)
	}
	iWait, iA, iB := ev.index(gB, FollowWaiting, "still run on the source"), ev.index(gA, FollowExact, "ready on the target, exactly"), ev.index(gB, FollowExact, "ready on the target, exactly")
	if iWait < 0 || iA < 0 || iB < 0 || !(iWait < iB && iA < iB) {
		t.Errorf("events: want %s waiting, then ready after %s was ready; got%s", gB, gA, ev)
	}
	for _, g := range []string{gA, gB} {
		if fg := followGroup(t, fr, g); fg.State != FollowExact || fg.Applied != 1 {
			t.Errorf("group %s: got %+v, want exact, applied once", g, fg)
		}
	}
	for _, c := range []struct {
		g    string
		p    int32
		want int64
		meta string
	}{{gA, 0, 35, "ma"}, {gA, 1, 25, "ma"}, {gB, 0, 10, "mb"}, {gB, 1, 35, "mb"}} {
		if at, meta, ok := testkit.Committed(t, a.dstAdm, c.g, a.topic, c.p); !ok || at != c.want || meta != c.meta {
			t.Errorf("%s p%d on the target: got %d %q (exists %v), want %d %q", c.g, c.p, at, meta, ok, c.want, c.meta)
		}
	}
	if fr.Backup != backup || !fr.Applied || len(fr.Groups) != 2 {
		t.Errorf("result: backup %q applied %v groups %d, want %q, true, 2", fr.Backup, fr.Applied, len(fr.Groups), backup)
	}
	entries, _ := os.ReadDir(filepath.Dir(backup))
	if len(entries) != 1 {
		t.Errorf("backup directory: got %d files, want only the backup (no temporary file left)", len(entries))
	}

	rb, err := Rollback(testCtx(t), a.dst, backup, RollbackConfig{})
	if err != nil {
		t.Fatalf("Rollback: %v", err)
	}
	if at, meta, ok := testkit.Committed(t, a.dstAdm, gA, a.topic, 0); !ok || at != 21 || meta != "old" {
		t.Errorf("%s p0 after rollback: got %d %q (exists %v), want 21 old", gA, at, meta, ok)
	}
	for _, c := range []struct {
		g string
		p int32
	}{{gA, 1}, {gB, 0}, {gB, 1}} {
		if at, _, ok := testkit.Committed(t, a.dstAdm, c.g, a.topic, c.p); ok {
			t.Errorf("%s p%d after rollback: got %d, want no commit (rollback %+v)", c.g, c.p, at, rb.Groups)
		}
	}
}

// A group whose commit is past what the mirror copied waits (pending) and is applied once the
// mirror passes it.
func TestFollowWaitsForTheMirror(t *testing.T) {
	a := newApplyEnv(t)
	g := "follow-pending-" + a.topic
	onTarget(t, a, g)
	testkit.Produce(t, a.src, a.topic, 1, values("v", 40, 50)...) // not mirrored yet
	testkit.Commit(t, a.srcAdm, g, a.topic, 1, 45, "")
	ev := &events{}
	mirrored := false
	fc := FollowConfig{Apply: true, Backup: filepath.Join(t.TempDir(), "b.json"), Interval: 50 * time.Millisecond, OnEvent: ev.add,
		OnProgress: func(p FollowProgress) {
			if p.Waiting == 1 && !mirrored {
				mirrored = true
				mirrorTopic(t, a.env, a.topic, a.topic, 1, step{40, 50})
			}
		}}
	fr, err := Follow(testCtx(t), a.src, a.dst, Config{Groups: groupsRe(g)}, fc)
	if err != nil || !fr.Done {
		t.Fatalf("Follow: %v, done %v, left %v%s", err, fr.Done, fr.Left(), ev)
	}
	if ev.index(g, FollowWaiting, "pending") < 0 || ev.index(g, FollowExact, "committed 45") < 0 {
		t.Errorf("events: want waiting (pending), then ready with 45 committed; got%s", ev)
	}
	if at, _, _ := testkit.Committed(t, a.dstAdm, g, a.topic, 1); at != 45 {
		t.Errorf("target commit: got %d, want 45", at)
	}
}

// A group with members on the target is reported and never touched; the other group is
// applied; the run ends (exit 1 in the command) when only that group is left.
func TestFollowLeavesTargetGroupWithMembers(t *testing.T) {
	a := newApplyEnv(t)
	gC, gD := "follow-c-"+a.topic, "follow-d-"+a.topic
	onTarget(t, a, gD)
	testkit.Commit(t, a.srcAdm, gC, a.topic, 0, 30, "")
	testkit.Commit(t, a.dstAdm, gC, a.topic, 0, 21, "")
	testkit.JoinGroup(t, a.dst, gC, a.topic) // someone switched its consumers already
	testkit.Commit(t, a.srcAdm, gD, a.topic, 0, 30, "")
	backup := filepath.Join(t.TempDir(), "b.json")
	ev := &events{}
	fr, err := Follow(testCtx(t), a.src, a.dst, Config{Groups: groupsRe(gC, gD)}, FollowConfig{Apply: true, Backup: backup, Interval: 50 * time.Millisecond, OnEvent: ev.add})
	if err != nil {
		t.Fatalf("Follow: %v%s", err, ev)
	}
	c := followGroup(t, fr, gC)
	if fr.Done || !fr.Stuck || c.State != FollowBlocked || !c.Final || !strings.Contains(c.Why, "members on the target") {
		t.Errorf("result: done %v stuck %v, %s %+v; want stuck, %s blocked for the run (members on the target)", fr.Done, fr.Stuck, gC, c, gC)
	}
	if d := followGroup(t, fr, gD); d.State != FollowExact {
		t.Errorf("%s: got %+v, want exact", gD, d)
	}
	if at, _, _ := testkit.Committed(t, a.dstAdm, gC, a.topic, 0); at != 21 {
		t.Errorf("%s on the target: got %d, want 21 (untouched)", gC, at)
	}
	if got := backupOffsets(t, backup); len(got) != 1 || !strings.HasPrefix(got[0], gD+" ") {
		t.Errorf("backup: got %v, want %s only", got, gD)
	}
	if left := strings.Join(fr.Left(), ";"); !strings.Contains(left, gC) || strings.Contains(left, gD) {
		t.Errorf("left: got %q, want %s only", left, gC)
	}
}

// At the timeout the run ends with what is left and why; nothing was written.
func TestFollowTimeout(t *testing.T) {
	a := newApplyEnv(t)
	g := "follow-busy-" + a.topic
	onTarget(t, a, g)
	testkit.Commit(t, a.srcAdm, g, a.topic, 0, 30, "")
	testkit.JoinGroup(t, a.src, g, a.topic)
	backup := filepath.Join(t.TempDir(), "b.json")
	start := time.Now()
	fr, err := Follow(testCtx(t), a.src, a.dst, Config{Groups: groupsRe(g)}, FollowConfig{Apply: true, Backup: backup, Interval: 50 * time.Millisecond, Timeout: 400 * time.Millisecond})
	if err != nil {
		t.Fatalf("Follow: %v", err)
	}
	if !fr.TimedOut || fr.Done || time.Since(start) < 400*time.Millisecond || fr.Rounds < 2 {
		t.Errorf("result: timed out %v done %v after %s and %d rounds, want timed out after 400ms and several rounds", fr.TimedOut, fr.Done, time.Since(start), fr.Rounds)
	}
	if left := strings.Join(fr.Left(), ";"); !strings.Contains(left, g+" (waiting: its consumers still run on the source") {
		t.Errorf("left: got %q, want %s waiting for its consumers on the source", left, g)
	}
	if _, err := os.Stat(backup); err == nil {
		t.Errorf("backup %s written, want none (nothing was applied)", backup)
	}
	if _, _, ok := testkit.Committed(t, a.dstAdm, g, a.topic, 0); ok {
		t.Errorf("target commit written, want none")
	}
}

// A run killed between the backup of a step and its commit leaves a valid backup; run again
// with the same file, it extends it, and a rollback of the file restores every group.
func TestFollowInterruptedAndRerun(t *testing.T) {
	a := newApplyEnv(t)
	gA, gB := "follow-ka-"+a.topic, "follow-kb-"+a.topic
	testkit.Commit(t, a.srcAdm, gA, a.topic, 0, 30, "")
	testkit.Commit(t, a.dstAdm, gA, a.topic, 0, 21, "old-a")
	testkit.Commit(t, a.srcAdm, gB, a.topic, 1, 35, "")
	testkit.Commit(t, a.dstAdm, gB, a.topic, 1, 7, "old-b")
	backup := filepath.Join(t.TempDir(), "b.json")
	cfg := Config{Groups: groupsRe(gA, gB)}

	ctx, cancel := context.WithCancel(testCtx(t))
	fc := FollowConfig{Apply: true, Backup: backup, Interval: 50 * time.Millisecond, BeforeCommit: func(g string) {
		if g == gB {
			cancel() // killed after the backup of gB's step, before its commit
		}
	}}
	if _, err := Follow(ctx, a.src, a.dst, cfg, fc); err == nil {
		t.Fatalf("interrupted Follow: got no error")
	}
	if got := backupOffsets(t, backup); len(got) != 2 {
		t.Fatalf("backup after the interruption: got %v, want both groups' entries", got)
	}
	if at, _, _ := testkit.Committed(t, a.dstAdm, gB, a.topic, 1); at != 7 {
		t.Fatalf("%s: got %d, want 7 (its commit never happened)", gB, at)
	}

	ev := &events{}
	fc.BeforeCommit, fc.OnEvent = nil, ev.add
	fr, err := Follow(testCtx(t), a.src, a.dst, cfg, fc)
	if err != nil || !fr.Done {
		t.Fatalf("rerun: %v, done %v, left %v%s", err, fr.Done, fr.Left(), ev)
	}
	if ev.index("", "", "extending the backup") < 0 || ev.index(gA, FollowExact, "already exact") < 0 {
		t.Errorf("rerun events: want the backup extended and %s already exact; got%s", gA, ev)
	}
	want := []string{gA + " " + a.topic + "/0 21->35", gB + " " + a.topic + "/1 7->35"}
	if got := backupOffsets(t, backup); strings.Join(got, ",") != strings.Join(want, ",") {
		t.Errorf("backup after the rerun: got %v, want %v", got, want)
	}
	if _, err := Rollback(testCtx(t), a.dst, backup, RollbackConfig{}); err != nil {
		t.Fatalf("Rollback: %v", err)
	}
	for _, c := range []struct {
		g    string
		p    int32
		want int64
		meta string
	}{{gA, 0, 21, "old-a"}, {gB, 1, 7, "old-b"}} {
		if at, meta, _ := testkit.Committed(t, a.dstAdm, c.g, a.topic, c.p); at != c.want || meta != c.meta {
			t.Errorf("%s after rollback: got %d %q, want %d %q", c.g, at, meta, c.want, c.meta)
		}
	}

	// A backup of other clusters is never extended.
	if _, err := Follow(testCtx(t), a.dst, a.src, cfg, fc); err == nil || !strings.Contains(err.Error(), "belongs to other clusters") {
		t.Errorf("Follow with the clusters swapped and the same backup: got %v, want a refusal", err)
	}
}

// A group made exact is written again only when its source group moved and the target is
// still what Follow wrote; once it consumed on the target it is never rewritten.
func TestFollowAppliesAgainOnlyWhileUntouched(t *testing.T) {
	a := newApplyEnv(t)
	gA, gT, gBusy := "follow-ra-"+a.topic, "follow-rt-"+a.topic, "follow-rbusy-"+a.topic
	onTarget(t, a, gA, gT, gBusy)
	testkit.Commit(t, a.srcAdm, gA, a.topic, 1, 20, "")
	testkit.Commit(t, a.srcAdm, gT, a.topic, 1, 20, "")
	testkit.Commit(t, a.srcAdm, gBusy, a.topic, 1, 5, "")
	stopBusy := testkit.JoinGroup(t, a.src, gBusy, a.topic) // keeps the run going
	backup := filepath.Join(t.TempDir(), "b.json")
	ev := &events{}
	moved := false
	fc := FollowConfig{Apply: true, Backup: backup, Interval: 50 * time.Millisecond, OnEvent: ev.add,
		OnProgress: func(p FollowProgress) {
			switch {
			case p.Exact == 2 && !moved:
				moved = true
				testkit.Commit(t, a.srcAdm, gA, a.topic, 1, 30, "") // consumed again on the source
				testkit.Commit(t, a.srcAdm, gT, a.topic, 1, 30, "")
				testkit.Commit(t, a.dstAdm, gT, a.topic, 1, 22, "") // and gT consumed on the target
			case moved && ev.index(gA, FollowExact, "committed 30") >= 0:
				stopBusy()
			}
		}}
	fr, err := Follow(testCtx(t), a.src, a.dst, Config{Groups: groupsRe(gA, gT, gBusy)}, fc)
	if err != nil || !fr.Done {
		t.Fatalf("Follow: %v, done %v, left %v%s", err, fr.Done, fr.Left(), ev)
	}
	if got := followGroup(t, fr, gA); got.Applied != 2 {
		t.Errorf("%s: applied %d times, want 2 (the source moved, the target was untouched)", gA, got.Applied)
	}
	if at, _, _ := testkit.Committed(t, a.dstAdm, gA, a.topic, 1); at != 30 {
		t.Errorf("%s on the target: got %d, want 30", gA, at)
	}
	if at, _, _ := testkit.Committed(t, a.dstAdm, gT, a.topic, 1); at != 22 {
		t.Errorf("%s on the target: got %d, want 22 (it consumed there: never rewritten)", gT, at)
	}
	if got := followGroup(t, fr, gT); got.State != FollowExact || !got.Final || got.Applied != 1 {
		t.Errorf("%s: got %+v, want exact, final, applied once", gT, got)
	}
	// The backup keeps gA's offset from before the run (none) with the last commit.
	if got := backupOffsets(t, backup); !strings.Contains(strings.Join(got, ","), gA+" "+a.topic+"/1 null->30") {
		t.Errorf("backup: got %v, want %s null->30", got, gA)
	}
}
