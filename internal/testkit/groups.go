package testkit

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
)

// JoinGroup starts a consumer of topic in group on the cluster of cl (the classic protocol, no
// commits) and returns once the group is Stable with it, within 20 s or the test fails. stop
// leaves the group, which is then Empty; the end of the test stops it too.
func JoinGroup(t testing.TB, cl *kgo.Client, group, topic string) (stop func()) {
	t.Helper()
	cons, err := kgo.NewClient(kgo.SeedBrokers(cl.OptValue(kgo.SeedBrokers).([]string)...), kgo.ConsumerGroup(group),
		kgo.ConsumeTopics(topic), kgo.DisableAutoCommit(), kgo.SessionTimeout(30*time.Second))
	if err != nil {
		t.Fatalf("consumer of group %s: %v", group, err)
	}
	var once sync.Once
	stop = func() { once.Do(cons.Close) }
	t.Cleanup(stop)
	ctx := Context(t, 20*time.Second)
	adm := kadm.NewClient(cl)
	for {
		pctx, cancel := context.WithTimeout(ctx, 200*time.Millisecond)
		cons.PollRecords(pctx, 1)
		cancel()
		d, err := adm.DescribeGroups(ctx, group)
		if err == nil && d[group].State == "Stable" {
			return stop
		}
		if ctx.Err() != nil {
			t.Fatalf("group %s never became Stable: %q %v", group, d[group].State, err)
		}
	}
}
