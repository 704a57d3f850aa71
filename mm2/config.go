package mm2

import (
	"fmt"
	"io"
	"regexp"
	"sort"
	"strings"

	"github.com/kmigrate/kmigrate/kconn"
)

// Parse reads an mm2.properties file as MirrorMaker 2 3.7.1 does: the clusters, their
// connection and security settings (an "<alias>." key wins over the unprefixed one), and every
// flow named by an "A->B." key, with its settings ("A->B.key" wins over "key"). Keys MM2 would
// drop, and values it would misread, become Warnings with their line. Bad input (a missing
// clusters key, an invalid regex, an unknown replication policy, a malformed JAAS config) is an
// error naming the key and its line.
func Parse(r io.Reader) (*Config, error) {
	props, err := ParseProperties(r)
	if err != nil {
		return nil, err
	}
	return FromProperties(props)
}

// FromProperties builds a Config from parsed properties.
func FromProperties(props *Properties) (*Config, error) {
	p := &parser{props: props, cfg: &Config{Cluster: map[string]*Cluster{}}}
	p.cfg.Warnings = append(p.cfg.Warnings, props.Warnings...)
	if err := p.parseClusters(); err != nil {
		return nil, err
	}
	p.classify()
	for _, alias := range p.cfg.Clusters {
		c, err := p.cluster(alias)
		if err != nil {
			return nil, err
		}
		p.cfg.Cluster[alias] = c
	}
	for _, name := range p.flowOrder {
		f, err := p.flow(p.flowKeys[name].source, p.flowKeys[name].target)
		if err != nil {
			return nil, err
		}
		p.cfg.Flows = append(p.cfg.Flows, f)
	}
	sort.SliceStable(p.cfg.Warnings, func(i, j int) bool { return p.cfg.Warnings[i].Line < p.cfg.Warnings[j].Line })
	p.cfg.props = props
	return p.cfg, nil
}

// Flow returns the flow "A->B", or with name "" the only enabled flow. A declared pair that no
// "A->B." key mentions is built from the top-level settings (MM2 would run it disabled).
func (c *Config) Flow(name string) (*Flow, error) {
	if name == "" {
		var enabled []*Flow
		for _, f := range c.Flows {
			if f.Enabled {
				enabled = append(enabled, f)
			}
		}
		switch len(enabled) {
		case 1:
			return enabled[0], nil
		case 0:
			return nil, fmt.Errorf("no enabled flow: set A->B.enabled=true for one pair of clusters (%s), or choose one with --flow A->B", strings.Join(c.Clusters, ", "))
		default:
			names := make([]string, len(enabled))
			for i, f := range enabled {
				names[i] = f.Name()
			}
			return nil, fmt.Errorf("%d enabled flows (%s): choose one with --flow", len(enabled), strings.Join(names, ", "))
		}
	}
	src, tgt, ok := strings.Cut(name, "->")
	if !ok {
		return nil, fmt.Errorf("flow %q: write it as SOURCE->TARGET with aliases from clusters (%s)", name, strings.Join(c.Clusters, ", "))
	}
	src, tgt = strings.TrimSpace(src), strings.TrimSpace(tgt)
	for _, f := range c.Flows {
		if f.Source == src && f.Target == tgt {
			return f, nil
		}
	}
	for _, a := range []string{src, tgt} {
		if _, ok := c.Cluster[a]; !ok {
			msg := fmt.Sprintf("flow %q: alias %q is not in clusters (%s)", name, a, strings.Join(c.Clusters, ", "))
			if s := foldMatch(a, c.Clusters); s != "" {
				msg += fmt.Sprintf("; aliases are case-sensitive: did you mean %q?", s)
			}
			return nil, fmt.Errorf("%s", msg)
		}
	}
	if src == tgt {
		return nil, fmt.Errorf("flow %q: source and target are the same cluster", name)
	}
	if c.props == nil {
		f := NewFlow(src, tgt, DefaultPolicy{Separator: "."})
		return f, nil
	}
	p := &parser{props: c.props, cfg: &Config{Cluster: c.Cluster}}
	p.aliases = c.Clusters
	p.classify()
	return p.flow(src, tgt)
}

type flowKey struct {
	source, target string
	keys           map[string]Property // suffix -> property
}

type parser struct {
	props       *Properties
	cfg         *Config
	aliases     []string
	flowKeys    map[string]*flowKey // "A->B" -> its keys
	flowOrder   []string
	clusterKeys map[string]map[string]Property // alias -> suffix -> property
	global      map[string]Property

	warnedOnce map[string]bool // keys already warned about, as flows share global keys
}

func (p *parser) warn(pr Property, suggestion, format string, args ...any) {
	p.warnSev(SeverityError, pr, suggestion, format, args...)
}

// warnSev records a warning with the severity Lint gives it.
func (p *parser) warnSev(sev Severity, pr Property, suggestion, format string, args ...any) {
	p.cfg.Warnings = append(p.cfg.Warnings, Warning{Line: pr.Line, Key: pr.Key, Message: scrub(pr, fmt.Sprintf(format, args...)), Suggestion: scrub(pr, suggestion), sev: sev})
}

// parseList splits a ConfigDef LIST value: blank is empty, else split on commas with the
// whitespace around them, keeping empty items.
func parseList(v string) []string {
	v = strings.TrimSpace(v)
	if v == "" {
		return []string{}
	}
	return listSplit.Split(v, -1)
}

var listSplit = regexp.MustCompile(`\s*,\s*`)

func (p *parser) parseClusters() error {
	v, ok := p.props.Get("clusters")
	if !ok {
		return keyErr(Property{Key: "clusters"}, "missing: list the cluster aliases, e.g. clusters=source,target")
	}
	line := p.props.Line("clusters")
	seen := map[string]bool{}
	for _, a := range parseList(v) {
		switch {
		case a == "":
			return keyErr(Property{Key: "clusters", Line: line}, "empty alias in %q; remove the extra comma", v)
		case strings.Contains(a, "->"):
			return keyErr(Property{Key: "clusters", Line: line}, "alias %q contains \"->\"; aliases are names like source or us-east", a)
		case strings.ContainsAny(a, " \t"):
			return keyErr(Property{Key: "clusters", Line: line}, "alias %q contains whitespace", a)
		case seen[a]:
			return keyErr(Property{Key: "clusters", Line: line}, "alias %q is listed twice", a)
		}
		seen[a] = true
		p.cfg.Clusters = append(p.cfg.Clusters, a)
	}
	if len(p.cfg.Clusters) == 0 {
		return keyErr(Property{Key: "clusters", Line: line}, "no aliases; list them, e.g. clusters=source,target")
	}
	p.aliases = p.cfg.Clusters
	return nil
}

// aliasPrefix returns the longest declared alias a with s starting with a+sep.
func (p *parser) aliasPrefix(s, sep string) (string, bool) {
	best := ""
	for _, a := range p.aliases {
		if strings.HasPrefix(s, a+sep) && len(a) > len(best) {
			best = a
		}
	}
	return best, best != ""
}

func foldMatch(s string, candidates []string) string {
	for _, c := range candidates {
		if c != s && strings.EqualFold(c, s) {
			return c
		}
	}
	return ""
}

// classify sorts every key into global, cluster ("<alias>.") and flow ("A->B.") keys and warns
// about the ones MM2 would drop.
func (p *parser) classify() {
	p.flowKeys = map[string]*flowKey{}
	p.clusterKeys = map[string]map[string]Property{}
	p.global = map[string]Property{}
	p.warnedOnce = map[string]bool{}
	for _, pr := range p.props.All() {
		k := pr.Key
		if k == "clusters" {
			continue
		}
		if i := strings.Index(k, "->"); i > 0 {
			p.classifyFlowKey(pr, k[:i], k[i+2:])
			continue
		}
		if IsKnownKey(k) || KmirrorKeys[k] != "" {
			p.global[k] = pr
			continue
		}
		if a, ok := p.aliasPrefix(k, "."); ok {
			p.classifyClusterKey(pr, a, k[len(a)+1:])
			continue
		}
		p.classifyGlobalUnknown(pr)
	}
}

func (p *parser) classifyFlowKey(pr Property, src, rest string) {
	tgt, ok := p.aliasPrefix(rest, ".")
	suffix := ""
	if ok {
		suffix = rest[len(tgt)+1:]
	} else {
		var found bool
		tgt, suffix, found = strings.Cut(rest, ".")
		if !found {
			p.warn(pr, "", "flow key without a setting: write A->B.key, e.g. %s->%s.enabled", src, rest)
			return
		}
	}
	srcOK := contains(p.aliases, src)
	tgtOK := contains(p.aliases, tgt)
	if !srcOK || !tgtOK {
		fs, ft := src, tgt
		if !srcOK {
			if m := foldMatch(src, p.aliases); m != "" {
				fs = m
			}
		}
		if !tgtOK {
			if m := foldMatch(tgt, p.aliases); m != "" {
				ft = m
			}
		}
		sugg := ""
		if contains(p.aliases, fs) && contains(p.aliases, ft) {
			sugg = fs + "->" + ft + "." + suffix
			p.warn(pr, sugg, "flow %s->%s: aliases are case-sensitive and clusters lists %s; MM2 ignores this key", src, tgt, strings.Join(p.aliases, ", "))
			return
		}
		bad := src
		if srcOK {
			bad = tgt
		}
		p.warn(pr, sugg, "flow %s->%s: alias %q is not in clusters (%s); MM2 ignores this key", src, tgt, bad, strings.Join(p.aliases, ", "))
		return
	}
	if src == tgt {
		p.warn(pr, "", "flow %s->%s: source and target are the same cluster; MM2 ignores this key", src, tgt)
		return
	}
	if !isKnownFlowKey(suffix) && KmirrorKeys[suffix] == "" {
		sugg := suggest(suffix, globalCandidates())
		if sugg != "" {
			sugg = src + "->" + tgt + "." + sugg
		}
		p.warn(pr, sugg, "unknown key %q in flow %s->%s: MM2 passes it to the connectors, which ignore it", suffix, src, tgt)
	}
	name := src + "->" + tgt
	fk := p.flowKeys[name]
	if fk == nil {
		fk = &flowKey{source: src, target: tgt, keys: map[string]Property{}}
		p.flowKeys[name] = fk
		p.flowOrder = append(p.flowOrder, name)
	}
	fk.keys[suffix] = pr
}

func (p *parser) classifyClusterKey(pr Property, alias, suffix string) {
	m := p.clusterKeys[alias]
	if m == nil {
		m = map[string]Property{}
		p.clusterKeys[alias] = m
	}
	m[suffix] = pr
	if isKnownClusterKey(suffix) {
		return
	}
	if connectorKeys[suffix] {
		p.warn(pr, "", "%q after the cluster prefix %q only reaches that cluster's clients and workers; MM2 ignores it as a flow setting: use A->B.%s or the unprefixed %s", suffix, alias, suffix, suffix)
		return
	}
	sugg := suggest(suffix, clusterCandidates())
	if sugg != "" {
		sugg = alias + "." + sugg
	}
	p.warn(pr, sugg, "unknown key %q for cluster %s: MM2 ignores it", suffix, alias)
}

func (p *parser) classifyGlobalUnknown(pr Property) {
	k := pr.Key
	if clusterOnlyKeys[k] {
		p.warn(pr, p.likelyTarget()+"."+k, "MM2 ignores %s without a cluster prefix (dedicated mode reads worker settings only as <target-alias>.%s)", k, k)
		return
	}
	for _, sp := range clientSubPrefixes {
		if strings.HasPrefix(k, sp) {
			p.warn(pr, "", "MM2 ignores unprefixed %s* keys: write <alias>.%s or A->B.%s", sp, k, k)
			return
		}
	}
	// An alias with the wrong case, or one that clusters does not list.
	if head, rest, ok := strings.Cut(k, "."); ok && (isKnownClusterKey(rest) || connectorKeys[rest]) {
		if m := foldMatch(head, p.aliases); m != "" {
			p.warn(pr, m+"."+rest, "alias %q is not in clusters (%s); aliases are case-sensitive: MM2 ignores this key", head, strings.Join(p.aliases, ", "))
			return
		}
		if isKnownClusterKey(rest) && rest != "" && !strings.Contains(head, " ") {
			p.warn(pr, "", "alias %q is not in clusters (%s): MM2 ignores this key; add it to clusters or fix the prefix", head, strings.Join(p.aliases, ", "))
			return
		}
	}
	p.warn(pr, suggest(k, globalCandidates()), "unknown key: MirrorMaker 2 ignores it")
}

// likelyTarget is the target alias of the first enabled flow in the file, else the last alias:
// the cluster whose worker a misplaced worker setting was probably meant for.
func (p *parser) likelyTarget() string {
	for _, pr := range p.props.All() {
		src, rest, ok := strings.Cut(pr.Key, "->")
		if !ok || !contains(p.aliases, src) || !strings.EqualFold(strings.TrimSpace(pr.Value), "true") {
			continue
		}
		if tgt, ok := p.aliasPrefix(rest, "."); ok && rest[len(tgt)+1:] == "enabled" {
			return tgt
		}
	}
	if len(p.aliases) == 0 {
		return "<target>"
	}
	return p.aliases[len(p.aliases)-1]
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

// clusterValue returns the effective client key k of alias: "<alias>.k", else "k".
func (p *parser) clusterValue(alias, k string) (Property, bool) {
	if pr, ok := p.clusterKeys[alias][k]; ok {
		return pr, true
	}
	pr, ok := p.global[k]
	return pr, ok
}

var (
	protocols  = set("PLAINTEXT", "SSL", "SASL_PLAINTEXT", "SASL_SSL")
	mechanisms = set("PLAIN", "SCRAM-SHA-256", "SCRAM-SHA-512", "GSSAPI", "OAUTHBEARER")
)

// cluster reads the cluster alias: its bootstrap servers, security and per-client settings.
func (p *parser) cluster(alias string) (*Cluster, error) {
	c := &Cluster{Alias: alias, Producer: map[string]string{}, Consumer: map[string]string{}, Admin: map[string]string{}}
	if pr, ok := p.clusterValue(alias, "bootstrap.servers"); ok {
		for _, b := range parseList(pr.Value) {
			if b == "" {
				return nil, keyErr(pr, "empty broker address; remove the extra comma")
			}
			c.Bootstrap = append(c.Bootstrap, b)
		}
	}
	if pr, ok := p.clusterValue(alias, "exactly.once.source.support"); ok {
		c.ExactlyOnceSourceSupport = strings.TrimSpace(pr.Value)
	}
	s := &c.Security
	if err := p.saslProtocol(alias, s); err != nil {
		return nil, err
	}
	if err := p.jaasConfig(alias, s); err != nil {
		return nil, err
	}
	p.sslConfig(alias, s)
	p.clientOverrides(alias, c)
	return c, nil
}

// saslProtocol sets s.Protocol (default PLAINTEXT) and s.SASLMechanism of alias, failing on a value Kafka does not know.
func (p *parser) saslProtocol(alias string, s *kconn.Security) error {
	s.Protocol = "PLAINTEXT"
	if pr, ok := p.clusterValue(alias, "security.protocol"); ok {
		v := strings.ToUpper(strings.TrimSpace(pr.Value))
		if !protocols[v] {
			return keyErr(pr, "%q is not a security protocol: use PLAINTEXT, SSL, SASL_PLAINTEXT or SASL_SSL", pr.Value)
		}
		s.Protocol = v
	}
	if pr, ok := p.clusterValue(alias, "sasl.mechanism"); ok {
		v := strings.ToUpper(strings.TrimSpace(pr.Value))
		if !mechanisms[v] {
			return keyErr(pr, "%q is not a SASL mechanism: use PLAIN, SCRAM-SHA-256 or SCRAM-SHA-512", pr.Value)
		}
		s.SASLMechanism = v
		if t := strings.TrimSpace(pr.Value); t != v && !p.warnedOnce[pr.Key] {
			p.warnedOnce[pr.Key] = true
			p.warnSev(SeverityWarning, pr, strings.Replace(pr.Key+"="+v, " ", "", -1), "brokers compare SASL mechanism names case-sensitively, so MM2's clients would offer %q and be refused; kmigrate uses %s", t, v)
		}
	}
	return nil
}

// jaasConfig sets the SASL login module and credentials of s from alias's sasl.jaas.config (after saslProtocol), failing on a malformed one.
func (p *parser) jaasConfig(alias string, s *kconn.Security) error {
	pr, ok := p.clusterValue(alias, "sasl.jaas.config")
	if !ok {
		return nil
	}
	e, err := kconn.ParseJAAS(pr.Value)
	if err != nil {
		return keyErr(pr, "%v; write it as %s required username=\"USER\" password=\"PASSWORD\";", err, kconn.PlainLoginModule)
	}
	s.SASLLoginModule = e.Module
	switch e.Module {
	case kconn.PlainLoginModule, kconn.ScramLoginModule:
		s.SASLUser = e.Options["username"]
		s.SASLPassword = kconn.Secret(e.Options["password"])
		if s.SASLUser == "" {
			p.warnSev(SeverityWarning, pr, "", "the JAAS config has no username option")
		}
		for i, name := range e.Order {
			if name != "username" && name != "password" && name != "tokenauth" {
				// Often the rest of an unquoted password with a blank: never shown.
				p.warnSev(SeverityWarning, pr, "", "option %d of the JAAS config is not read by %s (the name is not shown: it may be part of an unquoted password); quote values with blanks: password=\"...\"", i+1, e.Module)
			}
		}
	}
	sasl := strings.HasPrefix(s.Protocol, "SASL_")
	if sasl && s.SASLMechanism == "" && e.Module == kconn.PlainLoginModule {
		p.warn(pr, alias+".sasl.mechanism=PLAIN", "sasl.mechanism is not set: Kafka's default is GSSAPI, so MM2 would try Kerberos; kmigrate assumes PLAIN from the PlainLoginModule")
		s.SASLMechanism = "PLAIN"
	}
	if !sasl && strings.HasPrefix(pr.Key, alias+".") {
		p.warnSev(SeverityInfo, pr, "", "a JAAS config is set but security.protocol is %s, so MM2 does not use it", s.Protocol)
	}
	return nil
}

// sslConfig sets the trust store, key store and host name check of s from alias's ssl.* keys.
func (p *parser) sslConfig(alias string, s *kconn.Security) {
	ssl := func(k string) (string, bool) {
		pr, ok := p.clusterValue(alias, k)
		return pr.Value, ok
	}
	s.TruststoreType, _ = ssl("ssl.truststore.type")
	s.TruststoreType = strings.ToUpper(strings.TrimSpace(s.TruststoreType))
	if v, ok := ssl("ssl.truststore.location"); ok && strings.TrimSpace(v) != "" {
		if s.TruststoreType == "PEM" {
			s.CAFile = strings.TrimSpace(v)
		} else {
			s.TruststoreFile = strings.TrimSpace(v)
		}
	}
	if v, ok := ssl("ssl.truststore.password"); ok {
		s.TruststorePassword = kconn.Secret(v)
	}
	if v, ok := ssl("ssl.truststore.certificates"); ok {
		s.CAPEM = v
	}
	s.KeystoreType, _ = ssl("ssl.keystore.type")
	s.KeystoreType = strings.ToUpper(strings.TrimSpace(s.KeystoreType))
	if v, ok := ssl("ssl.keystore.location"); ok && strings.TrimSpace(v) != "" {
		if s.KeystoreType == "PEM" {
			s.CertFile, s.KeyFile = strings.TrimSpace(v), strings.TrimSpace(v)
		} else {
			s.KeystoreFile = strings.TrimSpace(v)
		}
	}
	if v, ok := ssl("ssl.keystore.password"); ok {
		s.KeystorePassword = kconn.Secret(v)
	}
	if v, ok := ssl("ssl.key.password"); ok {
		s.KeyPassword = kconn.Secret(v)
	}
	if v, ok := ssl("ssl.keystore.certificate.chain"); ok {
		s.CertPEM = v
	}
	if v, ok := ssl("ssl.keystore.key"); ok {
		s.KeyPEM = kconn.Secret(v)
	}
	if pr, ok := p.clusterValue(alias, "ssl.endpoint.identification.algorithm"); ok {
		switch v := strings.TrimSpace(pr.Value); strings.ToLower(v) {
		case "":
			s.SkipHostnameCheck = true
		case "https":
		default:
			p.warnSev(SeverityWarning, pr, "", "ssl.endpoint.identification.algorithm %q: Kafka knows only https (check host names) or empty (do not)", v)
		}
	}
}

// clientOverrides copies alias's producer., consumer. and admin. keys into c's maps, leaving out (with a warning) secrets.
func (p *parser) clientOverrides(alias string, c *Cluster) {
	for suffix, pr := range p.clusterKeys[alias] {
		for _, sp := range clientSubPrefixes {
			if k, ok := strings.CutPrefix(suffix, sp); ok && k != "" {
				if IsSecretKey(k) {
					p.warnSev(SeverityWarning, pr, alias+"."+k, "kmigrate uses one set of credentials per cluster and ignores per-client secrets; set %s.%s instead", alias, k)
					continue
				}
				m := map[string]map[string]string{"producer.": c.Producer, "consumer.": c.Consumer, "admin.": c.Admin}[sp]
				m[k] = pr.Value
			}
		}
	}
}

// flowValue returns the effective connector key k of a flow: "A->B.k", else "k".
func (p *parser) flowValue(src, tgt, k string) (Property, bool) {
	if fk := p.flowKeys[src+"->"+tgt]; fk != nil {
		if pr, ok := fk.keys[k]; ok {
			return pr, true
		}
	}
	pr, ok := p.global[k]
	return pr, ok
}

// flow reads the flow src->tgt: its settings, whether it runs, its naming and its filters.
func (p *parser) flow(src, tgt string) (*Flow, error) {
	get := func(k string) (Property, bool) { return p.flowValue(src, tgt, k) }
	f := NewFlow(src, tgt, DefaultPolicy{Separator: "."})
	p.flowSettings(f)
	f.herder = p.herder(f)
	if pr, ok := get("enabled"); ok {
		// The connectors read "enabled" as a trimmed boolean; anything else makes MM2's
		// connector config fail.
		b, err := parseBool(pr)
		if err != nil {
			return nil, err
		}
		f.Enabled = b && f.herder
	}
	if err := p.flowNaming(f); err != nil {
		return nil, err
	}
	if pr, ok := get("offset-syncs.topic.location"); ok {
		v := strings.TrimSpace(pr.Value)
		if v != "source" && v != "target" {
			return nil, keyErr(pr, "%q must be source or target", pr.Value)
		}
		f.OffsetSyncsLocation = v
	}
	if err := p.flowFilters(f); err != nil {
		return nil, err
	}
	if err := f.compile(); err != nil {
		return nil, fmt.Errorf("flow %s: %w", f.Name(), err)
	}
	return f, nil
}

// flowSettings copies the connector keys of f (unprefixed, then "A->B." ones) into f.Settings, leaving out client keys and secrets.
func (p *parser) flowSettings(f *Flow) {
	// Settings carry connector keys for the engine; connection secrets stay in Cluster.Security
	// so that a printed or serialised Flow never shows one.
	for k, pr := range p.global {
		if !clientKeys[k] && !IsSecretKey(k) {
			f.Settings[k] = pr.Value
		}
	}
	if fk := p.flowKeys[f.Name()]; fk != nil {
		for k, pr := range fk.keys {
			if !IsSecretKey(k) {
				f.Settings[k] = pr.Value
			}
		}
	}
}

// herder reports whether MM2 starts a herder for the pair of f.
func (p *parser) herder(f *Flow) bool {
	// MM2 starts a herder for the pair only if "A->B.enabled" or emit.heartbeats.enabled is
	// exactly "true" (MirrorMakerConfig.clusterPairs: Boolean.parseBoolean, untrimmed;
	// heartbeats default to on). Without a herder nothing of the flow runs.
	herder := true
	if hb, ok := p.flowValue(f.Source, f.Target, "emit.heartbeats.enabled"); ok {
		herder = strings.EqualFold(hb.Value, "true")
	}
	if fk := p.flowKeys[f.Name()]; fk != nil {
		if pr, ok := fk.keys["enabled"]; ok && strings.EqualFold(pr.Value, "true") {
			herder = true
		}
	}
	return herder
}

// flowNaming sets the separators and the replication policy of f; it fails on an invalid boolean or an unsupported policy class.
func (p *parser) flowNaming(f *Flow) error {
	get := func(k string) (Property, bool) { return p.flowValue(f.Source, f.Target, k) }
	sep := "."
	if pr, ok := get("replication.policy.separator"); ok {
		sep = pr.Value
		if sep == "" {
			p.warnSev(SeverityWarning, pr, "", "empty separator: MM2 joins names with nothing (offset syncs topic %q)", "mm2-offset-syncs"+f.Target+"internal")
		}
	}
	f.Separator = sep
	f.InternalTopicSeparator = true
	if pr, ok := get("replication.policy.internal.topic.separator.enabled"); ok {
		b, err := parseBool(pr)
		if err != nil {
			return err
		}
		f.InternalTopicSeparator = b
	}
	f.Policy = DefaultPolicy{Separator: sep}
	if pr, ok := get("replication.policy.class"); ok {
		v := strings.TrimSpace(pr.Value)
		switch v {
		case DefaultPolicyClass, "DefaultReplicationPolicy":
		case IdentityPolicyClass, "IdentityReplicationPolicy":
			f.Policy = IdentityPolicy{Separator: sep}
		default:
			return keyErr(pr, "replication policy %q is not supported: use %s or %s", pr.Value, DefaultPolicyClass, IdentityPolicyClass)
		}
		if !strings.Contains(v, ".") && !p.warnedOnce[pr.Key] {
			// MM2 loads the class by name: a simple name is a ClassNotFound at start-up.
			p.warnedOnce[pr.Key] = true
			p.warn(pr, "org.apache.kafka.connect.mirror."+v, "MM2 needs the full class name: %q fails with \"could not be found\" when MM2 starts; kmigrate accepts it", v)
		}
	}
	return nil
}

// flowFilters sets the topic and group lists of f (each from its first key set); it fails on a regex RE2 cannot compile.
func (p *parser) flowFilters(f *Flow) error {
	lists := []struct {
		keys []string
		dst  *[]string
	}{
		{[]string{"topics"}, &f.Topics},
		{[]string{"topics.exclude", "topics.blacklist"}, &f.TopicsExclude},
		{[]string{"groups"}, &f.Groups},
		{[]string{"groups.exclude", "groups.blacklist"}, &f.GroupsExclude},
	}
	for _, l := range lists {
		for _, k := range l.keys {
			pr, ok := p.flowValue(f.Source, f.Target, k)
			if !ok {
				continue
			}
			list := parseList(pr.Value)
			if _, err := compilePattern(list); err != nil {
				return keyErr(pr, "%v; kmigrate compiles these regexes with Go's RE2, which has no lookaround, backreferences or possessive quantifiers", err)
			}
			*l.dst = list
			break
		}
	}
	return nil
}

func parseBool(pr Property) (bool, error) {
	b, ok := ParseBool(pr.Value)
	if !ok {
		return false, keyErr(pr, "%q must be true or false", pr.Value)
	}
	return b, nil
}

// KeyError is a configuration error about one key: it names the key and its line (0 when the
// key is missing) so that users and Lint can point at it.
type KeyError struct {
	Key  string
	Line int
	Msg  string
}

func (e *KeyError) Error() string {
	if e.Line == 0 {
		return fmt.Sprintf("%s: %s", e.Key, e.Msg)
	}
	return fmt.Sprintf("%s (line %d): %s", e.Key, e.Line, e.Msg)
}

// keyErr builds the error about pr. Should a message about a secret-bearing key ever quote its
// value, the value is redacted.
func keyErr(pr Property, format string, args ...any) error {
	return &KeyError{Key: pr.Key, Line: pr.Line, Msg: scrub(pr, fmt.Sprintf(format, args...))}
}

// scrub replaces the value of pr in msg when pr is secret-bearing.
func scrub(pr Property, msg string) string {
	if IsSecretKey(pr.Key) && strings.TrimSpace(pr.Value) != "" {
		msg = strings.ReplaceAll(msg, pr.Value, Redacted)
		if t := strings.TrimSpace(pr.Value); t != pr.Value {
			msg = strings.ReplaceAll(msg, t, Redacted)
		}
	}
	return msg
}
