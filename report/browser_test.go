package report_test

import (
	"bytes"
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/chromedp/cdproto/log"
	"github.com/chromedp/cdproto/network"
	"github.com/chromedp/cdproto/runtime"
	"github.com/chromedp/chromedp"

	"github.com/kmigrate/kmigrate/report"
)

// chromium finds the browser: $KMIGRATE_CHROMIUM, else Debian's chromium or a Chrome on PATH.
// Without one the test skips, saying why, unless KMIGRATE_REQUIRE_BROWSER=1 makes that a
// failure (CI sets it, so a missing package cannot pass silently).
func chromium(t *testing.T) string {
	t.Helper()
	if p := os.Getenv("KMIGRATE_CHROMIUM"); p != "" {
		return p
	}
	for _, name := range []string{"chromium", "chromium-browser", "google-chrome", "google-chrome-stable", "headless-shell"} {
		if p, err := exec.LookPath(name); err == nil {
			return p
		}
	}
	msg := "no chromium binary on PATH (looked for chromium, chromium-browser, google-chrome, headless-shell; or set KMIGRATE_CHROMIUM): install Debian's with apt-get install -y chromium"
	if os.Getenv("KMIGRATE_REQUIRE_BROWSER") == "1" {
		t.Fatal(msg + " (KMIGRATE_REQUIRE_BROWSER=1 makes this a failure)")
	}
	t.Skip(msg)
	return ""
}

// browser starts one headless chromium for the test, with a fresh profile, and stops it in
// t.Cleanup.
func browser(t *testing.T, bin string) context.Context {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	t.Cleanup(cancel)
	actx, acancel := chromedp.NewExecAllocator(ctx,
		chromedp.ExecPath(bin),
		chromedp.Flag("headless", true),
		chromedp.NoSandbox,
		chromedp.DisableGPU,
		chromedp.Flag("disable-quic", true),
		chromedp.NoFirstRun,
		chromedp.NoDefaultBrowserCheck,
		chromedp.Flag("disable-background-networking", true),
		chromedp.Flag("disable-component-update", true),
		chromedp.Flag("disable-sync", true),
		chromedp.Flag("disable-dev-shm-usage", true),
		chromedp.Flag("hide-scrollbars", true),
		chromedp.WindowSize(1280, 1000),
		chromedp.UserDataDir(t.TempDir()),
	)
	t.Cleanup(acancel)
	bctx, bcancel := chromedp.NewContext(actx)
	t.Cleanup(bcancel)
	if err := chromedp.Do(bctx); err != nil { // starts the browser
		t.Fatalf("start %s: %v", bin, err)
	}
	return bctx
}

// watcher collects what a page must not produce: console calls, uncaught exceptions, browser
// log entries (CSP violations, failed loads) and requests for anything but the page itself.
type watcher struct {
	mu       sync.Mutex
	problems []string
	requests []string
}

func watch(t *testing.T, tab context.Context) *watcher {
	t.Helper()
	w := &watcher{}
	err := chromedp.Listen(tab, func(ev any) {
		w.mu.Lock()
		defer w.mu.Unlock()
		switch ev := ev.(type) {
		case *runtime.EventConsoleAPICalled:
			var args []string
			for _, a := range ev.Args {
				args = append(args, string(a.Value)+a.Description)
			}
			w.problems = append(w.problems, fmt.Sprintf("console.%s: %s", ev.Type, strings.Join(args, " ")))
		case *runtime.EventExceptionThrown:
			d := ev.ExceptionDetails
			text := d.Text
			if d.Exception != nil {
				text += " " + d.Exception.Description
			}
			w.problems = append(w.problems, "exception: "+text)
		case *log.EventEntryAdded:
			if ev.Entry.Level == log.EntryLevelError || ev.Entry.Level == log.EntryLevelWarning {
				w.problems = append(w.problems, fmt.Sprintf("log %s %s: %s %s", ev.Entry.Level, ev.Entry.Source, ev.Entry.Text, ev.Entry.URL))
			}
		case *network.EventRequestWillBeSent:
			w.requests = append(w.requests, ev.Request.URL)
		case *network.EventLoadingFailed:
			w.problems = append(w.problems, fmt.Sprintf("loading failed: %s %s", ev.ErrorText, ev.BlockedReason))
		}
	})
	if err != nil {
		t.Fatalf("listen to the tab: %v", err)
	}
	return w
}

func (w *watcher) snapshot() (problems, requests []string) {
	w.mu.Lock()
	defer w.mu.Unlock()
	return append([]string(nil), w.problems...), append([]string(nil), w.requests...)
}

// facts is what the test reads from the rendered DOM.
type facts struct {
	Title     string            `json:"title"`
	Word      string            `json:"word"`
	Headline  string            `json:"headline"`
	Scripts   int               `json:"scripts"`
	Resources int               `json:"resources"`
	HeaderBG  string            `json:"headerBG"`
	Overflow  bool              `json:"overflow"`
	Counts    map[string]string `json:"counts"`
	Rows      []row             `json:"rows"`
	Bars      map[string]int    `json:"bars"`
	Items     map[string]int    `json:"items"`
	Empty     string            `json:"empty"`
	Text      string            `json:"text"`
}

type row struct {
	Partition string `json:"partition"`
	Group     string `json:"group"`
	Status    string `json:"status"`
	Level     string `json:"level"`
	Cells     string `json:"cells"`
}

const readFacts = `(() => {
  const q = (s) => document.querySelector(s);
  const all = (s) => [...document.querySelectorAll(s)];
  const bars = {};
  all('svg rect[class^="s-"]').forEach(r => { if (!r.closest('.legend')) bars[r.getAttribute('class')] = (bars[r.getAttribute('class')] || 0) + 1; });
  const items = {};
  all('.ranges').forEach(d => { items[d.dataset.partition] = d.querySelectorAll('.item').length; });
  return {
    title: document.title,
    word: q('#verdict-word').textContent,
    headline: q('#headline').textContent,
    scripts: document.scripts.length,
    resources: performance.getEntriesByType('resource').length,
    headerBG: getComputedStyle(q('header.top')).backgroundColor,
    overflow: document.documentElement.scrollWidth > window.innerWidth,
    counts: Object.fromEntries(all('[data-count]').map(c => [c.dataset.count, c.querySelector('.n').textContent])),
    rows: all('table.grid tbody tr').map(tr => ({
      partition: tr.dataset.partition || '', group: tr.dataset.group || '',
      status: (tr.querySelector('.pill') || {textContent: ''}).textContent, level: tr.dataset.level || '',
      cells: [...tr.cells].map(c => c.innerText.replace(/\s+/g, ' ').trim()).join(' | '),
    })),
    bars: bars,
    items: items,
    empty: (q('svg text.empty') || {textContent: ''}).textContent,
    text: document.body.innerText,
  };
})()`

func TestHTMLInBrowser(t *testing.T) {
	bin := chromium(t)
	pages := map[string][]byte{}
	for _, fx := range fixtures() {
		var buf bytes.Buffer
		if err := report.Write(&buf, report.HTML, fx.v, report.Options{}); err != nil {
			t.Fatal(err)
		}
		pages["/"+fx.name+".html"] = buf.Bytes()
	}
	var mu sync.Mutex // pages gains the negative control while the server runs
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		b, ok := pages[r.URL.Path]
		mu.Unlock()
		if !ok {
			http.NotFound(w, r)
			return
		}
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		_, _ = w.Write(b)
	}))
	t.Cleanup(srv.Close)
	bctx := browser(t, bin)

	load := func(t *testing.T, path string) (facts, []string, []string) {
		t.Helper()
		tab, cancel := chromedp.NewContext(bctx)
		t.Cleanup(cancel)
		w := watch(t, tab)
		if err := chromedp.Do(tab, chromedp.Navigate(srv.URL+path)); err != nil {
			t.Fatalf("navigate to %s: %v", path, err)
		}
		f, err := chromedp.Run(tab, chromedp.Evaluate[facts](readFacts))
		if err != nil {
			t.Fatalf("read the DOM of %s: %v", path, err)
		}
		if path == "/verify-differing.html" || path == "/reconcile-mixed.html" {
			shot(t, tab, strings.TrimSuffix(path[1:], ".html"))
		}
		problems, requests := w.snapshot()
		return f, problems, requests
	}

	tests := []struct {
		name     string
		word     string
		headline string
		counts   map[string]string
		rows     []string // status pill text per table row, in order
		bars     map[string]int
		items    map[string]int
		has      []string
	}{
		{
			name: "verify-differing", word: "DIFFERS", headline: "23 differences",
			counts: map[string]string{"matched": "2,673", "missing": "15", "duplicated": "5", "mismatched": "2", "extra": "1", "ambiguous": "4"},
			rows:   []string{"identical", "11 differences", "12 differences", "error: not aligned"},
			bars:   map[string]int{"s-missing": 2, "s-duplicated": 1, "s-mismatched": 1, "s-extra": 1},
			// HTML shows up to 200 items per list: all 12 missing offsets of partition 2.
			items: map[string]int{"1": 6, "2": 12, "3": 0},
			has:   []string{"target 300-304 = source 295-299", "source 610-611 → target 612-613 (value)", "NOT_LEADER_OR_FOLLOWER"},
		},
		{
			name: "verify-identical", word: "IDENTICAL", headline: "identical",
			counts: map[string]string{"matched": "49,871", "missing": "0", "ambiguous": "6"},
			rows:   []string{"identical", "identical (6 ambiguous)"},
			bars:   map[string]int{},
			items:  map[string]int{"1": 1},
			has:    []string{"No differences in any partition."},
		},
		{
			name: "reconcile-seed", word: "NOT EXACT", headline: "1 behind, 0 ahead",
			counts: map[string]string{"groups": "1", "partitions": "1", "exact": "0", "behind": "1", "ahead": "0", "redeliver": "8", "skip": "0"},
			rows:   []string{"behind: would re-deliver 8"},
			bars:   map[string]int{"s-redeliver": 1},
			has:    []string{"orders-consumer | Empty / Empty | orders/0 | 120 lag 30 | 112 lag 38 | 112 (behind 8) | 120 | behind: would re-deliver 8"},
		},
		{
			name: "reconcile-mixed", word: "DATA LOSS RISK",
			headline: "0 behind, 1 ahead, 1 pending, 1 without a target commit, 1 unmappable, 1 group failed",
			counts:   map[string]string{"groups": "4", "partitions": "5", "exact": "1", "ahead": "1", "redeliver": "1,200", "skip": "3"},
			rows: []string{"exact", "ahead: would skip 3 (data loss)", "pending: the mirror has not copied up to G yet",
				"no target commit: would re-deliver 1,200", "unmappable: E(G) unknown", "error: group not reconciled"},
			bars: map[string]int{"s-redeliver": 1, "s-skip": 1},
			has:  []string{"legacy<app>", "GROUP_AUTHORIZATION_FAILED", "kreconcile-backup-20261201T070000Z.json"},
		},
		{
			name: "lint-findings", word: "FINDINGS", headline: "4 findings",
			counts: map[string]string{"findings": "4", "errors": "2", "warnings": "1", "info": "1"},
			rows:   []string{"error", "error", "warning", "info"},
			bars:   map[string]int{},
			has:    []string{"offset.max.lag", "offset.lag.max", `names alias "source"`},
		},
		{
			name: "rollback", word: "INCOMPLETE", headline: "1 restored, 2 refused, 0 failed",
			rows: []string{"restored", "refused: the target group has 1 member: stop its consumers first, then rerun rollback",
				"1 partition moved since the apply, left alone (--force restores): payments/2 at 51 (apply wrote 48, backup 40)"},
			bars: map[string]int{},
			has:  []string{"billing | 2 | 0 | restored"},
		},
		{
			name: "topics-findings", word: "FINDINGS", headline: "6 findings: 2 risks, 3 warnings, 1 info",
			counts: map[string]string{"topics": "3", "findings": "6", "risks": "2", "warnings": "3", "info": "1"},
			rows:   []string{"", "", "", "", "risk", "missing", "ok", "warning", "warning", "risk", "risk", "info", "warning"},
			bars:   map[string]int{},
			has:    []string{"orders | max.message.bytes | 20061 (largest record, partition 4 offset 17) | 10000 | risk | no", "payments|eu"},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			f, problems, requests := load(t, "/"+tc.name+".html")
			for _, p := range problems {
				t.Errorf("page problem: %s", p)
			}
			if len(requests) != 1 || !strings.HasSuffix(requests[0], "/"+tc.name+".html") {
				t.Errorf("got requests %q, want only the page: it must be self-contained", requests)
			}
			if f.Resources != 0 || f.Scripts != 0 {
				t.Errorf("got %d sub-resources and %d scripts, want none", f.Resources, f.Scripts)
			}
			if f.HeaderBG != "rgb(36, 41, 47)" {
				t.Errorf("got header background %q, want rgb(36, 41, 47): the inline CSS did not apply", f.HeaderBG)
			}
			if f.Overflow {
				t.Errorf("the page is wider than a 1280 px window")
			}
			if f.Word != tc.word || f.Headline != tc.headline {
				t.Errorf("got verdict %q %q, want %q %q", f.Word, f.Headline, tc.word, tc.headline)
			}
			for k, want := range tc.counts {
				if got := f.Counts[k]; got != want {
					t.Errorf("card %s: got %q, want %q", k, got, want)
				}
			}
			var statuses []string
			for _, r := range f.Rows {
				statuses = append(statuses, r.Status)
			}
			if strings.Join(statuses, "\n") != strings.Join(tc.rows, "\n") {
				t.Errorf("got row statuses %q, want %q", statuses, tc.rows)
			}
			for k, want := range tc.bars {
				if got := f.Bars[k]; got != want {
					t.Errorf("chart: got %d %s bars, want %d (all: %v)", got, k, want, f.Bars)
				}
			}
			if len(tc.bars) == 0 && len(f.Bars) != 0 {
				t.Errorf("chart: got bars %v, want none", f.Bars)
			}
			for k, want := range tc.items {
				if got := f.Items[k]; got != want {
					t.Errorf("ranges of partition %s: got %d items, want %d", k, got, want)
				}
			}
			var cells []string
			for _, r := range f.Rows {
				cells = append(cells, r.Cells)
			}
			text := f.Text + "\n" + strings.Join(cells, "\n") + "\n" + f.Empty
			for _, want := range tc.has {
				if !strings.Contains(text, want) {
					t.Errorf("the page does not show %q", want)
				}
			}
		})
	}

	// The checks above must be able to fail: a page that throws, logs and loads a missing image
	// has to be caught.
	t.Run("negative control", func(t *testing.T) {
		mu.Lock()
		defer mu.Unlock()
		pages["/broken.html"] = []byte(`<!DOCTYPE html><html><head><title>broken</title></head><body>
<h1 id="headline">x</h1><span id="verdict-word">x</span><header class="top"></header>
<img src="/missing.png"><script>console.error("boom"); throw new Error("uncaught");</script></body></html>`)
		mu.Unlock()
		defer mu.Lock()
		_, problems, requests := load(t, "/broken.html")
		joined := strings.Join(problems, "\n")
		for _, want := range []string{"console.error", "exception", "404"} {
			if !strings.Contains(joined, want) {
				t.Errorf("got problems %q, want one with %q", problems, want)
			}
		}
		if len(requests) < 2 {
			t.Errorf("got requests %q, want the page and the image", requests)
		}
		t.Logf("caught: %q", problems)
	})

	// A report page that gained an external asset is caught twice: its Content-Security-Policy
	// blocks the load (a logged violation) and the attempt shows among the requests.
	t.Run("external asset blocked", func(t *testing.T) {
		mu.Lock()
		pages["/external.html"] = bytes.Replace(pages["/reconcile-seed.html"], []byte("</main>"),
			[]byte(`<img src="http://127.0.0.1:9/logo.png"><link rel="stylesheet" href="/x.css"></main>`), 1)
		mu.Unlock()
		_, problems, requests := load(t, "/external.html")
		if !strings.Contains(strings.Join(problems, "\n"), "Content Security Policy") {
			t.Errorf("got problems %q, want a Content Security Policy violation", problems)
		}
		if len(requests) != 3 {
			t.Errorf("got requests %q, want the page and the two blocked attempts", requests)
		}
		t.Logf("caught: %q", problems)
	})
}

// shot saves a full-page PNG: into $KMIGRATE_SCREENSHOT_DIR when set (to look at), else into
// the test's temporary directory, checking only that it is a PNG.
func shot(t *testing.T, tab context.Context, name string) {
	t.Helper()
	png, err := chromedp.Run(tab, chromedp.FullScreenshot(100))
	if err != nil {
		t.Fatalf("screenshot %s: %v", name, err)
	}
	if !bytes.HasPrefix(png, []byte("\x89PNG\r\n\x1a\n")) {
		t.Fatalf("screenshot %s: got no PNG", name)
	}
	dir := os.Getenv("KMIGRATE_SCREENSHOT_DIR")
	if dir == "" {
		dir = t.TempDir()
	}
	path := filepath.Join(dir, name+".png")
	if err := os.WriteFile(path, png, 0o644); err != nil {
		t.Fatal(err)
	}
	t.Logf("screenshot: %s (%d bytes)", path, len(png))
}
