package mirror_test

import (
	"context"
	"net"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/kmigrate/kmigrate/internal/testkit"
	"github.com/kmigrate/kmigrate/mirror"
)

// staleMetadata makes the broker of c that receives the first Metadata request naming topic
// answer, for its next n such requests (n < 0: for ever), that topic has only partitions
// partitions, as a broker does whose metadata is behind a CreatePartitions.
func staleMetadata(t *testing.T, c *kfake.Cluster, topic string, partitions int32, n int) func() int {
	t.Helper()
	var brokers []kmsg.MetadataResponseBroker
	for i, addr := range c.ListenAddrs() {
		host, port, err := net.SplitHostPort(addr)
		if err != nil {
			t.Fatal(err)
		}
		p, _ := strconv.Atoi(port)
		b := kmsg.NewMetadataResponseBroker()
		b.NodeID, b.Host, b.Port = int32(i), host, int32(p)
		brokers = append(brokers, b)
	}
	var mu sync.Mutex
	node, served := int32(-1), 0
	c.ControlKey(int16(kmsg.Metadata), func(kreq kmsg.Request) (kmsg.Response, error, bool) {
		c.KeepControl()
		req := kreq.(*kmsg.MetadataRequest)
		if len(req.Topics) != 1 || req.Topics[0].Topic == nil || *req.Topics[0].Topic != topic {
			return nil, nil, false
		}
		mu.Lock()
		defer mu.Unlock()
		if node < 0 {
			node = c.CurrentNode()
		}
		if c.CurrentNode() != node || (n >= 0 && served >= n) {
			return nil, nil, false
		}
		served++
		resp := req.ResponseKind().(*kmsg.MetadataResponse)
		resp.Brokers, resp.ControllerID = brokers, 0
		mt := kmsg.NewMetadataResponseTopic()
		mt.Topic = kmsg.StringPtr(topic)
		for p := range partitions {
			mp := kmsg.NewMetadataResponseTopicPartition()
			mp.Partition, mp.Leader, mp.Replicas, mp.ISR = p, 0, []int32{0}, []int32{0}
			mt.Partitions = append(mt.Partitions, mp)
		}
		resp.Topics = append(resp.Topics, mt)
		return resp, nil, true
	})
	return func() int { mu.Lock(); defer mu.Unlock(); return served }
}

// TestEnsureTargetsLaggingBroker: the target topic already has the source's 2 partitions, but
// the broker kmirror asks first still lists 1. kmirror must not try to add partitions (the
// target refuses INVALID_PARTITIONS, which stopped kmirror at start): every broker lists 2.
func TestEnsureTargetsLaggingBroker(t *testing.T) {
	t.Parallel()
	src, dst := testkit.StartCluster(t), testkit.StartCluster(t, kfake.NumBrokers(3))
	const topic = "orders-grown"
	testkit.CreateTopic(t, testkit.Client(t, dst), topic, 2, nil)
	served := staleMetadata(t, dst, topic, 1, 3)
	// Kafka refuses a CreatePartitions that adds none ("Topic already has 2 partitions");
	// kfake accepts it, so the test answers as Kafka does.
	var grows atomic.Int32
	dst.ControlKey(int16(kmsg.CreatePartitions), func(kreq kmsg.Request) (kmsg.Response, error, bool) {
		dst.KeepControl()
		grows.Add(1)
		req := kreq.(*kmsg.CreatePartitionsRequest)
		resp := req.ResponseKind().(*kmsg.CreatePartitionsResponse)
		for _, rt := range req.Topics {
			r := kmsg.NewCreatePartitionsResponseTopic()
			r.Topic, r.ErrorCode, r.ErrorMessage = rt.Topic, kerr.InvalidPartitions.Code, kmsg.StringPtr("Topic already has 2 partitions.")
			resp.Topics = append(resp.Topics, r)
		}
		return resp, nil, true
	})
	e, err := mirror.New(testConfig(topic), seeds(src), seeds(dst), testLogger(t))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(e.CloseClients)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := e.EnsureTargets(ctx, map[string]int{topic: 2}); err != nil {
		t.Fatalf("ensure targets over a lagging broker: %v", err)
	}
	if served() == 0 {
		t.Fatal("no stale answer: the fault was not staged")
	}
	if n := grows.Load(); n != 0 {
		t.Errorf("%d CreatePartitions sent to a topic that has its partitions", n)
	}
}
