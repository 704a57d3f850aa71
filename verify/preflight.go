package verify

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/kmigrate/kmigrate/logread"
	"github.com/kmigrate/kmigrate/mm2"
)

// Preflight (`kverify topics`) compares, before the producers move, the metadata of every topic
// a flow mirrors on both clusters: presence, partitions, replication factor, every topic
// configuration that differs (and whether MirrorMaker 2 3.7.1 would sync it), and the settings
// that lose or alter records (timestamps, record size limits, retention, cleanup policy); and
// MirrorMaker 2's own internal topics, compacted and replicated as MM2 needs
// (preflight_internal.go). It
// only reads: metadata, ApiVersions, DescribeConfigs, ListOffsets and, for the largest-record
// rule, the source records (PreflightConfig.ScanRecords). preflight_rules.go holds the rules.

// Severity ranks a preflight finding.
type Severity string

const (
	// SeverityRisk: the mirror or the switch would lose, refuse or alter records.
	SeverityRisk Severity = "risk"
	// SeverityWarning: a difference MM2 leaves as it is, that producers, consumers or
	// operations will notice after the switch.
	SeverityWarning Severity = "warning"
	// SeverityInfo: a difference MM2 would remove itself (it syncs that config).
	SeverityInfo Severity = "info"
)

// TopicStatus is the verdict on one topic: the worst of its findings.
type TopicStatus string

const (
	TopicOK      TopicStatus = "ok"      // no finding
	TopicDiffers TopicStatus = "differs" // findings, none a risk
	TopicRisk    TopicStatus = "risk"    // at least one risk finding
	TopicMissing TopicStatus = "missing" // the target topic does not exist
)

// Finding is one difference or risk. Source and Target are the values on each side as the
// brokers report them ("" when a side has no such value). MM2Syncs says, for a topic config,
// whether MirrorMaker 2 3.7.1 would copy the source value onto the target topic (the note says
// why); nil for what is not a topic config.
type Finding struct {
	Field    string   `json:"field"`
	Source   string   `json:"source"`
	Target   string   `json:"target"`
	Severity Severity `json:"severity"`
	Note     string   `json:"note"`
	MM2Syncs *bool    `json:"mm2_syncs,omitempty"`
}

// RecordSize is the largest source record found by reading the source log: the size of a
// record batch holding it alone (BatchSize), which is what the target broker compares with
// max.message.bytes when the mirror's producer does not compress.
type RecordSize struct {
	Partition int32 `json:"partition"`
	Offset    int64 `json:"offset"`
	BatchSize int64 `json:"batch_size"`
	// Records is how many source records were read to find it (every record of the topic
	// between its log start and its high watermark when the read began).
	Records int64 `json:"records_read"`
}

// TopicCheck is the preflight of one topic.
type TopicCheck struct {
	SourceTopic      string      `json:"source_topic"`
	TargetTopic      string      `json:"target_topic"`
	Status           TopicStatus `json:"status"`
	SourcePartitions int         `json:"source_partitions"`
	TargetPartitions int         `json:"target_partitions"`
	SourceRF         int         `json:"source_replication_factor"`
	TargetRF         int         `json:"target_replication_factor"`
	Findings         []Finding   `json:"findings"`
	// LargestRecord is set when the source records were read (nil: not read, or no record).
	LargestRecord *RecordSize `json:"largest_record,omitempty"`
	// Aborted is set when the target topic was read for aborted transactions
	// (PreflightConfig.ScanAborted).
	Aborted *AbortedOnTarget `json:"aborted_on_target,omitempty"`
	// Notes say what was checked and how (e.g. how the largest record was determined).
	Notes []string `json:"notes,omitempty"`
}

// Broker is one broker of a cluster as preflight saw it. Version is derived from the API
// versions the broker supports (ApiVersions): Kafka reports no version string, so the patch
// level is never known and a release line that matches no known one is "unknown (...)".
type Broker struct {
	ID      int32  `json:"id"`
	Host    string `json:"host"`
	Port    int32  `json:"port"`
	Rack    string `json:"rack"`
	Version string `json:"version"`
}

// ClusterCheck describes one cluster.
type ClusterCheck struct {
	Alias     string   `json:"alias"`
	ClusterID string   `json:"cluster_id"`
	Brokers   []Broker `json:"brokers"`
}

// PreflightResult is the answer of Preflight and the JSON of `kverify topics`.
type PreflightResult struct {
	Flow            string       `json:"flow"`
	Source          ClusterCheck `json:"source_cluster"`
	Target          ClusterCheck `json:"target_cluster"`
	ClusterFindings []Finding    `json:"cluster_findings"`
	Topics          []TopicCheck `json:"topics"`
	// Findings counts every finding (cluster and topics); OK is Findings == 0.
	Findings int  `json:"findings"`
	OK       bool `json:"ok"`
}

// DefaultMinRetention is PreflightConfig.MinRetention's default.
const DefaultMinRetention = 24 * time.Hour

// PreflightConfig says what to check.
type PreflightConfig struct {
	// Flow selects the topics (Flow.TopicMatches), names them on the target (TargetTopic) and
	// says which configs MM2 syncs (ConfigExclude, sync.topic.configs.enabled) and the
	// replication factor it creates topics with. Required.
	Flow *mm2.Flow
	// Topics, when not empty, narrows the flow's topics to those matching one of these
	// regexes (the whole name must match, as in MM2's topics key).
	Topics []string
	// ScanRecords reads every source record of each topic (raw fetches, read_uncommitted,
	// log start to high watermark) to find the largest one; without it the largest record
	// is only bounded by the source's max.message.bytes.
	ScanRecords bool
	// ScanAborted reads every target topic that exists from each partition's log start to its
	// last stable offset (read_committed) and reports the records of aborted transactions it
	// holds: a read_uncommitted consumer reads them, a read_committed one does not.
	ScanAborted bool
	// MinRetention: a source topic that deletes records by time sooner than this (retention.ms
	// below it) is a risk. Default DefaultMinRetention.
	MinRetention time.Duration
}

// ErrNoTopics is returned when the flow and Topics select no source topic: there is nothing
// to check, which is never "all ok".
var ErrNoTopics = errors.New("no source topic selected")

// Preflight runs the checks of cfg against the source and target clusters (read only).
// Errors (a cluster that cannot be described, a topic whose configs cannot be read) end it:
// a preflight that could not check something never says ok.
func Preflight(ctx context.Context, src, dst *kgo.Client, cfg PreflightConfig) (*PreflightResult, error) {
	if cfg.Flow == nil {
		return nil, errors.New("preflight: no flow")
	}
	if cfg.MinRetention <= 0 {
		cfg.MinRetention = DefaultMinRetention
	}
	var narrow mm2.Pattern
	if len(cfg.Topics) > 0 {
		var err error
		if narrow, err = mm2.CompilePattern("--topics", cfg.Topics); err != nil {
			return nil, err
		}
	}
	f := cfg.Flow
	res := &PreflightResult{Flow: f.Name(), ClusterFindings: []Finding{}, Topics: []TopicCheck{}}
	sa, da := kadm.NewClient(src), kadm.NewClient(dst)
	var err error
	if res.Source, err = describeCluster(ctx, sa, f.Source, "source"); err != nil {
		return nil, err
	}
	if res.Target, err = describeCluster(ctx, da, f.Target, "target"); err != nil {
		return nil, err
	}
	res.ClusterFindings = clusterFindings(res.Source, res.Target)

	srcTopics, names, err := sourceTopics(ctx, sa, f, cfg, narrow)
	if err != nil {
		return nil, err
	}
	targets, dstTopics, present, err := targetTopics(ctx, da, f, names)
	if err != nil {
		return nil, err
	}
	srcCfg, err := topicConfigs(ctx, sa, f.Source, "source", names)
	if err != nil {
		return nil, err
	}
	dstCfg, err := topicConfigs(ctx, da, f.Target, "target", present)
	if err != nil {
		return nil, err
	}
	rules, err := newRules(f, cfg)
	if err != nil {
		return nil, err
	}
	for i, s := range names {
		t := targets[i]
		td, ok := dstTopics[t]
		tc, err := checkTopic(ctx, src, sa, f, cfg.ScanRecords, rules, srcTopics[s], td, ok, srcCfg[s], dstCfg[t])
		if err == nil && cfg.ScanAborted && ok && td.Err == nil {
			err = checkAborted(ctx, dst, da, f.Target, td, &tc)
		}
		if err != nil {
			return nil, err
		}
		res.Findings += len(tc.Findings)
		res.Topics = append(res.Topics, tc)
	}
	internal, err := internalTopicFindings(ctx, sa, da, f)
	if err != nil {
		return nil, err
	}
	res.ClusterFindings = append(res.ClusterFindings, internal...)
	res.Findings += len(res.ClusterFindings)
	res.OK = res.Findings == 0
	return res, nil
}

// sourceTopics lists the source topics and names, sorted, those the flow mirrors and narrow (if --topics is given) matches.
func sourceTopics(ctx context.Context, sa *kadm.Client, f *mm2.Flow, cfg PreflightConfig, narrow mm2.Pattern) (kadm.TopicDetails, []string, error) {
	srcTopics, err := sa.ListTopics(ctx)
	if err != nil {
		return nil, nil, fmt.Errorf("source cluster %s: list topics: %w", f.Source, err)
	}
	var names []string
	for _, td := range srcTopics.Sorted() {
		if errors.Is(td.Err, kerr.UnknownTopicOrPartition) {
			continue // a topic the client asked about before that does not exist
		}
		if td.Err != nil {
			return nil, nil, fmt.Errorf("source cluster %s: describe topic %s: %w", f.Source, td.Topic, td.Err)
		}
		if td.IsInternal || !f.TopicMatches(td.Topic) || len(cfg.Topics) > 0 && !narrow.Matches(td.Topic) {
			continue
		}
		names = append(names, td.Topic)
	}
	if len(names) == 0 {
		return nil, nil, fmt.Errorf("source cluster %s: flow %s: %w (the flow's topics filter%s matches none of the %d topics)",
			f.Source, f.Name(), ErrNoTopics, map[bool]string{true: " and --topics", false: ""}[len(cfg.Topics) > 0], len(srcTopics))
	}
	return srcTopics, names, nil
}

// targetTopics describes the target topics of names, in their order, and lists those that exist; a missing one is no error.
func targetTopics(ctx context.Context, da *kadm.Client, f *mm2.Flow, names []string) ([]string, kadm.TopicDetails, []string, error) {
	targets := make([]string, len(names))
	for i, n := range names {
		targets[i] = f.TargetTopic(n)
	}
	dstTopics, err := da.ListTopics(ctx, targets...)
	if err != nil {
		return nil, nil, nil, fmt.Errorf("target cluster %s: describe topics: %w", f.Target, err)
	}
	var present []string
	for _, t := range targets {
		td, ok := dstTopics[t]
		switch {
		case !ok || errors.Is(td.Err, kerr.UnknownTopicOrPartition):
		case td.Err != nil:
			return nil, nil, nil, fmt.Errorf("target cluster %s: describe topic %s: %w", f.Target, t, td.Err)
		default:
			present = append(present, t)
		}
	}
	return targets, dstTopics, present, nil
}

// checkTopic checks source topic sd against its target td (tdOK false: missing) with their configurations sc and tc.
func checkTopic(ctx context.Context, src *kgo.Client, sa *kadm.Client, f *mm2.Flow, scan bool, rules *rules, sd, td kadm.TopicDetail, tdOK bool, sc, tc map[string]kadm.Config) (TopicCheck, error) {
	check := TopicCheck{SourceTopic: sd.Topic, TargetTopic: f.TargetTopic(sd.Topic), Findings: []Finding{}}
	check.SourcePartitions, check.SourceRF = len(sd.Partitions), replicationFactor(sd)
	if scan {
		var err error
		if check.LargestRecord, err = largestRecord(ctx, src, sa, f.Source, sd); err != nil {
			return TopicCheck{}, err
		}
	}
	if !tdOK || td.Err != nil {
		rules.missing(&check, sc)
	} else {
		check.TargetPartitions, check.TargetRF = len(td.Partitions), replicationFactor(td)
		rules.compare(&check, sc, tc)
	}
	check.Status = topicStatus(check)
	return check, nil
}

// checkAborted adds to tc what targetAborted finds in the target topic td.
func checkAborted(ctx context.Context, dst *kgo.Client, da *kadm.Client, alias string, td kadm.TopicDetail, tc *TopicCheck) error {
	a, err := targetAborted(ctx, dst, da, alias, td)
	if err != nil {
		return err
	}
	tc.Aborted = a
	if f, ok := abortedFinding(a); ok {
		tc.Findings = append(tc.Findings, f)
		tc.Status = topicStatus(*tc)
	}
	tc.Notes = append(tc.Notes, openNotes(a)...)
	return nil
}

func topicStatus(tc TopicCheck) TopicStatus {
	if tc.TargetPartitions == 0 && slices.ContainsFunc(tc.Findings, func(f Finding) bool { return f.Field == "topic" }) {
		return TopicMissing
	}
	if slices.ContainsFunc(tc.Findings, func(f Finding) bool { return f.Severity == SeverityRisk }) {
		return TopicRisk
	}
	if len(tc.Findings) > 0 {
		return TopicDiffers
	}
	return TopicOK
}

// replicationFactor is the largest replica count of the topic's partitions (they normally
// agree; a partition being reassigned may have more for a while).
func replicationFactor(td kadm.TopicDetail) int {
	rf := 0
	for _, p := range td.Partitions {
		rf = max(rf, len(p.Replicas))
	}
	return rf
}

// describeCluster reads the brokers, their racks and their versions. A broker that does not
// answer ApiVersions is "unknown (...)", not an error: it is still in the metadata.
func describeCluster(ctx context.Context, adm *kadm.Client, alias, side string) (ClusterCheck, error) {
	cc := ClusterCheck{Alias: alias, Brokers: []Broker{}}
	md, err := adm.BrokerMetadata(ctx)
	if err != nil {
		return cc, fmt.Errorf("%s cluster %s: metadata: %w", side, alias, err)
	}
	cc.ClusterID = md.Cluster
	vs, err := adm.ApiVersions(ctx)
	if err != nil {
		return cc, fmt.Errorf("%s cluster %s: api versions: %w", side, alias, err)
	}
	for _, b := range md.Brokers {
		br := Broker{ID: b.NodeID, Host: b.Host, Port: b.Port, Version: "unknown"}
		if b.Rack != nil {
			br.Rack = *b.Rack
		}
		if v, ok := vs[b.NodeID]; ok {
			if v.Err != nil {
				br.Version = "unknown (ApiVersions: " + v.Err.Error() + ")"
			} else {
				br.Version = versionName(v.VersionGuess())
			}
		}
		cc.Brokers = append(cc.Brokers, br)
	}
	slices.SortFunc(cc.Brokers, func(a, b Broker) int { return cmp.Compare(a.ID, b.ID) })
	return cc, nil
}

// versionName turns franz-go's guess ("v2.3", "at least v4.1", "between v2.3 and v2.4",
// "unknown custom version...") into the release line: "2.3", "at least 4.1" (newer than the
// client knows), or "unknown (<guess>)" when the API versions match no single release. The
// patch level is never known.
func versionName(guess string) string {
	if v, ok := strings.CutPrefix(guess, "v"); ok && !strings.ContainsRune(v, ' ') {
		return v
	}
	if v, ok := strings.CutPrefix(guess, "at least v"); ok && !strings.ContainsRune(v, ' ') {
		return "at least " + v
	}
	return "unknown (" + guess + ")"
}

// topicConfigs describes the configs of topics on one cluster, by topic and key.
func topicConfigs(ctx context.Context, adm *kadm.Client, alias, side string, topics []string) (map[string]map[string]kadm.Config, error) {
	out := map[string]map[string]kadm.Config{}
	if len(topics) == 0 {
		return out, nil
	}
	rcs, err := adm.DescribeTopicConfigs(ctx, topics...)
	if err != nil {
		return nil, fmt.Errorf("%s cluster %s: describe configs of topics %s: %w", side, alias, strings.Join(topics, ","), err)
	}
	for _, rc := range rcs {
		if rc.Err != nil {
			return nil, fmt.Errorf("%s cluster %s: describe configs of topic %s: %w %s", side, alias, rc.Name, rc.Err, rc.ErrMessage)
		}
		m := map[string]kadm.Config{}
		for _, c := range rc.Configs {
			m[c.Key] = c
		}
		out[rc.Name] = m
	}
	for _, t := range topics {
		if _, ok := out[t]; !ok {
			return nil, fmt.Errorf("%s cluster %s: describe configs of topic %s: no answer", side, alias, t)
		}
	}
	return out, nil
}

// largestRecord reads every record of the source topic (read_uncommitted, from the log start
// to the high watermark listed before the read: everything a mirror could copy) and returns
// the one whose one-record batch is largest. nil when the topic has no record.
func largestRecord(ctx context.Context, cl *kgo.Client, adm *kadm.Client, alias string, td kadm.TopicDetail) (*RecordSize, error) {
	starts, err := adm.ListStartOffsets(ctx, td.Topic)
	if err == nil {
		err = starts.Error()
	}
	if err != nil {
		return nil, fmt.Errorf("source cluster %s: list start offsets of topic %s: %w", alias, td.Topic, err)
	}
	ends, err := adm.ListEndOffsets(ctx, td.Topic)
	if err == nil {
		err = ends.Error()
	}
	if err != nil {
		return nil, fmt.Errorf("source cluster %s: list end offsets of topic %s: %w", alias, td.Topic, err)
	}
	var best *RecordSize
	var n int64
	leaders := &logread.Leaders{}
	for _, p := range td.Partitions.Sorted() {
		s, _ := starts.Lookup(td.Topic, p.Partition)
		e, _ := ends.Lookup(td.Topic, p.Partition)
		o := logread.Options{Cluster: "source " + alias, Topic: td.Topic, Partition: p.Partition,
			From: s.Offset, To: e.Offset, Short: logread.ShortStop, Leaders: leaders}
		err := logread.Each(ctx, cl, o, func(r *kgo.Record) (bool, error) {
			n++
			if size := logread.RecordBatchSize(r); best == nil || size > best.BatchSize {
				best = &RecordSize{Partition: r.Partition, Offset: r.Offset, BatchSize: size}
			}
			return true, nil
		})
		if err != nil {
			return nil, fmt.Errorf("read the records of source topic %s partition %d (cluster %s) to find the largest: %w (or pass --scan-records=false to bound it from max.message.bytes)", td.Topic, p.Partition, alias, err)
		}
	}
	if best != nil {
		best.Records = n
	}
	return best, nil
}

// configValue is a config's value as text ("" for none), and whether the broker reports it
// as its built-in default.
func configValue(c kadm.Config) (string, bool) {
	return c.MaybeValue(), c.Source == kmsg.ConfigSourceDefaultConfig
}

// parseInt64 reads a numeric config value.
func parseInt64(s string) (int64, bool) {
	n, err := strconv.ParseInt(strings.TrimSpace(s), 10, 64)
	return n, err == nil
}
