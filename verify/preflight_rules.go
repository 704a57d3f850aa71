package verify

import (
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/kmigrate/kmigrate/mm2"
)

// The preflight rules, per topic (compare, missing) and per cluster pair (clusterFindings).
//
// Topic configs. Every config key either side reports is compared, except: a sensitive one
// (no value is reported); one at its built-in default on both brokers (the two Kafka versions'
// defaults, e.g. message.format.version, are not a setting of the topic); one only one broker
// version knows, at its default there. A difference is a warning when MM2 leaves it, info when
// MM2 would sync it. The keys below have rules of their own and are compared even at defaults.
//
// Whether MM2 3.7.1 syncs a config (mm2Sync): never when config.properties.exclude matches it
// (default mm2.DefaultConfigExclude) or sync.topic.configs.enabled=false (then configs are
// copied only when MM2 creates the topic); otherwise it copies a value set on the source topic
// or by a dynamic broker config, and for a source at its built-in default it deletes the
// target topic's override (the target broker's default then applies); a value from the source
// brokers' server.properties (STATIC_BROKER_CONFIG) is not copied.

// removedIn4 are topic configs an older source may set that Kafka 4 removed: a 4.x target
// reports no such config (and drops it when MM2 copies it), so the finding says what that
// changes and what to do.
var removedIn4 = map[string]string{
	"message.format.version": "Kafka 4 removed it (KIP-724) and drops it when a topic is created or altered: the target writes " +
		"the current record format whatever the source topic says; nothing to do for clients 2.1 or later, the oldest a 4.x broker serves",
	"message.downconversion.enable": "Kafka 4 removed down-conversion (KIP-724): a consumer that needs an older record format " +
		"cannot read the target; move such consumers to a client 2.1 or later before they switch",
	"message.timestamp.difference.max.ms": "Kafka 4 removed it (KIP-937): set message.timestamp.before.max.ms and " +
		"message.timestamp.after.max.ms on the target topic to keep the source's bound on record timestamps",
}

// ruled are the configs with their own rule (compared even when both sides are defaults).
var ruled = []string{"cleanup.policy", "min.insync.replicas", "message.timestamp.type", "compression.type"}

type rules struct {
	cfg         PreflightConfig
	exclude     mm2.Pattern
	excludeList []string
	syncOn      bool
	createRF    int16 // replication.factor MM2 creates topics with (-1: the broker default)
}

func newRules(f *mm2.Flow, cfg PreflightConfig) (*rules, error) {
	r := &rules{cfg: cfg, excludeList: f.ConfigExclude(), syncOn: true, createRF: 2}
	var err error
	if r.exclude, err = mm2.CompilePattern("config.properties.exclude", r.excludeList); err != nil {
		return nil, err
	}
	if r.syncOn, _, err = f.Bool("sync.topic.configs.enabled", true); err != nil {
		return nil, err
	}
	if rf, set, err := f.ReplicationFactor("replication.factor"); err != nil {
		return nil, err
	} else if set {
		r.createRF = rf
	}
	return r, nil
}

// val is the value of key in m ("" when absent).
func val(m map[string]kadm.Config, key string) string {
	c := m[key]
	return c.MaybeValue()
}

func ptr[T any](v T) *T { return &v }

// mm2Sync says whether MM2 3.7.1 would copy the source value of key onto the target topic.
func (r *rules) mm2Sync(key string, sc kadm.Config, has bool) (bool, string) {
	switch {
	case r.exclude.Matches(key):
		return false, "MM2 does not sync it: config.properties.exclude matches it"
	case !has:
		return false, "MM2 does not sync it: the source broker has no such config"
	case sc.Sensitive:
		return false, "MM2 does not sync it: it is sensitive"
	case !r.syncOn:
		return false, "MM2 does not sync it: sync.topic.configs.enabled=false (configs are copied only when MM2 creates the topic)"
	}
	switch sc.Source {
	case kmsg.ConfigSourceDynamicTopicConfig:
		return true, "MM2 sets the source topic's value on the target (every sync.topic.configs.interval.seconds)"
	case kmsg.ConfigSourceDynamicBrokerConfig, kmsg.ConfigSourceDynamicDefaultBrokerConfig:
		return true, "MM2 sets the source brokers' dynamic value on the target topic"
	case kmsg.ConfigSourceStaticBrokerConfig:
		return false, "MM2 does not sync it: the source value comes from the source brokers' server.properties"
	case kmsg.ConfigSourceDefaultConfig:
		return false, "MM2 does not sync it: the source is at its built-in default, so MM2 only deletes a target topic override and the target broker's default applies"
	}
	return false, "MM2 does not sync it: source " + sc.Source.String()
}

// add appends a finding unless one for the same field is already there (a rule's finding
// wins over the generic difference).
func add(tc *TopicCheck, f Finding) {
	if slices.ContainsFunc(tc.Findings, func(g Finding) bool { return g.Field == f.Field }) {
		return
	}
	tc.Findings = append(tc.Findings, f)
}

// configFinding is the generic difference of key (sev is derived from mm2Sync when empty).
func (r *rules) configFinding(key string, sc, tc kadm.Config, sHas, tHas bool, sev Severity, note string) Finding {
	syncs, why := r.mm2Sync(key, sc, sHas)
	if sev == "" {
		sev = SeverityWarning
		if syncs {
			sev = SeverityInfo
		}
	}
	if note != "" {
		why = note + "; " + why
	}
	return Finding{Field: key, Source: sc.MaybeValue(), Target: tc.MaybeValue(), Severity: sev, Note: why, MM2Syncs: ptr(syncs)}
}

func (r *rules) compare(tc *TopicCheck, s, t map[string]kadm.Config) {
	if tc.SourcePartitions != tc.TargetPartitions {
		f := Finding{Field: "partitions", Source: fmt.Sprint(tc.SourcePartitions), Target: fmt.Sprint(tc.TargetPartitions), Severity: SeverityWarning}
		if tc.TargetPartitions < tc.SourcePartitions {
			f.Note = fmt.Sprintf("the target has fewer partitions: MM2 adds partitions to match when it refreshes topics; until then source partitions %d and up have no copy", tc.TargetPartitions)
		} else {
			f.Note = "the target has more partitions: the extra ones stay empty, and producers that switch hash keys over more partitions than on the source (a key's new records land elsewhere)"
		}
		tc.Findings = append(tc.Findings, f)
	}
	if tc.SourceRF != tc.TargetRF {
		f := Finding{Field: "replication.factor", Source: fmt.Sprint(tc.SourceRF), Target: fmt.Sprint(tc.TargetRF), Severity: SeverityWarning,
			Note: "MM2 never changes the replication factor of an existing topic"}
		if tc.TargetRF < tc.SourceRF {
			f.Note = "the target keeps fewer copies of each record than the source; " + f.Note
		}
		tc.Findings = append(tc.Findings, f)
	}
	r.cleanupPolicy(tc, s, t)
	r.minISR(tc, s, t)
	r.timestampType(tc, s, t)
	r.compression(tc, s, t)
	r.recordSize(tc, s, t)
	r.retention(tc, s)
	fillTarget(tc, t)
	keys := map[string]bool{}
	for k := range s {
		keys[k] = true
	}
	for k := range t {
		keys[k] = true
	}
	sorted := make([]string, 0, len(keys))
	for k := range keys {
		sorted = append(sorted, k)
	}
	slices.Sort(sorted)
	for _, k := range sorted {
		if slices.Contains(ruled, k) {
			continue
		}
		sc, sHas := s[k]
		dc, tHas := t[k]
		_, sDef := configValue(sc)
		_, tDef := configValue(dc)
		switch {
		case sc.Sensitive || dc.Sensitive:
		case !sHas && tDef, !tHas && sDef, sDef && tDef:
		case sHas && tHas && sc.MaybeValue() == dc.MaybeValue():
		case !tHas:
			note := "the target broker has no such config (another Kafka version)"
			if gone, ok := removedIn4[k]; ok {
				note = gone
			}
			add(tc, r.configFinding(k, sc, dc, sHas, tHas, SeverityWarning, note))
		case !sHas:
			add(tc, r.configFinding(k, sc, dc, sHas, tHas, "", "the source broker has no such config (another Kafka version)"))
		default:
			add(tc, r.configFinding(k, sc, dc, sHas, tHas, "", ""))
		}
	}
}

// missing is the preflight of a topic the target does not have: MM2 (refresh.topics) would
// create it; the source-only rules still apply.
func (r *rules) missing(tc *TopicCheck, s map[string]kadm.Config) {
	var copied []string
	for k, c := range s {
		if syncs, _ := r.mm2Sync(k, c, true); syncs || (!r.syncOn && c.Source == kmsg.ConfigSourceDynamicTopicConfig && !r.exclude.Matches(k)) {
			copied = append(copied, k+"="+c.MaybeValue())
		}
	}
	slices.Sort(copied)
	rf := fmt.Sprint(r.createRF)
	if r.createRF == -1 {
		rf = "the target broker's default (-1)"
	}
	note := fmt.Sprintf("the target has no topic %s: MM2 creates it with %d partitions and replication factor %s (replication.factor)", tc.TargetTopic, tc.SourcePartitions, rf)
	if len(copied) > 0 {
		note += " and the source overrides " + strings.Join(copied, ", ")
	} else {
		note += " and no source override (the target broker's defaults apply)"
	}
	tc.Findings = append(tc.Findings, Finding{Field: "topic", Source: tc.SourceTopic, Target: "", Severity: SeverityWarning, Note: note})
	r.retention(tc, s)
	tc.Notes = append(tc.Notes, "target-side checks (partitions, replication factor, configs, max.message.bytes) need the target topic: not made")
	if tc.LargestRecord != nil {
		tc.Notes = append(tc.Notes, largestNote(tc.LargestRecord))
	}
}

func policySet(v string) string {
	var ps []string
	for _, p := range strings.Split(v, ",") {
		if p = strings.ToLower(strings.TrimSpace(p)); p != "" {
			ps = append(ps, p)
		}
	}
	slices.Sort(ps)
	return strings.Join(slices.Compact(ps), ",")
}

func (r *rules) cleanupPolicy(tc *TopicCheck, s, t map[string]kadm.Config) {
	sc, sHas := s["cleanup.policy"]
	dc, tHas := t["cleanup.policy"]
	sp, dp := policySet(sc.MaybeValue()), policySet(dc.MaybeValue())
	if !sHas || !tHas || sp == dp {
		return
	}
	var note string
	switch {
	case strings.Contains(dp, "compact") && !strings.Contains(sp, "compact"):
		note = "the target compacts: it keeps only the last record of each key, so records the source keeps are removed from the copy"
	case strings.Contains(sp, "compact") && !strings.Contains(dp, "compact"):
		note = "the source is compacted, the target is not: the target deletes records by retention that the source keeps (the latest value of each key)"
	default:
		note = "the two sides remove records by different rules"
	}
	add(tc, r.configFinding("cleanup.policy", sc, dc, sHas, tHas, SeverityRisk, note))
}

func (r *rules) minISR(tc *TopicCheck, s, t map[string]kadm.Config) {
	sc, sHas := s["min.insync.replicas"]
	dc, tHas := t["min.insync.replicas"]
	if !tHas {
		return
	}
	if n, ok := parseInt64(dc.MaybeValue()); ok && tc.TargetRF > 0 && n > int64(tc.TargetRF) {
		add(tc, r.configFinding("min.insync.replicas", sc, dc, sHas, tHas, SeverityRisk,
			fmt.Sprintf("the target needs %d in-sync replicas but the topic has %d: every write with acks=all (the mirror's, and producers' after the switch) fails with NOT_ENOUGH_REPLICAS", n, tc.TargetRF)))
		return
	}
	if sHas && sc.MaybeValue() != dc.MaybeValue() {
		add(tc, r.configFinding("min.insync.replicas", sc, dc, sHas, tHas, SeverityWarning,
			"acks=all writes need a different number of in-sync replicas on the two sides"))
	}
}

func (r *rules) timestampType(tc *TopicCheck, s, t map[string]kadm.Config) {
	sc, sHas := s["message.timestamp.type"]
	dc, tHas := t["message.timestamp.type"]
	if !sHas || !tHas || strings.EqualFold(sc.MaybeValue(), dc.MaybeValue()) {
		return
	}
	if strings.EqualFold(sc.MaybeValue(), "CreateTime") && strings.EqualFold(dc.MaybeValue(), "LogAppendTime") {
		add(tc, r.configFinding("message.timestamp.type", sc, dc, sHas, tHas, SeverityRisk,
			"the target broker replaces every copied record's timestamp with the time it appended it: time-based retention, offsets-for-times lookups and consumers reading timestamps see the copy time, not the producer's"))
		return
	}
	add(tc, r.configFinding("message.timestamp.type", sc, dc, sHas, tHas, SeverityWarning,
		"copies keep the source timestamps, but records producers write after the switch get timestamps by the target's rule"))
}

func (r *rules) compression(tc *TopicCheck, s, t map[string]kadm.Config) {
	sc, sHas := s["compression.type"]
	dc, tHas := t["compression.type"]
	if !sHas || !tHas || strings.EqualFold(sc.MaybeValue(), dc.MaybeValue()) {
		return
	}
	add(tc, r.configFinding("compression.type", sc, dc, sHas, tHas, "",
		"the target broker stores batches compressed by its own setting (recompressing what the mirror sends when it differs): record contents stay the same, sizes on disk and broker CPU do not"))
}

// largestNote says how the largest record was found.
func largestNote(l *RecordSize) string {
	return fmt.Sprintf("largest source record: a one-record batch of %d bytes (uncompressed) at partition %d offset %d, found by reading all %d source records", l.BatchSize, l.Partition, l.Offset, l.Records)
}

// recordSize is the max.message.bytes rule. The target broker refuses a record batch larger
// than the target topic's max.message.bytes; the smallest batch a record can be sent in holds
// it alone (logread.RecordBatchSize, uncompressed: exact for a mirror producer that does not
// compress, MM2's default). With ScanRecords the largest source record is measured; without,
// it is only bounded by the source's max.message.bytes (the source refused larger batches
// while that limit was in force), and the finding says so.
func (r *rules) recordSize(tc *TopicCheck, s, t map[string]kadm.Config) {
	dc, tHas := t["max.message.bytes"]
	limit, ok := parseInt64(dc.MaybeValue())
	if !tHas || !ok {
		tc.Notes = append(tc.Notes, "max.message.bytes not checked: the target reports no numeric max.message.bytes")
		return
	}
	sc, sHas := s["max.message.bytes"]
	if r.cfg.ScanRecords {
		l := tc.LargestRecord
		switch {
		case l == nil:
			tc.Notes = append(tc.Notes, "max.message.bytes: the source topic has no record to measure")
		case l.BatchSize > limit:
			add(tc, Finding{Field: "max.message.bytes", Source: fmt.Sprintf("%d (largest record, partition %d offset %d)", l.BatchSize, l.Partition, l.Offset),
				Target: dc.MaybeValue(), Severity: SeverityRisk, MM2Syncs: ptr(false),
				Note: fmt.Sprintf("the target refuses a batch larger than %d bytes: the mirror cannot write this record (MM2's task fails on it). Measured by reading all %d source records; the size is uncompressed, so a mirror producer that compresses might fit it", limit, l.Records)})
			if syncs, why := r.mm2Sync("max.message.bytes", sc, sHas); syncs {
				tc.Findings[len(tc.Findings)-1].MM2Syncs = ptr(true)
				tc.Findings[len(tc.Findings)-1].Note += "; " + why
			}
		default:
			tc.Notes = append(tc.Notes, largestNote(l)+fmt.Sprintf("; it fits the target's max.message.bytes %d", limit))
		}
		return
	}
	bound, ok := parseInt64(sc.MaybeValue())
	switch {
	case !sHas || !ok:
		tc.Notes = append(tc.Notes, "max.message.bytes not checked: records not read (--scan-records=false) and the source reports no max.message.bytes to bound them")
	case bound > limit:
		syncs, why := r.mm2Sync("max.message.bytes", sc, sHas)
		add(tc, Finding{Field: "max.message.bytes", Source: sc.MaybeValue(), Target: dc.MaybeValue(), Severity: SeverityRisk, MM2Syncs: ptr(syncs),
			Note: fmt.Sprintf("a bound, not a measured size: records were not read (--scan-records=false); the source accepts batches up to %d bytes, so a record the target refuses (above %d) may exist; %s", bound, limit, why)})
	default:
		tc.Notes = append(tc.Notes, fmt.Sprintf("max.message.bytes: records not read (--scan-records=false); the target's %d is at least the source's %d, which bounded every batch the source accepted while it was in force", limit, bound))
	}
}

// retention is the source retention rule: a source that deletes records by time sooner than
// MinRetention (cleanup.policy with delete, retention.ms >= 0 and below it) loses records a
// mirror that stops or falls behind for that long has not read yet: a risk. A size bound
// (retention.bytes >= 0) deletes records however young they are: a warning.
func (r *rules) retention(tc *TopicCheck, s map[string]kadm.Config) {
	if !strings.Contains(policySet(val(s, "cleanup.policy")), "delete") {
		return
	}
	if c, ok := s["retention.ms"]; ok {
		if ms, ok := parseInt64(c.MaybeValue()); ok && ms >= 0 && time.Duration(ms)*time.Millisecond < r.cfg.MinRetention {
			syncs, why := r.mm2Sync("retention.ms", c, true)
			f := Finding{Field: "retention.ms", Source: c.MaybeValue(), Target: "", Severity: SeverityRisk, MM2Syncs: ptr(syncs),
				Note: fmt.Sprintf("the source deletes records after %s, less than --min-retention %s: a mirror that stops or falls behind for longer loses records before it reads them; %s", time.Duration(ms)*time.Millisecond, r.cfg.MinRetention, why)}
			tc.Findings = append(tc.Findings, f)
		}
	}
	if c, ok := s["retention.bytes"]; ok {
		if n, ok := parseInt64(c.MaybeValue()); ok && n >= 0 {
			tc.Findings = append(tc.Findings, Finding{Field: "retention.bytes", Source: c.MaybeValue(), Target: "", Severity: SeverityWarning,
				Note: fmt.Sprintf("the source deletes the oldest records of a partition once it holds more than %d bytes, however young: a lagging mirror can lose them", n)})
		}
	}
}

// fillTarget sets the target value of source-only findings once the target is known.
func fillTarget(tc *TopicCheck, t map[string]kadm.Config) {
	for i := range tc.Findings {
		f := &tc.Findings[i]
		if (f.Field == "retention.ms" || f.Field == "retention.bytes") && f.Target == "" {
			f.Target = val(t, f.Field)
		}
	}
}

// clusterFindings compares the brokers: versions mixed within a cluster (an upgrade under
// way), racks set on some brokers of a cluster only, racks on the source but not the target.
func clusterFindings(src, dst ClusterCheck) []Finding {
	out := []Finding{}
	summary := func(c ClusterCheck) (versions []string, racked, unracked int) {
		for _, b := range c.Brokers {
			if !slices.Contains(versions, b.Version) {
				versions = append(versions, b.Version)
			}
			if b.Rack != "" {
				racked++
			} else {
				unracked++
			}
		}
		slices.Sort(versions)
		return
	}
	sv, sr, su := summary(src)
	dv, dr, du := summary(dst)
	for _, side := range []struct {
		name  string
		c     ClusterCheck
		vs    []string
		r, u  int
		src   bool
		other string
	}{{"source", src, sv, sr, su, true, strings.Join(dv, ", ")}, {"target", dst, dv, dr, du, false, strings.Join(sv, ", ")}} {
		if len(side.vs) > 1 {
			f := Finding{Field: "broker versions", Severity: SeverityWarning,
				Note: fmt.Sprintf("the brokers of the %s cluster %s run different versions (an upgrade under way?)", side.name, side.c.Alias)}
			if side.src {
				f.Source, f.Target = strings.Join(side.vs, ", "), side.other
			} else {
				f.Source, f.Target = side.other, strings.Join(side.vs, ", ")
			}
			out = append(out, f)
		}
		if side.r > 0 && side.u > 0 {
			out = append(out, Finding{Field: "racks", Source: rackText(src), Target: rackText(dst), Severity: SeverityWarning,
				Note: fmt.Sprintf("%d of the %d brokers of the %s cluster %s have no broker.rack: rack-aware replica placement treats them as one more rack", side.u, side.r+side.u, side.name, side.c.Alias)})
		}
	}
	if sr > 0 && dr == 0 {
		out = append(out, Finding{Field: "racks", Source: rackText(src), Target: rackText(dst), Severity: SeverityWarning,
			Note: "the source brokers have racks, the target's none: replicas on the target are not spread over racks, and consumers' client.rack (follower fetching) finds no rack"})
	}
	return out
}

func rackText(c ClusterCheck) string {
	var racks []string
	for _, b := range c.Brokers {
		r := b.Rack
		if r == "" {
			r = "none"
		}
		if !slices.Contains(racks, r) {
			racks = append(racks, r)
		}
	}
	slices.Sort(racks)
	return strings.Join(racks, ", ")
}
