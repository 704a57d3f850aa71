// Command kverify proves that a mirrored topic is a complete and unaltered copy of its source,
// record by record, and writes the exact offset map. See `kverify diff --help`.
package main

import (
	"os"

	"github.com/urfave/cli/v2"

	"github.com/kmigrate/kmigrate/cmd/internal/clikit"
)

const description = `kverify reads a source topic and its copy on the target cluster, aligns them partition by
partition in order, hashes the bytes of every record, and reports every missing, duplicated,
altered or extra record at its exact offsets. No replication tool checks what it copied:
"lag 0" is not proof. See "kverify diff --help". Before the producers move, "kverify topics"
compares the mirrored topics' metadata and configs on both clusters (see its --help).
"kverify diff --all" verifies every topic of a flow, "--shard I/N" a share of it, and
"kverify merge" joins the shards' reports into one verdict.
Across sites, "kverify digest" on each side and "kverify compare" find the differing ranges
from two small files; "kverify diff --evidence" and "kverify check-evidence" keep and re-check
what was proved.

Exit status: 0 identical; 1 differences found; 2 usage, configuration or connection error,
or nothing to compare (no source record in the range asked); on exit 2 nothing is written.`

func main() { os.Exit(clikit.Main(app(), os.Args)) }

func app() *cli.App {
	return clikit.NewApp("kverify", "record-by-record proof that a mirrored Kafka topic is complete and unaltered",
		description, diffCommand(), topicsCommand(), mergeCommand(), digestCommand(), compareCommand(), checkEvidenceCommand())
}
