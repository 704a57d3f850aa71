package mm2

import (
	"fmt"
	"testing"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// streamsTopology takes a streams group's topics from its subtopologies as Kafka 4.3.1 answers
// StreamsGroupDescribe: a repartition topic is a source topic of the subtopology that reads it
// and a sink of the one that writes it, and is never an input.
func TestStreamsTopology(t *testing.T) {
	t.Parallel()
	info := func(topic string) kmsg.TopicInfo { return kmsg.TopicInfo{Topic: topic, NumPartitions: 3} }
	sub := func(src, sinks []string, changelogs, repartition []kmsg.TopicInfo) kmsg.StreamsGroupDescribeResponseGroupTopologySubtopology {
		return kmsg.StreamsGroupDescribeResponseGroupTopologySubtopology{SourceTopics: src, RepartitionSinkTopics: sinks, StateChangelogTopics: changelogs, RepartitionSourceTopics: repartition}
	}
	tests := []struct {
		name string
		in   *kmsg.StreamsGroupDescribeResponseGroupTopology
		want string
	}{
		{name: "no topology", in: nil, want: "<nil>"},
		{name: "not initialized", in: &kmsg.StreamsGroupDescribeResponseGroupTopology{Epoch: -1}, want: "<nil>"},
		{
			// The word count of the integration tests, as the broker described it.
			name: "word count",
			in: &kmsg.StreamsGroupDescribeResponseGroupTopology{Subtopologies: []kmsg.StreamsGroupDescribeResponseGroupTopologySubtopology{
				sub([]string{"lines"}, []string{"wc-counts-repartition"}, nil, nil),
				sub(nil, nil, []kmsg.TopicInfo{info("wc-counts-changelog")}, []kmsg.TopicInfo{info("wc-counts-repartition")}),
			}},
			want: "&{Epoch:0 Inputs:[lines] Repartition:[wc-counts-repartition] Changelogs:[wc-counts-changelog]}",
		},
		{
			// A join of two co-partitioned inputs after a repartition of each, two stores,
			// and a source topic that a repartition source repeats.
			name: "join",
			in: &kmsg.StreamsGroupDescribeResponseGroupTopology{Epoch: 2, Subtopologies: []kmsg.StreamsGroupDescribeResponseGroupTopologySubtopology{
				sub([]string{"orders"}, []string{"j-left-repartition"}, nil, nil),
				sub([]string{"users"}, []string{"j-right-repartition"}, nil, nil),
				sub([]string{"j-left-repartition", "j-right-repartition"}, nil,
					[]kmsg.TopicInfo{info("j-right-store-changelog"), info("j-left-store-changelog")},
					[]kmsg.TopicInfo{info("j-left-repartition"), info("j-right-repartition")}),
			}},
			want: "&{Epoch:2 Inputs:[orders users] Repartition:[j-left-repartition j-right-repartition] Changelogs:[j-left-store-changelog j-right-store-changelog]}",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			got := streamsTopology(tt.in)
			s := "<nil>"
			if got != nil {
				s = fmt.Sprintf("%+v", got)
			}
			if s != tt.want {
				t.Errorf("got %s, want %s", s, tt.want)
			}
		})
	}
}
