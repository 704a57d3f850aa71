package report

import (
	"fmt"
	"strings"

	"github.com/kmigrate/kmigrate/verify"
)

// topicsReport draws `kverify topics` (verify.Preflight): the brokers of both clusters, one
// row per topic, and every finding with the topic it belongs to.
type topicsReport struct {
	Title    string
	R        *verify.PreflightResult
	Verdict  verdict
	Brokers  []topicsBroker
	Topics   []topicsRow
	Findings []topicsFinding // cluster findings first, then per topic in topic order
	Notes    []string        // "topic: note"
	Risks    int
	Warnings int
	Info     int
}

type topicsBroker struct {
	Cluster, Side string
	B             verify.Broker
	Rack          string
}

type topicsRow struct {
	T          verify.TopicCheck
	Level      level
	Partitions string // "3 / 2"
	RF         string
}

type topicsFinding struct {
	Topic string // "" for a cluster finding
	Where string // the topic, or "clusters"
	F     verify.Finding
	Level level
	Syncs string // "yes", "no" or ""
}

func severityLevel(s verify.Severity) level {
	switch s {
	case verify.SeverityRisk:
		return levelBad
	case verify.SeverityWarning:
		return levelWarn
	}
	return levelOK
}

func newTopicsReport(title string, r *verify.PreflightResult) *topicsReport {
	rep := &topicsReport{Title: title, R: r}
	if rep.Title == "" {
		rep.Title = "kverify topics " + r.Flow
	}
	rep.Brokers = topicsBrokers(r)
	addFinding := func(topic, where string, f verify.Finding) {
		tf := topicsFinding{Topic: topic, Where: where, F: f, Level: severityLevel(f.Severity)}
		if f.MM2Syncs != nil {
			tf.Syncs = map[bool]string{true: "yes", false: "no"}[*f.MM2Syncs]
		}
		switch f.Severity {
		case verify.SeverityRisk:
			rep.Risks++
		case verify.SeverityWarning:
			rep.Warnings++
		default:
			rep.Info++
		}
		rep.Findings = append(rep.Findings, tf)
	}
	for _, f := range r.ClusterFindings {
		addFinding("", "clusters", f)
	}
	counts := map[verify.TopicStatus]int{}
	for _, t := range r.Topics {
		row := topicsRow{T: t, Level: levelOK,
			Partitions: fmt.Sprintf("%d / %d", t.SourcePartitions, t.TargetPartitions),
			RF:         fmt.Sprintf("%d / %d", t.SourceRF, t.TargetRF)}
		switch t.Status {
		case verify.TopicRisk, verify.TopicMissing:
			row.Level = levelBad
		case verify.TopicDiffers:
			row.Level = levelWarn
		}
		if t.Status == verify.TopicMissing {
			row.Partitions = fmt.Sprintf("%d / -", t.SourcePartitions)
			row.RF = fmt.Sprintf("%d / -", t.SourceRF)
		}
		counts[t.Status]++
		rep.Topics = append(rep.Topics, row)
		for _, f := range t.Findings {
			addFinding(t.SourceTopic, t.SourceTopic, f)
		}
		for _, n := range t.Notes {
			rep.Notes = append(rep.Notes, t.SourceTopic+": "+n)
		}
	}
	rep.Verdict = topicsVerdict(rep, r, counts)
	return rep
}

// topicsBrokers lists the brokers of both clusters of r, source first, with "-" for no rack.
func topicsBrokers(r *verify.PreflightResult) []topicsBroker {
	var brokers []topicsBroker
	for _, side := range []struct {
		name string
		c    verify.ClusterCheck
	}{{"source", r.Source}, {"target", r.Target}} {
		for _, b := range side.c.Brokers {
			rack := b.Rack
			if rack == "" {
				rack = "-"
			}
			brokers = append(brokers, topicsBroker{Cluster: side.c.Alias, Side: side.name, B: b, Rack: rack})
		}
	}
	return brokers
}

// topicsVerdict judges the report rep of r by its findings and sums up its topics, counted by status in counts, and clusters.
func topicsVerdict(rep *topicsReport, r *verify.PreflightResult, counts map[verify.TopicStatus]int) verdict {
	v := verdict{Level: levelOK, Word: "ALL OK", Headline: "no findings"}
	if n := len(rep.Findings); n > 0 {
		v.Word, v.Level = "FINDINGS", levelWarn
		if rep.Risks > 0 {
			v.Level = levelBad
		}
		v.Headline = fmt.Sprintf("%s: %s, %s, %d info", plural(int64(n), "finding", "findings"),
			plural(int64(rep.Risks), "risk", "risks"), plural(int64(rep.Warnings), "warning", "warnings"), rep.Info)
	}
	v.Details = append(v.Details, fmt.Sprintf("%s: %d ok, %d differ, %d at risk, %d missing on the target",
		plural(int64(len(r.Topics)), "topic", "topics"), counts[verify.TopicOK], counts[verify.TopicDiffers], counts[verify.TopicRisk], counts[verify.TopicMissing]))
	v.Details = append(v.Details, "source "+clusterSummary(r.Source)+"; target "+clusterSummary(r.Target))
	return v
}

// clusterSummary is "old: 3 brokers, Kafka 2.3".
func clusterSummary(c verify.ClusterCheck) string {
	var vs []string
	for _, b := range c.Brokers {
		if !containsString(vs, b.Version) {
			vs = append(vs, b.Version)
		}
	}
	return fmt.Sprintf("%s: %s, Kafka %s", c.Alias, plural(int64(len(c.Brokers)), "broker", "brokers"), strings.Join(vs, " and "))
}

func containsString(ss []string, s string) bool {
	for _, x := range ss {
		if x == s {
			return true
		}
	}
	return false
}
