package clitest

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// The secret values of the leak tests: distinctive, so that any six characters of one in an
// output can only come from the file.
var (
	secretPlain    = "Qz7xKp2mWv9"
	secretScram    = "Lr4tYb8nHc3"
	secretTrust    = "Vd5sMj1qXe6"
	secretStore    = "Gu2wNf7kPa4"
	secretKeyPass  = "Ty9hBz3rCm8"
	secretPEM      = "MIIEvQkZq8Rw3Fj5Hd"
	secretProdJAAS = "Ws6eDx1vJk7"
	secretConsKey  = "Hn3pQa8uLz2"
	secretUserInfo = "Ck5mRt9yVb1"
	secretSchema   = "Fe7jWq2sNd6"
	secretFlow     = "Xa1zUo5gTy3"
	secretToken    = "Pb8cKv4hMs9"
	secretCreds    = "Jy2dZr6wQf5"
	secretFlowProd = "Rm9tEk3bWx7"
	secretGlobal   = "Oq4vHy8nCa2"
	secretInline   = "Ug6fLs1pDj9"
	secretASCII    = "Kt3wXm7zBq4"
	secretContA    = "Ez5rGh2cYu8"
	secretContB    = "Wi8kNb4vTo1"
	secretPrivKey  = "Ap2xSd6fJl3"
	secretEscA     = "Nc7vBm1qZx5"
	secretEscB     = "Yh4jKu9rTe2"
	secretUnqA     = "Dg1sFh5kLp8"
	secretUnqB     = "Bw6nMe2tRy4"
	secretKeyLine  = "Sx3cVb7nMq1"
	secretQuote    = "Iu9oPa4sDf6"
	secretModule   = "Zl5kJh1gFd3"
	secretModFlag  = "Tr8eWq3aSx7"
	secretShortEsc = "Mp4nBv8cXz2"
)

// SecretsGood is an mm2.properties file that parses and runs (both clusters PLAINTEXT, so the
// credentials are read but not used), with a secret in every kind of secret-bearing key:
// passwords, JAAS configs, PEM keys, basic.auth.user.info, *secret*, *token*, *credentials*,
// ssl.key*, *.key, per-client and per-flow prefixes, an inline comment, a non-ASCII
// character and a continuation line. Format it with the source and target seeds.
const secretsGoodTemplate = `clusters=A,B
A.bootstrap.servers=%s
B.bootstrap.servers=%s
A->B.enabled=true
A->B.topics=leak-.*
replication.policy.class=org.apache.kafka.connect.mirror.IdentityReplicationPolicy
replication.factor=1
offset-syncs.topic.replication.factor=1
checkpoints.topic.replication.factor=1
A.sasl.jaas.config=org.apache.kafka.common.security.plain.PlainLoginModule required username="mirror" password="` + "%s" + `";
B.sasl.jaas.config=org.apache.kafka.common.security.scram.ScramLoginModule required username="mirror" password="%s";
B.ssl.truststore.password=%s
B.ssl.keystore.password=%s
B.ssl.key.password=%s
B.ssl.keystore.key=-----BEGIN PRIVATE KEY-----\n%s\n-----END PRIVATE KEY-----
A.producer.sasl.jaas.config=org.apache.kafka.common.security.plain.PlainLoginModule required username="p" password="%s";
B.consumer.ssl.key.password=%s
A.admin.basic.auth.user.info=user:%s
schema.registry.basic.auth.user.info=user:%s
A->B.oauth.client.secret=%s
A->B.oauth.access.token=%s
A->B.aws.credentials=%s
A->B.producer.ssl.keystore.password=%s
sasl.jaas.config=org.apache.kafka.common.security.plain.PlainLoginModule required username="g" password="%s";
A.ssl.keystore.password=%s # inline comment
A.ssl.truststore.password=%s` + "\u00e4" + `
A.ssl.key.password=%s\
    %s` + "\u00e9" + `
A->B.my.private.key=%s
`

// SecretsGood returns the good leak-test file for the given seeds and its secret values.
func SecretsGood(srcSeeds, dstSeeds string) (string, []string) {
	secrets := []string{secretPlain, secretScram, secretTrust, secretStore, secretKeyPass, secretPEM,
		secretProdJAAS, secretConsKey, secretUserInfo, secretSchema, secretFlow, secretToken, secretCreds,
		secretFlowProd, secretGlobal, secretInline, secretASCII, secretContA, secretContB, secretPrivKey}
	args := []any{srcSeeds, dstSeeds}
	for _, s := range secrets {
		args = append(args, s)
	}
	return fmt.Sprintf(secretsGoodTemplate, args...), secrets
}

// SecretCase is a broken mm2.properties file with secrets in it: every tool must refuse it
// (or, for kmirror lint, report it) without showing any part of a secret.
type SecretCase struct {
	Name    string
	File    string   // the whole file, with %[1]s and %[2]s for the source and target seeds
	Secrets []string // the raw secret texts of the file
}

const secretsHeader = `clusters=A,B
A.bootstrap.servers=%[1]s
B.bootstrap.servers=%[2]s
A->B.enabled=true
`

// SecretCases are the broken files of the leak tests.
var SecretCases = []SecretCase{
	{"unquoted JAAS password with a blank", secretsHeader + `A.sasl.jaas.config=org.apache.kafka.common.security.plain.PlainLoginModule required username="mirror" password=` + secretUnqA + ` ` + secretUnqB + `;
`, []string{secretUnqA, secretUnqB}},
	{"bad \\u escape inside a secret", secretsHeader + `B.ssl.keystore.password=` + secretEscA + `\u12zz` + secretEscB + `
`, []string{secretEscA, `\u12zz` + secretEscB}},
	{"short \\u escape at the end of a secret", secretsHeader + `B.ssl.key.password=` + secretShortEsc + `\u1
`, []string{secretShortEsc + `\u1`}},
	{"bad \\u escape in the key of a secret line", secretsHeader + `B.ssl.truststore.pass\u00zzword=` + secretKeyLine + `
`, []string{secretKeyLine}},
	{"unterminated quote in a JAAS password", secretsHeader + `A.sasl.jaas.config=org.apache.kafka.common.security.plain.PlainLoginModule required username="mirror" password="` + secretQuote + `
`, []string{secretQuote}},
	{"JAAS config that is only a password", secretsHeader + `A.sasl.jaas.config=` + secretModule + `
`, []string{secretModule}},
	{"JAAS login module that is a password", secretsHeader + `A.security.protocol=SASL_PLAINTEXT
A.sasl.mechanism=PLAIN
A.sasl.jaas.config=` + secretModFlag + ` required username="mirror";
`, []string{secretModFlag}},
}

// WriteSecretCase writes the file of sc for the given seeds and returns its path.
func WriteSecretCase(t *testing.T, sc SecretCase, srcSeeds, dstSeeds string) string {
	t.Helper()
	return WriteFile(t, "mm2.properties", fmt.Sprintf(sc.File, srcSeeds, dstSeeds))
}

// Outputs collects what a command showed: its stdout and stderr, and the files it wrote.
type Outputs map[string]string

// AddFiles adds every regular file under dir to o.
func (o Outputs) AddFiles(t *testing.T, dir string) {
	t.Helper()
	err := filepath.WalkDir(dir, func(path string, d os.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		data, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		o[path] = string(data)
		return nil
	})
	if err != nil {
		t.Fatalf("read outputs under %s: %v", dir, err)
	}
}

// NoSecrets fails the test for every output that contains a secret or any six consecutive
// characters of one.
func NoSecrets(t *testing.T, secrets []string, outs Outputs) {
	t.Helper()
	const frag = 6
	for name, out := range outs {
		for _, s := range secrets {
			for i := 0; i+frag <= len(s); i++ {
				if f := s[i : i+frag]; strings.Contains(out, f) {
					t.Errorf("%s shows %q, a part of the secret %q:\n%s", name, f, s, out)
					break
				}
			}
		}
	}
}
