package reconcile

import (
	"context"
	"errors"
	"fmt"
	"sync"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/kmigrate/kmigrate/logread"
	"github.com/kmigrate/kmigrate/offsetmap"
)

// side is one cluster as Plan reads it: a shared client, its admin view and a cache of topic
// metadata. Reading a few records goes through logread (raw Fetch requests to the partition
// leader), so thousands of small reads share one client and its known leaders instead of
// building a consumer each.
type side struct {
	name string // "source" or "target", for errors
	cl   *kgo.Client
	adm  *kadm.Client

	mu      sync.Mutex
	topics  map[string]kadm.TopicDetail
	cache   *recordCache
	txn     *txnCache // what read_committed reads found, aborted records apart (txn.go)
	leaders *logread.Leaders
}

func newSide(name string, cl *kgo.Client) *side {
	return &side{name: name, cl: cl, adm: kadm.NewClient(cl), topics: make(map[string]kadm.TopicDetail), cache: newRecordCache(), txn: newTxnCache(), leaders: &logread.Leaders{}}
}

// topic returns the metadata of t, loading it once. ok is false when t does not exist.
func (s *side) topic(ctx context.Context, t string) (kadm.TopicDetail, bool, error) {
	s.mu.Lock()
	d, ok := s.topics[t]
	s.mu.Unlock()
	if ok {
		return d, d.Err == nil, nil
	}
	tds, err := s.adm.ListTopicsWithInternal(ctx, t)
	if err != nil {
		return kadm.TopicDetail{}, false, fmt.Errorf("%s cluster: describe topic %q: %w", s.name, t, err)
	}
	d, ok = tds[t]
	if !ok {
		d = kadm.TopicDetail{Topic: t, Err: kerr.UnknownTopicOrPartition}
	}
	if d.Err != nil && !errors.Is(d.Err, kerr.UnknownTopicOrPartition) {
		return d, false, fmt.Errorf("%s cluster: describe topic %q: %w", s.name, t, d.Err)
	}
	s.mu.Lock()
	s.topics[t] = d
	s.mu.Unlock()
	return d, d.Err == nil, nil
}

// rec is one record as the alignment needs it.
type rec struct {
	off int64
	fp  uint64
	r   *kgo.Record
}

// read returns the records of topic/partition with offsets in [from, to), at most max of them
// (max <= 0: no limit), in offset order. Offsets without a record (transaction markers,
// compacted records) are simply absent. It stops early at the high watermark. What the
// fetches return is kept in the side's cache (whole responses, also past to) and read from
// it when it covers the next offset.
func (s *side) read(ctx context.Context, topic string, part int32, from, to int64, max int, fields offsetmap.Fields) ([]rec, error) {
	if from >= to {
		return nil, nil
	}
	td, ok, err := s.topic(ctx, topic)
	if err != nil {
		return nil, err
	}
	if !ok {
		return nil, fmt.Errorf("%s cluster: topic %q does not exist", s.name, topic)
	}
	if _, ok := td.Partitions[part]; !ok {
		return nil, fmt.Errorf("%s cluster: topic %q has no partition %d", s.name, topic, part)
	}
	// Sized for what is asked, within reason: growing the slice record by record was a
	// noticeable part of Plan's allocations.
	size := min(to-from, 1<<14)
	if max > 0 {
		size = min(size, int64(max))
	}
	out := make([]rec, 0, size)
	take := func(recs []*kgo.Record, fps []uint64) {
		for i, r := range recs {
			if r.Offset >= to || max > 0 && len(out) >= max {
				return
			}
			var fp uint64
			if fps != nil && fields == s.cache.fields {
				fp = fps[i] // computed once, when the record was cached
			} else {
				fp = offsetmap.Fingerprint(r, fields)
			}
			out = append(out, rec{off: r.Offset, fp: fp, r: r})
		}
	}
	next := from
	for next < to && (max <= 0 || len(out) < max) {
		if recs, fps, end, ok := s.cache.lookup(topic, part, next); ok {
			take(recs, fps)
			next = end
			continue
		}
		cached := false // the fetches reached what the cache holds: go on from it
		o := logread.Options{Cluster: s.name, Topic: topic, Partition: part, From: next, To: to, Short: logread.ShortStop, Leaders: s.leaders}
		if max > 0 {
			o.MaxRecords = max - len(out)
		}
		err := logread.Read(ctx, s.cl, o, func(c logread.Chunk) (bool, error) {
			s.cache.put(topic, part, c.From, c.To, c.Records)
			take(c.Records, nil)
			next = c.To
			_, _, cached = s.cache.get(topic, part, next)
			return !cached, nil
		})
		if err != nil {
			return nil, err
		}
		if !cached {
			break // read to to, to max, or to the end of the log
		}
	}
	return out, nil
}

// offsetAfterMilli returns the first offset of topic/partition whose timestamp is at or after
// ms, or -1 when there is none.
func (s *side) offsetAfterMilli(ctx context.Context, topic string, part int32, ms int64) (int64, error) {
	req := kmsg.NewPtrListOffsetsRequest()
	req.ReplicaID = -1
	rt := kmsg.NewListOffsetsRequestTopic()
	rt.Topic = topic
	rp := kmsg.NewListOffsetsRequestTopicPartition()
	rp.Partition = part
	rp.Timestamp = ms
	rp.CurrentLeaderEpoch = -1
	rt.Partitions = append(rt.Partitions, rp)
	req.Topics = append(req.Topics, rt)
	resp, err := req.RequestWith(ctx, s.cl)
	if err != nil {
		return -1, fmt.Errorf("%s cluster: list offsets of %s/%d after %d ms: %w", s.name, topic, part, ms, err)
	}
	// One topic and one partition were asked: the first partition answered is the answer.
	for _, t := range resp.Topics {
		if len(t.Partitions) == 0 {
			continue
		}
		p := t.Partitions[0]
		if err := kerr.ErrorForCode(p.ErrorCode); err != nil {
			return -1, fmt.Errorf("%s cluster: list offsets of %s/%d after %d ms: %w", s.name, topic, part, ms, err)
		}
		return p.Offset, nil
	}
	return -1, nil
}
