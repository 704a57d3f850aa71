package main

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/kmigrate/kmigrate/cmd/internal/clikit"
	"github.com/kmigrate/kmigrate/cmd/internal/clitest"
)

// TestSecretsNeverShown runs kmirror lint (every format) and kmirror run on mm2.properties files
// full of secrets, good and broken, and greps every output for any six characters of a secret.
func TestSecretsNeverShown(t *testing.T) {
	src, srcSeeds := clitest.Cluster(t)
	dst, dstSeeds := clitest.Cluster(t)
	good, goodSecrets := clitest.SecretsGood(srcSeeds, dstSeeds)
	goodPath := clitest.WriteFile(t, "mm2.properties", good)

	lint := func(t *testing.T, path string, secrets []string) {
		t.Helper()
		for _, format := range []string{"table", "json", "markdown", "html", "junit"} {
			dir := t.TempDir()
			code, out, errOut := clitest.Run(t, newApp(), "kmirror", "lint", "--format", format, "--out", filepath.Join(dir, "lint."+format), path)
			if code != clikit.ExitDiffers {
				t.Errorf("lint --format %s: got exit %d, want %d (findings); stderr %q", format, code, clikit.ExitDiffers, errOut)
			}
			outs := clitest.Outputs{"lint stdout": out, "lint stderr": errOut}
			outs.AddFiles(t, dir)
			if len(outs) != 3 {
				t.Errorf("lint --format %s wrote no report", format)
			}
			clitest.NoSecrets(t, secrets, outs)
		}
		code, out, errOut := clitest.Run(t, newApp(), "kmirror", "lint", path)
		if code != clikit.ExitDiffers {
			t.Errorf("lint: got exit %d, want %d", code, clikit.ExitDiffers)
		}
		clitest.NoSecrets(t, secrets, clitest.Outputs{"lint stdout": out, "lint stderr": errOut})
	}

	t.Run("lint good file", func(t *testing.T) { lint(t, goodPath, goodSecrets) })

	t.Run("run good file", func(t *testing.T) {
		const topic, n = "leak-1", 20
		ctx := clitest.Context(t)
		if _, err := kadm.NewClient(src).CreateTopic(ctx, 1, 1, nil, topic); err != nil {
			t.Fatal(err)
		}
		for i := range n {
			if err := src.ProduceSync(ctx, &kgo.Record{Topic: topic, Value: fmt.Appendf(nil, "v%d", i)}).FirstErr(); err != nil {
				t.Fatal(err)
			}
		}
		rctx, cancel := context.WithTimeout(ctx, 30*time.Second)
		defer cancel()
		type result struct {
			code        int
			out, errOut string
		}
		done := make(chan result, 1)
		go func() {
			code, out, errOut := clitest.RunContext(t, rctx, newApp(), "kmirror", "run", "--config", goodPath, "--log-level", "debug")
			done <- result{code, out, errOut}
		}()
		for {
			got := clitest.CommittedRecords(t, rctx, dst, topic)
			if got >= int64(n) || rctx.Err() != nil {
				break
			}
			select {
			case r := <-done:
				t.Fatalf("run ended before mirroring (exit %d): %s", r.code, r.errOut)
			case <-time.After(50 * time.Millisecond):
			}
		}
		if rctx.Err() != nil {
			t.Fatalf("the target did not get %d records before the deadline", n)
		}
		cancel()
		r := <-done
		outs := clitest.Outputs{"run stdout": r.out, "run stderr": r.errOut}
		if !strings.Contains(r.errOut, "does not honour") {
			t.Errorf("run stderr does not list the keys it ignores (the test would prove less):\n%s", r.errOut)
		}
		clitest.NoSecrets(t, goodSecrets, outs)
	})

	for _, sc := range clitest.SecretCases {
		t.Run(sc.Name, func(t *testing.T) {
			path := clitest.WriteSecretCase(t, sc, srcSeeds, dstSeeds)
			lint(t, path, sc.Secrets)
			ctx, cancel := context.WithTimeout(clitest.Context(t), 20*time.Second)
			defer cancel()
			code, out, errOut := clitest.RunContext(t, ctx, newApp(), "kmirror", "run", "--config", path)
			if code != clikit.ExitError {
				t.Errorf("run: got exit %d, want %d (refused); stderr %q", code, clikit.ExitError, errOut)
			}
			clitest.NoSecrets(t, sc.Secrets, clitest.Outputs{"run stdout": out, "run stderr": errOut})
		})
	}
}

// TestDurationOverflow: a duration that does not fit int64 nanoseconds is an error naming the
// key, not a wrapped-around interval.
func TestDurationOverflow(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name, line, key string
	}{
		{"refresh topics seconds", "refresh.topics.interval.seconds=99999999999999", "refresh.topics.interval.seconds"},
		{"refresh groups seconds", "A->B.refresh.groups.interval.seconds=9223372037", "refresh.groups.interval.seconds"},
		{"sync topic configs seconds", "sync.topic.configs.interval.seconds=18446744073709551", "sync.topic.configs.interval.seconds"},
		{"sync group offsets seconds", "sync.group.offsets.interval.seconds=99999999999", "sync.group.offsets.interval.seconds"},
		{"emit checkpoints seconds", "emit.checkpoints.interval.seconds=10000000000", "emit.checkpoints.interval.seconds"},
		{"seconds beyond int64", "refresh.topics.interval.seconds=99999999999999999999", "refresh.topics.interval.seconds"},
		{"linger ms", "B.producer.linger.ms=9223372036855", "linger.ms"},
		{"fetch max wait ms", "A.consumer.fetch.max.wait.ms=99999999999999", "fetch.max.wait.ms"},
		{"session timeout ms", "A->B.consumer.session.timeout.ms=9223372036855", "session.timeout.ms"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			path := clitest.WriteFile(t, "mm2.properties", "clusters=A,B\nA.bootstrap.servers=127.0.0.1:1\nB.bootstrap.servers=127.0.0.1:1\nA->B.enabled=true\n"+tt.line+"\n")
			ctx, cancel := context.WithTimeout(clitest.Context(t), 20*time.Second)
			defer cancel()
			code, _, errOut := clitest.RunContext(t, ctx, newApp(), "kmirror", "run", "--config", path)
			if code != clikit.ExitError {
				t.Fatalf("got exit %d, want %d; stderr %q", code, clikit.ExitError, errOut)
			}
			if !strings.Contains(errOut, tt.key) || !strings.Contains(errOut, "too large") {
				t.Errorf("stderr: got %q, want it to name %s as too large", errOut, tt.key)
			}
			if strings.Contains(errOut, "127.0.0.1:1") {
				t.Errorf("stderr: got %q, want a refusal before connecting", errOut)
			}
		})
	}
}

// TestLintLimits: kmirror lint refuses a file or a line far beyond any real mm2.properties
// with an error naming the file, the line and the limit, and writes no report.
func TestLintLimits(t *testing.T) {
	t.Parallel()
	big := strings.Repeat("# a comment\n", (4<<20)/12+1)
	tests := []struct {
		name, text, line, limit string
	}{
		{"file beyond 4 MiB", big, fmt.Sprintf("line %d", strings.Count(big[:4<<20], "\n")+1), "4 MiB"},
		{"line beyond 1 MiB", "clusters=A,B\ntopics=" + strings.Repeat("a", 1<<20) + "\n", "line 2", "1 MiB"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			path := clitest.WriteFile(t, "mm2.properties", tt.text)
			report := filepath.Join(t.TempDir(), "lint.json")
			code, out, errOut := clitest.Run(t, newApp(), "kmirror", "lint", "--format", "json", "--out", report, path)
			if code != clikit.ExitError {
				t.Fatalf("got exit %d, want %d; stdout %.200q stderr %q", code, clikit.ExitError, out, errOut)
			}
			for _, want := range []string{path, tt.line, tt.limit} {
				if !strings.Contains(errOut, want) {
					t.Errorf("stderr: got %q, want it to name %q", errOut, want)
				}
			}
			if _, err := os.Stat(report); err == nil {
				t.Errorf("a report was written to %s, want none", report)
			}
		})
	}
}

// TestLintStopsOnSIGTERM: kmirror lint on a file that never ends stops at the first SIGTERM.
func TestLintStopsOnSIGTERM(t *testing.T) {
	fifo := clitest.FIFO(t)
	done := make(chan struct{})
	var code int
	var errOut string
	go func() {
		defer close(done)
		code, _, errOut = clitest.Run(t, newApp(), "kmirror", "lint", fifo)
	}()
	if !clitest.SignalUntil(t, syscall.SIGTERM, done) {
		t.Fatalf("kmirror lint still reads %s 30 s after the first SIGTERM", fifo)
	}
	if code != clikit.ExitError || !strings.Contains(errOut, fifo) {
		t.Errorf("got exit %d, stderr %q; want %d and the file named", code, errOut, clikit.ExitError)
	}
}
