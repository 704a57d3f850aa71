package main

import (
	"errors"
	"fmt"

	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/urfave/cli/v2"

	"github.com/kmigrate/kmigrate/aclsync"
	"github.com/kmigrate/kmigrate/cmd/internal/clikit"
	"github.com/kmigrate/kmigrate/internal/backupfile"
	"github.com/kmigrate/kmigrate/reconcile"
)

const rollbackHelp = `Undoes "kreconcile groups --apply", "kreconcile acls --apply" or "kreconcile state --apply" from
the backup file it wrote (the file says which it holds).

A state directory backup (kreconcile state --apply): rollback restores the .checkpoint files
the rewrite changed, on this host, and writes to no cluster (connection flags are not needed).
It restores nothing when a file is no longer what the rewrite wrote (the application ran on the
directory since: its checkpoints name target offsets now), and names those files (exit 1).

An ACL backup (kreconcile acls --apply): rollback deletes exactly the ACLs the apply created (an
ACL added on the target since is kept, even on the same resource) and creates again those it
deleted (--delete-extra); an ACL already as the rollback would leave it is left alone. What
is on the target is read from every broker, once they all give the same answer (a broker
applies an ACL change a moment after the controller): brokers that still differ after
--read-timeout (default 30s) stop it before any write, naming them; after the writes it waits
until every broker shows each change, and names a broker that does not. It refuses a cluster
whose ID is not the backup's target, as below (exit 2). --force and --legacy-cluster-id are for
group backups only; --read-timeout for ACL backups only.

A groups backup: rollback restores the target offsets saved by "kreconcile groups --apply", exactly:
offsets that existed are committed again with their metadata; offsets that did not exist
before are deleted. It writes only to the target cluster and needs only its connection
(--target-brokers or --mm2-config).

What it refuses (nothing is written for what is refused):
   - a cluster that is not the backup's: the backup records the cluster ID of both clusters of
     the apply, and rollback writes only to the one whose ID is the backup's target (pointing
     --target-brokers at the source, or at any other cluster, exits 2);
   - a backup that is not valid: unknown version, bytes after the JSON, empty group or topic
     names, negative partitions or offsets (other than "none"), a partition listed twice (exit 2);
   - a backup written by an earlier kreconcile (version 1), which records no cluster: it is
     read only with --legacy-cluster-id ID, ID being the cluster ID of the cluster you connect
     to (the error prints it), which says you vouch that the backup was taken there (exit 2
     without it);
   - groups with members on the target, by name (exit 1);
   - partitions whose target commit is no longer the one the apply wrote: the group moved since
     (it consumed on the target, or someone committed), and restoring the old offset would
     re-deliver or skip what it did since. They are named and left alone (exit 1) unless
     --force. A Kafka Streams application the apply switched as one unit is rolled back as
     one: with one partition moved since, none of it is restored (exit 1) unless --force.
     Partitions already at the backup's offset are left as they are. With a version 1
     backup, which does not say what the apply wrote, every partition not at the backup's offset
     counts as moved since.

Example:
   kreconcile rollback --mm2-config mm2.properties --backup kreconcile-backup-20261201T081500Z.json

Exit status: 0 everything restored; 1 a group was refused or partitions moved since the apply
(see --force); 2 usage, connection, cluster or backup error, or a write failed.

` + clikit.ConnectionHelp

func rollbackCommand() *cli.Command {
	flags := append(clikit.ConnectionFlags(),
		&cli.StringFlag{Name: "backup", Required: true, Usage: "the backup `FILE` kreconcile groups --apply, acls --apply or state --apply wrote"},
		&cli.BoolFlag{Name: "force", Usage: "also restore partitions whose target commit moved since the apply (undoes what the group consumed since)"},
		&cli.StringFlag{Name: "legacy-cluster-id", Usage: "read a version 1 backup (no cluster recorded) on the connected cluster, whose cluster `ID` this must be"},
		readTimeoutFlag(),
	)
	return clikit.ReportCommand("rollback", runRollback, flags,
		"undo groups --apply (target offsets), acls --apply (ACLs) or state --apply (.checkpoint files) from its backup",
		"kreconcile rollback [connection flags] --backup FILE [--force] [--legacy-cluster-id ID]",
		rollbackHelp)
}

func runRollback(c *cli.Context) error {
	kind, err := backupfile.Kind(c.String("backup"))
	if err != nil {
		return clikit.Fail(err)
	}
	switch kind {
	case backupfile.ACLs:
		return runACLRollback(c)
	case backupfile.State:
		return runStateRollback(c)
	}
	if c.IsSet("read-timeout") {
		return clikit.Failf("--read-timeout is for ACL backups; %s is a backup of consumer group offsets", c.String("backup"))
	}
	dst, alias, err := targetClient(c)
	if err != nil {
		return err
	}
	defer dst.Close()
	res, rbErr := reconcile.Rollback(c.Context, dst, c.String("backup"), reconcile.RollbackConfig{
		Force: c.Bool("force"), TargetAlias: alias, LegacyClusterID: c.String("legacy-cluster-id")})
	if res == nil {
		return clikit.Fail(rbErr)
	}
	if err := clikit.Render(c, res, "kreconcile rollback"); err != nil {
		return err
	}
	failed, differs := 0, 0
	for _, g := range res.Groups {
		if g.Err != "" {
			failed++
		}
		if g.Refused != "" || len(g.Conflicts) > 0 {
			differs++
		}
	}
	switch {
	case failed > 0:
		return clikit.Failf("rollback of %s: %w", c.String("backup"), rbErr)
	case differs > 0:
		return clikit.DiffersErr(rbErr)
	}
	return nil
}

// runStateRollback undoes kreconcile state --apply: local files only, no cluster.
func runStateRollback(c *cli.Context) error {
	for _, f := range []string{"force", "legacy-cluster-id", "read-timeout"} {
		if c.IsSet(f) {
			return clikit.Failf("--%s is not for state directory backups; %s is one", f, c.String("backup"))
		}
	}
	rb, err := reconcile.RollbackStateDir(c.String("backup"))
	if rb != nil {
		fmt.Fprintf(c.App.Writer, "kreconcile rollback: %s: %d .checkpoint files restored %v, %d already as before %v\n", rb.Dir, len(rb.Restored), rb.Restored, len(rb.Unchanged), rb.Unchanged)
	}
	switch {
	case errors.Is(err, reconcile.ErrStateMoved):
		return clikit.DiffersErr(err)
	case err != nil:
		return clikit.Fail(err)
	}
	return nil
}

// runACLRollback undoes kreconcile acls --apply from its ACL backup.
func runACLRollback(c *cli.Context) error {
	for _, f := range []string{"force", "legacy-cluster-id"} {
		if c.IsSet(f) {
			return clikit.Failf("--%s is for backups of consumer group offsets; %s is an ACL backup", f, c.String("backup"))
		}
	}
	timeout, err := readTimeout(c)
	if err != nil {
		return err
	}
	dst, alias, err := targetClient(c)
	if err != nil {
		return err
	}
	defer dst.Close()
	res, rbErr := aclsync.Rollback(c.Context, dst, c.String("backup"), aclsync.RollbackConfig{TargetAlias: alias, ReadTimeout: timeout})
	if res == nil {
		return clikit.Fail(rbErr)
	}
	if err := clikit.Render(c, res, ""); err != nil {
		return err
	}
	if rbErr != nil {
		return clikit.Failf("rollback of %s: %w", c.String("backup"), rbErr)
	}
	return nil
}

// targetClient connects to the target cluster only (a rollback never needs the source) and
// returns the client and the name that cluster goes by in errors: the flow's target alias,
// else "target".
func targetClient(c *cli.Context) (*kgo.Client, string, error) {
	conn, err := clikit.ConnectTarget(c)
	if err != nil {
		return nil, "", err
	}
	dst, err := clikit.Client(conn.Target)
	if err != nil {
		return nil, "", clikit.Fail(err)
	}
	alias := "target"
	if conn.Flow != nil && conn.Flow.Target != "" {
		alias = conn.Flow.Target
	}
	return dst, alias, nil
}
