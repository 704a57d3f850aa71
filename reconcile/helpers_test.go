package reconcile

import (
	"context"
	"errors"
	"fmt"
	"sync/atomic"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/kmigrate/kmigrate/mm2"
	"github.com/kmigrate/kmigrate/offsetmap"
)

// env is a source and a target kfake cluster with clients.
type env struct {
	srcK, dstK     *kfake.Cluster // the clusters themselves, for faults
	src, dst       *kgo.Client
	srcAdm, dstAdm *kadm.Client
	srcSeeds       []string
	dstSeeds       []string
}

func newEnv(t *testing.T) *env {
	t.Helper()
	return newEnvBrokers(t, 1)
}

// newEnvBrokers is newEnv with a target of targetBrokers brokers (the source has one).
func newEnvBrokers(t *testing.T, targetBrokers int) *env {
	t.Helper()
	var last *kfake.Cluster
	start := func(id string) (*kgo.Client, []string) {
		n := 1
		if id == "kfake-target" {
			n = targetBrokers
		}
		c, err := kfake.NewCluster(kfake.NumBrokers(n), kfake.ClusterID(id))
		if err != nil {
			t.Fatalf("start kfake: %v", err)
		}
		t.Cleanup(c.Close)
		cl, err := kgo.NewClient(kgo.SeedBrokers(c.ListenAddrs()...))
		if err != nil {
			t.Fatalf("client: %v", err)
		}
		t.Cleanup(cl.Close)
		last = c
		return cl, c.ListenAddrs()
	}
	e := &env{}
	// Distinct cluster IDs, as real clusters have (kfake's default is "kfake" for every one).
	e.src, e.srcSeeds = start("kfake-source")
	e.srcK = last
	e.dst, e.dstSeeds = start("kfake-target")
	e.dstK = last
	e.srcAdm, e.dstAdm = kadm.NewClient(e.src), kadm.NewClient(e.dst)
	return e
}

var topicSeq atomic.Int64

func uniqueTopic(prefix string) string {
	return fmt.Sprintf("%s-%d-%d", prefix, time.Now().UnixNano()%1e6, topicSeq.Add(1))
}

func testCtx(t *testing.T) context.Context {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	t.Cleanup(cancel)
	return ctx
}

func createTopic(t *testing.T, adm *kadm.Client, topic string, partitions int32) {
	t.Helper()
	resp, err := adm.CreateTopic(testCtx(t), partitions, 1, nil, topic)
	if err == nil {
		err = resp.Err
	}
	if err != nil {
		t.Fatalf("create topic %s: %v", topic, err)
	}
}

// ensureTopic creates a single-partition topic unless it exists. (Asking for a missing topic
// first would make the shared client cache it as unknown for a while.)
func ensureTopic(t *testing.T, adm *kadm.Client, topic string) {
	t.Helper()
	resp, err := adm.CreateTopic(testCtx(t), 1, 1, nil, topic)
	if err == nil {
		err = resp.Err
	}
	if err != nil && !errors.Is(err, kerr.TopicAlreadyExists) {
		t.Fatalf("create topic %s: %v", topic, err)
	}
}

// produce writes records to one partition in order and returns their offsets.
func produce(t *testing.T, cl *kgo.Client, topic string, part int32, recs ...*kgo.Record) []int64 {
	t.Helper()
	for _, r := range recs {
		r.Topic, r.Partition = topic, part
	}
	pr, err := kgo.NewClient(append(seedsOf(t, cl), kgo.RecordPartitioner(kgo.ManualPartitioner()))...)
	if err != nil {
		t.Fatalf("producer: %v", err)
	}
	defer pr.Close()
	res := pr.ProduceSync(testCtx(t), recs...)
	if err := res.FirstErr(); err != nil {
		t.Fatalf("produce to %s/%d: %v", topic, part, err)
	}
	out := make([]int64, len(res))
	for i, r := range res {
		out[i] = r.Record.Offset
	}
	return out
}

func seedsOf(t *testing.T, cl *kgo.Client) []kgo.Opt {
	t.Helper()
	return []kgo.Opt{kgo.SeedBrokers(cl.OptValue(kgo.SeedBrokers).([]string)...)}
}

// values makes records with values "<prefix>-<i>" for i in [from, to).
func values(prefix string, from, to int) []*kgo.Record {
	var out []*kgo.Record
	for i := from; i < to; i++ {
		out = append(out, &kgo.Record{Key: []byte(fmt.Sprintf("k%d", i%7)), Value: []byte(fmt.Sprintf("%s-%d", prefix, i)),
			Timestamp: time.UnixMilli(1_700_000_000_000 + int64(i))})
	}
	return out
}

// readAll returns the records of topic/partition from offset from to the end, through the
// same raw-fetch reader Plan uses (TestReaderSeesEveryRecord checks it against a consumer).
func readAll(t *testing.T, cl *kgo.Client, topic string, part int32, from int64) []*kgo.Record {
	t.Helper()
	ctx := testCtx(t)
	ends, err := kadm.NewClient(cl).ListEndOffsets(ctx, topic)
	if err != nil {
		t.Fatalf("end offsets of %s: %v", topic, err)
	}
	end, _ := ends.Lookup(topic, part)
	recs, err := newSide("test", cl).read(ctx, topic, part, from, end.Offset, 0, offsetmap.DefaultFields)
	if err != nil {
		t.Fatalf("read %s/%d: %v", topic, part, err)
	}
	out := make([]*kgo.Record, len(recs))
	for i := range recs {
		out[i] = recs[i].r
	}
	return out
}

// step is one action of the test mirror: copy source offsets [From, To) (records that exist)
// to the target, in order. A step that repeats earlier offsets is a replay.
type step struct{ From, To int64 }

// mirrorTopic copies source records to the target topic by steps and returns the exact offset
// map as pairs (source offset -> target offsets, in order).
func mirrorTopic(t *testing.T, e *env, srcTopic, dstTopic string, part int32, steps ...step) map[int64][]int64 {
	t.Helper()
	all := readAll(t, e.src, srcTopic, part, 0)
	m := map[int64][]int64{}
	for _, s := range steps {
		var batch []*kgo.Record
		var from []int64
		for _, r := range all {
			if r.Offset >= s.From && r.Offset < s.To {
				batch = append(batch, &kgo.Record{Key: r.Key, Value: r.Value, Headers: r.Headers, Timestamp: r.Timestamp})
				from = append(from, r.Offset)
			}
		}
		if len(batch) == 0 {
			continue
		}
		offs := produce(t, e.dst, dstTopic, part, batch...)
		for i, o := range offs {
			m[from[i]] = append(m[from[i]], o)
		}
	}
	return m
}

// commit commits offsets for a group (no members) with metadata.
func commit(t *testing.T, adm *kadm.Client, group, topic string, part int32, at int64, meta string) {
	t.Helper()
	offs := kadm.Offsets{}
	offs.Add(kadm.Offset{Topic: topic, Partition: part, At: at, LeaderEpoch: -1, Metadata: meta})
	resp, err := adm.CommitOffsets(testCtx(t), group, offs)
	if err == nil {
		err = resp.Error()
	}
	if err != nil {
		t.Fatalf("commit %s %s/%d=%d: %v", group, topic, part, at, err)
	}
}

func committed(t *testing.T, adm *kadm.Client, group, topic string, part int32) (int64, string, bool) {
	t.Helper()
	resp, err := adm.FetchOffsets(testCtx(t), group)
	if err != nil {
		t.Fatalf("fetch offsets of %s: %v", group, err)
	}
	o, ok := resp.Lookup(topic, part)
	if !ok || o.At < 0 {
		return 0, "", false
	}
	return o.At, o.Metadata, true
}

// writeCheckpoints writes MM2-format checkpoints to "<alias>.checkpoints.internal" on the target.
func writeCheckpoints(t *testing.T, e *env, alias string, cps ...mm2.Checkpoint) {
	t.Helper()
	topic := alias + ".checkpoints.internal"
	ensureTopic(t, e.dstAdm, topic)
	var recs []*kgo.Record
	for _, c := range cps {
		recs = append(recs, &kgo.Record{Key: c.Key(), Value: c.Value()})
	}
	produce(t, e.dst, topic, 0, recs...)
}

// writeSyncs writes MM2-format offset syncs to the topic on cluster cl.
func writeSyncs(t *testing.T, cl *kgo.Client, topic string, syncs ...mm2.OffsetSync) {
	t.Helper()
	ensureTopic(t, kadm.NewClient(cl), topic)
	var recs []*kgo.Record
	for _, s := range syncs {
		recs = append(recs, &kgo.Record{Key: s.Key(), Value: s.Value()})
	}
	produce(t, cl, topic, 0, recs...)
}

// mm2Translate is MM2 3.7.1's checkpoint translation from sparse syncs: the newest sync s with
// s.Upstream <= g gives s.Downstream if equal, else s.Downstream+1.
func mm2Translate(syncs []mm2.OffsetSync, g int64) (int64, bool) {
	var best *mm2.OffsetSync
	for i := range syncs {
		s := &syncs[i]
		if s.Upstream <= g && (best == nil || s.Upstream >= best.Upstream) {
			best = s
		}
	}
	if best == nil {
		return 0, false
	}
	if best.Upstream == g {
		return best.Downstream, true
	}
	return best.Downstream + 1, true
}

func findPartition(t *testing.T, res *Result, group, topic string, part int32) *Partition {
	t.Helper()
	for gi := range res.Groups {
		g := &res.Groups[gi]
		if g.Group != group {
			continue
		}
		for pi := range g.Partitions {
			p := &g.Partitions[pi]
			if p.Topic == topic && p.Partition == part {
				return p
			}
		}
	}
	t.Fatalf("plan has no partition %s/%d for group %s: %+v", topic, part, group, res.Groups)
	return nil
}

func findGroup(t *testing.T, res *Result, group string) *Group {
	t.Helper()
	for gi := range res.Groups {
		if res.Groups[gi].Group == group {
			return &res.Groups[gi]
		}
	}
	t.Fatalf("plan has no group %s", group)
	return nil
}

func ptr(v int64) *int64 { return &v }

func fmtPtr(p *int64) string {
	if p == nil {
		return "null"
	}
	return fmt.Sprint(*p)
}
