package main

import (
	"encoding/json"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/kmigrate/kmigrate/internal/testkit"
	"github.com/kmigrate/kmigrate/reconcile"
)

// groups --follow on the seed case: without --apply the group is ready and nothing is written
// (exit 1); with --apply it is committed, the event and the progress line are printed (exit 0);
// --quiet drops the progress line.
func TestFollowCommand(t *testing.T) {
	b := seedBed(t)
	conn := []string{"groups", "--source-brokers", b.srcSeeds, "--target-brokers", b.dstSeeds, "--follow", "--interval", "50ms"}

	code, _, errOut := run(t, conn...)
	if code != 1 || !strings.Contains(errOut, `group "orders-app" ready`) || !strings.Contains(errOut, "run with --apply") {
		t.Errorf("dry run: exit %d, stderr %q; want 1, the group ready, a hint to --apply", code, errOut)
	}
	if at := targetCommit(t, b.dst, b.group, b.topic); at != 16 {
		t.Errorf("dry run wrote the target: commit %d, want 16", at)
	}

	backup := filepath.Join(t.TempDir(), "cutover.json")
	code, out, errOut := run(t, append(conn, "--apply", "--backup", backup, "--format", "json")...)
	if code != 0 {
		t.Fatalf("--follow --apply: exit %d, stderr %s", code, errOut)
	}
	for _, want := range []string{`group "orders-app" is ready on the target, exactly: orders/0 committed 25 (was 16)`, "kreconcile: follow: 1 exact, 0 waiting, 0 blocked", "previous target offsets saved to " + backup} {
		if !strings.Contains(errOut, want) {
			t.Errorf("stderr: want %q in\n%s", want, errOut)
		}
	}
	var res struct {
		Groups []reconcile.Group       `json:"groups"`
		Follow []reconcile.FollowGroup `json:"follow"`
		Done   bool                    `json:"done"`
		Backup string                  `json:"backup"`
	}
	if err := json.Unmarshal([]byte(out), &res); err != nil {
		t.Fatalf("json: %v\n%s", err, out)
	}
	if !res.Done || len(res.Follow) != 1 || res.Follow[0].State != reconcile.FollowExact || len(res.Groups) != 1 || res.Backup != backup {
		t.Errorf("json: got %+v", res)
	}
	if at := targetCommit(t, b.dst, b.group, b.topic); at != 25 {
		t.Errorf("target commit after --follow --apply: %d, want 25 (the replay: the last copy of 19 is at 24)", at)
	}
	if _, err := reconcile.ReadBackup(backup); err != nil {
		t.Errorf("backup: %v", err)
	}

	// Run again, quiet: exact already, nothing written, no progress line, the backup extended
	// (nothing to add).
	code, _, errOut = run(t, append(conn, "--apply", "--backup", backup, "--quiet")...)
	if code != 0 || strings.Contains(errOut, "follow:") || !strings.Contains(errOut, "already exact") {
		t.Errorf("second run: exit %d, stderr %q; want 0, already exact, no progress line", code, errOut)
	}
}

// --timeout ends a run whose group still consumes on the source with exit 1, naming it and
// why; flags of --follow without it are usage errors.
func TestFollowCommandTimeout(t *testing.T) {
	b := seedBed(t)
	testkit.JoinGroup(t, b.src, b.group, b.topic)
	start := time.Now()
	code, _, errOut := run(t, "groups", "--source-brokers", b.srcSeeds, "--target-brokers", b.dstSeeds, "--follow", "--apply",
		"--backup", filepath.Join(t.TempDir(), "b.json"), "--interval", "50ms", "--timeout", "300ms")
	if code != 1 || !strings.Contains(errOut, "timeout after 300ms") || !strings.Contains(errOut, "orders-app (waiting: its consumers still run on the source") {
		t.Errorf("exit %d, stderr %q; want 1 and the group waiting for its source consumers", code, errOut)
	}
	if time.Since(start) < 300*time.Millisecond {
		t.Errorf("returned after %s, before the timeout", time.Since(start))
	}
	if at := targetCommit(t, b.dst, b.group, b.topic); at != 16 {
		t.Errorf("target commit: %d, want 16 (untouched)", at)
	}
	for _, args := range [][]string{{"--interval", "1s"}, {"--timeout", "1s"}, {"--quiet"}} {
		if code, _, errOut := run(t, append([]string{"groups", "--source-brokers", b.srcSeeds, "--target-brokers", b.dstSeeds}, args...)...); code != 2 || !strings.Contains(errOut, "only applies with --follow") {
			t.Errorf("%v without --follow: exit %d, stderr %q; want 2", args, code, errOut)
		}
	}
}
