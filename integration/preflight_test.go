package integration

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/kmigrate/kmigrate/integration/cluster"
	"github.com/kmigrate/kmigrate/logread"
	"github.com/kmigrate/kmigrate/verify"
)

// TestPreflight runs `kverify topics` against real brokers, Kafka 2.3.0 (ZooKeeper) as the
// source and 3.7.1 (KRaft) as the target, with one topic per kind of finding: partition counts
// that differ, a config MM2 does not sync (unclean.leader.election.enable, excluded by default),
// LogAppendTime on the target, a target max.message.bytes below a source record (measured by
// reading the source, and bounded without reading), a short source retention, and a topic
// missing on the target; plus one topic equal on both sides. It asserts the findings, the
// broker versions derived from ApiVersions, the racks, the exit codes (0 all ok, 1 findings,
// 2 nothing selected) and that the target was not written to. $KMIGRATE_PAIR (pair_test.go)
// picks other versions.
func TestPreflight(t *testing.T) {
	bedParallel(t)
	srcV, dstV := bedPair(t)
	src := cluster.StartT(t, cluster.Spec{Version: srcV, Name: "pf-source", Config: map[string]string{"broker.rack": "rack-old"}})
	dst := cluster.StartT(t, cluster.Spec{Version: dstV, Name: "pf-target", Config: map[string]string{"broker.rack": "rack-new"}})
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	run := fmt.Sprintf("%x", time.Now().UnixNano())
	name := func(s string) string { return "pf-" + s + "-" + run }
	same, parts, excl, ts, big, short, gone := name("same"), name("parts"), name("excl"), name("ts"), name("big"), name("short"), name("gone")

	bedCreateTopic(t, src, same, 2, nil)
	bedCreateTopic(t, dst, same, 2, nil)
	bedCreateTopic(t, src, parts, 3, nil)
	bedCreateTopic(t, dst, parts, 2, nil)
	bedCreateTopic(t, src, excl, 1, map[string]*string{"unclean.leader.election.enable": bedPtr("true")})
	bedCreateTopic(t, dst, excl, 1, nil)
	bedCreateTopic(t, src, ts, 1, nil)
	bedCreateTopic(t, dst, ts, 1, map[string]*string{"message.timestamp.type": bedPtr("LogAppendTime")})
	bedCreateTopic(t, src, big, 1, nil)
	bedCreateTopic(t, dst, big, 1, map[string]*string{"max.message.bytes": bedPtr("2000")})
	bedCreateTopic(t, src, short, 1, map[string]*string{"retention.ms": bedPtr("3600000")})
	bedCreateTopic(t, dst, short, 1, nil)
	bedCreateTopic(t, src, gone, 2, map[string]*string{"retention.ms": bedPtr("172800000")})

	now := time.Now()
	bedProduce(ctx, t, src, same, 0, []*kgo.Record{{Key: []byte("k"), Value: []byte("small"), Timestamp: now}})
	largest := &kgo.Record{Key: []byte("large"), Value: []byte(strings.Repeat("v", 10_000)), Timestamp: now,
		Headers: []kgo.RecordHeader{{Key: "h", Value: []byte("x")}}}
	bedProduce(ctx, t, src, big, 0, []*kgo.Record{
		{Value: []byte("a"), Timestamp: now}, {Value: []byte(strings.Repeat("w", 1500)), Timestamp: now}, largest, {Value: []byte("b"), Timestamp: now}})
	wantBatch := logread.RecordBatchSize(largest)

	bin := filepath.Join(bedBuild(t, "kverify"), "kverify")
	conn := []string{"--source-brokers", strings.Join(src.Bootstrap(), ","), "--target-brokers", strings.Join(dst.Bootstrap(), ",")}
	targetTopics := func() []string {
		tds, err := bedAdmin(t, dst).ListTopics(ctx)
		if err != nil {
			t.Fatalf("list target topics: %v", err)
		}
		return tds.Names()
	}
	before := targetTopics()
	topicsRun := func(t *testing.T, args ...string) (int, *verify.PreflightResult, string) {
		t.Helper()
		code, out, errs := bedOutput(t, bin, append(append([]string{"topics", "--format", "json"}, args...), conn...)...)
		if code == 2 {
			return code, nil, errs
		}
		var res verify.PreflightResult
		if err := json.Unmarshal([]byte(out), &res); err != nil {
			t.Fatalf("kverify topics %s: exit %d, output is not JSON: %v\nstdout: %s\nstderr: %s", strings.Join(args, " "), code, err, out, errs)
		}
		return code, &res, errs
	}
	check := func(res *verify.PreflightResult, topic string) verify.TopicCheck {
		for _, tc := range res.Topics {
			if tc.SourceTopic == topic {
				return tc
			}
		}
		t.Fatalf("topic %s not in the preflight", topic)
		return verify.TopicCheck{}
	}
	find := func(tc verify.TopicCheck, field string) verify.Finding {
		for _, f := range tc.Findings {
			if f.Field == field {
				return f
			}
		}
		t.Errorf("%s: no %s finding in %+v", tc.SourceTopic, field, tc.Findings)
		return verify.Finding{}
	}

	t.Run("every kind of finding, exit 1", func(t *testing.T) {
		code, res, errs := topicsRun(t, "--topics", "pf-.*-"+run)
		if code != 1 {
			t.Fatalf("exit %d, want 1\n%s", code, errs)
		}
		bedReport(t, "preflight-kverify", res)
		for _, c := range []struct {
			cl      verify.ClusterCheck
			version string
			rack    string
		}{{res.Source, pfLine(srcV), "rack-old"}, {res.Target, pfLine(dstV), "rack-new"}} {
			if len(c.cl.Brokers) != 1 || c.cl.Brokers[0].Version != c.version || c.cl.Brokers[0].Rack != c.rack {
				t.Errorf("cluster %s: got brokers %+v, want one broker of Kafka %s in rack %s", c.cl.Alias, c.cl.Brokers, c.version, c.rack)
			}
		}
		if len(res.ClusterFindings) != 0 {
			t.Errorf("got cluster findings %+v, want none (one version per cluster, racks on both)", res.ClusterFindings)
		}
		want := map[string]verify.TopicStatus{same: verify.TopicOK, parts: verify.TopicDiffers, excl: verify.TopicDiffers,
			ts: verify.TopicRisk, big: verify.TopicRisk, short: verify.TopicRisk, gone: verify.TopicMissing}
		if len(res.Topics) != len(want) {
			t.Errorf("got %d topics, want %d", len(res.Topics), len(want))
		}
		for topic, st := range want {
			if tc := check(res, topic); tc.Status != st {
				t.Errorf("%s: got status %s, want %s; findings %+v", topic, tc.Status, st, tc.Findings)
			}
		}
		if tc := check(res, same); len(tc.Findings) != 0 {
			t.Errorf("%s: got findings %+v, want none between %s and %s defaults", same, tc.Findings, srcV, dstV)
		}
		if f := find(check(res, parts), "partitions"); f.Source != "3" || f.Target != "2" {
			t.Errorf("partitions: got %+v", f)
		}
		f := find(check(res, excl), "unclean.leader.election.enable")
		if f.Source != "true" || f.Target != "false" || f.MM2Syncs == nil || *f.MM2Syncs || !strings.Contains(f.Note, "config.properties.exclude") {
			t.Errorf("unclean.leader.election.enable: got %+v, want true -> false, not synced (excluded)", f)
		}
		if f := find(check(res, ts), "message.timestamp.type"); f.Source != "CreateTime" || f.Target != "LogAppendTime" || f.Severity != verify.SeverityRisk {
			t.Errorf("message.timestamp.type: got %+v", f)
		}
		bt := check(res, big)
		f = find(bt, "max.message.bytes")
		if f.Severity != verify.SeverityRisk || f.Target != "2000" || bt.LargestRecord == nil ||
			bt.LargestRecord.Offset != 2 || bt.LargestRecord.BatchSize != wantBatch || bt.LargestRecord.Records != 4 {
			t.Errorf("max.message.bytes: got %+v, largest %+v; want a risk for offset 2 (%d bytes, 4 records read)", f, bt.LargestRecord, wantBatch)
		}
		t.Logf("largest record of %s: %+v (note: %s)", big, bt.LargestRecord, f.Note)
		if f := find(check(res, short), "retention.ms"); f.Source != "3600000" || f.Severity != verify.SeverityRisk {
			t.Errorf("retention.ms: got %+v", f)
		}
		if f := find(check(res, gone), "topic"); !strings.Contains(f.Note, "2 partitions") || !strings.Contains(f.Note, "retention.ms=172800000") {
			t.Errorf("missing topic: got %+v, want what MM2 would create", f)
		}
		for _, tc := range res.Topics {
			t.Logf("%s: %s %d findings", tc.SourceTopic, tc.Status, len(tc.Findings))
			for _, f := range tc.Findings {
				t.Logf("  %s %s: %q -> %q", f.Severity, f.Field, f.Source, f.Target)
			}
		}
	})

	// The size the rule compares is the one the broker counts: 3.7.1 takes the largest record
	// alone, uncompressed, under max.message.bytes = its size, and refuses it one byte below.
	t.Run("the one-record batch size is what the broker counts", func(t *testing.T) {
		fit, tight := name("fit"), name("tight")
		bedCreateTopic(t, dst, fit, 1, map[string]*string{"max.message.bytes": bedPtr(fmt.Sprint(wantBatch))})
		bedCreateTopic(t, dst, tight, 1, map[string]*string{"max.message.bytes": bedPtr(fmt.Sprint(wantBatch - 1))})
		cl := bedClient(t, dst.Bootstrap(), kgo.ProducerBatchCompression(kgo.NoCompression()), kgo.RecordRetries(0))
		for _, c := range []struct {
			topic string
			ok    bool
		}{{fit, true}, {tight, false}} {
			r := *largest
			r.Topic = c.topic
			err := cl.ProduceSync(ctx, &r).FirstErr()
			if (err == nil) != c.ok || (!c.ok && !errors.Is(err, kerr.MessageTooLarge)) {
				t.Errorf("produce the %d-byte record to %s: got %v, want accepted=%v (MESSAGE_TOO_LARGE when refused)", wantBatch, c.topic, err, c.ok)
			}
		}
		before = append(before, fit, tight) // created by the test, not by kverify
	})

	t.Run("all ok exits 0", func(t *testing.T) {
		code, res, errs := topicsRun(t, "--topics", same)
		if code != 0 || !res.OK || len(res.Topics) != 1 {
			t.Fatalf("exit %d, result %+v, want 0 and one ok topic\n%s", code, res, errs)
		}
	})

	t.Run("without reading records the size is a bound", func(t *testing.T) {
		code, res, errs := topicsRun(t, "--topics", big, "--scan-records=false")
		if code != 1 {
			t.Fatalf("exit %d, want 1\n%s", code, errs)
		}
		tc := check(res, big)
		// The source's built-in max.message.bytes (1000012 on 2.3.0, 1048588 on 3.7.1 and
		// 4.3.1) bounds the source batches: above 2000.
		if f := find(tc, "max.message.bytes"); f.Severity != verify.SeverityRisk || !strings.Contains(f.Note, "a bound, not a measured size") || tc.LargestRecord != nil {
			t.Errorf("got %+v, want a risk noted as a bound", f)
		}
	})

	t.Run("the flow of an MM2 file selects and names the topics", func(t *testing.T) {
		props := bedProperties(src, dst, "old", "new", big+","+gone)
		file := filepath.Join(t.TempDir(), "mm2.properties")
		if err := os.WriteFile(file, []byte(props), 0o600); err != nil {
			t.Fatal(err)
		}
		code, out, errs := bedOutput(t, bin, "topics", "--mm2-config", file, "--format", "json")
		var res verify.PreflightResult
		if code != 1 || json.Unmarshal([]byte(out), &res) != nil {
			t.Fatalf("exit %d, want 1 and JSON\n%s\n%s", code, out, errs)
		}
		var got []string
		for _, tc := range res.Topics {
			got = append(got, tc.SourceTopic+"="+string(tc.Status))
		}
		slices.Sort(got)
		if want := []string{big + "=risk", gone + "=missing"}; !slices.Equal(got, want) {
			t.Errorf("got %q, want %q", got, want)
		}
	})

	t.Run("nothing selected exits 2", func(t *testing.T) {
		code, _, errs := topicsRun(t, "--topics", "pf-none-"+run)
		if code != 2 || !strings.Contains(errs, "no source topic selected") {
			t.Errorf("exit %d, stderr %q; want 2 naming the empty selection", code, errs)
		}
	})

	// Kafka 4 removed topic configs an older source may still set: the 4.x target reports no
	// such config, and the finding says what Kafka 4 does instead and what to do.
	t.Run("source overrides Kafka 4 removed", func(t *testing.T) {
		if dstV != cluster.V431 || srcV == cluster.V431 {
			t.Skipf("the target is %s and the source %s: needs a 4.x target and an older source", dstV, srcV)
		}
		removed := map[string]string{
			"message.downconversion.enable":       "false",
			"message.timestamp.difference.max.ms": "3600000",
		}
		if srcV == cluster.V230 {
			removed["message.format.version"] = "2.3-IV1" // 3.x accepts it but ignores it
		}
		old := name("old")
		configs := map[string]*string{}
		for k, v := range removed {
			configs[k] = bedPtr(v)
		}
		bedCreateTopic(t, src, old, 1, configs)
		bedCreateTopic(t, dst, old, 1, nil)
		before = append(before, old) // created by the test, not by kverify
		code, res, errs := topicsRun(t, "--topics", old)
		if code == 2 {
			t.Fatalf("exit 2\n%s", errs)
		}
		tc := check(res, old)
		for k, v := range removed {
			f := find(tc, k)
			if f.Source != v || f.Target != "" || f.Severity != verify.SeverityWarning || !strings.Contains(f.Note, "Kafka 4 removed") {
				t.Errorf("%s: got %+v, want a warning from %s to nothing saying what Kafka 4 does", k, f, v)
			}
			t.Logf("%s=%s: %s", k, v, f.Note)
		}
	})

	after := targetTopics()
	slices.Sort(before)
	slices.Sort(after)
	if !slices.Equal(before, after) || slices.Contains(after, gone) {
		t.Errorf("the target's topics changed during the preflight: before %q, after %q", before, after)
	}
}

// pfLine is the release line kverify topics names for a broker of version v: "2.3" for 2.3.0.
func pfLine(v string) string {
	major, rest, _ := strings.Cut(v, ".")
	minor, _, _ := strings.Cut(rest, ".")
	return major + "." + minor
}
