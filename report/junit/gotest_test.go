package junit_test

import (
	"bytes"
	"encoding/xml"
	"os"
	"strings"
	"testing"

	"github.com/kmigrate/kmigrate/report/junit"
)

// testdata/gotest.jsonl is real go test -json output of three small packages: one that does
// not build, one with a pass, a failure, a skip and subtests (one named with "<x>" that logs a
// control character), and one that hits -timeout 1s.
func convert(t *testing.T) *junit.Suites {
	t.Helper()
	f, err := os.Open("testdata/gotest.jsonl")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { f.Close() })
	ss, err := junit.FromGoTest(f)
	if err != nil {
		t.Fatal(err)
	}
	return ss
}

func find(t *testing.T, ss *junit.Suites, suite, name string) junit.Case {
	t.Helper()
	for _, s := range ss.Suites {
		if s.Name != suite {
			continue
		}
		for _, c := range s.Cases {
			if c.Name == name {
				return c
			}
		}
	}
	t.Fatalf("no case %s in suite %s", name, suite)
	return junit.Case{}
}

func TestFromGoTest(t *testing.T) {
	ss := convert(t)
	if got, want := len(ss.Suites), 3; got != want {
		t.Fatalf("got %d suites, want one per package, %d", got, want)
	}
	if got, want := ss.Count().String(), "3 passed, 5 failed, 1 skipped"; got != want {
		t.Errorf("got %q, want %q", got, want)
	}
	tests := []struct {
		name, suite, test, kind, message, body string
	}{
		{"build failure", "example.com/gt/bad", "example.com/gt/bad", "error", "build failed: example.com/gt/bad [example.com/gt/bad.test]", "undefined: undefined"},
		{"failure carries the log line", "example.com/gt/ex", "TestFail", "failure", "ex_test.go:6: got 1, want 2", "got 1, want 2"},
		{"skip carries the reason", "example.com/gt/ex", "TestSkip", "skipped", "ex_test.go:7: no broker: set KGO_SEEDS", ""},
		{"pass", "example.com/gt/ex", "TestPass", "pass", "", ""},
		{"subtest", "example.com/gt/ex", "TestSub/bad_<x>", "failure", "ex_test.go:10: boom \x01 ctrl", "boom"},
		{"parent of a failed subtest", "example.com/gt/ex", "TestSub", "failure", "a subtest failed", ""},
		{"timeout", "example.com/gt/hang", "TestHang", "error", "panic: test timed out after 1s", "running tests"},
		{"passed before the timeout", "example.com/gt/hang", "TestOK", "pass", "", ""},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			c := find(t, ss, tc.suite, tc.test)
			var kind, msg, body string
			switch {
			case c.Failure != nil:
				kind, msg, body = "failure", c.Failure.Message, c.Failure.Body
			case c.Error != nil:
				kind, msg, body = "error", c.Error.Message, c.Error.Body
			case c.Skipped != nil:
				kind, msg = "skipped", c.Skipped.Message
			default:
				kind = "pass"
			}
			if kind != tc.kind || msg != tc.message {
				t.Errorf("got %s %q, want %s %q", kind, msg, tc.kind, tc.message)
			}
			if !strings.Contains(body, tc.body) {
				t.Errorf("got body %q, want it to contain %q", body, tc.body)
			}
			if strings.Contains(body, "=== RUN") {
				t.Errorf("got the === RUN framing in the body %q", body)
			}
		})
	}
}

func TestUnfinishedTestTime(t *testing.T) {
	// TestHang ran from 07:14:07.463 until its package failed at 07:14:08.467 (-timeout 1s).
	c := find(t, convert(t), "example.com/gt/hang", "TestHang")
	if c.Time < 1 || c.Time > 1.01 {
		t.Errorf("got time %v, want the 1.004s from its run event to its package's end", c.Time)
	}
}

func TestWriteIsValidXML(t *testing.T) {
	ss := convert(t)
	var buf bytes.Buffer
	if err := junit.Write(&buf, ss); err != nil {
		t.Fatal(err)
	}
	var back junit.Suites
	if err := xml.Unmarshal(buf.Bytes(), &back); err != nil {
		t.Fatalf("the document does not parse: %v", err)
	}
	if strings.Contains(buf.String(), "\x01") {
		t.Errorf("got a raw control character in the XML, want U+FFFD")
	}
	if !strings.Contains(buf.String(), "boom \uFFFD ctrl") {
		t.Errorf("got no replacement for the control character")
	}
	if back.Tests != 9 || back.Failures != 3 || back.Errors != 2 {
		t.Errorf("got tests=%d failures=%d errors=%d, want 9 3 2", back.Tests, back.Failures, back.Errors)
	}
}

func TestStrayLinesKept(t *testing.T) {
	in := "go: downloading example.com/x v1.0.0\n" +
		`{"Action":"start","Package":"p"}` + "\n" +
		`{"Action":"run","Package":"p","Test":"TestA"}` + "\n" +
		`{"Action":"pass","Package":"p","Test":"TestA","Elapsed":0.5}` + "\n" +
		`{"Action":"pass","Package":"p","Elapsed":0.6}` + "\n"
	ss, err := junit.FromGoTest(strings.NewReader(in))
	if err != nil {
		t.Fatal(err)
	}
	if ss.Suites[0].SystemErr == nil || !strings.Contains(ss.Suites[0].SystemErr.Text, "go: downloading") {
		t.Errorf("got no stray line in system-err")
	}
	if got := ss.Suites[0].Cases[0].Time; got != 0.5 {
		t.Errorf("got time %v, want 0.5", got)
	}
}
