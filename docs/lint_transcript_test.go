package docs_test

import (
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// TestWalkthroughLint: the `kmirror lint mm2.properties` transcript of walkthrough.md is what
// kmirror lint prints for the seed case's file (integration/testdata/seed-mm2.properties,
// copied as mm2.properties), exit status included.
func TestWalkthroughLint(t *testing.T) {
	if testing.Short() {
		t.Skip("builds kmirror")
	}
	bin := t.TempDir()
	build := exec.Command("go", "build", "-o", bin+string(filepath.Separator), "./cmd/kmirror")
	build.Dir = ".."
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	seed, err := os.ReadFile("../integration/testdata/seed-mm2.properties")
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "mm2.properties"), seed, 0o600); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(filepath.Join(bin, "kmirror"), "lint", "mm2.properties")
	cmd.Dir = dir
	out, err := cmd.Output()
	code := 0
	if ee, ok := errors.AsType[*exec.ExitError](err); ok {
		code = ee.ExitCode()
	} else if err != nil {
		t.Fatal(err)
	}
	got := "$ kmirror lint mm2.properties\n" + string(out) + "(exit " + strconv.Itoa(code) + ")\n"

	doc, err := os.ReadFile("walkthrough.md")
	if err != nil {
		t.Fatal(err)
	}
	text := string(doc)
	i := strings.Index(text, "```\n$ kmirror lint mm2.properties\n")
	if i < 0 {
		t.Fatal("walkthrough.md shows no `$ kmirror lint mm2.properties` block")
	}
	block := text[i+len("```\n"):]
	block = block[:strings.Index(block, "```")]
	if block != got {
		t.Errorf("walkthrough.md's lint block:\n%s\nkmirror lint prints:\n%s", block, got)
	}
}
