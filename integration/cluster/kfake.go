package cluster

import (
	"context"
	"fmt"
	"sync"

	"github.com/twmb/franz-go/pkg/kfake"
)

// kfakeCluster is franz-go's in-process fake: instant, no processes, so it cannot stop, kill
// or restart a single broker.
type kfakeCluster struct {
	spec Spec
	fake *kfake.Cluster
	once sync.Once
}

func startKfake(s Spec) (Cluster, error) {
	fake, err := kfake.NewCluster(
		kfake.NumBrokers(s.Brokers),
		kfake.AllowAutoTopicCreation(), // like the jvm brokers' auto.create.topics.enable=true
		kfake.DefaultNumPartitions(1),  // like their num.partitions=1
	)
	if err != nil {
		return nil, fmt.Errorf("start kfake cluster %s: %w", s.Name, err)
	}
	c := &kfakeCluster{spec: s, fake: fake}
	track(c)
	return c, nil
}

// AsKfake returns the kfake.Cluster behind c when c runs on the kfake provider, for tests
// that inject faults with its Control functions.
func AsKfake(c Cluster) (*kfake.Cluster, bool) {
	k, ok := c.(*kfakeCluster)
	if !ok {
		return nil, false
	}
	return k.fake, true
}

func (c *kfakeCluster) Name() string        { return c.spec.Name }
func (c *kfakeCluster) Version() string     { return Kfake }
func (c *kfakeCluster) Bootstrap() []string { return c.fake.ListenAddrs() }
func (c *kfakeCluster) Brokers() int        { return c.spec.Brokers }

func (c *kfakeCluster) unsupported(op string, i int) error {
	if err := checkIndex(c, i); err != nil {
		return err
	}
	return fmt.Errorf("cluster %s: %s broker %d: %w by kfake (use a jvm cluster: Spec{Version: %q})", c.spec.Name, op, i, ErrNotSupported, V371)
}

func (c *kfakeCluster) StopBroker(_ context.Context, i int) error {
	return c.unsupported("stop", i)
}

func (c *kfakeCluster) KillBroker(i int) error { return c.unsupported("kill", i) }

func (c *kfakeCluster) RestartBroker(_ context.Context, i int) error {
	return c.unsupported("restart", i)
}

func (c *kfakeCluster) Close() error {
	c.once.Do(func() {
		untrack(c)
		c.fake.Close()
	})
	return nil
}
