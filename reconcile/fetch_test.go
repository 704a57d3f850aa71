package reconcile

import (
	"errors"
	"fmt"
	"regexp"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
	"github.com/twmb/franz-go/pkg/kversion"

	"github.com/kmigrate/kmigrate/internal/testkit"
)

// newOldSource replaces e's source with a kfake cluster that speaks only what Kafka 2.3.0
// does: OffsetFetch below v8, one group per request, as on the real 2.3.0 source. The
// client gets opts on top of its seeds.
func newOldSource(t *testing.T, e *env, opts ...kfake.Opt) {
	t.Helper()
	c := testkit.StartCluster(t, append([]kfake.Opt{kfake.ClusterID("kfake-source-2.3.0"), kfake.MaxVersions(kversion.V2_3_0())}, opts...)...)
	e.srcK, e.srcSeeds = c, c.ListenAddrs()
}

// oldSourceClient is a client of e's 2.3.0 source with opts.
func oldSourceClient(t *testing.T, e *env, opts ...kgo.Opt) *kgo.Client {
	t.Helper()
	return testkit.Client(t, e.srcK, opts...)
}

// commitGroups commits n groups named "<prefix>-%04d" on adm, group i at offset at(i) of
// topic/0, 16 at once.
func commitGroups(t *testing.T, adm *kadm.Client, prefix, topic string, n int, at func(int) int64) []string {
	t.Helper()
	names := make([]string, n)
	sem := make(chan struct{}, 16)
	var wg sync.WaitGroup
	var failed atomic.Value
	for i := range n {
		names[i] = fmt.Sprintf("%s-%04d", prefix, i)
		sem <- struct{}{}
		wg.Go(func() {
			defer func() { <-sem }()
			offs := kadm.Offsets{}
			offs.Add(kadm.Offset{Topic: topic, Partition: 0, At: at(i), LeaderEpoch: -1})
			resp, err := adm.CommitOffsets(testCtx(t), names[i], offs)
			if err == nil {
				err = resp.Error()
			}
			if err != nil {
				failed.Store(fmt.Errorf("commit %s: %w", names[i], err))
			}
		})
	}
	wg.Wait()
	if err, ok := failed.Load().(error); ok {
		t.Fatal(err)
	}
	return names
}

// offsetFetchGroup is the group of an OffsetFetch below v8 (one group per request).
func offsetFetchGroup(req *kmsg.OffsetFetchRequest) string {
	if len(req.Groups) > 0 {
		return req.Groups[0].Group
	}
	return req.Group
}

// Many groups: on a 2.3.0 source the groups' OffsetFetch requests, one per group, can die
// with their connection ("the broker connection has died", "i/o timeout"). Here the source
// kills the connection on the first OffsetFetch of two groups, failing every request on it at
// that moment; kgo's own retries are off in the source client so that each failure reaches
// Plan at once, as it does on a real broker once kgo's 30 s retry window is spent. Plan must
// retry those groups and answer every group exactly.
func TestPlanRetriesGroupsWhoseOffsetFetchDied(t *testing.T) {
	e := newEnv(t)
	newOldSource(t, e)
	e.src = oldSourceClient(t, e, kgo.RequestRetries(0))
	e.srcAdm = kadm.NewClient(e.src)
	topic := uniqueTopic("fetchdied")
	testkit.CreateTopic(t, e.src, topic, 1, nil)
	testkit.CreateTopic(t, e.dst, topic, 1, nil)
	testkit.Produce(t, e.src, topic, 0, values("v", 0, 50)...)
	mirrorTopic(t, e, topic, topic, 0, step{0, 50}) // identity: E(G) = G
	const n = 300
	at := func(i int) int64 { return int64(i % 51) }
	names := commitGroups(t, e.srcAdm, "fd-"+topic, topic, n, at)
	commitGroups(t, e.dstAdm, "fd-"+topic, topic, n, func(int) int64 { return 0 })
	doomed := map[string]bool{names[7]: true, names[n-20]: true}
	var kills atomic.Int32
	e.srcK.ControlKey(int16(kmsg.OffsetFetch), func(kr kmsg.Request) (kmsg.Response, error, bool) {
		e.srcK.KeepControl()
		if g := offsetFetchGroup(kr.(*kmsg.OffsetFetchRequest)); doomed[g] {
			delete(doomed, g) // its first attempt only
			kills.Add(1)
			return nil, fmt.Errorf("test: drop the OffsetFetch of %s", g), true
		}
		return nil, nil, false
	})

	res, err := Plan(testCtx(t), e.src, e.dst, Config{Groups: regexp.MustCompile(regexp.QuoteMeta("fd-"+topic) + `-.*`)})
	if err != nil {
		t.Fatalf("Plan: %v", err)
	}
	if k := kills.Load(); k != 2 {
		t.Fatalf("the source killed %d OffsetFetch connections, want 2: the test did not exercise a failure", k)
	}
	if len(res.Groups) != n {
		t.Fatalf("plan has %d groups, want %d", len(res.Groups), n)
	}
	for i, name := range names {
		g := findGroup(t, res, name)
		if g.Err != "" {
			t.Errorf("group %s: %s", name, g.Err)
			continue
		}
		p := findPartition(t, res, name, topic, 0)
		want := at(i)
		if p.SourceCommitted != want || fmtPtr(p.ExactTarget) != fmtPtr(&want) {
			t.Errorf("group %s: source commit %d, E(G) %s (status %s, %s), want %d and %d", name, p.SourceCommitted, fmtPtr(p.ExactTarget), p.Status, p.Reason, want, want)
		}
	}
}

// inFlight counts a client's OffsetFetch requests written and not yet answered, the most
// there ever were, and closes full once limit of them were written.
type inFlight struct {
	now, peak, written atomic.Int64
	limit              int64
	full               chan struct{}
}

func (f *inFlight) OnBrokerWrite(_ kgo.BrokerMetadata, key int16, _ int, _, _ time.Duration, err error) {
	if key != int16(kmsg.OffsetFetch) || err != nil {
		return
	}
	n := f.now.Add(1)
	for p := f.peak.Load(); n > p && !f.peak.CompareAndSwap(p, n); p = f.peak.Load() {
	}
	if f.written.Add(1) == f.limit {
		close(f.full)
	}
}

func (f *inFlight) OnBrokerE2E(_ kgo.BrokerMetadata, key int16, e2e kgo.BrokerE2E) {
	if key == int16(kmsg.OffsetFetch) && e2e.WriteErr == nil {
		f.now.Add(-1)
	}
}

// Many groups: fetchOffsets keeps at most fetchInFlight groups in flight on a broker that
// takes one group per request. The source holds its answer to the first OffsetFetch until the
// client has written fetchInFlight of them (a client keeping the bound can then only wait),
// so the peak is what the client writes before any answer: kadm's FetchManyOffsets alone
// writes all 3 x fetchInFlight. Every group must then get its own offset.
func TestFetchOffsetsBoundsGroupsInFlight(t *testing.T) {
	e := newEnv(t)
	newOldSource(t, e)
	counter := &inFlight{limit: fetchInFlight, full: make(chan struct{})}
	cl := oldSourceClient(t, e, kgo.WithHooks(counter))
	adm := kadm.NewClient(cl)
	topic := uniqueTopic("inflight")
	testkit.CreateTopic(t, cl, topic, 1, nil)
	const n = 3 * fetchInFlight
	at := func(i int) int64 { return int64(i) }
	names := commitGroups(t, adm, "if-"+topic, topic, n, at)

	ctx := testCtx(t)
	var held atomic.Bool
	e.srcK.ControlKey(int16(kmsg.OffsetFetch), func(kmsg.Request) (kmsg.Response, error, bool) {
		e.srcK.KeepControl()
		if held.CompareAndSwap(false, true) {
			e.srcK.SleepControl(func() {
				select {
				case <-counter.full:
				case <-ctx.Done():
				}
			})
		}
		return nil, nil, false
	})
	got := fetchOffsets(ctx, adm, names)
	if ctx.Err() != nil {
		t.Fatalf("the client wrote %d OffsetFetch requests while the first was held, want %d: %v", counter.written.Load(), fetchInFlight, ctx.Err())
	}
	if p := counter.peak.Load(); p != fetchInFlight {
		t.Errorf("%d OffsetFetch requests in flight at once at the most, want %d (the bound, filled)", p, fetchInFlight)
	}
	for i, name := range names {
		r, ok := got[name]
		o, found := r.Fetched.Lookup(topic, 0)
		if !ok || r.Err != nil || !found || o.At != at(i) {
			t.Errorf("group %s: answered %v, err %v, offset %d (found %v), want %d", name, ok, r.Err, o.At, found, at(i))
		}
	}
}

// A group that still fails after the retries keeps its error, with the attempts named, and
// one that fails with an error no retry fixes is not retried.
func TestFetchOffsetsGivesUpClearly(t *testing.T) {
	e := newEnv(t)
	newOldSource(t, e)
	cl := oldSourceClient(t, e, kgo.RequestRetries(0))
	adm := kadm.NewClient(cl)
	topic := uniqueTopic("giveup")
	testkit.CreateTopic(t, cl, topic, 1, nil)
	names := commitGroups(t, adm, "gu-"+topic, topic, 3, func(i int) int64 { return int64(i) })
	var mu sync.Mutex
	tries := map[string]int{}
	triesOf := func(g string) int { mu.Lock(); defer mu.Unlock(); return tries[g] }
	e.srcK.ControlKey(int16(kmsg.OffsetFetch), func(kr kmsg.Request) (kmsg.Response, error, bool) {
		e.srcK.KeepControl()
		req := kr.(*kmsg.OffsetFetchRequest)
		g := offsetFetchGroup(req)
		mu.Lock()
		tries[g]++
		mu.Unlock()
		switch g {
		case names[0]:
			resp := req.ResponseKind().(*kmsg.OffsetFetchResponse)
			resp.ErrorCode = kerr.CoordinatorLoadInProgress.Code // for ever
			return resp, nil, true
		case names[1]:
			resp := req.ResponseKind().(*kmsg.OffsetFetchResponse)
			resp.ErrorCode = kerr.GroupAuthorizationFailed.Code // no retry fixes it
			return resp, nil, true
		}
		return nil, nil, false
	})
	got := fetchOffsets(testCtx(t), adm, names)
	if err := got[names[0]].Err; !retriable(err) || triesOf(names[0]) < fetchAttempts || !strings.HasSuffix(err.Error(), fmt.Sprintf("(tried %d times)", fetchAttempts)) {
		t.Errorf("group dropped every time: asked %d times, err %v; want %d attempts, named in the retriable error", triesOf(names[0]), err, fetchAttempts)
	}
	if err := got[names[1]].Err; !errors.Is(err, kerr.GroupAuthorizationFailed) || strings.Contains(err.Error(), "tried") {
		t.Errorf("group not authorized: err %v; want GROUP_AUTHORIZATION_FAILED, not retried", err)
	}
	if o, ok := got[names[2]].Fetched.Lookup(topic, 0); got[names[2]].Err != nil || !ok || o.At != 2 {
		t.Errorf("healthy group: err %v, offset %d (found %v), want 2", got[names[2]].Err, o.At, ok)
	}
}
