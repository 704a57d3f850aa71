package mm2

import (
	"os"
	"strings"
	"testing"
)

func TestLintSeed(t *testing.T) {
	t.Parallel()
	f, err := os.Open("testdata/seed.properties")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	got, err := Lint(f)
	if err != nil {
		t.Fatalf("Lint: %v", err)
	}
	if len(got) != 1 {
		t.Fatalf("findings: got %d %+v, want 1 (offset.max.lag)", len(got), got)
	}
	if w := got[0]; w.Key != "offset.max.lag" || w.Line != 6 || w.Suggestion != "offset.lag.max" || w.Severity != SeverityError {
		t.Errorf("finding: got %+v, want an error for offset.max.lag on line 6 suggesting offset.lag.max", w)
	}
}

// clean is a file Lint finds nothing in; each case adds lines to it.
const clean = `clusters=src,dst
src.bootstrap.servers=s:9092
dst.bootstrap.servers=d:9092
src->dst.enabled=true
replication.factor=1
checkpoints.topic.replication.factor=1
heartbeats.topic.replication.factor=1
offset-syncs.topic.replication.factor=1
offset.storage.replication.factor=1
status.storage.replication.factor=1
config.storage.replication.factor=1
`

func TestLintClean(t *testing.T) {
	t.Parallel()
	got, err := Lint(strings.NewReader(clean))
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 0 {
		t.Fatalf("findings: got %+v, want none", got)
	}
}

func TestLint(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name     string
		extra    string // appended to clean (line 12 on)
		replace  [2]string
		wantKey  string
		wantLine int
		wantSev  Severity
		wantMsg  string
		wantSugg string
	}{
		{name: "misspelled key", extra: "sync.group.offset.enabled=true", wantKey: "sync.group.offset.enabled", wantLine: 12, wantSev: SeverityError, wantMsg: "ignores", wantSugg: "sync.group.offsets.enabled"},
		{name: "undeclared alias", extra: "backup->dst.enabled=true", wantKey: "backup->dst.enabled", wantLine: 12, wantSev: SeverityError, wantMsg: "not in clusters"},
		{name: "alias case", extra: "Src->dst.topics=orders", wantKey: "Src->dst.topics", wantLine: 12, wantSev: SeverityError, wantMsg: "case-sensitive", wantSugg: "src->dst.topics"},
		{name: "inline comment", extra: "src->dst.topics=orders # only orders", wantKey: "src->dst.topics", wantLine: 12, wantSev: SeverityError, wantMsg: "comment", wantSugg: "src->dst.topics=orders"},
		{name: "inline comment in a secret", extra: "src.ssl.truststore.password=pw # the pw", wantKey: "src.ssl.truststore.password", wantLine: 12, wantSev: SeverityError, wantMsg: "not shown"},
		{name: "trailing blank after true", replace: [2]string{"src->dst.enabled=true\n", "src->dst.enabled=true \n"}, wantKey: "src->dst.enabled", wantLine: 4, wantSev: SeverityWarning, wantMsg: "never starts", wantSugg: "src->dst.enabled=true"},
		{name: "Java-only regex", extra: "groups=(?!tmp).*", wantKey: "groups", wantLine: 12, wantSev: SeverityError, wantMsg: "lookaround"},
		{name: "possessive quantifier", extra: "topics=a.*+", wantKey: "topics", wantLine: 12, wantSev: SeverityError, wantMsg: "possessive"},
		{name: "regex does not compile", extra: "topics=orders(", wantKey: "topics", wantLine: 12, wantSev: SeverityError, wantMsg: "RE2"},
		{name: "glob instead of regex", extra: "topics=*orders", wantKey: "topics", wantLine: 12, wantSev: SeverityError, wantMsg: "glob", wantSugg: ".*orders"},
		{name: "comma inside a repetition", extra: "topics=t[0-9]{1,3}", wantKey: "topics", wantLine: 12, wantSev: SeverityError, wantMsg: "splits lists at commas"},
		{name: "swallowed backslash", extra: `topics=\d+`, wantKey: "topics", wantLine: 12, wantSev: SeverityError, wantMsg: "drops the backslash", wantSugg: `topics=\\d+`},
		{name: "swallowed backslash before a dot", extra: `topics=orders\.eu`, wantKey: "topics", wantLine: 12, wantSev: SeverityWarning, wantMsg: "drops the backslash", wantSugg: `topics=orders\\.eu`},
		{name: "empty list", extra: "src->dst.groups=", wantKey: "src->dst.groups", wantLine: 12, wantSev: SeverityWarning, wantMsg: "matches nothing"},
		{name: "deprecated blacklist", extra: "topics.blacklist=tmp.*", wantKey: "topics.blacklist", wantLine: 12, wantSev: SeverityInfo, wantMsg: "deprecated", wantSugg: "topics.exclude"},
		{name: "replication factor -1", replace: [2]string{"replication.factor=1\n", "replication.factor=-1\n"}, wantKey: "replication.factor", wantLine: 5, wantSev: SeverityWarning, wantMsg: "2.4"},
		{name: "replication factor missing", replace: [2]string{"heartbeats.topic.replication.factor=1\n", ""}, wantKey: "heartbeats.topic.replication.factor", wantLine: 0, wantSev: SeverityWarning, wantMsg: "fewer than 3 brokers", wantSugg: "heartbeats.topic.replication.factor=1 for a one-broker test cluster"},
		{name: "flow without bootstrap", replace: [2]string{"dst.bootstrap.servers=d:9092\n", "\n"}, wantKey: "src->dst.enabled", wantLine: 4, wantSev: SeverityError, wantMsg: "no bootstrap servers", wantSugg: "dst.bootstrap.servers=HOST:PORT"},
		{name: "no enabled flow", replace: [2]string{"src->dst.enabled=true\n", "src->dst.enabled=false\n"}, wantKey: "clusters", wantLine: 1, wantSev: SeverityWarning, wantMsg: "no flow is enabled"},
		{name: "SASL without JAAS", extra: "dst.security.protocol=SASL_SSL", wantKey: "dst.security.protocol", wantLine: 12, wantSev: SeverityError, wantMsg: "cannot log in", wantSugg: "dst.sasl.jaas.config=..."},
		{name: "non-ASCII", extra: "src->dst.topics=caf\u00e9", wantKey: "", wantLine: 12, wantSev: SeverityWarning, wantMsg: "ISO-8859-1", wantSugg: `\u00e9`},
		{name: "non-ASCII in a secret", extra: "src.ssl.truststore.password=p\u00e4ss", wantKey: "", wantLine: 12, wantSev: SeverityWarning, wantMsg: "not shown"},
		{name: "unknown policy (an error, not a stop)", extra: "replication.policy.class=Foo", wantKey: "replication.policy.class", wantLine: 12, wantSev: SeverityError, wantMsg: "not supported"},
		{name: "bad escape", extra: `topics=\u12`, wantKey: "topics", wantLine: 12, wantSev: SeverityError, wantMsg: "refuses to start"},
		{name: "duplicate key", extra: "src.bootstrap.servers=other:9092", wantKey: "src.bootstrap.servers", wantLine: 2, wantSev: SeverityWarning, wantMsg: "duplicate"},
		{name: "kmirror's commit bound", extra: "kmirror.commit.latency.max.ms=200", wantKey: "kmirror.commit.latency.max.ms", wantLine: 12, wantSev: SeverityInfo, wantMsg: "read by kmirror only"},
		{name: "kmirror's commit bound in a flow", extra: "src->dst.kmirror.commit.latency.max.ms=200", wantKey: "src->dst.kmirror.commit.latency.max.ms", wantLine: 12, wantSev: SeverityInfo, wantMsg: "MirrorMaker 2 ignores it"},
		{name: "offset flush interval against kmirror's bound", extra: "dst.offset.flush.interval.ms=1000", wantKey: "dst.offset.flush.interval.ms", wantLine: 12, wantSev: SeverityInfo, wantMsg: "kmirror ignores it: its records and its offset map commit in one transaction"},
		{name: "worker key without prefix", extra: "offset.flush.interval.ms=1000", wantKey: "offset.flush.interval.ms", wantLine: 12, wantSev: SeverityError, wantMsg: "cluster prefix", wantSugg: "dst.offset.flush.interval.ms"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			in := clean
			if tt.replace[0] != "" {
				if !strings.Contains(in, tt.replace[0]) {
					t.Fatalf("bad test: %q not in the clean file", tt.replace[0])
				}
				in = strings.Replace(in, tt.replace[0], tt.replace[1], 1)
			}
			in += tt.extra + "\n"
			got, err := Lint(strings.NewReader(in))
			if err != nil {
				t.Fatalf("Lint: %v", err)
			}
			for _, f := range got {
				if f.Key == tt.wantKey && f.Line == tt.wantLine && f.Severity == tt.wantSev && strings.Contains(f.Message, tt.wantMsg) && f.Suggestion == tt.wantSugg {
					return
				}
			}
			t.Fatalf("findings: got %+v; want one with key %q line %d severity %s message containing %q suggestion %q",
				got, tt.wantKey, tt.wantLine, tt.wantSev, tt.wantMsg, tt.wantSugg)
		})
	}
}

// TestLintKmirrorKeys: kmirror's own keys are no unknown keys: their only finding says that
// only kmirror reads them, and the flow's settings carry them.
func TestLintKmirrorKeys(t *testing.T) {
	t.Parallel()
	for _, key := range []string{KeyCommitLatency, "src->dst." + KeyCommitLatency} {
		got, err := Lint(strings.NewReader(clean + key + "=200\n"))
		if err != nil {
			t.Fatal(err)
		}
		if len(got) != 1 || got[0].Severity != SeverityInfo {
			t.Fatalf("%s: findings %+v, want one, of severity info", key, got)
		}
		cfg, err := Parse(strings.NewReader(clean + key + "=200\n"))
		if err != nil {
			t.Fatal(err)
		}
		if len(cfg.Warnings) != 0 || cfg.Flows[0].Settings[KeyCommitLatency] != "200" {
			t.Fatalf("%s: warnings %+v, flow setting %q; want none and 200", key, cfg.Warnings, cfg.Flows[0].Settings[KeyCommitLatency])
		}
	}
}

// TestLintKeepsGoing: one key that stops Parse does not hide the findings after it.
func TestLintKeepsGoing(t *testing.T) {
	t.Parallel()
	in := clean + "replication.policy.class=Foo\nsrc.security.protocol=TLS\noffset.max.lag=1\n"
	got, err := Lint(strings.NewReader(in))
	if err != nil {
		t.Fatal(err)
	}
	keys := map[string]bool{}
	for _, f := range got {
		keys[f.Key] = true
	}
	for _, k := range []string{"replication.policy.class", "src.security.protocol", "offset.max.lag"} {
		if !keys[k] {
			t.Errorf("findings: got %+v, want one for %s", got, k)
		}
	}
}

// TestLintNeverShowsSecrets: findings about secret keys never quote their values.
func TestLintNeverShowsSecrets(t *testing.T) {
	t.Parallel()
	const pw = "Zq8-hunter2-secret"
	in := clean + `src.security.protocol=SASL_SSL
src.sasl.jaas.config=org.apache.kafka.common.security.plain.PlainLoginModule required username="u" password="` + pw + `"; # inline
dst.ssl.keystore.password=` + pw + ` # inline
dst.ssl.truststore.password=` + pw + "\u00e4" + `
src.producer.ssl.key.password=` + pw + `
src->dst.sasl.jaas.config=x required password="` + pw + `";
dst.sasl.jaas.config=org.apache.kafka.common.security.plain.PlainLoginModule required password="` + pw + `
`
	got, err := Lint(strings.NewReader(in))
	if err != nil {
		t.Fatal(err)
	}
	if len(got) < 4 {
		t.Fatalf("findings: got %d %+v, want at least 4 (the test would prove nothing)", len(got), got)
	}
	for _, f := range got {
		if strings.Contains(f.Message+f.Suggestion+f.Key, "hunter2") {
			t.Errorf("finding shows a secret: %+v", f)
		}
	}
	if _, err := Parse(strings.NewReader(in)); err == nil || strings.Contains(err.Error(), "hunter2") {
		t.Errorf("Parse: got %v, want an error that does not show the secret", err)
	}
}
