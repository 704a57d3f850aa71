package mirror_test

import (
	"bytes"
	"context"
	"fmt"
	"log/slog"
	"os"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/kmigrate/kmigrate/internal/testkit"
	"github.com/kmigrate/kmigrate/mirror"
	"github.com/kmigrate/kmigrate/mm2"
	"github.com/kmigrate/kmigrate/offsetmap"
)

// pair is a source and a target kfake cluster.
type pair struct {
	src, dst *kfake.Cluster
}

// newPair starts two one-broker kfake clusters, both with opts.
func newPair(t *testing.T, opts ...kfake.Opt) pair {
	t.Helper()
	return pair{testkit.StartCluster(t, opts...), testkit.StartCluster(t, opts...)}
}

func seeds(c *kfake.Cluster) []kgo.Opt { return []kgo.Opt{kgo.SeedBrokers(c.ListenAddrs()...)} }

// produce writes n records to every partition of topic, numbered from start, with keys (some
// null), headers and timestamps. testkit.Produce writes the records it is given; these tests
// want every partition filled with records whose keys vary and are sometimes null.
func produce(t *testing.T, c *kfake.Cluster, topic string, partitions int32, start, n int) {
	t.Helper()
	cl := testkit.Client(t, c)
	for p := int32(0); p < partitions; p++ {
		var recs []*kgo.Record
		for i := start; i < start+n; i++ {
			r := &kgo.Record{
				Value:     fmt.Appendf(nil, "value-%d-%d", p, i),
				Timestamp: time.UnixMilli(1_700_000_000_000 + int64(i)),
				Headers:   []kgo.RecordHeader{{Key: "h", Value: fmt.Appendf(nil, "%d", i)}},
			}
			if i%7 != 0 {
				r.Key = fmt.Appendf(nil, "key-%d", i%50)
			}
			recs = append(recs, r)
		}
		testkit.Produce(t, cl, topic, p, recs...)
	}
}

// readAll returns every record of topic/partition on c, read_committed, control records left
// out.
func readAll(t *testing.T, c *kfake.Cluster, topic string, partition int32) []*kgo.Record {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	adm := kadm.NewClient(testkit.Client(t, c))
	ends, err := adm.ListCommittedOffsets(ctx, topic) // what read_committed can read
	if err != nil {
		t.Fatal(err)
	}
	end, _ := ends.Lookup(topic, partition)
	if end.Offset == 0 {
		return nil
	}
	cl := testkit.Client(t, c,
		kgo.ConsumePartitions(map[string]map[int32]kgo.Offset{topic: {partition: kgo.NewOffset().AtStart()}}),
		kgo.FetchIsolationLevel(kgo.ReadCommitted()), kgo.KeepControlRecords())
	var out []*kgo.Record
	for {
		fs := cl.PollFetches(ctx)
		if ctx.Err() != nil {
			t.Fatalf("read %s/%d: timed out at %d records (end %d)", topic, partition, len(out), end.Offset)
		}
		last := int64(-1)
		fs.EachRecord(func(r *kgo.Record) {
			last = r.Offset
			if !r.Attrs.IsControl() {
				out = append(out, r)
			}
		})
		if last >= end.Offset-1 {
			return out
		}
	}
}

// waitMirrored polls until every partition of the target topic holds as many committed
// records as the source one (offsets do not tell: transaction markers take offsets too).
func waitMirrored(t *testing.T, p pair, topic string, partitions int32) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for {
		done := true
		var status []string
		for part := int32(0); part < partitions; part++ {
			s, d := countRecords(t, p.src, topic, part), countRecords(t, p.dst, topic, part)
			status = append(status, fmt.Sprintf("%d: %d/%d", part, d, s))
			done = done && d >= s
		}
		if done {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("topic %s not mirrored in time (partition: target/source records): %v", topic, status)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// waitProduced polls until the target's log end of every partition reaches the source's: the
// records are written, committed or not.
func waitProduced(t *testing.T, p pair, topic string, partitions int32) {
	t.Helper()
	srcAdm, dstAdm := kadm.NewClient(testkit.Client(t, p.src)), kadm.NewClient(testkit.Client(t, p.dst))
	waitFor(t, "records produced to "+topic, func() bool {
		ctx := context.Background()
		se, err1 := srcAdm.ListEndOffsets(ctx, topic)
		de, err2 := dstAdm.ListEndOffsets(ctx, topic)
		done := err1 == nil && err2 == nil
		for part := int32(0); done && part < partitions; part++ {
			s, _ := se.Lookup(topic, part)
			d, ok := de.Lookup(topic, part)
			done = ok && d.Err == nil && d.Offset >= s.Offset
		}
		return done
	})
}

// countRecords counts the committed records of topic/partition on c (0 when it has none or
// the topic does not exist yet).
func countRecords(t *testing.T, c *kfake.Cluster, topic string, partition int32) int {
	t.Helper()
	return int(countData(t, c, topic, partition, true))
}

// countData counts the data records of topic/partition on c, transaction markers left out:
// with committed, what read_committed reads up to the last stable offset; without, every
// record written up to the log end, aborted or in an open transaction too.
func countData(t *testing.T, c *kfake.Cluster, topic string, partition int32, committed bool) int64 {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	iso := kgo.ReadUncommitted()
	if committed {
		iso = kgo.ReadCommitted()
	}
	cl, err := kgo.NewClient(append(seeds(c),
		kgo.ConsumePartitions(map[string]map[int32]kgo.Offset{topic: {partition: kgo.NewOffset().AtStart()}}),
		kgo.FetchIsolationLevel(iso), kgo.KeepControlRecords())...)
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	list := kadm.NewClient(cl).ListEndOffsets
	if committed {
		list = kadm.NewClient(cl).ListCommittedOffsets
	}
	ends, err := list(ctx, topic)
	if err != nil {
		return 0
	}
	end, ok := ends.Lookup(topic, partition)
	if !ok || end.Err != nil || end.Offset == 0 {
		return 0
	}
	var n int64
	for last := int64(-1); last < end.Offset-1; {
		fs := cl.PollFetches(ctx)
		if ctx.Err() != nil {
			t.Fatalf("count %s/%d: timed out at %d records (end %d)", topic, partition, n, end.Offset)
		}
		fs.EachRecord(func(r *kgo.Record) {
			if r.Offset >= end.Offset {
				return
			}
			last = r.Offset
			if !r.Attrs.IsControl() {
				n++
			}
		})
	}
	return n
}

// sameRecords fails unless the target partition holds exactly the source's records, in order:
// key, value, headers and timestamp identical, no duplicate, nothing missing.
func sameRecords(t *testing.T, p pair, topic string, partition int32) {
	t.Helper()
	src := readAll(t, p.src, topic, partition)
	dst := readAll(t, p.dst, topic, partition)
	if len(dst) != len(src) {
		t.Fatalf("%s/%d: got %d target records, want %d", topic, partition, len(dst), len(src))
	}
	for i := range src {
		s, d := src[i], dst[i]
		if diff := offsetmap.DiffFields(s, d, offsetmap.FieldKey|offsetmap.FieldValue|offsetmap.FieldHeaders|offsetmap.FieldTimestamp); len(diff) > 0 {
			t.Fatalf("%s/%d: source offset %d / target offset %d differ in %v", topic, partition, s.Offset, d.Offset, diff)
		}
		if (s.Key == nil) != (d.Key == nil) {
			t.Fatalf("%s/%d: source offset %d: null key not preserved", topic, partition, s.Offset)
		}
	}
}

func testConfig(topic string) mirror.Config {
	return mirror.Config{
		SourceAlias:      "A",
		TargetAlias:      "B",
		Topics:           []string{topic},
		RefreshTopics:    true,
		SyncTopicConfigs: true,
		CommitLatency:    100 * time.Millisecond,
		// kfake has one broker
		ReplicationFactor:         1,
		InternalReplicationFactor: 1,
	}
}

func testLogger(t *testing.T) *slog.Logger {
	if testing.Verbose() {
		return slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelDebug})).With("test", t.Name())
	}
	return nil
}

// start runs an engine until the returned stop function is called; stop returns Run's error.
func start(t *testing.T, p pair, cfg mirror.Config) (*mirror.Engine, func() error) {
	t.Helper()
	e, err := mirror.New(cfg, seeds(p.src), seeds(p.dst), testLogger(t))
	if err != nil {
		t.Fatal(err)
	}
	return e, run(t, e)
}

// run runs e until the returned stop function is called; stop returns Run's error.
func run(t *testing.T, e *mirror.Engine) func() error {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() {
		err := e.Run(ctx)
		if err != nil && ctx.Err() == nil {
			t.Logf("Run stopped early: %v", err)
		}
		done <- err
	}()
	var once sync.Once
	var runErr error
	stop := func() error {
		once.Do(func() {
			cancel()
			select {
			case runErr = <-done:
			case <-time.After(40 * time.Second):
				runErr = fmt.Errorf("engine did not stop in 40s")
			}
		})
		return runErr
	}
	t.Cleanup(func() { stop() })
	return stop
}

// checkMap fails unless the engine's map of the partition is proven by content: every
// segment maps each source record to a target record with the same fingerprint, the map
// covers the n source records (a source without gaps), and Translate(n) is one past the
// target copy of the last record.
func checkMap(t *testing.T, p pair, e *mirror.Engine, topic string, partition int32, n int64) {
	t.Helper()
	pm, ok := e.Map(topic, partition)
	if !ok {
		t.Fatalf("%s/%d: engine does not own the partition", topic, partition)
	}
	byOffset := func(recs []*kgo.Record) map[int64]uint64 {
		out := make(map[int64]uint64, len(recs))
		for _, r := range recs {
			out[r.Offset] = offsetmap.Fingerprint(r, offsetmap.DefaultFields)
		}
		return out
	}
	dstRecs := readAll(t, p.dst, topic, partition)
	src, dst := byOffset(readAll(t, p.src, topic, partition)), byOffset(dstRecs)
	var covered int64
	for _, s := range pm.Segments {
		for i := int64(0); i < s.Len; i++ {
			sp, ok1 := src[s.Source+i]
			dp, ok2 := dst[s.Target+i]
			if !ok1 || !ok2 || sp != dp {
				t.Fatalf("%s/%d: segment %+v: source offset %d (found %v) and target offset %d (found %v) are not the same record",
					topic, partition, s, s.Source+i, ok1, s.Target+i, ok2)
			}
		}
		covered += s.Len
	}
	if covered != n {
		t.Errorf("%s/%d: map covers %d records, want %d", topic, partition, covered, n)
	}
	if int64(len(dstRecs)) < n {
		t.Fatalf("%s/%d: target holds %d records, want %d", topic, partition, len(dstRecs), n)
	}
	want := dstRecs[n-1].Offset + 1
	tr, ok := e.Translate(topic, partition, n)
	if !ok || tr.Target != want {
		t.Errorf("%s/%d: Translate(%d) = %+v, %v; want target %d", topic, partition, n, tr, ok, want)
	}
	if _, ok := e.Translate(topic, partition, n+5); ok {
		t.Errorf("%s/%d: Translate beyond the mirrored end must be pending", topic, partition)
	}
}

// mirroredExactly waits until every partition of topic is mirrored, then checks that the
// target holds each source record once and that e's map is complete to n and exact.
func mirroredExactly(t *testing.T, p pair, e *mirror.Engine, topic string, parts int32, n int64) {
	t.Helper()
	waitMirrored(t, p, topic, parts)
	for part := int32(0); part < parts; part++ {
		sameRecords(t, p, topic, part)
		mapComplete(t, e, topic, part, n)
		checkMap(t, p, e, topic, part, n)
	}
}

// mapComplete waits until the engine translates source offset n of the partition.
func mapComplete(t *testing.T, e *mirror.Engine, topic string, partition int32, n int64) {
	t.Helper()
	waitFor(t, fmt.Sprintf("map of %s/%d complete to %d", topic, partition, n), func() bool {
		_, ok := e.Translate(topic, partition, n)
		return ok
	})
}

func TestMirrorDataPath(t *testing.T) {
	t.Parallel()
	p := newPair(t)
	const topic, parts = "orders-datapath", 3
	retention := "3600000"
	testkit.CreateTopic(t, testkit.Client(t, p.src), topic, parts, map[string]*string{"retention.ms": &retention})
	produce(t, p.src, topic, parts, 0, 200)

	e, stop := start(t, p, testConfig(topic))
	waitMirrored(t, p, topic, parts)
	produce(t, p.src, topic, parts, 200, 50) // while running
	mirroredExactly(t, p, e, topic, parts, 250)
	var metrics bytes.Buffer
	e.WriteMetrics(&metrics)
	if !strings.Contains(metrics.String(), "kmirror_records_total 750") {
		t.Errorf("metrics: got\n%s\nwant kmirror_records_total 750", metrics.String())
	}
	if err := stop(); err != nil {
		t.Fatalf("Run: %v", err)
	}

	// The target topic got the source's partition count and its own configuration override.
	adm := kadm.NewClient(testkit.Client(t, p.dst))
	rcs, err := adm.DescribeTopicConfigs(context.Background(), topic)
	if err != nil {
		t.Fatal(err)
	}
	rc, _ := rcs.On(topic, nil)
	found := false
	for _, c := range rc.Configs {
		if c.Key == "retention.ms" && c.Value != nil && *c.Value == retention {
			found = true
		}
	}
	if !found {
		t.Errorf("target topic config retention.ms not synced")
	}

	// The persisted map says the same as the in-memory one.
	persisted := readPersisted(t, p, "kmirror-offsets.A.internal")
	for part := int32(0); part < parts; part++ {
		segs := persisted[fmt.Sprintf("%s/%d", topic, part)]
		var covered int64
		for _, s := range segs {
			covered += s.Len
		}
		if covered != 250 {
			t.Errorf("%s/%d: persisted map covers %d records, want 250 (%v)", topic, part, covered, segs)
		}
	}
}

// readPersisted reads the map topic: the last record per key, grouped by "topic/partition".
func readPersisted(t *testing.T, p pair, mapTopic string) map[string][]offsetmap.Segment {
	t.Helper()
	latest := map[string]map[int64]offsetmap.Segment{}
	for _, r := range readAll(t, p.dst, mapTopic, 0) {
		if mirror.IsIdentityRecord(r.Key, r.Value) || mirror.IsSchemeRecord(r.Key, r.Value) || mirror.IsHistoryRecord(r.Key, r.Value) {
			continue
		}
		if r.Value == nil { // a compacted segment's tombstone
			topic, part, src, err := mirror.DecodeMapKey(r.Key)
			if err != nil {
				t.Fatalf("tombstone at offset %d: %v", r.Offset, err)
			}
			delete(latest[fmt.Sprintf("%s/%d", topic, part)], src)
			continue
		}
		topic, part, src, dst, n, err := mirror.DecodeMapRecord(r.Key, r.Value)
		if err != nil {
			t.Fatalf("map record at offset %d: %v", r.Offset, err)
		}
		k := fmt.Sprintf("%s/%d", topic, part)
		if latest[k] == nil {
			latest[k] = map[int64]offsetmap.Segment{}
		}
		latest[k][src] = offsetmap.Segment{Source: src, Target: dst, Len: n}
	}
	out := map[string][]offsetmap.Segment{}
	for k, m := range latest {
		for _, s := range m {
			out[k] = append(out[k], s)
		}
	}
	return out
}

// waitFor waits up to 30 s for cond with testkit.WaitFor. Its conditions say what is still
// missing; these tests' conditions are yes-or-no, with nothing more to say.
func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	testkit.WaitFor(t, what, 30*time.Second, func() string {
		if cond() {
			return ""
		}
		return "not yet"
	})
}

// TestMirrorResumeAfterCrash kills an engine after it produced records but before it persisted
// them; the next engine must find them on the target's tail: no duplicate, no gap.
func TestMirrorResumeAfterCrash(t *testing.T) {
	t.Parallel()
	// With transactions the crashed engine's open transaction is aborted by the next owner
	// and mirrored again; without, the records it produced are found by the tail check.
	for _, fencing := range []string{mirror.FenceTransactions, mirror.FenceNone} {
		t.Run(fencing, func(t *testing.T) {
			t.Parallel()
			p := newPair(t)
			const topic, parts = "orders-crash", 2
			testkit.CreateTopic(t, testkit.Client(t, p.src), topic, parts, nil)
			produce(t, p.src, topic, parts, 0, 300)

			cfg := testConfig(topic)
			cfg.Fencing = fencing
			e1, err := mirror.New(cfg, seeds(p.src), seeds(p.dst), testLogger(t))
			if err != nil {
				t.Fatal(err)
			}
			e1.HoldCommits() // nothing but the origin is persisted before the crash
			stop1 := run(t, e1)
			waitProduced(t, p, topic, parts) // produced, never committed
			e1.Crash()
			if err := stop1(); err != nil {
				t.Fatalf("Run: %v", err)
			}
			for k, segs := range readPersisted(t, p, "kmirror-offsets.A.internal") {
				for _, s := range segs {
					if s.Len != 0 {
						t.Fatalf("%s: got persisted segment %+v before the crash, want origins only (the test must crash before persisting)", k, s)
					}
				}
			}

			produce(t, p.src, topic, parts, 300, 100)
			cfg2 := testConfig(topic)
			cfg2.Fencing = fencing
			e2, stop2 := start(t, p, cfg2)
			mirroredExactly(t, p, e2, topic, parts, 400)
			if err := stop2(); err != nil {
				t.Fatalf("Run: %v", err)
			}
		})
	}
}

// TestMirrorScaleOut runs two engines of one flow: they share the partitions, and when one
// leaves the other takes its partitions over without loss or duplicates.
func TestMirrorScaleOut(t *testing.T) {
	t.Parallel()
	p := newPair(t)
	const topic, parts = "orders-scale", 6
	testkit.CreateTopic(t, testkit.Client(t, p.src), topic, parts, nil)
	produce(t, p.src, topic, parts, 0, 100)

	e1, stop1 := start(t, p, testConfig(topic))
	waitMirrored(t, p, topic, parts)
	e2, stop2 := start(t, p, testConfig(topic))
	waitFor(t, "both engines own partitions", func() bool {
		return count(e1.Owned()) > 0 && count(e2.Owned()) > 0 && count(e1.Owned())+count(e2.Owned()) == parts
	})
	produce(t, p.src, topic, parts, 100, 100)
	waitMirrored(t, p, topic, parts)
	if err := stop1(); err != nil {
		t.Fatalf("Run 1: %v", err)
	}
	waitFor(t, "engine 2 owns every partition", func() bool { return count(e2.Owned()) == parts })
	produce(t, p.src, topic, parts, 200, 100)
	mirroredExactly(t, p, e2, topic, parts, 300)
	if err := stop2(); err != nil {
		t.Fatalf("Run 2: %v", err)
	}
}

func count(m map[string][]int32) int {
	n := 0
	for _, ps := range m {
		n += len(ps)
	}
	return n
}

// TestMirrorTransactions mirrors a topic with committed and aborted transactions: aborted
// records are not copied, markers are gaps in the map, and a group at the source end
// translates to the target end.
func TestMirrorTransactions(t *testing.T) {
	t.Parallel()
	p := newPair(t)
	const topic = "orders-txn"
	testkit.CreateTopic(t, testkit.Client(t, p.src), topic, 1, nil)
	cl := testkit.Client(t, p.src, kgo.TransactionalID("txn-test"))
	ctx := context.Background()
	want := 0
	for batch := 0; batch < 6; batch++ {
		if err := cl.BeginTransaction(); err != nil {
			t.Fatal(err)
		}
		for i := 0; i < 10; i++ {
			cl.Produce(ctx, &kgo.Record{Topic: topic, Value: fmt.Appendf(nil, "b%d-%d", batch, i)}, nil)
		}
		if err := cl.Flush(ctx); err != nil {
			t.Fatal(err)
		}
		commit := kgo.TryCommit
		if batch%3 == 1 {
			commit = kgo.TryAbort
		} else {
			want += 10
		}
		if err := cl.EndTransaction(ctx, commit); err != nil {
			t.Fatal(err)
		}
	}
	srcEnd := int64(6*10 + 6) // records and one marker per transaction

	e, stop := start(t, p, testConfig(topic))
	waitFor(t, "transactional topic mirrored", func() bool {
		tr, ok := e.Translate(topic, 0, srcEnd)
		return ok && tr.Target == int64(want)
	})
	got := readAll(t, p.dst, topic, 0)
	if len(got) != want {
		t.Fatalf("got %d target records, want %d (committed only)", len(got), want)
	}
	for _, r := range got {
		if bytes.HasPrefix(r.Value, []byte("b1-")) || bytes.HasPrefix(r.Value, []byte("b4-")) {
			t.Fatalf("aborted record %q mirrored", r.Value)
		}
	}
	pm, _ := e.Map(topic, 0)
	if len(pm.Segments) != 4 {
		t.Errorf("got %d segments, want 4 (one per committed transaction): %+v", len(pm.Segments), pm.Segments)
	}
	// A group between two committed transactions (at the marker) translates to just after
	// the last record before it.
	tr, ok := e.Translate(topic, 0, 11)
	if !ok || tr.Target != 10 {
		t.Errorf("Translate(11) = %+v, %v; want target 10", tr, ok)
	}
	if err := stop(); err != nil {
		t.Fatalf("Run: %v", err)
	}
}

// TestMirrorGroupSyncAndOffsetSyncs runs the engine from an mm2.properties flow with group
// offset sync on: a source group's offset arrives on the target translated exactly (the
// target topic held 10 foreign records per partition before mirroring, so E(G) = G + 10), and
// MM2-format offset syncs are written at the first record and at every discontinuity.
func TestMirrorGroupSyncAndOffsetSyncs(t *testing.T) {
	t.Parallel()
	p := newPair(t)
	const topic, parts, group = "orders-groups", 2, "billing"
	testkit.CreateTopic(t, testkit.Client(t, p.src), topic, parts, nil)
	testkit.CreateTopic(t, testkit.Client(t, p.dst), topic, parts, nil)
	produce(t, p.dst, topic, parts, 0, 10) // foreign records already on the target
	produce(t, p.src, topic, parts, 0, 100)
	ctx := context.Background()
	srcAdm := kadm.NewClient(testkit.Client(t, p.src))
	commits := kadm.Offsets{}
	commits.Add(kadm.Offset{Topic: topic, Partition: 0, At: 40, LeaderEpoch: -1})
	commits.Add(kadm.Offset{Topic: topic, Partition: 1, At: 100, LeaderEpoch: -1})
	if _, err := srcAdm.CommitOffsets(ctx, group, commits); err != nil {
		t.Fatal(err)
	}

	f, cfgFile := flowOf(t, fmt.Sprintf(`clusters=A,B
A.bootstrap.servers=%s
B.bootstrap.servers=%s
A->B.enabled=true
A->B.topics=%s
replication.policy.class=org.apache.kafka.connect.mirror.IdentityReplicationPolicy
replication.factor=1
offset-syncs.topic.replication.factor=1
checkpoints.topic.replication.factor=1
offset-syncs.topic.location=target
sync.group.offsets.enabled=true
sync.group.offsets.interval.seconds=1
emit.checkpoints.interval.seconds=1
`, strings.Join(p.src.ListenAddrs(), ","), strings.Join(p.dst.ListenAddrs(), ","), topic))
	cfg, _, err := mirror.FromFlow(f, cfgFile.Cluster["A"], cfgFile.Cluster["B"])
	if err != nil {
		t.Fatal(err)
	}
	cfg.CommitLatency = 100 * time.Millisecond
	// Group sync lists the source groups once per refresh.groups.interval.seconds (600 s by
	// default), not at every pass: count the ListGroups requests the source answers.
	var listGroups atomic.Int32
	p.src.ControlKey(int16(kmsg.ListGroups), func(kmsg.Request) (kmsg.Response, error, bool) {
		listGroups.Add(1)
		return nil, nil, false
	})
	// All of a partition's records in one transaction, so that E(G) and the offset syncs are
	// known: commits wait until every record was produced.
	e, err := mirror.New(cfg, seeds(p.src), seeds(p.dst), testLogger(t))
	if err != nil {
		t.Fatal(err)
	}
	e.HoldCommits()
	stop := run(t, e)
	waitFor(t, "every record produced, none committed", func() bool {
		for part := int32(0); part < parts; part++ {
			if countData(t, p.dst, topic, part, false) < 10+100 {
				return false
			}
		}
		return true
	})
	e.ReleaseCommits()

	dstAdm := kadm.NewClient(testkit.Client(t, p.dst))
	targetAt := func(want0, want1 int64) func() bool {
		return func() bool {
			got, err := dstAdm.FetchOffsets(ctx, group)
			if err != nil {
				return false
			}
			o0, ok0 := got.Lookup(topic, 0)
			o1, ok1 := got.Lookup(topic, 1)
			return ok0 && ok1 && o0.At == want0 && o1.At == want1
		}
	}
	// Partition 1's group is at the source's end: past the commit marker that ends the
	// target log (110), where read_committed and read_uncommitted readers both start.
	waitFor(t, "target group offsets", targetAt(50, 111))
	// A later pass fetches the known group's new offset without listing the groups again.
	commits = kadm.Offsets{}
	commits.Add(kadm.Offset{Topic: topic, Partition: 0, At: 60, LeaderEpoch: -1})
	if _, err := srcAdm.CommitOffsets(ctx, group, commits); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "target group offsets after a new source commit", targetAt(70, 111))
	if n := listGroups.Load(); n != 1 {
		t.Errorf("source answered %d ListGroups requests, want 1 (groups listed again before refresh.groups.interval.seconds)", n)
	}

	syncs, err := mm2.ReadOffsetSyncs(ctx, testkit.Client(t, p.dst), cfg.OffsetSyncsTopic)
	if err != nil {
		t.Fatal(err)
	}
	byPart := map[int32][]mm2.OffsetSync{}
	for _, s := range syncs {
		byPart[s.Partition] = append(byPart[s.Partition], s)
	}
	for part := int32(0); part < parts; part++ {
		got := byPart[part]
		if len(got) != 1 || got[0].Topic != topic || got[0].Upstream != 0 || got[0].Downstream != 10 {
			t.Errorf("partition %d: got offset syncs %+v, want one sync 0 -> 10", part, got)
		}
	}
	if err := stop(); err != nil {
		t.Fatalf("Run: %v", err)
	}
}

// refuseProduce makes c answer every Produce request with err for each partition as long as
// refuse says so; from the first request it does not, c handles them as usual.
func refuseProduce(c *kfake.Cluster, err *kerr.Error, refuse func() bool) {
	c.ControlKey(int16(kmsg.Produce), func(kr kmsg.Request) (kmsg.Response, error, bool) {
		if !refuse() {
			c.DropControl()
			return nil, nil, false
		}
		c.KeepControl()
		req := kr.(*kmsg.ProduceRequest)
		resp := req.ResponseKind().(*kmsg.ProduceResponse)
		for _, rt := range req.Topics {
			st := kmsg.NewProduceResponseTopic()
			st.Topic, st.TopicID = rt.Topic, rt.TopicID
			for _, rp := range rt.Partitions {
				sp := kmsg.NewProduceResponseTopicPartition()
				sp.Partition, sp.ErrorCode = rp.Partition, err.Code
				st.Partitions = append(st.Partitions, sp)
			}
			resp.Topics = append(resp.Topics, st)
		}
		return resp, nil, true
	})
}

// TestMirrorStopsOnProduceError makes the target refuse every record with a non-retriable
// error once the engine owns its partition and the source has no more records to send. Run
// must stop with the produce error at once: a fatal error has to end the wait for the next
// fetch, not only be noticed when the source has another record.
func TestMirrorStopsOnProduceError(t *testing.T) {
	t.Parallel()
	p := newPair(t)
	const topic = "orders-refused"
	testkit.CreateTopic(t, testkit.Client(t, p.src), topic, 1, nil)
	e, err := mirror.New(testConfig(topic), seeds(p.src), seeds(p.dst), testLogger(t))
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	done := make(chan error, 1)
	go func() { done <- e.Run(ctx) }()
	waitFor(t, "the engine owns the partition", func() bool { return len(e.Owned()[topic]) == 1 })

	refuseProduce(p.dst, kerr.TopicAuthorizationFailed, func() bool { return true })
	produce(t, p.src, topic, 1, 0, 10) // the last source records: no fetch returns after them

	select {
	case err := <-done:
		if err == nil || !strings.Contains(err.Error(), "produce to topic "+topic+" partition 0") {
			t.Fatalf("Run: got %v, want the produce error of %s partition 0", err, topic)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("Run still running 30s after a produce failed fatally: the poll loop waits for records that never come")
	}
}

// TestMirrorWarnsWhenTargetStalls makes the target refuse every record with a retriable error
// (NOT_ENOUGH_REPLICAS, as a target short of in-sync replicas for acks=all does). franz-go
// retries without end and logs nothing above debug, so the engine must warn that the
// partition waits for the target; once the target takes records again, everything arrives.
func TestMirrorWarnsWhenTargetStalls(t *testing.T) {
	t.Parallel()
	p := newPair(t)
	const topic = "orders-stalled"
	testkit.CreateTopic(t, testkit.Client(t, p.src), topic, 1, nil)
	var logs testkit.SyncBuffer
	log := slog.New(slog.NewTextHandler(&logs, &slog.HandlerOptions{Level: slog.LevelWarn}))
	e, err := mirror.New(testConfig(topic), seeds(p.src), seeds(p.dst), log)
	if err != nil {
		t.Fatal(err)
	}
	e.SetStallAfter(300 * time.Millisecond)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	done := make(chan error, 1)
	go func() { done <- e.Run(ctx) }()
	waitFor(t, "the engine owns the partition", func() bool { return len(e.Owned()[topic]) == 1 })

	var refuse atomic.Bool
	refuse.Store(true)
	refuseProduce(p.dst, kerr.NotEnoughReplicas, refuse.Load)
	defer func() {
		if t.Failed() {
			t.Logf("log:\n%s", logs.String())
		}
	}()
	produce(t, p.src, topic, 1, 0, 10)
	waitFor(t, "a warning that the partition waits for the target", func() bool {
		for _, line := range strings.Split(logs.String(), "\n") {
			if strings.Contains(line, `msg="partition not progressing"`) && strings.Contains(line, "topic="+topic+" partition=0") &&
				strings.Contains(line, "waiting_for=target cluster=B in_flight=10") {
				return true
			}
		}
		return false
	})
	refuse.Store(false)
	waitMirrored(t, p, topic, 1)
	cancel()
	if err := <-done; err != nil {
		t.Fatalf("Run: %v", err)
	}
}

// freezeTarget makes the target answer no produce and no end of transaction, as a broker
// that is frozen (a paused process, a blackholed network) answers nothing, until the
// returned function is called.
func freezeTarget(p pair) (thaw func()) {
	var frozen atomic.Bool
	frozen.Store(true)
	for _, key := range []kmsg.Key{kmsg.Produce, kmsg.EndTxn} {
		p.dst.ControlKey(int16(key), func(kmsg.Request) (kmsg.Response, error, bool) {
			if !frozen.Load() {
				p.dst.DropControl()
				return nil, nil, false
			}
			p.dst.KeepControl()
			return nil, nil, true // no answer: the client's request times out
		})
	}
	return func() { frozen.Store(false) }
}

// TestMirrorExitsAfterStalledCommit freezes the target for good while a transaction is open.
// The commit must fail on its bound and Run must then return that error within the drain's
// bound: a process that stops mirroring must exit, so that its supervisor restarts it, and
// must not hang in its drain after its commit timed out.
func TestMirrorExitsAfterStalledCommit(t *testing.T) {
	t.Parallel()
	done := runFrozen(t, "orders-frozen", 2, nil)
	runFails(t, done, "after the target froze (commit bound 2s, drain bound 2s)", "within 2s (the commit bound)")
}

// TestMirrorBoundsRevokeOnStalledTarget loses the source-group session while records are in
// flight to a target that never answers again, with no commit under way (commits held): Run
// must stop within the commit bound with an error naming the revoked partition. A
// revoked partition is no longer owned, so no commit of it bounds the wait: the revoke bounds
// it itself, as it does when a target thaws holding a transaction in PrepareCommit and the
// source then drops off the network and the session ends.
func TestMirrorBoundsRevokeOnStalledTarget(t *testing.T) {
	t.Parallel()
	p := newPair(t)
	const topic = "orders-revoke-stalled"
	testkit.CreateTopic(t, testkit.Client(t, p.src), topic, 1, nil)
	e, done := runBounded(t, p, testConfig(topic), (*mirror.Engine).HoldCommits)
	waitFor(t, "the engine owns the partition", func() bool { return len(e.Owned()[topic]) == 1 })
	// The target takes the produce request of the mirrored topic and never answers it.
	arrived := swallowProduce(t, p, topic)
	produce(t, p.src, topic, 1, 0, 10)
	select {
	case <-arrived:
	case <-time.After(30 * time.Second):
		t.Fatal("kmirror sent no produce request to the target within 30s")
	}
	// The session ends: the next heartbeat is answered UNKNOWN_MEMBER_ID, and the group's
	// lost callback revokes the partition.
	p.src.ControlKey(int16(kmsg.Heartbeat), func(req kmsg.Request) (kmsg.Response, error, bool) {
		resp := req.(*kmsg.HeartbeatRequest).ResponseKind().(*kmsg.HeartbeatResponse)
		resp.ErrorCode = kerr.UnknownMemberID.Code
		return resp, nil, true
	})
	runFails(t, done, "after the session ended over a frozen target (commit bound 2s, drain bound 2s)",
		"revoke of topic "+topic+" partition 0", "records in flight within 2s (the commit bound)")
}

// runBounded runs an engine of cfg with commit and drain bounds of 2 s until the test ends,
// after calling each of setup on it; the channel gets Run's answer.
func runBounded(t *testing.T, p pair, cfg mirror.Config, setup ...func(*mirror.Engine)) (*mirror.Engine, <-chan error) {
	t.Helper()
	e, err := mirror.New(cfg, seeds(p.src), seeds(p.dst), testLogger(t))
	if err != nil {
		t.Fatal(err)
	}
	e.SetTimeouts(2*time.Second, 2*time.Second)
	for _, f := range setup {
		f(e)
	}
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	done := make(chan error, 1)
	go func() { done <- e.Run(ctx) }()
	return e, done
}

// runFrozen runs an engine with commit and drain bounds of 2 s on a new topic of parts
// partitions, has it mirror 100 records a partition, then calls before (when not nil) and
// freezes the target for good (freezeTarget) with 100 more records a partition to send. It
// returns Run's answer: a commit that cannot end.
func runFrozen(t *testing.T, topic string, parts int32, before func(p pair)) <-chan error {
	t.Helper()
	p := newPair(t)
	testkit.CreateTopic(t, testkit.Client(t, p.src), topic, parts, nil)
	_, done := runBounded(t, p, testConfig(topic))
	produce(t, p.src, topic, parts, 0, 100)
	waitProduced(t, p, topic, parts)
	if before != nil {
		before(p)
	}
	t.Cleanup(freezeTarget(p))
	produce(t, p.src, topic, parts, 100, 100)
	return done
}

// TestMirrorResumesAfterTargetThaws freezes the target for a few seconds while transactions
// are open, then lets it answer again: the open commits must complete once the client's
// requests time out and are sent again, with every record mirrored once and no fatal error.
func TestMirrorResumesAfterTargetThaws(t *testing.T) {
	t.Parallel()
	p := newPair(t)
	const topic = "orders-thawed"
	testkit.CreateTopic(t, testkit.Client(t, p.src), topic, 2, nil)
	e, stop := start(t, p, testConfig(topic))
	produce(t, p.src, topic, 2, 0, 100)
	waitProduced(t, p, topic, 2)
	thaw := freezeTarget(p)
	produce(t, p.src, topic, 2, 100, 100)
	time.Sleep(3 * time.Second) // the length of the outage, not a wait for a condition
	thaw()
	waitMirrored(t, p, topic, 2)
	for part := range int32(2) {
		sameRecords(t, p, topic, part)
	}
	if err := stop(); err != nil {
		t.Fatalf("Run: %v", err)
	}
	_ = e
}

// TestMirrorBoundsMapWriteOnStalledTarget: the target acknowledges a commit's records, then
// never answers the produce request of its offset map records (a target that froze between
// the two). The commit must still end within the commit bound, with an error naming the
// transaction and the bound, instead of waiting for the map records however long the target
// takes.
func TestMirrorBoundsMapWriteOnStalledTarget(t *testing.T) {
	t.Parallel()
	p := newPair(t)
	const topic = "orders-map-stalled"
	testkit.CreateTopic(t, testkit.Client(t, p.src), topic, 1, nil)
	cfg := testConfig(topic)
	e, done := runBounded(t, p, cfg)
	waitFor(t, "the engine owns the partition", func() bool { return len(e.Owned()[topic]) == 1 })
	// The map topic exists once the engine owns a partition (it writes the origin first).
	arrived := swallowProduce(t, p, e.Config().MapTopic)
	produce(t, p.src, topic, 1, 0, 10)
	select {
	case <-arrived:
	case <-time.After(30 * time.Second):
		t.Fatal("kmirror wrote no offset map record to the target within 30s")
	}
	runFails(t, done, "after the target froze on the map records (commit bound 2s)", "write offset map of transaction", "(the commit bound)")
}

// runFails waits up to 60 s for Run's answer on done and fails the test unless it is an error
// holding every one of wants; when Run is still running then, it fails with every goroutine's
// stack. after says what the wait began with.
func runFails(t *testing.T, done <-chan error, after string, wants ...string) {
	t.Helper()
	select {
	case err := <-done:
		for _, want := range wants {
			if err == nil || !strings.Contains(err.Error(), want) {
				t.Fatalf("Run: got %v, want an error with %q", err, want)
			}
		}
		t.Logf("Run returned: %v", err)
	case <-time.After(60 * time.Second):
		buf := make([]byte, 1<<20)
		t.Fatalf("Run still running 60s %s:\n%s", after, buf[:runtime.Stack(buf, true)])
	}
}

// swallowProduce makes the target take every produce request to topic (named, or from
// version 13 by its ID) and never answer it, as a frozen broker does; the channel is closed
// when the first arrives.
func swallowProduce(t *testing.T, p pair, topic string) <-chan struct{} {
	t.Helper()
	tds, err := kadm.NewClient(testkit.Client(t, p.dst)).ListTopics(context.Background(), topic)
	if err != nil || tds[topic].Err != nil {
		t.Fatalf("describe the target topic %s: %v %v", topic, err, tds[topic].Err)
	}
	id := tds[topic].ID
	arrived := make(chan struct{})
	var once sync.Once
	p.dst.ControlKey(int16(kmsg.Produce), func(req kmsg.Request) (kmsg.Response, error, bool) {
		p.dst.KeepControl()
		for _, tt := range req.(*kmsg.ProduceRequest).Topics {
			if tt.Topic == topic || tt.TopicID == id {
				once.Do(func() { close(arrived) })
				return nil, nil, true
			}
		}
		return nil, nil, false
	})
	return arrived
}
