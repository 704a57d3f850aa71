// Command kmirror is a lean Kafka mirror that reads MirrorMaker 2's mm2.properties, keeps an
// exact offset map, resumes after a crash without duplicates and scales out as a consumer
// group. See `kmirror run --help` and `kmirror lint --help`.
package main

import (
	"os"

	"github.com/urfave/cli/v2"

	"github.com/kmigrate/kmigrate/cmd/internal/clikit"
)

const description = `kmirror copies the topics of one MirrorMaker 2 flow from a source cluster to a target
cluster: each partition in order to the same partition number, records unchanged (key, value,
headers, timestamp), with an idempotent producer and acks=all. It knows the target offset of
every record it writes and persists that exact offset map on the target, so consumer group
offsets translate exactly (also for idle groups), a crash (even kill -9) resumes without gaps
or duplicates, and several kmirror processes share the partitions through a consumer group.

  kmirror lint mm2.properties                       what MM2 would silently ignore or misread
  kmirror run --config mm2.properties --flow A->B   mirror until SIGTERM (drains, then exits)

Exit status: 0 success; 1 lint found problems; 2 usage, configuration or connection error,
or mirroring stopped on an error.`

func main() { os.Exit(clikit.Main(newApp(), os.Args)) }

func newApp() *cli.App {
	return clikit.NewApp("kmirror", "mirror Kafka topics exactly, from the same mm2.properties as MirrorMaker 2",
		description, runCommand(), lintCommand())
}
