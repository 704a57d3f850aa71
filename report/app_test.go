package report_test

import (
	"strings"
	"testing"

	"github.com/kmigrate/kmigrate/reconcile"
	"github.com/kmigrate/kmigrate/report"
)

// TestApplicationRendered: a Kafka Streams application is one group with its parts and
// checks beneath, and one that is not ready makes the verdict incomplete, though each of its
// partitions is exact, in every format.
func TestApplicationRendered(t *testing.T) {
	e, end := int64(38), int64(30)
	res := &reconcile.Result{Groups: []reconcile.Group{{Group: "wordcount", SourceState: "Empty", TargetState: "Empty",
		Partitions: []reconcile.Partition{{Topic: "lines", TargetTopic: "lines", Partition: 0, SourceCommitted: 30, ExactTarget: &e, TargetCommitted: &e, Status: reconcile.StatusExact}},
		App: &reconcile.App{ID: "wordcount", RecognisedBy: "internal topics", Inputs: []string{"lines"}, Repartition: []string{"wordcount-count-repartition"},
			Changelogs: []string{"wordcount-count-changelog"},
			State:      []reconcile.Partition{{Topic: "wordcount-count-changelog", Partition: 0, SourceCommitted: end, Status: reconcile.StatusPending}},
			Problems:   []string{"changelog wordcount-count-changelog/0 is not copied to its end 30 on the target (pending)"},
			LocalState: []string{"wipe it"}}}}}
	for _, f := range []report.Format{report.Table, report.Markdown, report.HTML} {
		out := render(t, f, res, report.Options{})
		for _, want := range []string{"INCOMPLETE", "1 application not ready", "Kafka Streams application wordcount", "not copied to its end 30", "state wordcount-count-changelog/0: source end 30"} {
			if !strings.Contains(out, want) {
				t.Errorf("%s lacks %q:\n%s", f, want, out)
			}
		}
	}
}
