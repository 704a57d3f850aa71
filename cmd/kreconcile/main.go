// Command kreconcile computes the exact target offset of every consumer group after a
// migration and, when told, commits it. See `kreconcile groups --help`.
package main

import (
	"os"

	"github.com/urfave/cli/v2"

	"github.com/kmigrate/kmigrate/cmd/internal/clikit"
)

const description = `kreconcile compares every consumer group's committed offsets on the source, on the target
and in MirrorMaker 2's checkpoints, computes the exact target offset E(G) of each partition
from the records' content, and with --apply commits it safely (empty groups only, with a backup,
never above E(G), never backwards unless --allow-rewind). "acls" copies the source's ACLs to the target with
principal mapping. "state" translates a Kafka Streams state directory kept from the source to the
target. "rollback" restores a backup of any of them.

Exit status: 0 every partition is exact; 1 something differs (behind, ahead, pending,
missing, unmappable, refused); 2 usage, configuration or connection error.`

func main() { os.Exit(clikit.Main(newApp(), os.Args)) }

func newApp() *cli.App {
	return clikit.NewApp("kreconcile", "exact consumer group offsets on a migrated Kafka cluster",
		description, groupsCommand(), aclsCommand(), stateCommand(), rollbackCommand())
}
