package main

import (
	"context"
	"fmt"
	"math/rand/v2"
	"strings"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"
)

// Flow is the transcript of "A whole flow": four topics, alpha and bravo copied exactly,
// charlie with records 10..12 of partition 1 lost on the target, delta never mirrored (the
// target has no such topic); the source also holds heartbeats and an MM2 offset-syncs topic,
// which --all leaves out.
func Flow(ctx context.Context, kverify string) (*Transcript, error) {
	b, err := newBed()
	if err != nil {
		return nil, err
	}
	defer b.close()
	if err := b.mirror(ctx, "alpha", 3, flowRecords("alpha", 20, nil)); err != nil {
		return nil, err
	}
	if err := b.mirror(ctx, "bravo", 1, flowRecords("bravo", 15, nil)); err != nil {
		return nil, err
	}
	if err := b.mirror(ctx, "charlie", 2, flowRecords("charlie", 30, func(p int32, i int) bool { return p == 1 && i >= 10 && i < 13 })); err != nil {
		return nil, err
	}
	for _, topic := range []string{"delta", "heartbeats", "mm2-offset-syncs.target.internal"} {
		parts := int32(2)
		if topic != "delta" {
			parts = 1
		}
		if err := createTopic(ctx, b.sc, topic, parts); err != nil {
			return nil, err
		}
		for p := range parts {
			recs := []*kgo.Record{flowRecord(topic, p, 0), flowRecord(topic, p, 1)}
			if topic == "delta" {
				recs = nil
				for i := range 5 {
					recs = append(recs, flowRecord(topic, p, i))
				}
			}
			if err := produce(ctx, b.sc, topic, p, recs); err != nil {
				return nil, err
			}
		}
	}

	s, err := newSession("flow", kverify, names(b.src, b.dst))
	if err != nil {
		return nil, err
	}
	defer s.close()
	if _, err := s.run(ctx, Trim{Head: 24, Tail: 1}, "diff", "--source-brokers", addrs(b.src), "--target-brokers", addrs(b.dst), "--all"); err != nil {
		return nil, err
	}
	return s.t, nil
}

// flowRecords are n records a partition of topic for bed.mirror: every one on the source, on
// the target those lost does not name (nil: none lost).
func flowRecords(topic string, n int, lost func(p int32, i int) bool) func(p int32) (src, dst []*kgo.Record) {
	return func(p int32) (all, kept []*kgo.Record) {
		for i := range n {
			r := flowRecord(topic, p, i)
			all = append(all, r)
			if lost == nil || !lost(p, i) {
				kept = append(kept, r)
			}
		}
		return all, kept
	}
}

func flowRecord(topic string, p int32, i int) *kgo.Record {
	return &kgo.Record{
		Key:       fmt.Appendf(nil, "%s-%d-%d", topic, p, i),
		Value:     fmt.Appendf(nil, "value %d of %s partition %d", i, topic, p),
		Headers:   []kgo.RecordHeader{{Key: "app", Value: []byte("orders-service")}},
		Timestamp: time.UnixMilli(1_764_633_600_000 + int64(i)),
	}
}

// Orders is the shape of "Across sites": topic orders, 2 partitions of 20,000 records of about
// 200 bytes; partition 0 of the copy lost source records 5000..5002, replayed 8990..9000 after
// 9000 (11 records) and holds 12000 re-encoded; partition 1 is exact.
const (
	ordersTopic   = "orders"
	ordersRecords = 20000
)

// AcrossSites is the transcript of "Across sites: digests and evidence": each side digested
// on its own, the digests compared, the differing regions drilled, the evidence written by
// kverify diff and checked.
func AcrossSites(ctx context.Context, kverify string) (*Transcript, error) {
	b, err := newBed()
	if err != nil {
		return nil, err
	}
	defer b.close()
	err = b.mirror(ctx, ordersTopic, 2, func(p int32) (src, dst []*kgo.Record) {
		recs := orderRecords(p)
		if p == 0 {
			return recs, faultyCopy(recs)
		}
		return recs, recs
	})
	if err != nil {
		return nil, err
	}

	s, err := newSession("across-sites", kverify, names(b.src, b.dst))
	if err != nil {
		return nil, err
	}
	defer s.close()
	srcFlag := []string{"--source-brokers", addrs(b.src)}
	dstFlag := []string{"--target-brokers", addrs(b.dst)}
	both := append(append([]string(nil), srcFlag...), dstFlag...)
	for _, c := range []struct {
		trim Trim
		args []string
	}{
		{Trim{}, join([]string{"digest", "--side", "source"}, srcFlag, []string{"--topic", ordersTopic, "--out", "orders.source.digest", "--chunk-records", "512"})},
		{Trim{}, join([]string{"digest", "--side", "target"}, dstFlag, []string{"--topic", ordersTopic, "--out", "orders.target.digest", "--chunk-records", "512"})},
		{Trim{}, []string{"compare", "orders.source.digest", "orders.target.digest"}},
		{Trim{}, join([]string{"compare", "orders.source.digest", "orders.target.digest", "--drill"}, both)},
		{Trim{}, join([]string{"diff"}, both, []string{"--topic", ordersTopic, "--format", "json", "--out", "diff.json", "--evidence", "orders.evidence.json"})},
		{Trim{Head: 4}, join([]string{"check-evidence", "orders.evidence.json"}, both, []string{"--report", "diff.json"})},
	} {
		if _, err := s.run(ctx, c.trim, c.args...); err != nil {
			return nil, err
		}
	}
	if err := s.keep("diff.json"); err != nil {
		return nil, err
	}
	return s.t, nil
}

// orderRecords are partition p of orders: a key, a value of about 170 bytes of words and one
// header each, the same every run.
func orderRecords(p int32) []*kgo.Record {
	rng := rand.New(rand.NewPCG(uint64(p)+1, 2026))
	words := []string{"order", "customer", "shipped", "pending", "invoice", "warehouse", "express", "refund", "berlin", "lisbon", "oslo", "item", "quantity", "paid"}
	out := make([]*kgo.Record, ordersRecords)
	for i := range out {
		var v strings.Builder
		fmt.Fprintf(&v, `{"id":%d,"partition":%d,"note":"`, i, p)
		for v.Len() < 160 {
			v.WriteString(words[rng.IntN(len(words))])
			v.WriteByte(' ')
		}
		v.WriteString(`"}`)
		out[i] = &kgo.Record{
			Key:       fmt.Appendf(nil, "order-%d-%06d", p, i),
			Value:     []byte(v.String()),
			Headers:   []kgo.RecordHeader{{Key: "type", Value: []byte("order")}},
			Timestamp: time.UnixMilli(1_764_633_600_000 + int64(i)),
		}
	}
	return out
}

// faultyCopy is p0 with source 5000..5002 lost, 8990..9000 replayed after 9000 and 12000
// re-encoded (same key, another value).
func faultyCopy(p0 []*kgo.Record) []*kgo.Record {
	altered := *p0[12000]
	altered.Value = []byte(strings.Replace(string(altered.Value), `"note":"`, `"note": "`, 1))
	return join(p0[:5000], p0[5003:9001], p0[8990:9001], p0[9001:12000], []*kgo.Record{&altered}, p0[12001:])
}

func join[T any](parts ...[]T) []T {
	var out []T
	for _, p := range parts {
		out = append(out, p...)
	}
	return out
}

// bed is the two kfake clusters of a transcript, source and target, with a client on each
// that writes records to the partition they name.
type bed struct {
	src, dst *kfake.Cluster
	sc, dc   *kgo.Client
}

// newBed starts a bed; close stops it.
func newBed() (*bed, error) {
	src, dst, err := clusters()
	if err != nil {
		return nil, err
	}
	sc, dc, err := clients(src, dst)
	if err != nil {
		dst.Close()
		src.Close()
		return nil, err
	}
	return &bed{src: src, dst: dst, sc: sc, dc: dc}, nil
}

func (b *bed) close() {
	b.dc.Close()
	b.sc.Close()
	b.dst.Close()
	b.src.Close()
}

// mirror creates topic with parts partitions on both clusters and writes, partition by
// partition, the records recs gives for the source to the source and those for the target to
// the target.
func (b *bed) mirror(ctx context.Context, topic string, parts int32, recs func(p int32) (src, dst []*kgo.Record)) error {
	if err := createTopic(ctx, b.sc, topic, parts); err != nil {
		return err
	}
	if err := createTopic(ctx, b.dc, topic, parts); err != nil {
		return err
	}
	for p := range parts {
		src, dst := recs(p)
		if err := produce(ctx, b.sc, topic, p, src); err != nil {
			return err
		}
		if err := produce(ctx, b.dc, topic, p, dst); err != nil {
			return err
		}
	}
	return nil
}

func clients(src, dst *kfake.Cluster) (sc, dc *kgo.Client, err error) {
	sc, err = kgo.NewClient(kgo.SeedBrokers(src.ListenAddrs()...), kgo.RecordPartitioner(kgo.ManualPartitioner()), kgo.ProducerBatchMaxBytes(1<<20))
	if err != nil {
		return nil, nil, err
	}
	dc, err = kgo.NewClient(kgo.SeedBrokers(dst.ListenAddrs()...), kgo.RecordPartitioner(kgo.ManualPartitioner()), kgo.ProducerBatchMaxBytes(1<<20))
	if err != nil {
		sc.Close()
		return nil, nil, err
	}
	return sc, dc, nil
}

func createTopic(ctx context.Context, cl *kgo.Client, topic string, partitions int32) error {
	resp, err := kadm.NewClient(cl).CreateTopic(ctx, partitions, 1, nil, topic)
	if err == nil {
		err = resp.Err
	}
	if err != nil {
		return fmt.Errorf("create topic %s: %w", topic, err)
	}
	return nil
}

// produce writes copies of recs to partition p of topic, in order.
func produce(ctx context.Context, cl *kgo.Client, topic string, p int32, recs []*kgo.Record) error {
	batch := make([]*kgo.Record, len(recs))
	for i, r := range recs {
		c := *r
		c.Topic, c.Partition = topic, p
		batch[i] = &c
	}
	if err := cl.ProduceSync(ctx, batch...).FirstErr(); err != nil {
		return fmt.Errorf("produce to %s/%d: %w", topic, p, err)
	}
	return nil
}
