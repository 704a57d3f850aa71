package cluster

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

const pollEvery = 250 * time.Millisecond

// errExited marks a start that failed because a process died while starting, e.g. because
// another test process bound its port first; Start tries such a start once more.
var errExited = errors.New("process exited while starting")

// poll calls probe until it succeeds, ctx ends, or one of procs exits (then it fails at once
// with the exit status: no point waiting for a dead broker).
func poll(ctx context.Context, what string, procs []*proc, probe func(context.Context) error) error {
	t := time.NewTicker(pollEvery)
	defer t.Stop()
	var last error
	for {
		for _, p := range procs {
			if !p.running() {
				return fmt.Errorf("%s: %s %v before it was ready (log: %s): %w", what, p.name, p.exitErr(), p.logPath, errExited)
			}
		}
		pctx, cancel := context.WithTimeout(ctx, 5*time.Second)
		last = probe(pctx)
		cancel()
		if last == nil {
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("%s: not ready when the deadline came (%w); last probe: %v", what, ctx.Err(), last)
		case <-t.C:
		}
	}
}

// waitBrokers waits until every broker id in want answers a metadata request itself and each
// answer lists all of them: the readiness probe is the Kafka protocol, never the logs. Asking
// each broker matters: with KRaft every broker learns the others from its own replay of the
// metadata log, so one broker can list all three while another still lists two.
func waitBrokers(ctx context.Context, name string, addrs []string, want []int32, procs []*proc) error {
	return waitBrokersAs(ctx, name, addrs, want, procs, nil)
}

// waitBrokersAs is waitBrokers with client options (SASL and TLS of a secure bed).
func waitBrokersAs(ctx context.Context, name string, addrs []string, want []int32, procs []*proc, opts []kgo.Opt) error {
	if len(addrs) == 0 {
		return nil
	}
	opts = append([]kgo.Opt{kgo.SeedBrokers(addrs...), kgo.DialTimeout(time.Second), kgo.RequestRetries(0)}, opts...)
	cl, err := kgo.NewClient(opts...)
	if err != nil {
		return fmt.Errorf("cluster %s: client: %w", name, err)
	}
	defer cl.Close()
	what := fmt.Sprintf("cluster %s: brokers %v at %v serving", name, want, addrs)
	return poll(ctx, what, procs, func(ctx context.Context) error {
		return probeBrokers(ctx, cl, want)
	})
}

func probeBrokers(ctx context.Context, cl *kgo.Client, want []int32) error {
	if err := brokersListed(ctx, cl, want); err != nil {
		return err
	}
	for _, id := range want {
		if err := brokersListed(ctx, cl.Broker(int(id)), want); err != nil {
			return fmt.Errorf("broker %d: %w", id, err)
		}
	}
	return nil
}

// brokersListed sends a brokers-only metadata request through r (the client, or one broker)
// and fails unless the answer lists every id in want.
func brokersListed(ctx context.Context, r kmsg.Requestor, want []int32) error {
	req := kmsg.NewPtrMetadataRequest()
	req.Topics = []kmsg.MetadataRequestTopic{} // no topics: brokers only
	req.AllowAutoTopicCreation = false
	resp, err := req.RequestWith(ctx, r)
	if err != nil {
		return fmt.Errorf("metadata: %w", err)
	}
	var got []int32
	for _, b := range resp.Brokers {
		got = append(got, b.NodeID)
	}
	for _, id := range want {
		if !slices.Contains(got, id) {
			return fmt.Errorf("metadata lists brokers %v, want %v", got, want)
		}
	}
	return nil
}
