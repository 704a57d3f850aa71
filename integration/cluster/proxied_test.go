package cluster_test

import (
	"context"
	"fmt"
	"slices"
	"strconv"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/kmigrate/kmigrate/integration/cluster"
)

// TestJVMProxied starts three brokers of each version with Spec.Proxied: clients learn the
// proxies' addresses from metadata, a client on the direct listener learns the direct ones; a
// blackhole of every proxy cuts the clients off while produce with acks=all on the direct
// listener still works (replication does not go through the proxies); after it, and after a
// reset of every proxy's connections, the same proxied client produces again.
func TestJVMProxied(t *testing.T) {
	for _, v := range []string{cluster.V371, cluster.V230} {
		t.Run(v, func(t *testing.T) { proxiedBed(t, v) })
	}
}

func proxiedBed(t *testing.T, version string) {
	c := cluster.StartT(t, cluster.Spec{Version: version, Brokers: 3, Proxied: true})
	proxies, direct, ok := cluster.ProxiesOf(c)
	if !ok || len(proxies) != 3 || len(direct) != 3 {
		t.Fatalf("ProxiesOf: %d proxies, %d direct addresses, ok %v; want 3, 3, true", len(proxies), len(direct), ok)
	}
	for i, p := range proxies {
		if c.Bootstrap()[i] != p.Addr() || direct[i] == p.Addr() {
			t.Fatalf("broker %d: bootstrap %s, proxy %s, direct %s: want bootstrap = proxy != direct", i, c.Bootstrap()[i], p.Addr(), direct[i])
		}
	}
	if got := metadataHosts(t, c.Bootstrap()); !slices.Equal(got, sorted(c.Bootstrap())) {
		t.Errorf("metadata through the proxies lists %v, want the proxies %v", got, sorted(c.Bootstrap()))
	}
	if got := metadataHosts(t, direct); !slices.Equal(got, sorted(direct)) {
		t.Errorf("metadata on the direct listener lists %v, want %v", got, sorted(direct))
	}
	topic := "proxied-" + strconv.FormatInt(time.Now().UnixNano(), 36)
	createTopic(t, c, topic, 3, 3)
	proxied := client(t, c.Bootstrap(), kgo.DefaultProduceTopic(topic), kgo.RequiredAcks(kgo.AllISRAcks()))
	produceWith(t, proxied, 0, 30, time.Minute)

	for _, p := range proxies {
		if err := p.Blackhole(2 * time.Minute); err != nil {
			t.Fatal(err)
		}
	}
	// Replication between brokers is direct: acks=all from the direct listener succeeds.
	produceTo(t, direct, topic, 30, 30)
	// A record sent through the blackholed proxies gets no answer (kgo waits for it, as for a
	// partitioned network) until they pass again; then it is acknowledged.
	cut := make(chan error, 1)
	go func() {
		cut <- proxied.ProduceSync(context.Background(), &kgo.Record{Key: []byte("60"), Value: []byte("value-60")}).FirstErr()
	}()
	select {
	case err := <-cut:
		t.Fatalf("produce through blackholed proxies answered within 5 s (%v), want no answer", err)
	case <-time.After(5 * time.Second): // the fault's length is the point
	}
	for _, p := range proxies {
		p.Pass()
	}
	select {
	case err := <-cut:
		if err != nil {
			t.Fatalf("the record held by the blackhole, after it: %v", err)
		}
	case <-time.After(time.Minute):
		t.Fatalf("the record held by the blackhole was not acknowledged within a minute after it")
	}
	produceWith(t, proxied, 61, 29, time.Minute)
	for _, p := range proxies {
		if err := p.Reset(0); err != nil {
			t.Fatal(err)
		}
	}
	produceWith(t, proxied, 90, 30, time.Minute)
	if got := consume(t, direct, topic, 120); got != 120 {
		t.Errorf("topic %s: %d records on the direct listener, want 120", topic, got)
	}
}

func produceWith(t *testing.T, cl *kgo.Client, from, n int, d time.Duration) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), d)
	defer cancel()
	var recs []*kgo.Record
	for i := from; i < from+n; i++ {
		recs = append(recs, &kgo.Record{Key: []byte(strconv.Itoa(i)), Value: []byte("value-" + strconv.Itoa(i))})
	}
	if err := cl.ProduceSync(ctx, recs...).FirstErr(); err != nil {
		t.Fatalf("produce %d records: %v", n, err)
	}
}

// metadataHosts are the broker addresses a metadata request on seeds answers, sorted.
func metadataHosts(t *testing.T, seeds []string) []string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	req := kmsg.NewPtrMetadataRequest()
	req.Topics = []kmsg.MetadataRequestTopic{}
	resp, err := req.RequestWith(ctx, client(t, seeds))
	if err != nil {
		t.Fatalf("metadata on %v: %v", seeds, err)
	}
	var out []string
	for _, b := range resp.Brokers {
		out = append(out, fmt.Sprintf("%s:%d", b.Host, b.Port))
	}
	return sorted(out)
}

func sorted(s []string) []string {
	s = slices.Clone(s)
	slices.Sort(s)
	return s
}
