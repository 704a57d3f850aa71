package verify

import (
	"strings"
	"testing"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/kmigrate/kmigrate/internal/testkit"
)

// TestDiffListOffsetsGivesUp: a refusal that retrying cannot cure is reported at once.
func TestDiffListOffsetsGivesUp(t *testing.T) {
	src := newCluster(t)
	c := testkit.StartCluster(t)
	dst := testkit.Client(t, c, kgo.ProducerLinger(0))
	topic := testkit.TopicName("t")
	testkit.CreateTopic(t, src, topic, 1, nil)
	testkit.CreateTopic(t, dst, topic, 1, nil)
	c.Fault(kfake.Fault{Keys: []kmsg.Key{kmsg.ListOffsets}, Err: kerr.TopicAuthorizationFailed, Count: -1})
	_, _, err := Diff(t.Context(), src, dst, Config{SourceTopic: topic})
	if err == nil || !strings.Contains(err.Error(), "TOPIC_AUTHORIZATION_FAILED") || strings.Contains(err.Error(), "asked") {
		t.Fatalf("got %v, want the authorization error at once", err)
	}
}
