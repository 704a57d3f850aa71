// Package clustermeta reads what the tools need to know of a cluster before they read its
// logs: the cluster's ID and the partitions of a topic. It is the one home of those lookups
// for kverify's commands, package verify and package digest; it imports no package of
// kmigrate.
package clustermeta

import (
	"context"
	"fmt"
	"slices"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
)

// ID returns the cluster ID the brokers of cl report (Metadata v2 on: Kafka 0.10.1 and
// later; empty from older brokers). name names the cluster in the error ("source", an alias).
func ID(ctx context.Context, cl *kgo.Client, name string) (string, error) {
	m, err := kadm.NewClient(cl).BrokerMetadata(ctx)
	if err != nil {
		return "", fmt.Errorf("%s cluster: read its cluster ID: %w", name, err)
	}
	return m.Cluster, nil
}

// TopicPartitions lists topic: its partition numbers, sorted, and its metadata (the leaders).
// err is the listing's own error (the cluster did not answer). A topic the cluster answered
// with an error has no partitions and td.Err set; a topic it does not have has td.Err
// kerr.UnknownTopicOrPartition.
func TopicPartitions(ctx context.Context, adm *kadm.Client, topic string) (parts []int32, td kadm.TopicDetail, err error) {
	tds, err := adm.ListTopics(ctx, topic)
	if err != nil {
		return nil, td, err
	}
	td, ok := tds[topic]
	if !ok {
		td = kadm.TopicDetail{Topic: topic, Err: kerr.UnknownTopicOrPartition}
	}
	if td.Err != nil {
		return nil, td, nil
	}
	return SortedPartitions(td), td, nil
}

// SortedPartitions are the partition numbers of td, sorted.
func SortedPartitions(td kadm.TopicDetail) []int32 {
	ps := td.Partitions.Numbers()
	slices.Sort(ps)
	return ps
}
