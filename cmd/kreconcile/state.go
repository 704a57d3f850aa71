package main

import (
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"os"
	"strings"
	"time"

	"github.com/urfave/cli/v2"

	"github.com/kmigrate/kmigrate/cmd/internal/clikit"
	"github.com/kmigrate/kmigrate/offsetmap"
	"github.com/kmigrate/kmigrate/reconcile"
)

const stateHelp = `A Kafka Streams state directory kept from the source names, in its .checkpoint files, the
offset of the last changelog record each store holds: an offset of the source's changelog,
which names another record on the target. "kreconcile state" translates every entry to the
target so that the stores keep their state and restore only what the target's changelog holds
after it, instead of their whole changelog:

   entry on the target = E(o+1) - 1

where o is the entry (Kafka Streams restores from o+1) and E(G) is the exact target offset
kreconcile groups computes for a group committed at G, with its proof (kmirror's offset map,
MM2's offset syncs, or the records' content). An entry Kafka Streams marks unknown (a negative
offset) is kept; an entry whose E is 0 is left out (the store restores from the beginning, the
same place).

Kafka Streams 4.3 and later write no .checkpoint files: each store keeps its changelog offsets
inside itself (KIP-1035), where nothing can rewrite them; "kreconcile state" refuses such a
directory, naming its stores (wipe it, or keep it only where "kreconcile groups" shows no
changelog ending lower on the target).

Run it on each host of the application, on its state.dir, after the application stopped on
the source and before it starts on the target. Without --apply it only reads and prints.
--apply rewrites every file or none: it refuses when any entry's target offset is not known
(the reason is printed: wipe the directory instead, as "kreconcile groups" says), when the
application runs on the source or on the target (its group is not Empty), or when a file
changed since it was read. Before the first file changes it saves every file, as it was and as
it will be, to --backup FILE (default kreconcile-state-<application>-<time>.json; mode 0600,
written whole first); "kreconcile rollback --backup FILE" restores the files, and only while
they are still what the rewrite wrote (an application that ran on the directory since has
written target offsets there, which a rollback must not erase). It never writes to a cluster.

Example:
   kreconcile state --mm2-config mm2.properties --group wordcount --state-dir /var/lib/kafka-streams
   kreconcile state --mm2-config mm2.properties --group wordcount --state-dir /var/lib/kafka-streams --apply

Exit status: 0 every entry translated (after --apply: rewritten); 1 not ready (the problems
are printed) or nothing to rewrite; 2 usage, configuration, connection or file error.

` + clikit.ConnectionHelp

func stateCommand() *cli.Command {
	flags := append(clikit.ConnectionFlags(),
		&cli.StringFlag{Name: "group", Required: true, Usage: "the application's `APPLICATION_ID` (its consumer group)"},
		&cli.StringFlag{Name: "state-dir", Required: true, Usage: "the application's state.dir `DIR` on this host (holding APPLICATION_ID/), or DIR/APPLICATION_ID itself"},
		&cli.StringFlag{Name: "compare", Value: offsetmap.DefaultFields.String(), Usage: "record `FIELDS` the fingerprints cover: key,value,headers,timestamp"},
		&cli.BoolFlag{Name: "apply", Usage: "rewrite the .checkpoint files (all or none, after a backup)"},
		&cli.StringFlag{Name: "backup", Usage: "with --apply, save the files to `FILE` first (default: kreconcile-state-<application>-<time>.json)"},
		&cli.StringFlag{Name: "format", Value: "text", Usage: "output `FORMAT`: text or json"},
		&cli.BoolFlag{Name: "verbose", Aliases: []string{"v"}, Usage: "log progress to standard error"},
	)
	return &cli.Command{
		Name:        "state",
		Usage:       "translate a Kafka Streams state directory kept from the source (its .checkpoint files) to the target",
		UsageText:   "kreconcile state [connection flags] --group APPLICATION_ID --state-dir DIR [--apply [--backup FILE]] [--format text|json]",
		Description: stateHelp,
		Flags:       flags,
		Action:      runState,
	}
}

func runState(c *cli.Context) error {
	if c.IsSet("backup") && !c.Bool("apply") {
		return clikit.Failf("--backup only applies with --apply: nothing is written without it")
	}
	format := c.String("format")
	if format != "text" && format != "json" {
		return clikit.Failf("--format %q: want text or json", format)
	}
	app := c.String("group")
	if strings.ContainsAny(app, "/\\") || app == "" || app == "." || app == ".." {
		return clikit.Failf("--group %q: an application id names a directory of state.dir, without slashes", app)
	}
	var cfg reconcile.Config
	var err error
	if cfg.Fields, err = offsetmap.ParseFields(c.String("compare")); err != nil {
		return clikit.Failf("--compare: %v", err)
	}
	var w io.Writer = io.Discard
	if c.Bool("verbose") {
		w = os.Stderr
	}
	cfg.Logger = slog.New(slog.NewTextHandler(w, &slog.HandlerOptions{Level: slog.LevelDebug}))
	if _, err := reconcile.AppStateDir(c.String("state-dir"), app); err != nil {
		return clikit.Fail(err)
	}
	conn, err := clikit.Open(c)
	if err != nil {
		return err
	}
	defer conn.Close()
	flow := *conn.Flow
	cfg.Flow = &flow
	sp, err := reconcile.PlanStateDir(c.Context, conn.Src, conn.Dst, cfg, c.String("state-dir"), app)
	if err != nil {
		return clikit.Fail(err)
	}
	var applyErr error
	if c.Bool("apply") && sp.Ready {
		backup := c.String("backup")
		if backup == "" {
			backup = fmt.Sprintf("kreconcile-state-%s-%s.json", app, time.Now().UTC().Format("20060102T150405Z"))
		}
		applyErr = reconcile.ApplyStateDir(sp, backup)
		if sp.Backup != "" {
			fmt.Fprintf(c.App.ErrWriter, "kreconcile: the .checkpoint files saved to %s (undo: kreconcile rollback --backup %s)\n", sp.Backup, sp.Backup)
		}
	}
	if format == "json" {
		enc := json.NewEncoder(c.App.Writer)
		enc.SetIndent("", "  ")
		if err := enc.Encode(sp); err != nil {
			return clikit.Fail(err)
		}
	} else {
		writeStatePlan(c.App.Writer, sp, c.Bool("apply"))
	}
	switch {
	case applyErr != nil:
		return clikit.Failf("state --apply: %w", applyErr)
	case !sp.Ready:
		return clikit.Differs(fmt.Sprintf("state directory %s not rewritten: %d problems", sp.Dir, len(sp.Problems)))
	}
	return nil
}

// writeStatePlan prints the plan as an operator reads it: each file's entries, source offset
// and target offset with the proof, then the verdict.
func writeStatePlan(w io.Writer, sp *reconcile.StatePlan, apply bool) {
	fmt.Fprintf(w, "kreconcile state: application %s, directory %s\n", sp.App, sp.Dir)
	n := 0
	for _, f := range sp.Files {
		for _, e := range f.Entries {
			n++
			var to string
			switch {
			case e.Kept != "":
				to = "kept: " + e.Kept
			case e.Dropped:
				to = "left out: E is 0, the store restores from the beginning"
			case e.Target != nil:
				to = fmt.Sprintf("target %d", *e.Target)
			default:
				to = fmt.Sprintf("not known: %s %s", e.Status, e.Reason)
			}
			fmt.Fprintf(w, "  %s  %s/%d  source %d -> %s\n", f.Path, e.Topic, e.Partition, e.Offset, to)
			if e.Proof != "" {
				fmt.Fprintf(w, "      proof: %s\n", e.Proof)
			}
		}
	}
	switch {
	case sp.Applied:
		fmt.Fprintf(w, "REWRITTEN: %d files, %d entries (backup %s)\n", len(sp.Files), n, sp.Backup)
	case sp.Ready && apply:
		fmt.Fprintf(w, "NOT REWRITTEN: %d files, %d entries\n", len(sp.Files), n)
	case sp.Ready:
		fmt.Fprintf(w, "READY: %d files, %d entries; --apply rewrites them (after a backup)\n", len(sp.Files), n)
	default:
		fmt.Fprintf(w, "NOT READY: nothing written\n")
		for _, p := range sp.Problems {
			fmt.Fprintf(w, "  - %s\n", p)
		}
	}
}
