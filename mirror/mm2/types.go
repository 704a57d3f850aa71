package mm2

import "regexp"

// Secret is a password or JAAS configuration. It prints as "[redacted]" so it can never reach a
// log or a report by accident; use Reveal to read it.
type Secret string

// String implements fmt.Stringer.
func (s Secret) String() string {
	if s == "" {
		return ""
	}
	return "[redacted]"
}

// GoString implements fmt.GoStringer, so %#v redacts too.
func (s Secret) GoString() string { return s.String() }

// MarshalText redacts the secret in JSON, YAML and text encodings.
func (s Secret) MarshalText() ([]byte, error) { return []byte(s.String()), nil }

// Reveal returns the secret itself.
func (s Secret) Reveal() string { return string(s) }

// Security holds the connection security settings of one cluster, as Kafka's client keys name
// them (security.protocol, sasl.*, ssl.*).
type Security struct {
	// Protocol is PLAINTEXT, SSL, SASL_PLAINTEXT or SASL_SSL. Default: PLAINTEXT.
	Protocol string
	// SASLMechanism is PLAIN, SCRAM-SHA-256 or SCRAM-SHA-512. Default: PLAIN when SASL is on.
	SASLMechanism string
	SASLUser      string
	SASLPassword  Secret

	// PEM files.
	CAFile   string
	CertFile string
	KeyFile  string
	// Truststore and keystore files (JKS or PKCS12), with their passwords.
	TruststoreFile     string
	TruststoreType     string
	TruststorePassword Secret
	KeystoreFile       string
	KeystoreType       string
	KeystorePassword   Secret
	KeyPassword        Secret
	// ServerName overrides the TLS server name; InsecureSkipVerify disables verification
	// (ssl.endpoint.identification.algorithm= with an empty value only skips host names).
	ServerName         string
	InsecureSkipVerify bool
	SkipHostnameCheck  bool
}

// Cluster is one cluster alias of an MM2 file, or a cluster given by command-line flags.
type Cluster struct {
	Alias     string
	Bootstrap []string
	Security  Security
	// Producer, Consumer and Admin hold "<alias>.producer.*" style overrides (key without the
	// prefix), for the engine to map onto franz-go options where it can.
	Producer map[string]string
	Consumer map[string]string
	Admin    map[string]string
}

// ReplicationPolicy names target topics, as MM2's replication.policy.class does.
type ReplicationPolicy interface {
	// TargetTopic returns the name of sourceTopic on the target of a flow from sourceAlias.
	TargetTopic(sourceAlias, sourceTopic string) string
	// Name is the Java class name the policy stands for.
	Name() string
}

// Flow is one replication flow "Source->Target" and the settings that apply to it (MM2 reads a
// key first as "Source->Target.key", then as "key").
type Flow struct {
	Source  string
	Target  string
	Enabled bool

	Topics        []string // regexes; Default: [".*"]
	TopicsExclude []string // Default: [".*[\-\.]internal", ".*\.replica", "__.*"]
	Groups        []string // Default: [".*"]
	GroupsExclude []string // Default: ["console-consumer-.*", "connect-.*", "__.*"]

	Policy ReplicationPolicy
	// Separator is replication.policy.separator. Default: ".".
	Separator string
	// OffsetSyncsLocation is "source" or "target". Default: "source".
	OffsetSyncsLocation string

	// Settings holds every effective key for this flow (flow-prefixed keys win over global
	// ones), so the engine can read the keys it honours.
	Settings map[string]string

	topics, topicsExclude, groups, groupsExclude []*regexp.Regexp
}

// Warning is a key the parser did not use, or a value it doubts, with a suggestion where it
// has one (e.g. offset.max.lag -> offset.lag.max).
type Warning struct {
	Line       int    `json:"line"`
	Key        string `json:"key"`
	Message    string `json:"message"`
	Suggestion string `json:"suggestion,omitempty"`
}

// Config is a parsed mm2.properties file.
type Config struct {
	// Clusters lists the aliases of the "clusters" key, in order.
	Clusters []string
	Cluster  map[string]*Cluster
	Flows    []*Flow
	Warnings []Warning
}
