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
written for them. It writes only to the target cluster and needs only its connection
(--target-brokers or --mm2-config).

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
	conn, err := clikit.ConnectTarget(c)
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
	if err := clikit.Render(c, res, "kreconcile rollback"); err != nil {
		return err
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
