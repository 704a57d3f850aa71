package reconcile

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"sync"
	"time"

	"github.com/kmigrate/kmigrate/logread"
	"github.com/twmb/franz-go/pkg/kadm"
	"golang.org/x/sync/errgroup"
)

// How fetchOffsets reads many groups' committed offsets.
//
// A broker before Kafka 3.0 (OffsetFetch below v8) answers one group per request, so kadm's
// FetchManyOffsets over 10,000 groups writes 10,000 requests at once on the one connection to
// the coordinator. Kafka reads the next request of a connection only after answering the one
// before, so they wait in line; on a 2.3.0 source the connection died with the requests still
// on it ("the broker connection has died", "i/o timeout") and 6,741 of 10,000 groups failed.
//
// fetchInFlight groups at once keeps that line short. Measured on the 2.3.0 source (integration
// TestReconcileGrowth, 10,000 groups x 24 partitions), reading every group took 1.5 to 2.3 s
// with 32, 256 or 2,048 groups in flight, 0 failed: the broker answers about one group per
// 0.2 ms whatever the bound, so the bound costs nothing. 256 puts about 50 ms of work ahead of
// the last request written, far inside any client timeout, and keeps the line from running
// dry between calls. On 3.0 and later the groups of a chunk travel in one batched request.
// The groups are sent fetchChunk per FetchManyOffsets call, fetchInFlight/fetchChunk calls at
// a time.
const (
	fetchInFlight = 256
	fetchChunk    = 32
	// fetchAttempts is how many times a group failing with a retriable error is tried in
	// all, fetchBackoff the wait before the first retry (doubled before each next one).
	fetchAttempts = 4
	fetchBackoff  = 250 * time.Millisecond
)

// errGroupLeftOut is a group the broker's OffsetFetch answer did not include: it is never
// taken as a group without commits.
var errGroupLeftOut = errors.New("the broker's OffsetFetch answer left the group out")

// fetchOffsets is kadm's FetchManyOffsets in bounded batches: at most fetchInFlight groups in
// flight at once, and the groups that failed with a retriable error (a dead connection, a
// timeout, a coordinator moving or loading) tried again, up to fetchAttempts times in all
// with a growing backoff, as long as ctx leaves time for it. Every group asked for is in the
// answer: with its offsets, or with the error of its last attempt (naming the attempts when
// it was retried), which the callers report naming the cluster and the group. It never
// fills in an offset the broker did not give.
func fetchOffsets(ctx context.Context, adm *kadm.Client, groups []string) kadm.FetchOffsetsResponses {
	out := make(kadm.FetchOffsetsResponses, len(groups))
	pending := groups
	wait := fetchBackoff
	for attempt := 1; ; attempt++ {
		fetchRound(ctx, adm, pending, out)
		pending = retriableGroups(ctx, out, pending)
		if len(pending) == 0 {
			return out
		}
		if attempt == fetchAttempts || !logread.Wait(ctx, wait) {
			for _, g := range pending {
				if r := out[g]; r.Err != nil {
					r.Err = fmt.Errorf("%w (tried %d times)", r.Err, attempt)
					out[g] = r
				}
			}
			return out
		}
		wait *= 2
	}
}

// fetchRound fetches the offsets of groups, fetchChunk groups per call and fetchInFlight
// groups at once, into out.
func fetchRound(ctx context.Context, adm *kadm.Client, groups []string, out kadm.FetchOffsetsResponses) {
	var mu sync.Mutex
	var eg errgroup.Group
	eg.SetLimit(max(1, fetchInFlight/fetchChunk))
	for from := 0; from < len(groups); from += fetchChunk {
		chunk := groups[from:min(from+fetchChunk, len(groups))]
		eg.Go(func() error {
			got := fetchChunkOffsets(ctx, adm, chunk)
			mu.Lock()
			defer mu.Unlock()
			maps.Copy(out, got)
			return nil
		})
	}
	_ = eg.Wait() // the calls return nil: their failures are the groups'
}

// fetchChunkOffsets is FetchManyOffsets over a few groups, with an answer for every one.
// When a broker takes one group per request (before Kafka 3.0), kadm leaves out of its answer
// the groups whose request failed (a dead connection, a refusal of the whole request): those
// are asked again one by one, which kadm answers with the group's own error. A group still
// missing gets errGroupLeftOut.
func fetchChunkOffsets(ctx context.Context, adm *kadm.Client, chunk []string) kadm.FetchOffsetsResponses {
	got := adm.FetchManyOffsets(ctx, chunk...)
	var missing []string
	for _, g := range chunk {
		if _, ok := got[g]; !ok && len(chunk) > 1 {
			missing = append(missing, g)
		}
	}
	var mu sync.Mutex
	var wg sync.WaitGroup
	for _, g := range missing {
		wg.Go(func() {
			one := adm.FetchManyOffsets(ctx, g)
			mu.Lock()
			defer mu.Unlock()
			if r, ok := one[g]; ok {
				got[g] = r
			}
		})
	}
	wg.Wait()
	for _, g := range chunk {
		if _, ok := got[g]; !ok {
			got[g] = kadm.FetchOffsetsResponse{Group: g, Err: errGroupLeftOut}
		}
	}
	return got
}

// retriableGroups are the groups of asked whose answer in out failed in a way another
// attempt may fix: the group's error, or one of its partitions', is retriable.
func retriableGroups(ctx context.Context, out kadm.FetchOffsetsResponses, asked []string) []string {
	if ctx.Err() != nil {
		return nil
	}
	var again []string
	for _, g := range asked {
		r := out[g]
		retry := retriable(r.Err)
		r.Fetched.Each(func(o kadm.OffsetResponse) { retry = retry || retriable(o.Err) })
		if retry {
			again = append(again, g)
		}
	}
	return again
}

// retriable says whether err is worth another attempt: logread.Retriable (Kafka's retriable
// errors, a connection that died, timed out or could not be dialled), or a group left out of
// an answer. kgo does not retry a connection closed at its first answer (mostly a missing SASL
// login), but here the client has already been answered by this cluster (the groups were
// listed and described), so it is a connection that died.
func retriable(err error) bool {
	return logread.Retriable(err) || errors.Is(err, errGroupLeftOut)
}
