package main

import (
	"fmt"
	"io"
	"log/slog"
	"os"
	"regexp"
	"strings"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

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
one of the target record before E(G). kmirror's own offset map (the topic
kmirror-offsets.<source>.internal on the target) and MM2's offset syncs are exact: their copies
are pinned. --offset-map (from "kverify diff --offset-map") is checked, not trusted.

Statuses per partition (the same judge MM2's checkpoint, column "checkpoint"):
   exact                  the target commit equals E(G): switching is seamless
   behind                 below E(G): switching now re-delivers N records (redelivered_if_unchanged)
   ahead                  above E(G): switching now skips N records, data loss (skipped_if_unchanged)
   pending                the mirror has not copied the records below G yet: run again later
   missing-target-offset  E(G) is known but the group has no commit on the target
   unmappable             E(G) cannot be proven: the reason says why (topic not mirrored, record
                          not found, ambiguous run of identical records, ...); nothing is guessed

Counting: redelivered_if_unchanged counts target records between the target commit and E(G)
(records a consumer switched now would read again); transaction markers, records of aborted
transactions and records written to the target directly (extras) found by the alignment do
not count.

Isolation levels: an exactly-once mirror that crashed or was fenced leaves aborted transactions
on the target and writes their records again after them. A consumer reading read_committed
never reads them; one reading read_uncommitted (the Java client's default) does. Per partition
aborted_ahead counts the aborted records between where the group resumes (E(G), or its exact
commit) and the last stable offset (aborted_ranges: where), and the table flags them; a
transaction still open is named ("open transaction at offset N") and never counted; a span
longer than --scan-limit offsets (10000) is "not counted", never 0. Where only markers and aborted records
follow the copy of the record before G, every offset there is the same E(G) for a
read_committed consumer: kreconcile commits the next record's offset, which spares a
read_uncommitted consumer the aborted records too (with a transaction open there, the offset
after the copy). The lag columns show the records a read_committed consumer still reads
beside the offset lag when they differ: "31 (30 records)".

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

Kafka Streams applications switch as one unit. A streams group (KIP-1071, group.protocol=streams
on Kafka 4; its topics are those of the topology its group coordinator keeps), and a group whose
internal topics are named after it on the source (<application.id>-...-repartition, -changelog:
Kafka Streams names them so, and the application.id is the group), is planned as an
application: its input, repartition and
changelog topics are listed, each changelog partition is translated at its source end ("state
T/P: source end N → target M"), and it is ready only when its internal topics exist on the
target under the same names, every topic of it has the same partition count on both sides,
every changelog is copied to its end, no instance runs on the source and E(G) is known for
every partition. --apply commits all of its partitions or none; the report says what a state
directory kept from the source would do on the target: rewrite its .checkpoint files with
"kreconcile state" (see its --help), or wipe it. docs/applications.md walks through a move.

--offset-map never gives E(G): kverify's map is itself an alignment by content, and where
records repeat (a few values, null keys) it pairs records wrongly as often as any guess. The
answer comes from what kreconcile reads; the proof says "the offset map agrees" where the map
gives the same E(G), and "offset map not used: <why>" where it does not cover G or says
otherwise.

The seed case: MM2 3.7.1 (IdentityReplicationPolicy, offset syncs on the target) leaves an idle
group 8 records behind on the target, because it translates from a sparse offset sync. Here:
   kreconcile groups --mm2-config mm2.properties --group orders-app
shows "behind: would re-deliver 8" on the partition and MM2's checkpoint as behind;
   kreconcile groups --mm2-config mm2.properties --group orders-app --apply
commits E(G); target lag then equals source lag.

--follow is the consumer cutover, once the producers have moved to the target and while the
consumer groups stop on the source one at a time. kreconcile plans again every --interval
(default 5s). A group is ready when it has no members on the source (its commit is final),
the mirror has copied every record below its commit (E(G) known on every partition: none
pending), it has no members on the target, and no target commit is ahead of E(G) (unless
--allow-rewind). With --apply kreconcile then commits E(G) for that group alone and prints
   kreconcile: group "orders-app" is ready on the target, exactly: orders/0 committed 120 (was 102)
The backup file (--backup) grows with each group: it is rewritten whole at each step
(temporary file, fsync, rename), so after every step "kreconcile rollback --backup FILE"
restores every group applied so far. If the file exists (an earlier --follow run was
interrupted) and belongs to the same two clusters, it is extended, never replaced.
   - A group with members on the target (its consumers were switched by hand) is reported and
     never touched in this run; the others are still followed.
   - A group made exact is not written again, unless its source group consumed again after
     it, its target group is still empty and its target commits are still what kreconcile
     wrote (nobody consumed there): then the new E(G) is applied, and the backup keeps the
     offsets from before the first write. A group that consumed on the target is done.
   - Without --apply nothing is written: each group is reported ready when --apply would
     make it exact.
A progress line (groups exact, waiting, blocked; time elapsed) goes to standard error after
every round, unless --quiet. The report at the end shows each group as it was when it became
exact, the others as last planned; JSON adds "follow": [{group, state, why, applied}].

Examples:
   kreconcile groups --mm2-config mm2.properties --follow --apply --backup cutover.json --timeout 2h
   kreconcile groups --source-brokers old:9092 --target-brokers new:9092
   kreconcile groups --mm2-config mm2.properties --flow old->new --topic 'orders|payments' --format json --out plan.json
   kreconcile groups --mm2-config mm2.properties --offset-map orders.map.json --group billing
   kreconcile groups --mm2-config mm2.properties --apply --backup before-switch.json
   kreconcile rollback --mm2-config mm2.properties --backup before-switch.json

Exit status: 0 every partition is exact (after --apply: now exact); 1 anything differs or a
group was refused; 2 usage, configuration or connection error, or a group failed (after
--apply: a commit that did not take, named).
With --follow: 0 when every selected group is exact (without --apply: when every group is
exact, and 1 when some are only ready for --apply); 1 at --timeout, or when only groups
blocked for the run are left, with what is left (which groups, why); 2 on an error or an
interruption (the backup holds every group written so far; run again with the same --backup).

` + clikit.ConnectionHelp

func groupsCommand() *cli.Command {
	flags := append(clikit.ConnectionFlags(),
		&cli.StringFlag{Name: "group", Usage: "only groups whose whole name matches `REGEX`, among those selected (default: the flow's groups and groups.exclude)"},
		&cli.StringFlag{Name: "exclude-group", Usage: "instead of the flow's group selection, every group except those whose whole name matches `REGEX`; '' skips none (default: the flow's)"},
		&cli.StringFlag{Name: "topic", Usage: "only source topics whose whole name matches `REGEX` (default: all)"},
		&cli.StringFlag{Name: "source-alias", Usage: "source cluster `ALIAS`, which names the checkpoints topic ALIAS.checkpoints.internal (default: the flow's, \"source\" without an MM2 file)"},
		&cli.StringFlag{Name: "checkpoints-topic", Usage: "read MM2's checkpoints from `TOPIC` on the target (default: <source-alias>.checkpoints.internal)"},
		&cli.StringFlag{Name: "offset-syncs-topic", Usage: "read MM2's offset syncs from `TOPIC` (default: as the flow says)"},
		&cli.StringFlag{Name: "offset-map", Usage: "check each answer against the offset map `FILE` written by kverify diff --offset-map (its topic only); the proof says whether it agrees"},
		&cli.StringFlag{Name: "compare", Value: offsetmap.DefaultFields.String(), Usage: "record `FIELDS` the fingerprints cover: key,value,headers,timestamp"},
		&cli.IntFlag{Name: "window", Value: 500, Usage: "target records read per step and looked ahead for replays after the last copy found"},
		&cli.IntFlag{Name: "concurrency", Value: 8, Usage: "group partitions planned at once"},
		&cli.IntFlag{Name: "scan-limit", Value: 10000, Usage: "at most `N` offsets read under read_committed from a commit to count the records left (a longer span is not counted); aborted records after E(G) are counted over any span"},
		&cli.BoolFlag{Name: "apply", Usage: "commit E(G) on the target (Empty or absent groups only, after a backup)"},
		&cli.BoolFlag{Name: "allow-rewind", Usage: "with --apply, also move target offsets that are ahead of E(G) back to it"},
		&cli.StringFlag{Name: "backup", Usage: "with --apply, save the previous target offsets to `FILE` (default: kreconcile-backup-<time>.json)"},
		&cli.BoolFlag{Name: "follow", Usage: "keep planning until every selected group is exact; with --apply, commit each group as it becomes ready (the consumer cutover)"},
		&cli.DurationFlag{Name: "interval", Value: 5 * time.Second, Usage: "with --follow, time between two plans"},
		&cli.DurationFlag{Name: "timeout", Usage: "with --follow, give up after `DURATION` with what is left, exit 1 (default: no limit)"},
		&cli.BoolFlag{Name: "quiet", Aliases: []string{"q"}, Usage: "with --follow, no progress line on standard error"},
		&cli.BoolFlag{Name: "verbose", Aliases: []string{"v"}, Usage: "log progress to standard error"},
	)
	return clikit.ReportCommand("groups", runGroups, flags,
		"plan (and with --apply, fix) the target offsets of consumer groups",
		"kreconcile groups [connection flags] [--group REGEX] [--topic REGEX] [--follow [--interval D] [--timeout D] [--quiet]] [--apply [--allow-rewind] [--backup FILE]] "+clikit.OutputUsage(),
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
	if !c.Bool("follow") {
		for _, f := range []string{"interval", "timeout", "quiet"} {
			if c.IsSet(f) {
				return clikit.Failf("--%s only applies with --follow", f)
			}
		}
	} else if c.Duration("interval") <= 0 || c.Duration("timeout") < 0 {
		return clikit.Failf("--interval must be positive and --timeout not negative")
	}
	cfg, err := configFromFlags(c)
	if err != nil {
		return err
	}
	conn, err := clikit.Open(c)
	if err != nil {
		return err
	}
	defer conn.Close()
	src, dst := conn.Src, conn.Dst
	flow := *conn.Flow
	if a := c.String("source-alias"); a != "" {
		flow.Source = a
	}
	cfg.Flow = &flow

	if c.Bool("follow") {
		return runFollow(c, src, dst, cfg)
	}
	res, err := reconcile.Plan(c.Context, src, dst, cfg)
	if err != nil {
		return clikit.Fail(err)
	}
	if len(res.Groups) == 0 {
		return noGroups(conn, c.String("group"))
	}
	var applyErr error
	if c.Bool("apply") {
		applyErr = reconcile.Apply(c.Context, dst, res, reconcile.ApplyConfig{
			AllowRewind: c.Bool("allow-rewind"), Backup: c.String("backup"), Logger: cfg.Logger})
		if res.Backup != "" {
			fmt.Fprintf(c.App.ErrWriter, "kreconcile: previous target offsets saved to %s (undo: kreconcile rollback --backup %s)\n", res.Backup, res.Backup)
		}
		sayAborted(c.App.ErrWriter, res)
	}
	if err := clikit.Render(c, res, ""); err != nil {
		return err
	}
	if applyErr != nil {
		return clikit.Failf("apply: %w", applyErr)
	}
	return verdict(res)
}

// sayAborted tells, after an apply, every group partition whose consumers reading
// read_uncommitted will read records of aborted transactions again after the switch.
func sayAborted(w io.Writer, res *reconcile.Result) {
	for _, g := range res.Groups {
		for i := range g.Partitions {
			if note := g.Partitions[i].AbortedAheadNote(); note != "" {
				fmt.Fprintf(w, "kreconcile: group %s: %s\n", g.Group, note)
			}
		}
	}
}

// noGroups refuses a plan that selected no group: it checked nothing, and a source that lists
// none may only mean that the principal may describe none (Kafka lists a group only to
// principals with Describe on it, or on the cluster).
func noGroups(conn *clikit.Session, group string) error {
	sel := "the flow's groups, --group, --exclude-group"
	if group != "" {
		sel = "--group " + group
	}
	return clikit.Failf("no consumer group on source cluster %s matches the selection (%s): nothing to reconcile. "+
		"Kafka lists only the groups that the principal (%s) may describe: check its Describe ACL on the Group (docs/security.md, \"Least privilege\")", conn.Source.Alias, sel, clikit.Principal(conn.Source))
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
	if cfg.ScanLimit = c.Int("scan-limit"); cfg.ScanLimit <= 0 {
		return cfg, clikit.Failf("--scan-limit must be positive")
	}
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
	var first string
	for _, g := range res.Groups {
		if g.Err != "" {
			if failed == 0 {
				first = fmt.Sprintf("group %q: %s", g.Group, g.Err)
			}
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
		// The first error on standard error too: it names the cluster and what was denied.
		return clikit.Failf("%d groups could not be planned or applied: see their error; the first: %s", failed, first)
	case differs > 0:
		return clikit.Differs(fmt.Sprintf("%d group partitions are not exact", differs))
	}
	return nil
}

// runFollow is groups --follow: reconcile.Follow with its events and progress on standard
// error, the result rendered at the end, and the exit status of --follow.
func runFollow(c *cli.Context, src, dst *kgo.Client, cfg reconcile.Config) error {
	errw, apply := c.App.ErrWriter, c.Bool("apply")
	fc := reconcile.FollowConfig{Apply: apply, AllowRewind: c.Bool("allow-rewind"), Backup: c.String("backup"),
		Interval: c.Duration("interval"), Timeout: c.Duration("timeout"), Logger: cfg.Logger,
		OnEvent: func(e reconcile.FollowEvent) { fmt.Fprintf(errw, "kreconcile: %s\n", e.Message) }}
	if !c.Bool("quiet") {
		fc.OnProgress = func(p reconcile.FollowProgress) { fmt.Fprintf(errw, "kreconcile: follow: %s\n", p) }
	}
	res, err := reconcile.Follow(c.Context, src, dst, cfg, fc)
	if res != nil && res.Backup != "" {
		fmt.Fprintf(errw, "kreconcile: previous target offsets saved to %s (undo: kreconcile rollback --backup %s)\n", res.Backup, res.Backup)
	}
	if res != nil && res.Result != nil && apply {
		sayAborted(errw, res.Result)
	}
	title := "kreconcile groups --follow"
	if apply {
		title += " --apply"
	}
	var rendered any = res
	if f := c.String("format"); f != "json" {
		rendered = res.Result
	}
	if rerr := clikit.Render(c, rendered, title); rerr != nil {
		return rerr
	}
	left := strings.Join(res.Left(), "; ")
	switch {
	case err != nil && c.Context.Err() != nil:
		return clikit.Failf("interrupted after %d rounds; left: %s", res.Rounds, left)
	case err != nil:
		return clikit.Failf("follow: %w", err)
	case res.TimedOut:
		return clikit.DiffersErr(fmt.Errorf("timeout after %s with %d groups not exact: %s", c.Duration("timeout"), len(res.Left()), left))
	case res.Stuck:
		return clikit.DiffersErr(fmt.Errorf("only groups blocked for this run are left, nothing more can change: %s", left))
	case len(res.Left()) > 0:
		return clikit.DiffersErr(fmt.Errorf("%d groups ready, not written (run with --apply): %s", len(res.Left()), left))
	}
	return nil
}
