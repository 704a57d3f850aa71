package logread

import (
	"context"
	"errors"
	"net"
	"os"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
)

// Retriable says whether a request that failed with err is worth sending again, after the
// client's own retries: a Kafka error marked retriable (a leader or coordinator moving, not
// available, loading), a broker connection that died, timed out or could not be dialled (a
// broker restarting). It is meant for clusters the caller has already been answered by, so a
// refused dial is a broker that went away, not a wrong address. Every shard of a kadm
// ShardErrors must be retriable (one refusal of authorization among them is not). The
// context's own end is not retriable.
func Retriable(err error) bool {
	if err == nil || errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) {
		return false
	}
	if se, ok := errors.AsType[*kadm.ShardErrors](err); ok && len(se.Errs) > 0 {
		for _, e := range se.Errs {
			if !Retriable(e.Err) {
				return false
			}
		}
		return true
	}
	if kerr.IsRetriable(err) || kgo.IsRetryableBrokerErr(err) || errors.Is(err, os.ErrDeadlineExceeded) {
		return true
	}
	var firstEOF *kgo.ErrFirstReadEOF
	var ne net.Error
	var op *net.OpError
	return errors.As(err, &firstEOF) || errors.As(err, &ne) && ne.Timeout() || errors.As(err, &op) && op.Op == "dial"
}

// Denied says whether err is the brokers refusing the principal an operation: an
// authorization failure on a topic, group, cluster or transactional id (kadm's AuthError
// wraps the same errors). No retry cures it; the caller stops and names what to grant.
func Denied(err error) bool {
	return errors.Is(err, kerr.TopicAuthorizationFailed) || errors.Is(err, kerr.GroupAuthorizationFailed) ||
		errors.Is(err, kerr.ClusterAuthorizationFailed) || errors.Is(err, kerr.TransactionalIDAuthorizationFailed)
}

// Wait waits d and returns true, or returns false at once when ctx would end first.
func Wait(ctx context.Context, d time.Duration) bool {
	if dl, ok := ctx.Deadline(); ok && time.Until(dl) < d {
		return false
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return false
	case <-t.C:
		return true
	}
}
