package main

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io"
	"os"
	"slices"
	"strings"

	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/urfave/cli/v2"

	"github.com/kmigrate/kmigrate/cmd/internal/clikit"
	"github.com/kmigrate/kmigrate/digest"
	"github.com/kmigrate/kmigrate/internal/clustermeta"
	"github.com/kmigrate/kmigrate/offsetmap"
)

const checkEvidenceHelp = `kverify check-evidence FILE re-checks an evidence file written by "kverify diff --evidence":
for every partition it lists, it reads the recorded range again and recomputes the SHA-256
root over the record fingerprints, and says whether the data still matches what was proved.

Where the data comes from, any of:
  connection flags    --source-brokers and/or --target-brokers (or --mm2-config): each side
                      given is read again (only the recorded ranges); the cluster must be the
                      one recorded (its cluster ID), else exit 2
  --digest FILE       a digest of one side (kverify digest, repeatable) whose partitions cover
                      exactly the recorded ranges: take it with "kverify digest --ranges FILE"
                      (FILE the evidence) next to that cluster; no cluster is read
  --report FILE       the report the evidence names: its SHA-256 must be report_sha256

At least one source of data must be given. A side neither read nor given as a digest is not
checked and is said so.

Exit status: 0 everything checked matches; 1 something does not (the partition and side, or
the report, is named); 2 usage, file or connection error, a range that can no longer be read
(e.g. deleted by retention) or a cluster or digest of something else.

Examples:
  kverify check-evidence orders.evidence.json --source-brokers old:9092 --target-brokers new:9092
  kverify check-evidence orders.evidence.json --digest orders.target.digest --report orders.json

` + clikit.ConnectionHelp

func checkEvidenceCommand() *cli.Command {
	flags := []cli.Flag{
		&cli.StringSliceFlag{Name: "digest", Usage: "recompute from the digest `FILE` of one side (repeatable)"},
		&cli.StringFlag{Name: "report", Usage: "check that the report `FILE` is the one the evidence hashed"},
	}
	flags = append(flags, clikit.ConnectionFlags()...)
	return &cli.Command{
		Name:        "check-evidence",
		Usage:       "recompute the roots of a kverify diff --evidence file from the clusters or digests and say whether the data still matches",
		UsageText:   "kverify check-evidence FILE [--source-brokers ..] [--target-brokers ..] [--digest FILE]... [--report FILE]",
		Description: checkEvidenceHelp,
		Flags:       flags,
		Action:      runCheckEvidence,
	}
}

// evidenceCheck collects what check-evidence found: one line per check, and the mismatches.
type evidenceCheck struct {
	lines []string
	bad   []string
}

func (ec *evidenceCheck) add(ok bool, format string, args ...any) {
	line := fmt.Sprintf(format, args...)
	if !ok {
		ec.bad = append(ec.bad, line)
		line = "DOES NOT MATCH: " + line
	} else {
		line = "matches: " + line
	}
	ec.lines = append(ec.lines, line)
}

func runCheckEvidence(c *cli.Context) error {
	args, err := positional(c)
	if err != nil {
		return err
	}
	if len(args) != 1 {
		return clikit.Failf("give one evidence file: kverify check-evidence FILE (got %d)", len(args))
	}
	path := args[0]
	e, err := digest.ReadEvidence(path)
	if err != nil {
		return clikit.Fail(err)
	}
	ec := &evidenceCheck{}
	checked := map[string]string{}
	if rep := c.String("report"); rep != "" {
		if err := checkReport(ec, e, rep); err != nil {
			return err
		}
	}
	for _, dpath := range c.StringSlice("digest") {
		side, err := checkDigest(ec, e, dpath)
		if err != nil {
			return err
		}
		checked[side] = "digest " + dpath
	}
	if err := checkClusters(c, path, ec, e, checked); err != nil {
		return err
	}
	if len(ec.lines) == 0 {
		return clikit.Failf("nothing to check %s against: give --source-brokers/--target-brokers (or --mm2-config), --digest FILE or --report FILE", path)
	}
	w := c.App.Writer
	for _, side := range []string{"source", "target"} {
		if how, ok := checked[side]; ok {
			fmt.Fprintf(w, "%s: checked from %s\n", side, how)
		} else {
			fmt.Fprintf(w, "%s: not checked (no connection flags or digest for it)\n", side)
		}
	}
	for _, l := range ec.lines {
		fmt.Fprintln(w, l)
	}
	if len(ec.bad) > 0 {
		return clikit.DiffersErr(fmt.Errorf("the data does not match the evidence %s: %s", path, strings.Join(ec.bad, "; ")))
	}
	return nil
}

// checkReport compares the SHA-256 of the report file with the evidence's.
func checkReport(ec *evidenceCheck, e *digest.Evidence, path string) error {
	f, err := os.Open(path)
	if err != nil {
		return clikit.Failf("--report: %w", err)
	}
	defer f.Close()
	h := sha256.New()
	if _, err := io.Copy(h, f); err != nil {
		return clikit.Failf("--report %s: %w", path, err)
	}
	sum := hex.EncodeToString(h.Sum(nil))
	ec.add(sum == e.ReportSHA256, "report %s: SHA-256 %s, the evidence hashed %s: %s", path, sum, e.ReportHashed, e.ReportSHA256)
	return nil
}

// evidenceSide returns the recorded side and the partitions' ranges of it.
func evidenceSide(e *digest.Evidence, side string) (digest.EvidenceSide, func(digest.EvidencePart) digest.RangeRoot) {
	if side == "source" {
		return e.Source, func(p digest.EvidencePart) digest.RangeRoot { return p.Source }
	}
	return e.Target, func(p digest.EvidencePart) digest.RangeRoot { return p.Target }
}

// checkDigest compares the roots of a digest file with the evidence's; the digest must be of
// the recorded cluster, topic, fields and isolation, and cover each recorded range exactly.
func checkDigest(ec *evidenceCheck, e *digest.Evidence, path string) (string, error) {
	d, err := digest.ReadFile(path)
	if err != nil {
		return "", clikit.Fail(err)
	}
	es, rangeOf := evidenceSide(e, d.Side)
	switch {
	case d.ClusterID != es.ClusterID || d.Topic != es.Topic:
		return "", clikit.Failf("--digest %s is of topic %q on cluster %q, the evidence's %s is topic %q on cluster %q", path, d.Topic, d.ClusterID, d.Side, es.Topic, es.ClusterID)
	case !slices.Equal(d.Compared, e.Compared) || d.Isolation != e.Isolation:
		return "", clikit.Failf("--digest %s fingerprints %v read %s, the evidence %v read %s: take the digest with the same --compare and isolation", path, d.Compared, d.Isolation, e.Compared, e.Isolation)
	}
	for _, ep := range e.Partitions {
		want := rangeOf(ep)
		p, ok := d.Lookup(ep.Partition)
		if !ok || p.From != want.From || p.To != want.To {
			return "", clikit.Failf("--digest %s does not cover %s partition %d [%d, %d) exactly: take it with kverify digest --side %s --ranges EVIDENCE", path, d.Side, ep.Partition, want.From, want.To, d.Side)
		}
		ec.add(p.Root == want.Root && p.Records == want.Records, "%s topic %q partition %d [%d, %d): %d records, root %s (digest %s); evidence: %d records, root %s",
			d.Side, d.Topic, ep.Partition, want.From, want.To, p.Records, p.Root, path, want.Records, want.Root)
	}
	return d.Side, nil
}

// checkClusters reads the recorded ranges again on every side whose connection is given.
func checkClusters(c *cli.Context, path string, ec *evidenceCheck, e *digest.Evidence, checked map[string]string) error {
	conn, err := clikit.ConnectSides(c, false, false)
	if err != nil {
		return err
	}
	fields, err := offsetmap.ParseFields(strings.Join(e.Compared, ","))
	if err != nil {
		return clikit.Failf("evidence %s: compared fields: %w", path, err)
	}
	for _, side := range []string{"source", "target"} {
		cl := conn.Source
		if side == "target" {
			cl = conn.Target
		}
		if len(cl.Bootstrap) == 0 {
			continue
		}
		client, _, err := sideClient(c.Context, conn, side)
		if err != nil {
			return err
		}
		err = checkCluster(c.Context, ec, e, client, side, fields)
		client.Close()
		if err != nil {
			return err
		}
		checked[side] = fmt.Sprintf("cluster %s (%s)", cl.Alias, strings.Join(cl.Bootstrap, ","))
	}
	return nil
}

func checkCluster(ctx context.Context, ec *evidenceCheck, e *digest.Evidence, cl *kgo.Client, side string, fields offsetmap.Fields) error {
	es, rangeOf := evidenceSide(e, side)
	id, err := clustermeta.ID(ctx, cl, side)
	if err != nil {
		return clikit.Fail(err)
	}
	if id != es.ClusterID {
		return clikit.Failf("the %s cluster reached has ID %q, the evidence was taken of %q (%s): connect to that cluster", side, id, es.ClusterID, es.Cluster)
	}
	for _, ep := range e.Partitions {
		want := rangeOf(ep)
		got, err := rangeRoot(ctx, cl, digest.Range{Cluster: side, Topic: es.Topic, Partition: ep.Partition, From: want.From, To: want.To, Fields: fields, Committed: e.Isolation == "read_committed"})
		if err != nil {
			return clikit.Failf("cannot re-read the recorded range: %w", err)
		}
		ec.add(got.Root == want.Root && got.Records == want.Records, "%s topic %q partition %d [%d, %d): %d records, root %s; evidence: %d records, root %s",
			side, es.Topic, ep.Partition, want.From, want.To, got.Records, got.Root, want.Records, want.Root)
	}
	return nil
}
