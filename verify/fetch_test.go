package verify

import (
	"bytes"
	"context"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/kmigrate/kmigrate/internal/testkit"
	"github.com/kmigrate/kmigrate/offsetmap"
)

// BenchmarkFetchStream reads one kfake partition of small records through startFetch, as Diff
// reads each side: fetch, decode and fingerprint, drained by one consumer (the aligner's place).
func BenchmarkFetchStream(b *testing.B) {
	const n = 200_000
	c := testkit.StartCluster(b, kfake.SeedTopics(1, "bench-fetch"))
	cl := testkit.Client(b, c, kgo.DefaultProduceTopic("bench-fetch"),
		kgo.ProducerLinger(5*time.Millisecond), kgo.ProducerBatchMaxBytes(1<<20))
	ctx := context.Background()
	val := bytes.Repeat([]byte("v"), 100)
	var wg sync.WaitGroup
	var perr atomic.Value
	for i := range n {
		wg.Add(1)
		cl.Produce(ctx, &kgo.Record{Key: []byte(strconv.Itoa(i)), Value: val}, func(_ *kgo.Record, err error) {
			if err != nil {
				perr.Store(err)
			}
			wg.Done()
		})
	}
	wg.Wait()
	if err, _ := perr.Load().(error); err != nil {
		b.Fatal(err)
	}
	b.ResetTimer()
	for b.Loop() {
		s := startFetch(ctx, cl, fetchSpec{cluster: "source", topic: "bench-fetch", partition: 0, from: 0, to: n, committed: true, fields: offsetmap.DefaultFields})
		got := 0
		for {
			_, ok, err := s.Next(ctx)
			if err != nil {
				b.Fatal(err)
			}
			if !ok {
				break
			}
			got++
		}
		s.close()
		if got != n {
			b.Fatalf("read %d records, want %d", got, n)
		}
	}
	b.ReportMetric(float64(n)*float64(b.N)/b.Elapsed().Seconds(), "records/s")
}
