package verify

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/kmigrate/kmigrate/offsetmap"
)

// fetchStream reads one partition over [from, to) with raw Fetch requests to the partition
// leader, decoded by kgo.ProcessFetchPartition. Unlike a kgo consumer it knows its exact
// position after every response, also when the range ends in transaction markers, aborted
// records or a compacted gap, which a consumer never returns as records: it stops when the
// position reaches to, not by counting records.
//
// Fetching, decoding and fingerprinting run in their own goroutine, ahead of the aligner by
// at most a few responses (bounded memory).
type fetchStream struct {
	ch     chan fetchBatch
	cur    []Item
	err    error
	cancel context.CancelFunc
	done   chan struct{}
}

type fetchBatch struct {
	items []Item
	err   error
}

type fetchSpec struct {
	cluster   string // "source" or "target", for errors
	topic     string
	partition int32
	from, to  int64
	committed bool
	fields    offsetmap.Fields
	// maxPartBytes is the partition fetch size. Default: 1 MiB (as kgo's).
	maxPartBytes int32
}

// fetchBuffer is how many decoded record batches may wait for the aligner.
const fetchBuffer = 4

func startFetch(ctx context.Context, cl *kgo.Client, spec fetchSpec) *fetchStream {
	ctx, cancel := context.WithCancel(ctx)
	s := &fetchStream{ch: make(chan fetchBatch, fetchBuffer), cancel: cancel, done: make(chan struct{})}
	if spec.maxPartBytes == 0 {
		spec.maxPartBytes = 1 << 20
	}
	go func() {
		defer close(s.done)
		defer close(s.ch)
		f := &fetcher{cl: cl, spec: spec, leader: -1, decomp: kgo.DefaultDecompressor()}
		if err := f.run(ctx, s.ch); err != nil && ctx.Err() == nil {
			s.ch <- fetchBatch{err: err}
		}
	}()
	return s
}

// Next implements Stream.
func (s *fetchStream) Next(ctx context.Context) (Item, bool, error) {
	for len(s.cur) == 0 {
		if s.err != nil {
			return Item{}, false, s.err
		}
		select {
		case b, ok := <-s.ch:
			if !ok {
				return Item{}, false, nil
			}
			if b.err != nil {
				s.err = b.err
				continue
			}
			s.cur = b.items
		case <-ctx.Done():
			return Item{}, false, ctx.Err()
		}
	}
	it := s.cur[0]
	s.cur[0] = Item{}
	s.cur = s.cur[1:]
	return it, true, nil
}

// peek returns the first item without consuming it.
func (s *fetchStream) peek(ctx context.Context) (Item, bool, error) {
	it, ok, err := s.Next(ctx)
	if ok {
		s.cur = append([]Item{it}, s.cur...)
	}
	return it, ok, err
}

// close stops the fetcher and waits for it.
func (s *fetchStream) close() {
	s.cancel()
	for range s.ch {
	}
	<-s.done
}

type fetcher struct {
	cl      *kgo.Client
	spec    fetchSpec
	leader  int32
	topicID [16]byte
	decomp  kgo.Decompressor
	fp      offsetmap.Hasher
}

func (f *fetcher) where() string {
	return fmt.Sprintf("%s topic %q partition %d", f.spec.cluster, f.spec.topic, f.spec.partition)
}

// rawFetch is one fetched partition response, to be decoded from offset from.
type rawFetch struct {
	part *kmsg.FetchResponseTopicPartition
	from int64
}

// run fetches in one goroutine and decodes in another, so that the next request is on the
// wire while a response is decoded and fingerprinted: the position after a response is read
// from its batch headers, without decoding.
func (f *fetcher) run(ctx context.Context, out chan<- fetchBatch) error {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	raw := make(chan rawFetch, 2)
	decoded := make(chan error, 1)
	go func() {
		var err error
		for r := range raw {
			if err == nil {
				if err = f.process(ctx, r.part, r.from, out); err != nil {
					cancel() // stop fetching
				}
			}
		}
		decoded <- err
	}()
	err := f.fetchLoop(ctx, raw)
	close(raw)
	if derr := <-decoded; derr != nil {
		return derr
	}
	return err
}

func (f *fetcher) fetchLoop(ctx context.Context, raw chan<- rawFetch) error {
	next := f.spec.from
	var isoLevel int8
	if f.spec.committed {
		isoLevel = 1
	}
	failures := 0
	retry := func(err error) error {
		failures++
		leader := f.leader
		f.leader = -1
		if failures > 60 {
			return fmt.Errorf("fetch %s at offset %d from broker %d: %w (gave up after %d tries over about a minute: check that the cluster is reachable and the partition has a leader)", f.where(), next, leader, err, failures)
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(time.Duration(min(failures, 10)) * 100 * time.Millisecond):
		}
		return nil
	}
	for next < f.spec.to {
		if f.leader < 0 {
			if err := f.loadLeader(ctx); err != nil {
				if ctx.Err() != nil {
					return ctx.Err()
				}
				if err := retry(err); err != nil {
					return err
				}
				continue
			}
		}
		req := kmsg.NewPtrFetchRequest()
		req.ReplicaID = -1
		req.MaxWaitMillis = 100 // the end was listed up front: the data is there, a wait is rare
		req.MinBytes = 1
		req.MaxBytes = 2 * f.spec.maxPartBytes
		req.IsolationLevel = isoLevel
		req.SessionEpoch = -1
		rt := kmsg.NewFetchRequestTopic()
		rt.Topic, rt.TopicID = f.spec.topic, f.topicID
		rp := kmsg.NewFetchRequestTopicPartition()
		rp.Partition = f.spec.partition
		rp.FetchOffset = next
		rp.PartitionMaxBytes = f.spec.maxPartBytes
		rp.CurrentLeaderEpoch = -1
		rp.LogStartOffset = -1
		rt.Partitions = append(rt.Partitions, rp)
		req.Topics = append(req.Topics, rt)

		kresp, err := f.cl.Broker(int(f.leader)).Request(ctx, req)
		if err != nil {
			if ctx.Err() != nil {
				return ctx.Err()
			}
			if err := retry(err); err != nil {
				return err
			}
			continue
		}
		resp := kresp.(*kmsg.FetchResponse)
		if err := kerr.ErrorForCode(resp.ErrorCode); err != nil {
			if err := retry(err); err != nil {
				return err
			}
			continue
		}
		var part *kmsg.FetchResponseTopicPartition
		for i := range resp.Topics {
			for j := range resp.Topics[i].Partitions {
				if resp.Topics[i].Partitions[j].Partition == f.spec.partition {
					part = &resp.Topics[i].Partitions[j]
				}
			}
		}
		if part == nil {
			if err := retry(errors.New("partition missing from the fetch response")); err != nil {
				return err
			}
			continue
		}
		if err := kerr.ErrorForCode(part.ErrorCode); err != nil {
			if errors.Is(err, kerr.OffsetOutOfRange) {
				return fmt.Errorf("fetch %s: offset %d is out of range (log start %d, high watermark %d): records were deleted while reading; run again", f.where(), next, part.LogStartOffset, part.HighWatermark)
			}
			if !kerr.IsRetriable(err) {
				return fmt.Errorf("fetch %s at offset %d: %w", f.where(), next, err)
			}
			if err := retry(err); err != nil {
				return err
			}
			continue
		}
		failures = 0
		if last, ok := lastOffset(part.RecordBatches); ok && last >= next {
			select {
			case raw <- rawFetch{part: part, from: next}:
			case <-ctx.Done():
				return ctx.Err()
			}
			next = last + 1
			continue
		}
		if len(part.RecordBatches) > 0 && f.spec.maxPartBytes < 256<<20 {
			// Only part of a batch came back: it is larger than the fetch size (brokers
			// before 0.10.1 truncate it). Ask for more.
			f.spec.maxPartBytes *= 2
			continue
		}
		// Nothing past next: the broker long-polled. If the end we were given is beyond the
		// log (truncated since it was listed), waiting would never end.
		end := part.HighWatermark
		if f.spec.committed && part.LastStableOffset >= 0 {
			end = part.LastStableOffset
		}
		if end >= 0 && end <= next && part.HighWatermark < f.spec.to {
			return fmt.Errorf("fetch %s: the log ends at %d, before the end offset %d listed at the start (truncated, e.g. by an unclean leader election): run again", f.where(), part.HighWatermark, f.spec.to)
		}
	}
	return nil
}

func (f *fetcher) loadLeader(ctx context.Context) error {
	req := kmsg.NewPtrMetadataRequest()
	rt := kmsg.NewMetadataRequestTopic()
	t := f.spec.topic
	rt.Topic = &t
	req.Topics = append(req.Topics, rt)
	kresp, err := req.RequestWith(ctx, f.cl)
	if err != nil {
		return fmt.Errorf("metadata of %s: %w", f.where(), err)
	}
	for _, mt := range kresp.Topics {
		if mt.Topic == nil || *mt.Topic != t {
			continue
		}
		if err := kerr.ErrorForCode(mt.ErrorCode); err != nil {
			return fmt.Errorf("metadata of %s: %w", f.where(), err)
		}
		for _, mp := range mt.Partitions {
			if mp.Partition != f.spec.partition {
				continue
			}
			if err := kerr.ErrorForCode(mp.ErrorCode); err != nil && mp.Leader < 0 {
				return fmt.Errorf("metadata of %s: %w", f.where(), err)
			}
			if mp.Leader < 0 {
				return fmt.Errorf("metadata of %s: no leader", f.where())
			}
			f.leader, f.topicID = mp.Leader, mt.TopicID
			return nil
		}
	}
	return fmt.Errorf("metadata of %s: partition not found", f.where())
}

// process decodes a fetched partition and sends its records to out, one record batch at a
// time, so that memory holds a few decoded batches rather than a whole response (compressed
// batches of small records decode to ten times their size and more). When the response lists
// aborted transactions it is decoded whole: kgo's abort tracking spans the batches of a
// response. It returns the position after the response.
func (f *fetcher) process(ctx context.Context, part *kmsg.FetchResponseTopicPartition, next int64, out chan<- fetchBatch) error {
	iso := kgo.ReadUncommitted()
	if f.spec.committed {
		iso = kgo.ReadCommitted()
	}
	pieces := [][]byte{part.RecordBatches}
	if len(part.AbortedTransactions) == 0 {
		pieces = splitBatches(part.RecordBatches)
	}
	pos := next
	for _, piece := range pieces {
		sub := *part
		sub.RecordBatches = piece
		fp, p := kgo.ProcessFetchPartition(kgo.ProcessFetchPartitionOpts{
			Offset:         pos,
			IsolationLevel: iso,
			Topic:          f.spec.topic,
			Partition:      f.spec.partition,
		}, &sub, f.decomp, nil)
		if fp.Err != nil {
			if errors.Is(fp.Err, kerr.OffsetOutOfRange) {
				return fmt.Errorf("fetch %s: offset %d is out of range (log start %d, high watermark %d): records were deleted while reading; run again", f.where(), pos, part.LogStartOffset, part.HighWatermark)
			}
			if len(fp.Records) == 0 {
				return fmt.Errorf("decode %s at offset %d: %w", f.where(), pos, fp.Err)
			}
		}
		items := make([]Item, 0, len(fp.Records))
		for _, r := range fp.Records {
			if r.Offset >= f.spec.to {
				break
			}
			items = append(items, Item{Offset: r.Offset, FP: f.fp.Sum(r, f.spec.fields), Record: r})
		}
		if len(items) > 0 {
			select {
			case out <- fetchBatch{items: items}:
			case <-ctx.Done():
				return ctx.Err()
			}
		}
		if p > pos {
			pos = p
		}
		if pos >= f.spec.to {
			break
		}
	}
	return nil
}

// lastOffset returns the last offset covered by the complete batches in b, from their
// headers: base offset + last offset delta for record batches (magic 2, also when compaction
// emptied them or they are control batches), the entry's offset for v0/v1 message sets.
func lastOffset(b []byte) (int64, bool) {
	pieces := splitBatches(b)
	if len(pieces) == 0 {
		return 0, false
	}
	p := pieces[len(pieces)-1]
	if len(p) < 17 || 12+int(int32(binary.BigEndian.Uint32(p[8:12]))) != len(p) {
		return 0, false
	}
	base := int64(binary.BigEndian.Uint64(p[:8]))
	if p[16] >= 2 {
		if len(p) < 27 {
			return 0, false
		}
		return base + int64(int32(binary.BigEndian.Uint32(p[23:27]))), true
	}
	return base, true
}

// splitBatches cuts the record batches (or v0/v1 message sets) of a fetch response apart:
// each starts with an int64 offset and an int32 length. A truncated last batch (the broker
// fills up to the byte limit) is dropped; the next fetch starts before it.
func splitBatches(b []byte) [][]byte {
	var out [][]byte
	for len(b) >= 12 {
		n := 12 + int(int32(binary.BigEndian.Uint32(b[8:12])))
		if n < 12 || n > len(b) {
			break
		}
		out = append(out, b[:n:n])
		b = b[n:]
	}
	if len(out) == 0 && len(b) > 0 {
		out = append(out, b) // let the decoder report what is wrong with it
	}
	return out
}
