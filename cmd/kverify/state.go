package main

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"net"
	"net/http"
	"os"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/urfave/cli/v2"

	"github.com/kmigrate/kmigrate/cmd/internal/clikit"
	"github.com/kmigrate/kmigrate/report"
	"github.com/kmigrate/kmigrate/verify"
)

// stateFlags checks --state, --follow, --interval and --metrics-addr together and reads the
// state file when it exists (nil when it does not). Nothing is contacted yet.
func stateFlags(c *cli.Context) (*verify.State, error) {
	path := c.String("state")
	switch {
	case path == "" && c.Bool("follow"):
		return nil, clikit.Failf("--follow needs --state FILE: the state is what a stopped or killed run resumes from")
	case path == "" && (c.IsSet("interval") || c.IsSet("metrics-addr")):
		return nil, clikit.Failf("--interval and --metrics-addr are for --follow (with --state)")
	case path == "":
		return nil, nil
	case !c.Bool("follow") && (c.IsSet("interval") || c.IsSet("metrics-addr")):
		return nil, clikit.Failf("--interval and --metrics-addr are for --follow")
	case c.IsSet("from") || c.IsSet("to"):
		return nil, clikit.Failf("--state %s resumes each partition at its verified end: give no --from or --to with it", path)
	case c.Bool("follow") && c.String("offset-map") != "":
		return nil, clikit.Failf("--offset-map with --follow would hold the last round only: run once with --state and --offset-map instead")
	case c.Bool("follow") && c.Duration("interval") <= 0:
		return nil, clikit.Failf("--interval %s: give a positive duration such as 10s", c.Duration("interval"))
	}
	b, err := os.ReadFile(path)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, clikit.Failf("--state %s: %w", path, err)
	}
	st, err := verify.ParseState(b)
	if err != nil {
		return nil, clikit.Failf("--state %s: %w (give the state file kverify wrote, or a new file to start over)", path, err)
	}
	return st, nil
}

// runState is a run with --state: once, or in rounds with --follow.
func runState(c *cli.Context, src, dst *kgo.Client, cfg verify.Config, conn *clikit.Conn, prev *verify.State, outs []output, format report.Format) error {
	path := c.String("state")
	name := fmt.Sprintf("diff %s (cluster %s) -> %s (cluster %s)", cfg.SourceTopic, conn.Source.Alias, cfg.TargetTopic, conn.Target.Alias)
	title := fmt.Sprintf("kverify %s → %s", cfg.SourceTopic, cfg.TargetTopic)
	round := func(ctx context.Context, prev *verify.State) (*verify.StateRun, error) {
		var run *verify.StateRun
		err := withProgress(c, &cfg, func(cfg verify.Config) (err error) {
			run, err = verify.DiffState(ctx, src, dst, cfg, prev, verify.StateOptions{Follow: c.Bool("follow"), Name: path})
			return err
		})
		if err != nil {
			if errors.Is(err, verify.ErrStateMismatch) {
				return nil, clikit.Failf("--state %s: %w", path, err)
			}
			return nil, clikit.Failf("%s: %w", name, err)
		}
		if err := answered(run.Result, cfg, conn); err != nil {
			return nil, err
		}
		return run, nil
	}
	if !c.Bool("follow") {
		run, err := round(c.Context, prev)
		if err != nil {
			return err
		}
		return finish(c, outs, format, run, title)
	}
	return follow(c, prev, outs, format, title, round)
}

// finish writes the outputs and the state together and renders the report.
func finish(c *cli.Context, outs []output, format report.Format, run *verify.StateRun, title string) error {
	if err := writeResults(outs, format, run.Result, run.Map, run.State, title); err != nil {
		return err
	}
	if c.String("out") == "" {
		if err := clikit.Render(c, run.Result, title); err != nil {
			return err
		}
	}
	if !run.Result.Identical {
		return clikit.Differs("differences found")
	}
	return nil
}

// follow runs rounds until the command's context ends (SIGINT/SIGTERM): a round is never cut
// short, its state is written before the next begins.
func follow(c *cli.Context, st *verify.State, outs []output, format report.Format, title string,
	round func(context.Context, *verify.State) (*verify.StateRun, error)) error {
	var stateOut []output
	for _, o := range outs {
		if o.flag == "--state" {
			stateOut = append(stateOut, o)
		}
	}
	m := verify.NewFollowMetrics()
	m.Set(st, nil)
	if addr := c.String("metrics-addr"); addr != "" {
		ln, err := net.Listen("tcp", addr)
		if err != nil {
			return clikit.Failf("--metrics-addr %s: %w", addr, err)
		}
		srv := &http.Server{Handler: m.Handler(), ReadHeaderTimeout: 5 * time.Second}
		go srv.Serve(ln)
		defer srv.Close()
	}
	ctx := context.WithoutCancel(c.Context) // a signal ends the loop, not the round
	var last *verify.StateRun
	for n := 1; ; n++ {
		run, err := round(ctx, st)
		if err != nil {
			return err
		}
		if err := writeResults(stateOut, format, nil, nil, run.State, title); err != nil {
			return err
		}
		last, st = run, run.State
		m.Set(st, run)
		if !c.Bool("quiet") {
			fmt.Fprintln(c.App.ErrWriter, roundLine(n, run, m.Problems()))
		}
		select {
		case <-c.Context.Done():
		case <-time.After(c.Duration("interval")):
			continue
		}
		break
	}
	verified := false
	for _, p := range last.State.Partitions {
		verified = verified || len(p.SourceMarks) > 0 || len(p.TargetMarks) > 0
	}
	if !verified && len(last.Result.Problems) == 0 {
		return clikit.Failf("stopped before anything was verified: no source record of topic %q has reached the target yet (lag %d); the state is written", last.Result.SourceTopic, last.State.Lag())
	}
	if !c.Bool("quiet") {
		fmt.Fprintf(c.App.ErrWriter, "kverify: stopped; the verdict so far covers source offsets up to the verified ends (lag %d not verified)\n", last.State.Lag())
	}
	return finish(c, outs, format, last, title)
}

// roundLine is what --follow prints after round n: the records matched in it, the lag and the
// problems, and when there are any the aborted target records of the state (over all runs,
// as kverify_target_aborted_records counts them) and the partitions that ended at a
// transaction still open.
func roundLine(n int, run *verify.StateRun, problems int64) string {
	line := fmt.Sprintf("kverify: round %d: %d records matched, lag %d, problems %d", n, run.Result.Summary.Matched, run.State.Lag(), problems)
	var aborted, copies int64
	for _, p := range run.State.Partitions {
		aborted, copies = aborted+p.Aborted, copies+p.AbortedCopies
	}
	if aborted > 0 {
		line += fmt.Sprintf(", %s on the target so far (%d copies of committed records; read_uncommitted consumers read them)", plural(int(aborted), "aborted record"), copies)
	}
	if ps, recs := run.Result.OpenTransactions(); len(ps) > 0 {
		line += fmt.Sprintf(", a transaction open on the target in %s (%s not compared until it ends)", plural(len(ps), "partition"), plural(int(recs), "record"))
	}
	return line
}
