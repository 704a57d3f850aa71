package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/pprof"
	"os"
	"runtime/debug"
	"strconv"
	"strings"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/urfave/cli/v2"

	"github.com/kmigrate/kmigrate/cmd/internal/clikit"
	"github.com/kmigrate/kmigrate/mirror"
)

// processStart is when the process started (package initialisation, just after exec): the
// engine counts its time to the first record from it.
var processStart = time.Now()

func runCommand() *cli.Command {
	flags := clikit.ConnectionFlags()
	for _, f := range flags {
		if sf, ok := f.(*cli.StringFlag); ok && sf.Name == clikit.FlagMM2Config {
			sf.Aliases = append(sf.Aliases, "config")
		}
	}
	flags = append(flags,
		&cli.StringFlag{Name: "metrics-addr", Usage: "serve HTTP on `ADDR` (e.g. :9102): Prometheus metrics at /metrics, liveness at /healthz (200 while the process runs), readiness at /readyz (200 once every partition the group assigned is resumed, 503 with the reason before and during a rebalance), Go profiles at /debug/pprof/; empty: off"},
		&cli.StringFlag{Name: "memory-limit", Value: "192MiB", Usage: "soft memory limit of the Go runtime (`SIZE` in KiB, MiB or GiB; off: none); GOMEMLIMIT, when set, wins. The garbage collector works harder near it, keeping peak RSS near the limit at full speed"},
		&cli.IntFlag{Name: "fence-buckets", Value: mirror.DefaultBuckets, Usage: "split the flow's partitions into `N` buckets (1 to 1024), each written by one transactional producer and owned whole by one process: a process holds at most one producer per bucket it owns, and at most N processes share the flow. Every process of a flow needs the same N (the source group refuses another); a change fences the old buckets' transactional ids at the next start. Ignored with exactly.once.source.support=disabled"},
		&cli.DurationFlag{Name: "commit-latency-max", Value: mirror.DefaultCommitLatency, Usage: "the longest a mirrored record waits, from its fetch, for the commit that makes it visible to read_committed readers (`DURATION`, 1ms to 1m; wins over the flow key " + mirror.CommitLatencyKey + "). Within it kmirror commits each bucket when that pays: as soon as its flow pauses, no more often than commits take a tenth of its time and 200 markers a second, and at the bound when the flow never pauses. Lower it for latency, raise it for fewer transaction markers and commits. Not MM2's offset.flush.interval.ms, which kmirror ignores (kmirror lint says why). With exactly.once.source.support=disabled records are visible at once, and this is how often the offset map is written"},
		&cli.StringFlag{Name: "group-instance-id", EnvVars: []string{"KMIRROR_GROUP_INSTANCE_ID"}, Usage: "make the process a static member of the source group with `ID` (KIP-345; wins over <source>.consumer.group.instance.id): restarted with the same ID, as a container restarted in its pod or a StatefulSet's pod is, it takes its old member's place and buckets at once, instead of waiting for the dead member's session (session.timeout.ms, 45 s) and a rebalance. Each process needs its own: on Kubernetes the pod name of a StatefulSet (deploy/kmirror). A static member does not leave the group when it stops, so a process removed for good (a scale-down) keeps its buckets until its session times out (docs/operations.md)"},
		&cli.StringFlag{Name: "log-format", Value: "text", Usage: "log format: text or json (logs go to standard error)"},
		&cli.StringFlag{Name: "log-level", Value: "info", Usage: "log level: debug, info, warn or error"},
	)
	return &cli.Command{
		Name:      "run",
		Usage:     "mirror one flow until SIGTERM or SIGINT",
		UsageText: "kmirror run --config mm2.properties [--flow A->B] [--metrics-addr :9102]",
		Description: `run mirrors the topics of one flow of an mm2.properties file. It reads the MM2 keys that
matter (topics, topics.exclude, groups, groups.exclude, replication.policy.class and separator,
refresh.topics.*, refresh.groups.*, sync.topic.configs.*, config.properties.exclude,
sync.group.offsets.*, emit.checkpoints.*, emit.heartbeats.*, offset-syncs.topic.location,
replication.factor, offset-syncs/checkpoints/heartbeats.topic.replication.factor,
producer.compression.type, linger.ms, batch.size, consumer.fetch.max.bytes,
max.partition.fetch.bytes, fetch.max.wait.ms, session.timeout.ms, auto.offset.reset), and
kmirror's own ` + mirror.CommitLatencyKey + ` (--commit-latency-max), and prints, at start,
every key of the flow it does not honour, with why.

What it writes, all on the target (kmirror never writes to the source):
  - the mirrored topics, created when missing with the source's partition count and its own
    configuration overrides (minus what MM2 excludes), grown when the source grows;
  - kmirror-offsets.<source>.internal: the exact offset map (compacted, one partition);
  - MM2 offset syncs at every discontinuity, when offset-syncs.topic.location=target;
  - MM2 checkpoints and target group offsets (emit.checkpoints.enabled,
    sync.group.offsets.enabled), translated exactly; never into a group with active members;
  - MM2 heartbeats of the flow in topic heartbeats (compacted, one partition), every
    emit.heartbeats.interval.seconds (on by default, every second, as in MM2; off with
    emit.heartbeats.enabled=false). A heartbeat that fails is logged and tried again; it
    never stops the mirror.

Run several processes with the same file and flow to share the partitions (consumer group
kmirror-<source>-<target> on the source, for assignment only: no offsets are committed there).
The first SIGTERM/SIGINT drains (in-flight records, offset map) and exits; a second one exits
at once. After kill -9, the next start finds the records written since the last persist on
the target and continues after them.

` + clikit.ConnectionHelp + `

Examples:
  kmirror run --config mm2.properties --flow A->B --metrics-addr :9102
  kmirror run --source-brokers old:9092 --target-brokers new:9092     (identity policy, all topics)

A transient error (a target coordinator not available for longer than the client retries,
a broken connection, a transaction coordinator that lost a bucket's producer id after its
broker died) does not end the process: kmirror logs it, starts mirroring again after
a pause and resumes every partition from what the target committed (at most 5 times in a
row; kmirror_engine_restarts_total counts them).

Exit status: 0 stopped by a signal after draining; 2 configuration or connection error, or
mirroring stopped on an error (the message names the cluster, topic and partition).`,
		Flags:  flags,
		Action: run,
	}
}

func run(c *cli.Context) error {
	log, err := newLogger(c.App.ErrWriter, c.String("log-format"), c.String("log-level"))
	if err != nil {
		return clikit.Fail(err)
	}
	if err := setMemoryLimit(c.String("memory-limit")); err != nil {
		return clikit.Fail(err)
	}
	conn, err := clikit.Connect(c)
	if err != nil {
		return err
	}
	if conn.Config != nil {
		for _, w := range conn.Config.Warnings {
			log.Warn("mm2.properties warning", "line", w.Line, "key", w.Key, "message", w.Message, "suggestion", w.Suggestion)
		}
	}
	cfg, ignored, err := mirror.FromFlow(conn.Flow, conn.Source, conn.Target)
	if err != nil {
		return clikit.Failf("flow %s: %w", conn.Flow.Name(), err)
	}
	cfg.Buckets = c.Int("fence-buckets")
	if id := c.String("group-instance-id"); id != "" {
		cfg.InstanceID = id
	}
	if c.IsSet("commit-latency-max") {
		cfg.CommitLatency = c.Duration("commit-latency-max")
	}
	if len(ignored) > 0 {
		fmt.Fprintf(c.App.ErrWriter, "kmirror does not honour these keys of flow %s:\n", conn.Flow.Name())
		for _, ig := range ignored {
			fmt.Fprintf(c.App.ErrWriter, "  %s=%s: %s\n", ig.Key, ig.Value, ig.Reason)
			log.Warn("key not honoured", "key", ig.Key, "value", ig.Value, "reason", ig.Reason)
		}
	}
	srcOpts, err := conn.Source.Opts()
	if err != nil {
		return clikit.Failf("source cluster %s: %w", conn.Source.Alias, err)
	}
	dstOpts, err := conn.Target.Opts()
	if err != nil {
		return clikit.Failf("target cluster %s: %w", conn.Target.Alias, err)
	}
	dstOpts = append(dstOpts, testTargetOpts...)
	first := true
	sup := &mirror.Supervisor{Log: log, New: func() (*mirror.Engine, error) {
		e, err := mirror.New(cfg, srcOpts, dstOpts, log)
		if err != nil {
			return nil, err
		}
		if first {
			e.SetStartedAt(processStart)
			first = false
		}
		return e, nil
	}}
	if addr := c.String("metrics-addr"); addr != "" {
		stop, err := serveMetrics(addr, sup, log)
		if err != nil {
			return clikit.Fail(err)
		}
		defer stop()
	}
	if err := sup.Run(c.Context); err != nil {
		if errors.Is(err, context.Canceled) && c.Context.Err() != nil {
			return nil
		}
		return clikit.Fail(err)
	}
	return nil
}

// testTargetOpts are added to the target's client options; tests set them (fewer retries, so
// that a fault gets past franz-go within the test's time).
var testTargetOpts []kgo.Opt

func serveMetrics(addr string, e *mirror.Supervisor, log *slog.Logger) (func(), error) {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("--metrics-addr %s: %w", addr, err)
	}
	mux := http.NewServeMux()
	mux.Handle("/metrics", e.MetricsHandler())
	mux.Handle("/healthz", mirror.LiveHandler())
	mux.Handle("/readyz", e.ReadyHandler())
	// Profiles for diagnosing memory and CPU (read-only; on the same address as the metrics).
	mux.HandleFunc("/debug/pprof/", pprof.Index)
	mux.HandleFunc("/debug/pprof/profile", pprof.Profile)
	srv := &http.Server{Handler: mux, ReadHeaderTimeout: 5 * time.Second}
	go func() {
		if err := srv.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
			log.Warn("metrics server stopped", "addr", addr, "err", err)
		}
	}()
	log.Info("serving metrics", "addr", ln.Addr().String(), "path", "/metrics", "health", "/healthz", "ready", "/readyz")
	return func() {
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		defer cancel()
		srv.Shutdown(ctx)
	}, nil
}

func newLogger(w io.Writer, format, level string) (*slog.Logger, error) {
	var lvl slog.Level
	if err := lvl.UnmarshalText([]byte(level)); err != nil {
		return nil, fmt.Errorf("--log-level %q: use debug, info, warn or error", level)
	}
	opts := &slog.HandlerOptions{Level: lvl}
	switch strings.ToLower(format) {
	case "text":
		return slog.New(slog.NewTextHandler(w, opts)), nil
	case "json":
		return slog.New(slog.NewJSONHandler(w, opts)), nil
	}
	return nil, fmt.Errorf("--log-format %q: use text or json", format)
}

// setMemoryLimit applies --memory-limit unless GOMEMLIMIT is set.
func setMemoryLimit(v string) error {
	if os.Getenv("GOMEMLIMIT") != "" || v == "" || strings.EqualFold(v, "off") {
		return nil
	}
	units := []struct {
		suffix string
		mult   int64
	}{{"GiB", 1 << 30}, {"MiB", 1 << 20}, {"KiB", 1 << 10}, {"B", 1}}
	for _, u := range units {
		if num, ok := strings.CutSuffix(v, u.suffix); ok {
			n, err := strconv.ParseInt(strings.TrimSpace(num), 10, 64)
			if err != nil || n <= 0 {
				break
			}
			debug.SetMemoryLimit(n * u.mult)
			return nil
		}
	}
	return fmt.Errorf("--memory-limit %q: write a size such as 192MiB or 1GiB, or off", v)
}
