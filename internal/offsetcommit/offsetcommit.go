// Package offsetcommit commits a consumer group's offsets as an admin does (OffsetCommit with
// generation -1, no member) and sends again, within a bound, the partitions the coordinator
// answered with a retriable error.
//
// Why: a topic that was just created (by kmirror, by a bed, by an operator) is known to the
// controller before every broker has it in its metadata. The group coordinator checks each
// partition of an OffsetCommit against its own metadata and answers
// UNKNOWN_TOPIC_OR_PARTITION for a topic it has not seen yet; a moment later the same commit
// succeeds. kadm retries a request that fails as a whole, not the partitions of an answer.
//
// Guarantees: only the partitions whose answer was retriable are sent again, each with the
// offset and metadata first given; a partition refused for any other reason (a member in the
// group: UNKNOWN_MEMBER_ID, ILLEGAL_GENERATION; an authorization error) is never sent again.
// The answer holds, per partition, the last answer the coordinator gave. Limits: it stops at
// the bound (DefaultBound unless given) or the end of ctx and returns what it has.
package offsetcommit

import (
	"context"
	"errors"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"

	"github.com/kmigrate/kmigrate/logread"
)

// DefaultBound is how long Commit keeps sending partitions again when bound is 0.
const DefaultBound = 10 * time.Second

// Retriable says whether a partition's answer to an OffsetCommit is worth sending again: the
// coordinator does not know the topic or partition yet, or a retriable Kafka error. A group
// that is rebalancing is not: its members commit for themselves.
func Retriable(err error) bool {
	if err == nil || errors.Is(err, kerr.RebalanceInProgress) {
		return false
	}
	return errors.Is(err, kerr.UnknownTopicOrPartition) || kerr.IsRetriable(err)
}

// Commit commits offs to group with adm and sends the partitions answered with a Retriable
// error again, after a pause that doubles from 50 ms to 1 s, until none is left or bound (0:
// DefaultBound) has passed. The error is that of a request that failed as a whole (kadm has
// retried it already); with it, the answers of the rounds before, if any, are returned.
func Commit(ctx context.Context, adm *kadm.Client, group string, offs kadm.Offsets, bound time.Duration) (kadm.OffsetResponses, error) {
	if bound <= 0 {
		bound = DefaultBound
	}
	deadline := time.Now().Add(bound)
	pause := 50 * time.Millisecond
	out := kadm.OffsetResponses{}
	for {
		resp, err := adm.CommitOffsets(ctx, group, offs)
		if err != nil {
			if len(out) == 0 {
				return nil, err
			}
			return out, err
		}
		again := kadm.Offsets{}
		resp.Each(func(r kadm.OffsetResponse) {
			out.Add(r)
			if Retriable(r.Err) {
				if o, ok := offs.Lookup(r.Topic, r.Partition); ok {
					again.Add(o)
				}
			}
		})
		if len(again) == 0 || time.Now().Add(pause).After(deadline) || !logread.Wait(ctx, pause) {
			return out, nil
		}
		offs, pause = again, min(2*pause, time.Second)
	}
}
