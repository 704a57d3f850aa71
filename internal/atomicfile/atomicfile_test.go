package atomicfile

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"testing"
)

func read(t *testing.T, path string) string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("read %s: %v", path, err)
	}
	return string(b)
}

// entries lists the directory, so a test sees a temporary file left behind.
func entries(t *testing.T, dir string) []string {
	t.Helper()
	es, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, e := range es {
		names = append(names, e.Name())
	}
	return names
}

func TestReplace(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "out.json")
	if err := os.WriteFile(path, []byte("old"), 0o600); err != nil {
		t.Fatal(err)
	}
	f, err := Create(path, 0o640)
	if err != nil {
		t.Fatalf("Create: %v", err)
	}
	defer f.Discard()
	if _, err := f.Write([]byte("new")); err != nil {
		t.Fatalf("Write: %v", err)
	}
	if err := f.Finish(); err != nil {
		t.Fatalf("Finish: %v", err)
	}
	if got := read(t, path); got != "old" {
		t.Errorf("before Replace the path holds %q, want the old content", got)
	}
	if err := f.Replace(); err != nil {
		t.Fatalf("Replace: %v", err)
	}
	if got := read(t, path); got != "new" {
		t.Errorf("after Replace: got %q, want %q", got, "new")
	}
	if st, err := os.Stat(path); err != nil || st.Mode().Perm() != 0o640 {
		t.Errorf("mode: got %v (%v), want 0640", st.Mode().Perm(), err)
	}
	f.Discard() // after placing: leaves the file alone
	if got := entries(t, dir); len(got) != 1 || got[0] != "out.json" {
		t.Errorf("directory: got %v, want only out.json", got)
	}
	if err := SyncDir(path); err != nil {
		t.Errorf("SyncDir: %v", err)
	}
}

func TestLinkNeverReplaces(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "backup.json")
	f, err := Create(path, 0o600)
	if err != nil {
		t.Fatalf("Create: %v", err)
	}
	f.Write([]byte("first"))
	// A file appears at the path after Create: Link must not replace it.
	if err := os.WriteFile(path, []byte("someone else's"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := f.Link(); !errors.Is(err, fs.ErrExist) {
		t.Fatalf("Link over an existing file: got %v, want fs.ErrExist", err)
	}
	f.Discard()
	if got := read(t, path); got != "someone else's" {
		t.Errorf("existing file: got %q, want it untouched", got)
	}
	if got := entries(t, dir); len(got) != 1 {
		t.Errorf("directory: got %v, want only backup.json (no temporary file left)", got)
	}

	os.Remove(path)
	g, err := Create(path, 0o600)
	if err != nil {
		t.Fatalf("Create: %v", err)
	}
	defer g.Discard()
	g.Write([]byte("second"))
	if err := g.Link(); err != nil {
		t.Fatalf("Link to a free path: %v", err)
	}
	if got := read(t, path); got != "second" {
		t.Errorf("after Link: got %q, want %q", got, "second")
	}
	if got := entries(t, dir); len(got) != 1 {
		t.Errorf("directory: got %v, want only backup.json (the temporary name removed)", got)
	}
}

func TestDiscardLeavesNothing(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "out")
	f, err := Create(path, 0o644)
	if err != nil {
		t.Fatalf("Create: %v", err)
	}
	f.Write([]byte("half"))
	f.Discard()
	f.Discard()
	if got := entries(t, dir); len(got) != 0 {
		t.Errorf("directory after Discard: got %v, want empty", got)
	}
	if err := f.Replace(); err == nil {
		t.Error("Replace after Discard: got no error")
	}
	if _, err := os.Stat(path); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("path after a discarded write: got %v, want it absent", err)
	}
}

func TestCreateInMissingDirectory(t *testing.T) {
	if _, err := Create(filepath.Join(t.TempDir(), "no", "such", "dir", "f"), 0o644); err == nil {
		t.Error("Create in a missing directory: got no error")
	}
}
