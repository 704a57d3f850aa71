package mm2

import "github.com/kmigrate/kmigrate/kconn"

// Cluster is one cluster alias of an MM2 file, or a cluster given by command-line flags.
type Cluster struct {
	Alias     string
	Bootstrap []string
	Security  kconn.Security
	// Producer, Consumer and Admin hold "<alias>.producer.*" style overrides (key without the
	// prefix), for the engine to map onto franz-go options where it can.
	Producer map[string]string
	Consumer map[string]string
	Admin    map[string]string
	// ExactlyOnceSourceSupport is "<alias>.exactly.once.source.support" (the worker key MM2
	// reads for the flows whose target is this cluster), or the unprefixed key, which MM2
	// ignores with a warning; "" when neither is set.
	ExactlyOnceSourceSupport string
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
	// InternalTopicSeparator is replication.policy.internal.topic.separator.enabled: whether
	// Separator also joins the parts of the offset-syncs and checkpoints topic names (else ".").
	// Default: true.
	InternalTopicSeparator bool

	// Settings holds every effective key for this flow (flow-prefixed keys win over global
	// ones), so the engine can read the keys it honours.
	Settings map[string]string

	topics, topicsExclude, groups, groupsExclude Pattern
	compiled                                     bool // the four Patterns hold the lists
	herder                                       bool // MM2 would start a herder for the pair
}

// Warning is a key the parser did not use, or a value it doubts, with a suggestion where it
// has one (e.g. offset.max.lag -> offset.lag.max).
type Warning struct {
	Line       int    `json:"line"`
	Key        string `json:"key"`
	Message    string `json:"message"`
	Suggestion string `json:"suggestion,omitempty"`

	sev Severity // for Lint; "" means SeverityError
}

// Config is a parsed mm2.properties file.
type Config struct {
	// Clusters lists the aliases of the "clusters" key, in order.
	Clusters []string
	Cluster  map[string]*Cluster
	Flows    []*Flow
	Warnings []Warning

	props *Properties // the parsed file, for flows no "A->B." key names
}
