package mm2

import (
	"fmt"
	"os"
	"sort"
	"strings"
	"testing"
	"unicode/utf16"
)

// oracleJava asks MirrorMaker 2 3.7.1's own classes what they make of a properties file. It
// lives in MM2's package so that it can reach the package-private methods the connectors use
// (offsetSyncsTopic, shouldReplicateTopic). Output: one tab-separated fact per line, the same
// lines TestAgainstMM2 derives from Parse.
const oracleJava = `package org.apache.kafka.connect.mirror;

import java.nio.file.*;
import java.time.Duration;
import java.util.*;
import org.apache.kafka.common.config.ConfigException;
import org.apache.kafka.common.utils.Utils;

public class KmigrateOracle {
    public static void main(String[] args) throws Exception {
        List<String> topics = Files.readAllLines(Paths.get(args[0]));
        List<String> groups = Files.readAllLines(Paths.get(args[1]));
        List<String> configProps = Files.readAllLines(Paths.get(args[2]));
        for (int i = 3; i < args.length; i++) {
            if (args[i].startsWith("probe:")) { // one periodic task per line: task|key=value|...
                // The connector configs of flow a->b, to which each probe adds its keys as
                // MirrorMakerConfig passes top-level keys on to the connectors.
                MirrorMakerConfig mm = new MirrorMakerConfig(Collections.singletonMap("clusters", "a,b"));
                SourceAndTarget sat = new SourceAndTarget("a", "b");
                Map<String, String> source = mm.connectorBaseConfig(sat, MirrorSourceConnector.class);
                Map<String, String> checkpoint = mm.connectorBaseConfig(sat, MirrorCheckpointConnector.class);
                for (String line : Files.readAllLines(Paths.get(args[i].substring(6)))) {
                    String[] parts = line.split("\\|");
                    Map<String, String> keys = new HashMap<>();
                    for (int j = 1; j < parts.length; j++) {
                        String[] kv = parts[j].split("=", 2);
                        keys.put(kv[0], kv[1]);
                    }
                    System.out.println("probe\t" + line + "\t" + probe(parts[0], source, checkpoint, keys));
                }
                continue;
            }
            if (args[i].startsWith("props:")) { // a plain properties file: dump what Properties.load reads
                String path = args[i].substring(6);
                String file = Paths.get(path).getFileName().toString();
                Properties p = Utils.loadProps(path);
                for (String k : p.stringPropertyNames()) {
                    System.out.println(file + "\tprop\t" + esc(k) + "\t" + esc(p.getProperty(k)));
                }
                continue;
            }
            String file = Paths.get(args[i]).getFileName().toString();
            Map<String, String> props = Utils.propsToStringMap(Utils.loadProps(args[i]));
            MirrorMakerConfig mm = new MirrorMakerConfig(props);
            List<String> clusters = new ArrayList<>(mm.clusters());
            Collections.sort(clusters);
            for (String alias : clusters) {
                Map<String, Object> admin = mm.clientConfig(alias).adminConfig();
                for (String k : new String[]{"bootstrap.servers", "security.protocol", "sasl.mechanism", "ssl.truststore.location", "ssl.truststore.type", "ssl.keystore.location", "ssl.endpoint.identification.algorithm"}) {
                    Object v = admin.get(k);
                    if (v instanceof List) {
                        List<String> l = new ArrayList<>();
                        for (Object o : (List<?>) v) l.add(o.toString());
                        v = String.join(",", l);
                    } else if (v != null && k.equals("bootstrap.servers")) {
                        v = String.join(",", v.toString().trim().split("\\s*,\\s*")); // a STRING here, a LIST in the clients
                    }
                    if (v != null && (k.equals("security.protocol") || k.equals("ssl.truststore.type"))) v = v.toString().toUpperCase(java.util.Locale.ROOT);
                    System.out.println(file + "\tcluster\t" + alias + "\t" + k + "\t" + (v == null ? "<null>" : v));
                }
            }
            for (SourceAndTarget sat : mm.clusterPairs()) {
                String f = sat.toString();
                MirrorSourceConfig sc = new MirrorSourceConfig(mm.connectorBaseConfig(sat, MirrorSourceConnector.class));
                MirrorCheckpointConfig cc = new MirrorCheckpointConfig(mm.connectorBaseConfig(sat, MirrorCheckpointConnector.class));
                ReplicationPolicy p = sc.replicationPolicy();
                System.out.println(file + "\tflow\t" + f + "\tenabled\t" + sc.enabled());
                System.out.println(file + "\tflow\t" + f + "\tpolicy\t" + p.getClass().getName());
                System.out.println(file + "\tflow\t" + f + "\toffset-syncs\t" + sc.offsetSyncsTopic());
                System.out.println(file + "\tflow\t" + f + "\tcheckpoints\t" + cc.checkpointsTopic());
                System.out.println(file + "\tflow\t" + f + "\theartbeats\t" + p.heartbeatsTopic());
                MirrorSourceConnector conn = new MirrorSourceConnector(sat, p, sc.topicFilter(), sc.configPropertyFilter());
                for (String t : topics) {
                    System.out.println(file + "\ttopic\t" + f + "\t" + t + "\t" + conn.shouldReplicateTopic(t) + "\t" + p.formatRemoteTopic(sat.source(), t));
                }
                ConfigPropertyFilter cf = sc.configPropertyFilter();
                for (String c : configProps) {
                    System.out.println(file + "\tconfig\t" + f + "\t" + c + "\t" + cf.shouldReplicateConfigProperty(c));
                }
                GroupFilter gf = cc.groupFilter();
                for (String g : groups) {
                    System.out.println(file + "\tgroup\t" + f + "\t" + g + "\t" + gf.shouldReplicateGroup(g));
                }
            }
        }
    }

    // probe says what MM2 makes of a periodic task's two keys: "refused" when its config class
    // or its Scheduler rejects them, "off", or the period.
    static String probe(String task, Map<String, String> sourceBase, Map<String, String> checkpointBase, Map<String, String> keys) throws Exception {
        Map<String, String> source = new HashMap<>(sourceBase);
        source.putAll(keys);
        Map<String, String> checkpoint = new HashMap<>(checkpointBase);
        checkpoint.putAll(keys);
        Duration d;
        try {
            switch (task) {
                case "refresh.topics": d = new MirrorSourceConfig(source).refreshTopicsInterval(); break;
                case "sync.topic.configs": d = new MirrorSourceConfig(source).syncTopicConfigsInterval(); break;
                case "refresh.groups": d = new MirrorCheckpointConfig(checkpoint).refreshGroupsInterval(); break;
                case "sync.group.offsets": d = new MirrorCheckpointConfig(checkpoint).syncGroupOffsetsInterval(); break;
                case "emit.checkpoints": d = new MirrorCheckpointConfig(checkpoint).emitCheckpointsInterval(); break;
                default: return "unknown task " + task;
            }
        } catch (ConfigException e) {
            return "refused";
        }
        if (d.isNegative()) return "off";
        if (!task.equals("emit.checkpoints")) { // the checkpoint task's poll loop waits instead
            Scheduler s = new Scheduler(KmigrateOracle.class, "probe", Duration.ofMillis(100));
            try {
                s.scheduleRepeating(() -> { }, d, "probe");
            } catch (RuntimeException e) {
                return "refused";
            } finally {
                s.close();
            }
        }
        return "every " + d.toMillis() + "ms";
    }

    static String esc(String s) {
        StringBuilder b = new StringBuilder();
        for (char c : s.toCharArray()) {
            if (c == '\\') b.append("\\\\");
            else if (c >= 0x20 && c < 0x7f) b.append(c);
            else b.append(String.format("\\u%04x", (int) c));
        }
        return b.toString();
    }
}
`

// The configurations both sides read. Each exercises rules where a reimplementation could
// drift from MM2: global vs prefixed client keys, flow-prefixed connector keys, deprecated
// aliases, separators inside internal names, anchoring, empty lists and backslash escapes.
var oracleConfigs = map[string]string{
	"separator.properties": `clusters = a, b
bootstrap.servers = shared:9092
a.bootstrap.servers = a1:9092, a2:9092
a.security.protocol = SSL
a.ssl.truststore.location = /etc/a/trust.jks
a.ssl.endpoint.identification.algorithm =
a->b.enabled = true
replication.policy.separator = _
replication.policy.internal.topic.separator.enabled = false
topics = orders, payments\\..*, a_.*
topics.exclude = .*\\.tmp
groups = g.*, app
groups.blacklist = g-old.*
`,
	"identity.properties": `clusters=a,b
a.bootstrap.servers=a:9092
b.bootstrap.servers=b:9092
a->b.enabled=true
b->a.enabled=TRUE
replication.policy.class=org.apache.kafka.connect.mirror.IdentityReplicationPolicy
replication.policy.separator=-
offset-syncs.topic.location=target
a->b.topics=orders|payments\\.eu
a->b.topics.blacklist=orders
topics.exclude=.*\\.tmp
b->a.groups.exclude=
`,
	"heartbeats-off.properties": `clusters=a,b,c
a.bootstrap.servers=a:9092
b.bootstrap.servers=b:9092
c.bootstrap.servers=c:9092
emit.heartbeats.enabled=false
a->b.enabled=true 
b->a.enabled=true
a->c.enabled=false
a->c.emit.heartbeats.enabled=true
c->b.emit.heartbeats.enabled=TRUE
`,
	"configs.properties": `clusters=a,b
a.bootstrap.servers=a:9092
b.bootstrap.servers=b:9092
a->b.enabled=true
a->b.config.properties.exclude=retention\\..*, min\\.insync\\.replicas
config.properties.blacklist=cleanup\\.policy
b->a.enabled=true
`,
	"mixed.properties": `clusters=a,b,c
a.bootstrap.servers=a:9092
b.bootstrap.servers=b:9092
c.bootstrap.servers=c:9092
c.security.protocol=sasl_ssl
c.sasl.mechanism=SCRAM-SHA-512
sasl.mechanism=PLAIN
security.protocol=SASL_PLAINTEXT
b.security.protocol=SSL
b.ssl.keystore.type=PKCS12
b.ssl.keystore.location=/etc/b/key.p12
ssl.truststore.type=PKCS12
ssl.truststore.location=/etc/trust.p12
a->b.enabled=true
a->b.replication.policy.class=org.apache.kafka.connect.mirror.IdentityReplicationPolicy
b->a.enabled=true 
b->c.enabled=true
b->c.replication.policy.class=org.apache.kafka.connect.mirror.DefaultReplicationPolicy
b->c.offset-syncs.topic.location=target
b->c.topics=
c->a.enabled=false
topics=\d+, orders
groups.exclude=h.*, \
    console-.*
`,
}

// propsCorpus are plain properties files whose parse both sides dump, key by key.
var propsCorpus = map[string]string{
	"separators.props":    "a=1\nb:2\nc 3\nd\t=\t4\ne  :  5 \nf\ng=\nh = = x\ni=j=k\n  l=6\n\tm:7\n\fn=8\n:9\n=10\n",
	"continuations.props": "a=x,\\\n   y,\\\n\tz\nb=1\\\\\nc=2\\\n#not-a-comment\nd=end\\\n\ne=after-blank\n# c\\\nf=3\n! bang\ng=4\\",
	"escapes.props":       "a=\\t\\n\\r\\f\\:\\=\\\\\\q\\ \nb\\ c=d\nk\\=ey\\:x=v\nu=caf\\u00e9\\u20AC\\uD83D\\uDE00\ntrail=x  \n",
	"newlines.props":      "a=1\r\nb=2\rc=3\r\n\r\nd=4\\\r\n  5\n",
	"duplicates.props":    "a=1\nb=2\na=3\n",
}

// goProps renders ParseProperties the way the oracle prints Properties.load.
func goProps(t *testing.T, file, text string) []string {
	t.Helper()
	p, err := ParseProperties(strings.NewReader(text))
	if err != nil {
		t.Fatalf("%s: ParseProperties: %v", file, err)
	}
	esc := func(s string) string {
		var b strings.Builder
		for _, c := range utf16.Encode([]rune(s)) {
			switch {
			case c == '\\':
				b.WriteString(`\\`)
			case c >= 0x20 && c < 0x7f:
				b.WriteByte(byte(c))
			default:
				fmt.Fprintf(&b, `\u%04x`, c)
			}
		}
		return b.String()
	}
	var out []string
	for _, pr := range p.All() {
		out = append(out, file+"\tprop\t"+esc(pr.Key)+"\t"+esc(pr.Value))
	}
	return out
}

var oracleTopics = []string{
	"orders", "orders2", "xorders", "GEN.LAB.P.TEST.TESTINFO.OLD2NEW", "__consumer_offsets", "x.internal",
	"x-internal", "mm2-offset-syncs.b.internal", "heartbeats", "a.heartbeats", "b.heartbeats", "c.heartbeats",
	"a.orders", "b.orders", "a_orders", "b_orders", "a-orders", "b-orders", "orders.replica", ".hidden", "payments.eu",
	"paymentsXeu", "payments.eu.tmp", "connect-configs", "a.b.orders", "b.a.orders", "x.checkpoints.internal",
	"123", "d", "dd", "orders|payments",
}

var oracleConfigProps = []string{"retention.ms", "cleanup.policy", "min.insync.replicas", "message.timestamp.type",
	"follower.replication.throttled.replicas", "segment.bytes", "retentionXms"}

// oracleProbes are a periodic task's keys, "task|key=value|...": what MM2 3.7.1's config
// classes and Scheduler make of them against Flow.Schedule. Left out on purpose, where kmigrate
// is stricter than MM2 (mm2.Flow.Schedule says why): a zero interval of a disabled task (MM2
// never reads it), emit.checkpoints.interval.seconds=0 (MM2 emits without pause), and
// intervals beyond 292 years (MM2 fails only a thousandfold later).
var oracleProbes = []string{
	"refresh.topics",
	"refresh.topics|refresh.topics.enabled=false",
	"refresh.topics|refresh.topics.interval.seconds=0",
	"refresh.topics|refresh.topics.interval.seconds=-1",
	"refresh.topics|refresh.topics.enabled= TRUE |refresh.topics.interval.seconds= 30 ",
	"refresh.topics|refresh.topics.enabled=1",
	"refresh.topics|refresh.topics.interval.seconds=10s",
	"refresh.topics|refresh.topics.interval.seconds=99999999999999999999",
	"sync.topic.configs|sync.topic.configs.interval.seconds=0",
	"sync.topic.configs|sync.topic.configs.enabled=yes",
	"sync.topic.configs|sync.topic.configs.interval.seconds=-600",
	"refresh.groups|refresh.groups.interval.seconds=0",
	"refresh.groups|refresh.groups.interval.seconds=-5",
	"refresh.groups|refresh.groups.enabled=false",
	"refresh.groups|refresh.groups.interval.seconds=45",
	"sync.group.offsets",
	"sync.group.offsets|sync.group.offsets.enabled=true",
	"sync.group.offsets|sync.group.offsets.enabled=true|sync.group.offsets.interval.seconds=0",
	"sync.group.offsets|sync.group.offsets.enabled=true|sync.group.offsets.interval.seconds=-1",
	"sync.group.offsets|sync.group.offsets.enabled=TRUE|sync.group.offsets.interval.seconds=+10",
	"sync.group.offsets|sync.group.offsets.enabled=on",
	"emit.checkpoints",
	"emit.checkpoints|emit.checkpoints.interval.seconds=-1",
	"emit.checkpoints|emit.checkpoints.enabled=false",
	"emit.checkpoints|emit.checkpoints.interval.seconds=x",
	"emit.checkpoints|emit.checkpoints.interval.seconds=5",
}

// goProbes renders what Flow.Schedule makes of oracleProbes, as the oracle prints them.
func goProbes(t *testing.T) []string {
	t.Helper()
	tasks := map[string]Task{}
	for _, task := range []Task{TaskRefreshTopics, TaskSyncTopicConfigs, TaskRefreshGroups, TaskEmitCheckpoints, TaskSyncGroupOffsets} {
		tasks[task.Name] = task
	}
	var out []string
	for _, line := range oracleProbes {
		parts := strings.Split(line, "|")
		task, ok := tasks[parts[0]]
		if !ok {
			t.Fatalf("probe %q: no task %q", line, parts[0])
		}
		f := NewFlow("a", "b", nil)
		for _, kv := range parts[1:] {
			k, v, _ := strings.Cut(kv, "=")
			f.Settings[k] = v
		}
		result := "off"
		switch s, err := f.Schedule(task); {
		case err != nil:
			result = "refused"
		case s.On():
			result = fmt.Sprintf("every %dms", s.Interval.Milliseconds())
		}
		out = append(out, "probe\t"+line+"\t"+result)
	}
	return out
}

var oracleGroups = []string{"g1", "g-old1", "app", "apps", "console-consumer-1", "console-x", "connect-mm2", "__x", "h1", "other"}

// goFacts renders what Parse makes of a file in the oracle's line format.
func goFacts(t *testing.T, file, text string) []string {
	t.Helper()
	cfg, err := Parse(strings.NewReader(text))
	if err != nil {
		t.Fatalf("%s: Parse: %v", file, err)
	}
	var out []string
	add := func(parts ...string) { out = append(out, file+"\t"+strings.Join(parts, "\t")) }
	for _, a := range cfg.Clusters {
		c := cfg.Cluster[a]
		bs := strings.Join(c.Bootstrap, ",")
		if bs == "" {
			bs = "<null>"
		}
		add("cluster", a, "bootstrap.servers", bs)
		add("cluster", a, "security.protocol", c.Security.Protocol)
		orNull := func(s string) string {
			if s == "" {
				return "<null>"
			}
			return s
		}
		mech := c.Security.SASLMechanism
		if mech == "" {
			mech = "GSSAPI" // Kafka's default
		}
		add("cluster", a, "sasl.mechanism", mech)
		add("cluster", a, "ssl.truststore.location", orNull(c.Security.TruststoreFile+c.Security.CAFile))
		tt := c.Security.TruststoreType
		if tt == "" {
			tt = "JKS" // Kafka's default
		}
		add("cluster", a, "ssl.truststore.type", tt)
		add("cluster", a, "ssl.keystore.location", orNull(c.Security.KeystoreFile+c.Security.CertFile))
		algo := "https"
		if c.Security.SkipHostnameCheck {
			algo = ""
		}
		add("cluster", a, "ssl.endpoint.identification.algorithm", algo)
	}
	for _, src := range cfg.Clusters {
		for _, tgt := range cfg.Clusters {
			if src == tgt {
				continue
			}
			name := src + "->" + tgt
			f, err := cfg.Flow(name)
			if err != nil {
				t.Fatalf("%s: Flow(%q): %v", file, name, err)
			}
			if !f.herder {
				continue // MM2 starts nothing for this pair
			}
			add("flow", name, "enabled", fmt.Sprint(f.Enabled))
			add("flow", name, "policy", f.Policy.Name())
			add("flow", name, "offset-syncs", f.OffsetSyncsTopic())
			add("flow", name, "checkpoints", f.CheckpointsTopic())
			add("flow", name, "heartbeats", f.HeartbeatsTopic())
			for _, topic := range oracleTopics {
				add("topic", name, topic, fmt.Sprint(f.TopicMatches(topic)), f.TargetTopic(topic))
			}
			exclude, err := CompilePattern("config.properties.exclude", f.ConfigExclude())
			if err != nil {
				t.Fatalf("%s: flow %s: %v", file, name, err)
			}
			for _, c := range oracleConfigProps {
				add("config", name, c, fmt.Sprint(!exclude.Matches(c)))
			}
			for _, g := range oracleGroups {
				add("group", name, g, fmt.Sprint(f.GroupMatches(g)))
			}
		}
	}
	return out
}

// TestAgainstMM2 compares Parse with MirrorMaker 2 3.7.1's own configuration classes on the
// same files: cluster connection keys, which flows are enabled, the policy, the internal topic
// names, and for a corpus of topics and groups whether they are mirrored and under which name.
func TestAgainstMM2(t *testing.T) {
	oracle := newJavaOracle(t, "KmigrateOracle", oracleJava)
	write := func(name, content string) string { return oracle.write(t, name, content) }
	seed, err := os.ReadFile("testdata/seed.properties")
	if err != nil {
		t.Fatal(err)
	}
	configs := map[string]string{"seed.properties": string(seed)}
	for k, v := range oracleConfigs {
		configs[k] = v
	}
	var want []string
	args := []string{write("topics.txt", strings.Join(oracleTopics, "\n")), write("groups.txt", strings.Join(oracleGroups, "\n")),
		write("configs.txt", strings.Join(oracleConfigProps, "\n")), "probe:" + write("probes.txt", strings.Join(oracleProbes, "\n"))}
	want = append(want, goProbes(t)...)
	names := make([]string, 0, len(configs))
	for name := range configs {
		names = append(names, name)
	}
	sort.Strings(names)
	for _, name := range names {
		args = append(args, write(name, configs[name]))
		want = append(want, goFacts(t, name, configs[name])...)
	}
	pnames := make([]string, 0, len(propsCorpus))
	for name := range propsCorpus {
		pnames = append(pnames, name)
	}
	sort.Strings(pnames)
	for _, name := range pnames {
		args = append(args, "props:"+write(name, propsCorpus[name]))
		want = append(want, goProps(t, name, propsCorpus[name])...)
	}
	out := oracle.run(t, args...)
	got := strings.Split(strings.TrimRight(string(out), "\n"), "\n")
	sort.Strings(got)
	sort.Strings(want)
	gotSet := map[string]bool{}
	for _, l := range got {
		gotSet[l] = true
	}
	wantSet := map[string]bool{}
	for _, l := range want {
		wantSet[l] = true
	}
	diffs := 0
	for _, l := range want {
		if !gotSet[l] {
			diffs++
			if diffs <= 40 {
				t.Errorf("kmigrate says, MM2 does not:  %s", l)
			}
		}
	}
	for _, l := range got {
		if !wantSet[l] {
			diffs++
			if diffs <= 40 {
				t.Errorf("MM2 says, kmigrate does not: %s", l)
			}
		}
	}
	t.Logf("compared %d facts from MM2 3.7.1 over %d files; %d differ", len(got), len(configs), diffs)
}
