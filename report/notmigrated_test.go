package report_test

import (
	"bytes"
	"strings"
	"testing"

	"github.com/kmigrate/kmigrate/reconcile"
	"github.com/kmigrate/kmigrate/report"
)

// A share group on the source is shown as not migrated, with why, in every format.
func TestReconcileNotMigratedGroup(t *testing.T) {
	t.Parallel()
	res := &reconcile.Result{Groups: []reconcile.Group{{
		Group: "queue", SourceState: "Stable", SourceType: "share", TargetState: "Dead", Partitions: []reconcile.Partition{},
		NotMigrated: "share group (KIP-932): not migrated",
	}}}
	for _, f := range []report.Format{report.Table, report.Markdown, report.JUnit, report.JSON, report.HTML} {
		var buf bytes.Buffer
		if err := report.Write(&buf, f, res, report.Options{}); err != nil {
			t.Fatalf("%s: %v", f, err)
		}
		want := "not migrated"
		if f == report.JSON {
			want = `"not_migrated": "share group (KIP-932): not migrated"`
		}
		if !strings.Contains(buf.String(), want) {
			t.Errorf("%s: no %q in\n%s", f, want, buf.String())
		}
	}
	var buf bytes.Buffer
	if err := report.Write(&buf, report.Table, res, report.Options{}); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(buf.String(), "NOT MIGRATED") {
		t.Errorf("verdict: want NOT MIGRATED in\n%s", buf.String())
	}
}
