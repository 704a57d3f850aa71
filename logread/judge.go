package logread

import (
	"context"
	"errors"
	"fmt"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// judge decides what a partition answer at offset next means: a response to decode (it
// covers offsets at or after next), the end of the read (done), a fetch to repeat (again:
// a partial batch, now asked with a larger size, or nothing yet), or an error.
func (r *reader) judge(part *kmsg.FetchResponseTopicPartition, next int64) (resp response, done, again bool, err error) {
	if errors.Is(kerr.ErrorForCode(part.ErrorCode), kerr.OffsetOutOfRange) {
		if r.o.Short == ShortStop && part.HighWatermark >= 0 && next >= part.HighWatermark {
			return response{}, true, false, nil // From past the end: nothing to read
		}
		return response{}, false, false, r.outOfRange(part, next)
	}
	if last, ok := lastOffset(part.RecordBatches); ok && last >= next {
		return response{part: part, from: next, to: last + 1}, false, false, nil
	}
	if len(part.RecordBatches) > 0 {
		if r.partBytes < maxPartitionBytes {
			// Only part of a batch came back: it is larger than the fetch size (brokers
			// before 0.10.1 truncate it). Ask for more.
			r.partBytes *= 2
			return response{}, false, true, nil
		}
		return response{}, false, false, fmt.Errorf("fetch %s at offset %d made no progress (high watermark %d): a record batch larger than %d MiB, or data that does not decode", r.o.where(), next, part.HighWatermark, maxPartitionBytes>>20)
	}
	// Nothing past next: the broker long-polled, or the log ends here.
	end := part.HighWatermark
	if r.o.Committed && part.LastStableOffset >= 0 {
		end = part.LastStableOffset
	}
	if end < 0 || end > next {
		return response{}, false, true, nil
	}
	if r.o.Short == ShortStop {
		return response{}, true, false, nil
	}
	if part.HighWatermark < r.o.To {
		// If the end we were given is beyond the log (truncated since it was listed),
		// waiting would never end.
		return response{}, false, false, fmt.Errorf("fetch %s: the log ends at %d, before the end offset %d listed at the start (truncated, e.g. by an unclean leader election): run again", r.o.where(), part.HighWatermark, r.o.To)
	}
	return response{}, false, true, nil // a transaction still open below To: wait for it
}

func (r *reader) outOfRange(part *kmsg.FetchResponseTopicPartition, next int64) error {
	return fmt.Errorf("fetch %s: offset %d is out of range (log start %d, high watermark %d): records were deleted while reading; run again", r.o.where(), next, part.LogStartOffset, part.HighWatermark)
}

// loadLeader finds the partition's leader and topic ID, in Options.Leaders when it has them.
func (r *reader) loadLeader(ctx context.Context) error {
	if l := r.o.Leaders; l != nil {
		if ld, ok := l.get(r.o.Topic, r.o.Partition); ok {
			r.leader, r.topicID = ld.broker, ld.topicID
			return nil
		}
	}
	req := kmsg.NewPtrMetadataRequest()
	rt := kmsg.NewMetadataRequestTopic()
	t := r.o.Topic
	rt.Topic = &t
	req.Topics = append(req.Topics, rt)
	kresp, err := req.RequestWith(ctx, r.cl)
	if err != nil {
		return fmt.Errorf("metadata of %s: %w", r.o.where(), err)
	}
	for _, mt := range kresp.Topics {
		if mt.Topic == nil || *mt.Topic != t {
			continue
		}
		if err := kerr.ErrorForCode(mt.ErrorCode); err != nil {
			return fmt.Errorf("metadata of %s: %w", r.o.where(), err)
		}
		found := false
		for _, mp := range mt.Partitions {
			if mp.Leader >= 0 && r.o.Leaders != nil {
				r.o.Leaders.put(t, mp.Partition, leader{mp.Leader, mt.TopicID})
			}
			if mp.Partition != r.o.Partition {
				continue
			}
			found = true
			if err := kerr.ErrorForCode(mp.ErrorCode); err != nil && mp.Leader < 0 {
				return fmt.Errorf("metadata of %s: %w", r.o.where(), err)
			}
			if mp.Leader < 0 {
				return fmt.Errorf("metadata of %s: no leader", r.o.where())
			}
			r.leader, r.topicID = mp.Leader, mt.TopicID
		}
		if found {
			return nil
		}
	}
	return fmt.Errorf("metadata of %s: partition not found", r.o.where())
}
