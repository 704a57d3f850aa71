package junit

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"regexp"
	"strings"
	"time"
)

// Event is one line of `go test -json` (cmd/test2json), including the build events Go 1.24+
// writes for packages that do not compile. ReadGoTest gives a line that is not JSON (the go
// command's own messages) as an Event with no Action whose Output is the line.
type Event struct {
	Time        time.Time
	Action      string
	Package     string
	Test        string
	Elapsed     float64
	Output      string
	ImportPath  string
	FailedBuild string
}

type goCase struct {
	name   string
	result string // pass, fail, skip, or "" when the test never finished
	secs   float64
	start  time.Time // its run event
	out    strings.Builder
}

type goPackage struct {
	name   string
	start  time.Time
	end    time.Time // its pass, fail or skip event
	result string
	secs   float64
	out    strings.Builder
	build  string // the import path whose build failed, when it did
	cases  []*goCase
	byName map[string]*goCase
}

// FromGoTestEcho converts the output of `go test -json` into one suite per package and one case
// per test (subtests included, named as go test names them). A failed test carries the lines
// it logged; a skipped one the reason; a test that never finished (a panic or -timeout) is an
// error with its output; a package that failed outside any test (build failure, TestMain, a
// panic) gets a case named after the package with that output. Lines that are not JSON (the
// go command's own messages) are kept in the first suite's system-err.
//
// It also writes the text of the run to echo as it reads it (what go test -v would have
// printed; nil: nothing), so a script can keep the JSON and show progress.
func FromGoTestEcho(r io.Reader, echo io.Writer) (*Suites, error) {
	run := NewGoTestRun()
	err := ReadGoTest(r, func(ev Event) {
		if echo != nil && ev.Output != "" {
			io.WriteString(echo, ev.Output)
		}
		run.Add(ev)
	})
	if err != nil {
		return nil, err
	}
	return run.Suites(), nil
}

// ReadGoTest calls fn with each line of r, `go test -json` output, as an Event, in order; a
// line that is not JSON comes as an Event with no Action and the line as its Output. The
// error is r's.
func ReadGoTest(r io.Reader, fn func(Event)) error {
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 0, 64*1024), 16<<20)
	for sc.Scan() {
		line := sc.Bytes()
		var ev Event
		if len(line) == 0 || line[0] != '{' || json.Unmarshal(line, &ev) != nil {
			ev = Event{Output: string(line) + "\n"}
		}
		fn(ev)
	}
	if err := sc.Err(); err != nil {
		return fmt.Errorf("read go test -json output: %w", err)
	}
	return nil
}

// GoTestRun is what a go test -json run reported: its packages and tests in the order they
// appear. Add its events (ReadGoTest reads them), then Suites converts it.
type GoTestRun struct {
	pkgs   []*goPackage
	byName map[string]*goPackage
	builds map[string]*strings.Builder // build output by import path
	stray  strings.Builder             // the lines that are not JSON
}

// NewGoTestRun returns a run with no events yet.
func NewGoTestRun() *GoTestRun {
	return &GoTestRun{byName: map[string]*goPackage{}, builds: map[string]*strings.Builder{}}
}

// Suites is one suite per package of run and one case per test (see FromGoTestEcho).
func (run *GoTestRun) Suites() *Suites {
	ss := &Suites{Name: "go test"}
	for _, p := range run.pkgs {
		ss.Suites = append(ss.Suites, run.suite(p))
	}
	if run.stray.Len() > 0 {
		if len(ss.Suites) == 0 {
			ss.Suites = append(ss.Suites, Suite{Name: "go test"})
		}
		ss.Suites[0].SystemErr = Text(run.stray.String())
	}
	ss.Total()
	return ss
}

// Add records ev: a line that is not JSON as such, build output under its import path, else
// the output or result of its package or test.
func (run *GoTestRun) Add(ev Event) {
	switch ev.Action {
	case "":
		run.stray.WriteString(ev.Output)
		return
	case "build-output":
		b := run.builds[ev.ImportPath]
		if b == nil {
			b = &strings.Builder{}
			run.builds[ev.ImportPath] = b
		}
		b.WriteString(ev.Output)
		return
	case "build-fail":
		return
	}
	if ev.Package == "" {
		return
	}
	p := run.pkg(ev.Package)
	if p.start.IsZero() && !ev.Time.IsZero() {
		p.start = ev.Time
	}
	if ev.Test == "" {
		switch ev.Action {
		case "output":
			p.out.WriteString(ev.Output)
		case "pass", "fail", "skip":
			p.result, p.secs, p.build, p.end = ev.Action, ev.Elapsed, ev.FailedBuild, ev.Time
		}
		return
	}
	c := p.test(ev.Test)
	switch ev.Action {
	case "run":
		c.start = ev.Time
	case "output":
		c.out.WriteString(ev.Output)
	case "pass", "fail", "skip":
		c.result, c.secs = ev.Action, ev.Elapsed
	}
}

// pkg is the package name of run, added at its first event.
func (run *GoTestRun) pkg(name string) *goPackage {
	p, ok := run.byName[name]
	if !ok {
		p = &goPackage{name: name, byName: map[string]*goCase{}}
		run.byName[name] = p
		run.pkgs = append(run.pkgs, p)
	}
	return p
}

// test is the test name of p, added at its first event.
func (p *goPackage) test(name string) *goCase {
	c, ok := p.byName[name]
	if !ok {
		c = &goCase{name: name}
		p.byName[name] = c
		p.cases = append(p.cases, c)
	}
	return c
}

// suite is the suite of p: a case per test, and one for a failure of p outside any test.
func (run *GoTestRun) suite(p *goPackage) Suite {
	s := Suite{Name: p.name, Time: Seconds(p.secs)}
	if !p.start.IsZero() {
		s.Timestamp = p.start.UTC().Format("2006-01-02T15:04:05")
	}
	failedCase := false
	for _, gc := range p.cases {
		c := p.testCase(gc)
		failedCase = failedCase || c.Failure != nil || c.Error != nil
		s.Cases = append(s.Cases, c)
	}
	if p.result == "fail" && !failedCase {
		s.Cases = append(s.Cases, run.packageCase(p))
	}
	return s
}

// testCase is the case of test gc of p: passed, skipped with the reason, failed or unfinished with its output.
func (p *goPackage) testCase(gc *goCase) Case {
	c := Case{Name: gc.name, Classname: p.name, Time: Seconds(gc.secs)}
	out := testOutput(gc.out.String())
	switch gc.result {
	case "pass":
		c.SystemOut = Text(out)
	case "skip":
		c.Skipped = &Skipped{Message: firstLogLine(out, "skipped")}
		c.SystemOut = Text(out)
	case "fail":
		fallback := "failed"
		if subtestFailed(p, gc.name) {
			fallback = "a subtest failed"
		}
		c.Failure = &Problem{Type: "failure", Message: firstLogLine(out, fallback), Body: out}
	default:
		msg := "the test did not finish (a panic, or go test -timeout)"
		if m := panicLine(gc.out.String() + p.out.String()); m != "" {
			msg = m
		}
		// Its time is unknown: until its package ended is the time it took at the least.
		if !gc.start.IsZero() && p.end.After(gc.start) {
			c.Time = Seconds(p.end.Sub(gc.start).Seconds())
		}
		c.Error = &Problem{Type: "unfinished", Message: msg, Body: out}
	}
	return c
}

// packageCase is the error case of p failed outside any test, with its output and any build output.
func (run *GoTestRun) packageCase(p *goPackage) Case {
	body := p.out.String()
	msg := "the package failed outside any test"
	if p.build != "" {
		msg = "build failed: " + p.build
		if b := run.builds[p.build]; b != nil {
			body = b.String() + body
		}
	} else if m := panicLine(body); m != "" {
		msg = m
	}
	return Case{Name: p.name, Classname: p.name, Time: Seconds(p.secs),
		Error: &Problem{Type: "package", Message: msg, Body: body}}
}

func subtestFailed(p *goPackage, name string) bool {
	for _, c := range p.cases {
		if strings.HasPrefix(c.name, name+"/") && c.result != "pass" && c.result != "skip" {
			return true
		}
	}
	return false
}

// testOutput drops the framing lines go test prints around every test, keeping what the test
// logged.
func testOutput(s string) string {
	var b strings.Builder
	for _, line := range strings.SplitAfter(s, "\n") {
		t := strings.TrimLeft(line, " ")
		if strings.HasPrefix(t, "=== RUN") || strings.HasPrefix(t, "=== PAUSE") || strings.HasPrefix(t, "=== CONT") ||
			strings.HasPrefix(t, "=== NAME") || strings.HasPrefix(t, "--- PASS") || strings.HasPrefix(t, "--- FAIL") ||
			strings.HasPrefix(t, "--- SKIP") {
			continue
		}
		b.WriteString(line)
	}
	return b.String()
}

var logLine = regexp.MustCompile(`^\s*[\w.-]+\.go:\d+: (.*)$`)

// firstLogLine is the first t.Log/t.Error message, "file_test.go:12: got 1, want 2".
func firstLogLine(out, fallback string) string {
	for _, line := range strings.Split(out, "\n") {
		if logLine.MatchString(line) {
			return strings.TrimSpace(line)
		}
	}
	return fallback
}

func panicLine(out string) string {
	for _, line := range strings.Split(out, "\n") {
		if strings.HasPrefix(line, "panic: ") {
			return strings.TrimSpace(line)
		}
	}
	return ""
}

// Counts are the totals of a converted run, for the closing line "N passed, N failed".
type Counts struct {
	Passed, Failed, Skipped int
}

// Count returns how many cases passed, failed (failures and errors) and were skipped.
func (ss *Suites) Count() Counts {
	ss.Total()
	return Counts{
		Passed:  ss.Tests - ss.Failures - ss.Errors - ss.Skipped,
		Failed:  ss.Failures + ss.Errors,
		Skipped: ss.Skipped,
	}
}

// String is the closing line CI readers look for: "12 passed, 1 failed, 3 skipped".
func (c Counts) String() string {
	return fmt.Sprintf("%d passed, %d failed, %d skipped", c.Passed, c.Failed, c.Skipped)
}
