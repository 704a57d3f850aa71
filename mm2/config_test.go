package mm2

import (
	"errors"
	"strings"
	"testing"

	"github.com/kmigrate/kmigrate/kconn"
)

func mustParse(t *testing.T, in string) *Config {
	t.Helper()
	cfg, err := Parse(strings.NewReader(in))
	if err != nil {
		t.Fatalf("Parse: %v", err)
	}
	return cfg
}

func mustFlow(t *testing.T, cfg *Config, name string) *Flow {
	t.Helper()
	f, err := cfg.Flow(name)
	if err != nil {
		t.Fatalf("Flow(%q): %v", name, err)
	}
	return f
}

func TestParseClusters(t *testing.T) {
	t.Parallel()
	cfg := mustParse(t, `clusters = a , b
bootstrap.servers = shared:9092
security.protocol = SASL_SSL
sasl.mechanism = SCRAM-SHA-256
sasl.jaas.config = org.apache.kafka.common.security.scram.ScramLoginModule required \
    username="global" password="g\\\"pw";
a.bootstrap.servers = a1:9092, a2:9092
a.security.protocol = ssl
a.ssl.truststore.location = /etc/a/trust.jks
a.ssl.truststore.password = tpw
a.ssl.keystore.type = PKCS12
a.ssl.keystore.location = /etc/a/key.p12
a.ssl.keystore.password = kpw
a.ssl.key.password = keypw
a.ssl.endpoint.identification.algorithm =
a.producer.linger.ms = 5
a.consumer.fetch.min.bytes = 1000
a.admin.request.timeout.ms = 9000
b.ssl.truststore.type = PEM
b.ssl.truststore.location = /etc/b/ca.pem
b.ssl.keystore.type = PEM
b.ssl.keystore.certificate.chain = -----BEGIN CERTIFICATE-----
b.ssl.keystore.key = -----BEGIN PRIVATE KEY-----
`)
	if got, want := strings.Join(cfg.Clusters, ","), "a,b"; got != want {
		t.Fatalf("clusters: got %q, want %q", got, want)
	}
	a, b := cfg.Cluster["a"], cfg.Cluster["b"]
	checks := []struct {
		name      string
		got, want any
	}{
		{"a bootstrap", strings.Join(a.Bootstrap, ","), "a1:9092,a2:9092"},
		{"b bootstrap (global)", strings.Join(b.Bootstrap, ","), "shared:9092"},
		{"a protocol (prefixed wins)", a.Security.Protocol, "SSL"},
		{"b protocol (global)", b.Security.Protocol, "SASL_SSL"},
		{"b mechanism", b.Security.SASLMechanism, "SCRAM-SHA-256"},
		{"b user", b.Security.SASLUser, "global"},
		{"b password (quoted, escaped)", b.Security.SASLPassword.Reveal(), `g"pw`},
		{"b login module", b.Security.SASLLoginModule, kconn.ScramLoginModule},
		{"a truststore", a.Security.TruststoreFile, "/etc/a/trust.jks"},
		{"a truststore password", a.Security.TruststorePassword.Reveal(), "tpw"},
		{"a keystore", a.Security.KeystoreFile, "/etc/a/key.p12"},
		{"a keystore type", a.Security.KeystoreType, "PKCS12"},
		{"a keystore password", a.Security.KeystorePassword.Reveal(), "kpw"},
		{"a key password", a.Security.KeyPassword.Reveal(), "keypw"},
		{"a skips host names", a.Security.SkipHostnameCheck, true},
		{"b checks host names", b.Security.SkipHostnameCheck, false},
		{"b PEM truststore", b.Security.CAFile, "/etc/b/ca.pem"},
		{"b inline cert", b.Security.CertPEM, "-----BEGIN CERTIFICATE-----"},
		{"b inline key", b.Security.KeyPEM.Reveal(), "-----BEGIN PRIVATE KEY-----"},
		{"a producer", a.Producer["linger.ms"], "5"},
		{"a consumer", a.Consumer["fetch.min.bytes"], "1000"},
		{"a admin", a.Admin["request.timeout.ms"], "9000"},
	}
	for _, c := range checks {
		if c.got != c.want {
			t.Errorf("%s: got %v, want %v", c.name, c.got, c.want)
		}
	}
	if len(cfg.Warnings) != 0 {
		t.Errorf("warnings: got %+v, want none", cfg.Warnings)
	}
}

func TestParseErrors(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name     string
		in       string
		wantKey  string
		wantLine int
		wantMsg  string
	}{
		{"no clusters", "a.bootstrap.servers=x:1", "clusters", 0, "missing"},
		{"empty alias", "clusters=a,,b", "clusters", 1, "empty alias"},
		{"alias twice", "clusters=a,a", "clusters", 1, "twice"},
		{"bad protocol", "clusters=a,b\na.security.protocol=TLS", "a.security.protocol", 2, "PLAINTEXT, SSL"},
		{"bad mechanism", "clusters=a,b\nsasl.mechanism=MD5", "sasl.mechanism", 2, "SCRAM-SHA-256"},
		{"JAAS without semicolon", "clusters=a,b\na.sasl.jaas.config=org.apache.kafka.common.security.plain.PlainLoginModule required username=\"u\" password=\"hunter2\"", "a.sasl.jaas.config", 2, `missing ";"`},
		{"JAAS bad flag", "clusters=a,b\na.sasl.jaas.config=org.apache.kafka.common.security.plain.PlainLoginModule needed password=hunter2;", "a.sasl.jaas.config", 2, "control flag"},
		{"JAAS unterminated quote", "clusters=a,b\na.sasl.jaas.config=x required password=\"hunter2;", "a.sasl.jaas.config", 2, "unterminated"},
		{"unknown policy", "clusters=a,b\na->b.enabled=true\nreplication.policy.class=com.example.MyPolicy", "replication.policy.class", 3, "not supported"},
		{"flow-prefixed policy", "clusters=a,b\na->b.enabled=true\na->b.replication.policy.class=Legacy", "a->b.replication.policy.class", 3, "not supported"},
		{"bad location", "clusters=a,b\na->b.enabled=true\noffset-syncs.topic.location=Target", "offset-syncs.topic.location", 3, "source or target"},
		{"bad regex", "clusters=a,b\na->b.enabled=true\na->b.topics=orders(", "a->b.topics", 3, "RE2"},
		{"Java-only regex", "clusters=a,b\na->b.enabled=true\ngroups.exclude=(?!keep).*", "groups.exclude", 3, "lookaround"},
		{"enabled with a comment", "clusters=a,b\na->b.enabled=true # later", "a->b.enabled", 2, "true or false"},
		{"enabled yes", "clusters=a,b\na->b.enabled=yes", "a->b.enabled", 2, "true or false"},
		{"bad boolean", "clusters=a,b\na->b.enabled=true\nreplication.policy.internal.topic.separator.enabled=yes", "replication.policy.internal.topic.separator.enabled", 3, "true or false"},
		{"empty broker", "clusters=a,b\na.bootstrap.servers=x:1,,y:2", "a.bootstrap.servers", 2, "empty broker"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := Parse(strings.NewReader(tt.in))
			var ke *KeyError
			if !errors.As(err, &ke) {
				t.Fatalf("Parse: got %v, want a KeyError", err)
			}
			if ke.Key != tt.wantKey || ke.Line != tt.wantLine || !strings.Contains(err.Error(), tt.wantMsg) {
				t.Fatalf("Parse: got key %q line %d %q, want key %q line %d containing %q", ke.Key, ke.Line, err, tt.wantKey, tt.wantLine, tt.wantMsg)
			}
			if strings.Contains(err.Error(), "hunter2") {
				t.Fatalf("error reveals the password: %v", err)
			}
		})
	}
}

func TestParseFlows(t *testing.T) {
	t.Parallel()
	cfg := mustParse(t, `clusters=a,b,c
topics=orders, payments\..*
topics.exclude=.*\\.tmp
groups=g.*
groups.blacklist=g-old.*
a->b.enabled=true
a->b.topics=orders
a->b.topics.blacklist=ignored-because-global-exclude-wins
b->c.enabled=TRUE
b->c.groups.exclude=
b->c.topics=
c->a.enabled=false
c->a.sync.group.offsets.enabled=true
`)
	ab, bc, ca := mustFlow(t, cfg, "a->b"), mustFlow(t, cfg, "b->c"), mustFlow(t, cfg, "c->a")
	if got := len(cfg.Flows); got != 3 {
		t.Fatalf("flows: got %d, want 3", got)
	}
	if !ab.Enabled || !bc.Enabled || ca.Enabled {
		t.Errorf("enabled: got a->b %v b->c %v c->a %v, want true true false", ab.Enabled, bc.Enabled, ca.Enabled)
	}
	topics := []struct {
		flow  *Flow
		topic string
		want  bool
	}{
		{ab, "orders", true},
		{ab, "orders2", false},     // anchored like Java's matches()
		{ab, "xorders", false},     // anchored at the start too
		{ab, "payments.eu", false}, // the flow's topics win over the global ones
		{ca, "payments.eu", true},
		{ca, "orders", true},
		{ca, "payments.eu.tmp", false}, // global exclude
		{ca, "__consumer_offsets", false},
		{ca, "mm2-offset-syncs.a.internal", false},
		{ca, "x-internal", false},
		{ca, ".hidden", false},
		{ca, "heartbeats", true},    // always mirrored, like MM2
		{ca, "a.heartbeats", false}, // came from the target: a cycle
		{ca, "b.heartbeats", true},
		{ca, "a.orders", false}, // a topic from the target (a): a cycle
		{bc, "orders", false},   // empty list matches nothing
	}
	for _, tt := range topics {
		if got := tt.flow.TopicMatches(tt.topic); got != tt.want {
			t.Errorf("%s TopicMatches(%q): got %v, want %v", tt.flow.Name(), tt.topic, got, tt.want)
		}
		if ok, why := tt.flow.TopicMirrored(tt.topic); ok != tt.want || (why == "") != ok || !ok && !strings.Contains(why, "flow "+tt.flow.Name()) {
			t.Errorf("%s TopicMirrored(%q): got %v %q, want %v, and a reason naming the flow when not mirrored", tt.flow.Name(), tt.topic, ok, why, tt.want)
		}
	}
	groups := []struct {
		flow  *Flow
		group string
		want  bool
	}{
		{ab, "g1", true},
		{ab, "g-old1", false}, // groups.blacklist read when groups.exclude is absent
		{ab, "h1", false},
		{bc, "g-old1", true}, // flow's empty exclude list wins
	}
	for _, tt := range groups {
		if got := tt.flow.GroupMatches(tt.group); got != tt.want {
			t.Errorf("%s GroupMatches(%q): got %v, want %v", tt.flow.Name(), tt.group, got, tt.want)
		}
	}
	if got, want := strings.Join(ab.TopicsExclude, ","), `.*\.tmp`; got != want {
		t.Errorf("a->b topics.exclude: got %q, want %q (topics.exclude wins over any topics.blacklist)", got, want)
	}
	if got, want := ca.Settings["sync.group.offsets.enabled"], "true"; got != want {
		t.Errorf("c->a settings: got %q, want %q", got, want)
	}
	if got, want := ab.Settings["topics"], "orders"; got != want {
		t.Errorf("a->b settings topics: got %q, want %q", got, want)
	}
	if _, err := cfg.Flow(""); err == nil || !strings.Contains(err.Error(), "2 enabled flows") {
		t.Errorf(`Flow(""): got %v, want an error about 2 enabled flows`, err)
	}
	// A declared pair no key names is built from the globals.
	if f := mustFlow(t, cfg, "b->a"); f.Enabled || !f.TopicMatches("orders") {
		t.Errorf("b->a: got enabled %v, orders matched %v; want false, true", f.Enabled, f.TopicMatches("orders"))
	}
	for _, name := range []string{"a->x", "A->b", "a-b", "a->a"} {
		if _, err := cfg.Flow(name); err == nil {
			t.Errorf("Flow(%q): got no error", name)
		}
	}
}

func TestEnabledNeedsAHerder(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name, keys string
		want       bool
	}{
		{"true", "a->b.enabled=true", true},
		{"TRUE", "a->b.enabled=TRUE", true},
		{"trailing blank, heartbeats on", "a->b.enabled=true ", true},
		{"trailing blank, heartbeats off", "a->b.enabled=true \nemit.heartbeats.enabled=false", false},
		{"trailing blank, flow heartbeats off", "a->b.enabled=true \na->b.emit.heartbeats.enabled=false", false},
		{"heartbeats off", "a->b.enabled=true\nemit.heartbeats.enabled=false", true},
		{"false", "a->b.enabled=false", false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := mustFlow(t, mustParse(t, "clusters=a,b\n"+tt.keys+"\n"), "a->b")
			if f.Enabled != tt.want {
				t.Fatalf("enabled: got %v, want %v", f.Enabled, tt.want)
			}
		})
	}
}

func TestDefaults(t *testing.T) {
	t.Parallel()
	cfg := mustParse(t, "clusters=src,dst\nsrc->dst.enabled=true\n")
	f := mustFlow(t, cfg, "")
	cases := []struct {
		name, got, want string
	}{
		{"policy", f.Policy.Name(), DefaultPolicyClass},
		{"target topic", f.TargetTopic("orders"), "src.orders"},
		{"offset syncs (on source, named after target)", f.OffsetSyncsTopic(), "mm2-offset-syncs.dst.internal"},
		{"checkpoints", f.CheckpointsTopic(), "src.checkpoints.internal"},
		{"heartbeats", f.HeartbeatsTopic(), "heartbeats"},
		{"location", f.OffsetSyncsLocation, "source"},
	}
	for _, c := range cases {
		if c.got != c.want {
			t.Errorf("%s: got %q, want %q", c.name, c.got, c.want)
		}
	}
	matches := map[string]bool{
		"orders": true, "connect-configs": true, "x.internal": false, "x-internal": false, "x.replica": false, "__x": false,
	}
	for topic, want := range matches {
		if got := f.TopicMatches(topic); got != want {
			t.Errorf("TopicMatches(%q): got %v, want %v", topic, got, want)
		}
	}
	groups := map[string]bool{"app": true, "console-consumer-123": false, "connect-mm2": false, "__x": false}
	for g, want := range groups {
		if got := f.GroupMatches(g); got != want {
			t.Errorf("GroupMatches(%q): got %v, want %v", g, got, want)
		}
	}
	// NewFlow gives the same defaults as a file that sets nothing.
	nf := NewFlow("src", "dst", nil)
	if nf.OffsetSyncsTopic() != f.OffsetSyncsTopic() || nf.TargetTopic("t") != f.TargetTopic("t") || !nf.GroupMatches("app") || nf.GroupMatches("connect-x") {
		t.Errorf("NewFlow defaults differ from Parse's")
	}
	// A Flow built by hand still filters.
	hand := &Flow{Source: "s", Target: "t", Topics: []string{"a.*"}, Separator: "."}
	if !hand.TopicMatches("abc") || hand.TopicMatches("bcd") {
		t.Errorf("hand-built flow: got abc %v bcd %v, want true false", hand.TopicMatches("abc"), hand.TopicMatches("bcd"))
	}
}

func TestPolicies(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name                              string
		keys                              string
		wantPolicy                        string
		wantTarget, wantSyncs, wantChecks string
		wantHeartbeat                     string
	}{
		{"default, custom separator", "replication.policy.separator=_", DefaultPolicyClass, "src_orders", "mm2-offset-syncs_dst_internal", "src_checkpoints_internal", "src_heartbeats"},
		{"separator not for internal topics", "replication.policy.separator=_\nreplication.policy.internal.topic.separator.enabled=false", DefaultPolicyClass, "src_orders", "mm2-offset-syncs.dst.internal", "src.checkpoints.internal", "src_heartbeats"},
		{"identity, full class name", "replication.policy.class=" + IdentityPolicyClass, IdentityPolicyClass, "orders", "mm2-offset-syncs.dst.internal", "src.checkpoints.internal", "src.heartbeats"},
		{"identity, simple name, flow-prefixed", "src->dst.replication.policy.class=IdentityReplicationPolicy", IdentityPolicyClass, "orders", "mm2-offset-syncs.dst.internal", "src.checkpoints.internal", "src.heartbeats"},
		{"identity with separator and syncs on target", "replication.policy.class=IdentityReplicationPolicy\nreplication.policy.separator=-\noffset-syncs.topic.location=target", IdentityPolicyClass, "orders", "mm2-offset-syncs-src-internal", "src-checkpoints-internal", "src-heartbeats"},
		{"default, simple name", "replication.policy.class=DefaultReplicationPolicy", DefaultPolicyClass, "src.orders", "mm2-offset-syncs.dst.internal", "src.checkpoints.internal", "src.heartbeats"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cfg := mustParse(t, "clusters=src,dst\nsrc->dst.enabled=true\n"+tt.keys+"\n")
			f := mustFlow(t, cfg, "src->dst")
			for _, c := range []struct{ what, got, want string }{
				{"policy", f.Policy.Name(), tt.wantPolicy},
				{"target topic", f.TargetTopic("orders"), tt.wantTarget},
				{"offset syncs", f.OffsetSyncsTopic(), tt.wantSyncs},
				{"checkpoints", f.CheckpointsTopic(), tt.wantChecks},
				{"heartbeats on target", f.TargetTopic("heartbeats"), tt.wantHeartbeat},
			} {
				if c.got != c.want {
					t.Errorf("%s: got %q, want %q", c.what, c.got, c.want)
				}
			}
			simple := !strings.Contains(tt.keys, "class=org.") && strings.Contains(tt.keys, "class=")
			switch {
			case simple && (len(cfg.Warnings) != 1 || !strings.HasPrefix(cfg.Warnings[0].Suggestion, "org.apache.kafka.connect.mirror.")):
				t.Errorf("warnings: got %+v, want one suggesting the full class name (MM2 cannot load a simple name)", cfg.Warnings)
			case !simple && len(cfg.Warnings) != 0:
				t.Errorf("warnings: got %+v, want none", cfg.Warnings)
			}
		})
	}
}

func TestWarnings(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name     string
		line     string // line 3 of the file, after clusters and an enabled flow
		wantKey  string
		wantSugg string
		wantMsg  string
	}{
		{"reordered words", "offset.max.lag=1", "offset.max.lag", "offset.lag.max", "ignores"},
		{"typo", "sync.group.offset.enabled=true", "sync.group.offset.enabled", "sync.group.offsets.enabled", "ignores"},
		{"typo in a flow key", "source->target.emit.checkpoint.enabled=true", "source->target.emit.checkpoint.enabled", "source->target.emit.checkpoints.enabled", "unknown key"},
		{"typo in a cluster key", "source.bootstrap.server=x:1", "source.bootstrap.server", "source.bootstrap.servers", "cluster source"},
		{"alias case in a flow", "Source->target.enabled=true", "Source->target.enabled", "source->target.enabled", "case-sensitive"},
		{"alias case in a cluster key", "Target.bootstrap.servers=x:1", "Target.bootstrap.servers", "target.bootstrap.servers", "case-sensitive"},
		{"undeclared alias in a flow", "backup->target.enabled=true", "backup->target.enabled", "", `"backup" is not in clusters`},
		{"undeclared alias in a cluster key", "backup.bootstrap.servers=x:1", "backup.bootstrap.servers", "", `"backup" is not in clusters`},
		{"worker key without prefix", "offset.flush.interval.ms=1000", "offset.flush.interval.ms", "target.offset.flush.interval.ms", "cluster prefix"},
		{"producer key without prefix", "producer.linger.ms=5", "producer.linger.ms", "", "unprefixed producer."},
		{"connector key after a cluster prefix", "source.topics=orders", "source.topics", "", "ignores it as a flow setting"},
		{"not a 3.7.1 key", "heartbeats.topic.name=hb", "heartbeats.topic.name", "", "ignores"},
		{"mechanism in lower case", "target.sasl.mechanism=scram-sha-256", "target.sasl.mechanism", "target.sasl.mechanism=SCRAM-SHA-256", "case-sensitively"},
		{"per-client secret", "source.producer.ssl.key.password=x", "source.producer.ssl.key.password", "source.ssl.key.password", "per-client secrets"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cfg := mustParse(t, "clusters=source,target\nsource->target.enabled=true\n"+tt.line+"\n")
			if len(cfg.Warnings) != 1 {
				t.Fatalf("warnings: got %d %+v, want 1", len(cfg.Warnings), cfg.Warnings)
			}
			w := cfg.Warnings[0]
			if w.Line != 3 || w.Key != tt.wantKey || w.Suggestion != tt.wantSugg || !strings.Contains(w.Message, tt.wantMsg) {
				t.Fatalf("warning: got line %d key %q suggestion %q message %q; want line 3 key %q suggestion %q message containing %q",
					w.Line, w.Key, w.Suggestion, w.Message, tt.wantKey, tt.wantSugg, tt.wantMsg)
			}
		})
	}
}

func TestKnownKeysDoNotWarn(t *testing.T) {
	t.Parallel()
	cfg := mustParse(t, `clusters=source,target
source->target.enabled=true
source->target.producer.override.linger.ms=5
source->target.consumer.max.poll.records=500
source->target.tasks.max=4
target.offset.flush.interval.ms=1000
target.producer.compression.type=zstd
target.client.id=mm2
offset.storage.topic=mm2-offsets
key.converter=org.apache.kafka.connect.converters.ByteArrayConverter
config.properties.exclude=follower\.replication\.throttled\.replicas
sync.topic.acls.enabled=false
emit.heartbeats.interval.seconds=5
transforms=x
transforms.x.type=org.example.X
offset.lag.max=0
dedicated.mode.enable.internal.rest=true
tasks.max=2
`)
	if len(cfg.Warnings) != 0 {
		t.Fatalf("warnings: got %+v, want none", cfg.Warnings)
	}
}

func TestSuggest(t *testing.T) {
	t.Parallel()
	cands := globalCandidates()
	tests := []struct{ key, want string }{
		{"offset.max.lag", "offset.lag.max"},
		{"refresh.topic.enabled", "refresh.topics.enabled"},
		{"topics.exlude", "topics.exclude"},
		{"intervals.seconds.refresh.groups", "refresh.groups.interval.seconds"},
		{"totally.unrelated.thing", ""},
		{"x", ""},
	}
	for _, tt := range tests {
		if got := suggest(tt.key, cands); got != tt.want {
			t.Errorf("suggest(%q): got %q, want %q", tt.key, got, tt.want)
		}
	}
}
