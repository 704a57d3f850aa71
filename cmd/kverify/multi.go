package main

import (
	"bytes"
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/urfave/cli/v2"
	"golang.org/x/term"

	"github.com/kmigrate/kmigrate/cmd/internal/clikit"
	"github.com/kmigrate/kmigrate/report"
	"github.com/kmigrate/kmigrate/verify"
)

// multiDiffHelp is the part of `kverify diff --help` on verifying several topics at once.
const multiDiffHelp = `Several topics: --all verifies every topic of the flow (the topics and topics.exclude
filters of --mm2-config; without an MM2 file every source topic), never internal topics
(__*, *.internal, *-internal), MM2's own (mm2-*) or heartbeats topics. --topics REGEX,...
narrows those to the names matching one of the comma-separated regexes, each matching the
whole name (the syntax of MM2's topics key). --topic NAME may be given several times (exact
names, outside the flow's filters). Each topic's target is named by the flow's replication
policy; a target topic that does not exist is a difference of that topic (all its records
missing). All topics share one pool of --parallel partition readers and one metadata request
per cluster. The report has the verdict over all topics, one row per topic (status and
counts), then only the partitions that differ or could not be read, and a total line; JUnit
has one test case per topic; the JSON form ("kind": "kverify-diff-topics") is in
docs/verify-topics.md. Exit status over all topics: 0 every topic identical (topics with
nothing to compare are named, never called identical), 1 any topic differs, 2 errors, a
partition that could not be read while nothing differs, or nothing to compare in any topic.
--target-topic, --partitions, --offset-map, --state and --evidence take one topic.

--shard INDEX/COUNT compares only the (topic, partition) pairs of shard INDEX of COUNT:
partition p of topic t belongs to shard (xxhash64(t) + p) mod COUNT, which every process
computes alike whatever topics the others see, so COUNT processes (a Kubernetes Indexed Job
with --shard $JOB_COMPLETION_INDEX/COUNT) verify a flow together. A shard that gets no
partition, or whose partitions hold nothing to compare, says so and exits 0 without a verdict. Write each
shard's report with --format json and join them with "kverify merge" (see its --help), which
checks that every shard and every partition is there exactly once.

`

// multiFlags are the flags of diff that select several topics.
func multiFlags() []cli.Flag {
	return []cli.Flag{
		&cli.BoolFlag{Name: "all", Usage: "verify every topic of the flow (from --mm2-config, or every non-internal source topic)"},
		&cli.StringFlag{Name: "topics", Usage: "verify the topics of the flow matching one of these comma-separated `REGEXES` (whole name, as MM2's topics key)"},
		&cli.StringFlag{Name: "shard", Usage: "verify only shard `INDEX/COUNT` of the flow's partitions (0 <= INDEX < COUNT); join the JSON reports with kverify merge"},
	}
}

// topicFlag returns the --topic names given, trimmed.
func topicFlag(c *cli.Context) []string {
	var out []string
	for _, t := range c.StringSlice("topic") {
		if t = strings.TrimSpace(t); t != "" {
			out = append(out, t)
		}
	}
	return out
}

// multiMode reports whether diff compares several topics: --all, --topics, --shard or --topic
// given more than once. It refuses no topic at all.
func multiMode(c *cli.Context) (bool, error) {
	n := len(topicFlag(c))
	multi := n > 1 || c.Bool("all") || c.IsSet("topics") || c.IsSet("shard")
	if n == 0 && !multi {
		return false, clikit.Failf("no topic given: give --topic TOPIC (repeat it for several), --topics REGEX or --all")
	}
	return multi, nil
}

// diffTopic is the topic diffConfig reads: the first --topic; with --all or --topics, which
// select the topics later, a stand-in that is never looked up.
func diffTopic(c *cli.Context) string {
	if names := topicFlag(c); len(names) > 0 {
		return names[0]
	}
	return "(the topics selected)"
}

func parseShard(s string) (verify.Shard, error) {
	i, n, ok := strings.Cut(strings.TrimSpace(s), "/")
	idx, err1 := strconv.Atoi(strings.TrimSpace(i))
	cnt, err2 := strconv.Atoi(strings.TrimSpace(n))
	if !ok || err1 != nil || err2 != nil {
		return verify.Shard{}, fmt.Errorf("%q: write INDEX/COUNT, e.g. 0/4 for the first of 4 shards", s)
	}
	sh := verify.Shard{Index: idx, Count: cnt}
	if cnt < 1 || idx < 0 || idx >= cnt {
		return sh, fmt.Errorf("%q: give 0 <= INDEX < COUNT, e.g. 0/4 ... 3/4", s)
	}
	return sh, nil
}

// multiConfig reads the flags of diff over several topics, refusing the one-topic flags.
func multiConfig(c *cli.Context) (verify.MultiConfig, error) {
	for _, f := range []string{"target-topic", "partitions", "offset-map", "state", "follow", "metrics-addr", "evidence"} {
		if c.IsSet(f) {
			return verify.MultiConfig{}, clikit.Failf("--%s takes one topic: give --topic once, without --all, --topics or --shard (or run one kverify diff per topic)", f)
		}
	}
	names := topicFlag(c)
	mc := verify.MultiConfig{Names: names, All: c.Bool("all"), TopicsRegex: strings.TrimSpace(c.String("topics"))}
	if c.IsSet("topics") && mc.TopicsRegex == "" {
		return mc, clikit.Failf("--topics %q: give at least one regex", c.String("topics"))
	}
	if len(names) > 0 && (mc.All || mc.TopicsRegex != "") {
		return mc, clikit.Failf("--topic names topics exactly, --all and --topics select them from the flow: give one or the other")
	}
	if c.IsSet("shard") {
		sh, err := parseShard(c.String("shard"))
		if err != nil {
			return mc, clikit.Failf("--shard %w", err)
		}
		mc.Shard = sh
	}
	base, err := diffConfig(c)
	if err != nil {
		return mc, err
	}
	mc.Base = base
	return mc, nil
}

func runMulti(c *cli.Context) error {
	mc, err := multiConfig(c)
	if err != nil {
		return err
	}
	format, outs, conn, err := openReport(c)
	if err != nil {
		return err
	}
	defer conn.Close()
	mc.Flow = conn.Flow
	if conn.Config != nil {
		mc.Base.UseOffsetSyncs(conn.Flow, conn.Src, conn.Dst)
	}
	var prog *multiProgress
	if !c.Bool("quiet") && clikit.IsTerminal(os.Stderr) {
		prog = newMultiProgress(c.App.ErrWriter)
		mc.Progress = prog.update
	}
	mr, err := verify.DiffTopics(c.Context, conn.Src, conn.Dst, mc)
	if prog != nil {
		prog.stop()
	}
	if err != nil {
		return clikit.Failf("diff flow %s (cluster %s -> cluster %s): %w", conn.Flow.Name(), conn.Source.Alias, conn.Target.Alias, err)
	}
	if err := multiAnswered(mr); err != nil {
		return err
	}
	if err := renderMulti(c, outs, format, mr, "kverify diff "+conn.Flow.Name()); err != nil {
		return err
	}
	return multiExit(c, mr)
}

// multiAnswered refuses (exit 2, nothing written) a result that is no answer: partitions that
// could not be read while nothing differs, or nothing to compare in any topic.
func multiAnswered(mr *verify.MultiResult) error {
	if mr.EmptyShard || mr.Total.Differs > 0 {
		return nil
	}
	var failed, nothing []string
	for _, t := range mr.Topics {
		for _, p := range t.Partitions {
			if p.Err != "" {
				failed = append(failed, fmt.Sprintf("topic %q partition %d: %s", t.SourceTopic, p.Partition, p.Err))
			}
		}
		if t.Status == verify.StatusNothing {
			nothing = append(nothing, t.SourceTopic)
		}
	}
	if len(failed) > 0 {
		return clikit.Failf("could not compare %s: %s; nothing written", plural(len(failed), "partition"), joinFirst(failed, 10))
	}
	if mr.Total.Identical == 0 && mr.Shard == nil {
		return clikit.Failf("%w: no source record in the range asked (--from %s, --to %s) in any of the %d topics (%s): check --from and --to; nothing written",
			verify.ErrNothingToCompare, mr.Selection.From, mr.Selection.To, len(nothing), joinFirst(nothing, 10))
	}
	return nil
}

// multiExit is the exit status of a result that was written.
func multiExit(c *cli.Context, mr *verify.MultiResult) error {
	switch {
	case mr.EmptyShard:
		fmt.Fprintf(c.App.ErrWriter, "kverify: shard %s holds none of the %d partitions of the %d topics selected: nothing compared; merge every shard's report for the verdict\n",
			mr.Shard, sumPartitions(mr.Selection.Topics), len(mr.Selection.Topics))
		return nil
	case mr.Total.Differs > 0:
		return clikit.Differs(fmt.Sprintf("%d of %d topics differ", mr.Total.Differs, mr.Total.Topics))
	case mr.Total.Identical == 0:
		// Only a shard gets here: its partitions held nothing to compare, which the merge
		// weighs with the other shards'.
		fmt.Fprintf(c.App.ErrWriter, "kverify: shard %s: none of its %d partitions had a source record in the range asked: nothing compared; merge every shard's report for the verdict\n",
			mr.Shard, mr.Total.Partitions)
	}
	return nil
}

func sumPartitions(ts []verify.SelectedTopic) int {
	n := 0
	for _, t := range ts {
		n += t.Partitions
	}
	return n
}

func plural(n int, what string) string {
	if n == 1 {
		return "1 " + what
	}
	return fmt.Sprintf("%d %ss", n, what)
}

func joinFirst(items []string, n int) string {
	if len(items) > n {
		return strings.Join(items[:n], "; ") + fmt.Sprintf("; and %d more", len(items)-n)
	}
	return strings.Join(items, "; ")
}

// renderMulti writes mr in format to the outputs checked before (--out), or to standard
// output: coloured and fitted to the terminal's width when it is one (unless --wide).
func renderMulti(c *cli.Context, outs []output, format report.Format, mr *verify.MultiResult, title string) error {
	if len(outs) > 0 {
		var b bytes.Buffer
		if err := report.WriteMulti(&b, format, mr, report.Options{Title: title}); err != nil {
			return clikit.Failf("--out: %w (nothing written)", err)
		}
		return writeOutputs(outs, [][]byte{b.Bytes()})
	}
	opt := report.Options{Title: title}
	if f, ok := c.App.Writer.(*os.File); ok && clikit.IsTerminal(f) {
		_, noColor := os.LookupEnv("NO_COLOR")
		opt.Color = !noColor
		if w, _, err := term.GetSize(int(f.Fd())); err == nil && !c.Bool("wide") {
			opt.Width = w
		}
	}
	var b bytes.Buffer
	if err := report.WriteMulti(&b, format, mr, opt); err != nil {
		return clikit.Failf("render %s report: %w", format, err)
	}
	_, err := c.App.Writer.Write(b.Bytes())
	return err
}

// multiProgress prints, once a second on one stderr line, the records read and the
// partitions done of all topics.
type multiProgress struct {
	progressLine
	parts map[string]verify.Progress
}

func newMultiProgress(w io.Writer) *multiProgress {
	p := &multiProgress{parts: map[string]verify.Progress{}}
	p.run(w, p.print)
	return p
}

func (p *multiProgress) update(topic string, pr verify.Progress) {
	p.mu.Lock()
	p.parts[topic+"/"+strconv.Itoa(int(pr.Partition))] = pr
	p.mu.Unlock()
}

func (p *multiProgress) print() {
	p.mu.Lock()
	defer p.mu.Unlock()
	var total int64
	done := 0
	for _, pr := range p.parts {
		total += pr.Records
		if pr.Done {
			done++
		}
	}
	rate := float64(total) / max(time.Since(p.start).Seconds(), 0.001)
	fmt.Fprintf(p.w, "\r%d records (%.0f/s), %d partitions done, %d reading\x1b[K", total, rate, done, len(p.parts)-done)
}
