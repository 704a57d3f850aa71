package mirror_test

import (
	"bytes"
	"context"
	"fmt"
	"strconv"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/kmigrate/kmigrate/internal/testkit"
	"github.com/kmigrate/kmigrate/logread"
)

// TestMirrorRecordTooLarge puts one record larger than the target's limit at source offset 10
// of partition 0, in the middle of a batch. The partition must stop at exactly that offset
// with an ERROR naming it, the record's size, the limit and the setting to change, repeated
// at each re-check, while Run keeps running and partition 1 goes on. When the limit is a
// topic config, raising it lets the partition resume without a restart: every record then
// arrives exactly once, in order.
func TestMirrorRecordTooLarge(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name        string
		targetLimit string // the target topic's max.message.bytes ("" = broker default)
		batchMax    int32  // producer batch.size (0 = default)
		big         func(*kgo.Record)
		want        []string // in the ERROR line
		raise       bool     // raising max.message.bytes resolves it
	}{
		{
			name: "value over the target topic's max.message.bytes", targetLimit: "2000",
			big:  func(r *kgo.Record) { r.Value = bytes.Repeat([]byte("v"), 5000) },
			want: []string{"offset=10", "limit=2000", "max.message.bytes", "cluster=B"}, raise: true,
		},
		{
			name: "headers over the target topic's max.message.bytes", targetLimit: "2000",
			big: func(r *kgo.Record) {
				for i := 0; i < 30; i++ {
					r.Headers = append(r.Headers, kgo.RecordHeader{Key: fmt.Sprintf("h%d", i), Value: bytes.Repeat([]byte("h"), 100)})
				}
			},
			want: []string{"offset=10", "limit=2000", "max.message.bytes"}, raise: true,
		},
		{
			name: "over the producer's batch.size", batchMax: 1500,
			big:  func(r *kgo.Record) { r.Value = bytes.Repeat([]byte("v"), 3000) },
			want: []string{"offset=10", "limit=1500", "batch.size"},
		},
	}
	for i, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			p := newPair(t)
			topic := fmt.Sprintf("orders-too-large-%d", i)
			testkit.CreateTopic(t, testkit.Client(t, p.src), topic, 2, nil)
			var cfgs map[string]*string
			if tt.targetLimit != "" {
				cfgs = map[string]*string{"max.message.bytes": &tt.targetLimit}
			}
			testkit.CreateTopic(t, testkit.Client(t, p.dst), topic, 2, cfgs)

			// One request: offsets 0..19 of partition 0 (10 is the big one), 0..19 of partition 1.
			var recs []*kgo.Record
			for part := int32(0); part < 2; part++ {
				for n := 0; n < 20; n++ {
					r := &kgo.Record{Topic: topic, Partition: part, Key: fmt.Appendf(nil, "k%d", n), Value: fmt.Appendf(nil, "v-%d-%d", part, n)}
					if part == 0 && n == 10 {
						tt.big(r)
					}
					recs = append(recs, r)
				}
			}
			prod := testkit.Client(t, p.src, kgo.ProducerLinger(50*time.Millisecond))
			if err := prod.ProduceSync(context.Background(), recs...).FirstErr(); err != nil {
				t.Fatal(err)
			}

			cfg := testConfig(topic)
			cfg.BatchMaxBytes = tt.batchMax
			cfg.Linger = 50 * time.Millisecond // the records before the big one share its batch
			l := startLogged(t, p, cfg)
			line := l.waitStopped(t, topic, 0, "record_too_large", 2)
			if missing := containsAll(line, tt.want...); missing != "" {
				t.Errorf("got %q, want it to contain %q", line, missing)
			}
			waitFor(t, "partition 1 mirrored", func() bool { return written(t, p.dst, topic, 1) == 20 })
			if got := written(t, p.dst, topic, 0); got != 10 {
				t.Fatalf("target %s/0 holds %d written records, want 10 (the records before the big one)", topic, got)
			}
			produce(t, p.src, topic, 2, 100, 5) // partition 1 goes on; partition 0 stays stopped
			waitFor(t, "partition 1 mirrored after the stop", func() bool { return written(t, p.dst, topic, 1) == 25 })
			if got := written(t, p.dst, topic, 0); got != 10 {
				t.Fatalf("target %s/0 holds %d written records, want 10", topic, got)
			}
			if !tt.raise {
				l.running(t)
				return
			}
			adm := kadm.NewClient(testkit.Client(t, p.dst))
			raised := strconv.Itoa(100_000)
			resp, err := adm.AlterTopicConfigs(context.Background(), []kadm.AlterConfig{{Op: kadm.SetConfig, Name: "max.message.bytes", Value: &raised}}, topic)
			if err == nil {
				_, err = resp.On(topic, nil)
			}
			if err != nil {
				t.Fatal(err)
			}
			waitMirrored(t, p, topic, 2)
			for part := int32(0); part < 2; part++ {
				sameRecords(t, p, topic, part)
			}
			if err := l.stop(t); err != nil {
				t.Fatalf("Run: %v", err)
			}
		})
	}
}

// TestRecordBatchSize checks RecordBatchSize against the broker's own count: a topic whose
// max.message.bytes is exactly the computed size takes the record alone, one byte less
// refuses it (kfake compares the batch bytes as Kafka does; integration has the same on real
// brokers).
func TestRecordBatchSize(t *testing.T) {
	t.Parallel()
	c := testkit.StartCluster(t)
	tests := []struct {
		name string
		rec  kgo.Record
	}{
		{"null key and value", kgo.Record{}},
		{"small", kgo.Record{Key: []byte("k"), Value: []byte("v")}},
		{"value across a varint width (127/128)", kgo.Record{Value: bytes.Repeat([]byte("x"), 128)}},
		{"large value", kgo.Record{Key: []byte("key"), Value: bytes.Repeat([]byte("x"), 20_000)}},
		{"headers with null value", kgo.Record{Value: []byte("v"), Headers: []kgo.RecordHeader{{Key: "a"}, {Key: "bb", Value: bytes.Repeat([]byte("h"), 300)}}}},
	}
	for i, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			size := logread.RecordBatchSize(&tt.rec)
			for _, limit := range []int64{size, size - 1} {
				topic := fmt.Sprintf("size-%d-%d", i, limit)
				l := strconv.FormatInt(limit, 10)
				testkit.CreateTopic(t, testkit.Client(t, c), topic, 1, map[string]*string{"max.message.bytes": &l})
				cl := testkit.Client(t, c, kgo.ProducerLinger(0), kgo.MaxProduceRequestsInflightPerBroker(1), kgo.RecordRetries(0),
					kgo.ProducerBatchCompression(kgo.NoCompression())) // kmirror's default: the broker counts uncompressed bytes
				r := tt.rec
				r.Topic = topic
				r.Timestamp = time.UnixMilli(1_700_000_000_000)
				err := cl.ProduceSync(context.Background(), &r).FirstErr()
				if fits := limit >= size; fits != (err == nil) {
					t.Errorf("size %d, max.message.bytes=%d: produce error %v, want fits=%v", size, limit, err, fits)
				}
			}
		})
	}
}
