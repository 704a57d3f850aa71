package main

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/kmigrate/kmigrate/align"
	"github.com/kmigrate/kmigrate/digest"
	"github.com/kmigrate/kmigrate/internal/testkit"
	"github.com/kmigrate/kmigrate/offsetmap"
	"github.com/kmigrate/kmigrate/verify"
)

// fetchLog records the offsets every Fetch request to a kfake cluster asks for, per topic.
type fetchLog struct {
	mu      sync.Mutex
	offsets map[string][]int64
}

func (l *fetchLog) reset() {
	l.mu.Lock()
	l.offsets = map[string][]int64{}
	l.mu.Unlock()
}

func (l *fetchLog) fetches() []int64 {
	l.mu.Lock()
	defer l.mu.Unlock()
	return append([]int64(nil), l.offsets[""]...)
}

var clusterSeq atomic.Int64

// fakeCluster is a one-broker kfake cluster of its own cluster ID whose fetches are logged
// (all topics together: a fetch names its topic by ID only in newer versions).
func fakeCluster(t *testing.T) (*kgo.Client, string, *fetchLog) {
	t.Helper()
	fc := testkit.NewCluster(t, kfake.ClusterID(fmt.Sprintf("fake-%d", clusterSeq.Add(1))))
	c := fc.Cluster
	log := &fetchLog{}
	log.reset()
	c.ControlKey(int16(kmsg.Fetch), func(req kmsg.Request) (kmsg.Response, error, bool) {
		c.KeepControl()
		log.mu.Lock()
		for _, rt := range req.(*kmsg.FetchRequest).Topics {
			for _, rp := range rt.Partitions {
				log.offsets[""] = append(log.offsets[""], rp.FetchOffset)
			}
		}
		log.mu.Unlock()
		return nil, nil, false
	})
	return fc.Client, fc.Seeds, log
}

// faultyCopy is source records 0..2999 copied with faults: source 500 lost, source 1000..1010
// replayed after 1010, source 2000 altered, three records written directly after source 2500.
func faultyCopy() []*kgo.Record {
	altered := *rec(2000)
	altered.Value = []byte("re-encoded")
	var direct []*kgo.Record
	for i := 0; i < 3; i++ {
		direct = append(direct, &kgo.Record{Key: []byte("direct"), Value: []byte{byte('a' + i)}})
	}
	var out []*kgo.Record
	for _, part := range [][]*kgo.Record{recs(0, 499), recs(501, 1010), recs(1000, 1010), recs(1011, 1999),
		{&altered}, recs(2001, 2500), direct, recs(2501, 2999)} {
		out = append(out, part...)
	}
	return out
}

type findings struct {
	Missing    []align.SourceRange
	Duplicates []offsetmap.Copy
	Mismatches []align.Mismatch
	Extra      []align.TargetRange
}

func findingsOf(t *testing.T, out string) (findings, verify.Result) {
	t.Helper()
	var r verify.Result
	if err := json.Unmarshal([]byte(out), &r); err != nil {
		t.Fatalf("not a kverify diff JSON report: %v\n%s", err, out)
	}
	var f findings
	for _, p := range r.Partitions {
		f.Missing = append(f.Missing, p.MissingRanges...)
		f.Duplicates = append(f.Duplicates, p.Duplicates...)
		f.Mismatches = append(f.Mismatches, p.Mismatches...)
		f.Extra = append(f.Extra, p.ExtraRanges...)
	}
	return f, r
}

// digests writes the digest of each side of topic and returns the two files.
func digests(t *testing.T, srcSeeds, dstSeeds, topic string, extra ...string) (string, string) {
	t.Helper()
	dir := t.TempDir()
	s, d := filepath.Join(dir, "source.digest"), filepath.Join(dir, "target.digest")
	for _, a := range [][]string{
		{"digest", "--side", "source", "--source-brokers", srcSeeds, "--topic", topic, "--out", s},
		{"digest", "--side", "target", "--target-brokers", dstSeeds, "--topic", topic, "--out", d},
	} {
		if code, out, errs := run(t, append(a, extra...)...); code != 0 || !strings.Contains(out, "chunks") {
			t.Fatalf("kverify %s: exit %d, want 0\n%s%s", strings.Join(a, " "), code, out, errs)
		}
	}
	return s, d
}

// Digest each side, compare: the regions hold the faults; --drill reads only those ranges
// from both clusters and reports exactly what kverify diff reports.
func TestDigestCompareDrill(t *testing.T) {
	src, srcSeeds, srcLog := fakeCluster(t)
	dst, dstSeeds, dstLog := fakeCluster(t)
	topic := testkit.TopicName("orders")
	testkit.CreateTopic(t, src, topic, 1, nil)
	testkit.CreateTopic(t, dst, topic, 1, nil)
	testkit.Produce(t, src, topic, 0, recs(0, 2999)...)
	testkit.Produce(t, dst, topic, 0, faultyCopy()...)
	sd, td := digests(t, srcSeeds, dstSeeds, topic, "--chunk-records", "64")

	code, out, errs := run(t, "compare", sd, td, "--format", "json")
	if code != 1 {
		t.Fatalf("compare: exit %d, want 1\n%s%s", code, out, errs)
	}
	var cmp digest.Comparison
	if err := json.Unmarshal([]byte(out), &cmp); err != nil {
		t.Fatal(err)
	}
	regions := cmp.Partitions[0].Regions
	var inRegions int64
	for _, r := range regions {
		inRegions += r.SourceRecords
	}
	for _, fault := range []struct{ source, target int64 }{{500, 499}, {1005, 1021}, {2000, 2010}, {2500, 2511}} {
		found := false
		for _, r := range regions {
			found = found || r.SourceFrom <= fault.source && fault.source < r.SourceTo && r.TargetFrom <= fault.target && fault.target < r.TargetTo
		}
		if !found {
			t.Errorf("no region holds source offset %d / target offset %d: %+v", fault.source, fault.target, regions)
		}
	}
	if len(regions) > 4 || inRegions > 1000 {
		t.Errorf("%d regions of %d source records in all, want at most 4 regions of a few chunks", len(regions), inRegions)
	}

	conn := []string{"--source-brokers", srcSeeds, "--target-brokers", dstSeeds}
	code, out, errs = run(t, append([]string{"diff", "--topic", topic, "--format", "json"}, conn...)...)
	if code != 1 {
		t.Fatalf("diff: exit %d, want 1\n%s", code, errs)
	}
	want, _ := findingsOf(t, out)
	srcLog.reset()
	dstLog.reset()
	code, out, errs = run(t, append([]string{"compare", sd, td, "--drill", "--format", "json"}, conn...)...)
	if code != 1 {
		t.Fatalf("compare --drill: exit %d, want 1\n%s%s", code, out, errs)
	}
	got, res := findingsOf(t, out)
	if !reflect.DeepEqual(got, want) {
		t.Errorf("drill findings:\n got %+v\nwant %+v (kverify diff)", got, want)
	}
	if res.Summary.Matched >= 2900 {
		t.Errorf("the drill matched %d records: it read more than the regions", res.Summary.Matched)
	}
	checkFetches(t, regions, srcLog, dstLog)
}

// checkFetches checks that every fetch of either cluster was inside a drilled range.
func checkFetches(t *testing.T, regions []digest.Region, srcLog, dstLog *fetchLog) {
	t.Helper()
	for name, log := range map[string]*fetchLog{"source": srcLog, "target": dstLog} {
		offs := log.fetches()
		if len(offs) == 0 {
			t.Errorf("%s: no fetch logged", name)
		}
		for _, o := range offs {
			if !inDrill(o, regions, name == "source") {
				t.Errorf("%s: fetch at offset %d, outside every drilled range %+v", name, o, regions)
			}
		}
	}
}

// A region the source no longer holds (deleted since the digest) is an error, not an answer.
func TestDrillRegionGone(t *testing.T) {
	src, srcSeeds, _ := fakeCluster(t)
	dst, dstSeeds, _ := fakeCluster(t)
	topic := testkit.TopicName("orders")
	testkit.CreateTopic(t, src, topic, 1, nil)
	testkit.CreateTopic(t, dst, topic, 1, nil)
	testkit.Produce(t, src, topic, 0, recs(0, 2999)...)
	testkit.Produce(t, dst, topic, 0, faultyCopy()...)
	sd, td := digests(t, srcSeeds, dstSeeds, topic, "--chunk-records", "64")
	if _, err := kadm.NewClient(src).DeleteRecords(context.Background(), kadm.Offsets{topic: {0: {At: 2990}}}); err != nil {
		t.Fatal(err)
	}
	out := filepath.Join(t.TempDir(), "drill.json")
	code, _, errs := run(t, "compare", sd, td, "--drill", "--out", out, "--source-brokers", srcSeeds, "--target-brokers", dstSeeds)
	if _, err := os.Stat(out); code != 2 || !strings.Contains(errs, "could not read a region") || err == nil {
		t.Errorf("drill over deleted records: exit %d, report written %v; want 2 and nothing written\n%s", code, err == nil, errs)
	}
}

func inDrill(o int64, regions []digest.Region, source bool) bool {
	for _, r := range regions {
		from, to := r.ContextTargetFrom, r.TargetTo
		if source {
			from, to = r.ContextSourceFrom, r.SourceTo
		}
		if from <= o && o < to {
			return true
		}
	}
	return false
}

// An exact copy at other offsets (the target has older records before it) compares
// identical, exit 0, --drill too, reading nothing.
func TestCompareIdentical(t *testing.T) {
	src, srcSeeds, _ := fakeCluster(t)
	dst, dstSeeds, dstLog := fakeCluster(t)
	topic := testkit.TopicName("orders")
	testkit.CreateTopic(t, src, topic, 2, nil)
	testkit.CreateTopic(t, dst, topic, 2, nil)
	for p := int32(0); p < 2; p++ {
		testkit.Produce(t, src, topic, p, recs(0, 999)...)
		testkit.Produce(t, dst, topic, p, recs(0, 999)...)
	}
	sd, td := digests(t, srcSeeds, dstSeeds, topic, "--chunk-records", "64")
	if code, out, errs := run(t, "compare", sd, td); code != 0 || !strings.Contains(out, "identical") {
		t.Fatalf("compare: exit %d, want 0 identical\n%s%s", code, out, errs)
	}
	dstLog.reset()
	code, out, errs := run(t, "compare", sd, td, "--drill", "--format", "json", "--source-brokers", srcSeeds, "--target-brokers", dstSeeds)
	if code != 0 || len(dstLog.fetches()) != 0 {
		t.Fatalf("compare --drill: exit %d, %d fetches; want 0 and none\n%s%s", code, len(dstLog.fetches()), out, errs)
	}
	// An unknown flag after the files, --out onto an input: refused.
	if code, _, errs := run(t, "compare", sd, td, "--drlil"); code != 2 || !strings.Contains(errs, "--drlil") {
		t.Errorf("unknown flag after the files: exit %d, %s; want 2 naming it", code, errs)
	}
	if code, _, errs := run(t, "compare", sd, td, "--out", td); code != 2 || !strings.Contains(errs, "destroy an input") {
		t.Errorf("--out onto the target digest: exit %d, %s; want 2", code, errs)
	}
	// The wrong way round, or a digest of another cluster: refused, nothing read.
	if code, _, errs := run(t, "compare", td, sd); code != 2 || !strings.Contains(errs, "source digest first") {
		t.Errorf("swapped digests: exit %d, %s; want 2 saying which goes first", code, errs)
	}
	if code, _, errs := run(t, "compare", sd, td, "--drill", "--source-brokers", dstSeeds, "--target-brokers", dstSeeds); code != 2 || !strings.Contains(errs, "connect to that cluster") {
		t.Errorf("drill on another source cluster: exit %d, %s; want 2", code, errs)
	}
}

// The digest needs only its side's connection; the file is at most 0.1% of the record bytes.
func TestDigestOneSideAndSize(t *testing.T) {
	src, srcSeeds := fakeClusterPlain(t)
	topic := testkit.TopicName("orders")
	testkit.CreateTopic(t, src, topic, 1, nil)
	value := strings.Repeat("v", 200)
	var rs []*kgo.Record
	var bytes int64
	for i := 0; i < 60_000; i++ {
		r := &kgo.Record{Key: []byte(strings.Repeat("k", 8) + string(rune('a'+i%26))), Value: []byte(value + string(rune('a'+i%26)) + string(rune(i)))}
		bytes += int64(len(r.Key) + len(r.Value))
		rs = append(rs, r)
	}
	testkit.Produce(t, src, topic, 0, rs...)
	out := filepath.Join(t.TempDir(), "source.digest")
	code, stdout, errs := run(t, "digest", "--side", "source", "--source-brokers", srcSeeds, "--topic", topic, "--out", out)
	if code != 0 {
		t.Fatalf("exit %d\n%s", code, errs)
	}
	st, err := os.Stat(out)
	if err != nil {
		t.Fatal(err)
	}
	f, err := digest.ReadFile(out)
	if err != nil {
		t.Fatal(err)
	}
	if n := len(f.Partitions[0].Chunks); n < 5 {
		t.Fatalf("%d chunks for 60000 records: too few to say anything about the size", n)
	}
	if float64(st.Size()) > 0.001*float64(bytes) {
		t.Errorf("digest of %d bytes for %d record bytes: more than 0.1%%", st.Size(), bytes)
	}
	t.Logf("%s", stdout)
	if code, _, errs := run(t, "digest", "--side", "target", "--source-brokers", srcSeeds, "--topic", topic, "--out", out); code != 2 || !strings.Contains(errs, "--target-brokers is required") {
		t.Errorf("--side target without target brokers: exit %d, %s; want 2 naming --target-brokers", code, errs)
	}
	if code, _, errs := run(t, "digest", "--side", "source", "--source-brokers", srcSeeds, "--topic", "no-such-topic", "--out", out); code != 2 || !strings.Contains(errs, "does not exist") {
		t.Errorf("a missing topic: exit %d, %s; want 2", code, errs)
	}
	if again, _ := digest.ReadFile(out); again == nil || again.Partitions[0].Root != f.Partitions[0].Root {
		t.Errorf("a refused digest changed the file")
	}
	// Chunks of 16 records of ~200 bytes: ~60 bytes a chunk is about 2% of the records. Said.
	if code, _, errs := run(t, "digest", "--side", "source", "--source-brokers", srcSeeds, "--topic", topic, "--out", out, "--chunk-records", "16"); code != 0 || !strings.Contains(errs, "more than 0.1%") {
		t.Errorf("a digest over the bound: exit %d, %q; want 0 and a warning", code, errs)
	}
}

func fakeClusterPlain(t *testing.T) (*kgo.Client, string) {
	cl, seeds, _ := fakeCluster(t)
	return cl, seeds
}

// --evidence, then check-evidence from the clusters, from a digest and against the report;
// a changed root, report or data is found, naming the partition.
func TestEvidenceRoundTrip(t *testing.T) {
	src, srcSeeds, _ := fakeCluster(t)
	dst, dstSeeds, _ := fakeCluster(t)
	topic := testkit.TopicName("orders")
	testkit.CreateTopic(t, src, topic, 2, nil)
	testkit.CreateTopic(t, dst, topic, 2, nil)
	for p := int32(0); p < 2; p++ {
		testkit.Produce(t, src, topic, p, recs(1000*int(p), 1000*int(p)+499)...)
		testkit.Produce(t, dst, topic, p, recs(1000*int(p), 1000*int(p)+499)...)
	}
	dir := t.TempDir()
	ev, rep := filepath.Join(dir, "ev.json"), filepath.Join(dir, "report.json")
	conn := []string{"--source-brokers", srcSeeds, "--target-brokers", dstSeeds}
	if code, _, errs := run(t, append([]string{"diff", "--topic", topic, "--format", "json", "--out", rep, "--evidence", ev}, conn...)...); code != 0 {
		t.Fatalf("diff --evidence: exit %d\n%s", code, errs)
	}
	e, err := digest.ReadEvidence(ev)
	if err != nil {
		t.Fatal(err)
	}
	if len(e.Partitions) != 2 || e.Partitions[1].Source.Root != e.Partitions[1].Target.Root || e.Partitions[1].Source.Records != 500 || e.Source.ClusterID == "" || e.Tool == "" {
		t.Fatalf("evidence %+v: want 2 partitions of 500 records, equal roots on both sides, cluster IDs and the tool", e)
	}
	check := func(args ...string) (int, string, string) {
		return run(t, append([]string{"check-evidence", ev}, args...)...)
	}
	if code, out, errs := check(append(conn, "--report", rep)...); code != 0 || strings.Contains(out, "not checked") {
		t.Fatalf("check-evidence: exit %d, want 0\n%s%s", code, out, errs)
	}
	td := filepath.Join(dir, "target.digest")
	if code, _, errs := run(t, "digest", "--side", "target", "--target-brokers", dstSeeds, "--topic", topic, "--ranges", ev, "--out", td); code != 0 {
		t.Fatalf("digest --ranges: exit %d\n%s", code, errs)
	}
	if code, out, errs := check("--digest", td); code != 0 || !strings.Contains(out, "source: not checked") {
		t.Fatalf("check-evidence --digest: exit %d, want 0 and the source named unchecked\n%s%s", code, out, errs)
	}
	if code, _, errs := check(); code != 2 {
		t.Errorf("nothing to check against: exit %d, want 2\n%s", code, errs)
	}
	// A tampered report.
	os.WriteFile(rep, []byte("{}\n"), 0o644)
	if code, _, errs := check("--report", rep); code != 1 || !strings.Contains(errs, "report") {
		t.Errorf("tampered report: exit %d, want 1\n%s", code, errs)
	}
	// Tampered evidence: a root changed.
	data, _ := os.ReadFile(ev)
	bad := filepath.Join(dir, "bad.json")
	os.WriteFile(bad, []byte(strings.Replace(string(data), e.Partitions[1].Target.Root, strings.Repeat("0", 64), 1)), 0o644)
	if code, _, errs := run(t, append([]string{"check-evidence", bad}, conn...)...); code != 1 || !strings.Contains(errs, "partition 1") {
		t.Errorf("tampered evidence: exit %d, want 1 naming partition 1\n%s", code, errs)
	}
	// Changed data: the target topic recreated with one record altered, same offsets.
	fresh := recreate(t, dstSeeds, topic, 2)
	altered := recs(0, 499)
	altered[250].Value = []byte("changed")
	testkit.Produce(t, fresh, topic, 0, altered...)
	testkit.Produce(t, fresh, topic, 1, recs(1000, 1499)...)
	code, out, errs := check("--target-brokers", dstSeeds)
	if code != 1 || !strings.Contains(errs, "target topic \""+topic+"\" partition 0") || strings.Contains(errs, "partition 1 [") {
		t.Errorf("changed data: exit %d, want 1 naming target partition 0 only\n%s%s", code, out, errs)
	}
}

// recreate deletes and creates topic again, and returns a new client (the old ones know the
// old topic ID).
func recreate(t *testing.T, seeds, topic string, partitions int32) *kgo.Client {
	t.Helper()
	cl, err := kgo.NewClient(kgo.SeedBrokers(strings.Split(seeds, ",")...), kgo.RecordPartitioner(kgo.ManualPartitioner()))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(cl.Close)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	adm := kadm.NewClient(cl)
	if _, err := adm.DeleteTopics(ctx, topic); err != nil {
		t.Fatal(err)
	}
	testkit.CreateTopic(t, cl, topic, partitions, nil)
	return cl
}

// The report hash in the evidence is of the --out file's bytes, in every format.
func TestEvidenceReportHashEveryFormat(t *testing.T) {
	src, srcSeeds, _ := fakeCluster(t)
	dst, dstSeeds, _ := fakeCluster(t)
	topic := testkit.TopicName("orders")
	testkit.CreateTopic(t, src, topic, 1, nil)
	testkit.CreateTopic(t, dst, topic, 1, nil)
	testkit.Produce(t, src, topic, 0, recs(0, 99)...)
	testkit.Produce(t, dst, topic, 0, recs(0, 98)...)
	dir := t.TempDir()
	for _, format := range []string{"table", "json", "markdown", "html", "junit"} {
		ev, rep := filepath.Join(dir, format+".ev"), filepath.Join(dir, format+".report")
		code, _, errs := run(t, "diff", "--topic", topic, "--format", format, "--out", rep, "--evidence", ev, "--source-brokers", srcSeeds, "--target-brokers", dstSeeds)
		if code != 1 {
			t.Fatalf("%s: diff exit %d, want 1 (a record missing)\n%s", format, code, errs)
		}
		if code, out, errs := run(t, "check-evidence", ev, "--report", rep); code != 0 {
			t.Errorf("%s: check-evidence --report: exit %d, want 0\n%s%s", format, code, out, errs)
		}
	}
}

// A source whose log starts above 0 (retention) and a target that kept the older records: the
// first region's target start is a lower bound, and the drill skips the older target records,
// as kverify diff does, instead of calling them extra.
func TestDrillSourceAfterRetention(t *testing.T) {
	src, srcSeeds, _ := fakeCluster(t)
	dst, dstSeeds, _ := fakeCluster(t)
	topic := testkit.TopicName("orders")
	testkit.CreateTopic(t, src, topic, 1, nil)
	testkit.CreateTopic(t, dst, topic, 1, nil)
	testkit.Produce(t, src, topic, 0, recs(0, 1999)...)
	testkit.Produce(t, dst, topic, 0, recs(0, 1999)...)
	if _, err := kadm.NewClient(src).DeleteRecords(context.Background(), kadm.Offsets{topic: {0: {At: 300}}}); err != nil {
		t.Fatal(err)
	}
	sd, td := digests(t, srcSeeds, dstSeeds, topic, "--chunk-records", "64")
	conn := []string{"--source-brokers", srcSeeds, "--target-brokers", dstSeeds}
	_, want := findingsOf(t, func() string {
		_, out, _ := run(t, append([]string{"diff", "--topic", topic, "--format", "json"}, conn...)...)
		return out
	}())
	code, out, errs := run(t, append([]string{"compare", sd, td, "--drill", "--format", "json"}, conn...)...)
	_, got := findingsOf(t, out)
	if code != 0 || !got.Identical || !want.Identical || got.Partitions[0].TargetSkipped == 0 {
		t.Errorf("drill: exit %d, identical %v (kverify diff: %v), target skipped %d; want 0, identical, the older target records skipped\n%s%s",
			code, got.Identical, want.Identical, got.Partitions[0].TargetSkipped, out, errs)
	}
}
