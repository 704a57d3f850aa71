// Package clitest holds the helpers the command tests share: an embedded kfake cluster with a
// client, running a command the way main does (clikit.Main) with captured output, and a
// properties file in the test's temporary directory. It is for tests only.
package clitest

import (
	"bytes"
	"context"
	"os"
	"os/signal"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/urfave/cli/v2"

	"github.com/kmigrate/kmigrate/cmd/internal/clikit"
	"github.com/kmigrate/kmigrate/internal/testkit"
)

// Cluster starts a one-broker kfake cluster for the test and returns a client of it, which
// produces to the partition each record names, and its seeds joined by commas, as a
// --source/--target flag takes them. Both are closed when the test ends.
func Cluster(t *testing.T) (*kgo.Client, string) {
	t.Helper()
	c := testkit.NewCluster(t)
	return c.Client, c.Seeds
}

// Run runs app as main would, with args after the program name name, and returns its exit
// code, stdout and stderr.
func Run(t *testing.T, app *cli.App, name string, args ...string) (int, string, string) {
	t.Helper()
	var out, errb bytes.Buffer
	app.Writer, app.ErrWriter = &out, &errb
	code := clikit.Main(app, append([]string{name}, args...))
	return code, out.String(), errb.String()
}

// Context returns a context that ends after 30 s or with the test.
func Context(t *testing.T) context.Context {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	t.Cleanup(cancel)
	return ctx
}

// WriteFile writes text to a file called name in a temporary directory of the test and
// returns its path.
func WriteFile(t *testing.T, name, text string) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), name)
	if err := os.WriteFile(path, []byte(text), 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

// RunContext is Run with a parent context (clikit.MainContext), for commands that run until
// they are stopped, such as kmirror run. Its outputs are safe for the command's goroutines.
func RunContext(t *testing.T, ctx context.Context, app *cli.App, name string, args ...string) (int, string, string) {
	t.Helper()
	var out, errb testkit.SyncBuffer
	app.Writer, app.ErrWriter = &out, &errb
	code := clikit.MainContext(ctx, app, append([]string{name}, args...))
	return code, out.String(), errb.String()
}

// FIFO makes a named pipe in a temporary directory of the test: opening it for reading
// blocks until a writer comes, and reading it blocks until the writer writes, as a
// never-ending input does. When the test ends, the pipe is opened for writing once, so that
// a reader still blocked in open returns.
func FIFO(t *testing.T) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "mm2.fifo")
	if err := syscall.Mkfifo(path, 0o600); err != nil {
		t.Skipf("mkfifo: %v", err)
	}
	t.Cleanup(func() {
		if f, err := os.OpenFile(path, os.O_WRONLY|syscall.O_NONBLOCK, 0); err == nil {
			f.Close()
		}
	})
	return path
}

// SignalUntil sends sig to this process until done is closed, at most for 30 s, and reports
// whether done was closed. The test must not run in parallel with others that share the
// process (a signal reaches every command running in it). It installs a handler of its own,
// so that a signal that arrives before the command listens, or after it stopped listening,
// does not kill the test binary; the handler stays for the rest of the binary's life.
func SignalUntil(t *testing.T, sig os.Signal, done <-chan struct{}) bool {
	t.Helper()
	ch := make(chan os.Signal, 1) // never read: extra signals are dropped
	signal.Notify(ch, sig)
	p, err := os.FindProcess(os.Getpid())
	if err != nil {
		t.Fatal(err)
	}
	deadline := time.After(30 * time.Second)
	tick := time.NewTicker(20 * time.Millisecond)
	defer tick.Stop()
	for {
		if err := p.Signal(sig); err != nil {
			t.Fatalf("signal: %v", err)
		}
		select {
		case <-done:
			return true
		case <-deadline:
			return false
		case <-tick.C:
		}
	}
}

// CommittedRecords counts the records a read_committed consumer reads from every partition of
// topic through cl's connection options (transaction markers and aborted records excluded).
// Offsets do not tell: with kmirror's transactions, markers take target offsets too.
func CommittedRecords(t *testing.T, ctx context.Context, cl *kgo.Client, topic string) int64 {
	t.Helper()
	var n int64
	for _, vals := range CommittedValues(t, ctx, cl, topic) {
		n += int64(len(vals))
	}
	return n
}

// CommittedValues reads the values a read_committed consumer reads from every partition of
// topic, in order, up to the last stable offset listed first. It returns what it read by then
// when ctx ends, and nothing when the offsets cannot be listed.
func CommittedValues(t *testing.T, ctx context.Context, cl *kgo.Client, topic string) map[int32][]string {
	t.Helper()
	ends, err := kadm.NewClient(cl).ListCommittedOffsets(ctx, topic)
	if err != nil {
		return nil
	}
	out := map[int32][]string{}
	ends.Each(func(o kadm.ListedOffset) {
		if o.Err != nil || o.Offset <= 0 {
			return
		}
		rd, err := kgo.NewClient(append(cl.Opts(),
			kgo.ConsumePartitions(map[string]map[int32]kgo.Offset{topic: {o.Partition: kgo.NewOffset().AtStart()}}),
			kgo.FetchIsolationLevel(kgo.ReadCommitted()), kgo.KeepControlRecords())...)
		if err != nil {
			t.Fatal(err)
		}
		defer rd.Close()
		for last := int64(-1); last < o.Offset-1; {
			fs := rd.PollFetches(ctx)
			if ctx.Err() != nil {
				return
			}
			fs.EachRecord(func(r *kgo.Record) {
				if r.Offset >= o.Offset {
					return
				}
				last = r.Offset
				if !r.Attrs.IsControl() {
					out[o.Partition] = append(out[o.Partition], string(r.Value))
				}
			})
		}
	})
	return out
}
