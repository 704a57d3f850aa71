package main

import (
	"context"
	"fmt"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/kmigrate/kmigrate/cmd/internal/clitest"
	"github.com/kmigrate/kmigrate/internal/testkit"
)

// TestGroupsApplySaysAbortedAhead: on a transactional target where a crashed mirror left an
// aborted transaction after E(G), groups --apply says plainly, per group partition, that
// read_uncommitted consumers will read those records again and read_committed ones will not;
// --scan-limit bounds the count.
func TestGroupsApplySaysAbortedAhead(t *testing.T) {
	p := testkit.NewPair(t, 1)
	src, srcSeeds := p.Source.Client, p.Source.Seeds
	dstK, dst, dstSeeds := p.Target.Cluster, p.Target.Client, p.Target.Seeds
	topic, group := "payments", "payments-app"
	for _, cl := range []*kgo.Client{src, dst} {
		if _, err := kadm.NewClient(cl).CreateTopic(clitest.Context(t), 1, 1, nil, topic); err != nil {
			t.Fatalf("create topic: %v", err)
		}
	}
	recs := func(from, to int) []*kgo.Record {
		var out []*kgo.Record
		for _, i := range seq(from, to) {
			out = append(out, &kgo.Record{Value: []byte(fmt.Sprintf("pay-%d", i))})
		}
		return out
	}
	testkit.Produce(t, src, topic, 0, recs(0, 20)...)
	// Target: 0..14, marker 15; 16..18 aborted, marker 19; 20..24, marker 25.
	txn := testkit.Client(t, dstK, kgo.TransactionalID("mirror"))
	testkit.ProduceTxn(t, txn, topic, 0, recs(0, 15)...)
	if err := txn.BeginTransaction(); err != nil {
		t.Fatal(err)
	}
	testkit.Produce(t, txn, topic, 0, recs(15, 18)...)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := txn.EndTransaction(ctx, kgo.TryAbort); err != nil {
		t.Fatal(err)
	}
	testkit.ProduceTxn(t, txn, topic, 0, recs(15, 20)...)
	commitAt(t, src, group, topic, 10, "")
	commitAt(t, dst, group, topic, 5, "")

	// --scan-limit bounds the records-left count (a longer span is said not counted, never 0);
	// the aborted records ahead are counted over any span.
	code, out, errOut := run(t, "groups", "--source-brokers", srcSeeds, "--target-brokers", dstSeeds, "--scan-limit", "4", "--format", "json")
	if code != 1 || !strings.Contains(out, `"aborted_ahead": 3`) || !strings.Contains(out, `"target_records_left": null`) {
		t.Fatalf("plan with --scan-limit 4: exit %d, want 1, the 3 aborted records counted and the records left not:\n%s\n%s", code, out, errOut)
	}

	code, _, errOut = run(t, "groups", "--source-brokers", srcSeeds, "--target-brokers", dstSeeds,
		"--apply", "--backup", filepath.Join(t.TempDir(), "b.json"))
	if code != 0 {
		t.Fatalf("apply exit: got %d, want 0 (stderr %q)", code, errOut)
	}
	if got := targetCommit(t, dst, group, topic); got != 10 {
		t.Fatalf("target commit after apply: %d, want E(G) 10", got)
	}
	want := "kreconcile: group payments-app: 3 aborted records after E(G) on payments/0: consumers reading read_uncommitted (the Java default) will read them again after the switch; read_committed consumers will not\n"
	if !strings.Contains(errOut, want) {
		t.Errorf("apply stderr:\n%s\nwant %q", errOut, want)
	}
}
