package integration

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/kmigrate/kmigrate/integration/cluster"
)

// codec names by the record batch attribute value (0-4).
var codecNames = []string{"none", "gzip", "snappy", "lz4", "zstd"}

// roundTripRecords are the shapes a byte-exact tool must keep apart: null against empty key,
// value and header value, repeated and ordered header keys, binary bytes, explicit
// timestamps, and enough ordinary records that a compressed batch is a real one.
func roundTripRecords(topic string) []*kgo.Record {
	base := time.Date(2026, 1, 2, 3, 4, 5, 6_000_000, time.UTC).UnixMilli()
	recs := []*kgo.Record{
		{Key: nil, Value: []byte("null key")},
		{Key: []byte{}, Value: []byte("empty key")},
		{Key: []byte("empty value"), Value: []byte{}},
		{Key: []byte("null value (tombstone)"), Value: nil},
		{Key: []byte("headers"), Value: []byte("v"), Headers: []kgo.RecordHeader{
			{Key: "b", Value: []byte("2")},
			{Key: "a", Value: []byte("1")},
			{Key: "a", Value: []byte("1 again")},
			{Key: "empty", Value: []byte{}},
			{Key: "null", Value: nil},
			{Key: "", Value: []byte("empty key")},
		}},
		{Key: []byte{0x00, 0xff, 0x80}, Value: []byte{0x00, 0x00, 0xfe, 0xff, 0x7f}},
	}
	for i := range 200 {
		recs = append(recs, &kgo.Record{
			Key:   fmt.Appendf(nil, "k%03d", i%10),
			Value: []byte(strings.Repeat(fmt.Sprintf("value %d ", i), 8)),
		})
	}
	for i, r := range recs {
		r.Topic = topic
		r.Timestamp = time.UnixMilli(base + int64(i)*1000)
	}
	return recs
}

// codecsOf lists the compression codecs a version's brokers accept: all five of Kafka's from
// 2.1.0 on (zstd came with 2.1.0), so the same for 2.3.0, 3.7.1 and 4.3.1.
func codecsOf(string) []kgo.CompressionCodec {
	return []kgo.CompressionCodec{kgo.NoCompression(), kgo.GzipCompression(), kgo.SnappyCompression(), kgo.Lz4Compression(), kgo.ZstdCompression()}
}

// TestRoundTrip produces records of every shape with every codec the broker supports and
// checks that they come back byte-identical (key, value, headers, timestamp) in batches of
// that codec, on Kafka 2.3.0 and 3.7.1, or the versions of the pair $KMIGRATE_PAIR names
// (pair_test.go).
func TestRoundTrip(t *testing.T) {
	bedParallel(t)
	srcV, dstV := bedPair(t)
	src, dst := bedSharedPair(t)
	clusters := []cluster.Cluster{src, dst}
	if srcV == dstV {
		clusters = clusters[:1]
	}
	for _, c := range clusters {
		t.Run(c.Version(), func(t *testing.T) {
			for i, codec := range codecsOf(c.Version()) {
				t.Run(codecNames[i], func(t *testing.T) {
					roundTripCodec(t, c, codec, int8(i))
				})
			}
		})
	}
}

func roundTripCodec(t *testing.T, c cluster.Cluster, codec kgo.CompressionCodec, attr int8) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	topic := bedUnique("roundtrip-" + codecNames[attr])
	bedCreateTopic(t, c, topic, 1, nil)
	want := roundTripRecords(topic)
	prod := bedClient(t, c.Bootstrap(), kgo.ProducerBatchCompression(codec), kgo.ProducerLinger(50*time.Millisecond))
	if err := prod.ProduceSync(ctx, want...).FirstErr(); err != nil {
		t.Fatalf("produce to %s on %s with %s: %v", topic, c.Name(), codecNames[attr], err)
	}

	seen := &codecHook{}
	cl := bedClient(t, c.Bootstrap(), kgo.WithHooks(seen),
		kgo.ConsumePartitions(map[string]map[int32]kgo.Offset{topic: {0: kgo.NewOffset().AtStart()}}))
	var got []*kgo.Record
	for len(got) < len(want) {
		fs := cl.PollFetches(ctx)
		if ctx.Err() != nil {
			t.Fatalf("consume %s on %s: got %d of %d records when the deadline came", topic, c.Name(), len(got), len(want))
		}
		fs.EachError(func(tp string, p int32, err error) { t.Errorf("fetch %s/%d: %v", tp, p, err) })
		got = append(got, fs.Records()...)
	}
	if len(got) != len(want) {
		t.Fatalf("got %d records, want %d", len(got), len(want))
	}
	for i := range want {
		if diff := recordDiff(got[i], want[i]); diff != "" {
			t.Errorf("record %d (offset %d): %s", i, got[i].Offset, diff)
		}
	}
	if codecs := seen.codecs(); !slices.Equal(codecs, []int8{attr}) {
		t.Errorf("batch codecs read back: got %v, want only %d (%s)", codecs, attr, codecNames[attr])
	}
}

// recordDiff says how got differs from want in the fields a copy must keep, "" if in none.
// Null and empty are different.
func recordDiff(got, want *kgo.Record) string {
	var d []string
	if !sameBytes(got.Key, want.Key) {
		d = append(d, fmt.Sprintf("key: got %s, want %s", show(got.Key), show(want.Key)))
	}
	if !sameBytes(got.Value, want.Value) {
		d = append(d, fmt.Sprintf("value: got %s, want %s", show(got.Value), show(want.Value)))
	}
	if len(got.Headers) != len(want.Headers) {
		d = append(d, fmt.Sprintf("headers: got %d, want %d", len(got.Headers), len(want.Headers)))
	} else {
		for i := range want.Headers {
			g, w := got.Headers[i], want.Headers[i]
			if g.Key != w.Key || !sameBytes(g.Value, w.Value) {
				d = append(d, fmt.Sprintf("header %d: got %q=%s, want %q=%s", i, g.Key, show(g.Value), w.Key, show(w.Value)))
			}
		}
	}
	if got.Timestamp.UnixMilli() != want.Timestamp.UnixMilli() {
		d = append(d, fmt.Sprintf("timestamp: got %d, want %d", got.Timestamp.UnixMilli(), want.Timestamp.UnixMilli()))
	}
	return strings.Join(d, "; ")
}

func sameBytes(a, b []byte) bool {
	return (a == nil) == (b == nil) && string(a) == string(b)
}

func show(b []byte) string {
	if b == nil {
		return "null"
	}
	return fmt.Sprintf("%q", b)
}

// codecHook records the compression codec of every batch the consumer reads.
type codecHook struct {
	mu  sync.Mutex
	set []int8
}

func (h *codecHook) OnFetchBatchRead(_ kgo.BrokerMetadata, _ string, _ int32, m kgo.FetchBatchMetrics) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if !slices.Contains(h.set, int8(m.CompressionType)) {
		h.set = append(h.set, int8(m.CompressionType))
	}
}

func (h *codecHook) codecs() []int8 {
	h.mu.Lock()
	defer h.mu.Unlock()
	return slices.Clone(h.set)
}

// TestRecordDiff checks that the round trip's comparison tells null from empty and sees
// every field, so that TestRoundTrip can fail.
func TestRecordDiff(t *testing.T) {
	ts := time.UnixMilli(1000)
	base := func() *kgo.Record {
		return &kgo.Record{Key: []byte("k"), Value: []byte("v"), Timestamp: ts,
			Headers: []kgo.RecordHeader{{Key: "h", Value: []byte("x")}}}
	}
	tests := []struct {
		name   string
		mutate func(*kgo.Record)
		want   string
	}{
		{name: "same", mutate: func(*kgo.Record) {}, want: ""},
		{name: "null key", mutate: func(r *kgo.Record) { r.Key = nil }, want: `key: got null, want "k"`},
		{name: "empty value", mutate: func(r *kgo.Record) { r.Value = []byte{} }, want: `value: got "", want "v"`},
		{name: "null header value", mutate: func(r *kgo.Record) { r.Headers[0].Value = nil }, want: `header 0: got "h"=null, want "h"="x"`},
		{name: "extra header", mutate: func(r *kgo.Record) { r.Headers = append(r.Headers, kgo.RecordHeader{Key: "y"}) }, want: "headers: got 2, want 1"},
		{name: "timestamp", mutate: func(r *kgo.Record) { r.Timestamp = ts.Add(time.Millisecond) }, want: "timestamp: got 1001, want 1000"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := base()
			tt.mutate(got)
			if d := recordDiff(got, base()); d != tt.want {
				t.Errorf("got diff %q, want %q", d, tt.want)
			}
		})
	}
}
