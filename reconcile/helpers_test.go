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

	"github.com/kmigrate/kmigrate/internal/testkit"
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
	p := testkit.NewPair(t, targetBrokers)
	e := &env{srcK: p.Source.Cluster, dstK: p.Target.Cluster, src: p.Source.Client, dst: p.Target.Client}
	e.srcSeeds, e.dstSeeds = e.srcK.ListenAddrs(), e.dstK.ListenAddrs()
	e.srcAdm, e.dstAdm = kadm.NewClient(e.src), kadm.NewClient(e.dst)
	return e
}

var topicSeq atomic.Int64

func uniqueTopic(prefix string) string {
	return fmt.Sprintf("%s-%d-%d", prefix, time.Now().UnixNano()%1e6, topicSeq.Add(1))
}

func testCtx(t *testing.T) context.Context { return testkit.Context(t, time.Minute) }

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
		offs := testkit.Produce(t, e.dst, dstTopic, part, batch...)
		for i, o := range offs {
			m[from[i]] = append(m[from[i]], o)
		}
	}
	return m
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
	testkit.Produce(t, e.dst, topic, 0, recs...)
}

// writeSyncs writes MM2-format offset syncs to the topic on cluster cl.
func writeSyncs(t *testing.T, cl *kgo.Client, topic string, syncs ...mm2.OffsetSync) {
	t.Helper()
	ensureTopic(t, kadm.NewClient(cl), topic)
	var recs []*kgo.Record
	for _, s := range syncs {
		recs = append(recs, &kgo.Record{Key: s.Key(), Value: s.Value()})
	}
	testkit.Produce(t, cl, topic, 0, recs...)
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
