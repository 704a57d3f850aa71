package mirror_test

import (
	"context"
	"log/slog"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/kmigrate/kmigrate/internal/testkit"
	"github.com/kmigrate/kmigrate/mirror"
)

// stuckTransactions makes c describe every transactional id as a transaction its coordinator
// (broker 0) decided to commit 95 s ago and has not finished: the state a Kafka 3.7.1 broker
// was left in after a 15 s freeze (integration TestContainerFaults).
func stuckTransactions(c *kfake.Cluster) {
	c.ControlKey(int16(kmsg.DescribeTransactions), func(kr kmsg.Request) (kmsg.Response, error, bool) {
		c.KeepControl()
		req := kr.(*kmsg.DescribeTransactionsRequest)
		resp := req.ResponseKind().(*kmsg.DescribeTransactionsResponse)
		for _, id := range req.TransactionalIDs {
			st := kmsg.NewDescribeTransactionsResponseTransactionState()
			st.TransactionalID, st.State = id, "PrepareCommit"
			st.StartTimestamp = time.Now().Add(-95 * time.Second).UnixMilli()
			st.TimeoutMillis = 120000
			resp.TransactionStates = append(resp.TransactionStates, st)
		}
		return resp, nil, true
	})
}

// TestMirrorNamesAStuckTransaction: when a commit hits its bound, the error says what the
// target's coordinator holds the transaction in, and for a decided but unfinished one
// (PrepareCommit) that only a restart of that broker ends it, naming the broker and the
// command that shows it. Without it the operator read only "did not acknowledge within 90s"
// and restarted kmirror, which then waited silently on the same transaction.
func TestMirrorNamesAStuckTransaction(t *testing.T) {
	t.Parallel()
	const topic = "orders-stuck"
	done := runFrozen(t, topic, 1, func(p pair) { stuckTransactions(p.dst) })
	select {
	case err := <-done:
		msg := ""
		if err != nil {
			msg = err.Error()
		}
		for _, want := range []string{"(the commit bound)", "holds transaction " + mirror.BucketTxnID(testConfig(topic), topic, 0) + " in state PrepareCommit, begun 1m3", "restart broker 0", "kafka-transactions.sh describe --transactional-id"} {
			if !strings.Contains(msg, want) {
				t.Errorf("Run: %q\nwant it to contain %q", msg, want)
			}
		}
	case <-time.After(60 * time.Second):
		t.Fatal("Run still running 60s after the target froze (commit bound 2s)")
	}
}

// TestMirrorWarnsWhileFenceWaits: a partition's fence (the initialisation of its
// transactional id) that the target does not answer, because the previous owner's
// transaction has not ended, is reported while it waits, with the transaction's state; when
// the target answers, mirroring goes on.
func TestMirrorWarnsWhileFenceWaits(t *testing.T) {
	t.Parallel()
	p := newPair(t)
	const topic = "orders-fence-waits"
	testkit.CreateTopic(t, testkit.Client(t, p.src), topic, 1, nil)
	produce(t, p.src, topic, 1, 0, 50)
	var buf testkit.SyncBuffer
	e, err := mirror.New(testConfig(topic), seeds(p.src), seeds(p.dst), slog.New(slog.NewTextHandler(&buf, &slog.HandlerOptions{Level: slog.LevelWarn})))
	if err != nil {
		t.Fatal(err)
	}
	e.SetFenceWarn(200 * time.Millisecond)
	var busy atomic.Bool
	busy.Store(true)
	p.dst.ControlKey(int16(kmsg.InitProducerID), func(kr kmsg.Request) (kmsg.Response, error, bool) {
		if !busy.Load() {
			p.dst.DropControl()
			return nil, nil, false
		}
		p.dst.KeepControl()
		req := kr.(*kmsg.InitProducerIDRequest)
		if req.TransactionalID == nil {
			return nil, nil, false
		}
		resp := req.ResponseKind().(*kmsg.InitProducerIDResponse)
		resp.ErrorCode = kerr.ConcurrentTransactions.Code // retried by the client
		return resp, nil, true
	})
	stuckTransactions(p.dst)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	done := make(chan error, 1)
	go func() { done <- e.Run(ctx) }()
	waitFor(t, "the fence warning with the transaction's state", func() bool {
		s := buf.String()
		return strings.Contains(s, "fencing the previous owner waits") && strings.Contains(s, "in state PrepareCommit")
	})
	busy.Store(false)
	waitMirrored(t, p, topic, 1)
	cancel()
	if err := <-done; err != nil {
		t.Fatalf("Run: %v", err)
	}
}
