// Package testkit is the test support kmigrate's tests share: kfake clusters and their
// clients (NewCluster, StartCluster, Client; a source and a target, NewPair), a context bound
// to the test (Context), topics and records (TopicName, CreateTopic, Produce, ProduceTxn,
// WriteTxn, OpenTxn; the synthetic partition Record, Records, With), group offsets (Commit,
// Committed) and a member joining a group (JoinGroup), waiting for a condition (WaitFor), a
// process's output (SyncBuffer), a free address (FreeAddr), building the commands (Commands,
// BuildCommands), the model of MirrorMaker 2's offset translation (MM2TranslateNewest,
// MM2TranslateHighest), and broker behaviour staged on demand that a real cluster shows only
// by chance (UnknownTopicCommits). It imports no kmigrate package, so the tests of any package
// may use it; it is imported by tests only.
package testkit

import (
	"sync/atomic"

	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// UnknownTopicCommits makes the group coordinator of c answer its next n OffsetCommit requests
// with UNKNOWN_TOPIC_OR_PARTITION for every partition, as a coordinator does whose metadata
// has not caught up with a topic just created; the requests after them are handled as usual.
// The counter says how many were answered so.
func UnknownTopicCommits(c *kfake.Cluster, n int32) *atomic.Int32 {
	var answered atomic.Int32
	c.ControlKey(int16(kmsg.OffsetCommit), func(kreq kmsg.Request) (kmsg.Response, error, bool) {
		if answered.Load() >= n {
			c.DropControl()
			return nil, nil, false
		}
		c.KeepControl()
		answered.Add(1)
		req := kreq.(*kmsg.OffsetCommitRequest)
		resp := req.ResponseKind().(*kmsg.OffsetCommitResponse)
		for _, rt := range req.Topics {
			t := kmsg.NewOffsetCommitResponseTopic()
			t.Topic, t.TopicID = rt.Topic, rt.TopicID
			for _, rp := range rt.Partitions {
				p := kmsg.NewOffsetCommitResponseTopicPartition()
				p.Partition, p.ErrorCode = rp.Partition, 3 // UNKNOWN_TOPIC_OR_PARTITION
				t.Partitions = append(t.Partitions, p)
			}
			resp.Topics = append(resp.Topics, t)
		}
		return resp, nil, true
	})
	return &answered
}
