// Command go2junit converts `go test -json` output into a JUnit XML file that CI systems
// read, and prints the closing line "N passed, N failed, N skipped".
//
//	go run ./report/cmd/go2junit -in reports/go-test.json -out reports/go-test.xml
//	go test -json ./integration/... | go2junit -echo -json reports/go-test.json -out reports/go-test.xml
//
// The second form shows the run as go test -v would while it happens (-echo), keeps the raw
// events (-json) and writes the XML at the end. It reads standard input without -in and
// writes standard output without -out. Exit codes:
// 0 converted (whatever the tests did), 1 with -fail when any test failed, 2 on a usage or
// read/write error. scripts/nightly.sh uses it.
package main

import (
	"bytes"
	"flag"
	"fmt"
	"io"
	"os"

	"github.com/kmigrate/kmigrate/report/junit"
)

func main() {
	os.Exit(run(os.Args[1:], os.Stdin, os.Stdout, os.Stderr))
}

// options are the command-line flags of go2junit.
type options struct {
	in, out, name, raw string
	failExit, echo     bool
}

// parseFlags parses args into options, writing usage and flag errors to stderr; false: they do not parse.
func parseFlags(args []string, stderr io.Writer) (options, bool) {
	var o options
	fs := flag.NewFlagSet("go2junit", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.StringVar(&o.in, "in", "", "read go test -json output from `FILE` (default: standard input)")
	fs.StringVar(&o.out, "out", "", "write the JUnit XML to `FILE` (default: standard output)")
	fs.StringVar(&o.name, "name", "go test", "name of the <testsuites> element")
	fs.BoolVar(&o.failExit, "fail", false, "exit 1 when any test failed or errored")
	fs.BoolVar(&o.echo, "echo", false, "print the test output as it arrives (needs -out)")
	fs.StringVar(&o.raw, "json", "", "also copy the go test -json input to `FILE`")
	fs.Usage = func() {
		fmt.Fprintf(stderr, "usage: go2junit [-in FILE] [-out FILE] [-json FILE] [-echo] [-name NAME] [-fail]\n\n"+
			"Converts go test -json output into JUnit XML and prints \"N passed, N failed, N skipped\".\n"+
			"Example: go test -json ./... | go2junit -out junit.xml\n"+
			"Exit codes: 0 converted, 1 tests failed (with -fail), 2 usage or I/O error.\n\n")
		fs.PrintDefaults()
	}
	return o, fs.Parse(args) == nil
}

// run is go2junit with its arguments and standard streams; it returns the exit code.
func run(args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	o, ok := parseFlags(args, stderr)
	if !ok {
		return 2
	}
	r := stdin
	if o.in != "" {
		f, err := os.Open(o.in)
		if err != nil {
			fmt.Fprintf(stderr, "go2junit: %v\n", err)
			return 2
		}
		defer f.Close()
		r = f
	}
	if o.echo && o.out == "" {
		fmt.Fprintln(stderr, "go2junit: -echo needs -out: the XML and the echoed output would mix on standard output")
		return 2
	}
	if o.raw != "" {
		f, err := os.Create(o.raw)
		if err != nil {
			fmt.Fprintf(stderr, "go2junit: %v\n", err)
			return 2
		}
		defer f.Close()
		r = io.TeeReader(r, f)
	}
	var echoTo io.Writer
	if o.echo {
		echoTo = stdout
	}
	ss, err := junit.FromGoTestEcho(r, echoTo)
	if err == nil {
		ss.Name = o.name
		err = writeXML(ss, o.out, stdout)
	}
	if err != nil {
		fmt.Fprintf(stderr, "go2junit: %v\n", err)
		return 2
	}
	c := ss.Count()
	// The summary goes to stderr when the XML goes to stdout, so the two never mix.
	sum := stdout
	if o.out == "" {
		sum = stderr
	}
	fmt.Fprintln(sum, c)
	if o.failExit && c.Failed > 0 {
		return 1
	}
	return 0
}

// writeXML writes ss as JUnit XML to the file out, or to stdout if out is "".
func writeXML(ss *junit.Suites, out string, stdout io.Writer) error {
	var buf bytes.Buffer
	if err := junit.Write(&buf, ss); err != nil {
		return err
	}
	if out != "" {
		if err := os.WriteFile(out, buf.Bytes(), 0o644); err != nil {
			return fmt.Errorf("write %s: %v", out, err)
		}
		return nil
	}
	_, err := stdout.Write(buf.Bytes())
	return err
}
