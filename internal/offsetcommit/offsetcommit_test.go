package offsetcommit_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kfake"

	"github.com/kmigrate/kmigrate/internal/offsetcommit"
	"github.com/kmigrate/kmigrate/internal/testkit"
)

func setup(t *testing.T) (*kfake.Cluster, *kadm.Client, kadm.Offsets) {
	t.Helper()
	c := testkit.StartCluster(t, kfake.NumBrokers(3), kfake.SeedTopics(2, "orders"))
	cl := testkit.Client(t, c)
	offs := kadm.Offsets{}
	offs.Add(kadm.Offset{Topic: "orders", Partition: 0, At: 7, LeaderEpoch: -1, Metadata: "m0"})
	offs.Add(kadm.Offset{Topic: "orders", Partition: 1, At: 9, LeaderEpoch: -1})
	return c, kadm.NewClient(cl), offs
}

// TestCommitUnknownTopicRetried: a coordinator that does not know the topic yet for two
// answers gets the commit on the third; a bound shorter than that returns the refusal.
func TestCommitUnknownTopicRetried(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	c, adm, offs := setup(t)
	refused := testkit.UnknownTopicCommits(c, 2)
	resp, err := offsetcommit.Commit(ctx, adm, "g", offs, 0)
	if err != nil || resp.Error() != nil {
		t.Fatalf("commit: %v, %v", err, resp.Error())
	}
	if refused.Load() != 2 {
		t.Fatalf("%d commits answered UNKNOWN_TOPIC_OR_PARTITION, want 2: the fault was not staged", refused.Load())
	}
	got, err := adm.FetchOffsets(ctx, "g")
	if err != nil {
		t.Fatal(err)
	}
	if o, _ := got.Lookup("orders", 0); o.At != 7 || o.Metadata != "m0" {
		t.Errorf("orders/0 committed %d %q, want 7 m0", o.At, o.Metadata)
	}
	if o, _ := got.Lookup("orders", 1); o.At != 9 {
		t.Errorf("orders/1 committed %d, want 9", o.At)
	}

	c2, adm2, offs2 := setup(t)
	testkit.UnknownTopicCommits(c2, 1000)
	resp, err = offsetcommit.Commit(ctx, adm2, "g", offs2, 300*time.Millisecond)
	if err != nil {
		t.Fatal(err)
	}
	if r, _ := resp.Lookup("orders", 1); !errors.Is(r.Err, kerr.UnknownTopicOrPartition) {
		t.Errorf("past the bound: %v, want UNKNOWN_TOPIC_OR_PARTITION", r.Err)
	}
}

func TestRetriable(t *testing.T) {
	for err, want := range map[error]bool{
		kerr.UnknownTopicOrPartition: true, kerr.NotCoordinator: true, kerr.RequestTimedOut: true,
		kerr.UnknownMemberID: false, kerr.IllegalGeneration: false, kerr.RebalanceInProgress: false,
		kerr.GroupAuthorizationFailed: false, nil: false,
	} {
		if got := offsetcommit.Retriable(err); got != want {
			t.Errorf("Retriable(%v) = %v, want %v", err, got, want)
		}
	}
}
