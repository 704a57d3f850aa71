// Package clitest holds the helpers the command tests share: an embedded kfake cluster with a
// client, running a command the way main does (clikit.Main) with captured output, and a
// properties file in the test's temporary directory. It is for tests only.
package clitest

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/urfave/cli/v2"

	"github.com/kmigrate/kmigrate/cmd/internal/clikit"
)

// Cluster starts a one-broker kfake cluster for the test and returns a client of it, which
// produces to the partition each record names, and its seeds joined by commas, as a
// --source/--target flag takes them. Both are closed when the test ends.
func Cluster(t *testing.T) (*kgo.Client, string) {
	t.Helper()
	c, err := kfake.NewCluster(kfake.NumBrokers(1))
	if err != nil {
		t.Fatalf("kfake: %v", err)
	}
	t.Cleanup(c.Close)
	cl, err := kgo.NewClient(kgo.SeedBrokers(c.ListenAddrs()...), kgo.RecordPartitioner(kgo.ManualPartitioner()))
	if err != nil {
		t.Fatalf("client: %v", err)
	}
	t.Cleanup(cl.Close)
	return cl, strings.Join(c.ListenAddrs(), ",")
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
