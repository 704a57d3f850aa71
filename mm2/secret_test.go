package mm2

import (
	"errors"
	"strings"
	"testing"
)

func TestIsSecretKey(t *testing.T) {
	t.Parallel()
	tests := []struct {
		key  string
		want bool
	}{
		{"sasl.jaas.config", true},
		{"A.sasl.jaas.config", true},
		{"A->B.producer.sasl.jaas.config", true},
		{"ssl.truststore.password", true},
		{"B.consumer.ssl.key.password", true},
		{"ssl.keystore.key", true},
		{"ssl.keystore.certificate.chain", true},
		{"ssl.keystore.location", false}, // a path, named in errors about the file
		{"ssl.keystore.type", false},
		{"schema.registry.basic.auth.user.info", true},
		{"A->B.oauth.client.secret", true},
		{"oauth.access.TOKEN", true},
		{"aws.credentials", true},
		{"my.private.key", true},
		{"A.ssl.Key.Password", true},
		{"bootstrap.servers", false},
		{"topics", false},
		{"key.converter", false},
		{"ssl.truststore.location", false},
		{"security.protocol", false},
		{"sasl.mechanism", false},
		{"offset-syncs.topic.location", false},
	}
	for _, tt := range tests {
		t.Run(tt.key, func(t *testing.T) {
			if got := IsSecretKey(tt.key); got != tt.want {
				t.Errorf("IsSecretKey(%q) = %v, want %v", tt.key, got, tt.want)
			}
		})
	}
}

// TestErrorsNeverQuoteValues: what makes a file fail, in the properties layer or in a JAAS
// config, is reported with its line and key but without any part of the value.
func TestErrorsNeverQuoteValues(t *testing.T) {
	t.Parallel()
	const head = "clusters=A,B\nA.bootstrap.servers=a:1\nB.bootstrap.servers=b:1\n"
	tests := []struct {
		name, line, secret, key string
	}{
		{"bad hex escape in a password", `B.ssl.keystore.password=Nc7vBm1q\u12zzYh4jKu9r`, `u12zzYh4`, "B.ssl.keystore.password"},
		{"short escape at the end", `B.ssl.key.password=Mp4nBv8c\u1`, `8c\u1`, "B.ssl.key.password"},
		{"bad escape in a non-secret key's value", `topics=Kq3Lr7Vw\u00g0Zz`, `\u00g0`, "topics"},
		{"bad escape in the key", `ssl.truststore.pass\u00zzword=Sx3cVb7nMq1`, `Sx3cVb`, ""},
		{"unquoted password with a blank", `A.sasl.jaas.config=org.apache.kafka.common.security.plain.PlainLoginModule required username="u" password=Dg1sFh5k Bw6nMe2t;`, `Bw6nMe2t`, "A.sasl.jaas.config"},
		{"password as the module", `A.sasl.jaas.config=Zl5kJh1gFd3 password="x";`, `Zl5kJh`, "A.sasl.jaas.config"},
		{"password as the flag", `A.sasl.jaas.config=org.apache.kafka.common.security.plain.PlainLoginModule Tr8eWq3aSx7 password="x";`, `Tr8eWq`, "A.sasl.jaas.config"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			_, err := Parse(strings.NewReader(head + tt.line + "\n"))
			if err == nil {
				t.Fatal("Parse: got no error")
			}
			if strings.Contains(err.Error(), tt.secret) {
				t.Errorf("Parse error shows %q: %v", tt.secret, err)
			}
			if !strings.Contains(err.Error(), "line 4") || !strings.Contains(err.Error(), tt.key) {
				t.Errorf("Parse error %q does not name line 4 and key %q", err, tt.key)
			}
			var le *LineError
			var ke *KeyError
			if !errors.As(err, &le) && !errors.As(err, &ke) {
				t.Errorf("Parse error is %T, want a *LineError or *KeyError", err)
			}
			fs, err := Lint(strings.NewReader(head + tt.line + "\n"))
			if err != nil {
				t.Fatalf("Lint: %v", err)
			}
			found := false
			for _, f := range fs {
				found = found || f.Line == 4 && f.Severity == SeverityError
				if strings.Contains(f.Message+f.Suggestion+f.Key, tt.secret) {
					t.Errorf("finding shows %q: %+v", tt.secret, f)
				}
			}
			if !found {
				t.Errorf("Lint: no error finding on line 4: %+v", fs)
			}
		})
	}
}

// TestLintNonASCIIOnContinuationOfSecret: a non-ASCII character on a continuation line of a
// secret is reported without showing it.
func TestLintNonASCIIOnContinuationOfSecret(t *testing.T) {
	t.Parallel()
	fs, err := Lint(strings.NewReader("clusters=A\nA.ssl.key.password=abc\\\n   d\u00e9f\ntopics=caf\u00e9\n"))
	if err != nil {
		t.Fatal(err)
	}
	var lines []int
	for _, f := range fs {
		if strings.Contains(f.Message, "non-ASCII") {
			lines = append(lines, f.Line)
			if f.Line == 3 && (strings.Contains(f.Message, "\u00e9") || f.Suggestion != "") {
				t.Errorf("finding on the secret's continuation shows its character: %+v", f)
			}
		}
	}
	if len(lines) != 2 || lines[0] != 3 || lines[1] != 4 {
		t.Errorf("non-ASCII findings on lines %v, want 3 and 4", lines)
	}
}

// TestJAASUnknownOptionWarns: an unquoted password with a blank and a "=" parses as two
// options; the second is reported, by position only.
func TestJAASUnknownOptionWarns(t *testing.T) {
	t.Parallel()
	cfg, err := Parse(strings.NewReader("clusters=A\nA.sasl.jaas.config=org.apache.kafka.common.security.plain.PlainLoginModule required username=\"u\" password=Dg1sQ Fh5kW=Bw6nMe2t;\n"))
	if err != nil {
		t.Fatal(err)
	}
	found := false
	for _, w := range cfg.Warnings {
		if w.Key == "A.sasl.jaas.config" && strings.Contains(w.Message, "option 3") {
			found = true
		}
		for _, s := range []string{"Fh5kW", "Dg1sQ", "Bw6nMe"} {
			if strings.Contains(w.Message+w.Suggestion, s) {
				t.Errorf("warning shows %q: %+v", s, w)
			}
		}
	}
	if !found {
		t.Errorf("warnings %+v: want one about option 3 of A.sasl.jaas.config", cfg.Warnings)
	}
}

// TestIsSecretKeyAnyJAAS: every key naming JAAS is secret-bearing, not only *.jaas.config
// (mirror's "not honoured" list redacted these with a rule of its own).
func TestIsSecretKeyAnyJAAS(t *testing.T) {
	t.Parallel()
	for _, k := range []string{"sasl.jaas.config", "A.listener.name.x.plain.sasl.jaas.config.extra", "producer.jaas.login"} {
		if !IsSecretKey(k) {
			t.Errorf("IsSecretKey(%q) = false, want true", k)
		}
	}
}
