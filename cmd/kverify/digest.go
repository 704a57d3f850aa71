package main

import (
	"bytes"
	"context"
	"fmt"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/urfave/cli/v2"
	"golang.org/x/sync/errgroup"

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
--target-topic; only that side's connection flags are needed. --from/--to take offsets
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
	side      string
	topic     string
	parts     []verify.PartitionRange
	from, to  verify.Position
	fields    offsetmap.Fields
	committed bool
	params    digest.Params
	parallel  int
	// ranges, from --ranges: the recorded range [from, to) of each partition to read.
	ranges        map[int32][2]int64
	evidenceTopic string
}

func digestFlags(c *cli.Context) (digestConfig, error) {
	d := digestConfig{side: strings.ToLower(strings.TrimSpace(c.String("side"))), committed: !c.Bool("read-uncommitted"), parallel: c.Int("parallel")}
	var err error
	if d.side != "source" && d.side != "target" {
		return d, clikit.Failf("--side %q: give source or target", c.String("side"))
	}
	if c.IsSet("target-topic") && d.side != "target" {
		return d, clikit.Failf("--target-topic is for --side target")
	}
	if c.IsSet("partitions") {
		if d.parts, err = parsePartitions(c.String("partitions")); err != nil {
			return d, clikit.Failf("--partitions %q: %w", c.String("partitions"), err)
		}
	}
	for _, f := range []struct {
		name string
		dst  *verify.Position
	}{{"from", &d.from}, {"to", &d.to}} {
		if *f.dst, err = verify.ParsePosition(c.String(f.name)); err != nil {
			return d, clikit.Failf("--%s: %w", f.name, err)
		}
		if f.dst.Kind == verify.AtTime {
			return d, clikit.Failf("--%s %s: a digest takes offsets (earliest, latest or an offset), not a time", f.name, c.String(f.name))
		}
	}
	if d.from.Kind == verify.Latest || d.to.Kind == verify.Earliest {
		return d, clikit.Failf("--from latest or --to earliest reads nothing: give earliest, an offset or latest")
	}
	if d.fields, err = offsetmap.ParseFields(c.String("compare")); err != nil {
		return d, clikit.Failf("--compare: %w", err)
	}
	if d.params, err = digest.ParamsFor(c.Int64("chunk-records")); err != nil {
		return d, clikit.Failf("--chunk-records: %w", err)
	}
	if d.parallel < 1 {
		return d, clikit.Failf("--parallel %d: give at least 1", d.parallel)
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
	if d.fields, err = offsetmap.ParseFields(strings.Join(e.Compared, ",")); err != nil {
		return clikit.Failf("--ranges %s: %w", path, err)
	}
	d.committed = e.Isolation == "read_committed"
	d.ranges = map[int32][2]int64{}
	for _, p := range e.Partitions {
		r := p.Source
		if d.side == "target" {
			r = p.Target
		}
		d.ranges[p.Partition] = [2]int64{r.From, r.To}
	}
	d.evidenceTopic = e.Source.Topic
	if d.side == "target" {
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
	conn, err := clikit.ConnectSides(c, d.side == "source", d.side == "target")
	if err != nil {
		return err
	}
	cl, side, err := sideClient(c.Context, conn, d.side)
	if err != nil {
		return err
	}
	defer cl.Close()
	d.topic = strings.TrimSpace(c.String("topic"))
	if d.side == "target" {
		d.topic = conn.Flow.TargetTopic(d.topic)
		if c.IsSet("target-topic") {
			d.topic = strings.TrimSpace(c.String("target-topic"))
		}
	}
	if d.ranges != nil && d.topic != d.evidenceTopic {
		return clikit.Failf("--ranges %s records %s topic %q, not %q: check --topic", c.String("ranges"), d.side, d.evidenceTopic, d.topic)
	}
	f, err := takeDigest(c.Context, cl, side, d)
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
	return fmt.Sprintf("digest of %s topic %q (cluster %s, id %s): %d partitions, %d records, %d chunks; %s: %d bytes, %s",
		f.Side, f.Topic, f.Cluster, f.ClusterID, len(f.Partitions), recs, chunks, path, size, ratio)
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

// clusterID asks the cluster for its ID (empty from brokers too old to say).
func clusterID(ctx context.Context, cl *kgo.Client, side string) (string, error) {
	m, err := kadm.NewClient(cl).BrokerMetadata(ctx)
	if err != nil {
		return "", fmt.Errorf("read the metadata of the %s cluster: %w", side, err)
	}
	return m.Cluster, nil
}

// takeDigest reads the partitions asked of d.topic and builds the digest file.
func takeDigest(ctx context.Context, cl *kgo.Client, side *mm2.Cluster, d digestConfig) (*digest.File, error) {
	id, err := clusterID(ctx, cl, d.side)
	if err != nil {
		return nil, err
	}
	ranges, err := digestRanges(ctx, cl, d)
	if err != nil {
		return nil, err
	}
	f := digest.NewFile(d.params)
	f.Tool, f.Created, f.Side, f.Cluster, f.ClusterID, f.Topic = "kverify "+clikit.VersionString(), time.Now().UTC(), d.side, side.Alias, id, d.topic
	f.Compared, f.Isolation = d.fields.Names(), isolation(d.committed)
	f.Partitions = make([]digest.Partition, len(ranges))
	var mu sync.Mutex
	g, gctx := errgroup.WithContext(ctx)
	g.SetLimit(d.parallel)
	for i, r := range ranges {
		g.Go(func() error {
			p, err := digest.Read(gctx, cl, r, d.params)
			mu.Lock()
			f.Partitions[i] = p
			mu.Unlock()
			return err
		})
	}
	if err := g.Wait(); err != nil {
		return nil, fmt.Errorf("%w (cluster %s; nothing written)", err, side.Alias)
	}
	return f, nil
}

func isolation(committed bool) string {
	if committed {
		return "read_committed"
	}
	return "read_uncommitted"
}

// digestRanges lists the partitions asked and their ranges: [from, to) within the log.
func digestRanges(ctx context.Context, cl *kgo.Client, d digestConfig) ([]digest.Range, error) {
	adm := kadm.NewClient(cl)
	parts, err := topicPartitions(ctx, adm, d.side, d.topic)
	if err != nil {
		return nil, err
	}
	if parts, err = pickPartitions(parts, d.parts, d.side, d.topic); err != nil {
		return nil, err
	}
	if d.ranges != nil {
		parts = parts[:0:0]
		for p := range d.ranges {
			parts = append(parts, p)
		}
		slices.Sort(parts)
	}
	starts, err := adm.ListStartOffsets(ctx, d.topic)
	if err == nil {
		err = starts.Error()
	}
	if err != nil {
		return nil, fmt.Errorf("list the start offsets of %s topic %q: %w", d.side, d.topic, err)
	}
	list := adm.ListCommittedOffsets
	if !d.committed {
		list = adm.ListEndOffsets
	}
	ends, err := list(ctx, d.topic)
	if err == nil {
		err = ends.Error()
	}
	if err != nil {
		return nil, fmt.Errorf("list the end offsets of %s topic %q: %w", d.side, d.topic, err)
	}
	var out []digest.Range
	for _, p := range parts {
		s, _ := starts.Lookup(d.topic, p)
		e, _ := ends.Lookup(d.topic, p)
		from, to := s.Offset, e.Offset
		if d.from.Kind == verify.AtOffset {
			from = d.from.Offset
		}
		if d.to.Kind == verify.AtOffset {
			to = d.to.Offset
		}
		if r, ok := d.ranges[p]; ok {
			from, to = r[0], r[1]
		}
		if from < s.Offset || to > e.Offset || to < from {
			return nil, fmt.Errorf("%s topic %q partition %d: the range [%d, %d) asked is not within its log [%d, %d): check --from and --to", d.side, d.topic, p, from, to, s.Offset, e.Offset)
		}
		out = append(out, digest.Range{Cluster: d.side, Topic: d.topic, Partition: p, From: from, To: to, Fields: d.fields, Committed: d.committed})
	}
	return out, nil
}

// topicPartitions lists the sorted partitions of topic; a missing topic is an error.
func topicPartitions(ctx context.Context, adm *kadm.Client, side, topic string) ([]int32, error) {
	tds, err := adm.ListTopics(ctx, topic)
	if err != nil {
		return nil, fmt.Errorf("list %s topic %q: %w", side, topic, err)
	}
	td, ok := tds[topic]
	if !ok || td.Err != nil {
		return nil, fmt.Errorf("%s topic %q does not exist or cannot be described (%v): check --topic (and --target-topic)", side, topic, td.Err)
	}
	ps := td.Partitions.Numbers()
	slices.Sort(ps)
	return ps, nil
}

// pickPartitions returns the partitions of ranges (all without ranges); one the topic lacks is
// an error.
func pickPartitions(parts []int32, ranges []verify.PartitionRange, side, topic string) ([]int32, error) {
	if ranges == nil {
		return parts, nil
	}
	var out []int32
	for _, r := range ranges {
		if len(parts) == 0 || r.To > parts[len(parts)-1] {
			return nil, fmt.Errorf("%s topic %q has %d partitions: --partitions %d-%d reaches past them", side, topic, len(parts), r.From, r.To)
		}
		for p := r.From; p <= r.To; p++ {
			if _, ok := slices.BinarySearch(parts, p); !ok {
				return nil, fmt.Errorf("%s topic %q has no partition %d: check --partitions", side, topic, p)
			}
			out = append(out, p)
		}
	}
	return out, nil
}
