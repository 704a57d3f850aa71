package report_test

import (
	"strings"
	"testing"

	"github.com/kmigrate/kmigrate/reconcile"
	"github.com/kmigrate/kmigrate/report"
)

// reconcileAborted is a transactional target after a crashed exactly-once mirror: records of
// aborted transactions after E(G) on one partition (a read_uncommitted consumer reads them
// again), a transaction still open on another, and a span too long to count on a third. The
// offset lags count markers and aborted records; the records left do not.
func reconcileAborted() *reconcile.Result {
	return &reconcile.Result{
		Groups: []reconcile.Group{{
			Group: "payments", SourceState: "Empty", TargetState: "Empty", AbortedAhead: 12,
			Partitions: []reconcile.Partition{
				{Topic: "payments", TargetTopic: "payments", Partition: 0, SourceCommitted: 3000, SourceEnd: 3030,
					SourceRecordsLeft: ptr(30), TargetCommitted: ptr(4990), TargetEnd: 5021, TargetLastStable: 5021,
					TargetRecordsLeft: ptr(30), ExactTarget: ptr(4990), Status: reconcile.StatusExact,
					AbortedAhead: ptr(12), AbortedRanges: []reconcile.OffsetRange{{First: 5001, Last: 5010}, {First: 5013, Last: 5014}},
					Proof: "fingerprint of source 2999 = target 4989 (checked to target end 5021)"},
				{Topic: "payments", TargetTopic: "payments", Partition: 1, SourceCommitted: 2000, SourceEnd: 2000,
					SourceRecordsLeft: ptr(0), TargetCommitted: ptr(2049), TargetEnd: 2060, TargetLastStable: 2050,
					TargetRecordsLeft: ptr(0), ExactTarget: ptr(2049), Status: reconcile.StatusExact,
					AbortedAhead: ptr(0), OpenTransaction: ptr(2050), AbortedNote: "open transaction at offset 2050: its records are not counted",
					Proof: "fingerprint of source 1999 = target 2048 (checked to target end 2060)"},
				{Topic: "payments", TargetTopic: "payments", Partition: 2, SourceCommitted: 100, SourceEnd: 90100,
					TargetCommitted: ptr(100), TargetEnd: 95000, TargetLastStable: 95000, ExactTarget: ptr(100),
					Status: reconcile.StatusExact, AbortedNote: "not counted (span of 94900 offsets larger than 10000)",
					Proof: "fingerprint of source 99 = target 99 (no later copy up to target offset 599)"},
			},
		}},
	}
}

func TestGoldenReconcileAborted(t *testing.T) {
	for _, gf := range goldenFormats {
		name := "reconcile-aborted." + gf.suffix + ".golden"
		t.Run(name, func(t *testing.T) {
			golden(t, name, render(t, gf.format, reconcileAborted(), gf.opt))
		})
	}
}

// Every format says plainly who reads the aborted records again, flags the group partition,
// and shows the records left beside the offset lag.
func TestReconcileAbortedSaid(t *testing.T) {
	const said = "12 aborted records after E(G) on payments/0: consumers reading read_uncommitted (the Java default) will read them again after the switch; read_committed consumers will not"
	for _, f := range []report.Format{report.Table, report.Markdown, report.HTML, report.JUnit} {
		got := strings.ReplaceAll(render(t, f, reconcileAborted(), report.Options{Width: 400}), `\_`, "_") // Markdown escapes "_"
		for _, want := range []string{said, "12 aborted records ahead", "31 (30 records)", "open transaction at offset 2050", "not counted (span of 94900 offsets larger than 10000)"} {
			if !strings.Contains(got, want) {
				t.Errorf("%s: no %q in\n%s", f, want, got)
			}
		}
	}
}
