package main

import (
	"fmt"
	"io"
	"log/slog"
	"os"
	"regexp"

	"github.com/urfave/cli/v2"

	"github.com/kmigrate/kmigrate/cmd/internal/clikit"
	"github.com/kmigrate/kmigrate/offsetmap"
	"github.com/kmigrate/kmigrate/reconcile"
)

const groupsHelp = `For every consumer group on the source that the flow selects (its groups and groups.exclude,
as MM2 and kmirror's group sync read them; without an MM2 file every group except
console-consumer-.*, connect-.*, __.*), narrowed by --group, or every group except
--exclude-group when that is given, and every partition it committed on, kreconcile
reads the committed offset G on the source, the target's commit and MM2's checkpoint, and
computes the exact target offset

   E(G) = 1 + the last target copy of the last source record below G

by comparing record fingerprints (key, value, headers) around G: it reads a few records on each
side, never whole partitions. MM2's offset syncs and the record timestamps only tell it where to
look. Every answer carries its proof: the fingerprint of the source record before G equals the
one of the target record before E(G). With --offset-map (from "kverify diff --offset-map") the
map gives E(G) and the content still proves it.

Statuses per partition (the same judge MM2's checkpoint, column "checkpoint"):
   exact                  the target commit equals E(G): switching is seamless
   behind                 below E(G): switching now re-delivers N records (redelivered_if_unchanged)
   ahead                  above E(G): switching now skips N records, data loss (skipped_if_unchanged)
   pending                the mirror has not copied the records below G yet: run again later
   missing-target-offset  E(G) is known but the group has no commit on the target
   unmappable             E(G) cannot be proven: the reason says why (topic not mirrored, record
                          not found, ambiguous run of identical records, ...); nothing is guessed

Counting: redelivered_if_unchanged counts target records between the target commit and E(G)
(records a consumer switched now would read again); transaction markers and records written to
the target directly (extras) found by the alignment do not count.

--apply writes only to groups that are Empty or absent on the target (a group with members is
refused, by name, and nothing is written for it), commits E(G) with the source commit's
metadata, never above E(G), never backwards unless --allow-rewind, after saving the previous
offsets to --backup FILE (default kreconcile-backup-<time>.json, printed; mode 0600, written
to a temporary file, fsynced and renamed before any commit). The backup records the cluster
IDs of both clusters and what apply committed, so that rollback writes only to this target and
never over progress made since. Apply re-reads and confirms: each partition says whether it
was committed ("applied") or not ("apply_error"); when some were not (the target refused the
commit, or a consumer joined the group between the check and the commit, which the error
says), it exits 2 naming them. Running it again changes nothing. "kreconcile rollback
--backup FILE" undoes it. Without --apply nothing is written anywhere.

--offset-map answers only where the map covers G (its source range holds G and a mirrored
record below it), its answer is proven by content (the fingerprint of that record equals the
target record before E(G)), is not above the target end, and no later copy of that record sits
past what the map examined; elsewhere (kverify diff --from or --partitions, a stale or a
crafted map) the local alignment decides, and the proof says why the map was not used.

The seed case: MM2 3.7.1 (IdentityReplicationPolicy, offset syncs on the target) leaves an idle
group 8 records behind on the target, because it translates from a sparse offset sync. Here:
   kreconcile groups --mm2-config mm2.properties --group orders-app
shows "behind: would re-deliver 8" on the partition and MM2's checkpoint as behind;
   kreconcile groups --mm2-config mm2.properties --group orders-app --apply
commits E(G); target lag then equals source lag.

Examples:
   kreconcile groups --source-brokers old:9092 --target-brokers new:9092
   kreconcile groups --mm2-config mm2.properties --flow old->new --topic 'orders|payments' --format json --out plan.json
   kreconcile groups --mm2-config mm2.properties --offset-map orders.map.json --group billing
   kreconcile groups --mm2-config mm2.properties --apply --backup before-switch.json
   kreconcile rollback --mm2-config mm2.properties --backup before-switch.json

Exit status: 0 every partition is exact (after --apply: now exact); 1 anything differs or a
group was refused; 2 usage, configuration or connection error, or a group failed (after
--apply: a commit that did not take, named).

` + clikit.ConnectionHelp

func groupsCommand() *cli.Command {
	flags := append(clikit.ConnectionFlags(),
		&cli.StringFlag{Name: "group", Usage: "only groups whose whole name matches `REGEX`, among those selected (default: the flow's groups and groups.exclude)"},
		&cli.StringFlag{Name: "exclude-group", Usage: "instead of the flow's group selection, every group except those whose whole name matches `REGEX`; '' skips none (default: the flow's)"},
		&cli.StringFlag{Name: "topic", Usage: "only source topics whose whole name matches `REGEX` (default: all)"},
		&cli.StringFlag{Name: "source-alias", Usage: "source cluster `ALIAS`, which names the checkpoints topic ALIAS.checkpoints.internal (default: the flow's, \"source\" without an MM2 file)"},
		&cli.StringFlag{Name: "checkpoints-topic", Usage: "read MM2's checkpoints from `TOPIC` on the target (default: <source-alias>.checkpoints.internal)"},
		&cli.StringFlag{Name: "offset-syncs-topic", Usage: "read MM2's offset syncs from `TOPIC` (default: as the flow says)"},
		&cli.StringFlag{Name: "offset-map", Usage: "take E(G) from the offset map `FILE` written by kverify diff --offset-map where it covers G and content proves it (its topic only)"},
		&cli.StringFlag{Name: "compare", Value: offsetmap.DefaultFields.String(), Usage: "record `FIELDS` the fingerprints cover: key,value,headers,timestamp"},
		&cli.IntFlag{Name: "window", Value: 500, Usage: "target records read per step and looked ahead for replays after the last copy found"},
		&cli.IntFlag{Name: "concurrency", Value: 8, Usage: "group partitions planned at once"},
		&cli.BoolFlag{Name: "apply", Usage: "commit E(G) on the target (Empty or absent groups only, after a backup)"},
		&cli.BoolFlag{Name: "allow-rewind", Usage: "with --apply, also move target offsets that are ahead of E(G) back to it"},
		&cli.StringFlag{Name: "backup", Usage: "with --apply, save the previous target offsets to `FILE` (default: kreconcile-backup-<time>.json)"},
		&cli.BoolFlag{Name: "verbose", Aliases: []string{"v"}, Usage: "log progress to standard error"},
	)
	return clikit.ReportCommand("groups", runGroups, flags,
		"plan (and with --apply, fix) the target offsets of consumer groups",
		"kreconcile groups [connection flags] [--group REGEX] [--topic REGEX] [--apply [--allow-rewind] [--backup FILE]] [--format table|json|markdown|html|junit] [--out FILE]",
		groupsHelp)
}

func compileFlag(c *cli.Context, name string) (*regexp.Regexp, error) {
	s := c.String(name)
	if s == "" {
		return nil, nil
	}
	re, err := regexp.Compile(s)
	if err != nil {
		return nil, clikit.Failf("--%s %q: %v", name, s, err)
	}
	return re, nil
}

func runGroups(c *cli.Context) error {
	if !c.Bool("apply") {
		for _, f := range []string{"allow-rewind", "backup"} {
			if c.IsSet(f) {
				return clikit.Failf("--%s only applies with --apply: nothing is written without it", f)
			}
		}
	}
	cfg, err := configFromFlags(c)
	if err != nil {
		return err
	}
	conn, err := clikit.Connect(c)
	if err != nil {
		return err
	}
	flow := *conn.Flow
	if a := c.String("source-alias"); a != "" {
		flow.Source = a
	}
	cfg.Flow = &flow
	src, dst, err := clikit.Clients(c.Context, conn)
	if err != nil {
		return err
	}
	defer src.Close()
	defer dst.Close()

	res, err := reconcile.Plan(c.Context, src, dst, cfg)
	if err != nil {
		return clikit.Fail(err)
	}
	var applyErr error
	if c.Bool("apply") {
		applyErr = reconcile.Apply(c.Context, dst, res, reconcile.ApplyConfig{
			AllowRewind: c.Bool("allow-rewind"), Backup: c.String("backup"), Logger: cfg.Logger})
		if res.Backup != "" {
			fmt.Fprintf(c.App.ErrWriter, "kreconcile: previous target offsets saved to %s (undo: kreconcile rollback --backup %s)\n", res.Backup, res.Backup)
		}
	}
	if err := clikit.Render(c, res, ""); err != nil {
		return err
	}
	if applyErr != nil {
		return clikit.Failf("apply: %w", applyErr)
	}
	return verdict(res)
}

func configFromFlags(c *cli.Context) (reconcile.Config, error) {
	var cfg reconcile.Config
	var err error
	if cfg.Groups, err = compileFlag(c, "group"); err != nil {
		return cfg, err
	}
	if c.IsSet("exclude-group") && c.String("exclude-group") == "" {
		cfg.GroupsExclude = regexp.MustCompile(`$^`)
	} else if cfg.GroupsExclude, err = compileFlag(c, "exclude-group"); err != nil {
		return cfg, err
	}
	if cfg.Topics, err = compileFlag(c, "topic"); err != nil {
		return cfg, err
	}
	cfg.CheckpointsTopic = c.String("checkpoints-topic") // default: the flow's (with --source-alias as its source)
	cfg.OffsetSyncsTopic = c.String("offset-syncs-topic")
	if path := c.String("offset-map"); path != "" {
		m, err := offsetmap.ReadFile(path)
		if err != nil {
			return cfg, clikit.Failf("--offset-map: %v", err)
		}
		cfg.OffsetMap = m
	}
	if cfg.Fields, err = offsetmap.ParseFields(c.String("compare")); err != nil {
		return cfg, clikit.Failf("--compare: %v", err)
	}
	cfg.Window = c.Int("window")
	cfg.Concurrency = c.Int("concurrency")
	var w io.Writer = io.Discard
	level := slog.LevelInfo
	if c.Bool("verbose") {
		w, level = os.Stderr, slog.LevelDebug
	}
	cfg.Logger = slog.New(slog.NewTextHandler(w, &slog.HandlerOptions{Level: level}))
	return cfg, nil
}

// verdict maps a result to the exit status: 2 when a group failed, 1 when anything is not
// exact or a group was refused, else 0.
func verdict(res *reconcile.Result) error {
	var failed, differs int
	for _, g := range res.Groups {
		if g.Err != "" {
			failed++
		}
		if g.Refused != "" {
			differs++
		}
		for _, p := range g.Partitions {
			if p.Status != reconcile.StatusExact {
				differs++
			}
		}
	}
	switch {
	case failed > 0:
		return clikit.Failf("%d groups could not be planned or applied: see their error", failed)
	case differs > 0:
		return clikit.Differs(fmt.Sprintf("%d group partitions are not exact", differs))
	}
	return nil
}
