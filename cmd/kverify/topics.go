package main

import (
	"bytes"
	"fmt"
	"strings"

	"github.com/urfave/cli/v2"

	"github.com/kmigrate/kmigrate/cmd/internal/clikit"
	"github.com/kmigrate/kmigrate/report"
	"github.com/kmigrate/kmigrate/verify"
)

const topicsHelp = `kverify topics is the preflight before producers move: for every topic the flow mirrors (the
flow's topics filter of --mm2-config/--flow; without an MM2 file every non-internal source
topic), narrowed by --topics, it compares the source topic with its target topic (named by the
flow's replication policy) and reports every finding:

  topic                   the target topic is missing (MM2 would create it: with what, said)
  partitions              counts differ (MM2 adds partitions to a smaller target)
  replication.factor      differs (MM2 never changes it)
  <any topic config>      differs: source value, target value, and whether MirrorMaker 2
                          3.7.1 would sync it (config.properties.exclude, whose default leaves
                          out min.insync.replicas, message.timestamp.type and others;
                          sync.topic.configs.enabled; values from the source brokers'
                          server.properties are not copied). Configs at their built-in
                          default on both brokers (the two versions' defaults) are not
                          compared, except the four below. A source override that Kafka
                          4 removed (message.format.version,
                          message.downconversion.enable,
                          message.timestamp.difference.max.ms) says what a 4.x target
                          does instead and what to do.
  cleanup.policy          differs: risk (compaction removes records on one side only)
  min.insync.replicas     differs; above the target's replication factor: risk
  message.timestamp.type  CreateTime on the source, LogAppendTime on the target: risk (the
                          target rewrites every copy's timestamp)
  compression.type        differs (the target recompresses)
  max.message.bytes       the target refuses the largest source record: risk. The largest
                          record is measured by reading every source record (read_uncommitted,
                          log start to high watermark: the size of a batch holding it alone,
                          uncompressed); --scan-records=false reads none and bounds it by the
                          source's max.message.bytes instead (the finding then says it is a
                          bound)
  retention.ms            the source deletes records by time sooner than --min-retention
                          (default 24h): risk, a mirror stopped that long loses records
  retention.bytes         the source deletes by size: a lagging mirror can lose records
  aborted records         the target topic already holds records of aborted transactions
                          (e.g. the copies a killed or fenced exactly-once mirror left):
                          warning, with their count and offsets per partition. Consumers
                          reading read_uncommitted (the Java client's default) read them,
                          read_committed ones do not. Found by reading every target record
                          (read_committed, log start to last stable offset); a transaction
                          still open is noted, not counted. --scan-aborted=false reads none

Severity: risk (records lost, refused or altered), warning (MM2 leaves the difference),
info (MM2 would sync it). A topic's status is missing, risk, differs or ok. Cluster level:
each broker's version (derived from the API versions it supports: Kafka reports no version
string, so the patch level is unknown, and a set matching no release is "unknown") and rack;
mixed versions in one cluster and racks on one side only are findings. MirrorMaker 2's own
topics that exist (the checkpoints and heartbeats topics on the target, the offset syncs where
the flow keeps them, Connect's mm2-offsets/configs/status.<source>.internal on the target) must
have cleanup.policy=compact alone (a risk otherwise: MM2's state there is deleted at
retention.ms, e.g. every checkpoint after 7 days) and at least the replication factor the flow
asks for (a warning). Topics MM2 will create, and those of features the flow turns off, are not
checked.

It only reads both clusters (metadata, ApiVersions, DescribeConfigs, ListOffsets and, with
--scan-records, the source records, with --scan-aborted the target records); it never writes
to either. JUnit: one test case per topic (and one for the clusters).

Exit status: 0 all ok (no finding); 1 any finding; 2 usage, configuration or connection error,
or no topic selected; on exit 2 nothing is written.

Examples:
  kverify topics --mm2-config mm2.properties
  kverify topics --source-brokers old:9092 --target-brokers new:9092 --topics 'orders.*,payments'
  kverify topics --mm2-config mm2.properties --scan-records=false --format json --out preflight.json

` + clikit.ConnectionHelp

func topicsCommand() *cli.Command {
	flags := []cli.Flag{
		&cli.StringFlag{Name: "topics", Usage: "only the topics of the flow matching one of these comma-separated `REGEXES` (the whole name must match, as in MM2's topics key)"},
		&cli.BoolFlag{Name: "scan-records", Value: true, Usage: "read every source record to measure the largest (false: bound it by the source's max.message.bytes)"},
		&cli.BoolFlag{Name: "scan-aborted", Value: true, Usage: "read every target record to find records of aborted transactions (what read_uncommitted consumers would read)"},
		&cli.DurationFlag{Name: "min-retention", Value: verify.DefaultMinRetention, Usage: "a source retention.ms below this `DURATION` is a risk"},
	}
	flags = append(flags, clikit.ConnectionFlags()...)
	return clikit.ReportCommand("topics", runTopics, flags,
		"preflight: compare the metadata and configs of every mirrored topic on both clusters",
		"kverify topics [--topics REGEX,...] [--scan-records=false] [--scan-aborted=false] [--min-retention 24h] [--format ..] [--out FILE] [connection flags]",
		topicsHelp)
}

func runTopics(c *cli.Context) error {
	cfg := verify.PreflightConfig{ScanRecords: c.Bool("scan-records"), ScanAborted: c.Bool("scan-aborted"), MinRetention: c.Duration("min-retention")}
	if cfg.MinRetention <= 0 {
		return clikit.Failf("--min-retention %s: give a positive duration such as 24h", c.Duration("min-retention"))
	}
	if c.IsSet("topics") {
		for _, t := range strings.Split(c.String("topics"), ",") {
			if t = strings.TrimSpace(t); t != "" {
				cfg.Topics = append(cfg.Topics, t)
			}
		}
		if len(cfg.Topics) == 0 {
			return clikit.Failf("--topics %q: give at least one regex", c.String("topics"))
		}
	}
	format, outs, conn, err := openReport(c)
	if err != nil {
		return err
	}
	defer conn.Close()
	cfg.Flow = conn.Flow
	src, dst := conn.Src, conn.Dst
	res, err := verify.Preflight(c.Context, src, dst, cfg)
	if err != nil {
		return clikit.Failf("topics %s (cluster %s -> cluster %s): %w", conn.Flow.Name(), conn.Source.Alias, conn.Target.Alias, err)
	}
	title := fmt.Sprintf("kverify topics %s → %s", conn.Source.Alias, conn.Target.Alias)
	if len(outs) > 0 {
		var b bytes.Buffer
		if err := report.Write(&b, format, res, report.Options{Title: title}); err != nil {
			return clikit.Failf("--out: %w (nothing written)", err)
		}
		if err := writeOutputs(outs, [][]byte{b.Bytes()}); err != nil {
			return err
		}
	} else if err := clikit.Render(c, res, title); err != nil {
		return err
	}
	if !res.OK {
		return clikit.Differs(fmt.Sprintf("%d findings", res.Findings))
	}
	return nil
}
