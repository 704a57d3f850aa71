package logread

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// maxPartitionBytes bounds the growth of the fetch size for a batch larger than it.
const maxPartitionBytes = 256 << 20

// maxFailures is how many failed fetches in a row end a read (about a minute of backoff).
const maxFailures = 60

// reader is the fetching half of a read: it keeps the leader and the fetch size.
type reader struct {
	cl        *kgo.Client
	o         Options
	leader    int32 // -1: look it up
	topicID   [16]byte
	partBytes int32
	failures  int
	decomp    kgo.Decompressor
}

func newReader(cl *kgo.Client, o Options) *reader {
	r := &reader{cl: cl, o: o, leader: -1, partBytes: o.PartitionBytes, decomp: kgo.DefaultDecompressor()}
	if r.partBytes <= 0 {
		r.partBytes = 1 << 20
	}
	return r
}

// response is one fetch answer for the partition, fetched at from, whose complete batches
// cover the offsets up to to (exclusive), by their headers.
type response struct {
	part     *kmsg.FetchResponseTopicPartition
	from, to int64
}

// permanent marks an error that retrying will not cure.
type permanent struct{ error }

func (p permanent) Unwrap() error { return p.error }

// fetchAll fetches [From, To) in order and hands each response to send; it returns when the
// position reaches To, the log ends (ShortStop), send fails or ctx is done.
func (r *reader) fetchAll(ctx context.Context, send func(response) error) error {
	for next := r.o.From; next < r.o.To; {
		resp, done, err := r.next(ctx, next)
		if err != nil || done {
			return err
		}
		if err := send(resp); err != nil {
			return err
		}
		next = resp.to
	}
	return nil
}

// next fetches at offset next until a response covers offsets at or after it; done is true
// when the log ends there and Options.Short is ShortStop.
func (r *reader) next(ctx context.Context, next int64) (resp response, done bool, err error) {
	for {
		part, err := r.fetchOnce(ctx, next)
		if err == nil {
			r.failures = 0
			var again bool
			resp, done, again, err = r.judge(part, next)
			if !again {
				return resp, done, err
			}
			continue
		}
		if ctx.Err() != nil {
			return response{}, false, ctx.Err()
		}
		if err := r.retry(ctx, next, err); err != nil {
			return response{}, false, err
		}
	}
}

// retry forgets the leader and waits before the next try, or gives up.
func (r *reader) retry(ctx context.Context, next int64, err error) error {
	var p permanent
	if errors.As(err, &p) {
		return p.error
	}
	r.failures++
	broker := r.leader
	r.leader = -1
	if r.o.Leaders != nil {
		r.o.Leaders.forget(r.o.Topic, r.o.Partition)
	}
	if r.failures > maxFailures {
		return fmt.Errorf("fetch %s at offset %d from broker %d: %w (gave up after %d tries over about a minute: check that the cluster is reachable and the partition has a leader)", r.o.where(), next, broker, err, r.failures)
	}
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-time.After(time.Duration(min(r.failures, 10)) * 100 * time.Millisecond):
	}
	return nil
}

// fetchOnce sends one Fetch request at offset next to the leader and returns the partition's
// answer; a partition error the read cannot go on from is permanent.
func (r *reader) fetchOnce(ctx context.Context, next int64) (*kmsg.FetchResponseTopicPartition, error) {
	if r.leader < 0 {
		if err := r.loadLeader(ctx); err != nil {
			return nil, err
		}
	}
	kresp, err := r.cl.Broker(int(r.leader)).Request(ctx, r.request(next))
	if err != nil {
		return nil, err
	}
	resp := kresp.(*kmsg.FetchResponse)
	if err := kerr.ErrorForCode(resp.ErrorCode); err != nil {
		return nil, err
	}
	var part *kmsg.FetchResponseTopicPartition
	for i := range resp.Topics {
		for j := range resp.Topics[i].Partitions {
			if resp.Topics[i].Partitions[j].Partition == r.o.Partition {
				part = &resp.Topics[i].Partitions[j]
			}
		}
	}
	if part == nil {
		return nil, errors.New("partition missing from the fetch response")
	}
	err = kerr.ErrorForCode(part.ErrorCode)
	switch {
	case err == nil:
		return part, nil
	case errors.Is(err, kerr.OffsetOutOfRange):
		return part, nil // judge decides
	case !kerr.IsRetriable(err):
		return nil, permanent{fmt.Errorf("fetch %s at offset %d: %w", r.o.where(), next, err)}
	}
	return nil, err
}

func (r *reader) request(next int64) *kmsg.FetchRequest {
	req := kmsg.NewPtrFetchRequest()
	req.ReplicaID = -1
	req.MaxWaitMillis = 100 // the end was listed up front: the data is there, a wait is rare
	if r.o.Short == ShortStop {
		req.MaxWaitMillis = 0 // the read ends at the end of the log: nothing to wait for
	}
	req.MinBytes = 1
	req.MaxBytes = 2 * r.partBytes
	if r.o.Committed {
		req.IsolationLevel = 1
	}
	req.SessionEpoch = -1
	rt := kmsg.NewFetchRequestTopic()
	rt.Topic, rt.TopicID = r.o.Topic, r.topicID
	rp := kmsg.NewFetchRequestTopicPartition()
	rp.Partition = r.o.Partition
	rp.FetchOffset = next
	rp.PartitionMaxBytes = r.partBytes
	rp.CurrentLeaderEpoch = -1
	rp.LogStartOffset = -1
	rt.Partitions = append(rt.Partitions, rp)
	req.Topics = append(req.Topics, rt)
	return req
}
