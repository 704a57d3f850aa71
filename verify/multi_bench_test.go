package verify

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/kmigrate/kmigrate/internal/testkit"
	"github.com/kmigrate/kmigrate/mm2"
)

// BenchmarkDiffTopicsStartUp measures what a topic costs DiffTopics beyond its partitions:
// 100 topics of one partition against its peer in the same run, one topic of 100 partitions,
// the same 200 records in each partition, both through DiffTopics with the same pool. The
// metric topics/partitions is the ratio of their times: near 1, a topic costs no more than a
// partition (its start-up requests are shared with the others). topics/diff-per-topic
// compares the same 100 topics with a Diff per topic, one after the other.
//
//	go test ./verify -run '^$' -bench DiffTopicsStartUp -benchtime 5x
func BenchmarkDiffTopicsStartUp(b *testing.B) {
	ctx := context.Background()
	src, dst := benchFlowCluster(ctx, b), benchFlowCluster(ctx, b)
	flow := mm2.NewFlow("source", "target", mm2.IdentityPolicy{})
	run := func(cfg MultiConfig) time.Duration {
		start := time.Now()
		mr, err := DiffTopics(ctx, src, dst, cfg)
		if err != nil || !mr.Identical || mr.Total.Matched != 100*200 {
			b.Fatalf("DiffTopics: %v, %+v", err, mr)
		}
		return time.Since(start)
	}
	loop := func() time.Duration {
		start := time.Now()
		for i := 0; i < 100; i++ {
			if _, _, err := Diff(ctx, src, dst, Config{SourceTopic: fmt.Sprintf("many-%03d", i), Parallel: 4}); err != nil {
				b.Fatal(err)
			}
		}
		return time.Since(start)
	}
	var topics, partitions, perTopic time.Duration
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		topics += run(MultiConfig{Flow: flow, TopicsRegex: "many-.*", Base: Config{Parallel: 4}})
		partitions += run(MultiConfig{Flow: flow, Names: []string{"wide"}, Base: Config{Parallel: 4}})
		perTopic += loop()
	}
	b.ReportMetric(float64(topics)/float64(partitions), "topics/partitions")
	b.ReportMetric(float64(topics)/float64(perTopic), "topics/diff-per-topic")
	b.ReportMetric(float64(topics.Microseconds())/1000/float64(b.N), "ms/100-topics")
	b.ReportMetric(float64(partitions.Microseconds())/1000/float64(b.N), "ms/100-partitions")
}

// benchFlowCluster is a kfake cluster holding "wide" (100 partitions) and many-000..many-099
// (one partition each), 200 records in every partition.
func benchFlowCluster(ctx context.Context, b *testing.B) *kgo.Client {
	b.Helper()
	cl := testkit.Client(b, testkit.StartCluster(b), kgo.ProducerLinger(0))
	adm := kadm.NewClient(cl)
	fill := func(topic string, parts int32) {
		if _, err := adm.CreateTopic(ctx, parts, 1, nil, topic); err != nil {
			b.Fatal(err)
		}
		var batch []*kgo.Record
		for p := int32(0); p < parts; p++ {
			for _, rec := range span(0, 199) {
				c := *rec
				c.Topic, c.Partition = topic, p
				batch = append(batch, &c)
			}
		}
		if err := cl.ProduceSync(ctx, batch...).FirstErr(); err != nil {
			b.Fatal(err)
		}
	}
	fill("wide", 100)
	for i := 0; i < 100; i++ {
		fill(fmt.Sprintf("many-%03d", i), 1)
	}
	return cl
}
