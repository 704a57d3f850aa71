package mm2

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"regexp"
	"sort"
	"strings"
	"unicode/utf8"
)

// Severity ranks a Finding.
type Severity string

const (
	// SeverityError: MM2 refuses the file, or certainly does not do what the file says
	// (an ignored key, a disabled flow, a regex that cannot match what was meant).
	SeverityError Severity = "error"
	// SeverityWarning: likely to bite (defaults that need three brokers, a value that is
	// probably wrong).
	SeverityWarning Severity = "warning"
	// SeverityInfo: worth knowing, harmless as written.
	SeverityInfo Severity = "info"
)

// Finding is one thing Lint found, at a line of the file (0 for a key that is missing).
type Finding struct {
	Line       int      `json:"line"`
	Key        string   `json:"key"`
	Severity   Severity `json:"severity"`
	Message    string   `json:"message"`
	Suggestion string   `json:"suggestion,omitempty"`
}

// Lint reports what MirrorMaker 2 would silently ignore or misread in an mm2.properties file,
// as 3.7.1 reads it and, where they differ, 4.x: unknown or misspelled keys (with
// suggestions), flow keys naming an undeclared alias or one in the wrong case, inline
// "# comments" that become part of a value, trailing blanks that turn "true" false, regexes
// that do not compile or mean something else in Java, missing or -1 replication factors, flows
// without bootstrap servers, settings MM2 ignores where they are written, and keys only one of
// the two releases reads. The error is only for a file that cannot be read, or is beyond
// MaxFileSize or MaxLineSize (a *LimitError in a *LineError); a file that does not parse is
// reported as findings. No finding quotes the value of a secret-bearing key (IsSecretKey).
func Lint(r io.Reader) ([]Finding, error) {
	data, err := readBounded(r)
	if err != nil {
		var le *LineError
		if errors.As(err, &le) {
			return nil, err
		}
		return nil, fmt.Errorf("read MM2 config: %w", err)
	}
	var out []Finding
	add := func(line int, key string, sev Severity, sugg, format string, args ...any) {
		out = append(out, Finding{Line: line, Key: key, Severity: sev, Message: fmt.Sprintf(format, args...), Suggestion: sugg})
	}
	lintBytes(data, add)
	props, err := parseProperties(data)
	if err != nil {
		var le *LineError
		var lim *LimitError
		if errors.As(err, &lim) {
			return nil, err
		}
		if errors.As(err, &le) {
			add(le.Line, le.Key, SeverityError, "", "%v (MM2 refuses to start)", le.Err)
			return sortFindings(out), nil
		}
		return nil, err
	}

	all, _ := parseProperties(data) // the value checks see every key
	cfg, stopped, err := parseRemoving(props, add)
	if err != nil {
		return nil, err
	}
	if cfg == nil {
		return sortFindings(out), nil
	}
	for _, w := range cfg.Warnings {
		sev := w.sev
		if sev == "" {
			sev = SeverityError
		}
		add(w.Line, w.Key, sev, w.Suggestion, "%s", w.Message)
	}
	for _, pr := range all.All() {
		lintValue(pr, add)
	}
	lintRegexes(all, stopped, add)
	lintReplicationFactors(props, cfg, add)
	lintFlows(cfg, all, add)
	lintV4(all, cfg, add)
	lintKmirror(all, add)
	return sortFindings(out), nil
}

// parseRemoving parses props, removing each key that stops it (a finding, and in stopped) so that one bad key hides no other; cfg is nil if the rest does not parse, err an error about no key.
func parseRemoving(props *Properties, add addFunc) (cfg *Config, stopped map[string]bool, err error) {
	stopped = map[string]bool{}
	for attempt := 0; attempt < 64; attempt++ {
		cfg, err = FromProperties(props)
		if err == nil {
			return cfg, stopped, nil
		}
		var ke *KeyError
		if !errors.As(err, &ke) {
			return nil, nil, err
		}
		add(ke.Line, ke.Key, SeverityError, "", "%s", ke.Msg)
		stopped[ke.Key] = true
		if ke.Key == "clusters" || !props.remove(ke.Key) {
			return nil, stopped, nil
		}
	}
	return nil, stopped, nil
}

type addFunc func(line int, key string, sev Severity, sugg, format string, args ...any)

func sortFindings(f []Finding) []Finding {
	sort.SliceStable(f, func(i, j int) bool {
		if f[i].Line != f[j].Line {
			return f[i].Line < f[j].Line
		}
		return f[i].Key < f[j].Key
	})
	return f
}

// remove deletes key, reporting whether it was there.
func (p *Properties) remove(key string) bool {
	i, ok := p.index[key]
	if !ok {
		return false
	}
	p.list = append(p.list[:i:i], p.list[i+1:]...)
	delete(p.index, key)
	for j := i; j < len(p.list); j++ {
		p.index[p.list[j].Key] = j
	}
	return true
}

// lintBytes flags non-ASCII text: MM2 loads the file with Properties.load(InputStream), which
// reads ISO-8859-1, so UTF-8 bytes become other characters. A line of a secret-bearing key,
// continuation lines included, gets a finding that shows nothing of it.
func lintBytes(data []byte, add addFunc) {
	key, continued := "", false
	for n, line := range bytes.Split(data, []byte("\n")) {
		line = bytes.TrimSuffix(line, []byte("\r"))
		trimmed := bytes.TrimLeft(line, " \t\f")
		if !continued {
			if len(trimmed) == 0 || trimmed[0] == '#' || trimmed[0] == '!' {
				key = string(trimmed) // a comment: checked as its own text
			} else {
				key = lineKey(trimmed)
			}
		}
		isComment := !continued && len(trimmed) > 0 && (trimmed[0] == '#' || trimmed[0] == '!')
		continued = !isComment && continuesLine(string(trimmed))
		i := bytes.IndexFunc(line, func(r rune) bool { return r >= utf8.RuneSelf })
		if i < 0 {
			continue
		}
		// One finding per line is enough.
		if isComment || !IsSecretKey(key) {
			r, size := utf8.DecodeRune(line[i:])
			sugg := ""
			if r != utf8.RuneError && r <= 0xFFFF {
				sugg = fmt.Sprintf(`\u%04x`, r)
			}
			add(n+1, "", SeverityWarning, sugg, "non-ASCII character %q: MM2 reads the file as ISO-8859-1, so it would see other characters; write it as a \\uXXXX escape", string(line[i:i+size]))
			continue
		}
		add(n+1, "", SeverityWarning, "", "non-ASCII character in a secret: MM2 reads the file as ISO-8859-1, so it would see other characters; write it as a \\uXXXX escape (the value is not shown)")
	}
}

// lineKey is the key of a properties line, roughly: up to the first separator.
func lineKey(b []byte) string {
	s := strings.TrimLeft(string(b), " \t\f")
	if i := strings.IndexAny(s, "=: \t\f"); i >= 0 {
		s = s[:i]
	}
	return s
}

var inlineComment = regexp.MustCompile(`\s[#!]`)

func lintValue(pr Property, add addFunc) {
	secret := IsSecretKey(pr.Key)
	if loc := inlineComment.FindStringIndex(pr.Value); loc != nil {
		kept := strings.TrimSpace(pr.Value[:loc[0]])
		if secret {
			add(pr.Line, pr.Key, SeverityError, "", "the value contains \" #\": a comment only starts a line, so MM2 keeps the rest in the value (the value is a secret and is not shown)")
		} else {
			add(pr.Line, pr.Key, SeverityError, pr.Key+"="+kept, "%q: a comment only starts a line, so MM2 keeps %q in the value; move the comment to its own line", pr.Value, strings.TrimSpace(pr.Value[loc[0]:]))
		}
	}
	// MirrorMakerConfig.clusterPairs reads these with Boolean.parseBoolean, untrimmed, to decide
	// which herders exist; the connectors read them trimmed.
	if strings.HasSuffix(pr.Key, ".enabled") && (strings.Contains(pr.Key, "->") || pr.Key == "emit.heartbeats.enabled") {
		if pr.Value != strings.TrimRight(pr.Value, " \t\f") && strings.EqualFold(strings.TrimSpace(pr.Value), "true") {
			add(pr.Line, pr.Key, SeverityWarning, pr.Key+"=true", "trailing blanks after true: MM2 reads %q as true in the connectors but as false when it decides which flows to start, so with emit.heartbeats.enabled=false this flow never starts; remove the blanks", pr.Value)
		}
	}
}

// javaOnly are regex constructs that Java accepts and Go's RE2 rejects or reads differently.
var javaOnly = []struct {
	re   *regexp.Regexp
	what string
}{
	{regexp.MustCompile(`\(\?<?[=!]`), "lookaround (?=, (?!, (?<=, (?<!"},
	{regexp.MustCompile(`\(\?>`), "atomic group (?>"},
	{regexp.MustCompile(`\\[1-9]`), "backreference \\N"},
	{regexp.MustCompile(`[*+?}][+]`), "possessive quantifier (*+, ++, ?+)"},
	{regexp.MustCompile(`\\[ZGhHRXvV]`), "Java-only escape (\\Z, \\G, \\h, \\R, \\X, \\v)"},
	{regexp.MustCompile(`\\p\{(java|Is|In)`), "Java character class \\p{java...}/\\p{Is...}/\\p{In...}"},
	{regexp.MustCompile(`\[[^\]]*&&`), "character class intersection &&"},
}

var splitRepeat = regexp.MustCompile(`\{\d*$`)

func isListRegexKey(suffix string) bool {
	switch suffix {
	case "topics", "topics.exclude", "topics.blacklist", "groups", "groups.exclude", "groups.blacklist",
		"config.properties.exclude", "config.properties.blacklist":
		return true
	}
	return false
}

func lintRegexes(props *Properties, stopped map[string]bool, add addFunc) {
	for _, pr := range props.All() {
		suffix := pr.Key
		if i := strings.Index(suffix, "->"); i >= 0 {
			if j := strings.Index(suffix[i:], "."); j >= 0 {
				suffix = suffix[i+j+1:]
			}
		}
		if !isListRegexKey(suffix) {
			continue
		}
		if strings.HasSuffix(suffix, ".blacklist") {
			add(pr.Line, pr.Key, SeverityInfo, strings.TrimSuffix(pr.Key, "blacklist")+"exclude", "deprecated name: MM2 still reads it, but any %s wins over it", strings.TrimSuffix(suffix, "blacklist")+"exclude")
		}
		lintSwallowedBackslashes(pr, add)
		list := parseList(pr.Value)
		if len(list) == 0 {
			add(pr.Line, pr.Key, SeverityWarning, "", "an empty list matches nothing: MM2 mirrors no %s in this flow", strings.SplitN(suffix, ".", 2)[0])
			continue
		}
		for i, item := range list {
			if item == "" {
				add(pr.Line, pr.Key, SeverityWarning, "", "item %d is empty (an extra comma): it matches only the empty name", i+1)
				continue
			}
			if i+1 < len(list) && splitRepeat.MatchString(item) {
				add(pr.Line, pr.Key, SeverityError, "", "%q,%q: MM2 splits lists at commas, also inside a {m,n} repetition; write the alternatives out instead", item, list[i+1])
			}
			for _, j := range javaOnly {
				if j.re.MatchString(item) {
					add(pr.Line, pr.Key, SeverityError, "", "regex %q uses %s: Java reads it, but Go's RE2 (kmigrate, kmirror) cannot; rewrite it without", item, j.what)
				}
			}
			if _, err := regexp.Compile(item); err != nil && !anyJavaOnly(item) && !stopped[pr.Key] && !strings.HasPrefix(item, "*") {
				add(pr.Line, pr.Key, SeverityError, "", "regex %q does not compile: %v", item, err)
			}
			if strings.HasPrefix(item, "*") {
				add(pr.Line, pr.Key, SeverityError, "."+item, "regex %q starts with '*' (a glob, not a regex): Java refuses it; write .%s", item, item)
			}
		}
	}
}

func anyJavaOnly(s string) bool {
	for _, j := range javaOnly {
		if j.re.MatchString(s) {
			return true
		}
	}
	return false
}

// replication factor keys and MM2 3.7.1's defaults.
var rfKeys = []struct {
	key string
	def int
}{
	{"replication.factor", 2},
	{"checkpoints.topic.replication.factor", 3},
	{"heartbeats.topic.replication.factor", 3},
	{"offset-syncs.topic.replication.factor", 3},
	{"offset.storage.replication.factor", 3},
	{"status.storage.replication.factor", 3},
	{"config.storage.replication.factor", 3},
}

// DefaultReplicationFactor is the replication factor MM2 3.7.1 uses for key (one of its
// replication factor keys) when the key is not set; ok is false for any other key.
func DefaultReplicationFactor(key string) (rf int, ok bool) {
	for _, k := range rfKeys {
		if k.key == key {
			return k.def, true
		}
	}
	return 0, false
}

func lintReplicationFactors(props *Properties, cfg *Config, add addFunc) {
	for _, rf := range rfKeys {
		var found []Property
		if pr, ok := props.lookup(rf.key); ok {
			found = append(found, pr)
		}
		for _, a := range cfg.Clusters {
			if pr, ok := props.lookup(a + "." + rf.key); ok {
				found = append(found, pr)
			}
		}
		for _, f := range cfg.Flows {
			if pr, ok := props.lookup(f.Name() + "." + rf.key); ok {
				found = append(found, pr)
			}
		}
		if len(found) == 0 {
			add(0, rf.key, SeverityWarning, fmt.Sprintf("%s=1 for a one-broker test cluster", rf.key),
				"not set: MM2 uses %d, so on a cluster with fewer than %d brokers it cannot create the topic and stops; set it explicitly", rf.def, rf.def)
			continue
		}
		for _, pr := range found {
			if strings.TrimSpace(pr.Value) == "-1" {
				add(pr.Line, pr.Key, SeverityWarning, "", "-1 (the broker's default) needs brokers 2.4 or later (KIP-464): a 2.3 cluster rejects the topic creation; give a number")
			}
		}
	}
}

func (p *Properties) lookup(key string) (Property, bool) {
	i, ok := p.index[key]
	if !ok {
		return Property{}, false
	}
	return p.list[i], true
}

func lintFlows(cfg *Config, props *Properties, add addFunc) {
	enabled := 0
	for _, f := range cfg.Flows {
		if !f.Enabled {
			continue
		}
		enabled++
		line := props.Line(f.Name() + ".enabled")
		for _, a := range []string{f.Source, f.Target} {
			c := cfg.Cluster[a]
			if c == nil || len(c.Bootstrap) == 0 {
				add(line, f.Name()+".enabled", SeverityError, a+".bootstrap.servers=HOST:PORT",
					"flow %s is enabled but cluster %s has no bootstrap servers", f.Name(), a)
			}
		}
	}
	if enabled == 0 {
		add(props.Line("clusters"), "clusters", SeverityWarning, "", "no flow is enabled (A->B.enabled=true): MM2 only emits heartbeats")
	}
	for _, a := range cfg.Clusters {
		c := cfg.Cluster[a]
		if c == nil || !strings.HasPrefix(c.Security.Protocol, "SASL_") {
			continue
		}
		if _, ok := props.lookup(a + ".sasl.jaas.config"); ok {
			continue
		}
		if _, ok := props.lookup("sasl.jaas.config"); ok {
			continue
		}
		key := a + ".security.protocol"
		if _, ok := props.lookup(key); !ok {
			key = "security.protocol"
		}
		add(props.Line(key), key, SeverityError, a+".sasl.jaas.config=...", "cluster %s uses %s but has no sasl.jaas.config: MM2 cannot log in", a, c.Security.Protocol)
	}
}

// lintSwallowedBackslashes flags regex escapes that the properties format eats: Java's
// Properties.load turns "\." into "." and "\d" into "d" before MM2 sees the regex, so a regex
// escape needs a doubled backslash in the file.
func lintSwallowedBackslashes(pr Property, add addFunc) {
	raw := pr.Raw
	for i := 0; i < len(raw)-1; i++ {
		if raw[i] != '\\' {
			continue
		}
		c := raw[i+1]
		i++
		switch c {
		case '\\', 't', 'n', 'r', 'f', 'u', ' ', ',', '\t':
			continue
		}
		esc := `\` + string(c)
		fixed := strings.ReplaceAll(pr.Raw, esc, `\\`+string(c))
		if c == '.' || c == '-' || c == '_' {
			add(pr.Line, pr.Key, SeverityWarning, pr.Key+"="+fixed,
				"%s: the properties format drops the backslash, so MM2's regex gets %q (any character, or the character itself) instead of a literal; write %s", esc, string(c), `\\`+string(c))
		} else {
			add(pr.Line, pr.Key, SeverityError, pr.Key+"="+fixed,
				"%s: the properties format drops the backslash, so MM2's regex gets %q; write %s", esc, string(c), `\\`+string(c))
		}
		return
	}
}

// lintKmirror says which keys only kmirror reads, and what offset.flush.interval.ms, which
// looks like kmirror's commit bound, does and does not do.
func lintKmirror(props *Properties, add addFunc) {
	for _, pr := range props.All() {
		suffix := pr.Key
		if i := strings.Index(suffix, "->"); i >= 0 {
			if j := strings.Index(suffix[i:], "."); j >= 0 {
				suffix = suffix[i+j+1:]
			}
		}
		if what, ok := KmirrorKeys[suffix]; ok {
			add(pr.Line, pr.Key, SeverityInfo, "", "read by kmirror only (%s); MirrorMaker 2 ignores it", what)
		}
		if suffix == "offset.flush.interval.ms" || strings.HasSuffix(suffix, ".offset.flush.interval.ms") {
			add(pr.Line, pr.Key, SeverityInfo, "", "without exactly.once.source.support, MirrorMaker 2's worker commits its source offsets this often (default 60000), and a restart mirrors again what it copied since; with it, transactions follow transaction.boundary instead. "+
				"kmirror ignores it: its records and its offset map commit in one transaction, so a restart mirrors nothing twice, and %s bounds how long a record waits for that commit (default 1000; kmirror commits sooner when the flow pauses)", KeyCommitLatency)
		}
	}
}
