// Command docs-verify produces the transcripts of docs/verify.md: `make docs-transcripts`.
//
// It starts two in-process clusters (kfake) named old and new, writes the data each example
// of the page is about, runs the kverify binary exactly as the page shows it, and prints each
// command ("$ " and its words), what it printed (standard output and standard error, as a
// terminal shows them) and its exit status ("(exit N)"). The clusters' addresses are replaced
// by old:9092 and new:9092 everywhere, so that a transcript changes only when kverify's output
// does. Long outputs are trimmed where the page trims them, to an explicit "…" line: every
// other line is one kverify printed.
//
// With -write FILE it replaces the fenced block after each "<!-- transcript: NAME -->" line of
// FILE with the transcript NAME; without it, it prints the transcripts.
package main

import (
	"bytes"
	"context"
	"errors"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	"github.com/twmb/franz-go/pkg/kfake"
)

func main() {
	bin := flag.String("bin", "bin", "directory with the kverify binary")
	write := flag.String("write", "", "replace the transcript blocks of this Markdown file (default: print the transcripts)")
	flag.Parse()
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	ctx, cancel := context.WithTimeout(ctx, 3*time.Minute)
	defer cancel()
	if err := run(ctx, filepath.Join(*bin, "kverify"), *write); err != nil {
		fmt.Fprintf(os.Stderr, "docs-verify: %v\n", err)
		os.Exit(1)
	}
}

func run(ctx context.Context, kverify, write string) error {
	ts, err := All(ctx, kverify)
	if err != nil {
		return err
	}
	if write == "" {
		for _, t := range ts {
			fmt.Printf("<!-- transcript: %s -->\n%s\n", t.Name, t.Text())
		}
		return nil
	}
	doc, err := os.ReadFile(write)
	if err != nil {
		return err
	}
	out, err := Splice(string(doc), ts)
	if err != nil {
		return fmt.Errorf("%s: %w", write, err)
	}
	return os.WriteFile(write, []byte(out), 0o644)
}

// All produces every transcript of the page, in the page's order.
func All(ctx context.Context, kverify string) ([]*Transcript, error) {
	var out []*Transcript
	for _, f := range []func(context.Context, string) (*Transcript, error){Flow, AcrossSites} {
		t, err := f(ctx, kverify)
		if err != nil {
			return nil, err
		}
		out = append(out, t)
	}
	return out, nil
}

// Transcript is what a run of commands printed.
type Transcript struct {
	Name string
	// Ran holds each command as shown, its exit status and its full output (addresses
	// replaced), for the test.
	Ran []Ran
	// Files holds the files the commands wrote that the test reads (the JSON report).
	Files map[string][]byte
	lines []string
}

// Ran is one command of a transcript.
type Ran struct {
	Shown  string // the command line as the transcript shows it, without "$ "
	Exit   int
	Output string
}

// Text is the transcript as the page shows it, without the fences, ending in a newline.
func (t *Transcript) Text() string { return strings.Join(t.lines, "\n") + "\n" }

// Trim says which lines of a command's output the transcript keeps: the first Head and the
// last Tail, with a "…" line between them when lines were left out. Zero Head and Tail keep
// every line.
type Trim struct{ Head, Tail int }

// session runs kverify in a directory of its own (the file names shown are the ones used) and
// records a transcript, with the clusters' addresses replaced by their names.
type session struct {
	kverify, dir string
	names        *strings.Replacer
	t            *Transcript
}

func newSession(name, kverify string, names map[string]string) (*session, error) {
	abs, err := filepath.Abs(kverify)
	if err != nil {
		return nil, err
	}
	dir, err := os.MkdirTemp("", "kmigrate-docs-verify-")
	if err != nil {
		return nil, err
	}
	var pairs []string
	for addr, name := range names {
		pairs = append(pairs, addr, name)
	}
	return &session{kverify: abs, dir: dir, names: strings.NewReplacer(pairs...), t: &Transcript{Name: name}}, nil
}

func (s *session) close() { os.RemoveAll(s.dir) }

// keep reads file name, written by a command, into the transcript's Files.
func (s *session) keep(name string) error {
	b, err := os.ReadFile(filepath.Join(s.dir, name))
	if err != nil {
		return err
	}
	if s.t.Files == nil {
		s.t.Files = map[string][]byte{}
	}
	s.t.Files[name] = b
	return nil
}

// run runs kverify with args, records it trimmed as trim says, and returns its exit status.
func (s *session) run(ctx context.Context, trim Trim, args ...string) (int, error) {
	cmd := exec.CommandContext(ctx, s.kverify, args...)
	cmd.Dir = s.dir
	cmd.Env = append(os.Environ(), "COLUMNS=200")
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	code := 0
	err := cmd.Run()
	var ee *exec.ExitError
	switch {
	case errors.As(err, &ee):
		code = ee.ExitCode()
	case err != nil:
		return -1, fmt.Errorf("run %s (build it with make build): %w", s.kverify, err)
	}
	shown := s.names.Replace("kverify " + strings.Join(args, " "))
	text := s.names.Replace(out.String())
	s.t.Ran = append(s.t.Ran, Ran{Shown: shown, Exit: code, Output: text})
	s.t.lines = append(s.t.lines, "$ "+shown)
	if text = strings.TrimRight(text, "\n"); text != "" {
		s.t.lines = append(s.t.lines, trim.apply(strings.Split(text, "\n"))...)
	}
	s.t.lines = append(s.t.lines, fmt.Sprintf("(exit %d)", code))
	return code, nil
}

func (t Trim) apply(lines []string) []string {
	if t.Head == 0 && t.Tail == 0 || t.Head+t.Tail >= len(lines) {
		return lines
	}
	out := append([]string(nil), lines[:t.Head]...)
	out = append(out, "…")
	return append(out, lines[len(lines)-t.Tail:]...)
}

// clusters starts the source cluster (old) and the target cluster (new), with fixed cluster
// IDs so that the transcripts name the same clusters every run.
func clusters() (src, dst *kfake.Cluster, err error) {
	src, err = kfake.NewCluster(kfake.NumBrokers(1), kfake.ClusterID("old-cluster-id"))
	if err != nil {
		return nil, nil, fmt.Errorf("start cluster old: %w", err)
	}
	dst, err = kfake.NewCluster(kfake.NumBrokers(1), kfake.ClusterID("new-cluster-id"))
	if err != nil {
		src.Close()
		return nil, nil, fmt.Errorf("start cluster new: %w", err)
	}
	return src, dst, nil
}

// addrs is a cluster's bootstrap address as a --*-brokers flag takes it.
func addrs(c *kfake.Cluster) string { return strings.Join(c.ListenAddrs(), ",") }

// names maps each cluster's address to the name the transcripts give it.
func names(src, dst *kfake.Cluster) map[string]string {
	return map[string]string{addrs(src): "old:9092", addrs(dst): "new:9092"}
}

// Splice replaces the fenced block that follows each "<!-- transcript: NAME -->" line of doc
// with the text of transcript NAME. Every transcript must have its marker, and every marker a
// transcript.
func Splice(doc string, ts []*Transcript) (string, error) {
	byName := map[string]*Transcript{}
	for _, t := range ts {
		byName[t.Name] = t
	}
	lines := strings.SplitAfter(doc, "\n")
	var out strings.Builder
	done := map[string]bool{}
	for i := 0; i < len(lines); i++ {
		out.WriteString(lines[i])
		name, ok := strings.CutPrefix(strings.TrimSpace(lines[i]), "<!-- transcript: ")
		if !ok {
			continue
		}
		name = strings.TrimSpace(strings.TrimSuffix(name, "-->"))
		t := byName[name]
		if t == nil {
			return "", fmt.Errorf("marker of transcript %q, which the generator does not make", name)
		}
		if i+1 >= len(lines) || strings.TrimSpace(lines[i+1]) != "```" {
			return "", fmt.Errorf("transcript %q: the marker must be followed by a ``` line", name)
		}
		end := i + 2
		for end < len(lines) && strings.TrimSpace(lines[end]) != "```" {
			end++
		}
		if end == len(lines) {
			return "", fmt.Errorf("transcript %q: its block is not closed", name)
		}
		out.WriteString(lines[i+1])
		out.WriteString(t.Text())
		out.WriteString(lines[end])
		i = end
		done[name] = true
	}
	for name := range byName {
		if !done[name] {
			return "", fmt.Errorf("no marker for transcript %q", name)
		}
	}
	return out.String(), nil
}
