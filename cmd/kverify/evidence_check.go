package main

import (
	"fmt"
	"strings"

	"github.com/urfave/cli/v2"

	"github.com/kmigrate/kmigrate/cmd/internal/clikit"
	"github.com/kmigrate/kmigrate/digest"
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
	srcs := digest.EvidenceSources{Report: c.String("report"), Digests: c.StringSlice("digest"), Clusters: map[string]digest.EvidenceCluster{}}
	conn, err := clikit.ConnectSides(c, false, false)
	if err != nil {
		return err
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
		defer client.Close()
		srcs.Clusters[side] = digest.EvidenceCluster{Client: client, Name: fmt.Sprintf("cluster %s (%s)", cl.Alias, strings.Join(cl.Bootstrap, ","))}
	}
	ec, err := digest.CheckEvidence(c.Context, e, path, srcs)
	if err != nil {
		return clikit.Fail(err)
	}
	if len(ec.Checks) == 0 {
		return clikit.Failf("nothing to check %s against: give --source-brokers/--target-brokers (or --mm2-config), --digest FILE or --report FILE", path)
	}
	w := c.App.Writer
	for _, side := range []string{"source", "target"} {
		if how, ok := ec.CheckedFrom[side]; ok {
			fmt.Fprintf(w, "%s: checked from %s\n", side, how)
		} else {
			fmt.Fprintf(w, "%s: not checked (no connection flags or digest for it)\n", side)
		}
	}
	if e.TargetAborted != nil && *e.TargetAborted > 0 {
		fmt.Fprintf(w, "target: the evidence records %d aborted records in the target ranges (%d copies of committed records), read by read_uncommitted consumers; not part of the roots\n",
			*e.TargetAborted, *e.TargetAbortedCopies)
	}
	for _, ch := range ec.Checks {
		if ch.OK {
			fmt.Fprintln(w, "matches: "+ch.What)
		} else {
			fmt.Fprintln(w, "DOES NOT MATCH: "+ch.What)
		}
	}
	if bad := ec.Mismatches(); len(bad) > 0 {
		return clikit.DiffersErr(fmt.Errorf("the data does not match the evidence %s: %s", path, strings.Join(bad, "; ")))
	}
	return nil
}
