package clikit_test

import (
	"context"
	"fmt"
	"os"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/urfave/cli/v2"

	"github.com/kmigrate/kmigrate/cmd/internal/clikit"
	"github.com/kmigrate/kmigrate/cmd/internal/clitest"
	"github.com/kmigrate/kmigrate/internal/testkit"
)

// connectApp is what every tool does first: Connect, then a client per side and a ping.
func connectApp() *cli.App {
	return &cli.App{
		Name:  "test",
		Flags: clikit.ConnectionFlags(),
		Action: func(c *cli.Context) error {
			conn, err := clikit.Connect(c)
			if err != nil {
				return err
			}
			for _, side := range []struct {
				name string
				cl   func() (*kgo.Client, error)
			}{{"source", func() (*kgo.Client, error) { return clikit.Client(conn.Source) }}, {"target", func() (*kgo.Client, error) { return clikit.Client(conn.Target) }}} {
				cl, err := side.cl()
				if err != nil {
					return err
				}
				ctx, cancel := context.WithTimeout(c.Context, 15*time.Second)
				err = cl.Ping(ctx)
				cancel()
				cl.Close()
				if err != nil {
					return fmt.Errorf("cannot reach the %s cluster: %w", side.name, err)
				}
			}
			return nil
		},
	}
}

// TestMM2FileStopsOnSIGTERM: an --mm2-config that never ends (a named pipe without a writer,
// or with one that writes part of a file and stops) must not hang the tool: the first
// SIGTERM ends it with exit 2 and nothing else done.
func TestMM2FileStopsOnSIGTERM(t *testing.T) {
	tests := []struct {
		name  string
		write string // what a writer writes before it stops; "" for no writer at all
	}{
		{"no writer (blocked in open)", ""},
		{"writer stopped mid-file (blocked in read)", "clusters=A,B\nA.bootstrap.servers=a:9092\nB.boot"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			fifo := clitest.FIFO(t)
			if tt.write != "" {
				w, err := os.OpenFile(fifo, os.O_RDWR, 0) // O_RDWR does not wait for a reader
				if err != nil {
					t.Fatal(err)
				}
				t.Cleanup(func() { w.Close() })
				if _, err := w.WriteString(tt.write); err != nil {
					t.Fatal(err)
				}
			}
			done := make(chan struct{})
			var code int
			var errOut string
			go func() {
				defer close(done)
				code, _, errOut = clitest.Run(t, connectApp(), "test", "--mm2-config", fifo)
			}()
			if !clitest.SignalUntil(t, syscall.SIGTERM, done) {
				t.Fatalf("the command still reads %s 30 s after the first SIGTERM", fifo)
			}
			if code != clikit.ExitError {
				t.Errorf("got exit %d, want %d; stderr %q", code, clikit.ExitError, errOut)
			}
			if !strings.Contains(errOut, fifo) || !strings.Contains(errOut, "stopped") {
				t.Errorf("stderr: got %q, want the file named and that reading it stopped", errOut)
			}
		})
	}
}

// TestMM2FileLimits: a file or a line far beyond any real mm2.properties is refused with an
// error naming the file, the line and the limit.
func TestMM2FileLimits(t *testing.T) {
	t.Parallel()
	header := "clusters=A,B\nA.bootstrap.servers=127.0.0.1:1\nB.bootstrap.servers=127.0.0.1:1\nA->B.enabled=true\n"
	big := header + strings.Repeat("# a comment\n", (4<<20)/12+1)
	bigLine := fmt.Sprintf("line %d", strings.Count(big[:4<<20], "\n")+1)
	tests := []struct {
		name     string
		text     string
		wantLine string
		wantMsg  string
	}{
		{"file beyond 4 MiB", big, bigLine, "4 MiB"},
		{"line beyond 1 MiB", header + "topics=" + strings.Repeat("a", 1<<20) + "\n", "line 5", "1 MiB"},
		{"continued line beyond 1 MiB", header + "topics=" + strings.Repeat("a,\\\n  ", (1<<20)/2) + "b\n", "line 5", "1 MiB"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			path := clitest.WriteFile(t, "mm2.properties", tt.text)
			code, _, errOut := clitest.Run(t, connectApp(), "test", "--mm2-config", path)
			if code != clikit.ExitError {
				t.Fatalf("got exit %d, want %d; stderr %q", code, clikit.ExitError, errOut)
			}
			for _, want := range []string{path, tt.wantLine, tt.wantMsg} {
				if !strings.Contains(errOut, want) {
					t.Errorf("stderr: got %q, want it to name %q", errOut, want)
				}
			}
		})
	}
}

// TestTLSFlagsNeedTLS: TLS flags with a protocol without TLS, or SASL flags with a protocol
// without SASL, are refused rather than ignored.
func TestTLSFlagsNeedTLS(t *testing.T) {
	t.Parallel()
	pw := clitest.WriteFile(t, "pw", "secret\n")
	base := []string{"--source-brokers", "127.0.0.1:1", "--target-brokers", "127.0.0.1:1"}
	tests := []struct {
		name string
		args []string
		want string
	}{
		{"CA with PLAINTEXT", []string{"--source-security-protocol", "PLAINTEXT", "--source-tls-ca", "ca.pem"}, "--source-tls-ca"},
		{"skip verify with PLAINTEXT", []string{"--target-security-protocol", "plaintext", "--target-tls-insecure-skip-verify"}, "--target-tls-insecure-skip-verify"},
		{"server name with SASL_PLAINTEXT", []string{"--source-security-protocol", "SASL_PLAINTEXT", "--source-sasl-user", "u", "--source-sasl-password-file", pw, "--source-tls-server-name", "kafka"}, "--source-tls-server-name"},
		{"cert with PLAINTEXT", []string{"--source-security-protocol", "PLAINTEXT", "--source-tls-cert", "c.pem", "--source-tls-key", "k.pem"}, "--source-tls-cert"},
		{"truststore with PLAINTEXT", []string{"--source-security-protocol", "PLAINTEXT", "--source-tls-truststore", "t.jks"}, "--source-tls-truststore"},
		{"SASL user with SSL", []string{"--source-security-protocol", "SSL", "--source-sasl-user", "u", "--source-sasl-password-file", pw}, "--source-sasl-user"},
		{"SASL mechanism with PLAINTEXT", []string{"--target-security-protocol", "PLAINTEXT", "--target-sasl-mechanism", "PLAIN"}, "--target-sasl-mechanism"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			code, _, errOut := clitest.Run(t, connectApp(), "test", append(append([]string{}, base...), tt.args...)...)
			if code != clikit.ExitError {
				t.Fatalf("got exit %d, want %d; stderr %q", code, clikit.ExitError, errOut)
			}
			if !strings.Contains(errOut, tt.want) || !strings.Contains(errOut, "protocol") {
				t.Errorf("stderr: got %q, want it to name %s and the protocol", errOut, tt.want)
			}
			if strings.Contains(errOut, "cannot reach") {
				t.Errorf("stderr: got %q, want a refusal before connecting", errOut)
			}
		})
	}
}

// TestAuthFailed: a wrong SASL password, through the flags or the MM2 file, says
// "authentication failed" with the user, the mechanism and the cluster alias, never the
// password (today: EOF).
func TestAuthFailed(t *testing.T) {
	t.Parallel()
	const user, good, wrong = "alice", "right-pass", "Wr0ngPassw0rd-x"
	for _, mech := range []string{"PLAIN", "SCRAM-SHA-256", "SCRAM-SHA-512"} {
		fake := testkit.StartCluster(t, kfake.EnableSASL(), kfake.Superuser(mech, user, good))
		seeds := strings.Join(fake.ListenAddrs(), ",")
		openSeeds := strings.Join(testkit.StartCluster(t).ListenAddrs(), ",")
		module := "org.apache.kafka.common.security.scram.ScramLoginModule"
		if mech == "PLAIN" {
			module = "org.apache.kafka.common.security.plain.PlainLoginModule"
		}
		file := func(pass string) string {
			return clitest.WriteFile(t, "mm2.properties", fmt.Sprintf(`clusters=east,west
east.bootstrap.servers=%s
west.bootstrap.servers=%s
east.security.protocol=SASL_PLAINTEXT
east.sasl.mechanism=%s
east.sasl.jaas.config=%s required username="%s" password="%s";
east->west.enabled=true
`, seeds, openSeeds, mech, module, user, pass))
		}
		pwFile := clitest.WriteFile(t, "pw", wrong+"\n")
		goodPW := clitest.WriteFile(t, "pw", good+"\n")
		tests := []struct {
			name   string
			args   []string
			alias  string
			wantOK bool
		}{
			{"flags", []string{"--source-brokers", seeds, "--target-brokers", openSeeds, "--source-sasl-mechanism", mech,
				"--source-sasl-user", user, "--source-sasl-password-file", pwFile}, "source", false},
			{"flags, right password", []string{"--source-brokers", seeds, "--target-brokers", openSeeds, "--source-sasl-mechanism", mech,
				"--source-sasl-user", user, "--source-sasl-password-file", goodPW}, "source", true},
			{"mm2 file", []string{"--mm2-config", file(wrong)}, "east", false},
			{"mm2 file, right password", []string{"--mm2-config", file(good)}, "east", true},
		}
		for _, tt := range tests {
			t.Run(mech+"/"+tt.name, func(t *testing.T) {
				t.Parallel()
				code, _, errOut := clitest.Run(t, connectApp(), "test", tt.args...)
				if tt.wantOK {
					if code != clikit.ExitOK {
						t.Fatalf("got exit %d, want 0; stderr %q", code, errOut)
					}
					return
				}
				if code != clikit.ExitError {
					t.Fatalf("got exit %d, want %d; stderr %q", code, clikit.ExitError, errOut)
				}
				for _, want := range []string{"authentication failed", `"` + user + `"`, mech, "cluster " + tt.alias} {
					if !strings.Contains(errOut, want) {
						t.Errorf("stderr: got %q, want it to contain %q", errOut, want)
					}
				}
				clitest.NoSecrets(t, []string{wrong}, clitest.Outputs{"stderr": errOut})
			})
		}
	}
}
