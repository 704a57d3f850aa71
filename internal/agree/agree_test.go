package agree

import (
	"context"
	"errors"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/kmigrate/kmigrate/internal/testkit"
)

func cluster3(t *testing.T) *kgo.Client {
	return testkit.Client(t, testkit.StartCluster(t, kfake.NumBrokers(3)))
}

// TestSets: the answer is given once every broker agrees; a broker that never does is named at
// the bound; a non-retriable error ends the wait at once.
func TestSets(t *testing.T) {
	cl := cluster3(t)
	ctx := context.Background()
	var calls atomic.Int32
	// Broker 1 lags for its first three answers, then gives what the others give.
	lagging := func(n int32) func(context.Context, int32, kmsg.Requestor) ([]string, error) {
		return func(_ context.Context, node int32, _ kmsg.Requestor) ([]string, error) {
			calls.Add(1)
			if node == 1 && (n < 0 || calls.Load() <= 3*n) {
				return []string{"a"}, nil
			}
			return []string{"a", "b"}, nil
		}
	}
	ans, err := Sets(ctx, cl, Config{Timeout: 10 * time.Second, Pause: time.Millisecond}, lagging(3), nil)
	if err != nil {
		t.Fatal(err)
	}
	set, ok := ans.Agreed()
	if !ok || len(set) != 2 || ans.Rounds != 4 || len(ans.Brokers()) != 3 {
		t.Fatalf("agreed %v %v after %d rounds from %v; want {a b} after 4 rounds from 3 brokers", ok, set, ans.Rounds, ans.Brokers())
	}

	calls.Store(0)
	ans, err = Sets(ctx, cl, Config{Timeout: 200 * time.Millisecond, Pause: time.Millisecond}, lagging(-1), nil)
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := ans.Agreed(); ok {
		t.Fatal("a broker that never catches up: agreed")
	}
	if d := ans.Disagreement(func(s string) string { return s }); d != "b: shown by brokers 0, 2, not by broker 1" {
		t.Errorf("disagreement %q", d)
	}

	// What the caller waits for after a write: agreed, but not yet showing it.
	calls.Store(0)
	ans, err = Sets(ctx, cl, Config{Timeout: 200 * time.Millisecond, Pause: time.Millisecond},
		func(context.Context, int32, kmsg.Requestor) ([]string, error) { return []string{"a"}, nil },
		func(s map[string]bool) bool { return s["b"] })
	if err != nil || ans.Rounds < 2 {
		t.Fatalf("want: %v after %d rounds; want no error after several rounds", err, ans.Rounds)
	}
	if with, without := ans.Showing("b"); len(with) != 0 || len(without) != 3 {
		t.Errorf("b shown by %v, not by %v", with, without)
	}

	_, err = Sets(ctx, cl, Config{Timeout: 10 * time.Second},
		func(context.Context, int32, kmsg.Requestor) ([]string, error) {
			return nil, kerr.ClusterAuthorizationFailed
		}, nil)
	if !errors.Is(err, kerr.ClusterAuthorizationFailed) || !strings.Contains(err.Error(), "broker 0") {
		t.Errorf("a refusal: %v, want CLUSTER_AUTHORIZATION_FAILED at once, naming the broker", err)
	}
}

// TestPartitions: every broker lists a topic's partitions; a topic no broker knows gives none.
func TestPartitions(t *testing.T) {
	c := testkit.StartCluster(t, kfake.NumBrokers(3), kfake.SeedTopics(4, "orders"))
	cl := testkit.Client(t, c)
	ctx := context.Background()
	for _, led := range []bool{false, true} {
		ans, err := Sets(ctx, cl, Config{Timeout: 5 * time.Second}, Partitions("orders", led), nil)
		if err != nil {
			t.Fatal(err)
		}
		if s, ok := ans.Agreed(); !ok || len(s) != 4 || len(ans.Brokers()) != 3 {
			t.Errorf("led %v: agreed %v on %v from %v, want partitions 0-3 from 3 brokers", led, ok, s, ans.Brokers())
		}
	}
	ans, err := Sets(ctx, cl, Config{Timeout: 5 * time.Second}, Partitions("absent", false), nil)
	if s, ok := ans.Agreed(); err != nil || !ok || len(s) != 0 {
		t.Errorf("absent topic: %v, %v %v", err, ok, s)
	}
}
