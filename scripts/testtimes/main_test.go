package main

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// testdata/run.jsonl is a go test -json run written by hand: package a with a slow test, a
// test whose subtest fails, a skip, a fast test and a test cut short by -timeout; package b
// with one passing test that logs; package c without test files.
const runFile = "testdata/run.jsonl"

// wantRun is what testtimes prints of testdata/run.jsonl: the lines go test prints without
// -json, FAIL, then the summary.
const wantRun = `?   	example.com/m/c	[no test files]
ok  	example.com/m/b	2.104s
--- FAIL: TestFails/bad (0.70s)
    a_test.go:21: got 30, want 38
--- FAIL: TestFails (1.20s)
panic: test timed out after 8s
	running tests:
		TestHang (3s)
FAIL	example.com/m/a	8.012s
FAIL

== the 6 slowest of 6 top-level tests (seconds each ran; parallel tests overlap)
 seconds  test         package
    3.50  TestSlow     example.com/m/a
    3.00  TestHang     example.com/m/a
    2.00  TestB        example.com/m/b
    1.20  TestFails    example.com/m/a
    0.10  TestFast     example.com/m/a
    0.00  TestSkipped  example.com/m/a

== 2 packages (seconds each test binary ran, its build not included; several run at once)
 seconds  tests  result  package
    8.01      5  fail    example.com/m/a
    2.10      1  pass    example.com/m/b

== 4 passed, 3 failed, 1 skipped (subtests included)
wall time: 8.0s from the first test binary's start to the last result (10:00:00 to 10:00:08 UTC)
failed: TestFails (example.com/m/a)
failed: TestHang (example.com/m/a): panic: test timed out after 8s
`

func TestRun(t *testing.T) {
	in, err := os.ReadFile(runFile)
	if err != nil {
		t.Fatal(err)
	}
	raw := filepath.Join(t.TempDir(), "test.json")
	var stdout, stderr bytes.Buffer
	if code := run([]string{"-json", raw}, bytes.NewReader(in), &stdout, &stderr); code != 0 {
		t.Fatalf("got exit %d, want 0 though tests failed (go test's status is the pipe's): %s", code, stderr.String())
	}
	if got := stdout.String(); got != wantRun {
		t.Errorf("got\n%s\nwant\n%s", got, wantRun)
	}
	if got, _ := os.ReadFile(raw); !bytes.Equal(got, in) {
		t.Errorf("got a copy of %d bytes, want the %d bytes read", len(got), len(in))
	}
}

func TestNoSummary(t *testing.T) {
	in, err := os.ReadFile(runFile)
	if err != nil {
		t.Fatal(err)
	}
	var stdout, stderr bytes.Buffer
	if code := run([]string{"-summary=false"}, bytes.NewReader(in), &stdout, &stderr); code != 0 {
		t.Fatalf("got exit %d: %s", code, stderr.String())
	}
	want, _, _ := strings.Cut(wantRun, "\n== ")
	if got := stdout.String(); got != want {
		t.Errorf("got\n%s\nwant\n%s", got, want)
	}
}

// TestPrefix: with -prefix every line printed as the run happens begins with it (to tell two
// runs apart on one terminal: make test prints an ok line for ./integration in the run of the
// tests and in the container suite's), the summary does not.
func TestPrefix(t *testing.T) {
	in, err := os.ReadFile(runFile)
	if err != nil {
		t.Fatal(err)
	}
	var stdout, stderr bytes.Buffer
	if code := run([]string{"-prefix", "it-containers: "}, bytes.NewReader(in), &stdout, &stderr); code != 0 {
		t.Fatalf("got exit %d: %s", code, stderr.String())
	}
	lines, summary, _ := strings.Cut(wantRun, "\n== ")
	want := "it-containers: " + strings.ReplaceAll(lines, "\n", "\nit-containers: ")
	want = strings.TrimSuffix(want, "it-containers: ") + "\n== " + summary
	if got := stdout.String(); got != want {
		t.Errorf("got\n%s\nwant\n%s", got, want)
	}
}

func TestVerbose(t *testing.T) {
	in, err := os.ReadFile(runFile)
	if err != nil {
		t.Fatal(err)
	}
	var stdout, stderr bytes.Buffer
	if code := run([]string{"-v", "-summary=false"}, bytes.NewReader(in), &stdout, &stderr); code != 0 {
		t.Fatalf("got exit %d: %s", code, stderr.String())
	}
	for _, want := range []string{"=== RUN   TestB\n    b_test.go:9: a passing test's log, not shown\n--- PASS: TestB (2.00s)\n", "PASS\nok  \texample.com/m/b", "--- SKIP: TestSkipped", "\nFAIL\n"} {
		if !strings.Contains(stdout.String(), want) {
			t.Errorf("got\n%s\nwant it to contain %q", stdout.String(), want)
		}
	}
}

// TestCutShort: a run whose go test died mid-test still shows what the unfinished test printed.
func TestCutShort(t *testing.T) {
	in := `{"Action":"start","Package":"p"}` + "\n" +
		`{"Action":"run","Package":"p","Test":"TestA"}` + "\n" +
		`{"Action":"output","Package":"p","Test":"TestA","Output":"=== RUN   TestA\n"}` + "\n" +
		`{"Action":"output","Package":"p","Test":"TestA","Output":"    a_test.go:3: waiting for the broker\n"}` + "\n"
	var stdout, stderr bytes.Buffer
	if code := run([]string{"-summary=false"}, strings.NewReader(in), &stdout, &stderr); code != 0 {
		t.Fatalf("got exit %d: %s", code, stderr.String())
	}
	if got, want := stdout.String(), "    a_test.go:3: waiting for the broker\n"; got != want {
		t.Errorf("got %q, want %q", got, want)
	}
}

func TestFiles(t *testing.T) {
	in, err := os.ReadFile(runFile)
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	test, containers := filepath.Join(dir, "test.json"), filepath.Join(dir, "it-containers.json")
	for _, f := range []string{test, containers} {
		if err := os.WriteFile(f, in, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	var stdout, stderr bytes.Buffer
	if code := run([]string{"-n", "3", test, containers}, strings.NewReader("not read"), &stdout, &stderr); code != 0 {
		t.Fatalf("got exit %d: %s", code, stderr.String())
	}
	want := `
== the 3 slowest of 12 top-level tests (seconds each ran; parallel tests overlap)
 seconds  test      package          run
    3.50  TestSlow  example.com/m/a  it-containers
    3.50  TestSlow  example.com/m/a  test
    3.00  TestHang  example.com/m/a  it-containers
`
	if got := stdout.String(); !strings.HasPrefix(got, want) {
		t.Errorf("got\n%s\nwant it to start with\n%s", got, want)
	}
	for _, want := range []string{
		"    8.01      5  fail    example.com/m/a  test\n",
		"== 8 passed, 6 failed, 2 skipped",
		"wall time of it-containers: 8.0s",
		"failed: TestHang (example.com/m/a): panic",
	} {
		if !strings.Contains(stdout.String(), want) {
			t.Errorf("got\n%s\nwant it to contain %q", stdout.String(), want)
		}
	}
}

func TestUsage(t *testing.T) {
	for _, args := range [][]string{{"-bogus"}, {"-n", "-1"}, {"-json", "x.json", runFile}, {"-v", runFile}, {"missing.json"}} {
		var stdout, stderr bytes.Buffer
		if code := run(args, strings.NewReader(""), &stdout, &stderr); code != 2 {
			t.Errorf("%q: got exit %d, want 2", args, code)
		}
		if stdout.Len() > 0 || stderr.Len() == 0 {
			t.Errorf("%q: got stdout %q, stderr %q, want only a message on stderr", args, stdout.String(), stderr.String())
		}
	}
}

func TestNoTests(t *testing.T) {
	in := `{"Action":"output","Package":"p","Output":"?   \tp\t[no test files]\n"}` + "\n" + `{"Action":"skip","Package":"p","Elapsed":0}` + "\n"
	var stdout, stderr bytes.Buffer
	if code := run(nil, strings.NewReader(in), &stdout, &stderr); code != 0 {
		t.Fatalf("got exit %d: %s", code, stderr.String())
	}
	want := "?   \tp\t[no test files]\n\n== no test ran\n\n== 0 packages (seconds each test binary ran, its build not included; several run at once)\n" +
		" seconds  tests  result  package\n\n== 0 passed, 0 failed, 0 skipped (subtests included)\n"
	if got := stdout.String(); got != want {
		t.Errorf("got\n%q\nwant\n%q", got, want)
	}
}

// TestSlotWait: the seconds a top-level test says it waited for a parallel slot of its
// package's own are left out of its time; a subtest's line changes nothing.
func TestSlotWait(t *testing.T) {
	in := strings.Join([]string{
		`{"Time":"2026-12-07T10:00:00Z","Action":"run","Package":"p","Test":"TestGated"}`,
		`{"Time":"2026-12-07T10:00:00Z","Action":"output","Package":"p","Test":"TestGated","Output":"    main_test.go:9: waited 40.5s for a parallel slot (bedGate)\n"}`,
		`{"Time":"2026-12-07T10:01:00Z","Action":"pass","Package":"p","Test":"TestGated","Elapsed":60}`,
		`{"Time":"2026-12-07T10:00:00Z","Action":"run","Package":"p","Test":"TestParent"}`,
		`{"Time":"2026-12-07T10:00:00Z","Action":"output","Package":"p","Test":"TestParent/lane","Output":"    main_test.go:9: waited 5s for a parallel slot (bedGate)\n"}`,
		`{"Time":"2026-12-07T10:00:30Z","Action":"pass","Package":"p","Test":"TestParent/lane","Elapsed":30}`,
		`{"Time":"2026-12-07T10:00:30Z","Action":"pass","Package":"p","Test":"TestParent","Elapsed":30}`,
		`{"Time":"2026-12-07T10:01:00Z","Action":"pass","Package":"p","Elapsed":60}`,
	}, "\n") + "\n"
	var stdout, stderr bytes.Buffer
	if code := run(nil, strings.NewReader(in), &stdout, &stderr); code != 0 {
		t.Fatalf("exit %d: %s", code, stderr.String())
	}
	for _, want := range []string{"   30.00  TestParent", "   19.50  TestGated"} {
		if !strings.Contains(stdout.String(), want) {
			t.Errorf("no line %q in\n%s", want, stdout.String())
		}
	}
}
