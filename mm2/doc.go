// Package mm2 speaks MirrorMaker 2 (3.7.1): its mm2.properties configuration, its replication
// policies and internal topic names, and the byte formats of its internal topics. Connecting to
// a cluster is kconn's work: mm2 reads a cluster's security keys into a kconn.Security.
//
// The types to know:
//
//   - Config, from Parse or Load: the cluster aliases, one Cluster per alias (bootstrap servers,
//     kconn.Security, "<alias>.producer./consumer./admin." overrides) and one Flow per "A->B" pair the
//     file names. Config.Flow("") is the only enabled flow; Config.Flow("A->B") any declared
//     pair. Warnings list every key MM2 would drop, with its line and a suggestion for near
//     misses (offset.max.lag -> offset.lag.max, by edit distance or word order).
//   - Flow: the topic and group filters (TopicMatches, GroupMatches), the replication policy
//     (TargetTopic) and the internal topic names (OffsetSyncsTopic, CheckpointsTopic,
//     HeartbeatsTopic). NewFlow gives MM2's defaults without a file. Its connector keys are
//     read only through Flow.Schedule, Bool, ReplicationFactor, List and ConfigExclude, each
//     with MM2 3.7.1's rule beside it and one error, *SettingError, naming flow and key; Pattern
//     compiles every filter list as MM2 does.
//   - OffsetSync, Checkpoint, Heartbeat: the records of MM2's offset-syncs, checkpoints and
//     heartbeats topics, byte-compatible both ways; ReadOffsetSyncs and ReadCheckpoints read
//     partition 0 of the first two, DecodeHeartbeat decodes a heartbeat.
//   - Cluster.Opts: the franz-go options of kconn.Config for the cluster, named by its alias;
//     a cluster without bootstrap servers is refused naming the key and flags that set them.
//   - Lint: what MM2 would silently ignore or misread in a file, as Findings.
//
// Guarantees. Parsing follows java.util.Properties (separators "=", ":" or blanks; "\"
// continuations; "#"/"!" comments only at line start; escapes) and MM2 3.7.1's own rules,
// checked against its source: an "<alias>." client key wins over the unprefixed one, which
// applies to every cluster; an "A->B." key wins over the top-level one; connector keys are
// only read at the top level or with a flow prefix; topics.exclude wins over the deprecated
// topics.blacklist wherever either is set; filter lists are split at commas, joined with "|"
// and must match the whole name (Java's matches()); an empty list matches nothing; internal
// topics ("__*", ".*", "*.internal", "*-internal") are never mirrored and heartbeats always are;
// replication.policy.separator also joins the internal topic names unless
// replication.policy.internal.topic.separator.enabled=false; offset syncs are named after the
// target alias when they live on the source (the default) and after the source alias when
// offset-syncs.topic.location=target. Bad input is an error (*KeyError or *LineError) naming
// the key and its line, never a panic (fuzz-tested). Secrets (passwords, JAAS configs, PEM
// keys) are kconn.Secret values that print and marshal as "[redacted]", and never appear in
// Flow.Settings, the override maps or an error message.
//
// Secrets. IsSecretKey is the one rule for keys that may hold a credential (*password*,
// *.jaas.config, *basic.auth.user.info, *secret*, *token*, *credentials*, ssl.key*, *.key):
// the parser keeps their values out of Flow.Settings and the per-client maps, no error,
// warning or Lint finding quotes them, and the tools redact them wherever they print a value.
// Syntax errors (a bad \u escape, a broken JAAS config) give a position, never text.
//
// Limits. ReadFile, LoadContext, ParseProperties and Lint read at most MaxFileSize (4 MiB) and
// lines (also joined continuations) of at most MaxLineSize (1 MiB); beyond is a *LimitError
// in a *LineError naming the line. ReadFile and LoadContext stop when their context ends, also
// on a pipe or FIFO that never ends.
//
// Regexes are compiled with Go's RE2, which lacks lookaround, backreferences and possessive
// quantifiers; Parse rejects them and Lint explains them. Remember that the properties format
// eats single backslashes: a literal dot in an mm2.properties regex is written "\\.".
//
// Testing: go test ./mm2/ runs the table tests and the seed configuration
// (testdata/seed.properties); go test -fuzz FuzzParseProperties ./mm2/ fuzzes the parser,
// Parse and Lint.
package mm2
