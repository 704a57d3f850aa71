package verify

import (
	"strings"
	"testing"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/kmigrate/kmigrate/internal/testkit"
)

// A target topic holding the records of an aborted transaction (what a killed mirror leaves)
// is a finding of kverify topics with their count and offsets; a transaction still open is a
// note, its records not counted; without ScanAborted the target is not read.
func TestPreflightAbortedOnTarget(t *testing.T) {
	e := newTxnTarget(t)
	testkit.Produce(t, e.src, e.topic, 0, span(0, 9)...)
	testkit.Produce(t, e.dst, e.topic, 0, span(0, 4)...) // 0-4
	e.txn(t, kgo.TryAbort, false, span(5, 7)...)         // 5-7 aborted, marker 8
	e.txn(t, kgo.TryCommit, false, span(5, 7)...)        // 9-11, marker 12

	tc := topicCheck(t, preflight(t, e.src, e.dst, PreflightConfig{ScanAborted: true}), e.topic)
	f, ok := finding(tc, "aborted records")
	if !ok {
		t.Fatalf("no aborted records finding: %+v", tc.Findings)
	}
	if tc.Aborted == nil || tc.Aborted.Records != 3 || len(tc.Aborted.Partitions) != 1 {
		t.Fatalf("aborted on target %+v, want 3 records in partition 0", tc.Aborted)
	}
	if r := tc.Aborted.Partitions[0].Ranges; len(r) != 1 || r[0].From != 5 || r[0].To != 7 {
		t.Errorf("ranges %+v, want 5-7", r)
	}
	if !strings.Contains(f.Target, "3 in 1 partitions (partition 0: 3 at 5-7)") || f.Severity != SeverityWarning || !strings.Contains(f.Note, "read_uncommitted") {
		t.Errorf("finding %+v", f)
	}

	if tc := topicCheck(t, preflight(t, e.src, e.dst, PreflightConfig{}), e.topic); tc.Aborted != nil {
		t.Errorf("without ScanAborted the target was read: %+v", tc.Aborted)
	} else if _, ok := finding(tc, "aborted records"); ok {
		t.Errorf("without ScanAborted: an aborted records finding")
	}

	e.txn(t, kgo.TryAbort, true, span(8, 9)...) // 13-14, still open
	tc = topicCheck(t, preflight(t, e.src, e.dst, PreflightConfig{ScanAborted: true}), e.topic)
	if tc.Aborted == nil || tc.Aborted.Records != 3 {
		t.Fatalf("with a transaction open: aborted %+v, want the same 3 records", tc.Aborted)
	}
	if o := tc.Aborted.Partitions[0].Open; o == nil || o.From != 13 || o.To != 14 {
		t.Errorf("open transaction %+v, want 13-14", o)
	}
	if !strings.Contains(strings.Join(tc.Notes, "\n"), "a transaction is still open at offsets 13-14") {
		t.Errorf("notes %q: want the open transaction", tc.Notes)
	}
}

// A target without aborted records gets no finding.
func TestPreflightNoAbortedOnTarget(t *testing.T) {
	e := newTxnTarget(t)
	testkit.Produce(t, e.src, e.topic, 0, span(0, 4)...)
	e.txn(t, kgo.TryCommit, false, span(0, 4)...)
	tc := topicCheck(t, preflight(t, e.src, e.dst, PreflightConfig{ScanAborted: true}), e.topic)
	if _, ok := finding(tc, "aborted records"); ok || tc.Aborted == nil || tc.Aborted.Records != 0 {
		t.Errorf("findings %+v, aborted %+v: want none, 0 records", tc.Findings, tc.Aborted)
	}
}
