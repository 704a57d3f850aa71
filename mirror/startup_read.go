package mirror

import (
	"context"
	"encoding/binary"
	"sync"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
	"golang.org/x/sync/errgroup"

	"github.com/kmigrate/kmigrate/logread"
)

// Batched resume reads. A resume reads a record or two of every partition it
// resumes: the last mapped record on both sides (the identity check by fingerprint, on brokers
// without topic IDs) and the target's tail past the map (usually one transaction marker).
// Read one partition at a time, with 1,000 partitions that is thousands of round trips.
// prefetch asks for all of them in one Fetch request per broker and isolation level; a read
// whose range the answer covers whole is served from it (cachedRange), any other (an error, a
// partial batch, a range longer than the answer, a read_committed range above the last stable
// offset) reads as before, on its own, through logread. The answer is only a cache: what a
// read returns is the same either way.

// span is one range a resume reads.
type span struct {
	topic     string
	partition int32
	from, to  int64
}

// readKey names a prefetched read: which cluster, which partition, from where, how.
type readKey struct {
	dst       bool
	topic     string
	partition int32
	from      int64
	committed bool
}

// prefetched is what one prefetch gave for a read: the records from its start up to covered.
type prefetched struct {
	records []*kgo.Record
	covered int64
}

// resumeReads are the shared state of one resume's reads: the leaders of both clusters and
// the prefetched answers.
type resumeReads struct {
	src, dst logread.Leaders
	mu       sync.Mutex
	cache    map[readKey]prefetched
}

// prefetchBytes bounds a prefetch: per partition (a record or two is wanted) and per request.
const (
	prefetchPartitionBytes = 64 << 10
	prefetchRequestBytes   = 32 << 20
)

// prefetch reads spans of cl's cluster (dst: the target) in one Fetch request per leader. It
// never fails: what it could not read is read later on its own.
func (e *Engine) prefetch(ctx context.Context, dst bool, spans []span, committed bool) {
	rr := e.leaders.Load()
	if rr == nil || len(spans) == 0 {
		return
	}
	cl, adm := e.srcCl, e.srcAdm
	if dst {
		cl, adm = e.dst, e.dstAdm
	}
	topics := map[string]bool{}
	for _, s := range spans {
		topics[s.topic] = true
	}
	td, err := adm.ListTopics(ctx, keys(topics)...)
	if err != nil {
		return
	}
	byBroker := map[int32][]span{}
	for _, s := range spans {
		if p, ok := td[s.topic].Partitions[s.partition]; ok && p.Err == nil && p.Leader >= 0 {
			byBroker[p.Leader] = append(byBroker[p.Leader], s)
		}
	}
	var eg errgroup.Group
	for broker, ss := range byBroker {
		eg.Go(func() error {
			e.prefetchFrom(ctx, cl, broker, td, ss, dst, committed, rr)
			return nil
		})
	}
	_ = eg.Wait()
}

// prefetchFrom sends one Fetch request for spans to broker and keeps what covers a range whole.
func (e *Engine) prefetchFrom(ctx context.Context, cl *kgo.Client, broker int32, td kadm.TopicDetails, spans []span, dst, committed bool, rr *resumeReads) {
	req, want, names := prefetchRequest(td, spans, committed)
	kresp, err := cl.Broker(int(broker)).Request(ctx, req)
	if err != nil {
		return
	}
	resp := kresp.(*kmsg.FetchResponse)
	if kerr.ErrorForCode(resp.ErrorCode) != nil {
		return
	}
	iso := kgo.ReadUncommitted()
	if committed {
		iso = kgo.ReadCommitted()
	}
	decomp := kgo.DefaultDecompressor()
	for i := range resp.Topics {
		rt := &resp.Topics[i]
		name := rt.Topic
		if n, ok := names[rt.TopicID]; ok && rt.TopicID != ([16]byte{}) {
			name = n // Fetch v13+ answers by topic ID
		}
		for j := range rt.Partitions {
			part := &rt.Partitions[j]
			s, ok := want[name][part.Partition]
			if !ok || part.ErrorCode != 0 {
				continue
			}
			if got, ok := decodeSpan(part, s, name, iso, decomp); ok {
				rr.put(readKey{dst, name, s.partition, s.from, committed}, got)
			}
		}
	}
}

// prefetchRequest is the Fetch request for spans (topic names and IDs from td), with the spans
// by topic and partition and the topic names by ID, to read the answer.
func prefetchRequest(td kadm.TopicDetails, spans []span, committed bool) (*kmsg.FetchRequest, map[string]map[int32]span, map[[16]byte]string) {
	req := kmsg.NewPtrFetchRequest()
	req.ReplicaID, req.MaxWaitMillis, req.MinBytes, req.MaxBytes, req.SessionEpoch = -1, 0, 1, prefetchRequestBytes, -1
	if committed {
		req.IsolationLevel = 1
	}
	want := map[string]map[int32]span{}
	names := map[[16]byte]string{}
	index := map[string]int{}
	for _, s := range spans {
		if want[s.topic] == nil {
			want[s.topic] = map[int32]span{}
			rt := kmsg.NewFetchRequestTopic()
			rt.Topic, rt.TopicID = s.topic, td[s.topic].ID
			names[td[s.topic].ID] = s.topic
			index[s.topic] = len(req.Topics)
			req.Topics = append(req.Topics, rt)
		}
		want[s.topic][s.partition] = s
		rp := kmsg.NewFetchRequestTopicPartition()
		rp.Partition, rp.FetchOffset, rp.PartitionMaxBytes = s.partition, s.from, prefetchPartitionBytes
		rp.CurrentLeaderEpoch, rp.LogStartOffset = -1, -1
		rt := &req.Topics[index[s.topic]]
		rt.Partitions = append(rt.Partitions, rp)
	}
	return req, want, names
}

// decodeSpan decodes one partition's answer for s when it covers offsets at or after s.from
// from complete batches, the way logread decodes a response.
func decodeSpan(part *kmsg.FetchResponseTopicPartition, s span, topic string, iso kgo.IsolationLevel, decomp kgo.Decompressor) (prefetched, bool) {
	last, ok := lastBatchOffset(part.RecordBatches)
	if !ok || last < s.from {
		return prefetched{}, false
	}
	fp, after := kgo.ProcessFetchPartition(kgo.ProcessFetchPartitionOpts{
		KeepControlRecords: true,
		Offset:             s.from,
		IsolationLevel:     iso,
		Topic:              topic,
		Partition:          s.partition,
	}, part, decomp, nil)
	if fp.Err != nil {
		return prefetched{}, false
	}
	covered := max(after, s.from, last+1)
	var recs []*kgo.Record
	for _, r := range fp.Records {
		if r.Offset >= s.from && r.Offset < s.to {
			recs = append(recs, r)
		}
	}
	return prefetched{records: recs, covered: covered}, true
}

// lastBatchOffset is the last offset the complete batches of b cover (their headers), as
// logread reads it: base offset plus last offset delta (magic 2), the entry's offset before.
func lastBatchOffset(b []byte) (int64, bool) {
	var last int64
	found := false
	for len(b) >= 12 {
		n := 12 + int(int32(binary.BigEndian.Uint32(b[8:12])))
		if n < 17 || n > len(b) {
			break
		}
		p := b[:n]
		base := int64(binary.BigEndian.Uint64(p[:8]))
		switch {
		case p[16] >= 2 && len(p) >= 27:
			last, found = base+int64(int32(binary.BigEndian.Uint32(p[23:27]))), true
		case p[16] < 2:
			last, found = base, true
		default:
			return last, found
		}
		b = b[n:]
	}
	return last, found
}

func (rr *resumeReads) put(k readKey, p prefetched) {
	rr.mu.Lock()
	defer rr.mu.Unlock()
	if rr.cache == nil {
		rr.cache = map[readKey]prefetched{}
	}
	rr.cache[k] = p
}

// cachedRange serves readRange's call from the prefetched answer when it covers [from, end)
// whole; ok is false when it does not (the caller reads on its own).
func (e *Engine) cachedRange(cl *kgo.Client, topic string, partition int32, from, end int64, committed bool, fn func(*kgo.Record) (bool, error)) (ok bool, err error) {
	rr := e.leaders.Load()
	if rr == nil || (cl != e.dst && cl != e.srcCl) {
		return false, nil
	}
	rr.mu.Lock()
	p, found := rr.cache[readKey{cl == e.dst, topic, partition, from, committed}]
	rr.mu.Unlock()
	if !found || p.covered < end {
		return false, nil
	}
	for _, r := range p.records {
		if r.Offset >= end {
			break
		}
		if more, err := fn(r); err != nil || !more {
			return true, err
		}
	}
	return true, nil
}

// prefetchResume prefetches what the resume of assigned reads: for each partition with a
// persisted map, the last mapped record on both sides when topic IDs do not prove the
// identity (fingerprintCheck), and the target's tail past the map (alignTail). The three
// kinds differ in cluster or isolation level, so they are three batches, asked at once.
func (e *Engine) prefetchResume(ctx context.Context, checks *resumeChecks, assigned []tp, persisted persistedMap, bounds resumeBounds) {
	var srcPrints, dstPrints, tails []span
	var zero [16]byte
	for _, t := range assigned {
		b, err := bounds.of(&e.cfg, t)
		if len(persisted[t].segs) == 0 || err != nil {
			continue
		}
		pm, _, persistedDst := persistedPartition(t, persisted[t])
		if b.dstEnd > persistedDst {
			tails = append(tails, span{b.target, t.partition, persistedDst, b.dstEnd})
		}
		rec, cur := checks.recorded[t.topic], checks.current[t.topic]
		if rec.src != zero && rec.src == cur.src && rec.dst != zero && rec.dst == cur.dst || len(pm.Segments) == 0 {
			continue
		}
		last := pm.Segments[len(pm.Segments)-1]
		srcOff, dstOff := last.Source+last.Len-1, last.Target+last.Len-1
		if srcOff >= b.srcStart && srcOff < b.srcEnd {
			srcPrints = append(srcPrints, span{t.topic, t.partition, srcOff, srcOff + 1})
		}
		if dstOff < b.dstEnd {
			dstPrints = append(dstPrints, span{b.target, t.partition, dstOff, dstOff + 1})
		}
	}
	var eg errgroup.Group
	eg.Go(func() error { e.prefetch(ctx, false, srcPrints, true); return nil })
	eg.Go(func() error { e.prefetch(ctx, true, dstPrints, false); return nil })
	eg.Go(func() error { e.prefetch(ctx, true, tails, e.cfg.Fencing == FenceTransactions); return nil })
	_ = eg.Wait()
}
