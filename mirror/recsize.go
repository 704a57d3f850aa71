package mirror

import (
	"context"
	"fmt"
	"strconv"
	"sync"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/kmigrate/kmigrate/internal/agree"
	"github.com/kmigrate/kmigrate/logread"
)

// Record size: a record the target refuses as too large would fail its
// whole produce batch and name only the batch's first offset. Before producing, the poll loop
// compares each record's size with the limits, and stops the partition (halt.go) at exactly
// the record that does not fit:
//
//   - the target topic's max.message.bytes (the broker default when the topic has no
//     override), which Kafka compares with the size of the record batch on the wire; the
//     size is that of a batch holding this record alone (logread.RecordBatchSize), the smallest
//     batch it can travel in. With compression.type other than none the broker compares the
//     compressed batch, which kmirror cannot know before producing: the check is then left
//     to the broker (a refusal is a produce error, as before).
//   - the producer's batch.size (ProducerBatchMaxBytes): franz-go refuses a record whose
//     one-record batch, plus its 4-byte array length, exceeds it (uncompressed).
//
// A re-check reads max.message.bytes again, so raising it on the target topic resumes the
// partition without a restart; batch.size is kmirror's own setting and needs a restart. The
// limit is read from every broker of the target and used only where they agree (loadLimits).

// recLimit is the record size limit for one target topic.
// topicLimits is each target topic's max.message.bytes (absent: not known yet), as the
// target's brokers agree on it. Its zero value is ready; the engine holds one. Its lock is
// its own.
type topicLimits struct {
	mu    sync.Mutex
	bytes map[string]int32
}

// get returns target topic t's max.message.bytes (0: not known).
func (l *topicLimits) get(t string) int32 {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.bytes[t]
}

// set keeps the agreed limits of targets and forgets those of the others.
func (l *topicLimits) set(targets []string, agreed map[string]int32) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.bytes == nil {
		l.bytes = map[string]int32{}
	}
	for _, t := range targets {
		if n, ok := agreed[t]; ok {
			l.bytes[t] = n
			continue
		}
		delete(l.bytes, t)
	}
}

type recLimit struct {
	max   int64 // the smallest of the limits below
	topic int64 // max.message.bytes, or 1<<62 when the broker checks (compression) or unknown
	batch int64 // batch.size minus franz-go's 4-byte array length
}

// recordLimit returns the limits of target topic t; the poll loop calls it once per
// fetched partition.
func (e *Engine) recordLimit(t string) recLimit {
	l := recLimit{topic: 1 << 62, batch: int64(e.cfg.BatchMaxBytes) - 4}
	if m := e.limits.get(t); m > 0 && (e.cfg.Compression == "" || e.cfg.Compression == "none") {
		l.topic = int64(m)
	}
	l.max = min(l.topic, l.batch)
	return l
}

// limitReadTimeout bounds the wait for the target's brokers to agree on max.message.bytes.
const limitReadTimeout = 5 * time.Second

// topicLimit is one broker's max.message.bytes of one target topic.
type topicLimit struct {
	topic string
	bytes int32
}

// loadLimits reads max.message.bytes of target topics from every broker of the target, and
// keeps the value of each topic on which they all agree (internal/agree, within
// limitReadTimeout). A broker answers DescribeConfigs from its own copy of the topic configs,
// which follows an IncrementalAlterConfigs (kmirror's config sync, an operator raising the
// limit) a moment behind: one broker's old value would stop a partition over a limit the
// target no longer has, or let through records it now refuses. A topic the brokers still
// differ on, or that some do not know yet (just created), has no known limit until the next
// check: the broker judges its records meanwhile.
func (e *Engine) loadLimits(ctx context.Context, targets []string) error {
	if len(targets) == 0 {
		return nil
	}
	ans, err := agree.Sets(ctx, e.dst, agree.Config{Timeout: limitReadTimeout}, func(ctx context.Context, _ int32, r kmsg.Requestor) ([]topicLimit, error) {
		return brokerLimits(ctx, r, targets)
	}, nil)
	if err != nil {
		return e.clusterErr("target", e.cfg.TargetAlias, "describe topic configs (max.message.bytes)", err)
	}
	agreed := agreedLimits(ans)
	e.limits.set(targets, agreed)
	if _, ok := ans.Agreed(); !ok {
		e.log.Warn("the target's brokers differ on max.message.bytes; the broker checks record sizes of these topics until they agree",
			"cluster", e.cfg.TargetAlias, "differences", ans.Disagreement(func(l topicLimit) string { return fmt.Sprintf("%s=%d", l.topic, l.bytes) }))
	}
	return nil
}

// brokerLimits asks one broker for max.message.bytes of topics; a topic it answers with an
// error (unknown to it yet, not described to this principal) is left out.
func brokerLimits(ctx context.Context, r kmsg.Requestor, topics []string) ([]topicLimit, error) {
	req := kmsg.NewPtrDescribeConfigsRequest()
	for _, t := range topics {
		res := kmsg.NewDescribeConfigsRequestResource()
		res.ResourceType, res.ResourceName, res.ConfigNames = kmsg.ConfigResourceTypeTopic, t, []string{"max.message.bytes"}
		req.Resources = append(req.Resources, res)
	}
	resp, err := req.RequestWith(ctx, r)
	if err != nil {
		return nil, err
	}
	var out []topicLimit
	for _, res := range resp.Resources {
		if res.ErrorCode != 0 {
			continue
		}
		for _, c := range res.Configs {
			if c.Name != "max.message.bytes" || c.Value == nil {
				continue
			}
			if n, err := strconv.ParseInt(*c.Value, 10, 32); err == nil && n > 0 {
				out = append(out, topicLimit{res.ResourceName, int32(n)})
			}
		}
	}
	return out, nil
}

// agreedLimits is, per topic, the limit every broker of ans gave (a topic a broker left out,
// or gave another value for, has none).
func agreedLimits(ans agree.Answers[topicLimit]) map[string]int32 {
	count := map[topicLimit]int{}
	for _, set := range ans.ByBroker {
		for l := range set {
			count[l]++
		}
	}
	out := map[string]int32{}
	for l, n := range count {
		if n == len(ans.ByBroker) {
			out[l.topic] = l.bytes
		}
	}
	return out
}

// tooLarge stops ps at r when r does not fit lim; it returns true when it did. Records below
// the partition's next offset (already submitted) are not checked.
func (e *Engine) tooLarge(ps *partState, r *kgo.Record, lim recLimit) bool {
	size := logread.RecordBatchSize(r)
	if size <= lim.max {
		return false
	}
	ps.mu.Lock()
	below := r.Offset < ps.next
	ps.mu.Unlock()
	if below {
		return false
	}
	e.stopPartition(e.sizeStop(ps, r.Offset, size, lim))
	return true
}

func (e *Engine) sizeStop(ps *partState, off, size int64, lim recLimit) *stop {
	st := &stop{ps: ps, reason: reasonTooLarge, cluster: e.cfg.TargetAlias}
	if size > lim.topic {
		st.attrs = []any{"offset", off, "size", size, "limit", lim.topic, "target_topic", ps.target}
		st.err = fmt.Errorf("source cluster %s topic %s partition %d offset %d: the record is %d bytes as a record batch, and target topic %s on cluster %s takes at most max.message.bytes=%d; nothing after it is mirrored until it fits; what to do: raise max.message.bytes of topic %s on cluster %s to at least %d (kafka-configs --alter --entity-type topics --entity-name %s --add-config max.message.bytes=%d); the partition resumes by itself at the next check",
			e.cfg.SourceAlias, ps.topic, ps.partition, off, size, ps.target, e.cfg.TargetAlias, lim.topic, ps.target, e.cfg.TargetAlias, size, ps.target, size)
	} else {
		st.attrs = []any{"offset", off, "size", size + 4, "limit", lim.batch + 4}
		st.err = fmt.Errorf("source cluster %s topic %s partition %d offset %d: the record is %d bytes as a record batch (%d with the producer's array length), and kmirror's producer batch.size is %d; nothing after it is mirrored until it fits; what to do: set %s.producer.batch.size (or producer.override.batch.size) to at least %d in mm2.properties and restart kmirror",
			e.cfg.SourceAlias, ps.topic, ps.partition, off, size, size+4, lim.batch+4, e.cfg.TargetAlias, size+4)
	}
	st.recheck = func(ctx context.Context, st *stop) (bool, error) {
		if err := e.loadLimits(ctx, []string{ps.target}); err != nil {
			return true, err
		}
		if size > e.recordLimit(ps.target).max {
			return true, nil
		}
		ps.mu.Lock()
		next := ps.next
		ps.mu.Unlock()
		e.unstop(ps.tp, next)
		return false, nil
	}
	return st
}
