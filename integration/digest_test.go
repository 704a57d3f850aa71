package integration

import (
	"context"
	"encoding/json"
	"fmt"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/kmigrate/kmigrate/align"
	"github.com/kmigrate/kmigrate/digest"
	"github.com/kmigrate/kmigrate/integration/cluster"
	"github.com/kmigrate/kmigrate/offsetmap"
	"github.com/kmigrate/kmigrate/verify"
)

// TestDigest runs the cross-site commands on real brokers: Kafka 2.3.0 (source) and 3.7.1
// (target) holding a copy with faults (records lost, replayed, altered, written directly).
// Each side is digested on its own; compare finds regions holding exactly those faults, in
// the faulty partition only; compare --drill reports what kverify diff reports; evidence of an
// identical copy checks out from the clusters, from a digest and against the report, and no
// longer does after the target's data changed. $KMIGRATE_PAIR (pair_test.go) picks other
// versions.
func TestDigest(t *testing.T) {
	bedParallel(t)
	src, dst := bedSharedPair(t)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	run := fmt.Sprintf("%x", time.Now().UnixNano())
	topic, faulty, same := "dg-"+run, "dg-faulty-"+run, "dg-same-"+run
	bedCreateTopic(t, src, topic, 2, nil)
	base := time.Now().Add(-time.Hour)
	var recs [2][]*kgo.Record
	for p := int32(0); p < 2; p++ {
		recs[p] = vfRecords(fmt.Sprintf("p%d", p), 0, 3000, base)
		bedProduce(ctx, t, src, topic, p, recs[p])
	}
	for _, name := range []string{faulty, same} {
		bedCreateTopic(t, dst, name, 2, nil)
	}
	bedProduce(ctx, t, dst, faulty, 0, dgFaultyCopy(recs[0]))
	bedProduce(ctx, t, dst, faulty, 1, recs[1])
	for p := int32(0); p < 2; p++ {
		bedProduce(ctx, t, dst, same, p, recs[p])
	}
	bin := filepath.Join(bedBuild(t, "kverify"), "kverify")
	srcFlag := []string{"--source-brokers", strings.Join(src.Bootstrap(), ",")}
	dstFlag := []string{"--target-brokers", strings.Join(dst.Bootstrap(), ",")}
	conn := append(append([]string{}, srcFlag...), dstFlag...)
	dir := t.TempDir()

	sd, td := filepath.Join(dir, "source.digest"), filepath.Join(dir, "target.digest")
	dgRun(t, 0, bin, append([]string{"digest", "--side", "source", "--topic", topic, "--out", sd, "--chunk-records", "64"}, srcFlag...)...)
	dgRun(t, 0, bin, append([]string{"digest", "--side", "target", "--topic", topic, "--target-topic", faulty, "--out", td, "--chunk-records", "64"}, dstFlag...)...)
	out := dgRun(t, 1, bin, "compare", sd, td, "--format", "json")
	var cmp digest.Comparison
	if err := json.Unmarshal([]byte(out), &cmp); err != nil {
		t.Fatal(err)
	}
	if len(cmp.Partitions) != 2 || len(cmp.Partitions[1].Regions) != 0 {
		t.Fatalf("partitions %+v: want 2, partition 1 (an exact copy) without a region", cmp.Partitions)
	}
	dgCheckRegions(t, cmp.Partitions[0].Regions)

	want := dgFindings(t, dgRun(t, 1, bin, append([]string{"diff", "--topic", topic, "--target-topic", faulty, "--format", "json"}, conn...)...))
	got := dgFindings(t, dgRun(t, 1, bin, append([]string{"compare", sd, td, "--drill", "--format", "json"}, conn...)...))
	if !reflect.DeepEqual(got, want) {
		t.Errorf("drill findings:\n got %+v\nwant %+v (kverify diff)", got, want)
	}
	if len(want.Missing) != 1 || len(want.Duplicates) != 11 || len(want.Mismatches) != 1 || len(want.Extra) != 1 {
		t.Errorf("kverify diff found %+v, want the four faults", want)
	}

	t.Run("evidence", func(t *testing.T) {
		dgEvidence(ctx, t, dgBed{bin: bin, dst: dst, dir: dir, topic: topic, faulty: faulty, same: same, recs: recs, conn: conn, dstFlag: dstFlag})
	})
}

// dgBed is what the evidence part of TestDigest works on.
type dgBed struct {
	bin                 string
	dst                 cluster.Cluster
	dir                 string
	topic, faulty, same string
	recs                [2][]*kgo.Record
	conn, dstFlag       []string
}

// dgEvidence: evidence of the identical copy checks out from both clusters, from a target
// digest of its ranges and against the report, evidence of the faulty copy too; after the
// target's partition 1 changed, check-evidence names it.
func dgEvidence(ctx context.Context, t *testing.T, b dgBed) {
	ev, rep := filepath.Join(b.dir, "ev.json"), filepath.Join(b.dir, "report.json")
	dgRun(t, 0, b.bin, append([]string{"diff", "--topic", b.topic, "--target-topic", b.same, "--format", "json", "--out", rep, "--evidence", ev}, b.conn...)...)
	dgRun(t, 0, b.bin, append([]string{"check-evidence", ev, "--report", rep}, b.conn...)...)
	tdig := filepath.Join(b.dir, "same.digest")
	dgRun(t, 0, b.bin, append([]string{"digest", "--side", "target", "--topic", b.topic, "--target-topic", b.same, "--ranges", ev, "--out", tdig}, b.dstFlag...)...)
	dgRun(t, 0, b.bin, "check-evidence", ev, "--digest", tdig)
	// Evidence of the faulty copy (exit 1) checks out too: it proves what was found.
	evf := filepath.Join(b.dir, "faulty.ev.json")
	dgRun(t, 1, b.bin, append([]string{"diff", "--topic", b.topic, "--target-topic", b.faulty, "--format", "json", "--evidence", evf}, b.conn...)...)
	dgRun(t, 0, b.bin, append([]string{"check-evidence", evf}, b.conn...)...)

	dgRecreate(ctx, t, b.dst, b.same)
	changed := append([]*kgo.Record(nil), b.recs[1]...)
	c := *changed[1234]
	c.Value = []byte("changed after the evidence")
	changed[1234] = &c
	bedProduce(ctx, t, b.dst, b.same, 0, b.recs[0])
	bedProduce(ctx, t, b.dst, b.same, 1, changed)
	code, out, errs := bedOutput(t, b.bin, append([]string{"check-evidence", ev}, b.dstFlag...)...)
	if code != 1 || !strings.Contains(errs, fmt.Sprintf("target topic %q partition 1", b.same)) || strings.Contains(errs, "partition 0 [") {
		t.Errorf("check-evidence after the change: exit %d, want 1 naming target partition 1 only\n%s%s", code, out, errs)
	}
	t.Logf("after the change:\n%s%s", out, errs)
}

// dgFaultyCopy is p0 with source 500..502 lost, 1000..1010 replayed after 1010, 2000 altered and
// three records written directly after 2500.
func dgFaultyCopy(p0 []*kgo.Record) []*kgo.Record {
	altered := vfClone(p0[2000])
	altered.Value = []byte("re-encoded by a wrong converter")
	var direct []*kgo.Record
	for i := 0; i < 3; i++ {
		direct = append(direct, &kgo.Record{Key: []byte("new-app"), Value: fmt.Appendf(nil, "written directly %d", i)})
	}
	return vfJoin(p0[:500], p0[503:1011], p0[1000:1011], p0[1011:2000], []*kgo.Record{altered}, p0[2001:2501], direct, p0[2501:])
}

// dgCheckRegions checks that each fault is in a region and that the regions are few and small.
func dgCheckRegions(t *testing.T, regions []digest.Region) {
	t.Helper()
	// (source, target) offsets of each fault in partition 0.
	for _, f := range [][2]int64{{500, 499}, {1005, 1019}, {2000, 2008}, {2500, 2509}} {
		ok := false
		for _, r := range regions {
			ok = ok || r.SourceFrom <= f[0] && f[0] < r.SourceTo && r.TargetFrom <= f[1] && f[1] < r.TargetTo
		}
		if !ok {
			t.Errorf("no region holds source offset %d and target offset %d: %+v", f[0], f[1], regions)
		}
	}
	var n int64
	for _, r := range regions {
		n += r.SourceRecords
	}
	if len(regions) > 4 || n > 1500 {
		t.Errorf("%d regions of %d source records, want at most 4 of a few chunks", len(regions), n)
	}
}

type dgFound struct {
	Missing    []align.SourceRange
	Duplicates []offsetmap.Copy
	Mismatches []align.Mismatch
	Extra      []align.TargetRange
}

func dgFindings(t *testing.T, out string) dgFound {
	t.Helper()
	var r verify.Result
	if err := json.Unmarshal([]byte(out), &r); err != nil {
		t.Fatalf("not a kverify JSON report: %v\n%s", err, out)
	}
	var f dgFound
	for _, p := range r.Partitions {
		f.Missing = append(f.Missing, p.MissingRanges...)
		f.Duplicates = append(f.Duplicates, p.Duplicates...)
		f.Mismatches = append(f.Mismatches, p.Mismatches...)
		f.Extra = append(f.Extra, p.ExtraRanges...)
	}
	return f
}

// dgRun runs kverify and fails the test unless it exits with want; it returns stdout.
func dgRun(t *testing.T, want int, bin string, args ...string) string {
	t.Helper()
	code, out, errs := bedOutput(t, bin, args...)
	if code != want {
		t.Fatalf("kverify %s: exit %d, want %d\nstderr: %s\nstdout: %.2000s", strings.Join(args, " "), code, want, errs, out)
	}
	return out
}

// dgRecreate deletes topic on c and creates it again (2 partitions), waiting out the deletion.
func dgRecreate(ctx context.Context, t *testing.T, c cluster.Cluster, topic string) {
	t.Helper()
	adm := bedAdmin(t, c)
	if _, err := adm.DeleteTopics(ctx, topic); err != nil {
		t.Fatal(err)
	}
	bedWaitFor(ctx, t, 200*time.Millisecond, "topic "+topic+" to be created again", func() string {
		resp, err := adm.CreateTopic(ctx, 2, 1, nil, topic)
		if err == nil {
			err = resp.Err
		}
		if err != nil {
			return err.Error()
		}
		return ""
	})
	bedWaitFor(ctx, t, 100*time.Millisecond, "topic "+topic+" to have leaders", func() string {
		md, err := adm.Metadata(ctx, topic)
		if err != nil {
			return err.Error()
		}
		td := md.Topics[topic]
		if td.Err != nil || len(td.Partitions) != 2 {
			return fmt.Sprintf("%d partitions (%v)", len(td.Partitions), td.Err)
		}
		for _, p := range td.Partitions {
			if p.Leader < 0 {
				return "no leader yet"
			}
		}
		return ""
	})
}
