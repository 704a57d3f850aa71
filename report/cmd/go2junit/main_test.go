package main

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestRun(t *testing.T) {
	out := filepath.Join(t.TempDir(), "junit.xml")
	tests := []struct {
		name     string
		args     []string
		code     int
		stdout   string
		wantFile bool
	}{
		{"to a file", []string{"-in", "../../junit/testdata/gotest.jsonl", "-out", out}, 0, "3 passed, 5 failed, 1 skipped\n", true},
		{"-fail", []string{"-in", "../../junit/testdata/gotest.jsonl", "-out", out, "-fail"}, 1, "3 passed, 5 failed, 1 skipped\n", true},
		{"missing input", []string{"-in", "nope.json"}, 2, "", false},
		{"bad flag", []string{"-bogus"}, 2, "", false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			os.Remove(out)
			var stdout, stderr bytes.Buffer
			code := run(tc.args, strings.NewReader(""), &stdout, &stderr)
			if code != tc.code || stdout.String() != tc.stdout {
				t.Errorf("got exit %d, stdout %q, want %d, %q (stderr %q)", code, stdout.String(), tc.code, tc.stdout, stderr.String())
			}
			if _, err := os.Stat(out); (err == nil) != tc.wantFile {
				t.Errorf("got file written %v, want %v", err == nil, tc.wantFile)
			}
		})
	}
	t.Run("echo and keep the json", func(t *testing.T) {
		raw := filepath.Join(t.TempDir(), "go-test.json")
		var stdout, stderr bytes.Buffer
		in := `{"Action":"run","Package":"p","Test":"TestA"}` + "\n" +
			`{"Action":"output","Package":"p","Test":"TestA","Output":"=== RUN   TestA\n"}` + "\n" +
			`{"Action":"pass","Package":"p","Test":"TestA"}` + "\n"
		if code := run([]string{"-echo", "-json", raw, "-out", out}, strings.NewReader(in), &stdout, &stderr); code != 0 {
			t.Fatalf("got exit %d: %s", code, stderr.String())
		}
		if got, want := stdout.String(), "=== RUN   TestA\n1 passed, 0 failed, 0 skipped\n"; got != want {
			t.Errorf("got stdout %q, want %q", got, want)
		}
		if b, _ := os.ReadFile(raw); string(b) != in {
			t.Errorf("got raw copy %q, want the input", b)
		}
	})
	t.Run("echo without out", func(t *testing.T) {
		var stdout, stderr bytes.Buffer
		if code := run([]string{"-echo"}, strings.NewReader(""), &stdout, &stderr); code != 2 {
			t.Errorf("got exit %d, want 2", code)
		}
	})
	t.Run("stdin to stdout", func(t *testing.T) {
		var stdout, stderr bytes.Buffer
		in := `{"Action":"run","Package":"p","Test":"TestA"}` + "\n" + `{"Action":"pass","Package":"p","Test":"TestA"}` + "\n"
		if code := run(nil, strings.NewReader(in), &stdout, &stderr); code != 0 {
			t.Fatalf("got exit %d: %s", code, stderr.String())
		}
		if !strings.HasPrefix(stdout.String(), "<?xml") || strings.Contains(stdout.String(), "passed") {
			t.Errorf("got stdout %q, want only the XML", stdout.String())
		}
		if got, want := stderr.String(), "1 passed, 0 failed, 0 skipped\n"; got != want {
			t.Errorf("got stderr %q, want %q", got, want)
		}
	})
}
