package main

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
	"github.com/twmb/franz-go/pkg/kversion"

	"github.com/kmigrate/kmigrate/cmd/internal/clitest"
	"github.com/kmigrate/kmigrate/internal/testkit"
)

// TestRunRestartsAfterTransientError: after the target was frozen, its transaction coordinator
// answered COORDINATOR_NOT_AVAILABLE for longer than franz-go retries, the records of an open
// transaction failed with it, and kmirror exited ("write offset map of transaction ...:
// COORDINATOR_NOT_AVAILABLE"). The target here speaks Kafka 3.7's protocol (produce below v12,
// so partitions join a transaction through AddPartitionsToTxn, as on the real 3.7.1 target),
// and both AddPartitionsToTxn and the coordinator lookups fail until the engine stops. kmirror
// must not exit: it starts a new engine, which resumes from what the target committed, and
// every record arrives once, in order. It fails on the code before the Supervisor (kmirror
// exits with status 2).
func TestRunRestartsAfterTransientError(t *testing.T) {
	// Not parallel: it sets testTargetOpts, which every run of the command in this package reads.
	testTargetOpts = []kgo.Opt{kgo.RequestRetries(2), kgo.RetryBackoffFn(func(int) time.Duration { return 50 * time.Millisecond })}
	defer func() { testTargetOpts = nil }()

	src, srcSeeds := clitest.Cluster(t)
	dst := testkit.StartCluster(t, kfake.MaxVersions(kversion.V3_7_0()))
	dstCl := testkit.Client(t, dst)

	const topic = "cmd-restart"
	ctx := context.Background()
	if _, err := kadm.NewClient(src).CreateTopic(ctx, 2, 1, nil, topic); err != nil {
		t.Fatal(err)
	}
	produced := 0
	produce := func(n int) {
		t.Helper()
		for range n {
			r := &kgo.Record{Topic: topic, Partition: int32(produced % 2), Value: fmt.Appendf(nil, "v%d", produced)}
			if err := src.ProduceSync(ctx, r).FirstErr(); err != nil {
				t.Fatal(err)
			}
			produced++
		}
	}
	produce(100)
	props := flowProps(t, srcSeeds, strings.Join(dst.ListenAddrs(), ","), "emit.checkpoints.enabled=false\nsync.group.offsets.enabled=false\n")

	rctx, cancel := context.WithCancel(ctx)
	defer cancel()
	done, errOut := startRun(rctx, props)
	defer func() {
		if t.Failed() {
			t.Logf("kmirror's log:\n%s", errOut.String())
		}
	}()
	waitUntil := func(what string, cond func() bool) {
		t.Helper()
		deadline := time.Now().Add(60 * time.Second)
		for !cond() {
			select {
			case err := <-done:
				t.Fatalf("kmirror exited while waiting for %s: %v", what, err)
			default:
			}
			if time.Now().After(deadline) {
				t.Fatalf("timed out waiting for %s", what)
			}
			time.Sleep(20 * time.Millisecond)
		}
	}
	waitUntil("the first 100 records on the target", func() bool { return clitest.CommittedRecords(t, ctx, dstCl, topic) == 100 })

	faults := dst.Fault(
		kfake.Fault{Keys: []kmsg.Key{kmsg.AddPartitionsToTxn}, Err: kerr.CoordinatorNotAvailable, Count: -1},
		kfake.Fault{Keys: []kmsg.Key{kmsg.FindCoordinator}, Err: kerr.CoordinatorNotAvailable, Count: -1},
	)
	produce(100) // into a transaction the coordinator now refuses
	waitUntil("the engine to stop on the coordinator's error", func() bool {
		return strings.Contains(errOut.String(), "engine stopped on a transient error") &&
			strings.Contains(errOut.String(), "COORDINATOR_NOT_AVAILABLE")
	})
	faults.Remove()
	produce(100)
	waitUntil("300 records on the target", func() bool { return clitest.CommittedRecords(t, ctx, dstCl, topic) >= 300 })
	if n := clitest.CommittedRecords(t, ctx, dstCl, topic); n != 300 {
		t.Fatalf("got %d records on the target, want 300 (a duplicate)", n)
	}
	got := clitest.CommittedValues(t, clitest.Context(t), dstCl, topic)
	for p := range int32(2) {
		var want []string
		for i := int(p); i < produced; i += 2 {
			want = append(want, fmt.Sprintf("v%d", i))
		}
		if got := got[p]; !slices.Equal(got, want) {
			t.Errorf("partition %d: got %d values %v..., want %d in source order", p, len(got), got[:min(len(got), 5)], len(want))
		}
	}
	cancel()
	if err := <-done; err != nil && !errors.Is(err, context.Canceled) {
		t.Fatalf("run: %v", err)
	}
}
