package main

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/kmigrate/kmigrate/offsetmap"
	"github.com/kmigrate/kmigrate/reconcile"
)

// applied runs groups --apply on the seed bed (E = 25) and returns the backup file.
func applied(t *testing.T, b *bed) string {
	t.Helper()
	backup := filepath.Join(t.TempDir(), "b.json")
	code, _, errOut := run(t, "groups", "--source-brokers", b.srcSeeds, "--target-brokers", b.dstSeeds, "--apply", "--backup", backup, "--format", "json")
	if code != 0 {
		t.Fatalf("apply exit: got %d, want 0 (stderr %q)", code, errOut)
	}
	if got := targetCommit(t, b.dst, b.group, b.topic); got != 25 {
		t.Fatalf("after --apply: target commit got %d, want 25", got)
	}
	return backup
}

// An offset map written by kverify diff --from above G does not cover G: the
// local alignment decides, and --apply commits E(G), not the copy of the first record it maps.
func TestGroupsOffsetMapNotCoveringG(t *testing.T) {
	b := seedBed(t)
	om := &offsetmap.TopicMap{SourceTopic: b.topic, TargetTopic: b.topic, Partitions: []*offsetmap.PartitionMap{{
		Partition: 0, SourceFrom: 22, SourceTo: 30, TargetTo: 35, Segments: []offsetmap.Segment{{Source: 22, Target: 27, Len: 8}}}}}
	path := filepath.Join(t.TempDir(), "map.json")
	f, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	if err := offsetmap.Write(f, om); err != nil {
		t.Fatal(err)
	}
	f.Close()
	code, out, errOut := run(t, "groups", "--source-brokers", b.srcSeeds, "--target-brokers", b.dstSeeds, "--offset-map", path,
		"--apply", "--backup", filepath.Join(t.TempDir(), "b.json"), "--format", "json")
	if code != 0 {
		t.Errorf("exit: got %d, want 0 (stderr %q)", code, errOut)
	}
	if got := targetCommit(t, b.dst, b.group, b.topic); got != 25 {
		t.Fatalf("target commit: got %d, want 25 = E(20); above it the group skips records (output %s)", got, out)
	}
	if !strings.Contains(out, "offset map not used") {
		t.Errorf("output: want the proof to say the offset map was not used:\n%s", out)
	}
}

// Rollback with --target-brokers at the source is refused, nothing written.
func TestRollbackRefusesSourceCluster(t *testing.T) {
	b := seedBed(t)
	backup := applied(t, b)
	code, out, errOut := run(t, "rollback", "--target-brokers", b.srcSeeds, "--backup", backup)
	if code != 2 {
		t.Errorf("exit: got %d, want 2 (stdout %q)", code, out)
	}
	for _, want := range []string{"source cluster", "kfake-source", "kfake-target"} {
		if !strings.Contains(errOut, want) {
			t.Errorf("stderr %q: want %q", errOut, want)
		}
	}
	if got := targetCommit(t, b.src, b.group, b.topic); got != 20 {
		t.Errorf("source commit: got %d, want 20 (untouched)", got)
	}
	if got := targetCommit(t, b.dst, b.group, b.topic); got != 25 {
		t.Errorf("target commit: got %d, want 25 (untouched)", got)
	}
}

// After apply the group consumed on the target; rollback keeps that, exit 1,
// unless --force.
func TestRollbackKeepsProgressCLI(t *testing.T) {
	b := seedBed(t)
	backup := applied(t, b)
	commitAt(t, b.dst, b.group, b.topic, 28, "consumed")
	code, out, errOut := run(t, "rollback", "--target-brokers", b.dstSeeds, "--backup", backup)
	if code != 1 {
		t.Errorf("exit: got %d, want 1 (stderr %q)", code, errOut)
	}
	if !strings.Contains(out+errOut, "orders/0") || !strings.Contains(out+errOut, "--force") {
		t.Errorf("output: want orders/0 and --force named:\n%s\n%s", out, errOut)
	}
	if got := targetCommit(t, b.dst, b.group, b.topic); got != 28 {
		t.Errorf("target commit: got %d, want 28 (progress kept)", got)
	}
	code, out, errOut = run(t, "rollback", "--target-brokers", b.dstSeeds, "--backup", backup, "--force")
	if code != 0 {
		t.Errorf("--force exit: got %d, want 0 (%s %s)", code, out, errOut)
	}
	if got := targetCommit(t, b.dst, b.group, b.topic); got != 16 {
		t.Errorf("target commit after --force: got %d, want 16", got)
	}
}

// Malformed and old backups exit 2 and write nothing.
func TestRollbackRefusesBadBackup(t *testing.T) {
	b := seedBed(t)
	backup := applied(t, b)
	good, err := os.ReadFile(backup)
	if err != nil {
		t.Fatal(err)
	}
	v1 := `{"version": 1, "created": "2026-01-01T00:00:00Z", "entries": [{"group": "orders-app", "topic": "orders", "partition": 0, "offset": 16, "metadata": "m"}]}`
	tests := []struct {
		name, text string
		args       []string
		wantCode   int
		wantErr    string
		wantAfter  int64
	}{
		{name: "negative offset", text: strings.Replace(string(good), `"offset": 16`, `"offset": -16`, 1), wantCode: 2, wantErr: "negative", wantAfter: 25},
		{name: "empty group", text: strings.Replace(string(good), `"group": "orders-app"`, `"group": ""`, 1), wantCode: 2, wantErr: "empty group", wantAfter: 25},
		{name: "unknown version", text: strings.Replace(string(good), fmt.Sprintf(`"version": %d`, reconcile.BackupVersion), `"version": 9`, 1), wantCode: 2, wantErr: "version 9", wantAfter: 25},
		{name: "trailing bytes", text: string(good) + `{"entries": []}`, wantCode: 2, wantErr: "after the JSON", wantAfter: 25},
		{name: "old backup without cluster IDs", text: v1, wantCode: 2, wantErr: "--legacy-cluster-id kfake-target", wantAfter: 25},
		{name: "old backup vouched for, group moved since", text: v1, args: []string{"--legacy-cluster-id", "kfake-target"}, wantCode: 1, wantErr: "--force", wantAfter: 25},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if tc.text == string(good) {
				t.Fatalf("the test's edit did not apply: backup is\n%s", good)
			}
			path := filepath.Join(t.TempDir(), "bad.json")
			if err := os.WriteFile(path, []byte(tc.text), 0o600); err != nil {
				t.Fatal(err)
			}
			code, out, errOut := run(t, append([]string{"rollback", "--target-brokers", b.dstSeeds, "--backup", path}, tc.args...)...)
			// The path names the test: look at the output without it.
			if code != tc.wantCode || !strings.Contains(strings.ReplaceAll(out+errOut, path, "FILE"), tc.wantErr) {
				t.Errorf("got exit %d, stdout %q, stderr %q; want exit %d and %q", code, out, errOut, tc.wantCode, tc.wantErr)
			}
			if got := targetCommit(t, b.dst, b.group, b.topic); got != tc.wantAfter {
				t.Errorf("target commit: got %d, want %d (nothing written)", got, tc.wantAfter)
			}
		})
	}
}

// A commit the target refuses exits 2 naming the partition and the error.
func TestGroupsApplyCommitFails(t *testing.T) {
	b := seedBed(t)
	h := b.dstK.Fault(kfake.Fault{Keys: []kmsg.Key{kmsg.OffsetCommit}, Topic: b.topic, Err: kerr.TopicAuthorizationFailed, Count: -1})
	defer h.Remove()
	code, out, errOut := run(t, "groups", "--source-brokers", b.srcSeeds, "--target-brokers", b.dstSeeds, "--apply", "--backup", filepath.Join(t.TempDir(), "b.json"), "--format", "json")
	if code != 2 {
		t.Errorf("exit: got %d, want 2", code)
	}
	for _, want := range []string{"orders/0", "TOPIC_AUTHORIZATION_FAILED", "orders-app"} {
		if !strings.Contains(errOut, want) {
			t.Errorf("stderr %q: want %q", errOut, want)
		}
	}
	if !strings.Contains(out, `"apply_error"`) {
		t.Errorf("JSON: want the partition's apply_error:\n%s", out)
	}
	if got := targetCommit(t, b.dst, b.group, b.topic); got != 16 {
		t.Errorf("target commit: got %d, want 16", got)
	}
}

func TestRollbackHelp(t *testing.T) {
	code, out, _ := run(t, "rollback", "--help")
	if code != 0 {
		t.Fatalf("help exit: got %d, want 0", code)
	}
	for _, want := range []string{"--force", "--legacy-cluster-id", "cluster ID", "Exit status", "moved since"} {
		if !strings.Contains(out, want) {
			t.Errorf("rollback --help: %q missing", want)
		}
	}
}
