// Package agree reads a piece of cluster state that every broker serves from its own copy (ACLs,
// topic configs, topic metadata) from each broker in the cluster's metadata, and answers only
// once they all give the same answer.
//
// Why: a write to such state (CreateAcls, DeleteAcls, IncrementalAlterConfigs, CreateTopics)
// is acknowledged once the controller (KRaft's metadata log, or ZooKeeper) has it; each broker
// applies it afterwards, one by one. A read sent to "any broker" right after the write, or after
// someone else's, can be answered from a broker that has not applied it yet. One broker's answer
// is therefore not what is on the cluster; the answer every broker gives is.
//
// Guarantees: Sets returns the per-broker answers of one round in which every broker of the
// metadata answered; Agreed says whether they are equal. It asks again, with a growing pause,
// until they are equal and the caller's condition holds, or until Config.Timeout has passed
// (then it returns the last round as it is, for the caller to name the brokers that differ).
// A broker whose request fails with a retriable error (a broker restarting) is asked again; any
// other error (authorization, security disabled) is returned at once. Nothing is written.
//
// Limits: brokers that all lag behind a write in the same way agree on the old state; a
// caller that has just written passes a condition (Want) saying what it expects to see.
package agree

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/kmigrate/kmigrate/logread"
)

// DefaultTimeout is how long Sets waits for the brokers to agree when Config.Timeout is 0.
const DefaultTimeout = 30 * time.Second

// Config bounds the wait.
type Config struct {
	// Timeout is how long to keep asking; 0 means DefaultTimeout.
	Timeout time.Duration
	// Pause is the first pause between rounds (doubling up to a second); 0 means 50 ms.
	Pause time.Duration
}

// Answers are the brokers' answers of one round: each broker's set, by node ID.
type Answers[K comparable] struct {
	// ByBroker holds every broker's answer (every broker of the round answered).
	ByBroker map[int32]map[K]bool
	// Rounds is how many rounds were asked; Waited is how long it took.
	Rounds int
	Waited time.Duration
}

// Brokers returns the node IDs of the round, sorted.
func (a Answers[K]) Brokers() []int32 {
	ids := make([]int32, 0, len(a.ByBroker))
	for id := range a.ByBroker {
		ids = append(ids, id)
	}
	slices.Sort(ids)
	return ids
}

// Agreed returns the common answer and true when every broker gave the same set.
func (a Answers[K]) Agreed() (map[K]bool, bool) {
	var first map[K]bool
	for _, id := range a.Brokers() {
		s := a.ByBroker[id]
		if first == nil {
			first = s
			continue
		}
		if !maps.Equal(first, s) {
			return nil, false
		}
	}
	if first == nil {
		first = map[K]bool{}
	}
	return first, true
}

// Showing returns the brokers whose answer holds k, and those whose answer does not.
func (a Answers[K]) Showing(k K) (with, without []int32) {
	for _, id := range a.Brokers() {
		if a.ByBroker[id][k] {
			with = append(with, id)
		} else {
			without = append(without, id)
		}
	}
	return with, without
}

// Disagreement names, for each item that not every broker shows, the brokers that show it
// and those that do not (name says what an item is); "" when the brokers agree.
func (a Answers[K]) Disagreement(name func(K) string) string {
	all := map[K]bool{}
	for _, s := range a.ByBroker {
		for k := range s {
			all[k] = true
		}
	}
	var lines []string
	for k := range all {
		with, without := a.Showing(k)
		if len(without) == 0 {
			continue
		}
		lines = append(lines, fmt.Sprintf("%s: shown by %s, not by %s", name(k), NodeList(with), NodeList(without)))
	}
	sort.Strings(lines)
	return strings.Join(lines, "; ")
}

// NodeList is node IDs as "broker 1" or "brokers 1, 2".
func NodeList(ids []int32) string {
	s := make([]string, len(ids))
	for i, id := range ids {
		s[i] = fmt.Sprint(id)
	}
	if len(ids) == 1 {
		return "broker " + s[0]
	}
	return "brokers " + strings.Join(s, ", ")
}

// Brokers lists the node IDs in the cluster's metadata, asked of the cluster now (a Metadata
// request for no topics), sorted.
func Brokers(ctx context.Context, cl *kgo.Client) ([]int32, error) {
	req := kmsg.NewPtrMetadataRequest()
	req.Topics = []kmsg.MetadataRequestTopic{}
	resp, err := req.RequestWith(ctx, cl)
	if err != nil {
		return nil, err
	}
	ids := make([]int32, 0, len(resp.Brokers))
	for _, b := range resp.Brokers {
		ids = append(ids, b.NodeID)
	}
	slices.Sort(ids)
	if len(ids) == 0 {
		return nil, errors.New("the metadata lists no broker")
	}
	return ids, nil
}

// Sets asks every broker with read (given the broker's node ID and a requestor that sends to
// that broker alone) and waits (within cfg.Timeout) until all answers are the
// same set and want(that set) is true (want nil: any agreed set). It returns the last round;
// the caller checks Agreed (false: the brokers still differed at the bound) and want. The
// error is a non-retriable failure of a request, or the end of ctx, or no broker answering
// within the bound (naming the brokers and their errors).
func Sets[K comparable](ctx context.Context, cl *kgo.Client, cfg Config, read func(ctx context.Context, node int32, r kmsg.Requestor) ([]K, error), want func(map[K]bool) bool) (Answers[K], error) {
	timeout := cfg.Timeout
	if timeout <= 0 {
		timeout = DefaultTimeout
	}
	pause := cfg.Pause
	if pause <= 0 {
		pause = 50 * time.Millisecond
	}
	start := time.Now()
	deadline := start.Add(timeout)
	var last Answers[K]
	var lastErr error
	for round := 1; ; round++ {
		ans, err := readRound(ctx, cl, read)
		switch {
		case err != nil && !logread.Retriable(err):
			return last, err
		case err != nil:
			lastErr = err
		default:
			ans.Rounds, ans.Waited = round, time.Since(start)
			last, lastErr = ans, nil
			if s, ok := ans.Agreed(); ok && (want == nil || want(s)) {
				return ans, nil
			}
		}
		if time.Now().Add(pause).After(deadline) {
			if last.ByBroker == nil {
				return last, fmt.Errorf("no round in which every broker answered within %s: %w", timeout, lastErr)
			}
			last.Rounds, last.Waited = round, time.Since(start)
			return last, nil
		}
		if !logread.Wait(ctx, pause) {
			if err := ctx.Err(); err != nil {
				return last, err
			}
			return last, fmt.Errorf("the context ends before the brokers agree: %w", context.DeadlineExceeded)
		}
		pause = min(2*pause, time.Second)
	}
}

// readRound asks each broker of the metadata once, all at the same time.
func readRound[K comparable](ctx context.Context, cl *kgo.Client, read func(context.Context, int32, kmsg.Requestor) ([]K, error)) (Answers[K], error) {
	ids, err := Brokers(ctx, cl)
	if err != nil {
		return Answers[K]{}, err
	}
	items := make([][]K, len(ids))
	errs := make([]error, len(ids))
	var wg sync.WaitGroup
	for i, id := range ids {
		wg.Go(func() { items[i], errs[i] = read(ctx, id, cl.Broker(int(id))) })
	}
	wg.Wait()
	ans := Answers[K]{ByBroker: make(map[int32]map[K]bool, len(ids))}
	for i, id := range ids {
		if errs[i] != nil {
			return Answers[K]{}, fmt.Errorf("broker %d: %w", id, errs[i])
		}
		s := make(map[K]bool, len(items[i]))
		for _, k := range items[i] {
			s[k] = true
		}
		ans.ByBroker[id] = s
	}
	return ans, nil
}

// Partitions reads, from the one broker r sends to, the partitions of topic its metadata
// lists; with led, only those that have a leader and no error. A read for Sets: every broker's
// list, once they agree, is what the cluster serves.
func Partitions(topic string, led bool) func(context.Context, int32, kmsg.Requestor) ([]int32, error) {
	return func(ctx context.Context, _ int32, r kmsg.Requestor) ([]int32, error) {
		req := kmsg.NewPtrMetadataRequest()
		rt := kmsg.NewMetadataRequestTopic()
		rt.Topic = kmsg.StringPtr(topic)
		req.Topics = append(req.Topics, rt)
		resp, err := req.RequestWith(ctx, r)
		if err != nil {
			return nil, err
		}
		var ids []int32
		for _, mt := range resp.Topics {
			if mt.Topic == nil || *mt.Topic != topic || mt.ErrorCode != 0 {
				continue
			}
			for _, p := range mt.Partitions {
				if !led || p.ErrorCode == 0 && p.Leader >= 0 {
					ids = append(ids, p.Partition)
				}
			}
		}
		return ids, nil
	}
}
