package clikit

import (
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/urfave/cli/v2"
)

// runConnect runs an app with the connection flags and returns what Connect resolved.
func runConnect(t *testing.T, args ...string) (*Conn, error) {
	t.Helper()
	var conn *Conn
	app := &cli.App{
		Name:      "test",
		Flags:     ConnectionFlags(),
		Writer:    io.Discard,
		ErrWriter: io.Discard,
		Action: func(c *cli.Context) error {
			var err error
			conn, err = Connect(c)
			return err
		},
	}
	err := app.Run(append([]string{"test"}, args...))
	return conn, err
}

func writeTemp(t *testing.T, name, content string) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), name)
	if err := os.WriteFile(path, []byte(content), 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

const secretPW = "s3cr3t-Pa55word"

const mm2File = `clusters = east, west
east.bootstrap.servers = east1:9092,east2:9092
west.bootstrap.servers = west1:9092
west.security.protocol = SASL_SSL
west.sasl.mechanism = SCRAM-SHA-512
west.sasl.jaas.config = org.apache.kafka.common.security.scram.ScramLoginModule required username="mirror" password="` + secretPW + `";
east->west.enabled = true
west->east.enabled = false
replication.policy.class = DefaultReplicationPolicy
`

func TestConnect(t *testing.T) {
	mm2Path := writeTemp(t, "mm2.properties", mm2File)
	pwFile := writeTemp(t, "pw", secretPW+"\n")
	t.Setenv("KMIGRATE_TEST_PW", secretPW)
	tests := []struct {
		name    string
		env     map[string]string
		args    []string
		wantErr string
		check   func(t *testing.T, c *Conn)
	}{
		{
			name: "brokers only: identity flow source->target",
			args: []string{"--source-brokers", "a:1, b:2", "--target-brokers", "c:3"},
			check: func(t *testing.T, c *Conn) {
				if got, want := strings.Join(c.Source.Bootstrap, ","), "a:1,b:2"; got != want {
					t.Errorf("source brokers: got %q, want %q", got, want)
				}
				if got, want := c.Flow.Name(), "source->target"; got != want {
					t.Errorf("flow: got %q, want %q", got, want)
				}
				if got, want := c.Flow.TargetTopic("orders"), "orders"; got != want {
					t.Errorf("target topic: got %q, want %q (identity)", got, want)
				}
				if c.Config != nil {
					t.Errorf("config: got %v, want nil", c.Config)
				}
			},
		},
		{
			name: "brokers from the environment",
			env:  map[string]string{"KMIGRATE_SOURCE_BROKERS": "envsrc:9092", "KMIGRATE_TARGET_BROKERS": "envtgt:9092"},
			check: func(t *testing.T, c *Conn) {
				if got, want := c.Source.Bootstrap[0]+" "+c.Target.Bootstrap[0], "envsrc:9092 envtgt:9092"; got != want {
					t.Errorf("brokers: got %q, want %q", got, want)
				}
			},
		},
		{
			name:    "no brokers",
			args:    []string{"--target-brokers", "c:3"},
			wantErr: "--source-brokers is required",
		},
		{
			name:    "bad flow",
			args:    []string{"--source-brokers", "a:1", "--target-brokers", "c:3", "--flow", "a-b"},
			wantErr: "SOURCE->TARGET",
		},
		{
			name: "MM2 file: the only enabled flow",
			args: []string{"--mm2-config", mm2Path},
			check: func(t *testing.T, c *Conn) {
				if got, want := c.Flow.Name(), "east->west"; got != want {
					t.Errorf("flow: got %q, want %q", got, want)
				}
				if got, want := c.Flow.TargetTopic("orders"), "east.orders"; got != want {
					t.Errorf("target topic: got %q, want %q", got, want)
				}
				if got, want := c.Target.Security.SASLMechanism, "SCRAM-SHA-512"; got != want {
					t.Errorf("target mechanism: got %q, want %q", got, want)
				}
				if got := c.Target.Security.SASLPassword.Reveal(); got != secretPW {
					t.Errorf("target password: got %q, want the file's", got)
				}
				if _, err := c.Target.Opts(); err != nil {
					t.Errorf("target Opts: %v", err)
				}
			},
		},
		{
			name: "flags override the MM2 file",
			args: []string{"--mm2-config", mm2Path, "--flow", "west->east", "--source-brokers", "override:1",
				"--source-sasl-user", "other", "--source-sasl-password-env", "KMIGRATE_TEST_PW"},
			check: func(t *testing.T, c *Conn) {
				if got, want := c.Flow.Name(), "west->east"; got != want {
					t.Errorf("flow: got %q, want %q", got, want)
				}
				if got, want := strings.Join(c.Source.Bootstrap, ","), "override:1"; got != want {
					t.Errorf("source brokers: got %q, want %q", got, want)
				}
				if got, want := c.Source.Security.SASLUser, "other"; got != want {
					t.Errorf("source user: got %q, want %q", got, want)
				}
				if got, want := c.Source.Security.Protocol, "SASL_SSL"; got != want {
					t.Errorf("source protocol: got %q, want %q (kept from the file)", got, want)
				}
				if got, want := strings.Join(c.Target.Bootstrap, ","), "east1:9092,east2:9092"; got != want {
					t.Errorf("target brokers: got %q, want %q", got, want)
				}
			},
		},
		{
			name:    "MM2 file: unknown flow",
			args:    []string{"--mm2-config", mm2Path, "--flow", "East->west"},
			wantErr: `did you mean "east"`,
		},
		{
			name:    "MM2 file missing",
			args:    []string{"--mm2-config", filepath.Join(t.TempDir(), "nope.properties")},
			wantErr: "--mm2-config",
		},
		{
			name: "SASL and TLS flags imply SASL_SSL",
			args: []string{"--source-brokers", "a:1", "--target-brokers", "b:1", "--source-sasl-user", "u",
				"--source-sasl-password-file", pwFile, "--source-sasl-mechanism", "scram-sha-256", "--source-tls-insecure-skip-verify"},
			check: func(t *testing.T, c *Conn) {
				s := c.Source.Security
				if s.Protocol != "SASL_SSL" || s.SASLMechanism != "SCRAM-SHA-256" || s.SASLPassword.Reveal() != secretPW {
					t.Errorf("source security: got protocol %s mechanism %s, password from file %v; want SASL_SSL SCRAM-SHA-256 true",
						s.Protocol, s.SASLMechanism, s.SASLPassword.Reveal() == secretPW)
				}
				if c.Target.Security.Protocol != "PLAINTEXT" {
					t.Errorf("target protocol: got %s, want PLAINTEXT", c.Target.Security.Protocol)
				}
			},
		},
		{
			name:    "password env not set",
			args:    []string{"--source-brokers", "a:1", "--target-brokers", "b:1", "--source-sasl-user", "u", "--source-sasl-password-env", "KMIGRATE_TEST_UNSET_PW"},
			wantErr: "KMIGRATE_TEST_UNSET_PW is not set",
		},
		{
			name:    "password given instead of a variable name",
			args:    []string{"--source-brokers", "a:1", "--target-brokers", "b:1", "--source-sasl-user", "u", "--source-sasl-password-env", "pass word"},
			wantErr: "NAME of an environment variable",
		},
		{
			name:    "SASL user without password",
			args:    []string{"--source-brokers", "a:1", "--target-brokers", "b:1", "--source-sasl-user", "u"},
			wantErr: "has no password",
		},
		{
			name:    "bad protocol",
			args:    []string{"--source-brokers", "a:1", "--target-brokers", "b:1", "--target-security-protocol", "TLS"},
			wantErr: "--target-security-protocol",
		},
		{
			name:    "cert without key",
			args:    []string{"--source-brokers", "a:1", "--target-brokers", "b:1", "--target-tls-cert", "c.pem"},
			wantErr: "go together",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			for k, v := range tt.env {
				t.Setenv(k, v)
			}
			conn, err := runConnect(t, tt.args...)
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("Connect: got %v, want an error containing %q", err, tt.wantErr)
				}
				if strings.Contains(err.Error(), secretPW) {
					t.Fatalf("error reveals the password: %v", err)
				}
				var ec *ExitCoder
				if !asExit(err, &ec) || ec.Code != ExitError {
					t.Fatalf("Connect error: got %T, want *ExitCoder with code %d", err, ExitError)
				}
				return
			}
			if err != nil {
				t.Fatalf("Connect: %v", err)
			}
			tt.check(t, conn)
		})
	}
}

func asExit(err error, ec **ExitCoder) bool {
	e, ok := err.(*ExitCoder)
	*ec = e
	return ok
}

// TestConnNeverShowsPasswords prints a resolved Conn every way a log or report might.
func TestConnNeverShowsPasswords(t *testing.T) {
	jks := writeTemp(t, "t.jks", "x")
	t.Setenv("KMIGRATE_TEST_TRUST_PW", "trust-"+secretPW)
	mm2Path := writeTemp(t, "mm2.properties", mm2File+"west.ssl.keystore.password="+secretPW+"\nwest.ssl.key.password="+secretPW+"\nwest.producer.sasl.jaas.config=x password=\""+secretPW+"\";\nsasl.jaas.config=org.apache.kafka.common.security.plain.PlainLoginModule required username=\"g\" password=\""+secretPW+"\";\n")
	conn, err := runConnect(t, "--mm2-config", mm2Path, "--source-tls-truststore", jks, "--source-tls-truststore-password-env", "KMIGRATE_TEST_TRUST_PW")
	if err != nil {
		t.Fatalf("Connect: %v", err)
	}
	if conn.Target.Security.SASLPassword.Reveal() != secretPW || conn.Source.Security.TruststorePassword.Reveal() != "trust-"+secretPW {
		t.Fatalf("passwords were not loaded; the test would prove nothing")
	}
	js, err := json.Marshal(conn)
	if err != nil {
		t.Fatalf("json: %v", err)
	}
	outputs := map[string]string{
		"%v conn":     fmt.Sprintf("%v", conn),
		"%+v conn":    fmt.Sprintf("%+v", *conn),
		"%#v conn":    fmt.Sprintf("%#v", *conn),
		"%v source":   fmt.Sprintf("%v", *conn.Source),
		"%+v target":  fmt.Sprintf("%+v", *conn.Target),
		"%#v target":  fmt.Sprintf("%#v", *conn.Target),
		"%+v flow":    fmt.Sprintf("%+v", *conn.Flow),
		"%+v config":  fmt.Sprintf("%+v", *conn.Config),
		"%+v cluster": fmt.Sprintf("%+v", conn.Config.Cluster),
		"json":        string(js),
	}
	for name, out := range outputs {
		if strings.Contains(out, secretPW) {
			t.Errorf("%s shows a password: %s", name, out)
		}
	}
	if !strings.Contains(outputs["%+v target"], "[redacted]") {
		t.Errorf("%%+v target: got %s, want [redacted] in place of the password", outputs["%+v target"])
	}
}
