// Command testtimes shows a `go test -json` run as go test shows it without -json, keeps the
// events, and ends with where the time went: the slowest tests and each package's time.
// `make test` runs it (docs/testing.md, "Where the time goes").
//
//	go test -json ./... | go run ./scripts/testtimes -json reports/test.json
//	go run ./scripts/testtimes reports/test.json reports/it-containers.json
//
// The first form reads standard input and prints the run as it happens: each package's
// closing line (ok, FAIL), what a failing test printed with its --- FAIL line, and the
// output of a test cut short (a panic, -timeout) before its package's FAIL; what passing and
// skipped tests print is dropped, as go test drops it without -v (-v prints every line). At
// the end it prints FAIL when a package failed, then the summary (-summary=false: none).
// -json FILE keeps a copy of the events; -prefix TEXT begins each of those lines (not the
// summary) with TEXT. The second form reads saved runs, one a file, and
// prints only their summary.
//
// The summary: the -n slowest top-level tests (seconds, test, package; a test cut short
// counts until its package ended; the seconds a test logged as "waited Ns for a parallel
// slot" are left out), then every package that ran tests with the seconds its
// test binary ran, the result counts, and the wall time from the first test binary's start
// to the last result. With more than one file each row names its run (the file's name).
//
// Exit status: 0 whatever the tests did (behind a pipe, `set -o pipefail` keeps go test's),
// 2 on a usage or read/write error.
package main

import (
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/kmigrate/kmigrate/report/junit"
)

func main() {
	os.Exit(run(os.Args[1:], os.Stdin, os.Stdout, os.Stderr))
}

// options are the command-line flags and arguments of testtimes.
type options struct {
	raw              string
	prefix           string
	n                int
	summary, verbose bool
	files            []string
}

// parseFlags parses args into options, writing usage and flag errors to stderr; false: they do not parse.
func parseFlags(args []string, stderr io.Writer) (options, bool) {
	var o options
	fs := flag.NewFlagSet("testtimes", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.StringVar(&o.raw, "json", "", "also copy the go test -json input to `FILE`")
	fs.IntVar(&o.n, "n", 20, "how many of the slowest tests to list")
	fs.BoolVar(&o.summary, "summary", true, "end with the summary")
	fs.BoolVar(&o.verbose, "v", false, "print every line of test output, as go test -v does")
	fs.StringVar(&o.prefix, "prefix", "", "begin every line printed as the run happens with `TEXT` (to tell two runs apart on one terminal)")
	fs.Usage = func() {
		fmt.Fprintf(stderr, "usage: go test -json PKGS | testtimes [-json FILE] [-v] [-prefix TEXT] [-summary=false] [-n N]\n"+
			"       testtimes [-n N] FILE...\n\n"+
			"Prints a go test -json run as go test prints it, then the slowest tests and each package's time;\n"+
			"with FILEs (saved go test -json runs), only that summary.\n"+
			"Exit codes: 0 read (whatever the tests did), 2 usage or I/O error.\n\n")
		fs.PrintDefaults()
	}
	if fs.Parse(args) != nil {
		return o, false
	}
	o.files = fs.Args()
	if o.n < 0 || (len(o.files) > 0 && (o.raw != "" || o.verbose || o.prefix != "")) {
		fs.Usage()
		return o, false
	}
	return o, true
}

// run is testtimes with its arguments and standard streams; it returns the exit code.
func run(args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	o, ok := parseFlags(args, stderr)
	if !ok {
		return 2
	}
	var runs []timedRun
	if len(o.files) == 0 {
		r, err := readStdin(o, stdin, stdout)
		if err != nil {
			fmt.Fprintf(stderr, "testtimes: %v\n", err)
			return 2
		}
		runs = append(runs, r)
	}
	for _, name := range o.files {
		r, err := readFile(name, len(o.files) > 1)
		if err != nil {
			fmt.Fprintf(stderr, "testtimes: %v\n", err)
			return 2
		}
		runs = append(runs, r)
	}
	if o.summary || len(o.files) > 0 {
		summarise(stdout, runs, o.n)
	}
	return 0
}

// readStdin reads the run on stdin, echoing it to stdout and copying it to o.raw when set.
func readStdin(o options, stdin io.Reader, stdout io.Writer) (timedRun, error) {
	if o.raw != "" {
		f, err := os.Create(o.raw)
		if err != nil {
			return timedRun{}, err
		}
		defer f.Close()
		stdin = io.TeeReader(stdin, f)
	}
	w := stdout
	if o.prefix != "" {
		w = &prefixWriter{w: stdout, prefix: o.prefix, start: true}
	}
	e := &echo{w: w, all: o.verbose}
	r, err := read(stdin, "", e.event)
	e.end()
	return r, err
}

// prefixWriter writes prefix at the start of every line it writes to w.
type prefixWriter struct {
	w      io.Writer
	prefix string
	start  bool // the next byte begins a line
}

func (p *prefixWriter) Write(b []byte) (int, error) {
	var out []byte
	for _, c := range b {
		if p.start {
			out = append(out, p.prefix...)
		}
		out = append(out, c)
		p.start = c == '\n'
	}
	if _, err := p.w.Write(out); err != nil {
		return 0, err
	}
	return len(b), nil
}

// readFile reads the saved run in the file name, labelled with the file's name when labelled.
func readFile(name string, labelled bool) (timedRun, error) {
	f, err := os.Open(name)
	if err != nil {
		return timedRun{}, err
	}
	defer f.Close()
	label := ""
	if labelled {
		label = strings.TrimSuffix(filepath.Base(name), filepath.Ext(name))
	}
	return read(f, label, nil)
}

// timedRun is one go test -json run: its suites, the seconds each package's test binary ran,
// and the time from its first event to its last.
type timedRun struct {
	label       string
	suites      *junit.Suites
	pkgSecs     map[string]float64
	waited      map[[2]string]float64 // by package and top-level test: the seconds it said it waited for a parallel slot
	first, last time.Time
}

// slotWait is the line a test logs when it waited for a parallel slot of its package's own
// (integration's bedGate admits its parallel tests itself, after go test resumed them): the
// summary leaves those seconds out of the test's, as go test leaves out its own waits.
var slotWait = regexp.MustCompile(`waited ([0-9]+(?:\.[0-9]+)?)s for a parallel slot`)

// read reads the run r, calling each (nil: nothing) with every event as it comes.
func read(r io.Reader, label string, each func(junit.Event)) (timedRun, error) {
	gr := junit.NewGoTestRun()
	tr := timedRun{label: label, pkgSecs: map[string]float64{}, waited: map[[2]string]float64{}}
	err := junit.ReadGoTest(r, func(ev junit.Event) {
		gr.Add(ev)
		// Not the suite's Time: junit makes that at least the sum of its cases, subtests included.
		if ev.Test == "" && (ev.Action == "pass" || ev.Action == "fail" || ev.Action == "skip") {
			tr.pkgSecs[ev.Package] = ev.Elapsed
		}
		if ev.Action == "output" && ev.Test != "" && !strings.Contains(ev.Test, "/") {
			if m := slotWait.FindStringSubmatch(ev.Output); m != nil {
				secs, _ := strconv.ParseFloat(m[1], 64)
				tr.waited[[2]string{ev.Package, ev.Test}] += secs
			}
		}
		if !ev.Time.IsZero() {
			if tr.first.IsZero() || ev.Time.Before(tr.first) {
				tr.first = ev.Time
			}
			if ev.Time.After(tr.last) {
				tr.last = ev.Time
			}
		}
		if each != nil {
			each(ev)
		}
	})
	tr.suites = gr.Suites()
	return tr, err
}

// echo prints the events of a go test -json run as go test prints them without -json: a
// test's output is held until it ends, printed if it failed (or never ended), else dropped.
type echo struct {
	w      io.Writer
	all    bool    // print every output line as it comes (go test -v)
	open   []*held // the output of the tests that have not ended, in the order they printed
	failed bool    // a package failed
}

// held is what the test of pkg printed so far.
type held struct {
	pkg, test string
	out       strings.Builder
}

func (e *echo) event(ev junit.Event) {
	if ev.Test == "" && ev.Action == "fail" {
		e.failed = true
	}
	if e.all {
		io.WriteString(e.w, ev.Output)
		return
	}
	switch {
	case ev.Action == "" || ev.Action == "build-output": // the go command's lines, compile errors
		io.WriteString(e.w, ev.Output)
	case ev.Test == "":
		switch ev.Action {
		case "output":
			// A test cut short by a panic or -timeout has no end: its output goes before FAIL.
			if strings.HasPrefix(ev.Output, "FAIL") {
				e.flush(ev.Package)
			}
			if ev.Output != "PASS\n" {
				io.WriteString(e.w, ev.Output)
			}
		case "pass", "fail", "skip":
			e.flush(ev.Package)
		}
	case ev.Action == "output":
		e.hold(ev.Package, ev.Test).out.WriteString(ev.Output)
	case ev.Action == "fail":
		if h := e.take(ev.Package, ev.Test); h != nil {
			e.print(h)
		}
	case ev.Action == "pass" || ev.Action == "skip":
		e.take(ev.Package, ev.Test)
	}
}

// end prints the output of the tests that never ended (the run was cut), then FAIL when a
// package failed, as go test closes.
func (e *echo) end() {
	for _, h := range e.open {
		e.print(h)
	}
	e.open = nil
	if e.failed {
		fmt.Fprintln(e.w, "FAIL")
	}
}

// hold is the held output of test of pkg, added when it first prints.
func (e *echo) hold(pkg, test string) *held {
	for _, h := range e.open {
		if h.pkg == pkg && h.test == test {
			return h
		}
	}
	h := &held{pkg: pkg, test: test}
	e.open = append(e.open, h)
	return h
}

// take removes the held output of test of pkg and returns it; nil: it printed nothing.
func (e *echo) take(pkg, test string) *held {
	for i, h := range e.open {
		if h.pkg == pkg && h.test == test {
			e.open = append(e.open[:i], e.open[i+1:]...)
			return h
		}
	}
	return nil
}

// flush prints the held output of the tests of pkg that have not ended.
func (e *echo) flush(pkg string) {
	keep := e.open[:0]
	for _, h := range e.open {
		if h.pkg == pkg {
			e.print(h)
		} else {
			keep = append(keep, h)
		}
	}
	e.open = keep
}

// print writes what h's test printed, its --- FAIL line first as go test without -v has it,
// and without the === RUN, PAUSE, CONT and NAME lines.
func (e *echo) print(h *held) {
	var head, body strings.Builder
	for _, line := range strings.SplitAfter(h.out.String(), "\n") {
		switch t := strings.TrimLeft(line, " "); {
		case strings.HasPrefix(t, "=== "):
		case head.Len() == 0 && strings.HasPrefix(t, "--- FAIL: "+h.test+" "):
			head.WriteString(line)
		default:
			body.WriteString(line)
		}
	}
	io.WriteString(e.w, head.String()+body.String())
}

// testTime is a top-level test, or a package, and its seconds.
type testTime struct {
	secs                float64
	run, pkg, test, res string
	tests               int
}

// summarise writes the n slowest top-level tests of runs, each package's time and result,
// the counts, and the tests that failed.
func summarise(w io.Writer, runs []timedRun, n int) {
	var tests, pkgs []testTime
	var failed []string
	var counts junit.Counts
	for _, r := range runs {
		for _, s := range r.suites.Suites {
			top := 0
			for _, c := range s.Cases {
				if c.Error != nil && c.Error.Type == "package" {
					failed = append(failed, fmt.Sprintf("%s: %s", s.Name, c.Error.Message))
					continue
				}
				if strings.Contains(c.Name, "/") {
					continue
				}
				top++
				secs := max(float64(c.Time)-r.waited[[2]string{s.Name, c.Name}], 0)
				tests = append(tests, testTime{secs: secs, run: r.label, pkg: s.Name, test: c.Name})
				switch {
				case c.Failure != nil: // what it logged is above
					failed = append(failed, fmt.Sprintf("%s (%s)", c.Name, s.Name))
				case c.Error != nil:
					failed = append(failed, fmt.Sprintf("%s (%s): %s", c.Name, s.Name, c.Error.Message))
				}
			}
			if len(s.Cases) == 0 {
				continue // no test files, or -run matched nothing
			}
			res := "pass"
			switch {
			case s.Failures+s.Errors > 0:
				res = "fail"
			case s.Skipped == s.Tests:
				res = "skip"
			}
			pkgs = append(pkgs, testTime{secs: r.pkgSecs[s.Name], run: r.label, pkg: s.Name, res: res, tests: top})
		}
		c := r.suites.Count()
		counts.Passed, counts.Failed, counts.Skipped = counts.Passed+c.Passed, counts.Failed+c.Failed, counts.Skipped+c.Skipped
	}
	bySecs(tests)
	bySecs(pkgs)
	labelled := len(runs) > 1
	shown := min(n, len(tests))

	if len(tests) == 0 {
		fmt.Fprintln(w, "\n== no test ran")
	} else {
		fmt.Fprintf(w, "\n== the %d slowest of %d top-level tests (seconds each ran; parallel tests overlap)\n", shown, len(tests))
		tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
		fmt.Fprintf(tw, "%8s  %s\n", "seconds", columns(labelled, "test", "package", "run"))
		for _, t := range tests[:shown] {
			fmt.Fprintf(tw, "%8.2f  %s\n", t.secs, columns(labelled, t.test, t.pkg, t.run))
		}
		tw.Flush()
	}

	fmt.Fprintf(w, "\n== %s (seconds each test binary ran, its build not included; several run at once)\n", plural(len(pkgs), "package"))
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintf(tw, "%8s  %5s  %s\n", "seconds", "tests", columns(labelled, "result", "package", "run"))
	for _, p := range pkgs {
		fmt.Fprintf(tw, "%8.2f  %5d  %s\n", p.secs, p.tests, columns(labelled, p.res, p.pkg, p.run))
	}
	tw.Flush()

	fmt.Fprintf(w, "\n== %v (subtests included)\n", counts)
	for _, r := range runs {
		if r.first.IsZero() {
			continue
		}
		of := ""
		if r.label != "" {
			of = " of " + r.label
		}
		fmt.Fprintf(w, "wall time%s: %.1fs from the first test binary's start to the last result (%s to %s UTC)\n", of,
			r.last.Sub(r.first).Seconds(), r.first.UTC().Format("15:04:05"), r.last.UTC().Format("15:04:05"))
	}
	for _, f := range failed {
		fmt.Fprintf(w, "failed: %s\n", f)
	}
}

// columns joins the text cells of a row for a tabwriter; the last, the run's name, only when
// the rows are labelled.
func columns(labelled bool, cells ...string) string {
	if !labelled {
		cells = cells[:len(cells)-1]
	}
	return strings.Join(cells, "\t")
}

// plural is "1 package", "2 packages".
func plural(n int, noun string) string {
	if n == 1 {
		return "1 " + noun
	}
	return fmt.Sprintf("%d %ss", n, noun)
}

// bySecs sorts ts slowest first, then by run, package and test.
func bySecs(ts []testTime) {
	sort.SliceStable(ts, func(i, j int) bool {
		a, b := ts[i], ts[j]
		if a.secs != b.secs {
			return a.secs > b.secs
		}
		if a.run != b.run {
			return a.run < b.run
		}
		if a.pkg != b.pkg {
			return a.pkg < b.pkg
		}
		return a.test < b.test
	})
}
