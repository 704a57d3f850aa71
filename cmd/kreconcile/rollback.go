package main

import (
	"fmt"

	"github.com/urfave/cli/v2"

	"github.com/kmigrate/kmigrate/cmd/internal/clikit"
	"github.com/kmigrate/kmigrate/reconcile"
)

const rollbackHelp = `Restores the target offsets saved by "kreconcile groups --apply" in a backup file, exactly:
offsets that existed are committed again with their metadata; offsets that did not exist
before are deleted. Groups with members on the target are refused, by name, and nothing is
written for them. It writes only to the target cluster (the connection flags are the same as
for "groups").

Example:
   kreconcile rollback --mm2-config mm2.properties --backup kreconcile-backup-20261201T081500Z.json

Exit status: 0 everything restored; 1 a group was refused; 2 usage, connection or write error.

` + clikit.ConnectionHelp

func rollbackCommand() *cli.Command {
	flags := append(clikit.ConnectionFlags(),
		&cli.StringFlag{Name: "backup", Required: true, Usage: "the backup `FILE` kreconcile groups --apply wrote"},
	)
	flags = append(flags, clikit.OutputFlags()...)
	return &cli.Command{
		Name:        "rollback",
		Usage:       "restore the target offsets saved by groups --apply",
		UsageText:   "kreconcile rollback [connection flags] --backup FILE",
		Description: rollbackHelp,
		Flags:       flags,
		Action:      runRollback,
	}
}

func runRollback(c *cli.Context) error {
	conn, err := clikit.Connect(c)
	if err != nil {
		return err
	}
	dst, err := clikit.Client(conn.Target)
	if err != nil {
		return &clikit.ExitCoder{Code: clikit.ExitError, Err: err}
	}
	defer dst.Close()
	res, rbErr := reconcile.Rollback(c.Context, dst, c.String("backup"))
	if res == nil {
		return &clikit.ExitCoder{Code: clikit.ExitError, Err: rbErr}
	}
	if c.String("format") == "json" {
		if err := clikit.Render(c, res, "kreconcile rollback"); err != nil {
			return err
		}
	} else {
		// The report package renders plans; a rollback is a short list.
		w := c.App.Writer
		for _, g := range res.Groups {
			switch {
			case g.Refused != "":
				fmt.Fprintf(w, "%s: refused: %s\n", g.Group, g.Refused)
			case g.Err != "":
				fmt.Fprintf(w, "%s: error: %s\n", g.Group, g.Err)
			default:
				fmt.Fprintf(w, "%s: restored %d offsets, deleted %d that did not exist before\n", g.Group, g.Restored, g.Deleted)
			}
		}
	}
	refused := 0
	for _, g := range res.Groups {
		if g.Err != "" {
			return &clikit.ExitCoder{Code: clikit.ExitError, Err: fmt.Errorf("rollback of %s: %s", c.String("backup"), g.Err)}
		}
		if g.Refused != "" {
			refused++
		}
	}
	if refused > 0 {
		return clikit.Differs(fmt.Sprintf("%d groups refused", refused))
	}
	return nil
}
