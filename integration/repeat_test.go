package integration

import (
	"context"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/kmigrate/kmigrate/integration/cluster"
	"github.com/kmigrate/kmigrate/logread"
	"github.com/kmigrate/kmigrate/offsetmap"
	"github.com/kmigrate/kmigrate/reconcile"
)

// kreconcile's exactness on repeating data, judged on real brokers by Kafka's console consumer.
//
// The data is what status events and log lines look like: null keys, five values
// ("status-0".."status-4") in runs of 1 to 40 identical records, one timestamp for every
// record. Two groups commit on the source: rr-edge at the end of partition 0 and at run
// boundaries near 1000 and 1500 of partitions 1 and 2 (the records at G-1 and G differ),
// rr-inside at run boundaries of partitions 0 and 2 and in the middle of a long run of
// identical records on partition 1. After kreconcile groups --apply Kafka's console consumer
// in each group on the target (its default isolation, read_uncommitted; no auto-commit) must
// read, per partition kreconcile answered, exactly the values the group had left on the
// source, in order, up to the target's end (the records of aborted transactions that
// kreconcile lists ahead of E(G) aside, which such a consumer reads too); a partition
// kreconcile refused must be unmappable with a reason that names it. Beyond that:
//   - MirrorMaker 2's lanes may refuse a position content cannot prove (the table says so);
//     what they answer must be exact;
//   - in kmirror's lane every answer comes from kmirror's offset map where the map it
//     persisted on the target covers G (its source range holds G and a mirrored record below
//     it), and kmirror is killed -9 once with a transaction open while the source is at about
//     600 records per partition, below every G: the target holds aborted records and their
//     copies again, but none ahead of E(G);
//   - for MirrorMaker 2 a G inside a run is answered only when every best explanation copies
//     the whole run once (docs/design.md), else refused.

const (
	rrParts   = 3
	rrPerPart = 3000
	rrMaxRun  = 40
	// rrFirst records of each partition are on the source before kmirror starts; the rest
	// trickle in while it runs and is killed, so the kill leaves aborted records and their
	// replays on the target well below every committed offset (the lowest is about 1000).
	rrFirst = 600
)

// rrValues are rrPerPart values per partition in runs of 1..rrMaxRun identical values, two
// runs in a row never equal; the same for every lane.
func rrValues() [rrParts][][]byte {
	var out [rrParts][][]byte
	for p := range rrParts {
		rng := rand.New(rand.NewPCG(2026, uint64(p)))
		last := -1
		for len(out[p]) < rrPerPart {
			v := rng.IntN(5)
			if v == last {
				v = (v + 1 + rng.IntN(4)) % 5
			}
			last = v
			for range min(1+rng.IntN(rrMaxRun), rrPerPart-len(out[p])) {
				out[p] = append(out[p], fmt.Appendf(nil, "status-%d", v))
			}
		}
	}
	return out
}

// rrRecords are the records of vals[from:to], null keys, all with timestamp ts.
func rrRecords(vals [][]byte, from, to int, ts time.Time) []*kgo.Record {
	out := make([]*kgo.Record, 0, to-from)
	for _, v := range vals[from:to] {
		out = append(out, &kgo.Record{Value: v, Timestamp: ts})
	}
	return out
}

// rrPos is a group's committed offset G on one source partition.
type rrPos struct {
	group  string
	part   int32
	g      int64
	inside bool // G-1 and G hold identical records
}

// rrBoundary is the first offset at or after from where the value changes.
func rrBoundary(vals [][]byte, from int) int64 {
	for b := max(from, 1); b < len(vals); b++ {
		if string(vals[b-1]) != string(vals[b]) {
			return int64(b)
		}
	}
	return int64(len(vals))
}

// rrInside is the middle of the first run of at least 20 identical values starting at or
// after from.
func rrInside(vals [][]byte, from int) int64 {
	for s := from; s < len(vals); {
		e := s + 1
		for e < len(vals) && string(vals[e]) == string(vals[s]) {
			e++
		}
		if e-s >= 20 && s > 0 && string(vals[s-1]) != string(vals[s]) {
			return int64(s + (e-s)/2)
		}
		s = e
	}
	return -1
}

// rrPositions are the commits of the two groups (run names them apart).
func rrPositions(t *testing.T, vals [rrParts][][]byte, run string) []rrPos {
	t.Helper()
	edge, inside := "rr-edge-"+run, "rr-inside-"+run
	pos := []rrPos{
		{edge, 0, rrPerPart, false},
		{edge, 1, rrBoundary(vals[1], 1000), false},
		{edge, 2, rrBoundary(vals[2], 1500), false},
		{inside, 0, rrBoundary(vals[0], 2000), false},
		{inside, 1, rrInside(vals[1], 1200), true},
		{inside, 2, rrBoundary(vals[2], 2500), false},
	}
	for _, p := range pos {
		v := vals[p.part]
		if p.g <= 0 || p.g > rrPerPart || (p.g < rrPerPart && (string(v[p.g-1]) == string(v[p.g])) != p.inside) {
			t.Fatalf("position %+v: not where the test wants it", p)
		}
	}
	return pos
}

// rrLane is a migrated topic ready for kreconcile: the flow's mm2.properties file and name.
type rrLane struct {
	name, pair string
	src, dst   cluster.Cluster
	props      string
	flow       string
	topic      string
	// kmap is kmirror's offset map of the topic as it persisted it on the target, by
	// partition (nil for MirrorMaker 2).
	kmap map[int32]*offsetmap.PartitionMap
}

// TestReconcileRepeated runs kreconcile groups --apply on repeating data mirrored from Kafka
// 2.3.0 by kmirror (killed -9 mid-run, to 3.7.1), by MirrorMaker 2 3.7.1 (to 3.7.1) and by
// MirrorMaker 2 4.3.1 (to 4.3.1), and judges each answer by what the group reads on the
// target. Each lane prints a line per group partition: lane, pair, group, partition, G, E(G),
// records left on the source, records read on the target, verdict, proof_source.
// The lanes run in parallel with each other and the package's other parallel tests, each on
// clusters of its own.
func TestReconcileRepeated(t *testing.T) {
	bedParallelParent(t)
	bins := bedBuild(t, "kmirror", "kreconcile")
	vals := rrValues()
	ts := time.Now().Truncate(time.Second)
	t.Run("kmirror", func(t *testing.T) {
		bedParallelLong(t)
		rrJudge(t, rrKmirror(t, filepath.Join(bins, "kmirror"), vals, ts), filepath.Join(bins, "kreconcile"), vals)
	})
	for _, v := range []string{cluster.V371, cluster.V431} {
		t.Run("mm2-"+v, func(t *testing.T) {
			bedParallelLong(t)
			rrJudge(t, rrMM2(t, v, vals, ts), filepath.Join(bins, "kreconcile"), vals)
		})
	}
}

// rrSetup starts a 2.3.0 source and a target of dstV for lane and creates the topic on the
// source.
func rrSetup(t *testing.T, lane, dstV string) (src, dst cluster.Cluster, topic string) {
	src = cluster.StartT(t, cluster.Spec{Version: cluster.V230, Name: "rr-" + lane + "-230"})
	dst = cluster.StartT(t, cluster.Spec{Version: dstV, Name: "rr-" + lane + "-" + bedTag(dstV)})
	topic = bedUnique("rr-status")
	bedCreateTopic(t, src, topic, rrParts, nil)
	return src, dst, topic
}

// rrKmirror: kmirror 2.3.0 -> 3.7.1. rrFirst records per partition are on the source when it
// starts; the rest trickle in while it is frozen with a transaction open on the target and
// killed -9 (until one kill leaves one open: the next run aborts it and copies its records
// again); it runs until the topic is copied and stops.
func rrKmirror(t *testing.T, bin string, vals [rrParts][][]byte, ts time.Time) rrLane {
	src, dst, topic := rrSetup(t, "kmirror", cluster.V371)
	ctx := bedCtx(t, 8*time.Minute)
	for p := range int32(rrParts) {
		bedProduce(ctx, t, src, topic, p, rrRecords(vals[p], 0, rrFirst, ts))
	}
	props := mirProps(t, src, dst, "source", "target", topic)
	var p *mirProc
	start := func(n int) { p = mirStart(t, bin, props, "source->target", fmt.Sprintf("kmirror-rr-%d", n)) }
	copying := func(what string, atLeast int64) {
		bedWaitFor(ctx, t, 300*time.Millisecond, what, func() string {
			if n := p.owned(); n != rrParts {
				return fmt.Sprintf("kmirror owns %d of %d partitions", n, rrParts)
			}
			if got := sumRecords(ctx, t, dst, topic); got < atLeast {
				return fmt.Sprintf("target has %d committed records, want %d", got, atLeast)
			}
			return ""
		})
	}
	start(0)
	copying("kmirror to copy the first records", rrFirst*rrParts)
	trickled := rrTrickle(ctx, t, src, topic, vals, ts)
	const maxRuns = 6
	for run, counted := 1, false; !counted; run++ {
		if run > maxRuns {
			t.Fatalf("kmirror: none of %d kills left a transaction open on the target", maxRuns)
		}
		if run > 1 {
			copying(fmt.Sprintf("run %d to copy more records", run), sumRecords(ctx, t, dst, topic)+30)
		}
		freezeOpen(ctx, t, fmt.Sprintf("kmirror-rr-%d", run-1), p.cmd.Process.Pid, dst, topic)
		at := bedEndOffsets(ctx, t, src, topic)
		p.kill()
		<-p.exited
		open := isoOpenTxn(ctx, t, dst, topic)
		counted = open == ""
		t.Logf("kill -9 #%d with the source at %v: counted %v %s", run, at, counted, open)
		start(run)
	}
	if err := trickled(); err != nil {
		t.Fatalf("produce to %s on the source: %v", topic, err)
	}
	bedWaitFor(ctx, t, 300*time.Millisecond, "kmirror to copy the topic", func() string { return mirBehind(ctx, t, dst, topic, rrParts*rrPerPart) })
	p.term(t)
	var aborted int64
	for part := range int32(rrParts) {
		aborted += bedWritten(ctx, t, dst, topic, part) - bedRecordsFrom(ctx, t, dst, topic, part, 0)
	}
	t.Logf("kmirror copied %s: %d records of aborted transactions on the target", topic, aborted)
	if aborted == 0 {
		t.Fatalf("no aborted records on the target: the kill left nothing to judge")
	}
	return rrLane{name: "kmirror", pair: "2.3.0->3.7.1", src: src, dst: dst, props: props, flow: "source->target", topic: topic,
		kmap: rrMap(ctx, t, dst, offsetmap.MapTopicName("source"), topic)}
}

// rrMap reads kmirror's offset map topic on c (partition 0, read_committed, as kmirror reads
// it at resume) and returns the persisted map of topic's partitions.
func rrMap(ctx context.Context, t *testing.T, c cluster.Cluster, mapTopic, topic string) map[int32]*offsetmap.PartitionMap {
	t.Helper()
	var r offsetmap.TopicReader
	o := logread.Options{Cluster: c.Name(), Topic: mapTopic, From: 0, To: bedEndOffsets(ctx, t, c, mapTopic)[0], Committed: true, Short: logread.ShortStop}
	if err := logread.Each(ctx, bedClient(t, c.Bootstrap()), o, func(rec *kgo.Record) (bool, error) {
		r.Add(rec.Key, rec.Value)
		return true, nil
	}); err != nil {
		t.Fatalf("read kmirror's offset map %s on %s: %v", mapTopic, c.Name(), err)
	}
	out := map[int32]*offsetmap.PartitionMap{}
	for k, p := range r.Parts() {
		if k.Topic == topic {
			out[k.Partition] = p.PartitionMap(k.Partition)
		}
	}
	t.Logf("kmirror's offset map %s holds %d partitions of %s", mapTopic, len(out), topic)
	return out
}

// rrTrickle produces vals[p][rrFirst:] to topic on c, 10 records per partition every 200 ms,
// in the background; done waits for the last and says the first error.
func rrTrickle(ctx context.Context, t *testing.T, c cluster.Cluster, topic string, vals [rrParts][][]byte, ts time.Time) (done func() error) {
	cl := bedClient(t, c.Bootstrap(), kgo.RecordPartitioner(kgo.ManualPartitioner()), kgo.RequiredAcks(kgo.AllISRAcks()))
	errc := make(chan error, 1)
	go func() {
		for from := rrFirst; from < rrPerPart; from += 10 {
			var batch []*kgo.Record
			for p := range int32(rrParts) {
				for _, r := range rrRecords(vals[p], from, min(from+10, rrPerPart), ts) {
					r.Topic, r.Partition = topic, p
					batch = append(batch, r)
				}
			}
			if err := cl.ProduceSync(ctx, batch...).FirstErr(); err != nil {
				errc <- err
				return
			}
			time.Sleep(200 * time.Millisecond)
		}
		errc <- nil
	}()
	return func() error { return <-errc }
}

// rrMM2 is MirrorMaker 2 of version v, 2.3.0 -> v, with the group offset sync on: the whole
// topic is on the source when it starts; it runs until the topic is copied and the group
// offsets are synced (or 90 s passed), then stops cleanly.
func rrMM2(t *testing.T, v string, vals [rrParts][][]byte, ts time.Time) rrLane {
	src, dst, topic := rrSetup(t, "mm2-"+bedTag(v), v)
	ctx := bedCtx(t, 8*time.Minute)
	for p := range int32(rrParts) {
		bedProduce(ctx, t, src, topic, p, rrRecords(vals[p], 0, rrPerPart, ts))
	}
	// Groups commit before MM2 starts, so that it checkpoints and syncs them as it would.
	run := strings.TrimPrefix(topic, "rr-status-")
	for _, pos := range rrPositions(t, vals, run) {
		rcCommit(t, src, pos.group, topic, pos.part, pos.g, "rr")
	}
	text := rcProperties(src, dst, topic) + "destination.offset.flush.interval.ms=5000\n"
	m := cluster.StartMM2T(t, cluster.MM2Spec{Version: v, Properties: text, Target: "destination", Name: "mm2-rr-" + bedTag(v)})
	bedWaitFor(ctx, t, 500*time.Millisecond, "MirrorMaker 2 to copy the topic", func() string { return mirBehind(ctx, t, dst, topic, rrParts*rrPerPart) })
	synced := func() string {
		for _, pos := range rrPositions(t, vals, run) {
			if rcCommitted(t, dst, pos.group, topic, pos.part) == nil {
				return fmt.Sprintf("no target offset of %s/%d for %s", topic, pos.part, pos.group)
			}
		}
		return ""
	}
	deadline := time.Now().Add(90 * time.Second)
	state := synced()
	for ; state != "" && time.Now().Before(deadline); state = synced() {
		time.Sleep(time.Second)
	}
	if state != "" {
		t.Logf("MirrorMaker 2 %s did not sync every group offset within 90 s (%s): kreconcile finds those missing", v, state)
	}
	if err := m.Stop(ctx); err != nil {
		t.Logf("stop MirrorMaker 2: %v", err)
	}
	props := filepath.Join(t.TempDir(), "mm2.properties")
	if err := os.WriteFile(props, []byte(text), 0o600); err != nil {
		t.Fatal(err)
	}
	return rrLane{name: "mm2-" + v, pair: "2.3.0->" + v, src: src, dst: dst, props: props, flow: "source->destination", topic: topic}
}

// rrJudge commits the groups on the lane's source (the MM2 lanes already did), runs
// kreconcile groups --apply and judges every partition with a consumer of the group on the
// target.
func rrJudge(t *testing.T, l rrLane, kreconcile string, vals [rrParts][][]byte) {
	ctx := bedCtx(t, 6*time.Minute)
	run := strings.TrimPrefix(l.topic, "rr-status-")
	pos := rrPositions(t, vals, run)
	for _, p := range pos {
		if rcCommitted(t, l.src, p.group, l.topic, p.part) == nil {
			rcCommit(t, l.src, p.group, l.topic, p.part, p.g, "rr")
		}
	}
	for part := range int32(rrParts) {
		for i, r := range bedReadPartition(ctx, t, l.src, l.topic, part, 0) {
			if r.Offset != int64(i) || string(r.Value) != string(vals[part][i]) {
				t.Fatalf("source %s/%d record %d: offset %d value %q, want offset %d value %q", l.topic, part, i, r.Offset, r.Value, i, vals[part][i])
			}
		}
	}

	groups := "rr-(edge|inside)-" + regexp.QuoteMeta(run)
	start := time.Now()
	code, out, errOut := bedOutput(t, kreconcile, "groups", "--mm2-config", l.props, "--flow", l.flow, "--group", groups,
		"--apply", "--backup", filepath.Join(t.TempDir(), "backup.json"), "--format", "json")
	t.Logf("kreconcile groups --apply: exit %d in %s", code, time.Since(start).Round(time.Millisecond))
	if code != 0 && code != 1 {
		t.Fatalf("kreconcile groups --apply: exit %d\nstderr:\n%s\nstdout:\n%s", code, errOut, out)
	}
	res := k848Result(t, out)

	read := map[string]map[int32][]*kgo.Record{}
	for _, p := range pos {
		if read[p.group] == nil {
			read[p.group] = rrConsume(t, l.dst, p.group, l.topic)
		}
	}
	for _, p := range pos {
		rrCheck(t, l, res, p, read[p.group][p.part], vals[p.part][p.g:])
	}
}

// rrCheck judges one group partition: the table line, then exactness or a clear refusal.
func rrCheck(t *testing.T, l rrLane, res *reconcile.Result, pos rrPos, got []*kgo.Record, left [][]byte) {
	t.Helper()
	var p *reconcile.Partition
	for _, q := range rcGroup(t, res, pos.group).Partitions {
		if q.Topic == l.topic && q.Partition == pos.part {
			p = &q
		}
	}
	if p == nil {
		t.Errorf("%s %s/%d: not in kreconcile's plan", pos.group, l.topic, pos.part)
		return
	}
	js, _ := json.Marshal(p)
	where := "boundary"
	if pos.inside {
		where = "inside a run"
	}
	group := strings.TrimSuffix(pos.group, "-"+strings.TrimPrefix(l.topic, "rr-status-"))

	if p.ExactTarget == nil {
		t.Logf("TABLE lane=%-10s pair=%-13s group=%-9s partition=%d G=%-4d (%s) E=-    source_left=%-4d target_read=-    verdict=refused(%s) proof_source=%q reason=%q",
			l.name, l.pair, group, pos.part, pos.g, where, len(left), p.Status, p.ProofSource, p.Reason)
		if p.Status != reconcile.StatusUnmappable || !strings.Contains(p.Reason, fmt.Sprintf("%s/%d", l.topic, pos.part)) {
			t.Errorf("%s %s/%d: refused as %s with reason %q: want unmappable with a reason naming %s/%d\n%s", pos.group, l.topic, pos.part, p.Status, p.Reason, l.topic, pos.part, js)
		}
		if l.name == "kmirror" {
			t.Errorf("%s %s/%d (%s, %s): refused, want an answer from kmirror's map\n%s", pos.group, l.topic, pos.part, where, l.name, js)
		}
		return
	}

	// A read_uncommitted consumer also reads the aborted records ahead of E(G) that
	// kreconcile counts; the others must be exactly the records left on the source.
	var vs [][]byte
	var aborted int64
	for _, r := range got {
		in := false
		for _, a := range p.AbortedRanges {
			in = in || (r.Offset >= a.First && r.Offset <= a.Last)
		}
		if in {
			aborted++
		} else {
			vs = append(vs, r.Value)
		}
	}
	verdict, exact := "exact", rrSame(vs, left) && (p.AbortedAhead == nil || *p.AbortedAhead == aborted)
	if !exact {
		verdict = "WRONG"
	}
	if aborted > 0 {
		verdict += fmt.Sprintf("(+%d aborted ahead, kreconcile counted %s)", aborted, fmtP(p.AbortedAhead))
	}
	t.Logf("TABLE lane=%-10s pair=%-13s group=%-9s partition=%d G=%-4d (%s) E=%-4d source_left=%-4d target_read=%-4d verdict=%s proof_source=%q",
		l.name, l.pair, group, pos.part, pos.g, where, *p.ExactTarget, len(left), len(got), verdict, p.ProofSource)
	if !exact {
		first := ""
		if len(got) > 0 {
			first = fmt.Sprintf("; first read at offset %d", got[0].Offset)
		}
		t.Errorf("%s %s/%d: the consumer read %d records (%d aborted, kreconcile reported %s), want the %d left on the source%s\nread:   %s\nsource: %s\n%s",
			pos.group, l.topic, pos.part, len(got), aborted, fmtP(p.AbortedAhead), len(left), first, rrRuns(vs), rrRuns(left), js)
	}
	if c := rcCommitted(t, l.dst, pos.group, l.topic, pos.part); c == nil || *c != *p.ExactTarget {
		t.Errorf("%s %s/%d: target commit %s after --apply, want E(G) %d\n%s", pos.group, l.topic, pos.part, fmtP(c), *p.ExactTarget, js)
	}
	// Where kmirror's persisted map covers G (its source range holds G and a mirrored record
	// below it, as kreconcile's --offset-map help defines it), kreconcile is to answer from it.
	want := []string{reconcile.SourceContent, reconcile.SourceOffsetSyncs}
	if pm := l.kmap[pos.part]; pm != nil {
		tr := pm.ExactTarget(pos.g)
		covers := tr.Known && tr.HasPrev
		t.Logf("kmirror's map of %s/%d: source %d..%d, target below %d (last stable offset %d); at G=%d: copy of %d at %d, E %d; covers G: %v",
			l.topic, pos.part, pm.SourceFrom, pm.SourceTo, pm.TargetTo, p.TargetLastStable, pos.g, tr.Prev, tr.PrevTarget, tr.Target, covers)
		if covers {
			want = []string{reconcile.SourceKmirrorMap}
		}
	}
	if !slices.Contains(want, p.ProofSource) {
		t.Errorf("%s %s/%d: proof_source %q, want one of %v\n%s", pos.group, l.topic, pos.part, p.ProofSource, want, js)
	}
}

// rrConsume reads topic on c as a member of group with Kafka's own console consumer, from
// the group's committed offsets, with its default isolation (read_uncommitted) and committing
// nothing, and returns the records (offset and value) per partition.
func rrConsume(t *testing.T, c cluster.Cluster, group, topic string) map[int32][]*kgo.Record {
	t.Helper()
	ctx := bedCtx(t, 3*time.Minute)
	lines := bedConsole(ctx, t, c, topic, func(line string) bool { return strings.HasPrefix(line, "Partition:") },
		"--group", group, "--consumer-property", "enable.auto.commit=false",
		"--property", "print.partition=true", "--property", "print.offset=true")
	out := map[int32][]*kgo.Record{}
	for _, line := range lines {
		f := strings.SplitN(line, "\t", 3)
		var part int32
		var off int64
		if len(f) != 3 {
			t.Fatalf("console consumer line %q: want Partition:, Offset: and the value", line)
		}
		if _, err := fmt.Sscanf(f[0]+" "+f[1], "Partition:%d Offset:%d", &part, &off); err != nil {
			t.Fatalf("console consumer line %q: %v", line, err)
		}
		out[part] = append(out[part], &kgo.Record{Partition: part, Offset: off, Value: []byte(f[2])})
	}
	return out
}

func rrSame(a, b [][]byte) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if string(a[i]) != string(b[i]) {
			return false
		}
	}
	return true
}

// rrRuns shortens a value sequence to its runs, "status-3x12 status-0x4 ...", at most 12.
func rrRuns(vs [][]byte) string {
	var b strings.Builder
	runs := 0
	for i := 0; i < len(vs) && runs < 12; runs++ {
		j := i
		for j < len(vs) && string(vs[j]) == string(vs[i]) {
			j++
		}
		fmt.Fprintf(&b, "%sx%d ", vs[i], j-i)
		i = j
	}
	return fmt.Sprintf("%d records: %s...", len(vs), b.String())
}
