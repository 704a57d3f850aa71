package report_test

import (
	"bytes"
	"encoding/json"
	"flag"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/kmigrate/kmigrate/align"
	"github.com/kmigrate/kmigrate/mm2"
	"github.com/kmigrate/kmigrate/reconcile"
	"github.com/kmigrate/kmigrate/report"
	"github.com/kmigrate/kmigrate/verify"
)

var update = flag.Bool("update", false, "rewrite report/testdata/*.golden from the current output")

type fixture struct {
	name string
	v    any
}

func fixtures() []fixture {
	return []fixture{
		{"verify-differing", verifyDiffering()},
		{"verify-identical", verifyIdentical()},
		{"verify-aborted", verifyAborted()},
		{"reconcile-seed", reconcileSeed()},
		{"reconcile-mixed", reconcileMixed()},
		{"lint-findings", lintFindings()},
		{"rollback", rollbackMixed()},
		{"topics-findings", topicsFindings()},
		{"topics-clean", topicsClean()},
	}
}

var goldenFormats = []struct {
	suffix string
	format report.Format
	opt    report.Options
}{
	{"table", report.Table, report.Options{}},
	{"color.table", report.Table, report.Options{Color: true}},
	{"json", report.JSON, report.Options{}},
	{"md", report.Markdown, report.Options{}},
	{"html", report.HTML, report.Options{}},
	{"junit.xml", report.JUnit, report.Options{}},
}

func render(t *testing.T, f report.Format, v any, opt report.Options) string {
	t.Helper()
	var buf bytes.Buffer
	if err := report.Write(&buf, f, v, opt); err != nil {
		t.Fatalf("Write(%s, %T): %v", f, v, err)
	}
	return buf.String()
}

// golden compares got with testdata/name, or rewrites it under -update.
func golden(t *testing.T, name, got string) {
	t.Helper()
	path := filepath.Join("testdata", name)
	if *update {
		if err := os.WriteFile(path, []byte(got), 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("read golden file: %v (run go test ./report -update to create it)", err)
	}
	if got != string(want) {
		t.Errorf("%s differs from the golden file (run go test ./report -update after checking the change)\n--- got ---\n%s\n--- want ---\n%s",
			name, got, want)
	}
}

func TestGolden(t *testing.T) {
	for _, fx := range fixtures() {
		for _, gf := range goldenFormats {
			name := fx.name + "." + gf.suffix + ".golden"
			t.Run(name, func(t *testing.T) {
				golden(t, name, render(t, gf.format, fx.v, gf.opt))
			})
		}
	}
}

func TestSummaryFirst(t *testing.T) {
	tests := []struct {
		name     string
		v        any
		headline string
	}{
		{"verify with differences", verifyDiffering(), "23 differences"},
		{"verify identical", verifyIdentical(), "identical"},
		{"reconcile seed", reconcileSeed(), "1 behind, 0 ahead"},
		{"reconcile all exact", exactOnly(), "all exact"},
		{"reconcile mixed", reconcileMixed(), "0 behind, 1 ahead, 1 pending, 1 without a target commit, 1 unmappable, 1 group failed"},
		{"lint findings", lintFindings(), "4 findings"},
		{"lint clean", []mm2.Finding{}, "no findings"},
		{"rollback", rollbackMixed(), "1 restored, 2 refused, 0 failed"},
		{"topics findings", topicsFindings(), "6 findings: 2 risks, 3 warnings, 1 info"},
		{"topics clean", topicsClean(), "no findings"},
		{"parser warnings", []mm2.Warning{{Line: 3, Key: "offset.max.lag", Message: "unknown key", Suggestion: "offset.lag.max"}}, "1 finding"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			for _, f := range []report.Format{report.Table, report.Markdown, report.HTML} {
				out := render(t, f, tc.v, report.Options{})
				i := strings.Index(out, tc.headline)
				if i < 0 {
					t.Fatalf("%s: headline %q not in output:\n%s", f, tc.headline, out)
				}
				// The verdict comes before any table: an operator sees it first.
				for _, marker := range []string{"┌", "| ---", "<table"} {
					if j := strings.Index(out, marker); j >= 0 && j < i {
						t.Errorf("%s: got the headline at %d after a table at %d, want it first", f, i, j)
					}
				}
			}
		})
	}
}

func exactOnly() *reconcile.Result {
	r := reconcileSeed()
	p := &r.Groups[0].Partitions[0]
	p.TargetCommitted, p.Checkpoint = ptr(120), ptr(120)
	p.Status, p.CheckpointStatus, p.RedeliveredIfUnchanged = reconcile.StatusExact, reconcile.StatusExact, 0
	return r
}

func TestStatusWording(t *testing.T) {
	out := render(t, report.Table, reconcileMixed(), report.Options{})
	for _, want := range []string{"ahead: would skip 3 (data loss)", "no target commit: would re-deliver 1,200",
		"pending", "unmappable", "apply refused: the source group is Stable", "GROUP_AUTHORIZATION_FAILED"} {
		if !strings.Contains(out, want) {
			t.Errorf("table: got no %q in\n%s", want, out)
		}
	}
	out = render(t, report.Table, reconcileSeed(), report.Options{})
	for _, want := range []string{"behind: would re-deliver 8", "112 (behind 8)", "switching now would re-deliver 8 records"} {
		if !strings.Contains(out, want) {
			t.Errorf("seed table: got no %q in\n%s", want, out)
		}
	}
}

func TestLongListsTruncatedExceptJSON(t *testing.T) {
	r := verifyDiffering()
	for _, f := range []report.Format{report.Table, report.Markdown} {
		out := render(t, f, r, report.Options{})
		if !strings.Contains(out, "… and 7 more") {
			t.Errorf("%s: got no \"… and 7 more\" for 12 missing ranges with the default limit 5:\n%s", f, out)
		}
		if strings.Contains(out, "650") {
			t.Errorf("%s: got the 12th missing range 650, want it cut", f)
		}
		out = render(t, f, r, report.Options{MaxItems: 20})
		if strings.Contains(out, "more") && strings.Contains(out, "… and 7 more") {
			t.Errorf("%s with MaxItems 20: got a cut list, want all 12", f)
		}
	}
	var back verify.Result
	if err := json.Unmarshal([]byte(render(t, report.JSON, r, report.Options{})), &back); err != nil {
		t.Fatal(err)
	}
	if got, want := len(back.Partitions[2].MissingRanges), 12; got != want {
		t.Errorf("json: got %d missing ranges, want %d", got, want)
	}
}

func TestColorOnlyWhenAsked(t *testing.T) {
	for _, fx := range fixtures() {
		plain := render(t, report.Table, fx.v, report.Options{})
		if strings.Contains(plain, "\x1b[") {
			t.Errorf("%s: got ANSI escapes with Color false", fx.name)
		}
		for _, f := range []report.Format{report.Markdown, report.HTML, report.JUnit} {
			if out := render(t, f, fx.v, report.Options{Color: true}); strings.Contains(out, "\x1b[") {
				t.Errorf("%s %s: got ANSI escapes, want colour in tables only", fx.name, f)
			}
		}
		if colored := render(t, report.Table, fx.v, report.Options{Color: true}); !strings.Contains(colored, "\x1b[") {
			t.Errorf("%s: got no ANSI escapes with Color true", fx.name)
		}
	}
}

func TestEscaping(t *testing.T) {
	r := reconcileSeed()
	r.Groups[0].Group = `<script>alert(1)</script>|*x*`
	html := render(t, report.HTML, r, report.Options{Title: `"><img src=x>`})
	for _, bad := range []string{"<script>alert", `<img src=x>`} {
		if strings.Contains(html, bad) {
			t.Errorf("html: got unescaped %q", bad)
		}
	}
	if !strings.Contains(html, "&lt;script&gt;alert(1)&lt;/script&gt;") {
		t.Errorf("html: got no escaped group name")
	}
	md := render(t, report.Markdown, r, report.Options{})
	if !strings.Contains(md, `&lt;script&gt;alert(1)&lt;/script&gt;\|\*x\*`) {
		t.Errorf("markdown: got the group name unescaped:\n%s", md)
	}
}

func TestUnknownType(t *testing.T) {
	tests := []struct {
		name string
		v    any
		want string
	}{
		{"struct", struct{ A int }{1}, "cannot render a struct { A int } as table"},
		{"nil verify", (*verify.Result)(nil), "verify result: it is nil"},
		{"nil reconcile", (*reconcile.Result)(nil), "reconcile result: it is nil"},
		{"no topics", []*verify.Result{}, "no verify results"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			err := report.Write(&bytes.Buffer{}, report.Table, tc.v, report.Options{})
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("got error %v, want one containing %q", err, tc.want)
			}
		})
	}
	if err := report.Write(&bytes.Buffer{}, report.Format("yaml"), verifyIdentical(), report.Options{}); err == nil {
		t.Errorf("format yaml: got no error")
	}
	// JSON writes any value: it is the interface for results this package does not draw.
	if err := report.Write(&bytes.Buffer{}, report.JSON, map[string]int{"a": 1}, report.Options{}); err != nil {
		t.Errorf("json of a map: got %v, want nil", err)
	}
}

func TestMultipleTopics(t *testing.T) {
	rs := []*verify.Result{verifyIdentical(), verifyDiffering()}
	out := render(t, report.Table, rs, report.Options{})
	for _, want := range []string{"kverify: 2 topics", "1 of 2 topics identical", "payments → dc1.payments", "orders → orders"} {
		if !strings.Contains(out, want) {
			t.Errorf("got no %q in\n%s", want, out)
		}
	}
	doc := parseJUnit(t, render(t, report.JUnit, rs, report.Options{}))
	if got, want := len(doc.Suites), 2; got != want {
		t.Errorf("junit: got %d suites, want one per topic, %d", got, want)
	}
}

func TestParseFormat(t *testing.T) {
	for _, f := range report.Formats {
		got, err := report.ParseFormat(strings.ToUpper(string(f)))
		if err != nil || got != f {
			t.Errorf("ParseFormat(%q): got %q, %v, want %q", strings.ToUpper(string(f)), got, err, f)
		}
	}
	if _, err := report.ParseFormat("yaml"); err == nil || !strings.Contains(err.Error(), "table, json") {
		t.Errorf("ParseFormat(yaml): got %v, want an error listing the formats", err)
	}
}

func TestWriteFiles(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "reports")
	if err := report.WriteFiles(dir, "seed", reconcileSeed()); err != nil {
		t.Fatal(err)
	}
	for _, ext := range []string{"html", "xml", "json"} {
		b, err := os.ReadFile(filepath.Join(dir, "seed."+ext))
		if err != nil {
			t.Fatalf("got no seed.%s: %v", ext, err)
		}
		if len(b) == 0 {
			t.Errorf("seed.%s is empty", ext)
		}
	}
	if err := report.WriteFiles("", "seed", reconcileSeed()); err != nil {
		t.Errorf("empty dir: got %v, want nil (nothing written)", err)
	}
	if err := report.WriteFiles(dir, "../x", reconcileSeed()); err == nil {
		t.Errorf("name with a slash: got no error")
	}
	if err := report.WriteFiles(dir, "bad", struct{}{}); err == nil {
		t.Errorf("unknown type: got no error")
	}
	if _, err := os.Stat(filepath.Join(dir, "bad.html")); err == nil {
		t.Errorf("unknown type: got bad.html written, want nothing")
	}
}

// TestLargeResultBounded renders a topic of 512 partitions, one with 20,000 missing ranges:
// every format stays bounded except JSON, which keeps everything, and the chart shows the
// partitions that matter.
func TestLargeResultBounded(t *testing.T) {
	r := &verify.Result{SourceTopic: "big", TargetTopic: "big", Compared: []string{"key", "value"}}
	for p := int32(0); p < 512; p++ {
		pr := align.PartitionResult{Partition: p, Counts: align.Counts{Matched: 100_000}, SourceEnd: 100_000, TargetEnd: 100_000}
		if p == 300 {
			for i := int64(0); i < 20_000; i++ {
				pr.MissingRanges = append(pr.MissingRanges, align.SourceRange{From: 5 * i, To: 5 * i})
			}
			pr.Missing, pr.Matched = 20_000, 80_000
		}
		r.Partitions = append(r.Partitions, pr)
		r.Summary.Add(pr.Counts)
	}
	tests := []struct {
		format  report.Format
		maxSize int
		has     string
	}{
		{report.Table, 200_000, "… and 19995 more"},
		{report.Markdown, 200_000, "… and 19995 more"},
		{report.HTML, 1_000_000, "… and 19800 more"},
		{report.JUnit, 1_000_000, "… and 19000 more"},
		{report.JSON, 100_000_000, `"source_from": 99995`},
	}
	for _, tc := range tests {
		t.Run(string(tc.format), func(t *testing.T) {
			start := time.Now()
			out := render(t, tc.format, r, report.Options{})
			t.Logf("%s: %d bytes in %v", tc.format, len(out), time.Since(start).Round(time.Millisecond))
			if len(out) > tc.maxSize {
				t.Errorf("got %d bytes, want at most %d", len(out), tc.maxSize)
			}
			if !strings.Contains(out, tc.has) {
				t.Errorf("got no %q", tc.has)
			}
		})
	}
	html := render(t, report.HTML, r, report.Options{})
	if !strings.Contains(html, ">partition 300<") || !strings.Contains(html, "511 rows with nothing to show") {
		t.Errorf("chart: got no partition 300 alone, with the 511 empty rows left out")
	}
}

func TestChartKeepsLargestRows(t *testing.T) {
	r := &verify.Result{SourceTopic: "wide", TargetTopic: "wide"}
	for p := int32(0); p < 100; p++ {
		pr := align.PartitionResult{Partition: p, Counts: align.Counts{Matched: 10, Missing: int64(p) + 1}}
		r.Partitions = append(r.Partitions, pr)
		r.Summary.Add(pr.Counts)
	}
	html := render(t, report.HTML, r, report.Options{})
	for _, want := range []string{"the 40 largest of 100", ">partition 99<", ">partition 60<", "60 rows with smaller values"} {
		if !strings.Contains(html, want) {
			t.Errorf("got no %q in the chart", want)
		}
	}
	if strings.Contains(html, ">partition 59<") {
		t.Errorf("got partition 59 in the chart, want only the 40 largest (60-99)")
	}
}
