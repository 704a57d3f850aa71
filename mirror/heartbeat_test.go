package mirror_test

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/kmigrate/kmigrate/internal/testkit"
	"github.com/kmigrate/kmigrate/mirror"
	"github.com/kmigrate/kmigrate/mm2"
)

const hbInterval = 100 * time.Millisecond

// hbConfig mirrors topic with heartbeats every hbInterval (replication factor 1: kfake has one
// broker).
func hbConfig(topic string) mirror.Config {
	cfg := testConfig(topic)
	cfg.EmitHeartbeats = true
	cfg.EmitHeartbeatsInterval = hbInterval
	cfg.HeartbeatsReplicationFactor = 1
	return cfg
}

// hbPair is a new pair with a topic named after prefix, of partitions partitions, on the source.
func hbPair(t *testing.T, prefix string, partitions int32) (pair, string) {
	t.Helper()
	p := newPair(t)
	topic := testkit.TopicName(prefix)
	testkit.CreateTopic(t, testkit.Client(t, p.src), topic, partitions, nil)
	return p, topic
}

// heartbeat is a record of the heartbeats topic, decoded.
type heartbeat struct {
	mm2.Heartbeat
	partition int32
	recordTS  time.Time
}

// readHeartbeats returns the records of the heartbeats topic on c, decoded (none when the topic
// does not exist); a record that does not decode fails the test.
func readHeartbeats(t *testing.T, c *kfake.Cluster) []heartbeat {
	t.Helper()
	if !hasTopic(t, c, mm2.HeartbeatsTopic) {
		return nil
	}
	var out []heartbeat
	for _, r := range readAll(t, c, mm2.HeartbeatsTopic, 0) {
		h, err := mm2.DecodeHeartbeat(r.Key, r.Value)
		if err != nil {
			t.Fatalf("heartbeat at offset %d: %v", r.Offset, err)
		}
		out = append(out, heartbeat{h, r.Partition, r.Timestamp})
	}
	return out
}

func hasTopic(t *testing.T, c *kfake.Cluster, topic string) bool {
	t.Helper()
	tds, err := kadm.NewClient(testkit.Client(t, c)).ListTopics(context.Background())
	if err != nil {
		t.Fatalf("list topics: %v", err)
	}
	return tds.Has(topic)
}

// clusterState is every topic of a cluster (internal ones left out) with the end offset of each
// partition: what a cluster nobody wrote to keeps.
func clusterState(t *testing.T, c *kfake.Cluster) string {
	t.Helper()
	ctx := context.Background()
	adm := kadm.NewClient(testkit.Client(t, c))
	tds, err := adm.ListTopics(ctx)
	if err != nil {
		t.Fatalf("list topics: %v", err)
	}
	ends, err := adm.ListEndOffsets(ctx, tds.Names()...)
	if err != nil {
		t.Fatalf("end offsets: %v", err)
	}
	var lines []string
	ends.Each(func(o kadm.ListedOffset) {
		lines = append(lines, fmt.Sprintf("%s/%d=%d", o.Topic, o.Partition, o.Offset))
	})
	slices.Sort(lines)
	return strings.Join(lines, " ")
}

// neverWithin fails if cond holds at any poll during d: for what must not happen.
func neverWithin(t *testing.T, d time.Duration, what string, cond func() bool) {
	t.Helper()
	for deadline := time.Now().Add(d); time.Now().Before(deadline); time.Sleep(20 * time.Millisecond) {
		if cond() {
			t.Fatal(what)
		}
	}
}

// TestHeartbeats: an engine whose flow emits heartbeats writes MM2's heartbeat of A->B to
// partition 0 of "heartbeats" on the target at the configured interval (each a full interval
// after the previous one, timestamps increasing, the record's timestamp the heartbeat's own),
// creates the topic compacted with one partition, says so at start, counts them, mirrors as
// usual and writes nothing to the source.
func TestHeartbeats(t *testing.T) {
	t.Parallel()
	p, topic := hbPair(t, "hb", 2)
	produce(t, p.src, topic, 2, 0, 20)
	srcBefore := clusterState(t, p.src)

	l := startLogged(t, p, hbConfig(topic))
	waitMirrored(t, p, topic, 2)
	var hbs []heartbeat
	testkit.WaitFor(t, "6 heartbeats on the target", 30*time.Second, func() string {
		if hbs = readHeartbeats(t, p.dst); len(hbs) < 6 {
			return fmt.Sprintf("%d heartbeats", len(hbs))
		}
		return ""
	})
	var gaps []time.Duration
	for i, h := range hbs {
		if h.SourceAlias != "A" || h.TargetAlias != "B" || h.partition != 0 {
			t.Errorf("heartbeat %d: %+v in partition %d, want source A, target B, partition 0", i, h.Heartbeat, h.partition)
		}
		if !h.recordTS.Equal(h.Time()) {
			t.Errorf("heartbeat %d: record timestamp %v, heartbeat's %v", i, h.recordTS, h.Time())
		}
		if i > 0 {
			gap := h.Time().Sub(hbs[i-1].Time())
			if gap < hbInterval-time.Millisecond {
				t.Errorf("heartbeats %d and %d are %v apart, want at least the interval %v (timestamps increasing)", i-1, i, gap, hbInterval)
			}
			gaps = append(gaps, gap)
		}
	}
	slices.Sort(gaps)
	if median := gaps[len(gaps)/2]; median > 10*hbInterval {
		t.Errorf("median gap %v (gaps %v): heartbeats do not follow the interval %v", median, gaps, hbInterval)
	}

	adm := kadm.NewClient(testkit.Client(t, p.dst))
	ctx := context.Background()
	tds, err := adm.ListTopics(ctx, mm2.HeartbeatsTopic)
	if err != nil || len(tds[mm2.HeartbeatsTopic].Partitions) != 1 {
		t.Errorf("heartbeats topic: %v, %+v; want one partition", err, tds)
	}
	rcs, err := adm.DescribeTopicConfigs(ctx, mm2.HeartbeatsTopic)
	if err != nil {
		t.Fatal(err)
	}
	rc, err := rcs.On(mm2.HeartbeatsTopic, nil)
	if err != nil {
		t.Fatal(err)
	}
	policy := ""
	for _, c := range rc.Configs {
		if c.Key == "cleanup.policy" {
			policy = c.MaybeValue()
		}
	}
	if policy != "compact" {
		t.Errorf("heartbeats topic cleanup.policy %q, want compact", policy)
	}

	mfs := scrape(t, l.e)
	if v := value(sample(t, mfs, "kmirror_heartbeats_total", nil)); v < float64(len(hbs)) {
		t.Errorf("kmirror_heartbeats_total %g, want at least %d", v, len(hbs))
	}
	if v := value(sample(t, mfs, "kmirror_heartbeat_errors_total", nil)); v != 0 {
		t.Errorf("kmirror_heartbeat_errors_total %g, want 0", v)
	}
	if err := l.stop(t); err != nil {
		t.Fatalf("Run: %v", err)
	}
	sameRecords(t, p, topic, 0)
	sameRecords(t, p, topic, 1)
	if after := clusterState(t, p.src); after != srcBefore {
		t.Errorf("the source changed:\nbefore %s\nafter  %s", srcBefore, after)
	}
	if hasTopic(t, p.src, mm2.HeartbeatsTopic) {
		t.Error("the source has a heartbeats topic")
	}
	if !strings.Contains(l.logs.String(), `msg="heartbeats emitted" flow=A->B cluster=B topic=heartbeats interval=100ms replication_factor=1`) {
		t.Errorf("no start-up line saying where and how often heartbeats go:\n%s", l.logs.String())
	}
}

// TestHeartbeatsOff: a flow that switches heartbeats off (emit.heartbeats.enabled=false for
// the flow alone, as MM2 reads the key, or a negative interval) gets no heartbeats topic and
// no heartbeat on either cluster, while it mirrors as usual.
func TestHeartbeatsOff(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct{ name, extra string }{
		{"enabled=false", "A->B.emit.heartbeats.enabled=false\n"},
		{"negative interval", "emit.heartbeats.interval.seconds=-1\n"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			p, topic := hbPair(t, "hboff", 1)
			produce(t, p.src, topic, 1, 0, 10)
			f, props := flowOf(t, fmt.Sprintf(`clusters=A,B
A.bootstrap.servers=%s
B.bootstrap.servers=%s
A->B.enabled=true
A->B.topics=%s
replication.policy.class=org.apache.kafka.connect.mirror.IdentityReplicationPolicy
heartbeats.topic.replication.factor=1
`, strings.Join(p.src.ListenAddrs(), ","), strings.Join(p.dst.ListenAddrs(), ","), topic)+tc.extra)
			cfg, _, err := mirror.FromFlow(f, props.Cluster[f.Source], props.Cluster[f.Target])
			if err != nil {
				t.Fatal(err)
			}
			cfg.ReplicationFactor, cfg.InternalReplicationFactor, cfg.CommitLatency = 1, 1, 100*time.Millisecond
			if cfg.EmitHeartbeatsInterval > 0 {
				cfg.EmitHeartbeatsInterval = hbInterval // were they on, 10 would come in the second below
			}
			l := startLogged(t, p, cfg)
			waitMirrored(t, p, topic, 1)
			neverWithin(t, 10*hbInterval, "a heartbeats topic appeared on the target", func() bool { return hasTopic(t, p.dst, mm2.HeartbeatsTopic) })
			if v := value(sample(t, scrape(t, l.e), "kmirror_heartbeats_total", nil)); v != 0 {
				t.Errorf("kmirror_heartbeats_total %g, want 0", v)
			}
			if err := l.stop(t); err != nil {
				t.Fatalf("Run: %v", err)
			}
			if hasTopic(t, p.src, mm2.HeartbeatsTopic) || hasTopic(t, p.dst, mm2.HeartbeatsTopic) {
				t.Error("a heartbeats topic exists")
			}
			if !strings.Contains(l.logs.String(), `msg="heartbeats not emitted"`) {
				t.Errorf("the start-up log does not say that no heartbeats are emitted:\n%s", l.logs.String())
			}
		})
	}
}

// TestHeartbeatFailureKeepsMirroring: a heartbeats topic the target cannot create (replication
// factor 3 on one broker) is logged, counted and tried again at each interval, and the mirror
// goes on: records produced after the failures are mirrored and Run ends without error.
func TestHeartbeatFailureKeepsMirroring(t *testing.T) {
	t.Parallel()
	p, topic := hbPair(t, "hbfail", 1)
	produce(t, p.src, topic, 1, 0, 10)
	cfg := hbConfig(topic)
	cfg.HeartbeatsReplicationFactor = 3
	l := startLogged(t, p, cfg)
	waitMirrored(t, p, topic, 1)
	waitFor(t, "3 failed heartbeats", func() bool {
		return value(sample(t, scrape(t, l.e), "kmirror_heartbeat_errors_total", nil)) >= 3
	})
	produce(t, p.src, topic, 1, 10, 10)
	waitMirrored(t, p, topic, 1)
	if err := l.stop(t); err != nil {
		t.Fatalf("Run: %v", err)
	}
	sameRecords(t, p, topic, 0)
	if hasTopic(t, p.dst, mm2.HeartbeatsTopic) {
		t.Error("the target has a heartbeats topic")
	}
	out := l.logs.String()
	if n := strings.Count(out, "heartbeat not emitted; trying again"); n < 1 || n > 2 {
		t.Errorf("got %d failure lines, want 1 (or 2 if the first error differs): a failure that goes on is logged once a minute\n%s", n, out)
	}
	for _, want := range []string{"cluster=B topic=heartbeats", "INVALID_REPLICATION_FACTOR", "heartbeats.topic.replication.factor"} {
		if !strings.Contains(out, want) {
			t.Errorf("the failure log does not say %q:\n%s", want, out)
		}
	}
}

// TestHeartbeatsTopicLeftAsItIs: an existing heartbeats topic that is not compacted is named
// in a warning and used as it is, never altered.
func TestHeartbeatsTopicLeftAsItIs(t *testing.T) {
	t.Parallel()
	p, topic := hbPair(t, "hbexisting", 1)
	deletePolicy := "delete"
	testkit.CreateTopic(t, testkit.Client(t, p.dst), mm2.HeartbeatsTopic, 2, map[string]*string{"cleanup.policy": &deletePolicy})
	l := startLogged(t, p, hbConfig(topic))
	waitFor(t, "2 heartbeats", func() bool { return len(readHeartbeats(t, p.dst)) >= 2 })
	if err := l.stop(t); err != nil {
		t.Fatalf("Run: %v", err)
	}
	out := l.logs.String()
	for _, want := range []string{"the heartbeats topic is not compacted", "cleanup.policy=delete", "the heartbeats topic has more than one partition", "partitions=2"} {
		if !strings.Contains(out, want) {
			t.Errorf("log does not say %q:\n%s", want, out)
		}
	}
	rcs, err := kadm.NewClient(testkit.Client(t, p.dst)).DescribeTopicConfigs(context.Background(), mm2.HeartbeatsTopic)
	if err != nil {
		t.Fatal(err)
	}
	rc, _ := rcs.On(mm2.HeartbeatsTopic, nil)
	for _, c := range rc.Configs {
		if c.Key == "cleanup.policy" && c.MaybeValue() != "delete" {
			t.Errorf("cleanup.policy %q: kmirror altered the topic", c.MaybeValue())
		}
	}
}

// TestHeartbeatsDenied: a target that denies Create on the heartbeats topic (the access
// check's validate-only CreateTopics) gets a warning naming the operation, the topic and the
// key that switches heartbeats off; the engine emits none, tries none, and mirrors as usual.
func TestHeartbeatsDenied(t *testing.T) {
	t.Parallel()
	p, topic := hbPair(t, "hbdenied", 1)
	produce(t, p.src, topic, 1, 0, 10)
	p.dst.ControlKey(int16(kmsg.CreateTopics), func(kreq kmsg.Request) (kmsg.Response, error, bool) {
		p.dst.KeepControl()
		req := kreq.(*kmsg.CreateTopicsRequest)
		if len(req.Topics) != 1 || req.Topics[0].Topic != mm2.HeartbeatsTopic {
			return nil, nil, false
		}
		resp := req.ResponseKind().(*kmsg.CreateTopicsResponse)
		rt := kmsg.NewCreateTopicsResponseTopic()
		rt.Topic, rt.ErrorCode = mm2.HeartbeatsTopic, 29 // TOPIC_AUTHORIZATION_FAILED
		resp.Topics = append(resp.Topics, rt)
		return resp, nil, true
	})
	l := startLogged(t, p, hbConfig(topic))
	waitMirrored(t, p, topic, 1)
	neverWithin(t, 5*hbInterval, "a heartbeats topic appeared on the target", func() bool { return hasTopic(t, p.dst, mm2.HeartbeatsTopic) })
	mfs := scrape(t, l.e)
	if v := value(sample(t, mfs, "kmirror_heartbeats_total", nil)) + value(sample(t, mfs, "kmirror_heartbeat_errors_total", nil)); v != 0 {
		t.Errorf("heartbeats emitted or tried: %g, want none", v)
	}
	if err := l.stop(t); err != nil {
		t.Fatalf("Run: %v", err)
	}
	sameRecords(t, p, topic, 0)
	out := l.logs.String()
	for _, want := range []string{"level=WARN", "heartbeats not emitted: the principal may not create or write the heartbeats topic",
		"emit.heartbeats.enabled=false", "cluster=B topic=heartbeats", "Create on Topic:heartbeats"} {
		if !strings.Contains(out, want) {
			t.Errorf("log does not say %q:\n%s", want, out)
		}
	}
}
