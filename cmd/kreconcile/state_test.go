package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestStateUsage: bad input to kreconcile state is a usage error that names what to fix and
// writes nothing.
func TestStateUsage(t *testing.T) {
	srcSeeds, dstSeeds, _, _, _ := seed(t)
	root := t.TempDir()
	dir := filepath.Join(root, "wordcount", "0_0")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	ckpt := filepath.Join(dir, ".checkpoint")
	const content = "0\n1\nwordcount-counts-changelog 0 41\n"
	if err := os.WriteFile(ckpt, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
	conn := []string{"--source-brokers", srcSeeds, "--target-brokers", dstSeeds}
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"--group", "wordcount", "--state-dir", root, "--backup", "b.json"}, "--backup only applies with --apply"},
		{[]string{"--group", "wordcount", "--state-dir", root, "--format", "yaml"}, `--format "yaml"`},
		{[]string{"--group", "../etc", "--state-dir", root}, "without slashes"},
		{[]string{"--group", "orders", "--state-dir", root, "--apply"}, "no state directory of application orders in " + root},
	} {
		code, out, errOut := run(t, append(append([]string{"state"}, conn...), c.args...)...)
		if code != 2 || !strings.Contains(errOut, c.want) {
			t.Errorf("state %v: exit %d, stderr %q (stdout %q); want exit 2 with %q", c.args, code, errOut, out, c.want)
		}
	}
	// A group that is no Kafka Streams application: printed, refused, nothing written.
	code, out, _ := run(t, append(append([]string{"state"}, conn...), "--group", "wordcount", "--state-dir", root, "--apply")...)
	if code != 1 || !strings.Contains(out, "NOT READY") {
		t.Errorf("state --apply on a group that is no application: exit %d, stdout %q; want 1, NOT READY", code, out)
	}
	if b, err := os.ReadFile(ckpt); err != nil || string(b) != content {
		t.Errorf("checkpoint file changed: %q (%v)", b, err)
	}
}
