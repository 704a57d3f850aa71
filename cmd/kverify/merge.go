package main

import (
	"fmt"
	"os"

	"github.com/urfave/cli/v2"

	"github.com/kmigrate/kmigrate/cmd/internal/clikit"
	"github.com/kmigrate/kmigrate/report"
	"github.com/kmigrate/kmigrate/verify"
)

const mergeHelp = `kverify merge joins the JSON reports of the shards of one "kverify diff --shard INDEX/COUNT"
run (--all, --topics or --topic, every shard with the same flags) into one verdict and one
report, in any --format, as if one process had compared the whole flow. It contacts no
cluster.

It refuses (exit 2, naming the file, nothing written): a file that cannot be read or is not
such a report (a single-topic report, another tool's), a report made without --shard,
reports of different runs (flow, cluster IDs, the topics selected and their partition
counts, --from/--to, --compare, isolation) or shard counts, a shard given twice, a shard
missing, and a partition covered by two reports or by none. When the flow changed between
the shards' runs (a topic created or grown), run every shard again.

Exit status: 0 every topic identical; 1 any topic differs; 2 a refusal above, partitions
that could not be read while nothing differs, or nothing to compare in any topic.

Examples:
  kverify merge shard-0.json shard-1.json shard-2.json shard-3.json
  kverify merge --format junit --out flow.xml shard-*.json
`

func mergeCommand() *cli.Command {
	return clikit.ReportCommand("merge", runMerge, nil,
		"join the JSON reports of every shard of kverify diff --shard into one verdict",
		"kverify merge [--format ..] [--out FILE] REPORT.json...", mergeHelp)
}

func runMerge(c *cli.Context) error {
	format, err := report.ParseFormat(c.String("format"))
	if err != nil {
		return clikit.Failf("--format: %w", err)
	}
	if c.NArg() == 0 {
		return clikit.Failf("no report given: give the JSON report of every shard, e.g. kverify merge shard-*.json")
	}
	outs, err := checkOutputs(c, "out")
	if err != nil {
		return err
	}
	var reports []verify.ShardReport
	for _, path := range c.Args().Slice() {
		for _, o := range outs {
			if sameFile(resolve(path), o.real) {
				return clikit.Failf("%s %s is the report %s: writing it would destroy an input; give another file", o.flag, o.path, path)
			}
		}
		data, err := os.ReadFile(path)
		if err != nil {
			return clikit.Failf("%s: %v", path, err)
		}
		mr, err := verify.ParseMultiResult(data)
		if err != nil {
			return clikit.Failf("%s: %w", path, err)
		}
		reports = append(reports, verify.ShardReport{Name: path, Result: mr})
	}
	mr, err := verify.MergeShards(reports)
	if err != nil {
		return clikit.Failf("%w; nothing written", err)
	}
	if err := multiAnswered(mr); err != nil {
		return err
	}
	title := fmt.Sprintf("kverify merge %s (%d shards)", mr.Selection.Flow, mr.MergedShards)
	if err := renderMulti(c, outs, format, mr, title); err != nil {
		return err
	}
	return multiExit(c, mr)
}
