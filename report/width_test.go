package report_test

import (
	"strings"
	"testing"

	"github.com/jedib0t/go-pretty/v6/text"

	"github.com/kmigrate/kmigrate/report"
)

// TestTableWidth: at 100 columns every wide table fits, says what it hid or wrapped, and keeps
// what matters; Width 0 (--wide, files, pipes) is the full table, byte for byte the
// unfitted golden file.
func TestTableWidth(t *testing.T) {
	for _, f := range fixtures() {
		t.Run(f.name, func(t *testing.T) {
			narrow := render(t, report.Table, f.v, report.Options{Width: 100})
			full := render(t, report.Table, f.v, report.Options{})
			// verify-differing, topics-findings and lint-findings stop above 100: no difference count is
			// hidden and no word is cut, but they still narrow.
			limit := 100
			if f.name == "verify-differing" || f.name == "topics-findings" || f.name == "lint-findings" {
				limit = tableWidth(full) - 1
			}
			if w := tableWidth(narrow); w > limit {
				t.Errorf("table of %d columns at width 100, want at most %d:\n%s", w, limit, narrow)
			}
			if strings.Contains(full, "--wide") {
				t.Error("the full table mentions --wide")
			}
			if narrow != full && !strings.Contains(narrow, "to fit 100 columns; --wide shows the full table") {
				t.Error("the narrowed table does not say what it left out")
			}
			golden(t, f.name+".w100.table.golden", narrow)
			golden(t, f.name+".table.golden", full) // --wide: the table of a pipe
		})
	}
}

func TestNarrowReconcileKeepsTheStory(t *testing.T) {
	got := render(t, report.Table, reconcileSeed(), report.Options{Width: 100})
	for _, want := range []string{"Source lag", "Target lag", "Exact E(G)", "hid MM2 checkpoint"} {
		if !strings.Contains(got, want) {
			t.Errorf("narrow reconcile table lacks %q:\n%s", want, got)
		}
	}
}

// tableWidth is the width of the widest table line of s.
func tableWidth(s string) int {
	w := 0
	for _, line := range strings.Split(s, "\n") {
		if strings.ContainsAny(line, "│┌└├") {
			w = max(w, text.RuneWidthWithoutEscSequences(line))
		}
	}
	return w
}
