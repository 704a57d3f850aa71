package main

import (
	"fmt"
	"strings"
	"time"

	"github.com/urfave/cli/v2"

	"github.com/kmigrate/kmigrate/aclsync"
	"github.com/kmigrate/kmigrate/cmd/internal/clikit"
	"github.com/kmigrate/kmigrate/internal/agree"
)

const aclsHelp = `Reads every ACL on the source and on the target (it never writes the source) and plans the
target's ACLs: each source ACL becomes its image on the target, and kreconcile says whether the
target has it.

How a source ACL maps:
   principal   --map-principal 'REGEX=>REPLACEMENT' rules, tried in order, the first whose REGEX
               matches the WHOLE principal wins; $1 or ${1} in REPLACEMENT is the group's text
               (write ${1} when a letter, digit or _ follows, $$ for a "$"). A principal no rule
               matches is kept as it is. User:* (every user) is left out unless
               --include-wildcards.
   topic       LITERAL: named by the flow's replication policy (--mm2-config: its
               replication.policy.class; without it the identity policy); a topic the flow
               does not mirror (topics, topics.exclude, internal topics) is skipped. The
               literal * (every topic) stays * under the identity policy and is skipped under
               one that renames topics. PREFIXED: the prefix maps as a prefix: the same under
               the identity policy, <source alias><separator><prefix> under
               DefaultReplicationPolicy.
   group, cluster, transactional id
               kept as they are, LITERAL or PREFIXED (group names and transactional ids do not
               change when clients move; the flow's group filter does not apply).
   delegation token, user resources
               skipped.
   The operation (WRITE and ALL too), the permission (DENY rules too) and the host never change.

Statuses: missing (not on the target: --apply creates it), present, target-only (on the target,
no source ACL maps to it: kept unless --delete-extra), skipped (not copied; the reason says why).

Each row also says what MirrorMaker 2 3.7.1's own ACL sync (sync.topic.acls.enabled, default
true, every sync.topic.acls.interval.seconds, default 600) would do instead. MM2 reads only TOPIC
ACLs with LITERAL patterns of topics it mirrors; it drops ALLOW WRITE (DENY rules, DENY WRITE
included, it copies); it turns ALLOW ALL into ALLOW READ; it keeps principals as they are (no
mapping, User:* included) and never deletes. So producers lose WRITE on the target, and group,
transactional-id, cluster and prefixed ACLs are not copied at all.

--apply writes only to the target: it re-reads the target's ACLs, saves exactly the ACLs it is
about to create (and, with --delete-extra, delete) to --backup FILE (default
kreconcile-acls-backup-<time>.json, printed; mode 0600, written whole to a temporary file,
fsynced and linked into place, never over an existing file; the file says it holds ACLs and
records both cluster IDs), then creates the missing ACLs and, only with --delete-extra, deletes
the target-only ones, and re-reads the target to confirm each. Careful: target-only ACLs include
what only the target needs (MirrorMaker 2's or kmirror's own principal, ACLs made for the new
cluster); a rollback restores them. With nothing to do it writes nothing, not even a backup.
"kreconcile rollback --backup FILE" undoes an apply: it deletes exactly the ACLs the apply
created (an ACL added since is kept) and creates again those it deleted.

Every read of a cluster's ACLs (the plan, the re-read before --apply writes, the check after)
asks every broker in the cluster's metadata and waits until they give the same answer: each
broker applies an ACL change on its own a moment after the controller took it, so one broker
can still answer with the set before it. The check after --apply waits until every broker shows
each change. Brokers that still differ after --read-timeout (default 30s) stop the command
with exit 2, naming the brokers and the ACLs they differ on (before the writes: nothing is
written; after them: the backup is already complete).

Both clusters need an authorizer (authorizer.class.name); a cluster without one is an error.
The connecting principal needs DESCRIBE on the cluster resource of both clusters, and ALTER on
the target's for --apply (or must be a super user).

Examples:
   kreconcile acls --mm2-config mm2.properties
   kreconcile acls --mm2-config mm2.properties --map-principal 'User:CN=(.*),O=Finance=>User:CN=$1-mirror,O=Finance' --format json --out acls.json
   kreconcile acls --source-brokers old:9092 --target-brokers new:9092 --apply --backup acls-before-switch.json
   kreconcile rollback --target-brokers new:9092 --backup acls-before-switch.json

Exit status: 0 nothing to do (every copied ACL present; target-only ACLs count only with
--delete-extra); 1 changes planned (without --apply); 2 usage, configuration, connection or
authorizer error, or (with --apply) an ACL that was not created or deleted, named. After --apply
0 means everything was applied.

` + clikit.ConnectionHelp

// multiFlag collects every value of a repeated flag as given: unlike a string slice flag it
// does not split values at commas, which principals such as User:CN=x,O=y contain.
type multiFlag struct{ vals []string }

func (m *multiFlag) Set(v string) error { m.vals = append(m.vals, v); return nil }
func (m *multiFlag) String() string {
	if m == nil {
		return ""
	}
	return strings.Join(m.vals, " ")
}

func aclsCommand() *cli.Command {
	flags := append(clikit.ConnectionFlags(),
		&cli.GenericFlag{Name: "map-principal", Value: &multiFlag{}, Usage: "map principals: `'REGEX=>REPLACEMENT'` (repeatable, first whole match wins, $1 for groups)"},
		&cli.BoolFlag{Name: "include-wildcards", Usage: "also copy ACLs of the principal User:* (every user)"},
		&cli.BoolFlag{Name: "apply", Usage: "create the missing ACLs on the target (after a backup)"},
		&cli.BoolFlag{Name: "delete-extra", Usage: "also plan (with --apply: make) the deletion of the target-only ACLs"},
		&cli.StringFlag{Name: "backup", Usage: "with --apply, save the ACLs created and deleted to `FILE` (default: kreconcile-acls-backup-<time>.json)"},
		readTimeoutFlag(),
	)
	return clikit.ReportCommand("acls", runACLs, flags,
		"plan (and with --apply, make) the target's ACLs from the source's, with principal mapping",
		"kreconcile acls [connection flags] [--map-principal 'REGEX=>REPLACEMENT']... [--include-wildcards] [--apply [--delete-extra] [--backup FILE]] "+clikit.OutputUsage(),
		aclsHelp)
}

// readTimeoutFlag bounds the wait for every broker to give the same ACLs.
func readTimeoutFlag() cli.Flag {
	return &cli.DurationFlag{Name: "read-timeout", Value: agree.DefaultTimeout,
		Usage: "how long each read of a cluster's ACLs waits for every broker to give the same answer (ACLs only)"}
}

// readTimeout is --read-timeout, refused when not positive.
func readTimeout(c *cli.Context) (time.Duration, error) {
	d := c.Duration("read-timeout")
	if d <= 0 {
		return 0, clikit.Failf("--read-timeout %s: give a positive duration, e.g. 30s or 2m", d)
	}
	return d, nil
}

func runACLs(c *cli.Context) error {
	if !c.Bool("apply") && c.IsSet("backup") {
		return clikit.Failf("--backup only applies with --apply: nothing is written without it")
	}
	var cfg aclsync.Config
	if m, ok := c.Generic("map-principal").(*multiFlag); ok && m != nil {
		for _, s := range m.vals {
			r, err := aclsync.ParsePrincipalRule(s)
			if err != nil {
				return clikit.Failf("--map-principal: %v", err)
			}
			cfg.Rules = append(cfg.Rules, r)
		}
	}
	cfg.IncludeWildcards = c.Bool("include-wildcards")
	cfg.DeleteExtra = c.Bool("delete-extra")
	timeout, err := readTimeout(c)
	if err != nil {
		return err
	}
	cfg.ReadTimeout = timeout
	s, err := clikit.Open(c)
	if err != nil {
		return err
	}
	defer s.Close()
	cfg.Flow = s.Flow
	src, dst := s.Src, s.Dst

	plan, err := aclsync.Plan(c.Context, src, dst, cfg)
	if err != nil {
		return clikit.Fail(err)
	}
	var applyErr error
	if c.Bool("apply") {
		applyErr = aclsync.Apply(c.Context, dst, plan, aclsync.ApplyConfig{Backup: c.String("backup"), ReadTimeout: timeout})
		if plan.Backup != "" {
			fmt.Fprintf(c.App.ErrWriter, "kreconcile: the ACLs created and deleted are saved to %s (undo: kreconcile rollback --backup %s)\n", plan.Backup, plan.Backup)
		}
	}
	if err := clikit.Render(c, plan, ""); err != nil {
		return err
	}
	switch {
	case applyErr != nil:
		return clikit.Failf("apply: %w", applyErr)
	case c.Bool("apply"):
		return nil
	case plan.Changes() > 0:
		return clikit.Differs(fmt.Sprintf("%d ACL changes planned", plan.Changes()))
	}
	return nil
}
