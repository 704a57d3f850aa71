package main

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/kmigrate/kmigrate/internal/testkit"
	"github.com/kmigrate/kmigrate/verify"
)

// docPath is the page whose transcripts the generator writes.
const docPath = "../../docs/verify.md"

// TestTranscripts runs the generator on kfake and checks that each command ends as the page
// says (exit status and the findings the prose names), then that the transcripts in
// docs/verify.md are the ones it prints now: a change of kverify's output or of the data
// fails here until `make docs-transcripts` is run again.
func TestTranscripts(t *testing.T) {
	if testing.Short() {
		t.Skip("builds kverify and runs it on kfake")
	}
	kverify := filepath.Join(testkit.Commands(t, "kverify"), "kverify")
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	ts, err := All(ctx, kverify)
	if err != nil {
		t.Fatal(err)
	}
	if len(ts) != 2 {
		t.Fatalf("%d transcripts, want flow and across-sites", len(ts))
	}
	checkRan(t, ts[0], []want{
		{"kverify diff --source-brokers old:9092 --target-brokers new:9092 --all", 1, []string{
			"DIFFERS: 13 differences in 2 of 4 topics",
			"(4 topics selected)",
			"│ charlie │ charlie      │ 3 differences  │",
			`target topic "delta" does not exist`,
			"charlie partition 1: 3 differences",
			"  missing      source 10-12",
			"total: 4 topics, 8 partitions: 132 matched, 13 missing, 0 duplicated, 0 mismatched, 0 extra, 0 ambiguous",
		}},
	})
	checkRan(t, ts[1], []want{
		{"kverify digest --side source", 0, []string{"2 partitions, 40000 records"}},
		{"kverify digest --side target", 0, []string{"2 partitions, 40008 records"}},
		{"kverify compare orders.source.digest orders.target.digest", 1, []string{
			"3 differing regions", "partition 1: source [0, 20000) 38 chunks, target [0, 20000) 38 chunks, 38 matched"}},
		{"kverify compare orders.source.digest orders.target.digest --drill", 1, []string{
			"in 1 of 1 partitions",
			"  missing      source 5000-5002",
			"  duplicated   target 8998-9008 = source 8990-9000",
			"  mismatched   source 12000 → target 12008 (value)",
		}},
		{"kverify diff --source-brokers old:9092 --target-brokers new:9092 --topic orders", 1, nil},
		{"kverify check-evidence orders.evidence.json", 0, []string{
			"matches: report diff.json",
			`matches: source topic "orders" partition 0 [0, 20000): 20000 records`,
			`matches: target topic "orders" partition 0 [0, 20008): 20008 records`,
		}},
	})
	// The drill reports what kverify diff reports for the same copy.
	var res verify.Result
	if err := json.Unmarshal(ts[1].Files["diff.json"], &res); err != nil {
		t.Fatalf("diff.json: %v", err)
	}
	var found []string
	for _, p := range res.Partitions {
		for _, r := range p.MissingRanges {
			found = append(found, fmt.Sprintf("p%d missing %d-%d", p.Partition, r.From, r.To))
		}
		if len(p.Duplicates) > 0 {
			d := p.Duplicates
			found = append(found, fmt.Sprintf("p%d duplicated %d: target %d-%d", p.Partition, len(d), d[0].Target, d[len(d)-1].Target))
		}
		for _, m := range p.Mismatches {
			found = append(found, fmt.Sprintf("p%d mismatched %d->%d", p.Partition, m.SourceOffset, m.TargetOffset))
		}
		if len(p.ExtraRanges) > 0 {
			found = append(found, fmt.Sprintf("p%d extra %v", p.Partition, p.ExtraRanges))
		}
	}
	if got, want := strings.Join(found, "; "), "p0 missing 5000-5002; p0 duplicated 11: target 8998-9008; p0 mismatched 12000->12008"; got != want {
		t.Errorf("kverify diff's report holds %s, want %s (the drill's findings)", got, want)
	}

	doc, err := os.ReadFile(docPath)
	if err != nil {
		t.Fatal(err)
	}
	fresh, err := Splice(string(doc), ts)
	if err != nil {
		t.Fatal(err)
	}
	if a, b := stable(string(doc)), stable(fresh); a != b {
		al, bl := strings.Split(a, "\n"), strings.Split(b, "\n")
		for i := 0; i < len(al) && i < len(bl); i++ {
			if al[i] != bl[i] {
				t.Fatalf("docs/verify.md line %d is not what the generator prints now (run make docs-transcripts):\n doc: %s\n now: %s", i+1, al[i], bl[i])
			}
		}
		t.Fatalf("docs/verify.md has %d lines, with the transcripts printed now %d (run make docs-transcripts)", len(al), len(bl))
	}
}

type want struct {
	prefix   string // of the command as shown
	exit     int
	contains []string
}

func checkRan(t *testing.T, tr *Transcript, wants []want) {
	t.Helper()
	if len(tr.Ran) != len(wants) {
		t.Fatalf("transcript %s ran %d commands, want %d", tr.Name, len(tr.Ran), len(wants))
	}
	for i, w := range wants {
		r := tr.Ran[i]
		if !strings.HasPrefix(r.Shown, w.prefix) {
			t.Errorf("%s command %d: %s, want %s...", tr.Name, i+1, r.Shown, w.prefix)
			continue
		}
		if r.Exit != w.exit {
			t.Errorf("%s: exit %d, want %d\n%s", r.Shown, r.Exit, w.exit, r.Output)
		}
		for _, s := range w.contains {
			if !strings.Contains(r.Output, s) {
				t.Errorf("%s: the output lacks %q\n%s", r.Shown, s, r.Output)
			}
		}
	}
}

// digestSize is the part of kverify digest's line that depends on the binary: the file holds
// the tool's version.
var digestSize = regexp.MustCompile(`\.digest: \d+ bytes, [0-9.]+% of`)

func stable(s string) string { return digestSize.ReplaceAllString(s, ".digest: N bytes, N% of") }

// TestTrim: the lines kept are the first Head and the last Tail, with "…" where lines were
// left out, and everything when nothing would be.
func TestTrim(t *testing.T) {
	lines := strings.Split("a b c d e f", " ")
	for _, tc := range []struct {
		trim Trim
		want string
	}{
		{Trim{}, "a b c d e f"},
		{Trim{Head: 2, Tail: 1}, "a b … f"},
		{Trim{Head: 4}, "a b c d …"},
		{Trim{Head: 3, Tail: 3}, "a b c d e f"},
	} {
		if got := strings.Join(tc.trim.apply(lines), " "); got != tc.want {
			t.Errorf("%+v: %q, want %q", tc.trim, got, tc.want)
		}
	}
}

// TestSplice: the block after each marker is replaced, the rest kept; a marker without a
// transcript, or a transcript without a marker, is an error.
func TestSplice(t *testing.T) {
	tr := &Transcript{Name: "x", lines: []string{"$ kverify a", "(exit 0)"}}
	doc := "intro\n<!-- transcript: x -->\n```\nold\nlines\n```\nafter\n"
	got, err := Splice(doc, []*Transcript{tr})
	if want := "intro\n<!-- transcript: x -->\n```\n$ kverify a\n(exit 0)\n```\nafter\n"; err != nil || got != want {
		t.Fatalf("Splice: %q, %v; want %q", got, err, want)
	}
	if _, err := Splice("<!-- transcript: y -->\n```\n```\n", []*Transcript{tr}); err == nil {
		t.Error("a marker of an unknown transcript: no error")
	}
	if _, err := Splice("no markers\n", []*Transcript{tr}); err == nil {
		t.Error("a transcript without a marker: no error")
	}
}
