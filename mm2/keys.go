package mm2

import (
	"slices"
	"sort"
	"strings"
)

// The keys MirrorMaker 2 3.7.1 knows, by where it reads them (MirrorMakerConfig,
// MirrorClientConfig, MirrorConnectorConfig, MirrorSourceConfig, MirrorCheckpointConfig,
// MirrorHeartbeatConfig, Connect's ConnectorConfig and the worker prefixes that
// MirrorMakerConfig.workerConfig copies). A key outside these tables is dropped by MM2 without
// a word, so Parse and Lint report it.

// clientKeys are the client keys MM2 applies to a cluster, unprefixed (every cluster) or as
// "<alias>.key" (MirrorClientConfig.CLIENT_CONFIG_DEF: bootstrap, security, ssl, sasl).
var clientKeys = set(
	"bootstrap.servers", "security.protocol",
	"ssl.protocol", "ssl.provider", "ssl.cipher.suites", "ssl.enabled.protocols",
	"ssl.keystore.type", "ssl.keystore.location", "ssl.keystore.password", "ssl.key.password",
	"ssl.keystore.key", "ssl.keystore.certificate.chain", "ssl.truststore.certificates",
	"ssl.truststore.type", "ssl.truststore.location", "ssl.truststore.password",
	"ssl.keymanager.algorithm", "ssl.trustmanager.algorithm",
	"ssl.endpoint.identification.algorithm", "ssl.secure.random.implementation",
	"ssl.engine.factory.class",
	"sasl.kerberos.service.name", "sasl.kerberos.kinit.cmd", "sasl.kerberos.ticket.renew.window.factor",
	"sasl.kerberos.ticket.renew.jitter", "sasl.kerberos.min.time.before.relogin",
	"sasl.login.refresh.window.factor", "sasl.login.refresh.window.jitter",
	"sasl.login.refresh.min.period.seconds", "sasl.login.refresh.buffer.seconds",
	"sasl.mechanism", "sasl.jaas.config", "sasl.client.callback.handler.class",
	"sasl.login.callback.handler.class", "sasl.login.class",
	"sasl.login.connect.timeout.ms", "sasl.login.read.timeout.ms", "sasl.login.retry.backoff.max.ms",
	"sasl.login.retry.backoff.ms", "sasl.oauthbearer.scope.claim.name", "sasl.oauthbearer.sub.claim.name",
	"sasl.oauthbearer.token.endpoint.url", "sasl.oauthbearer.jwks.endpoint.url",
	"sasl.oauthbearer.jwks.endpoint.refresh.ms", "sasl.oauthbearer.jwks.endpoint.retry.backoff.max.ms",
	"sasl.oauthbearer.jwks.endpoint.retry.backoff.ms", "sasl.oauthbearer.clock.skew.seconds",
	"sasl.oauthbearer.expected.audience", "sasl.oauthbearer.expected.issuer",
)

// connectorKeys are the keys MM2 passes from the top level (or a "A->B." prefix) to its
// connectors: the union of the three connector ConfigDefs and Connect's ConnectorConfig.
var connectorKeys = set(
	// MirrorConnectorConfig
	"enabled", "source.cluster.alias", "target.cluster.alias", "replication.policy.class",
	"replication.policy.separator", "replication.policy.internal.topic.separator.enabled",
	"admin.timeout.ms", "forwarding.admin.class", "offset-syncs.topic.location",
	"topic.filter.class", "metric.reporters", "auto.include.jmx.reporter", "security.protocol",
	// MirrorSourceConfig
	"topics", "topics.exclude", "topics.blacklist", "config.properties.exclude",
	"config.properties.blacklist", "config.property.filter.class", "replication.factor",
	"offset-syncs.topic.replication.factor", "consumer.poll.timeout.ms",
	"refresh.topics.enabled", "refresh.topics.interval.seconds",
	"sync.topic.configs.enabled", "sync.topic.configs.interval.seconds",
	"sync.topic.acls.enabled", "sync.topic.acls.interval.seconds",
	"use.incremental.alter.configs", "offset.lag.max", "add.source.alias.to.metrics",
	// MirrorCheckpointConfig
	"groups", "groups.exclude", "groups.blacklist", "group.filter.class",
	"checkpoints.topic.replication.factor", "refresh.groups.enabled",
	"refresh.groups.interval.seconds", "emit.checkpoints.enabled",
	"emit.checkpoints.interval.seconds", "sync.group.offsets.enabled",
	"sync.group.offsets.interval.seconds",
	// MirrorHeartbeatConfig
	"heartbeats.topic.replication.factor", "emit.heartbeats.enabled",
	"emit.heartbeats.interval.seconds",
	// Read by MirrorMaker 2 4.x only (v4Keys): known, with a note that 3.7.1 ignores them.
	"emit.offset-syncs.enabled", "heartbeats.replication.enabled", "metric.names.formats",
	// Connect ConnectorConfig / SourceConnectorConfig
	"name", "connector.class", "tasks.max", "key.converter", "value.converter",
	"header.converter", "transforms", "predicates", "config.action.reload",
	"errors.retry.timeout", "errors.retry.delay.max.ms", "errors.tolerance",
	"errors.log.enable", "errors.log.include.messages", "topic.creation.groups",
	"exactly.once.support", "transaction.boundary", "transaction.boundary.interval.ms",
	"offsets.storage.topic",
)

// v4Keys are the connector keys MirrorMaker 2 4.x reads and 3.7.1 does not, with what they do;
// removedInV4 the keys 3.7.1 reads and 4.x no longer does, with what to write instead. Both
// are the difference of the ConfigDef constants of connect-mirror 3.7.1 and 4.3.1 (and, for
// auto.include.jmx.reporter, of kafka-clients' CommonClientConfigs).
var (
	v4Keys = map[string]string{
		"emit.offset-syncs.enabled":      "KIP-1031: false stops the offset syncs, and with them the checkpoints and the group offset sync",
		"heartbeats.replication.enabled": "KIP-1089: false stops the source connector from replicating the heartbeats topics",
		"metric.names.formats":           "the names of the connectors' metrics (legacy, new); already deprecated",
	}
	removedInV4 = map[string]string{
		"topics.blacklist":              "topics.exclude",
		"groups.blacklist":              "groups.exclude",
		"config.properties.blacklist":   "config.properties.exclude",
		"use.incremental.alter.configs": "",
		"add.source.alias.to.metrics":   "",
		"auto.include.jmx.reporter":     "metric.reporters=org.apache.kafka.common.metrics.JmxReporter",
	}
)

// KeyCommitLatency is kmirror's commit latency bound, in milliseconds (mirror.Config.CommitLatency).
const KeyCommitLatency = "kmirror.commit.latency.max.ms"

// KmirrorKeys are the keys kmirror reads and MirrorMaker 2 does not, unprefixed or after "A->B.",
// with what they do. MM2 drops them without a word, so a file shared by both stays valid for
// MM2; Lint says which they are.
var KmirrorKeys = map[string]string{
	KeyCommitLatency: "the longest a mirrored record waits for the commit that makes it visible to read_committed readers (default 1000); within it kmirror commits sooner when that pays",
}

// mm2Keys are read by MirrorMakerConfig itself.
var mm2Keys = set(
	"clusters", "config.providers", "dedicated.mode.enable.internal.rest",
	"listeners", "rest.advertised.host.name", "rest.advertised.port", "rest.advertised.listener",
)

// workerPrefixes are the top-level prefixes MirrorMakerConfig.workerConfig copies into every
// worker; any key starting with one of them is known.
var workerPrefixes = []string{
	"offset.storage", "config.storage", "status.storage", "key.converter", "value.converter",
	"header.converter", "task", "worker", "replication.policy", "config.providers",
}

// clusterOnlyKeys reach MM2 only with a cluster prefix ("<target>.key"): worker settings of the
// herder whose target is that cluster. Unprefixed, MM2 drops them.
var clusterOnlyKeys = set(
	"offset.flush.interval.ms", "offset.flush.timeout.ms", "group.id", "client.id",
	"heartbeat.interval.ms", "session.timeout.ms", "rebalance.timeout.ms",
	"scheduled.rebalance.max.delay.ms", "connect.protocol", "exactly.once.source.support",
	"metrics.sample.window.ms", "metrics.num.samples", "metrics.recording.level",
	"request.timeout.ms", "retry.backoff.ms", "reconnect.backoff.ms", "reconnect.backoff.max.ms",
	"connections.max.idle.ms", "receive.buffer.bytes", "send.buffer.bytes", "client.dns.lookup",
	"metadata.max.age.ms", "socket.connection.setup.timeout.ms",
	"socket.connection.setup.timeout.max.ms", "worker.sync.timeout.ms",
	"worker.unsync.backoff.ms", "inter.worker.key.generation.algorithm",
	"inter.worker.key.size", "inter.worker.key.ttl.ms", "inter.worker.signature.algorithm",
	"inter.worker.verification.algorithms", "topic.creation.enable",
	"offset.storage.partitions", "status.storage.partitions",
)

// clientSubPrefixes are "<alias>.producer.", "<alias>.consumer." and "<alias>.admin.".
var clientSubPrefixes = []string{"producer.", "consumer.", "admin."}

// IsKnownKey reports whether MM2 3.7.1 or 4.x reads key when it appears unprefixed at the top
// level.
func IsKnownKey(key string) bool {
	if clientKeys[key] || connectorKeys[key] || mm2Keys[key] {
		return true
	}
	for _, p := range workerPrefixes {
		if strings.HasPrefix(key, p) {
			return true
		}
	}
	return strings.HasPrefix(key, "transforms.") || strings.HasPrefix(key, "predicates.") ||
		strings.HasPrefix(key, "errors.") || strings.HasPrefix(key, "topic.creation.")
}

// isKnownClusterKey reports whether MM2 uses key after a "<alias>." prefix.
func isKnownClusterKey(key string) bool {
	if clientKeys[key] || clusterOnlyKeys[key] {
		return true
	}
	for _, p := range clientSubPrefixes {
		if strings.HasPrefix(key, p) && len(key) > len(p) {
			return true
		}
	}
	for _, p := range workerPrefixes {
		if strings.HasPrefix(key, p) {
			return true
		}
	}
	return false
}

// isKnownFlowKey reports whether MM2 uses key after a "A->B." prefix: every connector key and
// client overrides, which reach the connector's clients.
func isKnownFlowKey(key string) bool {
	if connectorKeys[key] || clientKeys[key] || IsKnownKey(key) {
		return true
	}
	for _, p := range []string{"producer.", "consumer.", "admin.", "source.", "target."} {
		if strings.HasPrefix(key, p) && len(key) > len(p) {
			return true
		}
	}
	return false
}

func set(keys ...string) map[string]bool {
	m := make(map[string]bool, len(keys))
	for _, k := range keys {
		m[k] = true
	}
	return m
}

// globalCandidates are the keys a misspelt top-level key is compared with.
func globalCandidates() []string {
	var out []string
	for _, m := range []map[string]bool{clientKeys, connectorKeys, mm2Keys} {
		for k := range m {
			out = append(out, k)
		}
	}
	for _, p := range workerPrefixes {
		switch p {
		case "task", "worker", "replication.policy", "config.providers":
			continue
		}
		out = append(out, p+".topic", p+".replication.factor")
	}
	sort.Strings(out)
	return slices.Compact(out)
}

// clusterCandidates are the keys a misspelt "<alias>." suffix is compared with.
func clusterCandidates() []string {
	var out []string
	for _, m := range []map[string]bool{clientKeys, clusterOnlyKeys} {
		for k := range m {
			out = append(out, k)
		}
	}
	sort.Strings(out)
	return out
}

// suggest returns the candidate closest to key: one with the same words in another order
// (offset.max.lag -> offset.lag.max) first, else the nearest by edit distance if it is close
// enough to be a typo. It returns "" when nothing is close.
func suggest(key string, candidates []string) string {
	words := sortedWords(key)
	best, bestD := "", -1
	for _, c := range candidates {
		if c == key {
			continue
		}
		if sortedWords(c) == words {
			return c
		}
		d := editDistance(key, c)
		if bestD < 0 || d < bestD || (d == bestD && c < best) {
			best, bestD = c, d
		}
	}
	limit := len(key) / 5
	if limit < 1 {
		limit = 1
	}
	if limit > 3 {
		limit = 3
	}
	if bestD >= 0 && bestD <= limit {
		return best
	}
	// A reordering plus a typo: compare the sorted words.
	for _, c := range candidates {
		if editDistance(words, sortedWords(c)) <= 1 && strings.Count(c, ".") == strings.Count(key, ".") && strings.Count(key, ".") >= 2 {
			return c
		}
	}
	return ""
}

func sortedWords(k string) string {
	w := strings.FieldsFunc(strings.ToLower(k), func(r rune) bool { return r == '.' || r == '-' || r == '_' })
	sort.Strings(w)
	return strings.Join(w, ".")
}

// editDistance is the Levenshtein distance of a and b in bytes (keys are ASCII).
func editDistance(a, b string) int {
	if len(a) > 256 || len(b) > 256 {
		if a == b {
			return 0
		}
		return max(len(a), len(b))
	}
	prev := make([]int, len(b)+1)
	cur := make([]int, len(b)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(a); i++ {
		cur[0] = i
		for j := 1; j <= len(b); j++ {
			cost := 1
			if a[i-1] == b[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
		}
		prev, cur = cur, prev
	}
	return prev[len(b)]
}
