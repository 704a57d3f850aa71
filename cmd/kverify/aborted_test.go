package main

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/kmigrate/kmigrate/align"
	"github.com/kmigrate/kmigrate/digest"
	"github.com/kmigrate/kmigrate/internal/testkit"
	"github.com/kmigrate/kmigrate/verify"
)

// abortedSentence is what kverify diff says of 8 aborted target records, 5 of them copies.
const abortedSentence = "8 aborted records on the target (5 copies of committed records): consumers reading read_uncommitted (the Java default) would read them; read_committed consumers do not"

// txnPair is a source and a target kfake cluster of their own cluster IDs with topic on both,
// and what writes transactions to the target.
type txnPair struct {
	src, dst           *kgo.Client
	srcSeeds, dstSeeds string
	fake               *kfake.Cluster
	topic              string
}

func newTxnPair(t *testing.T, partitions int32) *txnPair {
	t.Helper()
	src, srcSeeds, _ := fakeCluster(t)
	fc := testkit.NewCluster(t, kfake.ClusterID(fmt.Sprintf("fake-%d", clusterSeq.Add(1))))
	p := &txnPair{src: src, dst: fc.Client, srcSeeds: srcSeeds, dstSeeds: fc.Seeds, fake: fc.Cluster, topic: testkit.TopicName("orders")}
	testkit.CreateTopic(t, p.src, p.topic, partitions, nil)
	testkit.CreateTopic(t, p.dst, p.topic, partitions, nil)
	return p
}

// txn writes recs to target partition part in one transaction of a new transactional client
// and ends it with end (kgo.TryAbort: an aborted batch and its marker, as a killed or fenced
// mirror leaves them); with open it is left open until the test ends.
func (p *txnPair) txn(t *testing.T, part int32, end kgo.TransactionEndTry, open bool, rs ...*kgo.Record) {
	t.Helper()
	testkit.WriteTxn(t, p.fake, p.topic, part, end, open, rs...)
}

// abortedMirror is source 0-9 in partitions 0 and 1, copied read_committed exactly; on the
// target, partition 0 has source 5-9 aborted once (at 5-9, marker 10) and written again
// (11-15), partition 1 three aborted records that copy nothing (5-7, marker 8) and a
// transaction left open after the copy (14-15).
func abortedMirror(t *testing.T) *txnPair {
	p := newTxnPair(t, 2)
	for part := int32(0); part < 2; part++ {
		testkit.Produce(t, p.src, p.topic, part, recs(0, 9)...)
		testkit.Produce(t, p.dst, p.topic, part, recs(0, 4)...)
	}
	p.txn(t, 0, kgo.TryAbort, false, recs(5, 9)...)
	testkit.Produce(t, p.dst, p.topic, 0, recs(5, 9)...)
	p.txn(t, 1, kgo.TryAbort, false, recs(100, 102)...)
	testkit.Produce(t, p.dst, p.topic, 1, recs(5, 9)...)
	p.txn(t, 1, kgo.TryCommit, true, recs(200, 201)...)
	return p
}

func readComparison(t *testing.T, out string) (digest.Comparison, map[string]json.RawMessage) {
	t.Helper()
	var cmp digest.Comparison
	var raw map[string]json.RawMessage
	if err := json.Unmarshal([]byte(out), &cmp); err != nil {
		t.Fatalf("compare --format json: %v\n%s", err, out)
	}
	if err := json.Unmarshal([]byte(out), &raw); err != nil {
		t.Fatal(err)
	}
	return cmp, raw
}

// The target digest records per partition the aborted records its read_committed read passed
// over, the copies among them and the open transaction; compare says so in kverify diff's
// words, in text and JSON, and the verdict stays the read_committed one.
func TestDigestCompareAborted(t *testing.T) {
	p := abortedMirror(t)
	sd, td := digests(t, p.srcSeeds, p.dstSeeds, p.topic, "--chunk-records", "16")
	code, out, errs := run(t, "digest", "--side", "target", "--target-brokers", p.dstSeeds, "--topic", p.topic, "--out", td, "--chunk-records", "16")
	if code != 0 || !strings.Contains(out, "8 aborted records passed over (5 copies of committed records)") || !strings.Contains(out, "ends in 1 partition, not read") {
		t.Errorf("digest of the target: exit %d, want 0 naming the aborted records and the open transaction\n%s%s", code, out, errs)
	}

	tf, err := digest.ReadFile(td)
	if err != nil {
		t.Fatal(err)
	}
	want := []*digest.Txns{
		{Aborted: 5, AbortedCopies: 5, AbortedRanges: []align.TargetRange{{From: 5, To: 9}}},
		{Aborted: 3, AbortedRanges: []align.TargetRange{{From: 5, To: 7}}, OpenTransaction: &align.TargetRange{From: 14, To: 15}},
	}
	for i, tp := range tf.Partitions {
		if !reflect.DeepEqual(tp.Txns, want[i]) {
			t.Errorf("target digest partition %d: transactions %+v, want %+v", tp.Partition, tp.Txns, want[i])
		}
	}
	sf, err := digest.ReadFile(sd)
	if err != nil {
		t.Fatal(err)
	}
	for _, sp := range sf.Partitions {
		if sp.Txns != nil {
			t.Errorf("source digest partition %d records transactions %+v: the source is read as before", sp.Partition, sp.Txns)
		}
	}

	code, out, errs = run(t, "compare", sd, td)
	if code != 0 || !strings.Contains(out, ": identical\n") {
		t.Fatalf("compare: exit %d, want 0 identical (read_committed)\n%s%s", code, out, errs)
	}
	t.Logf("%s", out)
	for _, s := range []string{abortedSentence,
		"a transaction is open on the target in partition 1 (2 records past the last stable offset)",
		"target offsets of aborted transactions, read by read_uncommitted consumers (5 records, 5 copies of committed records): 5-9",
		"(3 records, 0 copies of committed records): 5-7",
		"target offsets of a transaction still open, not compared until it ends: 14-15"} {
		if !strings.Contains(out, s) {
			t.Errorf("compare text lacks %q:\n%s", s, out)
		}
	}

	code, out, errs = run(t, "compare", sd, td, "--format", "json")
	if code != 0 {
		t.Fatalf("compare --format json: exit %d, want 0\n%s%s", code, out, errs)
	}
	cmp, raw := readComparison(t, out)
	if !cmp.Identical || cmp.Aborted == nil || *cmp.Aborted != 8 || *cmp.AbortedCopies != 5 || cmp.AbortedNotRecorded != "" {
		t.Errorf("compare JSON: identical %v, aborted %v, copies %v, not recorded %q; want identical, 8, 5", cmp.Identical, cmp.Aborted, cmp.AbortedCopies, cmp.AbortedNotRecorded)
	}
	wantTxns := []digest.TxnPartition{{Partition: 0, Txns: *want[0]}, {Partition: 1, Txns: *want[1]}}
	if !reflect.DeepEqual(cmp.TargetTransactions, wantTxns) {
		t.Errorf("compare JSON target_transactions %+v, want %+v", cmp.TargetTransactions, wantTxns)
	}
	for _, k := range []string{"aborted", "aborted_copies", "target_transactions"} {
		if _, ok := raw[k]; !ok {
			t.Errorf("compare JSON lacks %q", k)
		}
	}
}

// A target written with committed transactions only: the digest records nothing aborted and
// compare says nothing of it (JSON: aborted 0, no target_transactions).
func TestDigestCompareNoAborted(t *testing.T) {
	p := newTxnPair(t, 1)
	testkit.Produce(t, p.src, p.topic, 0, recs(0, 9)...)
	p.txn(t, 0, kgo.TryCommit, false, recs(0, 4)...)
	p.txn(t, 0, kgo.TryCommit, false, recs(5, 9)...)
	sd, td := digests(t, p.srcSeeds, p.dstSeeds, p.topic, "--chunk-records", "16")
	code, out, errs := run(t, "compare", sd, td)
	if code != 0 || strings.Contains(out, "aborted") || strings.Contains(out, "transaction") {
		t.Fatalf("compare: exit %d, want 0 saying nothing of transactions\n%s%s", code, out, errs)
	}
	code, out, errs = run(t, "compare", sd, td, "--format", "json")
	cmp, raw := readComparison(t, out)
	if code != 0 || cmp.Aborted == nil || *cmp.Aborted != 0 || *cmp.AbortedCopies != 0 || raw["target_transactions"] != nil {
		t.Errorf("compare JSON: exit %d, aborted %v, target_transactions %s; want 0, recorded 0, none\n%s", code, cmp.Aborted, raw["target_transactions"], errs)
	}
}

// A target digest without the transaction fields (taken by an earlier kverify) still loads,
// and compare says the aborted records are not recorded, never 0; so does one read
// read_uncommitted, whose aborted records are among the compared ones.
func TestCompareAbortedNotRecorded(t *testing.T) {
	p := abortedMirror(t)
	sd, td := digests(t, p.srcSeeds, p.dstSeeds, p.topic, "--chunk-records", "16")
	old := stripTxns(t, td)
	code, out, errs := run(t, "compare", sd, old)
	if code != 0 || !strings.Contains(out, "aborted records on the target: not recorded (the target digest does not record them") || strings.Contains(out, "0 aborted") {
		t.Fatalf("compare of an old target digest: exit %d, want 0 and \"not recorded\"\n%s%s", code, out, errs)
	}
	code, out, errs = run(t, "compare", sd, old, "--format", "json")
	cmp, raw := readComparison(t, out)
	if code != 0 || raw["aborted"] != nil || raw["aborted_copies"] != nil || cmp.AbortedNotRecorded != digest.NotRecordedOld {
		t.Errorf("compare JSON of an old target digest: exit %d, aborted %s, not recorded %q; want no count and the reason\n%s", code, raw["aborted"], cmp.AbortedNotRecorded, errs)
	}

	usd, utd := digests(t, p.srcSeeds, p.dstSeeds, p.topic, "--chunk-records", "16", "--read-uncommitted")
	code, out, errs = run(t, "compare", usd, utd)
	if code != 1 || !strings.Contains(out, "not recorded ("+digest.NotRecordedUncommitted+")") {
		t.Errorf("compare of read_uncommitted digests: exit %d, want 1 (the aborted records differ) and \"not recorded\"\n%s%s", code, out, errs)
	}
}

// stripTxns writes the digest at path without its transaction fields, as an earlier kverify
// wrote it, and returns the new file.
func stripTxns(t *testing.T, path string) string {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var f map[string]any
	if err := json.Unmarshal(data, &f); err != nil {
		t.Fatal(err)
	}
	stripped := 0
	for _, part := range f["partitions"].([]any) {
		if _, ok := part.(map[string]any)["transactions"]; ok {
			delete(part.(map[string]any), "transactions")
			stripped++
		}
	}
	if stripped == 0 {
		t.Fatalf("digest %s records no transactions to strip", path)
	}
	data, err = json.Marshal(f)
	if err != nil {
		t.Fatal(err)
	}
	out := filepath.Join(t.TempDir(), "old.target.digest")
	if err := os.WriteFile(out, data, 0o644); err != nil {
		t.Fatal(err)
	}
	return out
}

// --evidence records per partition the aborted records of the target range and their sum;
// the source records none; check-evidence says so; evidence without them still checks.
func TestEvidenceAborted(t *testing.T) {
	p := newTxnPair(t, 1)
	testkit.Produce(t, p.src, p.topic, 0, recs(0, 9)...)
	testkit.Produce(t, p.dst, p.topic, 0, recs(0, 4)...)
	p.txn(t, 0, kgo.TryAbort, false, recs(5, 9)...)
	p.txn(t, 0, kgo.TryAbort, false, recs(100, 102)...)
	testkit.Produce(t, p.dst, p.topic, 0, recs(5, 9)...)
	dir := t.TempDir()
	ev, rep := filepath.Join(dir, "ev.json"), filepath.Join(dir, "report.json")
	conn := []string{"--source-brokers", p.srcSeeds, "--target-brokers", p.dstSeeds}
	if code, _, errs := run(t, append([]string{"diff", "--topic", p.topic, "--format", "json", "--out", rep, "--evidence", ev}, conn...)...); code != 0 {
		t.Fatalf("diff --evidence: exit %d, want 0 (identical read_committed)\n%s", code, errs)
	}
	e, err := digest.ReadEvidence(ev)
	if err != nil {
		t.Fatal(err)
	}
	tr := e.Partitions[0].Target
	if tr.Aborted == nil || *tr.Aborted != 8 || *tr.AbortedCopies != 5 || e.TargetAborted == nil || *e.TargetAborted != 8 || *e.TargetAbortedCopies != 5 {
		t.Fatalf("evidence: target partition 0 aborted %v copies %v, total %v copies %v; want 8 and 5 in both", tr.Aborted, tr.AbortedCopies, e.TargetAborted, e.TargetAbortedCopies)
	}
	if e.Partitions[0].Source.Aborted != nil {
		t.Errorf("evidence: the source records aborted records: %d", *e.Partitions[0].Source.Aborted)
	}
	code, out, errs := run(t, append([]string{"check-evidence", ev, "--report", rep}, conn...)...)
	if code != 0 || !strings.Contains(out, "records 8 aborted records in the target ranges (5 copies of committed records)") {
		t.Errorf("check-evidence: exit %d, want 0 naming the aborted records\n%s%s", code, out, errs)
	}

	// Evidence written before the counts were recorded still loads and checks.
	var raw map[string]any
	data, _ := os.ReadFile(ev)
	if err := json.Unmarshal(data, &raw); err != nil {
		t.Fatal(err)
	}
	delete(raw, "target_aborted")
	delete(raw, "target_aborted_copies")
	for _, part := range raw["partitions"].([]any) {
		target := part.(map[string]any)["target"].(map[string]any)
		delete(target, "aborted")
		delete(target, "aborted_copies")
	}
	data, _ = json.MarshalIndent(raw, "", "  ")
	old := filepath.Join(dir, "old.json")
	if err := os.WriteFile(old, data, 0o644); err != nil {
		t.Fatal(err)
	}
	code, out, errs = run(t, append([]string{"check-evidence", old}, conn...)...)
	if code != 0 || strings.Contains(out, "aborted") {
		t.Errorf("check-evidence of evidence without the counts: exit %d, want 0 saying nothing of them\n%s%s", code, out, errs)
	}
}

// The line --follow prints after a round names the aborted target records of the state and
// an open transaction, and nothing of them when there are none.
func TestRoundLineAborted(t *testing.T) {
	st := &verify.State{Partitions: []verify.PartitionState{
		{Partition: 0, SourceEnd: 10, SourceListedEnd: 10, Aborted: 5, AbortedCopies: 5},
		{Partition: 1, SourceEnd: 10, SourceListedEnd: 12, Aborted: 3},
	}}
	res := &verify.Result{Transactions: []verify.TxnPartition{{Partition: 1, Txns: digest.Txns{OpenTransaction: &align.TargetRange{From: 14, To: 15}}}}}
	res.Summary.Matched = 20
	got := roundLine(2, &verify.StateRun{Result: res, State: st}, 0)
	want := "kverify: round 2: 20 records matched, lag 2, problems 0, 8 aborted records on the target so far (5 copies of committed records; read_uncommitted consumers read them), a transaction open on the target in 1 partition (2 records not compared until it ends)"
	if got != want {
		t.Errorf("round line:\n got %s\nwant %s", got, want)
	}
	clean := roundLine(1, &verify.StateRun{Result: &verify.Result{}, State: &verify.State{Partitions: []verify.PartitionState{{Partition: 0}}}}, 0)
	if clean != "kverify: round 1: 0 records matched, lag 0, problems 0" {
		t.Errorf("round line without transactions: %s", clean)
	}
}
