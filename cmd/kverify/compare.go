package main

import (
	"bytes"
	"fmt"
	"io"
	"slices"

	"github.com/urfave/cli/v2"

	"github.com/kmigrate/kmigrate/cmd/internal/clikit"
	"github.com/kmigrate/kmigrate/digest"
	"github.com/kmigrate/kmigrate/report"
	"github.com/kmigrate/kmigrate/verify"
)

const compareHelp = `kverify compare SOURCE.digest TARGET.digest reads two files written by "kverify digest" (the
source side first) and aligns their chunk sequences partition by partition (the same partition
number; each file names its own topic). Chunks with equal hashes are matched in order; where
the sequences part, the nearest pair of equal chunks ahead is where they meet again. Every run
of unmatched chunks is a differing region: a source offset range and a target offset range
(ends exclusive), from just after the matched chunk before it to the start of the matched
chunk after it. Offsets are never compared: a copy that starts elsewhere, or has gaps the
source does not (transaction markers), lines up by content. No cluster is read.

--drill (with the connection flags of both clusters) then reads ONLY those ranges from both
clusters, each from the start of the matched chunk before it (so that a replay of it is
called duplicated, as kverify diff calls it), and prints kverify diff's report for them: the
same JSON (--format json), every missing, duplicated, mismatched or extra record at its
exact offsets. Target records older than a source log that starts above offset 0 are skipped,
as kverify diff skips them. The clusters must be the ones the digests were taken of (their
cluster IDs); records the source wrote after its digest are not read.

Aborted transactions: a target digest read read_committed (the default) records per partition
the records of aborted transactions its read passed over and a transaction open where its range
ends. compare says of them what kverify diff says: "N aborted records on the target (M copies
of committed records): consumers reading read_uncommitted (the Java default) would read them;
read_committed consumers do not", and lists their target offsets (JSON: aborted,
aborted_copies, target_transactions). The verdict stays the read_committed one. A target
digest taken by an earlier kverify, or read_uncommitted, does not record them: "not recorded".

Partitions one digest has and the other does not are problems. Both digests must fingerprint
the same fields with the same isolation and chunking, else exit 2.

Exit status: 0 no differing region (identical: every record of both digests in matched
chunks; with --drill, the drilled ranges identical too); 1 differing regions or problems;
2 usage, file or connection error (nothing written).

Examples:
  kverify compare orders.source.digest orders.target.digest
  kverify compare orders.source.digest orders.target.digest --format json --out regions.json
  kverify compare orders.source.digest orders.target.digest --drill \
      --source-brokers old:9092 --target-brokers new:9092 --format json

` + clikit.ConnectionHelp

func compareCommand() *cli.Command {
	flags := []cli.Flag{
		&cli.BoolFlag{Name: "drill", Usage: "read only the differing ranges from both clusters and report them as kverify diff does"},
		&cli.IntFlag{Name: "parallel", Value: 4, Usage: "with --drill: `N` ranges read at once"},
		&cli.IntFlag{Name: "max-listed", Value: 1000, Usage: "with --drill: list at most `N` ranges per class and range (counts stay complete)"},
	}
	flags = append(flags, clikit.ConnectionFlags()...)
	return clikit.ReportCommand("compare", runCompare, flags,
		"find the differing regions of a source and a target digest (kverify digest); --drill reports their records",
		"kverify compare SOURCE.digest TARGET.digest [--drill [connection flags]] [--format ..] [--out FILE]",
		compareHelp)
}

func runCompare(c *cli.Context) error {
	args, err := positional(c)
	if err != nil {
		return err
	}
	if len(args) != 2 {
		return clikit.Failf("give two digest files: kverify compare SOURCE.digest TARGET.digest (got %d)", len(args))
	}
	format, err := report.ParseFormat(c.String("format"))
	if err != nil {
		return clikit.Failf("--format: %w", err)
	}
	var files [2]*digest.File
	for i, path := range args {
		if files[i], err = digest.ReadFile(path); err != nil {
			return clikit.Fail(err)
		}
	}
	outs, err := checkOutputs(c, "out")
	if err != nil {
		return err
	}
	for _, o := range outs {
		for _, in := range args {
			if sameFile(resolve(in), o.real) {
				return clikit.Failf("--out %s is the digest %s: writing it would destroy an input; give another file", o.path, in)
			}
		}
	}
	if !c.Bool("drill") && format != report.JSON && format != report.Table {
		return clikit.Failf("--format %s: without --drill, compare prints table (text) or json; with --drill every format of kverify diff", format)
	}
	cmp, err := digest.Compare(files[0], files[1])
	if err != nil {
		return clikit.Fail(err)
	}
	if c.Bool("drill") {
		return runDrill(c, args, files, cmp, format, outs)
	}
	var b bytes.Buffer
	if format == report.JSON {
		err = report.Write(&b, format, cmp, report.Options{})
	} else {
		err = writeComparison(&b, cmp)
	}
	if err != nil {
		return clikit.Failf("render: %w", err)
	}
	if err := emit(c, outs, b.Bytes()); err != nil {
		return err
	}
	if !cmp.Identical {
		return clikit.Differs("differing regions found")
	}
	return nil
}

// emit writes data to the --out file (atomically) or to standard output.
func emit(c *cli.Context, outs []output, data []byte) error {
	if len(outs) > 0 {
		return writeOutputs(outs, [][]byte{data})
	}
	_, err := c.App.Writer.Write(data)
	return err
}

// writeComparison is the text form of a comparison.
func writeComparison(w io.Writer, cmp *digest.Comparison) error {
	verdict := "identical"
	if !cmp.Identical {
		verdict = fmt.Sprintf("%d differing regions", cmp.Regions)
	}
	fmt.Fprintf(w, "kverify compare %s (cluster %s) -> %s (cluster %s): %s\n", cmp.SourceTopic, cmp.SourceClusterID, cmp.TargetTopic, cmp.TargetClusterID, verdict)
	txns := comparisonTxns(cmp)
	if cmp.Aborted == nil {
		fmt.Fprintf(w, "aborted records on the target: not recorded (%s)\n", cmp.AbortedNotRecorded)
	}
	for _, s := range report.CompareTxnClauses(txns) {
		fmt.Fprintln(w, s)
	}
	listed := map[int32]bool{}
	for _, p := range cmp.Partitions {
		listed[p.Partition] = true
		fmt.Fprintf(w, "partition %d: source [%d, %d) %d chunks, target [%d, %d) %d chunks, %d matched\n",
			p.Partition, p.SourceFrom, p.SourceTo, p.SourceChunks, p.TargetFrom, p.TargetTo, p.TargetChunks, p.MatchedChunks)
		for _, d := range report.CompareTxnDetails(txns, p.Partition) {
			fmt.Fprintf(w, "  %s\n", d)
		}
		for _, r := range p.Regions {
			fmt.Fprintf(w, "  differs: source [%d, %d) %d records in %d chunks, target [%d, %d) %d records in %d chunks\n",
				r.SourceFrom, r.SourceTo, r.SourceRecords, r.SourceChunks, r.TargetFrom, r.TargetTo, r.TargetRecords, r.TargetChunks)
			if r.TargetFromLowerBound {
				fmt.Fprintf(w, "    (the source digest starts at offset %d: target records before its copy may be older than the source's log; --drill skips them, as kverify diff does)\n", p.SourceFrom)
			}
		}
	}
	for _, p := range cmp.NotCompared {
		fmt.Fprintf(w, "partition %d: nothing to compare (no record in either digest)\n", p)
	}
	// The target partitions not compared (nothing committed, or not in the source digest) may
	// hold aborted records too.
	for _, tp := range cmp.TargetTransactions {
		if !listed[tp.Partition] {
			for _, d := range report.CompareTxnDetails(txns, tp.Partition) {
				fmt.Fprintf(w, "partition %d: %s\n", tp.Partition, d)
			}
		}
	}
	for _, pr := range cmp.Problems {
		fmt.Fprintf(w, "problem: %s\n", pr)
	}
	return nil
}

// comparisonTxns is the target digest's transactions of cmp as kverify diff's Result holds
// them, so that compare says what diff says of them.
func comparisonTxns(cmp *digest.Comparison) *verify.Result {
	r := &verify.Result{Transactions: slices.Clone(cmp.TargetTransactions)}
	if cmp.Aborted != nil {
		r.Aborted, r.AbortedCopies = *cmp.Aborted, *cmp.AbortedCopies
	}
	return r
}

// runDrill reads the differing regions of cmp from both clusters and reports them as kverify
// diff does.
func runDrill(c *cli.Context, args []string, files [2]*digest.File, cmp *digest.Comparison, format report.Format, outs []output) error {
	conn, err := clikit.Open(c)
	if err != nil {
		return err
	}
	defer conn.Close()
	res, err := verify.Drill(c.Context, conn.Src, conn.Dst, cmp, verify.DrillConfig{
		Source: files[0], Target: files[1], SourceName: args[0], TargetName: args[1],
		SourceAlias: conn.Source.Alias, TargetAlias: conn.Target.Alias,
		Parallel: c.Int("parallel"), MaxListed: c.Int("max-listed"),
	})
	if err != nil {
		return clikit.Fail(err)
	}
	title := fmt.Sprintf("kverify compare --drill %s → %s", res.SourceTopic, res.TargetTopic)
	var b bytes.Buffer
	if err := report.Write(&b, format, res, report.Options{Title: title}); err != nil {
		return clikit.Failf("render: %w", err)
	}
	if err := emit(c, outs, b.Bytes()); err != nil {
		return err
	}
	if !res.Identical {
		return clikit.Differs("differences found")
	}
	return nil
}
