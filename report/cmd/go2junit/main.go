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

func run(args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("go2junit", flag.ContinueOnError)
	fs.SetOutput(stderr)
	in := fs.String("in", "", "read go test -json output from `FILE` (default: standard input)")
	out := fs.String("out", "", "write the JUnit XML to `FILE` (default: standard output)")
	name := fs.String("name", "go test", "name of the <testsuites> element")
	failExit := fs.Bool("fail", false, "exit 1 when any test failed or errored")
	echo := fs.Bool("echo", false, "print the test output as it arrives (needs -out)")
	raw := fs.String("json", "", "also copy the go test -json input to `FILE`")
	fs.Usage = func() {
		fmt.Fprintf(stderr, "usage: go2junit [-in FILE] [-out FILE] [-json FILE] [-echo] [-name NAME] [-fail]\n\n"+
			"Converts go test -json output into JUnit XML and prints \"N passed, N failed, N skipped\".\n"+
			"Example: go test -json ./... | go2junit -out junit.xml\n"+
			"Exit codes: 0 converted, 1 tests failed (with -fail), 2 usage or I/O error.\n\n")
		fs.PrintDefaults()
	}
	if err := fs.Parse(args); err != nil {
		return 2
	}
	r := stdin
	if *in != "" {
		f, err := os.Open(*in)
		if err != nil {
			fmt.Fprintf(stderr, "go2junit: %v\n", err)
			return 2
		}
		defer f.Close()
		r = f
	}
	if *echo && *out == "" {
		fmt.Fprintln(stderr, "go2junit: -echo needs -out: the XML and the echoed output would mix on standard output")
		return 2
	}
	if *raw != "" {
		f, err := os.Create(*raw)
		if err != nil {
			fmt.Fprintf(stderr, "go2junit: %v\n", err)
			return 2
		}
		defer f.Close()
		r = io.TeeReader(r, f)
	}
	var echoTo io.Writer
	if *echo {
		echoTo = stdout
	}
	ss, err := junit.FromGoTestEcho(r, echoTo)
	if err != nil {
		fmt.Fprintf(stderr, "go2junit: %v\n", err)
		return 2
	}
	ss.Name = *name
	var buf bytes.Buffer
	if err := junit.Write(&buf, ss); err != nil {
		fmt.Fprintf(stderr, "go2junit: %v\n", err)
		return 2
	}
	w := stdout
	if *out != "" {
		if err := os.WriteFile(*out, buf.Bytes(), 0o644); err != nil {
			fmt.Fprintf(stderr, "go2junit: write %s: %v\n", *out, err)
			return 2
		}
	} else if _, err := w.Write(buf.Bytes()); err != nil {
		fmt.Fprintf(stderr, "go2junit: %v\n", err)
		return 2
	}
	c := ss.Count()
	// The summary goes to stderr when the XML goes to stdout, so the two never mix.
	sum := stdout
	if *out == "" {
		sum = stderr
	}
	fmt.Fprintln(sum, c)
	if *failExit && c.Failed > 0 {
		return 1
	}
	return 0
}
