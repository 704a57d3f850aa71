package mirror_test

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/kmigrate/kmigrate/internal/testkit"
	"github.com/kmigrate/kmigrate/mirror"
)

// staleLimit makes the broker of dst that receives the first DescribeConfigs answer
// max.message.bytes=old for every topic asked, for its next n answers (n < 0: for ever), as a
// broker does that has not applied the latest IncrementalAlterConfigs yet.
func staleLimit(dst *kfake.Cluster, old string, n int) func() int {
	var mu sync.Mutex
	node, served := int32(-1), 0
	dst.ControlKey(int16(kmsg.DescribeConfigs), func(kreq kmsg.Request) (kmsg.Response, error, bool) {
		dst.KeepControl()
		mu.Lock()
		defer mu.Unlock()
		if node < 0 {
			node = dst.CurrentNode()
		}
		if dst.CurrentNode() != node || (n >= 0 && served >= n) {
			return nil, nil, false
		}
		served++
		req := kreq.(*kmsg.DescribeConfigsRequest)
		resp := req.ResponseKind().(*kmsg.DescribeConfigsResponse)
		for _, rr := range req.Resources {
			res := kmsg.NewDescribeConfigsResponseResource()
			res.ResourceType, res.ResourceName = rr.ResourceType, rr.ResourceName
			c := kmsg.NewDescribeConfigsResponseResourceConfig()
			c.Name, c.Value, c.Source = "max.message.bytes", kmsg.StringPtr(old), kmsg.ConfigSourceDynamicTopicConfig
			res.Configs = append(res.Configs, c)
			resp.Resources = append(resp.Resources, res)
		}
		return resp, nil, true
	})
	return func() int { mu.Lock(); defer mu.Unlock(); return served }
}

// TestRecordLimitLaggingBroker: the target topic's max.message.bytes was raised from 2000 to
// 100000 a moment ago and one broker of three still answers 2000. kmirror must not take that
// broker's word: it holds 100000 once every broker says so, and no limit at all (the broker
// judges) while a broker still differs at its bound.
func TestRecordLimitLaggingBroker(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct {
		name  string
		stale int
		want  int64
	}{
		{"catches up", 3, 100_000},
		{"never catches up", -1, 1 << 62},
	} {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			src, dst := testkit.StartCluster(t), testkit.StartCluster(t, kfake.NumBrokers(3))
			const topic = "orders-limit"
			testkit.CreateTopic(t, testkit.Client(t, dst), topic, 1, map[string]*string{"max.message.bytes": kadm.StringPtr("2000")})
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			defer cancel()
			resp, err := kadm.NewClient(testkit.Client(t, dst)).AlterTopicConfigs(ctx,
				[]kadm.AlterConfig{{Op: kadm.SetConfig, Name: "max.message.bytes", Value: kadm.StringPtr("100000")}}, topic)
			if err == nil {
				_, err = resp.On(topic, nil)
			}
			if err != nil {
				t.Fatal(err)
			}
			served := staleLimit(dst, "2000", tt.stale)
			e, err := mirror.New(testConfig(topic), seeds(src), seeds(dst), testLogger(t))
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(e.CloseClients)
			if err := e.LoadLimits(ctx, topic); err != nil {
				t.Fatal(err)
			}
			if served() == 0 {
				t.Fatal("no stale answer: the fault was not staged")
			}
			if got := e.TopicLimit(topic); got != tt.want {
				t.Errorf("limit of %s: %d, want %d (a broker answered 2000 %d times)", topic, got, tt.want, served())
			}
		})
	}
}
