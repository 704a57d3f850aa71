package main

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"

	"github.com/urfave/cli/v2"

	"github.com/kmigrate/kmigrate/cmd/internal/clikit"
	"github.com/kmigrate/kmigrate/mm2"
)

const lintHelp = `lint reads FILE as MirrorMaker 2 3.7.1 would and prints every finding with its line: unknown
or misspelled keys with a suggestion (offset.max.lag -> offset.lag.max), flow keys naming an
undeclared alias, an alias in the wrong case, inline "# comments" that become part of a
value, trailing blanks that turn "true" false, invalid regexes, replication factors a
2.3.0 cluster cannot take. MM2 itself drops unknown keys without a word. Each finding has a
severity: error (MM2 refuses the file or does not do what it says), warning, info.

Keys only kmirror reads (kmirror.commit.latency.max.ms, the longest a record waits for the
commit that makes it visible) are info findings: MM2 ignores them, so one file serves both.
offset.flush.interval.ms gets one too, saying how it differs: it is how often MM2's worker
commits source offsets (a restart mirrors again what came since), while kmirror commits
records and offset map together and ignores it.

Examples:
  kmirror lint mm2.properties
  kmirror lint --format json mm2.properties | jq .
  kmirror lint --format junit --out lint.xml mm2.properties     (for CI)

FILE is read up to 4 MiB, lines up to 1 MiB (real files are a few KiB); beyond, lint refuses
it. Findings never show the value of a key that may hold a credential (passwords, JAAS
configs, *secret*, *token*, *credentials*, basic.auth.user.info, ssl.key*, *.key).

Exit status: 0 no findings; 1 findings printed; 2 the file cannot be read, is too large,
or reading it was interrupted.`

func lintCommand() *cli.Command {
	return clikit.ReportCommand("lint", lint, nil,
		"report what MirrorMaker 2 would silently ignore or misread in an mm2.properties file",
		"kmirror lint "+clikit.OutputUsage()+" FILE",
		lintHelp)
}

func lint(c *cli.Context) error {
	if c.NArg() != 1 {
		return clikit.Failf("lint needs exactly one FILE, e.g. kmirror lint mm2.properties")
	}
	path := c.Args().First()
	findings, err := lintFile(c.Context, path)
	if err != nil {
		return clikit.Fail(err)
	}
	if findings == nil {
		findings = []mm2.Finding{}
	}
	if err := clikit.Render(c, findings, "kmirror lint "+path); err != nil {
		return err
	}
	if len(findings) > 0 {
		return clikit.Differs(fmt.Sprintf("%d findings", len(findings)))
	}
	return nil
}

// lintFile returns mm2.Lint's findings for path, read within mm2's limits (MaxFileSize,
// MaxLineSize) and until ctx ends (SIGTERM, SIGINT).
func lintFile(ctx context.Context, path string) ([]mm2.Finding, error) {
	data, err := mm2.ReadFile(ctx, path)
	if err != nil {
		var pe *os.PathError
		if errors.As(err, &pe) {
			return nil, fmt.Errorf("lint: %w", err)
		}
		return nil, fmt.Errorf("lint %s: %w", path, err)
	}
	findings, err := mm2.Lint(bytes.NewReader(data))
	if err != nil {
		return nil, fmt.Errorf("lint %s: %w", path, err)
	}
	return findings, nil
}
