package testkit

import (
	"context"
	"fmt"
	"sync/atomic"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"
)

var topicSeq atomic.Int64

// TopicName is prefix followed by a number no other call in this process returns.
func TopicName(prefix string) string { return fmt.Sprintf("%s-%d", prefix, topicSeq.Add(1)) }

// CreateTopic creates topic with partitions partitions, replication factor 1 and configs (nil
// for none) on cl's cluster; an error fails the test.
func CreateTopic(t testing.TB, cl *kgo.Client, topic string, partitions int32, configs map[string]*string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	resp, err := kadm.NewClient(cl).CreateTopic(ctx, partitions, 1, configs, topic)
	if err == nil {
		err = resp.Err
	}
	if err != nil {
		t.Fatalf("create topic %s: %v", topic, err)
	}
}

// Produce writes copies of recs to partition p of topic, in order, and returns the offsets
// they were written at; the records given are not changed. An error fails the test.
func Produce(t testing.TB, cl *kgo.Client, topic string, p int32, recs ...*kgo.Record) []int64 {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	batch := make([]*kgo.Record, len(recs))
	for i, r := range recs {
		c := *r
		c.Topic, c.Partition, c.Offset = topic, p, 0
		batch[i] = &c
	}
	if err := cl.ProduceSync(ctx, batch...).FirstErr(); err != nil {
		t.Fatalf("produce to %s/%d: %v", topic, p, err)
	}
	offsets := make([]int64, len(batch))
	for i, r := range batch {
		offsets[i] = r.Offset
	}
	return offsets
}

// ProduceTxn writes copies of recs to partition p of topic in one transaction of cl (a client
// with a transactional ID) and commits it, so that a commit marker follows them; it returns
// the offsets the records were written at. An error fails the test.
func ProduceTxn(t testing.TB, cl *kgo.Client, topic string, p int32, recs ...*kgo.Record) []int64 {
	t.Helper()
	offsets := beginTxn(t, cl, topic, p, recs...)
	endTxn(t, cl, topic, p, kgo.TryCommit)
	return offsets
}

// WriteTxn writes copies of recs to partition p of topic in one transaction of a new
// transactional client of c (OpenTxn) and ends it with end: kgo.TryAbort leaves an aborted
// batch and its marker, as a mirror killed or fenced in a transaction does. With open the
// transaction is left open (the client is closed when the test ends). It returns the offsets
// the records were written at; an error fails the test.
func WriteTxn(t testing.TB, c *kfake.Cluster, topic string, p int32, end kgo.TransactionEndTry, open bool, recs ...*kgo.Record) []int64 {
	t.Helper()
	cl, offsets := OpenTxn(t, c, topic, p, recs...)
	if !open {
		endTxn(t, cl, topic, p, end)
	}
	return offsets
}

// OpenTxn writes copies of recs to partition p of topic in one transaction of a new
// transactional client of c (a transactional ID of its own, no linger) and leaves it open. It
// returns the client, to end the transaction with (EndTransaction; it is closed when the test
// ends), and the offsets the records were written at; an error fails the test.
func OpenTxn(t testing.TB, c *kfake.Cluster, topic string, p int32, recs ...*kgo.Record) (*kgo.Client, []int64) {
	t.Helper()
	cl := Client(t, c, kgo.ProducerLinger(0), kgo.TransactionalID(TopicName("txn-writer")))
	return cl, beginTxn(t, cl, topic, p, recs...)
}

// beginTxn begins a transaction of cl and writes copies of recs to partition p of topic in it.
func beginTxn(t testing.TB, cl *kgo.Client, topic string, p int32, recs ...*kgo.Record) []int64 {
	t.Helper()
	if err := cl.BeginTransaction(); err != nil {
		t.Fatalf("begin a transaction to %s/%d: %v", topic, p, err)
	}
	return Produce(t, cl, topic, p, recs...)
}

// endTxn ends the transaction of cl to partition p of topic with end.
func endTxn(t testing.TB, cl *kgo.Client, topic string, p int32, end kgo.TransactionEndTry) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := cl.EndTransaction(ctx, end); err != nil {
		what := "abort"
		if end == kgo.TryCommit {
			what = "commit"
		}
		t.Fatalf("%s the transaction to %s/%d: %v", what, topic, p, err)
	}
}
