package integration

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/kmigrate/kmigrate/align"
	"github.com/kmigrate/kmigrate/integration/cluster"
	"github.com/kmigrate/kmigrate/offsetmap"
	"github.com/kmigrate/kmigrate/verify"
)

// TestVerify runs kverify on real brokers: Kafka 2.3.0 (source) mirrored by MirrorMaker 2
// 3.7.1 to Kafka 3.7.1 (target), or the pair $KMIGRATE_PAIR names (pair_test.go). A plain topic, a transactional producer's topic (markers and
// an aborted transaction leave gaps) and a topic compacted before mirroring are reported
// identical (exit 0). Then a copy of the plain topic with faults injected is reported with every
// fault at its exact offsets (exit 1).
func TestVerify(t *testing.T) {
	bedParallel(t)
	srcV, dstV := bedPair(t)
	src := cluster.StartT(t, cluster.Spec{Version: srcV, Name: "vf-source"})
	dst := cluster.StartT(t, cluster.Spec{Version: dstV, Name: "vf-destination"})
	ctx, cancel := context.WithTimeout(context.Background(), 12*time.Minute)
	defer cancel()
	run := fmt.Sprintf("%x", time.Now().UnixNano())
	plain, txn, compact := "vf-plain-"+run, "vf-txn-"+run, "vf-compact-"+run

	bedCreateTopic(t, src, plain, 2, nil)
	bedCreateTopic(t, src, txn, 1, nil)
	bedCreateTopic(t, src, compact, 1, map[string]*string{
		"cleanup.policy":            bedPtr("compact"),
		"segment.ms":                bedPtr("100"),
		"min.cleanable.dirty.ratio": bedPtr("0.01"),
		"min.compaction.lag.ms":     bedPtr("0"),
		"delete.retention.ms":       bedPtr("100"),
	})
	base := time.Now().Add(-time.Hour)
	for p := int32(0); p < 2; p++ {
		bedProduce(ctx, t, src, plain, p, vfRecords(fmt.Sprintf("p%d", p), 0, 400, base))
	}
	vfProduceTxns(ctx, t, src, txn, base)
	vfCompact(ctx, t, src, compact, base)

	props := vfProperties(src, dst, "vf-.*-"+run)
	propsFile := filepath.Join(t.TempDir(), "mm2.properties")
	if err := os.WriteFile(propsFile, []byte(props), 0o600); err != nil {
		t.Fatal(err)
	}
	mm := cluster.StartMM2T(t, cluster.MM2Spec{Properties: props, Target: "destination"})

	srcCl, dstCl := bedClient(t, src.Bootstrap()), bedClient(t, dst.Bootstrap())
	for _, topic := range []string{plain, txn, compact} {
		res := vfWaitIdentical(ctx, t, srcCl, dstCl, topic, mm.LogPath())
		t.Logf("%s: %+v", topic, res.Summary)
	}
	bin := filepath.Join(bedBuild(t, "kverify"), "kverify")

	t.Run("clean mirror is identical", func(t *testing.T) {
		for _, tc := range []struct{ kind, topic string }{{"plain", plain}, {"txn", txn}, {"compact", compact}} {
			kind, topic := tc.kind, tc.topic
			mapFile := filepath.Join(t.TempDir(), topic+".map.json")
			args := []string{"diff", "--mm2-config", propsFile, "--topic", topic, "--format", "json", "--offset-map", mapFile}
			if kind == "compact" {
				// Judged by default as a table, which has no record-by-record map; the copy
				// of the cleaned source is also a clean log (the target's cleaner has not run).
				code, out, errs := bedOutput(t, bin, "diff", "--mm2-config", propsFile, "--topic", topic, "--format", "json")
				if res := vfDecode(t, out); code != 0 || !res.Identical || res.Judged != verify.JudgeTable || len(res.Tables) != 1 || res.Tables[0].Differs() {
					t.Errorf("kverify diff --topic %s: exit %d, judged %q, tables %+v; want an identical table\nstderr: %s", topic, code, res.Judged, res.Tables, errs)
				}
				args = append(args, "--judge", "log")
			}
			code, out, errs := bedOutput(t, bin, args...)
			if code != 0 {
				t.Errorf("kverify diff --topic %s: exit %d, want 0\nstderr: %s\nstdout: %s", topic, code, errs, out)
				continue
			}
			res := vfDecode(t, out)
			bedReport(t, "verify-clean-"+kind+"-kverify", res)
			if !res.Identical || res.Summary.Matched == 0 {
				t.Errorf("%s: got identical=%v summary=%+v, want identical", topic, res.Identical, res.Summary)
			}
			om, err := offsetmap.ReadFile(mapFile)
			if err != nil {
				t.Fatalf("read offset map: %v", err)
			}
			if topic != plain {
				// Markers (txn) and the cleaner (compact) leave gaps in the source offsets,
				// MM2's copy is contiguous: the map has one segment per gap.
				if n := len(om.Partition(0).Segments); n < 2 {
					t.Errorf("%s: offset map has %d segments, want one per source gap (>= 2): %+v", topic, n, om.Partition(0).Segments)
				}
			}
		}
	})

	t.Run("from an offset, the target start from MM2's offset syncs", func(t *testing.T) {
		code, out, errs := bedOutput(t, bin, "diff", "--mm2-config", propsFile, "--topic", plain, "--from", "300", "--format", "json")
		if code != 0 {
			t.Fatalf("exit %d, want 0\nstderr: %s\nstdout: %s", code, errs, out)
		}
		res := vfDecode(t, out)
		bedReport(t, "verify-from-offset-kverify", res)
		for _, p := range res.Partitions {
			if p.Matched != 100 || p.Counts.Differs() || p.SourceStart != 300 {
				t.Errorf("partition %d: got %+v from %d, want 100 matched from 300", p.Partition, p.Counts, p.SourceStart)
			}
		}
	})

	t.Run("a target that rewrites timestamps", func(t *testing.T) {
		// LogAppendTime on the target topic: identical unless timestamps are compared.
		lat := "vf-lat-" + run
		bedCreateTopic(t, dst, lat, 1, map[string]*string{"message.timestamp.type": bedPtr("LogAppendTime")})
		bedProduce(ctx, t, dst, lat, 0, bedReadPartition(ctx, t, src, plain, 0, 0))
		conn := []string{"--source-brokers", strings.Join(src.Bootstrap(), ","), "--target-brokers", strings.Join(dst.Bootstrap(), ","),
			"--topic", plain, "--target-topic", lat, "--partitions", "0", "--format", "json"}
		if code, out, errs := bedOutput(t, bin, append([]string{"diff"}, conn...)...); code != 0 {
			t.Errorf("default --compare: exit %d, want 0\nstderr: %s\nstdout: %s", code, errs, out)
		}
		code, out, errs := bedOutput(t, bin, append([]string{"diff", "--compare", "key,value,headers,timestamp"}, conn...)...)
		if code != 1 {
			t.Fatalf("--compare with timestamp: exit %d, want 1\nstderr: %s", code, errs)
		}
		tres := vfDecode(t, out)
		bedReport(t, "verify-logappendtime-kverify", tres)
		p := tres.Partitions[0]
		if p.Mismatched != 400 || len(p.Mismatches) == 0 || !reflect.DeepEqual(p.Mismatches[0].Fields, []string{"timestamp"}) {
			t.Errorf("got %+v, first mismatches %v; want 400 mismatched on [timestamp]", p.Counts, p.Mismatches[:min(2, len(p.Mismatches))])
		}
	})

	t.Run("faults at their exact offsets", func(t *testing.T) {
		faulty := "vf-faulty-" + run
		bedCreateTopic(t, dst, faulty, 2, nil)
		p0 := bedReadPartition(ctx, t, src, plain, 0, 0)
		p1 := bedReadPartition(ctx, t, src, plain, 1, 0)
		if len(p0) != 400 || len(p1) != 400 {
			t.Fatalf("read %d and %d records of %s, want 400 each", len(p0), len(p1), plain)
		}
		altered := vfClone(p0[200])
		altered.Value = []byte("re-encoded by a wrong converter")
		noHeader := vfClone(p0[250])
		noHeader.Headers = nil
		var direct []*kgo.Record
		for i := 0; i < 3; i++ {
			direct = append(direct, &kgo.Record{Key: []byte("new-app"), Value: fmt.Appendf(nil, "written directly %d", i)})
		}
		copy0 := vfJoin(
			p0[0:50],               // source 50..54 left out
			p0[55:121],             // target 50..115
			p0[110:121],            // replayed: target 116..126 repeat source 110..120
			p0[121:200],            // target 127..205
			[]*kgo.Record{altered}, // source 200 -> target 206
			p0[201:250],
			[]*kgo.Record{noHeader}, // source 250 -> target 256
			p0[251:],                // target 257..405
			direct,                  // target 406..408
		)
		bedProduce(ctx, t, dst, faulty, 0, copy0)
		bedProduce(ctx, t, dst, faulty, 1, p1)

		code, out, errs := bedOutput(t, bin, "diff", "--source-brokers", strings.Join(src.Bootstrap(), ","),
			"--target-brokers", strings.Join(dst.Bootstrap(), ","), "--topic", plain, "--target-topic", faulty, "--format", "json")
		if code != 1 {
			t.Fatalf("exit %d, want 1\nstderr: %s\nstdout: %s", code, errs, out)
		}
		res := vfDecode(t, out)
		bedReport(t, "verify-faults-kverify", res)
		if len(res.Partitions) != 2 {
			t.Fatalf("got %d partitions, want 2", len(res.Partitions))
		}
		got := res.Partitions[0]
		if want := (align.Counts{Matched: 393, Missing: 5, Duplicated: 11, Mismatched: 2, Extra: 3}); got.Counts != want {
			t.Errorf("partition 0 counts: got %+v, want %+v", got.Counts, want)
		}
		if want := []align.SourceRange{{From: 50, To: 54}}; !reflect.DeepEqual(got.MissingRanges, want) {
			t.Errorf("missing_ranges: got %v, want %v", got.MissingRanges, want)
		}
		var dups []offsetmap.Copy
		for i := int64(0); i < 11; i++ {
			dups = append(dups, offsetmap.Copy{Target: 116 + i, Source: 110 + i})
		}
		if !reflect.DeepEqual(got.Duplicates, dups) {
			t.Errorf("duplicates: got %v, want %v", got.Duplicates, dups)
		}
		wantMism := []align.Mismatch{
			{SourceOffset: 200, TargetOffset: 206, Fields: []string{"value"}},
			{SourceOffset: 250, TargetOffset: 256, Fields: []string{"headers"}},
		}
		if !reflect.DeepEqual(got.Mismatches, wantMism) {
			t.Errorf("mismatches: got %v, want %v", got.Mismatches, wantMism)
		}
		if want := []align.TargetRange{{From: 406, To: 408}}; !reflect.DeepEqual(got.ExtraRanges, want) {
			t.Errorf("extra_ranges: got %v, want %v", got.ExtraRanges, want)
		}
		if p := res.Partitions[1]; p.Counts.Differs() || p.Matched != 400 {
			t.Errorf("partition 1: got %+v, want 400 matched and nothing else", p.Counts)
		}
	})
}

// vfProperties is an mm2.properties mirroring the topics matching topics from source to
// destination with the identity policy. Topic configs are not synced (a compacted source
// would otherwise be compacted again on the target), and the source is read with
// read_committed so that aborted transactions are not copied.
func vfProperties(source, target cluster.Cluster, topics string) string {
	return bedProperties(source, target, "source", "destination", topics, append([]string{
		"source.consumer.isolation.level=read_committed",
		"sync.topic.configs.enabled=false",
		"sync.topic.acls.enabled=false",
		"refresh.topics.enabled=true",
		"refresh.topics.interval.seconds=2",
		"emit.checkpoints.enabled=false",
		"sync.group.offsets.enabled=false",
	}, bedMM2Worker...)...)
}

// vfRecords makes records prefix-i for i in [from, to): key, value, two headers, CreateTime
// timestamps one millisecond apart.
func vfRecords(prefix string, from, to int, base time.Time) []*kgo.Record {
	var out []*kgo.Record
	for i := from; i < to; i++ {
		out = append(out, &kgo.Record{
			Key:       fmt.Appendf(nil, "%s-key-%d", prefix, i%37),
			Value:     fmt.Appendf(nil, "%s-value-%d", prefix, i),
			Headers:   []kgo.RecordHeader{{Key: "trace", Value: fmt.Appendf(nil, "t%d", i)}, {Key: "empty", Value: []byte{}}},
			Timestamp: base.Add(time.Duration(i) * time.Millisecond),
		})
	}
	return out
}

func vfClone(r *kgo.Record) *kgo.Record {
	c := *r
	c.Headers = append([]kgo.RecordHeader(nil), r.Headers...)
	return &c
}

func vfJoin(parts ...[]*kgo.Record) []*kgo.Record {
	var out []*kgo.Record
	for _, p := range parts {
		for _, r := range p {
			out = append(out, vfClone(r))
		}
	}
	return out
}

// vfProduceTxns writes 8 transactions of 25 records to topic/0; every third is aborted.
func vfProduceTxns(ctx context.Context, t *testing.T, c cluster.Cluster, topic string, base time.Time) {
	t.Helper()
	cl := bedClient(t, c.Bootstrap(), kgo.RecordPartitioner(kgo.ManualPartitioner()), kgo.TransactionalID(bedUnique("vf-txn")))
	for b := 0; b < 8; b++ {
		if err := cl.BeginTransaction(); err != nil {
			t.Fatalf("begin transaction on %s: %v", c.Name(), err)
		}
		for _, r := range vfRecords("txn", b*25, b*25+25, base) {
			r.Topic, r.Partition = topic, 0
			if err := cl.ProduceSync(ctx, r).FirstErr(); err != nil {
				t.Fatalf("produce in transaction to %s on %s: %v", topic, c.Name(), err)
			}
		}
		if err := cl.EndTransaction(ctx, kgo.TransactionEndTry(b%3 != 2)); err != nil {
			t.Fatalf("end transaction on %s: %v", c.Name(), err)
		}
	}
}

// vfCompact writes 10 rounds over 40 keys to topic/0 (see below) and waits until the log cleaner has
// removed overwritten records (fewer records than offsets), producing a filler record now and
// then so that segments roll (segment.ms only rolls on an append).
func vfCompact(ctx context.Context, t *testing.T, c cluster.Cluster, topic string, base time.Time) {
	t.Helper()
	// Keys 0..19 are written once, keys 20..39 ten times: the survivors are offsets 0..19 and
	// the last round, so the cleaner leaves a gap in the middle of the log.
	var recs []*kgo.Record
	for round := 0; round < 10; round++ {
		for k := 0; k < 40; k++ {
			if round > 0 && k < 20 {
				continue
			}
			recs = append(recs, &kgo.Record{Key: fmt.Appendf(nil, "key-%d", k), Value: fmt.Appendf(nil, "round-%d-key-%d", round, k),
				Timestamp: base.Add(time.Duration(len(recs)) * time.Millisecond)})
		}
	}
	bedProduce(ctx, t, c, topic, 0, recs)
	deadline := time.Now().Add(3 * time.Minute)
	for i := 0; ; i++ {
		end := bedEndOffsets(ctx, t, c, topic)[0]
		got := int64(len(bedReadPartition(ctx, t, c, topic, 0, 0)))
		if got < end/2 {
			t.Logf("%s compacted: %d records over %d offsets", topic, got, end)
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s on %s: still %d records over %d offsets after 3 minutes: the log cleaner did not run", topic, c.Name(), got, end)
		}
		bedProduce(ctx, t, c, topic, 0, []*kgo.Record{{Key: []byte("filler"), Value: fmt.Appendf(nil, "filler-%d", i), Timestamp: time.Now()}})
		select {
		case <-ctx.Done():
			t.Fatal(ctx.Err())
		case <-time.After(time.Second):
		}
	}
}

// vfWaitIdentical polls verify.Diff until MM2 has mirrored topic completely.
func vfWaitIdentical(ctx context.Context, t *testing.T, src, dst *kgo.Client, topic, mm2Log string) *verify.Result {
	t.Helper()
	deadline := time.Now().Add(4 * time.Minute)
	for {
		dctx, cancel := context.WithTimeout(ctx, time.Minute)
		res, _, err := verify.Diff(dctx, src, dst, verify.Config{SourceTopic: topic})
		cancel()
		if err == nil && res.Identical {
			return res
		}
		if time.Now().After(deadline) {
			if err != nil {
				t.Fatalf("%s not mirrored after 4 minutes: %v\nMM2 log: %s", topic, err, mm2Log)
			}
			t.Fatalf("%s not mirrored after 4 minutes: problems %v summary %+v partitions %+v\nMM2 log: %s", topic, res.Problems, res.Summary, res.Partitions, mm2Log)
		}
		select {
		case <-ctx.Done():
			t.Fatal(ctx.Err())
		case <-time.After(2 * time.Second):
		}
	}
}

func vfDecode(t *testing.T, out string) *verify.Result {
	t.Helper()
	var res verify.Result
	if err := json.Unmarshal([]byte(out), &res); err != nil {
		t.Fatalf("kverify output is not JSON: %v\n%s", err, out)
	}
	return &res
}

// TestVerifyNothingToCompare runs kverify on real brokers, each version of the pair (2.3.0
// and 3.7.1, or those $KMIGRATE_PAIR names) as the source in turn, where the answer depends on Kafka: ListOffsets by a time after the last
// record of a partition (Kafka answers -1, which kadm turns into the end offset). A range with
// no source record is never identical: with nothing compared at all kverify exits 2 and writes
// nothing; with a partition past its end and another not, the first is named as not compared
// and left out of the offset map. No MirrorMaker: the same records are written to both sides.
func TestVerifyNothingToCompare(t *testing.T) {
	bedParallel(t)
	old, cur := bedSharedPair(t)
	ctx := bedCtx(t, 10*time.Minute)
	bin := filepath.Join(bedBuild(t, "kverify"), "kverify")
	base := time.Now().Add(-time.Hour).Truncate(time.Second)
	at := func(d time.Duration) string { return base.Add(d).UTC().Format(time.RFC3339Nano) }
	for _, pair := range []struct{ src, dst cluster.Cluster }{{old, cur}, {cur, old}} {
		src, dst := pair.src, pair.dst
		t.Run(src.Name()+" to "+dst.Name(), func(t *testing.T) {
			topic := bedUnique("vn")
			for _, c := range []cluster.Cluster{src, dst} {
				bedCreateTopic(t, c, topic, 2, nil)
				// Partition 0: 50 records at base+0..49 ms; partition 1: 10 records at base+1000..1009 ms.
				bedProduce(ctx, t, c, topic, 0, vfRecords("p0", 0, 50, base))
				bedProduce(ctx, t, c, topic, 1, vfRecords("p1", 1000, 1010, base))
			}
			conn := []string{"--source-brokers", strings.Join(src.Bootstrap(), ","), "--target-brokers", strings.Join(dst.Bootstrap(), ","),
				"--topic", topic, "--format", "json", "--quiet"}
			for _, tc := range []struct{ name, from string }{
				{"from a time after every record", at(time.Hour)},
				{"from a time one millisecond after the last record", at(1010 * time.Millisecond)},
				{"from an offset past every end", "50"},
			} {
				t.Run(tc.name, func(t *testing.T) {
					dir := t.TempDir()
					mapFile, outFile := filepath.Join(dir, "map.json"), filepath.Join(dir, "r.json")
					code, out, errs := bedOutput(t, bin, append([]string{"diff", "--from", tc.from, "--offset-map", mapFile, "--out", outFile}, conn...)...)
					if code != 2 || !strings.Contains(errs, "nothing to compare") || !strings.Contains(errs, "partition 0") || !strings.Contains(errs, "partition 1") {
						t.Errorf("exit %d stderr %q, want exit 2 naming nothing to compare in partitions 0 and 1", code, errs)
					}
					if out != "" {
						t.Errorf("stdout %q, want nothing", out)
					}
					for _, f := range []string{mapFile, outFile} {
						if _, err := os.Stat(f); !os.IsNotExist(err) {
							t.Errorf("%s was written (stat %v)", f, err)
						}
					}
				})
			}
			t.Run("from a time after the last record of one partition", func(t *testing.T) {
				mapFile := filepath.Join(t.TempDir(), "map.json")
				code, out, errs := bedOutput(t, bin, append([]string{"diff", "--from", at(1005 * time.Millisecond), "--offset-map", mapFile}, conn...)...)
				if code != 0 {
					t.Fatalf("exit %d, want 0\nstderr: %s\nstdout: %s", code, errs, out)
				}
				res := vfDecode(t, out)
				bedReport(t, "verify-nothing-to-compare-"+src.Name(), res)
				if !reflect.DeepEqual(res.NotCompared, []int32{0}) || len(res.Partitions) != 2 || res.Partitions[0].NotCompared == "" {
					t.Errorf("not_compared %v partitions %+v, want partition 0 not compared", res.NotCompared, res.Partitions)
				}
				if p := res.Partitions[1]; p.Matched != 5 || p.Counts.Differs() || p.SourceStart != 5 {
					t.Errorf("partition 1: %+v from %d, want 5 matched from offset 5", p.Counts, p.SourceStart)
				}
				om, err := offsetmap.ReadFile(mapFile)
				if err != nil {
					t.Fatal(err)
				}
				if om.Partition(0) != nil || om.Partition(1) == nil {
					t.Errorf("offset map partitions %+v, want 1 only", om.Partitions)
				}
			})
			t.Run("partitions far past the topic", func(t *testing.T) {
				start := time.Now()
				code, _, errs := bedOutput(t, bin, append([]string{"diff", "--partitions", "0-99999999"}, conn...)...)
				if code != 2 || !strings.Contains(errs, "no partitions 2-99999999") {
					t.Errorf("exit %d stderr %q, want exit 2 naming partitions 2-99999999", code, errs)
				}
				if d := time.Since(start); d > time.Minute {
					t.Errorf("took %v to refuse", d)
				}
			})
		})
	}
}
