package reconcile

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// stateDir writes an application's state directory under a new state.dir: files maps a path
// relative to state.dir/<app> to its .checkpoint entries.
func stateDir(t *testing.T, app string, files map[string][]StateOffset) (stateDirPath string) {
	t.Helper()
	root := t.TempDir()
	for rel, offs := range files {
		path := filepath.Join(root, app, rel)
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, FormatCheckpoint(offs), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return root
}

func readCheckpoint(t *testing.T, path string) string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// TestStateDirRewrite: a state directory kept from the source is translated entry by entry to
// E(o+1)-1 (Kafka Streams restores from the entry plus one, so the store resumes at E(o+1)),
// with the replay of the fixture's copy accounted for; an "unknown" entry is kept; the
// rewrite writes a backup first; a rollback restores the files exactly.
func TestStateDirRewrite(t *testing.T) {
	a := newStreamsApp(t, 30, 2) // the copy of changelog record k >= 20 is at k+8
	root := stateDir(t, a.id, map[string][]StateOffset{
		"0_0/.checkpoint": {{a.changelog, 0, 29}},
		"0_1/.checkpoint": {{a.changelog, 1, 9}, {a.changelog, 0, -4}},
	})
	sp, err := PlanStateDir(testCtx(t), a.src, a.dst, Config{}, root, a.id)
	if err != nil {
		t.Fatalf("PlanStateDir: %v", err)
	}
	if !sp.Ready {
		t.Fatalf("not ready: %v", sp.Problems)
	}
	before := map[string]string{}
	for _, f := range sp.Files {
		before[f.Path] = readCheckpoint(t, filepath.Join(sp.Dir, f.Path))
	}
	backup := filepath.Join(t.TempDir(), "state.json")
	if err := ApplyStateDir(sp, backup); err != nil {
		t.Fatalf("ApplyStateDir: %v", err)
	}
	want := map[string]string{
		// E(30) = 38: the store resumes after the copy of record 29, at 37.
		"0_0/.checkpoint": "0\n1\n" + a.changelog + " 0 37\n",
		// E(10) = 10 (the replay starts at 12); -4 kept.
		"0_1/.checkpoint": "0\n2\n" + a.changelog + " 1 9\n" + a.changelog + " 0 -4\n",
	}
	for rel, w := range want {
		if got := readCheckpoint(t, filepath.Join(sp.Dir, rel)); got != w {
			t.Errorf("%s after the rewrite:\n%q\nwant\n%q", rel, got, w)
		}
	}
	if !sp.Applied || sp.Backup != backup {
		t.Errorf("applied %v, backup %q", sp.Applied, sp.Backup)
	}
	rb, err := RollbackStateDir(backup)
	// 0_1's entries are the same on the target (9 -> 9, -4 kept): it reads as never changed.
	if err != nil || strings.Join(rb.Restored, ",") != "0_0/.checkpoint" || strings.Join(rb.Unchanged, ",") != "0_1/.checkpoint" {
		t.Fatalf("RollbackStateDir: %+v, %v", rb, err)
	}
	for rel, w := range before {
		if got := readCheckpoint(t, filepath.Join(sp.Dir, rel)); got != w {
			t.Errorf("%s after the rollback: %q, want %q", rel, got, w)
		}
	}
}

// TestStateDirRollbackKeepsLaterWrites: once the application has run on the rewritten
// directory (a file holds what it wrote since), a rollback restores nothing and names it.
func TestStateDirRollbackKeepsLaterWrites(t *testing.T) {
	a := newStreamsApp(t, 30, 2)
	root := stateDir(t, a.id, map[string][]StateOffset{
		"0_0/.checkpoint": {{a.changelog, 0, 29}},
		"0_1/.checkpoint": {{a.changelog, 1, 29}},
	})
	sp, err := PlanStateDir(testCtx(t), a.src, a.dst, Config{}, root, a.id)
	if err != nil || !sp.Ready {
		t.Fatalf("PlanStateDir: %+v, %v", sp, err)
	}
	backup := filepath.Join(t.TempDir(), "state.json")
	if err := ApplyStateDir(sp, backup); err != nil {
		t.Fatalf("ApplyStateDir: %v", err)
	}
	later := string(FormatCheckpoint([]StateOffset{{a.changelog, 1, 60}}))
	if err := os.WriteFile(filepath.Join(sp.Dir, "0_1/.checkpoint"), []byte(later), 0o644); err != nil {
		t.Fatal(err)
	}
	written := readCheckpoint(t, filepath.Join(sp.Dir, "0_0/.checkpoint"))
	_, err = RollbackStateDir(backup)
	if !errors.Is(err, ErrStateMoved) || !strings.Contains(err.Error(), "0_1/.checkpoint") {
		t.Fatalf("RollbackStateDir: %v, want ErrStateMoved naming 0_1/.checkpoint", err)
	}
	if got := readCheckpoint(t, filepath.Join(sp.Dir, "0_0/.checkpoint")); got != written {
		t.Errorf("0_0/.checkpoint restored in part: %q, want it left as written %q", got, written)
	}
	if got := readCheckpoint(t, filepath.Join(sp.Dir, "0_1/.checkpoint")); got != later {
		t.Errorf("0_1/.checkpoint: %q, want what the application wrote %q", got, later)
	}
}

// TestStateDirRefusals: nothing is written when one entry's target offset is not known (the
// changelog is not copied past it), when a file changed since the plan, or for a group that is
// no application.
func TestStateDirRefusals(t *testing.T) {
	t.Run("entry not known", func(t *testing.T) {
		a := newStreamsApp(t, 20, 2) // changelog partition 1 copied up to 20 only
		root := stateDir(t, a.id, map[string][]StateOffset{
			"0_0/.checkpoint": {{a.changelog, 0, 29}},
			"0_1/.checkpoint": {{a.changelog, 1, 29}},
		})
		sp, err := PlanStateDir(testCtx(t), a.src, a.dst, Config{}, root, a.id)
		if err != nil {
			t.Fatalf("PlanStateDir: %v", err)
		}
		if sp.Ready || !strings.Contains(strings.Join(sp.Problems, "; "), "0_1/.checkpoint: "+a.changelog+"/1 offset 29: the target offset is not known") {
			t.Fatalf("ready %v, problems %v; want not ready naming 0_1/.checkpoint", sp.Ready, sp.Problems)
		}
		before := readCheckpoint(t, filepath.Join(sp.Dir, "0_0/.checkpoint"))
		backup := filepath.Join(t.TempDir(), "state.json")
		if err := ApplyStateDir(sp, backup); err == nil {
			t.Fatal("ApplyStateDir rewrote a directory that is not ready")
		}
		if got := readCheckpoint(t, filepath.Join(sp.Dir, "0_0/.checkpoint")); got != before {
			t.Errorf("0_0/.checkpoint changed: %q", got)
		}
		if _, err := os.Stat(backup); err == nil {
			t.Error("a backup was written for nothing")
		}
	})
	t.Run("file changed since the plan", func(t *testing.T) {
		a := newStreamsApp(t, 30, 2)
		root := stateDir(t, a.id, map[string][]StateOffset{"0_0/.checkpoint": {{a.changelog, 0, 29}}})
		sp, err := PlanStateDir(testCtx(t), a.src, a.dst, Config{}, root, a.id)
		if err != nil || !sp.Ready {
			t.Fatalf("PlanStateDir: %+v, %v", sp, err)
		}
		moved := string(FormatCheckpoint([]StateOffset{{a.changelog, 0, 25}}))
		if err := os.WriteFile(filepath.Join(sp.Dir, "0_0/.checkpoint"), []byte(moved), 0o644); err != nil {
			t.Fatal(err)
		}
		if err := ApplyStateDir(sp, filepath.Join(t.TempDir(), "state.json")); err == nil || !strings.Contains(err.Error(), "changed since it was planned") {
			t.Fatalf("ApplyStateDir: %v, want a refusal", err)
		}
		if got := readCheckpoint(t, filepath.Join(sp.Dir, "0_0/.checkpoint")); got != moved {
			t.Errorf("0_0/.checkpoint: %q, want %q", got, moved)
		}
	})
	t.Run("no application", func(t *testing.T) {
		a := newStreamsApp(t, 30, 2)
		root := stateDir(t, "orders", map[string][]StateOffset{"0_0/.checkpoint": {{a.input, 0, 10}}})
		sp, err := PlanStateDir(testCtx(t), a.src, a.dst, Config{}, root, "orders")
		if err != nil {
			t.Fatalf("PlanStateDir: %v", err)
		}
		if sp.Ready || len(sp.Problems) == 0 {
			t.Fatalf("ready %v, problems %v: a group that does not exist is no application", sp.Ready, sp.Problems)
		}
	})
	t.Run("offsets inside the stores", func(t *testing.T) {
		// Kafka Streams 4.3 and later (KIP-1035) write no .checkpoint file: a RocksDB store
		// keeps its changelog offsets itself, and a kept directory is not "restored whole".
		root := t.TempDir()
		for _, d := range []string{"wc/1_0/rocksdb/counts", "wc/1_2/rocksdb/counts", "wc/0_0"} {
			if err := os.MkdirAll(filepath.Join(root, d), 0o755); err != nil {
				t.Fatal(err)
			}
		}
		sp, err := PlanStateDir(testCtx(t), nil, nil, Config{}, root, "wc")
		if err != nil {
			t.Fatalf("PlanStateDir: %v", err)
		}
		why := strings.Join(sp.Problems, "; ")
		if sp.Ready || !strings.Contains(why, "2 persistent stores (1_0/counts, 1_2/counts)") || !strings.Contains(why, "KIP-1035") || strings.Contains(why, "restores its whole changelog") {
			t.Fatalf("ready %v, problems %v; want a refusal naming the stores that keep their own offsets", sp.Ready, sp.Problems)
		}
		if err := ApplyStateDir(sp, filepath.Join(t.TempDir(), "state.json")); err == nil {
			t.Fatal("ApplyStateDir rewrote a directory that is not ready")
		}
	})
}

// TestParseCheckpoint: the format Kafka Streams writes, and what is refused.
func TestParseCheckpoint(t *testing.T) {
	offs, err := ParseCheckpoint([]byte("0\n2\nt-changelog 0 41\nt-changelog 3 -4\n"))
	if err != nil || len(offs) != 2 || offs[0] != (StateOffset{"t-changelog", 0, 41}) || offs[1].Offset != -4 {
		t.Fatalf("ParseCheckpoint: %v, %v", offs, err)
	}
	if got := string(FormatCheckpoint(offs)); got != "0\n2\nt-changelog 0 41\nt-changelog 3 -4\n" {
		t.Errorf("FormatCheckpoint: %q", got)
	}
	for _, bad := range []string{"1\n1\nt 0 1\n", "0\n2\nt 0 1\n", "0\n1\nt 0\n", "0\n1\nt x 1\n", "0\n1\nt -1 1\n", ""} {
		if _, err := ParseCheckpoint([]byte(bad)); err == nil {
			t.Errorf("ParseCheckpoint(%q) accepted", bad)
		}
	}
}
