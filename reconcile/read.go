package reconcile

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/kmigrate/kmigrate/offsetmap"
)

// side is one cluster as Plan reads it: a shared client, its admin view and a cache of topic
// metadata. Reading a few records goes through raw Fetch requests to the partition leader, so
// thousands of small reads share one client instead of building a consumer each.
type side struct {
	name string // "source" or "target", for errors
	cl   *kgo.Client
	adm  *kadm.Client

	mu     sync.Mutex
	topics map[string]kadm.TopicDetail
	cache  *recordCache
}

func newSide(name string, cl *kgo.Client) *side {
	return &side{name: name, cl: cl, adm: kadm.NewClient(cl), topics: make(map[string]kadm.TopicDetail), cache: newRecordCache()}
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
// compacted records) are simply absent. It stops early at the high watermark.
func (s *side) read(ctx context.Context, topic string, part int32, from, to int64, max int, fields offsetmap.Fields) ([]rec, error) {
	if from >= to {
		return nil, nil
	}
	for try := 0; ; try++ {
		out, err := s.readOnce(ctx, topic, part, from, to, max, fields)
		if err == nil || try >= 3 || !(errors.Is(err, kerr.NotLeaderForPartition) || errors.Is(err, kerr.FencedLeaderEpoch) ||
			errors.Is(err, kerr.UnknownLeaderEpoch) || errors.Is(err, kerr.LeaderNotAvailable)) {
			return out, err
		}
		// The leader moved: forget the metadata and ask again.
		s.mu.Lock()
		delete(s.topics, topic)
		s.mu.Unlock()
		select {
		case <-ctx.Done():
			return nil, ctx.Err()
		case <-time.After(time.Duration(try+1) * 200 * time.Millisecond):
		}
	}
}

func (s *side) readOnce(ctx context.Context, topic string, part int32, from, to int64, max int, fields offsetmap.Fields) ([]rec, error) {
	td, ok, err := s.topic(ctx, topic)
	if err != nil {
		return nil, err
	}
	if !ok {
		return nil, fmt.Errorf("%s cluster: topic %q does not exist", s.name, topic)
	}
	pd, ok := td.Partitions[part]
	if !ok {
		return nil, fmt.Errorf("%s cluster: topic %q has no partition %d", s.name, topic, part)
	}
	var out []rec
	next := from
	for next < to && (max <= 0 || len(out) < max) {
		if recs, end, ok := s.cache.get(topic, part, next); ok {
			for _, r := range recs {
				if r.Offset >= to || max > 0 && len(out) >= max {
					break
				}
				out = append(out, rec{off: r.Offset, fp: offsetmap.Fingerprint(r, fields), r: r})
			}
			next = end
			continue
		}
		req := kmsg.NewPtrFetchRequest()
		req.MaxWaitMillis = 0
		req.MinBytes = 1
		req.MaxBytes = 4 << 20
		req.SessionEpoch = -1
		rt := kmsg.NewFetchRequestTopic()
		rt.Topic = topic
		rt.TopicID = td.ID
		rp := kmsg.NewFetchRequestTopicPartition()
		rp.Partition = part
		rp.FetchOffset = next
		rp.CurrentLeaderEpoch = -1
		rp.LastFetchedEpoch = -1
		rp.LogStartOffset = -1
		rp.PartitionMaxBytes = 1 << 20
		rt.Partitions = append(rt.Partitions, rp)
		req.Topics = append(req.Topics, rt)

		resp, err := req.RequestWith(ctx, s.cl.Broker(int(pd.Leader)))
		if err != nil {
			return nil, fmt.Errorf("%s cluster: fetch %s/%d at offset %d: %w", s.name, topic, part, next, err)
		}
		if len(resp.Topics) != 1 || len(resp.Topics[0].Partitions) != 1 {
			if err := kerr.ErrorForCode(resp.ErrorCode); err != nil {
				return nil, fmt.Errorf("%s cluster: fetch %s/%d at offset %d: %w", s.name, topic, part, next, err)
			}
			return nil, fmt.Errorf("%s cluster: fetch %s/%d at offset %d: broker answered for %d topics", s.name, topic, part, next, len(resp.Topics))
		}
		rpr := &resp.Topics[0].Partitions[0]
		fp, last := kgo.ProcessFetchPartition(kgo.ProcessFetchPartitionOpts{
			Offset:         next,
			IsolationLevel: kgo.ReadUncommitted(),
			Topic:          topic,
			Partition:      part,
		}, rpr, kgo.DefaultDecompressor(), nil)
		if fp.Err != nil {
			if errors.Is(fp.Err, kerr.OffsetOutOfRange) && next >= rpr.HighWatermark {
				break
			}
			return nil, fmt.Errorf("%s cluster: fetch %s/%d at offset %d: %w", s.name, topic, part, next, fp.Err)
		}
		var kept []*kgo.Record
		for _, r := range fp.Records {
			if r.Offset >= next {
				kept = append(kept, r)
			}
		}
		for _, r := range kept {
			if r.Offset >= to {
				break
			}
			out = append(out, rec{off: r.Offset, fp: offsetmap.Fingerprint(r, fields), r: r})
			if max > 0 && len(out) >= max {
				break
			}
		}
		advanced := next
		if n := len(fp.Records); n > 0 && fp.Records[n-1].Offset+1 > advanced {
			advanced = fp.Records[n-1].Offset + 1
		}
		if last > advanced {
			advanced = last
		}
		if advanced <= next {
			// Nothing decodable past next: at the high watermark, or an empty answer.
			if next >= fp.HighWatermark || len(rpr.RecordBatches) == 0 {
				break
			}
			return nil, fmt.Errorf("%s cluster: fetch %s/%d at offset %d made no progress (high watermark %d)", s.name, topic, part, next, fp.HighWatermark)
		}
		s.cache.put(topic, part, next, advanced, kept)
		next = advanced
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
