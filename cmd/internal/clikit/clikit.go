// Package clikit holds what the three commands share: building an app and its report commands,
// the cluster connection flags (or an MM2 properties file), the output flags, and running an app
// with signals and documented exit codes (exit.go).
// Kafka logic does not live here. The MM2 file is read within mm2's limits and stops at the
// first SIGTERM/SIGINT; TLS or SASL flags with a --*-security-protocol that does not use them
// are refused (exit 2); errors never show a secret.
package clikit

import (
	"context"
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/urfave/cli/v2"
	"golang.org/x/term"

	"github.com/kmigrate/kmigrate/mm2"
	"github.com/kmigrate/kmigrate/report"
)

// Conn is the resolved pair of clusters a command works on.
type Conn struct {
	Source *mm2.Cluster
	Target *mm2.Cluster
	// Flow is the replication flow between them: from the MM2 file when given, else a flow
	// with the identity replication policy.
	Flow *mm2.Flow
	// Config is the parsed MM2 file, or nil.
	Config *mm2.Config
}

// Client builds a franz-go client for cl: the cluster's connection and security settings
// first, the command's options after.
func Client(cl *mm2.Cluster, opts ...kgo.Opt) (*kgo.Client, error) {
	base, err := cl.Opts()
	if err != nil {
		if strings.HasPrefix(err.Error(), "cluster "+cl.Alias) { // Opts names the cluster already
			return nil, err
		}
		return nil, fmt.Errorf("cluster %s: %w", cl.Alias, err)
	}
	c, err := kgo.NewClient(append(base, opts...)...)
	if err != nil {
		return nil, fmt.Errorf("cluster %s: create client: %w", cl.Alias, err)
	}
	return c, nil
}

// OutputUsage is how a command's usage line shows OutputFlags: "[--format
// table|json|markdown|html|junit] [--out FILE]".
func OutputUsage() string { return "[--format " + report.FormatNames("|") + "] [--out FILE]" }

// OutputFlags are --format and --out.
func OutputFlags() []cli.Flag {
	return []cli.Flag{
		&cli.StringFlag{Name: "format", Value: string(report.Table), Usage: "output format: " + report.FormatList()},
		&cli.StringFlag{Name: "out", Usage: "write the report to `FILE` instead of standard output"},
		&cli.BoolFlag{Name: "wide", Usage: "on a terminal, show every column of the tables (default: fit the terminal's width, least important columns first); files and pipes always get every column"},
	}
}

// Render writes v through report in the --format chosen, to --out or standard output.
func Render(c *cli.Context, v any, title string) error {
	f, err := report.ParseFormat(c.String("format"))
	if err != nil {
		return Failf("--format: %w", err)
	}
	var w io.Writer = c.App.Writer
	color, width := false, 0
	if path := c.String("out"); path != "" {
		file, err := os.Create(path)
		if err != nil {
			return Failf("--out: %w", err)
		}
		defer file.Close()
		w = file
	} else if fi, ok := w.(*os.File); ok {
		color = isTerminal(fi) && !noColor()
		if isTerminal(fi) && !c.Bool("wide") {
			width = terminalWidth(fi)
		}
	}
	if err := report.Write(w, f, v, report.Options{Color: color, Title: title, Width: width}); err != nil {
		return Failf("render %s report: %w", f, err)
	}
	return nil
}

// IsTerminal reports whether f is a character device (a TTY), for colours and progress.
func IsTerminal(f *os.File) bool { return isTerminal(f) }

func isTerminal(f *os.File) bool {
	st, err := f.Stat()
	if err != nil {
		return false
	}
	return st.Mode()&os.ModeCharDevice != 0 && !strings.EqualFold(os.Getenv("TERM"), "dumb")
}

// terminalWidth is the width of the terminal f, or $COLUMNS when the terminal does not say;
// 0 (no limit) when neither does.
func terminalWidth(f *os.File) int {
	if w, _, err := term.GetSize(int(f.Fd())); err == nil && w > 0 {
		return w
	}
	if n, err := strconv.Atoi(os.Getenv("COLUMNS")); err == nil && n > 0 {
		return n
	}
	return 0
}

// noColor honours the NO_COLOR convention (https://no-color.org): set to anything, no colours.
func noColor() bool {
	_, set := os.LookupEnv("NO_COLOR")
	return set
}

// Clients connects to both clusters of conn and checks that each answers; otherwise it fails
// the command (exit 2) with an error naming the side, its seeds and the flags to check.
func Clients(ctx context.Context, conn *Conn) (src, dst *kgo.Client, err error) {
	if src, err = Client(conn.Source); err != nil {
		return nil, nil, Fail(err)
	}
	if dst, err = Client(conn.Target); err != nil {
		src.Close()
		return nil, nil, Fail(err)
	}
	for _, side := range []struct {
		name string
		cl   *kgo.Client
		seed []string
	}{{"source", src, conn.Source.Bootstrap}, {"target", dst, conn.Target.Bootstrap}} {
		pctx, cancel := context.WithTimeout(ctx, 15*time.Second)
		err := side.cl.Ping(pctx)
		cancel()
		if err != nil {
			src.Close()
			dst.Close()
			return nil, nil, Failf("cannot reach the %s cluster at %s: %w (check --%s-brokers and the security flags)", side.name, strings.Join(side.seed, ","), err, side.name)
		}
	}
	return src, dst, nil
}

// Session is a command's connection: the settings of both clusters and the flow, and a client
// of each, checked to answer. Close closes the clients.
type Session struct {
	*Conn
	Src, Dst *kgo.Client
}

// Open is Connect then Clients.
func Open(c *cli.Context) (*Session, error) {
	conn, err := Connect(c)
	if err != nil {
		return nil, err
	}
	src, dst, err := Clients(c.Context, conn)
	if err != nil {
		return nil, err
	}
	return &Session{Conn: conn, Src: src, Dst: dst}, nil
}

// Close closes both clients.
func (s *Session) Close() {
	s.Src.Close()
	s.Dst.Close()
}
