package verify

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/kmigrate/kmigrate/internal/testkit"
	"github.com/kmigrate/kmigrate/logread"
	"github.com/kmigrate/kmigrate/mm2"
)

func sp(s string) *string { return &s }

func preflight(t *testing.T, src, dst *kgo.Client, cfg PreflightConfig) *PreflightResult {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if cfg.Flow == nil {
		cfg.Flow = mm2.NewFlow("old", "new", mm2.IdentityPolicy{})
	}
	res, err := Preflight(ctx, src, dst, cfg)
	if err != nil {
		t.Fatalf("Preflight: %v", err)
	}
	return res
}

func topicCheck(t *testing.T, res *PreflightResult, name string) TopicCheck {
	t.Helper()
	for _, tc := range res.Topics {
		if tc.SourceTopic == name {
			return tc
		}
	}
	t.Fatalf("topic %s not in the result (%d topics)", name, len(res.Topics))
	return TopicCheck{}
}

func finding(tc TopicCheck, field string) (Finding, bool) {
	for _, f := range tc.Findings {
		if f.Field == field {
			return f, true
		}
	}
	return Finding{}, false
}

// preflightBed creates, on two kfake clusters, one topic per rule with a difference and one
// topic equal on both sides.
func preflightBed(t *testing.T) (src, dst *kgo.Client) {
	src, dst = newCluster(t), newCluster(t)
	testkit.CreateTopic(t, src, "same", 3, nil)
	testkit.CreateTopic(t, dst, "same", 3, nil)
	testkit.CreateTopic(t, src, "parts", 3, nil)
	testkit.CreateTopic(t, dst, "parts", 2, nil)
	testkit.CreateTopic(t, src, "ts", 1, nil)
	testkit.CreateTopic(t, dst, "ts", 1, map[string]*string{"message.timestamp.type": sp("LogAppendTime")})
	testkit.CreateTopic(t, src, "big", 1, nil)
	testkit.CreateTopic(t, dst, "big", 1, map[string]*string{"max.message.bytes": sp("1000")})
	testkit.Produce(t, src, "big", 0, []*kgo.Record{{Value: []byte("small")}, {Value: []byte(strings.Repeat("x", 5000))}, {Value: []byte("small")}}...)
	testkit.CreateTopic(t, src, "gone", 2, map[string]*string{"retention.ms": sp("604800001")})
	testkit.CreateTopic(t, src, "short", 1, map[string]*string{"retention.ms": sp("3600000")})
	testkit.CreateTopic(t, dst, "short", 1, nil)
	testkit.CreateTopic(t, src, "synced", 1, map[string]*string{"segment.ms": sp("3600001")})
	testkit.CreateTopic(t, dst, "synced", 1, nil)
	testkit.CreateTopic(t, src, "compact", 1, nil)
	testkit.CreateTopic(t, dst, "compact", 1, map[string]*string{"cleanup.policy": sp("compact")})
	testkit.CreateTopic(t, src, "isr", 1, nil)
	testkit.CreateTopic(t, dst, "isr", 1, map[string]*string{"min.insync.replicas": sp("2")})
	return src, dst
}

func TestPreflightFindings(t *testing.T) {
	src, dst := preflightBed(t)
	res := preflight(t, src, dst, PreflightConfig{ScanRecords: true})
	if res.OK || res.Findings == 0 {
		t.Fatalf("got OK=%v with %d findings, want findings", res.OK, res.Findings)
	}
	want := map[string]TopicStatus{"same": TopicOK, "parts": TopicDiffers, "ts": TopicRisk, "big": TopicRisk,
		"gone": TopicMissing, "short": TopicRisk, "synced": TopicDiffers, "compact": TopicRisk, "isr": TopicRisk}
	if len(res.Topics) != len(want) {
		t.Errorf("got %d topics, want %d", len(res.Topics), len(want))
	}
	for name, st := range want {
		if tc := topicCheck(t, res, name); tc.Status != st {
			t.Errorf("topic %s: got status %s, want %s; findings %+v", name, tc.Status, st, tc.Findings)
		}
	}
	if tc := topicCheck(t, res, "same"); len(tc.Findings) != 0 {
		t.Errorf("topic same: got findings %+v, want none", tc.Findings)
	}
	f, ok := finding(topicCheck(t, res, "parts"), "partitions")
	if !ok || f.Source != "3" || f.Target != "2" || f.Severity != SeverityWarning {
		t.Errorf("parts: got %+v, want partitions 3 -> 2, a warning", f)
	}
	f, ok = finding(topicCheck(t, res, "ts"), "message.timestamp.type")
	if !ok || f.Source != "CreateTime" || f.Target != "LogAppendTime" || f.Severity != SeverityRisk || f.MM2Syncs == nil || *f.MM2Syncs {
		t.Errorf("ts: got %+v, want CreateTime -> LogAppendTime, a risk MM2 does not sync (excluded)", f)
	}
	big := topicCheck(t, res, "big")
	f, ok = finding(big, "max.message.bytes")
	wantSize := logread.RecordBatchSize(&kgo.Record{Value: []byte(strings.Repeat("x", 5000))})
	if !ok || f.Severity != SeverityRisk || f.Target != "1000" || big.LargestRecord == nil ||
		big.LargestRecord.Offset != 1 || big.LargestRecord.BatchSize != wantSize || big.LargestRecord.Records != 3 {
		t.Errorf("big: got %+v, largest %+v; want a risk for the record at offset 1 (%d bytes, 3 read) over 1000", f, big.LargestRecord, wantSize)
	}
	if !strings.Contains(f.Note, "Measured by reading all 3 source records") {
		t.Errorf("big: the note %q does not say how the size was found", f.Note)
	}
	gone := topicCheck(t, res, "gone")
	f, ok = finding(gone, "topic")
	if !ok || gone.TargetPartitions != 0 || !strings.Contains(f.Note, "2 partitions") || !strings.Contains(f.Note, "retention.ms=604800001") {
		t.Errorf("gone: got %+v, want a missing topic MM2 creates with 2 partitions and retention.ms", f)
	}
	f, ok = finding(topicCheck(t, res, "short"), "retention.ms")
	if !ok || f.Severity != SeverityRisk || f.Source != "3600000" {
		t.Errorf("short: got %+v, want a retention risk for 1h", f)
	}
	f, ok = finding(topicCheck(t, res, "synced"), "segment.ms")
	if !ok || f.Severity != SeverityInfo || f.MM2Syncs == nil || !*f.MM2Syncs || f.Source != "3600001" {
		t.Errorf("synced: got %+v, want segment.ms differing, info, synced by MM2", f)
	}
	if f, ok = finding(topicCheck(t, res, "compact"), "cleanup.policy"); !ok || f.Severity != SeverityRisk {
		t.Errorf("compact: got %+v, want a cleanup.policy risk", f)
	}
	f, ok = finding(topicCheck(t, res, "isr"), "min.insync.replicas")
	if !ok || f.Severity != SeverityRisk || !strings.Contains(f.Note, "NOT_ENOUGH_REPLICAS") {
		t.Errorf("isr: got %+v, want a risk: min.insync.replicas 2 above replication factor 1", f)
	}
	if len(res.Source.Brokers) != 1 || res.Source.Brokers[0].Version == "" {
		t.Errorf("source brokers: got %+v", res.Source.Brokers)
	}
}

// Without reading records the largest record is a bound, and the finding says so.
func TestPreflightBoundWithoutScan(t *testing.T) {
	src, dst := preflightBed(t)
	res := preflight(t, src, dst, PreflightConfig{Topics: []string{"big", "same"}})
	if len(res.Topics) != 2 {
		t.Fatalf("--topics big,same: got %d topics", len(res.Topics))
	}
	big := topicCheck(t, res, "big")
	f, ok := finding(big, "max.message.bytes")
	if !ok || f.Severity != SeverityRisk || !strings.Contains(f.Note, "a bound, not a measured size") || big.LargestRecord != nil {
		t.Errorf("big: got %+v (largest %+v), want a risk noted as a bound", f, big.LargestRecord)
	}
	if tc := topicCheck(t, res, "same"); tc.Status != TopicOK || len(tc.Notes) == 0 {
		t.Errorf("same: got %s, notes %q; want ok with a note on how max.message.bytes was checked", tc.Status, tc.Notes)
	}
}

func TestPreflightSelection(t *testing.T) {
	src, dst := newCluster(t), newCluster(t)
	testkit.CreateTopic(t, src, "orders", 1, nil)
	testkit.CreateTopic(t, dst, "orders", 1, nil)
	testkit.CreateTopic(t, src, "x.internal", 1, nil)
	testkit.CreateTopic(t, src, "payments", 1, nil)
	res := preflight(t, src, dst, PreflightConfig{Topics: []string{"ord.*"}})
	if len(res.Topics) != 1 || res.Topics[0].SourceTopic != "orders" || !res.OK {
		t.Errorf("--topics ord.*: got %+v, want orders alone, ok", res.Topics)
	}
	// A partial match selects nothing: the whole name must match, as in MM2.
	_, err := Preflight(context.Background(), src, dst, PreflightConfig{Flow: mm2.NewFlow("old", "new", mm2.IdentityPolicy{}), Topics: []string{"ord"}})
	if !errors.Is(err, ErrNoTopics) {
		t.Errorf("--topics ord: got %v, want ErrNoTopics", err)
	}
	// The flow's filter and policy: only payments, named old.payments on the target.
	cfg, err := mm2.Parse(strings.NewReader("clusters=old,new\nold.bootstrap.servers=a:1\nnew.bootstrap.servers=b:1\nold->new.enabled=true\nold->new.topics=payments\n"))
	if err != nil {
		t.Fatal(err)
	}
	flow, err := cfg.Flow("")
	if err != nil {
		t.Fatal(err)
	}
	res = preflight(t, src, dst, PreflightConfig{Flow: flow})
	if len(res.Topics) != 1 || res.Topics[0].TargetTopic != "old.payments" || res.Topics[0].Status != TopicMissing {
		t.Errorf("flow old->new topics=payments: got %+v, want payments -> old.payments, missing", res.Topics)
	}
}

func TestMM2Sync(t *testing.T) {
	r, err := newRules(mm2.NewFlow("a", "b", nil), PreflightConfig{})
	if err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		key    string
		source kadm.Config
		want   bool
	}{
		{"retention.ms", kadm.Config{Source: 1}, true},         // DYNAMIC_TOPIC_CONFIG
		{"min.insync.replicas", kadm.Config{Source: 1}, false}, // excluded by default
		{"retention.ms", kadm.Config{Source: 4}, false},        // STATIC_BROKER_CONFIG
		{"retention.ms", kadm.Config{Source: 5}, false},        // DEFAULT_CONFIG
		{"retention.ms", kadm.Config{Source: 3}, true},         // DYNAMIC_DEFAULT_BROKER_CONFIG
		{"message.timestamp.type", kadm.Config{Source: 1}, false},
	}
	for _, c := range cases {
		if got, why := r.mm2Sync(c.key, c.source, true); got != c.want {
			t.Errorf("%s from %s: got %v (%s), want %v", c.key, c.source.Source, got, why, c.want)
		}
	}
}

func TestVersionName(t *testing.T) {
	for in, want := range map[string]string{"v2.3": "2.3", "v3.7": "3.7", "at least v4.1": "at least 4.1",
		"between v2.3 and v2.4": "unknown (between v2.3 and v2.4)"} {
		if got := versionName(in); got != want {
			t.Errorf("versionName(%q) = %q, want %q", in, got, want)
		}
	}
}

func TestClusterFindings(t *testing.T) {
	b := func(id int32, rack, version string) Broker { return Broker{ID: id, Rack: rack, Version: version} }
	src := ClusterCheck{Alias: "old", Brokers: []Broker{b(0, "a", "2.3"), b(1, "b", "2.3"), b(2, "", "2.4")}}
	dst := ClusterCheck{Alias: "new", Brokers: []Broker{b(1, "", "3.7")}}
	var fields []string
	for _, f := range clusterFindings(src, dst) {
		fields = append(fields, f.Field+": "+f.Source+" | "+f.Target)
	}
	want := []string{"broker versions: 2.3, 2.4 | 3.7", "racks: a, b, none | none", "racks: a, b, none | none"}
	if strings.Join(fields, "\n") != strings.Join(want, "\n") {
		t.Errorf("got\n%s\nwant\n%s", strings.Join(fields, "\n"), strings.Join(want, "\n"))
	}
	same := ClusterCheck{Alias: "x", Brokers: []Broker{b(0, "a", "3.7")}}
	if fs := clusterFindings(same, same); len(fs) != 0 {
		t.Errorf("equal clusters: got %+v", fs)
	}
}

// A source topic config that Kafka 4 removed, on a topic whose 4.x target has no such
// config: the finding says what the removal changes and what to do, not only that the
// versions differ.
func TestPreflightConfigsRemovedInKafka4(t *testing.T) {
	r, err := newRules(mm2.NewFlow("old", "new", mm2.IdentityPolicy{}), PreflightConfig{MinRetention: DefaultMinRetention})
	if err != nil {
		t.Fatal(err)
	}
	set := func(k, v string) kadm.Config {
		return kadm.Config{Key: k, Value: sp(v), Source: kmsg.ConfigSourceDynamicTopicConfig}
	}
	src := map[string]kadm.Config{
		"message.format.version":              set("message.format.version", "2.3-IV1"),
		"message.downconversion.enable":       set("message.downconversion.enable", "false"),
		"message.timestamp.difference.max.ms": set("message.timestamp.difference.max.ms", "3600000"),
		"segment.jitter.ms":                   set("segment.jitter.ms", "5"),
	}
	tc := &TopicCheck{SourcePartitions: 1, TargetPartitions: 1, SourceRF: 1, TargetRF: 1}
	r.compare(tc, src, map[string]kadm.Config{})
	for k, want := range map[string]string{
		"message.format.version":              "KIP-724",
		"message.downconversion.enable":       "client 2.1 or later",
		"message.timestamp.difference.max.ms": "message.timestamp.before.max.ms",
		"segment.jitter.ms":                   "another Kafka version",
	} {
		f, ok := finding(*tc, k)
		if !ok || !strings.Contains(f.Note, want) {
			t.Errorf("%s: finding %+v (found %v), want a note with %q", k, f, ok, want)
		}
	}
}
