package integration

import (
	"bufio"
	"context"
	"fmt"
	"math"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/kmigrate/kmigrate/integration/cluster"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
)

// The replication latency benchmark: records produced at a fixed rate, half of the
// bare loop's maximum measured first in the same run, each stamped with its send time in an
// x-source-timestamp header (Unix milliseconds, as MirrorMaker 2 runbooks do); a consumer on
// the target takes arrival minus send time. For kmirror, MirrorMaker 2 defaults and tuned:
// p50, p99 and max, and kmirror's own kmirror_replication_latency_seconds p99 over the same
// records. KMIGRATE_BENCH_LATENCY_SECONDS (default 30) is how long the rate is held,
// KMIGRATE_BENCH_RATE (records/s) skips the calibration, KMIGRATE_BENCH_RECORDS (default
// 1,000,000) is the calibration's size, KMIGRATE_BENCH_LATENCY_ONE_RATE=1 measures only the
// first rate (bench.sh --quick); the shape knobs are the production benchmark's.

const latHeader = "x-source-timestamp"

// latResult is one contender's latencies.
type latResult struct {
	name           string
	sent, arrived  int
	p50, p99, max  time.Duration
	ownP99         float64 // seconds, from kmirror's histogram; NaN for MM2
	produceSeconds float64
	srcP50, srcP99 time.Duration // the source producer's own: send to the source's acknowledgement
	mirP50, mirP99 time.Duration // arrival on the target minus the source's acknowledgement: the mirror's share
}

// latFigures sets r's quantiles: arrival minus the header's send time (the p99 goal's figure),
// the source's acknowledgement minus the send, and arrival minus that acknowledgement.
func latFigures(r *latResult, sendAt, ackAt []time.Time, arrivals []latArrival) {
	var lat, src, mir []time.Duration
	for _, a := range arrivals {
		lat = append(lat, a.at.Sub(time.UnixMilli(a.sent)))
		if a.seq >= 0 && a.seq < len(ackAt) && !ackAt[a.seq].IsZero() {
			mir = append(mir, a.at.Sub(ackAt[a.seq]))
		}
	}
	for i := range sendAt {
		if !ackAt[i].IsZero() {
			src = append(src, ackAt[i].Sub(sendAt[i]))
		}
	}
	for _, l := range [][]time.Duration{lat, src, mir} {
		slices.Sort(l)
	}
	r.p50, r.p99, r.max = latQuantile(lat, 0.5), latQuantile(lat, 0.99), latQuantile(lat, 1)
	r.srcP50, r.srcP99 = latQuantile(src, 0.5), latQuantile(src, 0.99)
	r.mirP50, r.mirP99 = latQuantile(mir, 0.5), latQuantile(mir, 0.99)
}

// latProduce sends records to topic at rate per second for d, each with its send time in the
// header and as its timestamp, keyed lat-<sequence number>, and returns each record's send
// and source acknowledgement times by sequence number (a source that cannot take the rate
// shows in the second, not only in the mirror's figures).
func latProduce(ctx context.Context, t *testing.T, c cluster.Cluster, topic string, s bpShape, rate float64, d time.Duration) (sendAt, ackAt []time.Time) {
	t.Helper()
	codec, _ := bpCodec(s.compression)
	cl := bedClient(t, c.Bootstrap(), kgo.ProducerBatchCompression(codec), kgo.ProducerLinger(0), kgo.RecordPartitioner(kgo.ManualPartitioner()))
	vals := newBPValues(2)
	var perr error
	var mu sync.Mutex
	capacity := int(rate*d.Seconds()) + 1
	sendAt, ackAt = make([]time.Time, capacity), make([]time.Time, capacity)
	start := time.Now()
	sent := 0
	for time.Since(start) < d && ctx.Err() == nil {
		due := int(rate * time.Since(start).Seconds())
		for ; sent < min(due, capacity); sent++ {
			now := time.Now()
			sendAt[sent] = now
			seq := sent
			r := &kgo.Record{Topic: topic, Partition: int32(sent % s.partitions), Key: fmt.Appendf(nil, "lat-%d", sent), Value: vals.next(s.value),
				Timestamp: now, Headers: []kgo.RecordHeader{{Key: latHeader, Value: strconv.AppendInt(nil, now.UnixMilli(), 10)}}}
			cl.Produce(ctx, r, func(r *kgo.Record, err error) {
				at := time.Now()
				mu.Lock()
				defer mu.Unlock()
				if err != nil {
					perr = err
				}
				ackAt[seq] = at
			})
		}
		time.Sleep(time.Millisecond) // pacing: the next batch of records falls due
	}
	if err := cl.Flush(ctx); err != nil {
		t.Fatalf("latency producer: flush: %v", err)
	}
	if perr != nil {
		t.Fatalf("latency producer to %s: %v", topic, perr)
	}
	mu.Lock()
	defer mu.Unlock()
	return sendAt[:sent], ackAt[:sent]
}

// latArrival is a record as the consumer on the target saw it.
type latArrival struct {
	seq  int   // from the key, -1 if unreadable
	sent int64 // the header's Unix milliseconds
	at   time.Time
}

// latConsume reads target from its start with read_committed, as kmirror's target consumers
// must (a record arrives when it is visible to them: for kmirror, once its transaction
// committed), and records, per record that carries the header, arrival minus send time, until
// it has want records (want is read once production ended: until then it is negative) or until
// ctx ends.
func latConsume(ctx context.Context, t *testing.T, c cluster.Cluster, target string, want func() int) []latArrival {
	t.Helper()
	cl := bedClient(t, c.Bootstrap(), kgo.ConsumeTopics(target), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()),
		kgo.FetchMaxWait(100*time.Millisecond), kgo.FetchIsolationLevel(kgo.ReadCommitted()))
	var lat []latArrival
	for {
		if w := want(); w >= 0 && len(lat) >= w {
			return lat
		}
		pctx, cancel := context.WithTimeout(ctx, time.Second)
		fs := cl.PollFetches(pctx)
		cancel()
		now := time.Now()
		fs.EachRecord(func(r *kgo.Record) {
			for _, h := range r.Headers {
				if h.Key == latHeader {
					ms, err := strconv.ParseInt(string(h.Value), 10, 64)
					if err == nil {
						seq, err := strconv.Atoi(strings.TrimPrefix(string(r.Key), "lat-"))
						if err != nil {
							seq = -1
						}
						lat = append(lat, latArrival{seq: seq, sent: ms, at: now})
					}
				}
			}
		})
		if ctx.Err() != nil {
			return lat
		}
	}
}

// latQuantile is the q-quantile of sorted latencies (nearest rank).
func latQuantile(sorted []time.Duration, q float64) time.Duration {
	if len(sorted) == 0 {
		return 0
	}
	i := int(math.Ceil(q*float64(len(sorted)))) - 1
	return sorted[max(0, min(i, len(sorted)-1))]
}

// latScrape reads the cumulative buckets of kmirror_replication_latency_seconds from a
// /metrics URL: upper bound (+Inf included) -> count.
func latScrape(url string) (map[float64]float64, error) {
	return scrapeHist(url, "kmirror_replication_latency_seconds")
}

// scrapeHist reads the cumulative buckets of histogram name from a /metrics URL.
func scrapeHist(url, name string) (map[float64]float64, error) {
	resp, err := http.Get(url)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	buckets := map[float64]float64{}
	sc := bufio.NewScanner(resp.Body)
	prefix := name + `_bucket{le="`
	for sc.Scan() {
		rest, ok := strings.CutPrefix(sc.Text(), prefix)
		if !ok {
			continue
		}
		le, count, ok := strings.Cut(rest, `"} `)
		if !ok {
			continue
		}
		ub, err1 := strconv.ParseFloat(le, 64)
		n, err2 := strconv.ParseFloat(count, 64)
		if err1 != nil || err2 != nil {
			return nil, fmt.Errorf("metrics line %q", sc.Text())
		}
		buckets[ub] = n
	}
	if len(buckets) == 0 {
		return nil, fmt.Errorf("%s: no %s buckets", url, name)
	}
	return buckets, sc.Err()
}

// latHistQuantile is the q-quantile of the observations between two scrapes, interpolated
// linearly within its bucket as Prometheus's histogram_quantile does.
func latHistQuantile(before, after map[float64]float64, q float64) float64 {
	bounds := make([]float64, 0, len(after))
	for ub := range after {
		bounds = append(bounds, ub)
	}
	slices.Sort(bounds)
	total := after[math.Inf(1)] - before[math.Inf(1)]
	if total <= 0 {
		return math.NaN()
	}
	rank, lower, prev := q*total, 0.0, 0.0
	for _, ub := range bounds {
		n := after[ub] - before[ub]
		if n >= rank {
			if math.IsInf(ub, 1) {
				return lower // as histogram_quantile: the highest finite bound
			}
			return lower + (ub-lower)*(rank-prev)/(n-prev)
		}
		lower, prev = ub, n
	}
	return math.NaN()
}

// latRun measures one contender: a fresh source topic, the contender started on it, one
// probe record through (the flow runs), then rate records/s for d and the wait for their copies.
func latRun(ctx context.Context, t *testing.T, src, dst cluster.Cluster, adm [2]*kadm.Client, name, alias string, start func(alias, topic string) bpProc, s bpShape, rate float64, d time.Duration) latResult {
	t.Helper()
	topic := bedUnique("lat")
	target := alias + "." + topic
	bedCreateTopic(t, src, topic, int32(s.partitions), nil)
	p := start(alias, topic)
	bedProduce(ctx, t, src, topic, 0, []*kgo.Record{{Value: []byte("probe")}})
	bedWaitFor(ctx, t, 50*time.Millisecond, name+": the probe record in "+target, func() string {
		if !p.alive() {
			t.Fatalf("%s exited before the probe record came through", name)
		}
		if bpEnds(ctx, adm[1], target) < 1 {
			return "not there"
		}
		return ""
	})
	var before map[float64]float64
	if p.metrics != "" {
		var err error
		if before, err = latScrape(p.metrics); err != nil {
			t.Fatalf("%s: %v", name, err)
		}
	}
	var want sync.Mutex // held until production ended and sent is set
	sent := -1
	cctx, cancel := context.WithCancel(ctx)
	defer cancel()
	done := make(chan []latArrival)
	go func() {
		done <- latConsume(cctx, t, dst, target, func() int { want.Lock(); defer want.Unlock(); return sent })
	}()
	t0 := time.Now()
	sendAt, ackAt := latProduce(ctx, t, src, topic, s, rate, d)
	n := len(sendAt)
	produced := time.Since(t0).Seconds()
	want.Lock()
	sent = n
	want.Unlock()
	drain := time.AfterFunc(max(time.Minute, 2*d), cancel) // a contender that cannot keep up: report what arrived
	arrivals := <-done
	drain.Stop()
	r := latResult{name: name, sent: n, arrived: len(arrivals), ownP99: math.NaN(), produceSeconds: produced}
	latFigures(&r, sendAt, ackAt, arrivals)
	if p.metrics != "" {
		after, err := latScrape(p.metrics)
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		r.ownP99 = latHistQuantile(before, after, 0.99)
	}
	p.stop()
	bpDelete(ctx, t, adm[0], topic)
	bpDelete(ctx, t, adm[1], target)
	t.Logf("%s: %d sent in %.1f s, %d arrived; p50 %v p99 %v max %v; own p99 %.4f s", name, r.sent, produced, r.arrived, r.p50, r.p99, r.max, r.ownP99)
	return r
}

// latRate is half the bare loop's steady throughput on the shape, measured in this run
// (KMIGRATE_BENCH_RATE, when set, is taken instead).
func latRate(ctx context.Context, t *testing.T, src, dst cluster.Cluster, adm [2]*kadm.Client, s bpShape) (rate, bare float64) {
	t.Helper()
	if v := os.Getenv("KMIGRATE_BENCH_RATE"); v != "" {
		r, err := strconv.ParseFloat(v, 64)
		if err != nil || r <= 0 {
			t.Fatalf("KMIGRATE_BENCH_RATE=%q: want records per second", v)
		}
		return r, math.NaN()
	}
	topic := bedUnique("latcal")
	bedCreateTopic(t, src, topic, int32(s.partitions), nil)
	bedCreateTopic(t, dst, "bare."+topic, int32(s.partitions), nil)
	payload := bpSeed(ctx, t, src, topic, s)
	r := bpBare(ctx, t, src, dst, adm[1], topic, "bare."+topic, int64(s.records), s.compression)
	r.finish(int64(s.records), payload)
	bpDelete(ctx, t, adm[0], topic)
	bpDelete(ctx, t, adm[1], "bare."+topic)
	t.Logf("bare loop: %.0f records/s steady over %d records: rate %.0f records/s", r.steadyRate, s.records, r.steadyRate/2)
	return r.steadyRate / 2, r.steadyRate
}

// TestMirrorLatency is the latency benchmark (KMIGRATE_BENCH=1; scripts/bench-latency.sh).
func TestMirrorLatency(t *testing.T) {
	if os.Getenv("KMIGRATE_BENCH") != "1" {
		t.Skip("set KMIGRATE_BENCH=1 (or run scripts/bench-latency.sh) to run the replication latency benchmark")
	}
	s := bpShapeFromEnv(t, 1_000_000)
	d := 30 * time.Second
	if v := os.Getenv("KMIGRATE_BENCH_LATENCY_SECONDS"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n <= 0 {
			t.Fatalf("KMIGRATE_BENCH_LATENCY_SECONDS=%q: want a positive integer", v)
		}
		d = time.Duration(n) * time.Second
	}
	loadBefore := bpLoad()
	src, dst, ok := bpClusters(t, "lat")
	if !ok {
		return
	}
	ctx := bedCtx(t, 60*time.Minute)
	adm := [2]*kadm.Client{bedAdmin(t, src), bedAdmin(t, dst)}
	rate, bare := latRate(ctx, t, src, dst, adm, s)
	bin := filepath.Join(bedBuild(t, "kmirror"), "kmirror")
	contenders := []struct {
		name, alias string
		start       func(alias, topic string) bpProc
	}{
		{"kmirror", "km", func(a, topic string) bpProc {
			return bpKmirror(t, bin, src, dst, a, topic, "B.producer.compression.type="+s.compression+"\n")
		}},
		{"MirrorMaker 2 3.7.1, defaults", "md", func(a, topic string) bpProc { return bpMM2(ctx, t, src, dst, a, topic, "") }},
		{"MirrorMaker 2 3.7.1, tuned", "mt", func(a, topic string) bpProc { return bpMM2(ctx, t, src, dst, a, topic, bpMM2Tuned(a, s)) }},
	}
	if os.Getenv("KMIGRATE_BENCH_SKIP_MM2") == "1" {
		contenders = contenders[:1]
	}
	// Half the bare loop's rate, then a fifth of it (a tenth of the bare loop) for half as long: what
	// each contender adds when neither it nor the machine is near saturation.
	rates := []struct {
		label string
		rate  float64
		d     time.Duration
	}{{"half the bare loop's", rate, d}, {"a tenth of the bare loop's", rate / 5, d / 2}}
	if os.Getenv("KMIGRATE_BENCH_LATENCY_ONE_RATE") == "1" { // bench.sh --quick
		rates = rates[:1]
	}
	var text string
	for i, lr := range rates {
		var res []latResult
		for _, c := range contenders {
			res = append(res, latRun(ctx, t, src, dst, adm, c.name, c.alias, c.start, s, lr.rate, lr.d))
		}
		text += latReport(s, lr.label, lr.rate, bare, lr.d, res, loadBefore, bpLoad(), i == 0)
		loadBefore = bpLoad()
	}
	t.Log(text)
	if out := os.Getenv("KMIGRATE_BENCH_OUT"); out != "" {
		if err := os.WriteFile(out, []byte(text), 0o644); err != nil {
			t.Errorf("write %s: %v", out, err)
		}
	}
}

// latReport is the Markdown table of the latencies and, with goals, the ratios against
// kmirror's goals.
func latReport(s bpShape, label string, rate, bare float64, d time.Duration, res []latResult, loadBefore, loadAfter string, goals bool) string {
	var b strings.Builder
	what := fmt.Sprintf("%s %.0f records/s steady", label, bare)
	if math.IsNaN(bare) {
		what = "from KMIGRATE_BENCH_RATE; the bare loop was not measured"
	}
	fmt.Fprintf(&b, "\n%.0f records/s (%s) for %v, %d B values in %d partitions, %s, Kafka 2.3.0 -> 3.7.1; load average %s before, %s after:\n\n",
		rate, what, d, s.value, s.partitions, s.compression, loadBefore, loadAfter)
	fmt.Fprintf(&b, "| contender | sent | arrived | send rate achieved | p50 | p99 | max | kmirror_replication_latency_seconds p99 | source ack p50 / p99 | arrival - source ack p50 / p99 |\n|---|---|---|---|---|---|---|---|---|---|\n")
	ms := latMS
	for _, r := range res {
		own := "-"
		if !math.IsNaN(r.ownP99) {
			own = ms(time.Duration(r.ownP99 * float64(time.Second)))
		}
		fmt.Fprintf(&b, "| %s | %d | %d | %.0f/s | %s | %s | %s | %s | %s / %s | %s / %s |\n", r.name, r.sent, r.arrived, float64(r.sent)/r.produceSeconds,
			ms(r.p50), ms(r.p99), ms(r.max), own, ms(r.srcP50), ms(r.srcP99), ms(r.mirP50), ms(r.mirP99))
	}
	km := res[0]
	if !goals {
		return b.String()
	}
	fmt.Fprintf(&b, "\nGoals:\n")
	ok := km.arrived == km.sent && km.p99 < 100*time.Millisecond
	fmt.Fprintf(&b, "- kmirror p99 %s (goal < 100 ms: %s)\n", ms(km.p99), bpGoal(ok))
	if len(res) == 3 {
		mt := res[2]
		ratio := float64(km.p99) / float64(mt.p99)
		ok := km.arrived == km.sent && ratio <= 1.0/3
		fmt.Fprintf(&b, "- kmirror p99 / MM2 tuned p99: %.2f (goal <= 0.33: %s); / MM2 defaults p99: %.2f\n", ratio, bpGoal(ok), float64(km.p99)/float64(res[1].p99))
	}
	for _, r := range res {
		if r.arrived < r.sent {
			fmt.Fprintf(&b, "- %s did not keep up: %d of %d records arrived within the drain time; its figures are over those that did\n", r.name, r.arrived, r.sent)
		}
	}
	return b.String()
}

func latMS(d time.Duration) string {
	return fmt.Sprintf("%.1f ms", float64(d)/float64(time.Millisecond))
}
