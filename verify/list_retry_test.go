package verify

import (
	"strings"
	"testing"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// TestDiffListOffsetsGivesUp: a refusal that retrying cannot cure is reported at once.
func TestDiffListOffsetsGivesUp(t *testing.T) {
	src := newCluster(t)
	c, err := kfake.NewCluster(kfake.NumBrokers(1))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(c.Close)
	dst, err := kgo.NewClient(kgo.SeedBrokers(c.ListenAddrs()...), kgo.RecordPartitioner(kgo.ManualPartitioner()), kgo.ProducerLinger(0))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(dst.Close)
	topic := uniqueTopic(t)
	createTopic(t, src, topic, 1)
	createTopic(t, dst, topic, 1)
	c.Fault(kfake.Fault{Keys: []kmsg.Key{kmsg.ListOffsets}, Err: kerr.TopicAuthorizationFailed, Count: -1})
	_, _, err = Diff(t.Context(), src, dst, Config{SourceTopic: topic})
	if err == nil || !strings.Contains(err.Error(), "TOPIC_AUTHORIZATION_FAILED") || strings.Contains(err.Error(), "asked") {
		t.Fatalf("got %v, want the authorization error at once", err)
	}
}
