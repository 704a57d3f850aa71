package main

import (
	"bytes"
	"cmp"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"runtime/debug"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/urfave/cli/v2"

	"github.com/kmigrate/kmigrate/align"
	"github.com/kmigrate/kmigrate/cmd/internal/clikit"
	"github.com/kmigrate/kmigrate/offsetmap"
	"github.com/kmigrate/kmigrate/report"
	"github.com/kmigrate/kmigrate/verify"
)

const diffHelp = `kverify diff reads --topic on the source cluster and its copy on the target cluster (named by
the flow's replication policy: the same name without an MM2 file; --target-topic overrides),
aligns each partition in order with a bounded look-ahead, hashes the compared fields of every
record (--compare), and classifies every record:

  matched     the target record is a copy of the next source record
  missing     a source record with no copy on the target (lost)
  duplicated  a target record repeating a source record already matched (an at-least-once
              replay); the report names the source offset it repeats
  mismatched  at an aligned position the record differs; the report names the fields
              (key, value, headers, timestamp), e.g. a value re-encoded by a wrong converter
  extra       a target record with no source counterpart (written directly to the target)
  ambiguous   matched records inside a run of identical neighbouring records: which copy is
              which cannot be told from content (counted, never hidden)

Ranges are inclusive offsets. Both sides are read with read_committed (aborted transactions
are not compared, markers are gaps) unless --read-uncommitted. A missing target topic or a
partition count mismatch is reported as a problem (exit 1); the common partitions are still
compared. Progress (records/s, positions) goes to stderr when it is a terminal, unless --quiet.

Aborted transactions on the target: a mirror writing transactions (kmirror, MM2 exactly-once)
that is killed or fenced leaves aborted records on the target and writes them again after.
read_committed consumers never see them; read_uncommitted ones (the Java client's default)
read each one, a copy as a duplicate. Every report counts them per target partition
(target_transactions in the JSON: aborted, aborted_copies, aborted_ranges): "N aborted
records on the target (M copies of committed records)"; the verdict stays the read_committed
one. --target-read-uncommitted reads the source read_committed and the target as a
read_uncommitted consumer does: the copies are then duplicated and other aborted records
extra, so the verdict fails for operators whose consumers read uncommitted.
--read-uncommitted instead reads both sides read_uncommitted: the source's own aborted
records are then compared too (missing when the mirror rightly left them out), and aborted
records are not counted apart. A transaction still open at the end of the target log
(open_transaction) is reported, its records not compared until it ends.

Compacted topics are judged as tables (--judge auto, the default, when cleanup.policy
includes compact on either side): the two clusters' log cleaners run at different times, so
a correct copy may keep more or fewer of the records a later record of the same key
supersedes. kverify then reads both partitions whole and compares the latest record of every
key: the same (tombstones too; a key deleted on one side and absent on the other is the same
table), another latest record on the target, missing (a latest value on the source, no record
on the target: lost) or extra (on the target only). The report says it judged a table, its
counts are of keys, and the superseded records each side keeps are counted apart, never as
missing or extra. A table needs whole partitions (no --from/--to), keyed records and no
--state, and has no offset map; --judge log compares a compacted topic record by record,
--judge table any topic by key.

--from and --to take earliest/latest, an offset (--to is exclusive, like an end offset) or an
RFC 3339 time; with --from other than earliest the target is read from MM2's offset syncs
(with --mm2-config) or by timestamp, a little before the copy. A partition with no source
record in the range (e.g. --from after its last record) is "nothing to compare": named in
the report and not_compared, never called identical, left out of the offset map; the other
partitions are compared. When no partition has anything to compare, kverify exits 2.

--partitions takes numbers and inclusive ranges (0,3,5-9; overlaps are merged); a partition
the source topic does not have is an error (exit 2), checked before anything is read.

--offset-map FILE writes the source->target offset map of the alignment (segments plus
duplicate copies, format in offsetmap/doc.go), which "kreconcile groups --offset-map" checks
its answers against. A partition whose pairing the alignment chose rather than proved (runs of
identical records; records that repeat where the copy has replays, losses or extra records) is
left out of the file, and standard error says so (map_left_out in the JSON report).
--out and --offset-map
are checked before any cluster is contacted (directory exists and is writable, not a
directory, not the same file twice, not an input file such as --mm2-config), and written
together at the end, only when the run has an answer (exit 0 or 1): on exit 2 nothing is
written and an existing file is left as it was.

--evidence FILE writes what an auditor keeps (with the other outputs, on exit 0 or 1): per
compared partition the source and target ranges compared and a SHA-256 root over their
record fingerprints (read again after the comparison), the tool version, both cluster IDs, the
time and the SHA-256 of the report (the --out file, else its JSON rendering). "kverify
check-evidence FILE" recomputes the roots later. Not with --state.

--state FILE makes verification incremental. The file holds, per partition, the verified end
on both sides, the log starts, the counts found so far and the fingerprints of the last 8
records below each end; it names the clusters (their IDs), the topics (and their topic IDs where
the broker has them), the compared fields and the isolation, and a state for another
comparison is refused (exit 2). A run with a state first re-reads the boundary: a topic
recreated (topic ID changed), a log that now ends below the verified end, starts before where
it started or past the boundary records, or boundary records that changed, is a finding named
in the report (exit 1), never identical; that partition is not compared and its state is kept,
so the next run finds it again. Then only the records after the verified end are read
(partitions[].source_start in the JSON is where each resumed); earlier runs' findings stay
problems of every later run (delete the file to start over). The state is replaced atomically,
only after a run that verified its range: a run killed at any point resumes from the last one.
Source records after the last one the target has a copy of are reported missing (the mirror
may be stopped), but the state does not move past them: the next run reads them again.
With --state, --offset-map holds only the range this run read (source_from is where it
resumed); kreconcile uses it for groups committed in that range and finds the others by
content. --from and --to cannot be given with --state.

--follow (with --state) verifies as the mirror runs: it repeats the incremental run every
--interval. Source records the target has not reached yet are the lag, neither missing nor
verified; target records past the copy of the last source record wait for the next round.
SIGINT or SIGTERM finishes the current round, writes the state and the report, and exits with
the verdict so far (a second signal exits at once; the state file stays whole). With
--metrics-addr HOST:PORT it serves Prometheus text metrics on /metrics:
kverify_verified_offset{topic,partition} (the verified end), kverify_lag_records (source
offsets listed and not verified yet, all partitions) and kverify_problems_total (records found
missing, duplicated, mismatched or extra so far, plus topic and boundary findings), with the Go
runtime and process metrics (go_*, process_*). At cutover,
stop the producers, wait for lag 0, stop it: only the tail was left to check.

` + multiDiffHelp + `Exit status: 0 identical (in every partition compared); 1 differences (or a topic problem);
2 usage, configuration or connection error, or nothing to compare, naming the cluster,
topic or partition; nothing is written.

Examples:
  kverify diff --source-brokers old:9092 --target-brokers new:9092 --topic orders
  kverify diff --mm2-config mm2.properties --topic orders --format json --out orders.json
  kverify diff --source-brokers old:9092 --target-brokers new:9092 --topic orders \
      --partitions 0,3,5-9 --from 2026-11-30T08:00:00Z --compare key,value,headers,timestamp
  kverify diff --source-brokers old:9092 --target-brokers new:9092 --topic orders \
      --offset-map orders.map.json --quiet && echo identical
  kverify diff --mm2-config mm2.properties --topic orders --state orders.state.json
  kverify diff --mm2-config mm2.properties --topic orders --state orders.state.json \
      --follow --interval 10s --metrics-addr 127.0.0.1:9309
  kverify diff --mm2-config mm2.properties --all --format junit --out flow.xml
  kverify diff --mm2-config mm2.properties --topics 'orders.*,payments' --parallel 8
  kverify diff --mm2-config mm2.properties --all --shard 2/4 --format json --out shard-2.json

` + clikit.ConnectionHelp

func diffCommand() *cli.Command {
	flags := []cli.Flag{
		&cli.StringSliceFlag{Name: "topic", Usage: "source `TOPIC` to verify; give it again for several (or --all, --topics)"},
		&cli.StringFlag{Name: "target-topic", Usage: "`TOPIC` name on the target (default: from the flow's replication policy)"},
		&cli.StringFlag{Name: "partitions", Usage: "source partitions to compare, e.g. `0,3,5-9` (default: all)"},
		&cli.StringFlag{Name: "from", Value: "earliest", Usage: "start in every partition: earliest, an `OFFSET` or an RFC 3339 time"},
		&cli.StringFlag{Name: "to", Value: "latest", Usage: "end (exclusive) in every partition: latest, an `OFFSET` or an RFC 3339 time"},
		&cli.StringFlag{Name: "judge", Value: "auto", Usage: "judge a topic as a `log` (record by record) or a table (the latest record of every key, what a compacted topic keeps); auto: a table when cleanup.policy includes compact on either side"},
		&cli.StringFlag{Name: "compare", Value: "key,value,headers", Usage: "`FIELDS` to compare: key, value, headers, timestamp (leave timestamp out when the target uses LogAppendTime)"},
		&cli.IntFlag{Name: "window", Value: align.DefaultWindow, Usage: "look-ahead in `RECORDS` per partition side: the longest run of missing or extra records resolved in place (memory grows with it)"},
		&cli.IntFlag{Name: "history", Value: align.DefaultHistory, Usage: "remember the last `RECORDS` matched per partition to recognise replays (an MM2 restart replays up to offset.flush.interval.ms of records)"},
		&cli.IntFlag{Name: "parallel", Value: 4, Usage: "`N` partitions read at once"},
		&cli.IntFlag{Name: "max-listed", Value: 1000, Usage: "list at most `N` ranges per class and partition (counts stay complete)"},
		&cli.BoolFlag{Name: "read-uncommitted", Usage: "read both sides read_uncommitted: aborted and open transactions too, the source's own aborted records are compared (default: read_committed on both sides)"},
		&cli.BoolFlag{Name: "target-read-uncommitted", Usage: "read the source read_committed and the target as a read_uncommitted consumer (the Java default) does: the target's aborted copies count as duplicated"},
		&cli.StringFlag{Name: "offset-map", Usage: "write the offset map to `FILE` (JSON, kreconcile checks its answers against it); partitions it cannot prove are left out, saying why"},
		&cli.BoolFlag{Name: "quiet", Aliases: []string{"q"}, Usage: "no progress on stderr"},
		&cli.StringFlag{Name: "state", Usage: "resume from and update the verification state in `FILE` (JSON; created when missing)"},
		&cli.BoolFlag{Name: "follow", Usage: "with --state: verify as the mirror runs, a round every --interval, until SIGINT/SIGTERM"},
		&cli.DurationFlag{Name: "interval", Value: 10 * time.Second, Usage: "with --follow: `DURATION` between rounds"},
		&cli.StringFlag{Name: "metrics-addr", Usage: "with --follow: serve Prometheus metrics on `HOST:PORT` /metrics"},
		&cli.StringFlag{Name: "evidence", Usage: "write what an auditor keeps to `FILE`: per partition the ranges compared and a SHA-256 root of their fingerprints, the version, cluster IDs, time and the report's SHA-256 (see kverify check-evidence --help)"},
	}
	flags = append(flags, multiFlags()...)
	flags = append(flags, clikit.ConnectionFlags()...)
	return clikit.ReportCommand("diff", runDiff, flags,
		"align a source topic with its copy and report every missing, duplicated, altered or extra record",
		"kverify diff --topic TOPIC [--topic T2 ...] | --all | --topics REGEX,... [--shard INDEX/COUNT] [--target-topic T] [--partitions 0,3,5-9] [--from ..] [--to ..] [--compare ..] [--format ..] [--out FILE] [--offset-map FILE] [--evidence FILE] [--state FILE [--follow [--interval 10s] [--metrics-addr HOST:PORT]]] [connection flags]",
		diffHelp)
}

// diffConfig reads the flags into a verify.Config (without the target topic and hints).
func diffConfig(c *cli.Context) (verify.Config, error) {
	cfg := verify.Config{SourceTopic: diffTopic(c), TargetTopic: strings.TrimSpace(c.String("target-topic"))}
	var err error
	if c.IsSet("partitions") {
		s := c.String("partitions")
		if cfg.PartitionRanges, err = parsePartitions(s); err != nil {
			return cfg, clikit.Failf("--partitions %q of topic %q: %w", s, cfg.SourceTopic, err)
		}
	}
	if cfg.From, err = verify.ParsePosition(c.String("from")); err != nil {
		return cfg, clikit.Failf("--from: %w", err)
	}
	if cfg.To, err = verify.ParsePosition(c.String("to")); err != nil {
		return cfg, clikit.Failf("--to: %w", err)
	}
	if cfg.Judge, err = verify.ParseJudgement(c.String("judge")); err != nil {
		return cfg, clikit.Failf("--judge %w", err)
	}
	if cfg.Fields, err = offsetmap.ParseFields(c.String("compare")); err != nil {
		return cfg, clikit.Failf("--compare: %w", err)
	}
	if cfg.Window = c.Int("window"); cfg.Window < 1 {
		return cfg, clikit.Failf("--window %d: give at least 1 (default %d)", cfg.Window, align.DefaultWindow)
	}
	if cfg.History = c.Int("history"); cfg.History < 1 {
		return cfg, clikit.Failf("--history %d: give at least 1 (default %d)", cfg.History, align.DefaultHistory)
	}
	if cfg.Parallel = c.Int("parallel"); cfg.Parallel < 1 {
		return cfg, clikit.Failf("--parallel %d: give at least 1", cfg.Parallel)
	}
	cfg.MaxListed = c.Int("max-listed")
	cfg.ReadUncommitted = c.Bool("read-uncommitted")
	cfg.TargetReadUncommitted = c.Bool("target-read-uncommitted")
	if cfg.ReadUncommitted && cfg.TargetReadUncommitted {
		return cfg, clikit.Failf("--read-uncommitted reads both sides read_uncommitted, --target-read-uncommitted only the target: give one")
	}
	cfg.SetDefaults()
	if err := cfg.Validate(); err != nil {
		return cfg, clikit.Failf("%w", err)
	}
	return cfg, nil
}

// parsePartitions parses "0,3,5-9" into sorted, merged inclusive ranges. Nothing is expanded
// here: Diff checks the ranges against the topic first, so "0-99999999" costs nothing.
func parsePartitions(s string) ([]verify.PartitionRange, error) {
	var out []verify.PartitionRange
	num := func(part, n string) (int32, error) {
		v, err := strconv.ParseInt(strings.TrimSpace(n), 10, 32)
		switch {
		case errors.Is(err, strconv.ErrRange):
			return 0, fmt.Errorf("%q: partition numbers go up to %d", part, math.MaxInt32)
		case err != nil || v < 0:
			return 0, fmt.Errorf("%q is not a partition number or a range like 5-9", part)
		}
		return int32(v), nil
	}
	for _, part := range strings.Split(s, ",") {
		part = strings.TrimSpace(part)
		if part == "" {
			continue
		}
		lo, hi, isRange := strings.Cut(part, "-")
		a, err := num(part, lo)
		if err != nil {
			return nil, err
		}
		b := a
		if isRange {
			if b, err = num(part, hi); err != nil {
				return nil, err
			}
			if b < a {
				return nil, fmt.Errorf("%q is a reversed range: write %d-%d", part, b, a)
			}
		}
		out = append(out, verify.PartitionRange{From: a, To: b})
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("no partition given")
	}
	slices.SortFunc(out, func(x, y verify.PartitionRange) int { return cmp.Compare(x.From, y.From) })
	merged := out[:1]
	for _, r := range out[1:] {
		if last := &merged[len(merged)-1]; int64(r.From) <= int64(last.To)+1 {
			last.To = max(last.To, r.To)
		} else {
			merged = append(merged, r)
		}
	}
	return merged, nil
}

// tuneGC trades memory the verifier does not need for less garbage collection: reading two
// clusters allocates a record per record read, and the live heap is small (the windows), so
// the default GOGC=100 collects far more often than needed. The soft memory limit keeps the
// process under the 256 MiB budget. GOGC and GOMEMLIMIT in the environment win.
func tuneGC() {
	if os.Getenv("GOGC") == "" {
		debug.SetGCPercent(200)
	}
	if os.Getenv("GOMEMLIMIT") == "" {
		debug.SetMemoryLimit(192 << 20)
	}
}

func runDiff(c *cli.Context) error {
	tuneGC()
	if multi, err := multiMode(c); err != nil || multi {
		if err != nil {
			return err
		}
		return runMulti(c)
	}
	cfg, err := diffConfig(c)
	if err != nil {
		return err
	}
	// Every output is checked before a cluster is read or a file written.
	format, err := report.ParseFormat(c.String("format"))
	if err != nil {
		return clikit.Failf("--format: %w", err)
	}
	prev, err := stateFlags(c)
	if err != nil {
		return err
	}
	outs, err := checkOutputs(c, "offset-map", "out", "state", "evidence")
	if err != nil {
		return err
	}
	if c.String("evidence") != "" && c.String("state") != "" {
		return clikit.Failf("--evidence cannot be given with --state: run a full kverify diff for evidence")
	}
	if c.String("evidence") != "" && cfg.TargetReadUncommitted {
		return clikit.Failf("--evidence cannot be given with --target-read-uncommitted: evidence reads both sides with one isolation; run without it for evidence")
	}
	conn, err := clikit.Open(c)
	if err != nil {
		return err
	}
	defer conn.Close()
	src, dst := conn.Src, conn.Dst
	if !c.IsSet("target-topic") {
		cfg.TargetTopic = conn.Flow.TargetTopic(cfg.SourceTopic)
	}
	if conn.Config != nil {
		cfg.UseOffsetSyncs(conn.Flow, src, dst)
	}
	if c.String("state") != "" {
		return runState(c, src, dst, cfg, conn.Conn, prev, outs, format)
	}
	res, om, err := diff(c, src, dst, cfg)
	if err != nil {
		return clikit.Failf("diff %s (cluster %s) -> %s (cluster %s): %w", cfg.SourceTopic, conn.Source.Alias, cfg.TargetTopic, conn.Target.Alias, err)
	}
	if err := answered(res, cfg, conn.Conn); err != nil {
		return err
	}
	title := fmt.Sprintf("kverify %s → %s", res.SourceTopic, res.TargetTopic)
	if err := withEvidence(c, conn, cfg, res, format, title, outs); err != nil {
		return err
	}
	if err := writeResults(outs, format, res, om, nil, title); err != nil {
		return err
	}
	if c.String("out") == "" {
		if err := clikit.Render(c, res, title); err != nil {
			return err
		}
	}
	if !res.Identical {
		return clikit.Differs("differences found")
	}
	return nil
}

// diff runs verify.Diff, with progress on standard error when it is a terminal (unless --quiet).
func diff(c *cli.Context, src, dst *kgo.Client, cfg verify.Config) (*verify.Result, *offsetmap.TopicMap, error) {
	var res *verify.Result
	var om *offsetmap.TopicMap
	err := withProgress(c, &cfg, func(cfg verify.Config) (err error) {
		res, om, err = verify.Diff(c.Context, src, dst, cfg)
		return err
	})
	return res, om, err
}

// withProgress runs f with cfg.Progress on standard error when it is a terminal (unless --quiet).
func withProgress(c *cli.Context, cfg *verify.Config, f func(verify.Config) error) error {
	var prog *progress
	if !c.Bool("quiet") && clikit.IsTerminal(os.Stderr) {
		prog = newProgress(c.App.ErrWriter)
		cfg.Progress = prog.update
		defer prog.stop()
	}
	err := f(*cfg)
	if prog != nil {
		prog.stop()
	}
	return err
}

// answered refuses a result that is no answer: no topic problem, and some partition could not
// be compared. Nothing is written then.
func answered(res *verify.Result, cfg verify.Config, conn *clikit.Conn) error {
	var failed []string
	for _, p := range res.Partitions {
		if p.Err != "" {
			failed = append(failed, fmt.Sprintf("partition %d: %s", p.Partition, p.Err))
		}
	}
	if len(res.Problems) == 0 && len(failed) > 0 {
		return clikit.Failf("could not compare topic %q (cluster %s) with %q (cluster %s): %s; nothing written", cfg.SourceTopic, conn.Source.Alias, cfg.TargetTopic, conn.Target.Alias, strings.Join(failed, "; "))
	}
	return nil
}

// writeResults renders the offset map and the report for the outputs checked before (outs)
// and writes them together (writeOutputs), or nothing when one cannot be rendered.
func writeResults(outs []output, format report.Format, res *verify.Result, om *offsetmap.TopicMap, st *verify.State, title string) error {
	var data [][]byte
	for _, o := range outs {
		var b bytes.Buffer
		var err error
		switch o.flag {
		case "--offset-map":
			err = offsetmap.Write(&b, om)
			for _, p := range res.Partitions {
				if p.MapLeftOut != "" {
					fmt.Fprintf(os.Stderr, "kverify: --offset-map: partition %d of %s left out: %s\n", p.Partition, res.SourceTopic, p.MapLeftOut)
				}
			}
		case "--state":
			err = verify.WriteState(&b, st)
		case "--evidence":
			b.Write(o.data)
		default:
			err = report.Write(&b, format, res, report.Options{Title: title})
		}
		if err != nil {
			return clikit.Failf("%s: %w (nothing written)", o.flag, err)
		}
		data = append(data, b.Bytes())
	}
	return writeOutputs(outs, data)
}

// progress prints records/s and per-partition positions on one stderr line, once a second.
type progress struct {
	progressLine
	parts map[int32]verify.Progress
}

func newProgress(w io.Writer) *progress {
	p := &progress{parts: map[int32]verify.Progress{}}
	p.run(w, p.print)
	return p
}

func (p *progress) update(pr verify.Progress) {
	p.mu.Lock()
	p.parts[pr.Partition] = pr
	p.mu.Unlock()
}

func (p *progress) print() {
	p.mu.Lock()
	defer p.mu.Unlock()
	var total int64
	keys := make([]int32, 0, len(p.parts))
	for k, pr := range p.parts {
		total += pr.Records
		keys = append(keys, k)
	}
	slices.Sort(keys)
	var b strings.Builder
	rate := float64(total) / max(time.Since(p.start).Seconds(), 0.001)
	fmt.Fprintf(&b, "\r%d records (%.0f/s)", total, rate)
	shown := 0
	for _, k := range keys {
		pr := p.parts[k]
		if pr.Done {
			continue
		}
		if shown == 6 {
			b.WriteString(" …")
			break
		}
		fmt.Fprintf(&b, "  p%d %d/%d", k, pr.SourceOffset, pr.SourceTo)
		shown++
	}
	b.WriteString("\x1b[K")
	io.WriteString(p.w, b.String())
}
