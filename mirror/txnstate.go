package mirror

import (
	"context"
	"fmt"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
)

// txnStateWait bounds the DescribeTransactions request behind txnState.
const txnStateWait = 5 * time.Second

// txnState describes transactional id as the target's coordinator holds it, for an error or
// a warning about a transaction that does not end: its state, its age and its coordinator,
// and, for a transaction the coordinator has decided but not finished (PrepareCommit,
// PrepareAbort), that only the broker can finish it. It is "" when the target does not say
// (no answer within txnStateWait, or a broker older than 3.0 without DescribeTransactions).
func (x *writers) txnState(id string) string {
	if x.dst == nil {
		return ""
	}
	ctx, cancel := context.WithTimeout(context.Background(), txnStateWait)
	defer cancel()
	ds, err := kadm.NewClient(x.dst).DescribeTransactions(ctx, id)
	if err != nil {
		return ""
	}
	d, ok := ds[id]
	if !ok || d.Err != nil {
		return ""
	}
	s := fmt.Sprintf("the target's transaction coordinator, broker %d, holds transaction %s in state %s", d.Coordinator, id, d.State)
	if d.StartTimestamp > 0 {
		s += fmt.Sprintf(", begun %s ago", time.Since(time.UnixMilli(d.StartTimestamp)).Round(time.Second))
	}
	if d.State == "PrepareCommit" || d.State == "PrepareAbort" {
		s += fmt.Sprintf(": the coordinator has decided it but not written its markers, which only the broker can do, and no write to the partition can go on until it has; "+
			"restart broker %d (kafka-transactions.sh describe --transactional-id %s shows the state), and kmirror resumes from what the target committed", d.Coordinator, id)
	}
	return s
}

// withTxnState appends txnState's description to err's message, when there is one.
func (x *writers) withTxnState(err error, id string) error {
	if s := x.txnState(id); s != "" {
		return fmt.Errorf("%w; %s", err, s)
	}
	return err
}

// fenceWarnEvery is how often a fence that does not end is reported.
const fenceWarnEvery = 30 * time.Second

// watchFence logs a warning every x.fenceWarn (fenceWarnEvery) until the returned stop is called, for the
// initialisation of id (the fence of the previous owner of what, a bucket): the target answers it only once the
// previous owner's transaction has ended, and a coordinator that does not end it would
// otherwise leave the start-up silent.
func (x *writers) watchFence(id, what string) (stop func()) {
	done := make(chan struct{})
	go func() {
		tick := time.NewTicker(x.fenceWarn)
		defer tick.Stop()
		start := time.Now()
		for {
			select {
			case <-done:
				return
			case <-tick.C:
				state := x.txnState(id)
				if state == "" {
					state = "the target does not describe the transaction"
				}
				x.log.Warn("fencing the previous owner waits for the target to end its transaction", "bucket", what,
					"cluster", x.cfg.TargetAlias, "transactional_id", id, "waited_seconds", int64(time.Since(start).Seconds()), "state", state)
			}
		}
	}()
	return func() { close(done) }
}
