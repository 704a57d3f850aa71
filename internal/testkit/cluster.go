package testkit

import (
	"strings"
	"testing"

	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"
)

// Cluster is a kfake cluster started for one test, with a client of it.
type Cluster struct {
	*kfake.Cluster
	// Client produces to the partition each record names (kgo.ManualPartitioner).
	Client *kgo.Client
	// Seeds are the brokers' addresses joined by commas, as a --*-brokers flag takes them.
	Seeds string
}

// NewCluster starts a one-broker kfake cluster (opts come after kfake.NumBrokers(1), so they
// may change it) and a client of it (Client's defaults); both are closed when the test ends.
func NewCluster(t testing.TB, opts ...kfake.Opt) *Cluster {
	t.Helper()
	c := StartCluster(t, opts...)
	return &Cluster{Cluster: c, Client: Client(t, c), Seeds: strings.Join(c.ListenAddrs(), ",")}
}

// Pair is a source and a target cluster (NewCluster's) whose cluster IDs differ,
// "kfake-source" and "kfake-target", as real clusters' do (kfake names every cluster "kfake").
type Pair struct {
	Source, Target *Cluster
}

// NewPair starts a Pair: a source of one broker and a target of targetBrokers.
func NewPair(t testing.TB, targetBrokers int) Pair {
	t.Helper()
	return Pair{Source: NewCluster(t, kfake.ClusterID("kfake-source")),
		Target: NewCluster(t, kfake.NumBrokers(targetBrokers), kfake.ClusterID("kfake-target"))}
}

// StartCluster starts a one-broker kfake cluster (opts may change that) that is closed when
// the test ends.
func StartCluster(t testing.TB, opts ...kfake.Opt) *kfake.Cluster {
	t.Helper()
	c, err := kfake.NewCluster(append([]kfake.Opt{kfake.NumBrokers(1)}, opts...)...)
	if err != nil {
		t.Fatalf("start kfake: %v", err)
	}
	t.Cleanup(c.Close)
	return c
}

// Client returns a client of c, closed when the test ends, that produces to the partition
// each record names; opts come after the defaults.
func Client(t testing.TB, c *kfake.Cluster, opts ...kgo.Opt) *kgo.Client {
	t.Helper()
	cl, err := kgo.NewClient(append([]kgo.Opt{kgo.SeedBrokers(c.ListenAddrs()...), kgo.RecordPartitioner(kgo.ManualPartitioner())}, opts...)...)
	if err != nil {
		t.Fatalf("kgo client: %v", err)
	}
	t.Cleanup(cl.Close)
	return cl
}
