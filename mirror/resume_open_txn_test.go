package mirror_test

import (
	"context"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/kmigrate/kmigrate/internal/testkit"
	"github.com/kmigrate/kmigrate/mirror"
)

// TestResumeBesideADeadOwnersTransaction: a process of the flow killed in a commit, after its
// map records and before the end of its transaction, leaves that transaction open in the map
// topic until the target's transaction timeout (2 minutes for kmirror's). While the group still
// counts the dead member, its buckets are not the resuming process's to fence, so the
// transaction stays open during the resume: the resume must not wait for it. What the open
// transaction holds is never trusted (it may still abort) and concerns only the dead member's
// partitions, which this resume does not own.
func TestResumeBesideADeadOwnersTransaction(t *testing.T) {
	t.Parallel()
	p := newPair(t)
	const topic, parts = "orders-dead-owner", 2
	testkit.CreateTopic(t, testkit.Client(t, p.src), topic, parts, nil)
	produce(t, p.src, topic, parts, 0, 10)
	_, stop := start(t, p, testConfig(topic))
	waitMirrored(t, p, topic, parts)
	if err := stop(); err != nil {
		t.Fatal(err)
	}

	// The dead owner: a transactional producer of another bucket, its transaction open with
	// a map record in it, never ended within the test.
	dead := testkit.Client(t, p.dst, kgo.TransactionalID("kmirror-A-B-bucket-99-of-100"), kgo.TransactionTimeout(5*time.Minute))
	if err := dead.BeginTransaction(); err != nil {
		t.Fatal(err)
	}
	key, value := mirror.EncodeMapRecord("elsewhere", 0, 0, 0, 5)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	if err := dead.ProduceSync(ctx, &kgo.Record{Topic: "kmirror-offsets.A.internal", Partition: 0, Key: key, Value: value}).FirstErr(); err != nil {
		t.Fatal(err)
	}

	produce(t, p.src, topic, parts, 10, 5)
	e, stop2 := start(t, p, testConfig(topic))
	defer stop2()
	waitMirrored(t, p, topic, parts) // 30 s: a resume that waits for the open transaction never gets there
	mirroredExactly(t, p, e, topic, parts, 15)
	if _, ok := e.Map("elsewhere", 0); ok {
		t.Fatal("the open transaction's partition is owned")
	}
}
