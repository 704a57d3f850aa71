package cluster

import (
	"context"
	"net"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/kmigrate/kmigrate/internal/testkit"
)

// TestProbeBrokersAsksEveryBroker: a cluster is ready only when every broker's own metadata
// lists them all. Here broker 1 answers as a KRaft broker that has not yet replayed broker 2's
// registration (it lists 0 and 1), while brokers 0 and 2 list all three; a probe that asks one
// broker of the client's choosing passes two times in three (the TestJVMProxied failure in CI:
// the cluster was "ready" and the next metadata request listed two brokers).
func TestProbeBrokersAsksEveryBroker(t *testing.T) {
	c := testkit.StartCluster(t, kfake.NumBrokers(3))
	addrs := c.ListenAddrs()
	var lagging atomic.Bool
	lagging.Store(true)
	c.ControlKey(int16(kmsg.Metadata), func(kreq kmsg.Request) (kmsg.Response, error, bool) {
		c.KeepControl()
		if !lagging.Load() || c.CurrentNode() != 1 {
			return nil, nil, false
		}
		req := kreq.(*kmsg.MetadataRequest)
		resp := req.ResponseKind().(*kmsg.MetadataResponse)
		for id, a := range addrs[:2] {
			host, port, err := net.SplitHostPort(a)
			if err != nil {
				return nil, err, true
			}
			p, _ := strconv.Atoi(port)
			resp.Brokers = append(resp.Brokers, kmsg.MetadataResponseBroker{NodeID: int32(id), Host: host, Port: int32(p)})
		}
		resp.ControllerID = 0
		return resp, nil, true
	})
	probe := func() error {
		cl, err := kgo.NewClient(kgo.SeedBrokers(addrs...), kgo.RequestRetries(0))
		if err != nil {
			t.Fatal(err)
		}
		defer cl.Close()
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		return probeBrokers(ctx, cl, []int32{0, 1, 2})
	}
	for i := range 8 {
		err := probe()
		if err == nil {
			t.Fatalf("probe %d passed while broker 1's metadata lists brokers 0 and 1 only", i)
		}
		if !strings.Contains(err.Error(), "metadata lists brokers [0 1]") {
			t.Fatalf("probe %d: %v; want it to name the short broker list", i, err)
		}
	}
	lagging.Store(false)
	if err := probe(); err != nil {
		t.Fatalf("every broker lists all three, probe: %v", err)
	}
}
