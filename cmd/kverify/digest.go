package main

import (
	"bytes"
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/urfave/cli/v2"

	"github.com/kmigrate/kmigrate/cmd/internal/clikit"
	"github.com/kmigrate/kmigrate/digest"
	"github.com/kmigrate/kmigrate/mm2"
	"github.com/kmigrate/kmigrate/offsetmap"
	"github.com/kmigrate/kmigrate/verify"
)

const digestHelp = `kverify digest reads ONE cluster (--side source or --side target) and writes, per partition,
content-defined chunks of the record fingerprint stream to --out: run it next to that cluster
and send only the file across the link. "kverify compare SOURCE.digest TARGET.digest" then
finds where the two differ without reading either cluster.

The fingerprint is kverify diff's (xxhash64 of the --compare fields). A chunk ends after a
record whose fingerprint's top bits are zero (one record in --chunk-records on average), so
the boundaries follow the content, not offsets or counts: a lost, duplicated or extra record
changes only the chunk around it, and the chunks after it line up again. Each chunk is its
first and last offset, its record count and a hash of its fingerprints in order; each
partition also has a SHA-256 root over all its fingerprints (what --evidence keeps). At the
default average of 4096 records a chunk costs ~60 bytes of the file: with records of 64 bytes
or more, the file is under 0.1% of the topic's record bytes (the command prints the ratio).

--side target reads the topic named by the flow's replication policy (as kverify diff), or
--target-topic; only that side's connection flags are needed. Read read_committed (the
default), the target digest also records per partition the records of aborted transactions
the read passed over (their count, offsets and how many copy a committed record) and a
transaction open where the range ends: read_uncommitted consumers read those records, and
kverify compare says so. The source is read as before, without them. --from/--to take offsets
(earliest, latest, or an offset; --to exclusive) applied to every partition. The file is
written atomically, only when every partition asked was read; on exit 2 nothing is written.

Exit status: 0 written; 2 usage, configuration or connection error (nothing written).

Examples:
  kverify digest --side source --source-brokers old:9092 --topic orders --out orders.source.digest
  kverify digest --side target --target-brokers new:9092 --topic orders --out orders.target.digest
  kverify compare orders.source.digest orders.target.digest

` + clikit.ConnectionHelp

func digestCommand() *cli.Command {
	flags := []cli.Flag{
		&cli.StringFlag{Name: "side", Usage: "`SIDE` to read: source or target (required)", Required: true},
		&cli.StringFlag{Name: "topic", Usage: "source `TOPIC` (required)", Required: true},
		&cli.StringFlag{Name: "target-topic", Usage: "with --side target: `TOPIC` name on the target (default: from the flow's replication policy)"},
		&cli.StringFlag{Name: "out", Usage: "write the digest to `FILE` (required)", Required: true},
		&cli.StringFlag{Name: "partitions", Usage: "partitions to read, e.g. `0,3,5-9` (default: all)"},
		&cli.StringFlag{Name: "from", Value: "earliest", Usage: "start in every partition: earliest or an `OFFSET`"},
		&cli.StringFlag{Name: "to", Value: "latest", Usage: "end (exclusive) in every partition: latest or an `OFFSET`"},
		&cli.StringFlag{Name: "compare", Value: "key,value,headers", Usage: "`FIELDS` fingerprinted: key, value, headers, timestamp"},
		&cli.BoolFlag{Name: "read-uncommitted", Usage: "read aborted and open transactions too (default: read_committed)"},
		&cli.Int64Flag{Name: "chunk-records", Value: digest.DefaultAverage, Usage: "average chunk length in `RECORDS` (a power of two; both digests of a comparison need the same)"},
		&cli.IntFlag{Name: "parallel", Value: 4, Usage: "`N` partitions read at once"},
		&cli.StringFlag{Name: "ranges", Usage: "read exactly the partitions and ranges of this side recorded in the evidence `FILE` (kverify diff --evidence), for kverify check-evidence --digest"},
	}
	flags = append(flags, clikit.ConnectionFlags()...)
	return &cli.Command{
		Name:        "digest",
		Usage:       "write content-defined chunk digests of one cluster's topic, for kverify compare across sites",
		UsageText:   "kverify digest --side source|target --topic TOPIC --out FILE [--partitions ..] [--from ..] [--to ..] [--compare ..] [--chunk-records N] [connection flags of that side]",
		Description: digestHelp,
		Flags:       flags,
		Action:      runDigest,
	}
}

// digestConfig is what runDigest reads, from the flags.
type digestConfig struct {
	digest.TakeConfig
	evidenceTopic string // with --ranges: the topic the evidence records of this side
}

func digestFlags(c *cli.Context) (digestConfig, error) {
	d := digestConfig{TakeConfig: digest.TakeConfig{Side: strings.ToLower(strings.TrimSpace(c.String("side"))), Committed: !c.Bool("read-uncommitted"), Parallel: c.Int("parallel"), From: -1, To: -1}}
	if d.Side != "source" && d.Side != "target" {
		return d, clikit.Failf("--side %q: give source or target", c.String("side"))
	}
	if c.IsSet("target-topic") && d.Side != "target" {
		return d, clikit.Failf("--target-topic is for --side target")
	}
	if c.IsSet("partitions") {
		parts, err := parsePartitions(c.String("partitions"))
		if err != nil {
			return d, clikit.Failf("--partitions %q: %w", c.String("partitions"), err)
		}
		for _, r := range parts {
			d.PartitionRanges = append(d.PartitionRanges, [2]int32{r.From, r.To})
		}
	}
	var from, to verify.Position
	for _, f := range []struct {
		name string
		dst  *verify.Position
		off  *int64
	}{{"from", &from, &d.From}, {"to", &to, &d.To}} {
		var err error
		if *f.dst, err = verify.ParsePosition(c.String(f.name)); err != nil {
			return d, clikit.Failf("--%s: %w", f.name, err)
		}
		if f.dst.Kind == verify.AtTime {
			return d, clikit.Failf("--%s %s: a digest takes offsets (earliest, latest or an offset), not a time", f.name, c.String(f.name))
		}
		if f.dst.Kind == verify.AtOffset {
			*f.off = f.dst.Offset
		}
	}
	if from.Kind == verify.Latest || to.Kind == verify.Earliest {
		return d, clikit.Failf("--from latest or --to earliest reads nothing: give earliest, an offset or latest")
	}
	var err error
	if d.Fields, err = offsetmap.ParseFields(c.String("compare")); err != nil {
		return d, clikit.Failf("--compare: %w", err)
	}
	if d.Params, err = digest.ParamsFor(c.Int64("chunk-records")); err != nil {
		return d, clikit.Failf("--chunk-records: %w", err)
	}
	if d.Parallel < 1 {
		return d, clikit.Failf("--parallel %d: give at least 1", d.Parallel)
	}
	if path := c.String("ranges"); path != "" {
		return d, evidenceRanges(c, &d, path)
	}
	return d, nil
}

// evidenceRanges sets d's ranges, fields and isolation from the evidence file path.
func evidenceRanges(c *cli.Context, d *digestConfig, path string) error {
	for _, f := range []string{"partitions", "from", "to", "compare", "read-uncommitted"} {
		if c.IsSet(f) {
			return clikit.Failf("--ranges %s sets the partitions, ranges, fields and isolation: drop --%s", path, f)
		}
	}
	e, err := digest.ReadEvidence(path)
	if err != nil {
		return clikit.Failf("--ranges: %w", err)
	}
	if d.Fields, err = offsetmap.ParseFields(strings.Join(e.Compared, ",")); err != nil {
		return clikit.Failf("--ranges %s: %w", path, err)
	}
	d.Committed = e.Isolation == "read_committed"
	d.Ranges = map[int32][2]int64{}
	for _, p := range e.Partitions {
		r := p.Source
		if d.Side == "target" {
			r = p.Target
		}
		d.Ranges[p.Partition] = [2]int64{r.From, r.To}
	}
	d.evidenceTopic = e.Source.Topic
	if d.Side == "target" {
		d.evidenceTopic = e.Target.Topic
	}
	return nil
}

func runDigest(c *cli.Context) error {
	d, err := digestFlags(c)
	if err != nil {
		return err
	}
	outs, err := checkOutputs(c, "out")
	if err != nil {
		return err
	}
	conn, err := clikit.ConnectSides(c, d.Side == "source", d.Side == "target")
	if err != nil {
		return err
	}
	cl, side, err := sideClient(c.Context, conn, d.Side)
	if err != nil {
		return err
	}
	defer cl.Close()
	d.Topic = strings.TrimSpace(c.String("topic"))
	if d.Side == "target" {
		d.Topic = conn.Flow.TargetTopic(d.Topic)
		if c.IsSet("target-topic") {
			d.Topic = strings.TrimSpace(c.String("target-topic"))
		}
	}
	if d.Ranges != nil && d.Topic != d.evidenceTopic {
		return clikit.Failf("--ranges %s records %s topic %q, not %q: check --topic", c.String("ranges"), d.Side, d.evidenceTopic, d.Topic)
	}
	d.Cluster, d.Tool = side.Alias, "kverify "+clikit.VersionString()
	f, err := digest.Take(c.Context, cl, d.TakeConfig)
	if err != nil {
		return clikit.Fail(err)
	}
	var b bytes.Buffer
	if err := digest.Write(&b, f); err != nil {
		return clikit.Failf("--out: %w (nothing written)", err)
	}
	if err := writeOutputs(outs, [][]byte{b.Bytes()}); err != nil {
		return err
	}
	fmt.Fprintln(c.App.Writer, digestSummary(f, b.Len(), c.String("out")))
	if over := overBound(f, b.Len()); over != "" {
		fmt.Fprintf(c.App.ErrWriter, "kverify: warning: %s\n", over)
	}
	return nil
}

// overBound says so when the file is more than 0.1% of the record bytes read (records of a
// few bytes each): a larger --chunk-records makes it smaller.
func overBound(f *digest.File, size int) string {
	var bytes int64
	for _, p := range f.Partitions {
		bytes += p.Bytes
	}
	if bytes == 0 || float64(size) <= 0.001*float64(bytes) {
		return ""
	}
	return fmt.Sprintf("the digest (%d bytes) is more than 0.1%% of the %d record bytes read: the records are small; take both digests with a larger --chunk-records (now %d)",
		size, bytes, f.Chunking.MinRecords*16)
}

// digestSummary is the line runDigest prints: what was read and how large the file is.
func digestSummary(f *digest.File, size int, path string) string {
	var recs, bytes, chunks int64
	for _, p := range f.Partitions {
		recs, bytes, chunks = recs+p.Records, bytes+p.Bytes, chunks+int64(len(p.Chunks))
	}
	ratio := "no record bytes"
	if bytes > 0 {
		ratio = fmt.Sprintf("%.4f%% of %d record bytes", 100*float64(size)/float64(bytes), bytes)
	}
	line := fmt.Sprintf("digest of %s topic %q (cluster %s, id %s): %d partitions, %d records, %d chunks; %s: %d bytes, %s",
		f.Side, f.Topic, f.Cluster, f.ClusterID, len(f.Partitions), recs, chunks, path, size, ratio)
	var aborted, copies int64
	var open int
	for _, p := range f.Partitions {
		if p.Txns != nil {
			aborted, copies = aborted+p.Txns.Aborted, copies+p.Txns.AbortedCopies
			if p.Txns.OpenTransaction != nil {
				open++
			}
		}
	}
	if aborted > 0 {
		line += fmt.Sprintf("; %s passed over (%d copies of committed records), which read_uncommitted consumers read", plural(int(aborted), "aborted record"), copies)
	}
	if open > 0 {
		line += fmt.Sprintf("; a transaction open where the range ends in %s, not read", plural(open, "partition"))
	}
	return line
}

// sideClient connects to one side of conn and checks that it answers.
func sideClient(ctx context.Context, conn *clikit.Conn, side string) (*kgo.Client, *mm2.Cluster, error) {
	cl := conn.Source
	if side == "target" {
		cl = conn.Target
	}
	client, err := clikit.Client(cl)
	if err != nil {
		return nil, nil, clikit.Fail(err)
	}
	pctx, cancel := context.WithTimeout(ctx, 15*time.Second)
	defer cancel()
	if err := client.Ping(pctx); err != nil {
		client.Close()
		return nil, nil, clikit.Failf("cannot reach the %s cluster %s at %s: %w (check --%s-brokers and the security flags)", side, cl.Alias, strings.Join(cl.Bootstrap, ","), err, side)
	}
	return client, cl, nil
}
