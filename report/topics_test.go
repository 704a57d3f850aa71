package report_test

import (
	"strings"
	"testing"

	"github.com/kmigrate/kmigrate/report"
	"github.com/kmigrate/kmigrate/verify"
)

func boolp(b bool) *bool { return &b }

// topicsFindings is a `kverify topics` result of a 2.3 -> 3.7 flow with one topic per kind
// of finding, a clean topic and a cluster finding.
func topicsFindings() *verify.PreflightResult {
	src := verify.ClusterCheck{Alias: "old", ClusterID: "zk-2.3", Brokers: []verify.Broker{
		{ID: 0, Host: "old-0", Port: 9092, Rack: "a", Version: "2.3"},
		{ID: 1, Host: "old-1", Port: 9092, Rack: "b", Version: "2.3"}}}
	dst := verify.ClusterCheck{Alias: "new", ClusterID: "kraft-3.7", Brokers: []verify.Broker{
		{ID: 1, Host: "new-1", Port: 9092, Version: "3.7"},
		{ID: 2, Host: "new-2", Port: 9092, Version: "3.7"}}}
	r := &verify.PreflightResult{Flow: "old->new", Source: src, Target: dst,
		ClusterFindings: []verify.Finding{{Field: "racks", Source: "a, b", Target: "none", Severity: verify.SeverityWarning,
			Note: "the source brokers have racks, the target's none: replicas on the target are not spread over racks, and consumers' client.rack (follower fetching) finds no rack"}},
		Topics: []verify.TopicCheck{
			{SourceTopic: "orders", TargetTopic: "orders", Status: verify.TopicRisk, SourcePartitions: 6, TargetPartitions: 3, SourceRF: 2, TargetRF: 2,
				Findings: []verify.Finding{
					{Field: "partitions", Source: "6", Target: "3", Severity: verify.SeverityWarning, Note: "the target has fewer partitions: MM2 adds partitions to match when it refreshes topics; until then source partitions 3 and up have no copy"},
					{Field: "message.timestamp.type", Source: "CreateTime", Target: "LogAppendTime", Severity: verify.SeverityRisk, MM2Syncs: boolp(false),
						Note: "the target broker replaces every copied record's timestamp with the time it appended it; MM2 does not sync it: config.properties.exclude matches it"},
					{Field: "max.message.bytes", Source: "20061 (largest record, partition 4 offset 17)", Target: "10000", Severity: verify.SeverityRisk, MM2Syncs: boolp(false),
						Note: "the target refuses a batch larger than 10000 bytes: the mirror cannot write this record (MM2's task fails on it). Measured by reading all 1,200 source records"},
					{Field: "retention.ms", Source: "604800001", Target: "604800000", Severity: verify.SeverityInfo, MM2Syncs: boolp(true),
						Note: "MM2 sets the source topic's value on the target (every sync.topic.configs.interval.seconds)"},
				},
				LargestRecord: &verify.RecordSize{Partition: 4, Offset: 17, BatchSize: 20061, Records: 1200}},
			{SourceTopic: "payments|eu", TargetTopic: "payments|eu", Status: verify.TopicMissing, SourcePartitions: 2, SourceRF: 2,
				Findings: []verify.Finding{{Field: "topic", Source: "payments|eu", Severity: verify.SeverityWarning,
					Note: "the target has no topic payments|eu: MM2 creates it with 2 partitions and replication factor 2 (replication.factor) and no source override (the target broker's defaults apply)"}},
				Notes: []string{"target-side checks (partitions, replication factor, configs, max.message.bytes) need the target topic: not made"}},
			{SourceTopic: "audit", TargetTopic: "audit", Status: verify.TopicOK, SourcePartitions: 1, TargetPartitions: 1, SourceRF: 2, TargetRF: 2, Findings: []verify.Finding{},
				Notes: []string{"largest source record: a one-record batch of 180 bytes (uncompressed) at partition 0 offset 3, found by reading all 40 source records; it fits the target's max.message.bytes 1048588"}},
		},
	}
	r.Findings = 6
	return r
}

// topicsClean is a preflight without a finding.
func topicsClean() *verify.PreflightResult {
	return &verify.PreflightResult{Flow: "old->new", OK: true,
		Source:          verify.ClusterCheck{Alias: "old", Brokers: []verify.Broker{{ID: 0, Host: "old-0", Port: 9092, Version: "2.3"}}},
		Target:          verify.ClusterCheck{Alias: "new", Brokers: []verify.Broker{{ID: 1, Host: "new-1", Port: 9092, Version: "3.7"}}},
		ClusterFindings: []verify.Finding{},
		Topics: []verify.TopicCheck{{SourceTopic: "audit", TargetTopic: "audit", Status: verify.TopicOK, SourcePartitions: 1, TargetPartitions: 1,
			SourceRF: 1, TargetRF: 1, Findings: []verify.Finding{}}}}
}

func TestTopicsViews(t *testing.T) {
	clean := render(t, report.Table, topicsClean(), report.Options{})
	if !strings.Contains(clean, "ALL OK: no findings") || strings.Contains(clean, "Severity") {
		t.Errorf("clean preflight table:\n%s", clean)
	}
	junit := render(t, report.JUnit, topicsFindings(), report.Options{})
	// One case per topic and one for the clusters: orders and payments|eu and the clusters fail.
	if n := strings.Count(junit, "<testcase "); n != 4 {
		t.Errorf("got %d test cases, want 4 (3 topics + clusters):\n%s", n, junit)
	}
	if n := strings.Count(junit, "<failure "); n != 3 {
		t.Errorf("got %d failures, want 3:\n%s", n, junit)
	}
	md := render(t, report.Markdown, topicsFindings(), report.Options{})
	if !strings.Contains(md, `payments\|eu`) {
		t.Errorf("markdown does not escape the topic name:\n%s", md)
	}
}
