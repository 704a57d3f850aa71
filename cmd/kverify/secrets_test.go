package main

import (
	"path/filepath"
	"strings"
	"testing"

	"github.com/twmb/franz-go/pkg/kfake"

	"github.com/kmigrate/kmigrate/cmd/internal/clikit"
	"github.com/kmigrate/kmigrate/cmd/internal/clitest"
	"github.com/kmigrate/kmigrate/internal/testkit"
)

// TestSecretsNeverShown runs kverify diff on mm2.properties files full of secrets, good and
// broken, and greps stdout, stderr and the report and offset map files for any six
// characters of a secret.
func TestSecretsNeverShown(t *testing.T) {
	src, srcSeeds := clitest.Cluster(t)
	dst, dstSeeds := clitest.Cluster(t)
	const topic = "leak-1"
	testkit.CreateTopic(t, src, topic, 1, nil)
	testkit.CreateTopic(t, dst, topic, 1, nil)
	testkit.Produce(t, src, topic, 0, recs(0, 9)...)
	testkit.Produce(t, dst, topic, 0, recs(0, 9)...)
	good, goodSecrets := clitest.SecretsGood(srcSeeds, dstSeeds)
	goodPath := clitest.WriteFile(t, "mm2.properties", good)

	diff := func(t *testing.T, path string, wantCode int, secrets []string) {
		t.Helper()
		for _, format := range []string{"table", "json"} {
			dir := t.TempDir()
			code, out, errOut := clitest.Run(t, app(), "kverify", "diff", "--mm2-config", path, "--topic", topic,
				"--format", format, "--out", filepath.Join(dir, "report"), "--offset-map", filepath.Join(dir, "map.json"))
			if code != wantCode {
				t.Errorf("diff --format %s: got exit %d, want %d; stderr %q", format, code, wantCode, errOut)
			}
			outs := clitest.Outputs{"diff stdout": out, "diff stderr": errOut}
			outs.AddFiles(t, dir)
			clitest.NoSecrets(t, secrets, outs)
		}
	}
	t.Run("good file", func(t *testing.T) { diff(t, goodPath, clikit.ExitOK, goodSecrets) })
	for _, sc := range clitest.SecretCases {
		t.Run(sc.Name, func(t *testing.T) {
			diff(t, clitest.WriteSecretCase(t, sc, srcSeeds, dstSeeds), clikit.ExitError, sc.Secrets)
		})
	}
}

// TestAuthFailedNamesUser: kverify diff with a wrong SASL password says "authentication
// failed" with the user, the mechanism and the cluster alias, through the flags and through
// the MM2 file, and never shows the password.
func TestAuthFailedNamesUser(t *testing.T) {
	t.Parallel()
	const user, wrong = "alice", "Wr0ngPassw0rd-x"
	fake := testkit.StartCluster(t, kfake.EnableSASL(), kfake.Superuser("SCRAM-SHA-256", user, "right"))
	seeds := strings.Join(fake.ListenAddrs(), ",")
	_, open := clitest.Cluster(t)
	pw := clitest.WriteFile(t, "pw", wrong+"\n")
	file := clitest.WriteFile(t, "mm2.properties", `clusters=east,west
east.bootstrap.servers=`+open+`
west.bootstrap.servers=`+seeds+`
west.security.protocol=SASL_PLAINTEXT
west.sasl.mechanism=SCRAM-SHA-256
west.sasl.jaas.config=org.apache.kafka.common.security.scram.ScramLoginModule required username="alice" password="`+wrong+`";
east->west.enabled=true
`)
	tests := []struct {
		name  string
		args  []string
		alias string
	}{
		{"flags", []string{"--source-brokers", open, "--target-brokers", seeds, "--target-sasl-mechanism", "SCRAM-SHA-256",
			"--target-sasl-user", user, "--target-sasl-password-file", pw}, "target"},
		{"mm2 file", []string{"--mm2-config", file}, "west"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			code, out, errOut := clitest.Run(t, app(), "kverify", append([]string{"diff", "--topic", "t"}, tt.args...)...)
			if code != clikit.ExitError {
				t.Fatalf("got exit %d, want %d; stderr %q", code, clikit.ExitError, errOut)
			}
			for _, want := range []string{"authentication failed", `"alice"`, "SCRAM-SHA-256", "cluster " + tt.alias} {
				if !strings.Contains(errOut, want) {
					t.Errorf("stderr: got %q, want it to contain %q", errOut, want)
				}
			}
			clitest.NoSecrets(t, []string{wrong}, clitest.Outputs{"stdout": out, "stderr": errOut})
		})
	}
}
