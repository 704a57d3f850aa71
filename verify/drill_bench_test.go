package verify

import (
	"bytes"
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/kmigrate/kmigrate/digest"
	"github.com/kmigrate/kmigrate/internal/testkit"
	"github.com/kmigrate/kmigrate/offsetmap"
)

// readCounter counts the bytes a client reads from its brokers.
type readCounter struct{ n atomic.Int64 }

func (r *readCounter) OnBrokerRead(_ kgo.BrokerMetadata, _ int16, n int, _, _ time.Duration, _ error) {
	r.n.Add(int64(n))
}

// BenchmarkLinkBytes measures what crosses "the link" to the source site for a topic of
// KVERIFY_LINK_MIB MiB (default 64) of 1 KiB records in 4 partitions (produced in batches of up
// to 64 KiB: a read cannot fetch less than a batch), copied with 10 faults
// (lost, replayed, altered and extra records): (a) kverify diff reads every source record
// across it; (b) with digests, the source digest is taken next to the source and only the file
// crosses, then compare --drill reads the differing ranges of the source. The target is local
// in both. Reported: source bytes of each, and their ratio. Run:
//
//	go test ./verify -run '^$' -bench LinkBytes -benchtime 1x
//	KVERIFY_LINK_MIB=1024 go test ./verify -run '^$' -bench LinkBytes -benchtime 1x -timeout 60m
//	KVERIFY_LINK_SOURCE=127.0.0.1:9092 KVERIFY_LINK_TARGET=127.0.0.1:9093 KVERIFY_LINK_MIB=1024 go test ...
func BenchmarkLinkBytes(b *testing.B) {
	mib := 64
	if s := os.Getenv("KVERIFY_LINK_MIB"); s != "" {
		var err error
		if mib, err = strconv.Atoi(s); err != nil || mib < 1 {
			b.Fatalf("KVERIFY_LINK_MIB=%q: give a number of MiB", s)
		}
	}
	ctx := context.Background()
	srcSeeds, dstSeeds, topic := linkTopic(b, mib)
	for _, avg := range []int64{digest.DefaultAverage, 512} {
		b.Run(fmt.Sprintf("chunk-%d", avg), func(b *testing.B) {
			var diffBytes, fileBytes, drillBytes int64
			for b.Loop() {
				diffBytes = measure(b, srcSeeds, func(src *kgo.Client) {
					dst := benchClient(b, dstSeeds)
					defer dst.Close()
					if _, _, err := Diff(ctx, src, dst, Config{SourceTopic: topic}); err != nil {
						b.Fatal(err)
					}
				})
				fileBytes, drillBytes = linkDigest(b, srcSeeds, dstSeeds, topic, avg)
			}
			link := fileBytes + drillBytes
			b.ReportMetric(float64(diffBytes)/(1<<20), "diff-source-MiB")
			b.ReportMetric(float64(fileBytes)/(1<<10), "digest-file-KiB")
			b.ReportMetric(float64(drillBytes)/(1<<20), "drill-source-MiB")
			b.ReportMetric(float64(diffBytes)/float64(link), "diff/digest-link")
		})
	}
}

// linkDigest digests both sides, compares and drills; it returns the source digest's size
// and the bytes the drill read from the source.
func linkDigest(b *testing.B, srcSeeds, dstSeeds, topic string, avg int64) (file, drill int64) {
	ctx := context.Background()
	p, _ := digest.ParamsFor(avg)
	d := digest.TakeConfig{Fields: offsetmap.DefaultFields, Committed: true, Params: p, Parallel: 4, Topic: topic, From: -1, To: -1}
	var files [2]*digest.File
	for i, side := range []string{"source", "target"} {
		cl := benchClient(b, map[bool]string{true: srcSeeds, false: dstSeeds}[i == 0])
		d.Side, d.Cluster = side, side
		f, err := digest.Take(ctx, cl, d)
		cl.Close()
		if err != nil {
			b.Fatal(err)
		}
		files[i] = f
	}
	var buf bytes.Buffer
	if err := digest.Write(&buf, files[0]); err != nil {
		b.Fatal(err)
	}
	cmp, err := digest.Compare(files[0], files[1])
	if err != nil {
		b.Fatal(err)
	}
	drill = measure(b, srcSeeds, func(src *kgo.Client) {
		dst := benchClient(b, dstSeeds)
		defer dst.Close()
		res, err := DiffRanges(ctx, src, dst, drillSpecs(cmp, offsetmap.DefaultFields, false, 1000), 4)
		if err != nil || res.Identical {
			b.Fatalf("drill: %v, identical %v: want the faults", err, res != nil && res.Identical)
		}
	})
	return int64(buf.Len()), drill
}

// measure runs f with a source client and returns the bytes it read.
func measure(b *testing.B, seeds string, f func(*kgo.Client)) int64 {
	var rc readCounter
	cl := benchClient(b, seeds, kgo.WithHooks(&rc))
	defer cl.Close()
	f(cl)
	return rc.n.Load()
}

func benchClient(b *testing.B, seeds string, opts ...kgo.Opt) *kgo.Client {
	cl, err := kgo.NewClient(append([]kgo.Opt{kgo.SeedBrokers(strings.Split(seeds, ",")...), kgo.RecordPartitioner(kgo.ManualPartitioner()), kgo.ProducerBatchMaxBytes(64 << 10)}, opts...)...)
	if err != nil {
		b.Fatal(err)
	}
	return cl
}

// linkTopic fills two kfake clusters: mib MiB of 1 KiB records in 4 partitions on the source,
// their copy with 10 faults on the target.
// With KVERIFY_LINK_SOURCE and KVERIFY_LINK_TARGET (bootstrap addresses) it uses those
// clusters instead, e.g. real brokers from scripts/cluster.sh up 2.3.0 3.7.1.
func linkTopic(b *testing.B, mib int) (string, string, string) {
	seeds := [2]string{os.Getenv("KVERIFY_LINK_SOURCE"), os.Getenv("KVERIFY_LINK_TARGET")}
	var cls [2]*kgo.Client
	for i := range seeds {
		if seeds[i] == "" {
			seeds[i] = testkit.StartCluster(b, kfake.ClusterID(fmt.Sprintf("link-%d", i))).ListenAddrs()[0]
		}
		cls[i] = benchClient(b, seeds[i], kgo.RequiredAcks(kgo.AllISRAcks()), kgo.MaxProduceRequestsInflightPerBroker(1))
		b.Cleanup(cls[i].Close)
	}
	topic, parts := fmt.Sprintf("link-%x", time.Now().UnixNano()), int32(4)
	ctx := context.Background()
	for _, cl := range cls {
		resp, err := kadm.NewClient(cl).CreateTopic(ctx, parts, 1, nil, topic)
		if err == nil {
			err = resp.Err
		}
		if err != nil {
			b.Fatal(err)
		}
	}
	per := mib << 10 / int(parts) // 1 KiB records per partition
	r := rand.New(rand.NewPCG(7, 7))
	faults := map[[2]int]int{} // (partition, index) -> kind
	for len(faults) < 10 {
		faults[[2]int{r.IntN(int(parts)), r.IntN(per)}] = len(faults) % 4
	}
	for p := int32(0); p < parts; p++ {
		var src, dst []*kgo.Record
		for i := 0; i < per; i++ {
			v := make([]byte, 1000)
			for k := range v {
				v[k] = byte(r.Uint32())
			}
			rec := &kgo.Record{Topic: topic, Partition: p, Key: fmt.Appendf(nil, "key-%d", i), Value: v}
			src = append(src, rec)
			dst = append(dst, withFault(rec, faults[[2]int{int(p), i}], faults)...)
		}
		for i, cl := range cls {
			if err := cl.ProduceSync(ctx, [][]*kgo.Record{src, dst}[i]...).FirstErr(); err != nil {
				b.Fatal(err)
			}
		}
	}
	return seeds[0], seeds[1], topic
}

// withFault is what the target holds for rec: kind 0 lost, 1 duplicated, 2 altered, 3 an
// extra record after it; records at no fault position are copied as they are.
func withFault(rec *kgo.Record, kind int, faults map[[2]int]int) []*kgo.Record {
	c := *rec
	if _, ok := faults[[2]int{int(rec.Partition), keyIndex(rec)}]; !ok {
		return []*kgo.Record{&c}
	}
	switch kind {
	case 0:
		return nil
	case 1:
		d := c
		return []*kgo.Record{&c, &d}
	case 2:
		c.Value = []byte("altered")
		return []*kgo.Record{&c}
	}
	return []*kgo.Record{&c, {Topic: c.Topic, Partition: c.Partition, Value: []byte("extra")}}
}

func keyIndex(r *kgo.Record) int {
	var i int
	fmt.Sscanf(string(r.Key), "key-%d", &i)
	return i
}
