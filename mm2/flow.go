package mm2

import (
	"fmt"
	"strings"
)

// Java class names of the replication policies kmigrate implements.
const (
	DefaultPolicyClass  = "org.apache.kafka.connect.mirror.DefaultReplicationPolicy"
	IdentityPolicyClass = "org.apache.kafka.connect.mirror.IdentityReplicationPolicy"
)

// DefaultPolicy is MM2's DefaultReplicationPolicy: topic t of source alias A becomes
// A<Separator>t on the target. The separator is used as given; MM2's default is ".".
type DefaultPolicy struct {
	Separator string
}

// TargetTopic implements ReplicationPolicy.
func (p DefaultPolicy) TargetTopic(sourceAlias, sourceTopic string) string {
	return sourceAlias + p.Separator + sourceTopic
}

// Name implements ReplicationPolicy.
func (DefaultPolicy) Name() string { return DefaultPolicyClass }

// IdentityPolicy is MM2's IdentityReplicationPolicy: topics keep their names, except a
// heartbeats topic, which is prefixed as DefaultReplicationPolicy does so that heartbeats of
// several sources do not collide. Separator is that prefix's separator; "" means ".".
type IdentityPolicy struct {
	Separator string
}

// TargetTopic implements ReplicationPolicy.
func (p IdentityPolicy) TargetTopic(sourceAlias, sourceTopic string) string {
	if strings.HasSuffix(sourceTopic, HeartbeatsTopic) {
		sep := p.Separator
		if sep == "" {
			sep = "."
		}
		return sourceAlias + sep + sourceTopic
	}
	return sourceTopic
}

// Name implements ReplicationPolicy.
func (IdentityPolicy) Name() string { return IdentityPolicyClass }

// HeartbeatsTopic is the name of MM2 3.7.1's heartbeats topic (not configurable in 3.7.1).
const HeartbeatsTopic = "heartbeats"

// MM2 3.7.1 defaults of the filter lists (DefaultTopicFilter, DefaultGroupFilter).
var (
	DefaultTopics        = []string{".*"}
	DefaultTopicsExclude = []string{`.*[\-\.]internal`, `.*\.replica`, `__.*`}
	DefaultGroups        = []string{".*"}
	DefaultGroupsExclude = []string{"console-consumer-.*", "connect-.*", "__.*"}
)

// NewFlow returns the flow source->target with MM2's defaults: every topic and group except the
// default exclusions, offset syncs on the source, separator "." (or the policy's own).
func NewFlow(source, target string, policy ReplicationPolicy) *Flow {
	if policy == nil {
		policy = DefaultPolicy{Separator: "."}
	}
	sep := "."
	switch p := policy.(type) {
	case DefaultPolicy:
		sep = p.Separator
	case IdentityPolicy:
		if p.Separator != "" {
			sep = p.Separator
		}
	}
	f := &Flow{
		Source:                 source,
		Target:                 target,
		Topics:                 clone(DefaultTopics),
		TopicsExclude:          clone(DefaultTopicsExclude),
		Groups:                 clone(DefaultGroups),
		GroupsExclude:          clone(DefaultGroupsExclude),
		Policy:                 policy,
		Separator:              sep,
		OffsetSyncsLocation:    "source",
		InternalTopicSeparator: true,
		Settings:               map[string]string{},
		herder:                 true,
	}
	_ = f.compile() // the defaults compile
	return f
}

func clone(s []string) []string { return append([]string(nil), s...) }

// Name is "Source->Target".
func (f *Flow) Name() string { return f.Source + "->" + f.Target }

func (f *Flow) compile() error {
	for _, l := range []struct {
		list []string
		dst  *Pattern
		name string
	}{
		{f.Topics, &f.topics, "topics"},
		{f.TopicsExclude, &f.topicsExclude, "topics.exclude"},
		{f.Groups, &f.groups, "groups"},
		{f.GroupsExclude, &f.groupsExclude, "groups.exclude"},
	} {
		p, err := CompilePattern(l.name, l.list)
		if err != nil {
			return err
		}
		*l.dst = p
	}
	f.compiled = true
	return nil
}

// ensureCompiled compiles the lists of a Flow built by hand (not by NewFlow or Parse).
func (f *Flow) ensureCompiled() {
	if !f.compiled {
		_ = f.compile() // a list that does not compile matches nothing
	}
}

// TopicMatches reports whether MM2 would mirror sourceTopic in this flow
// (MirrorSourceConnector.shouldReplicateTopic): it passes the topic filter or is a heartbeats
// topic, it is not an internal topic (starting with "__" or ".", ending in ".internal" or
// "-internal"), and it is not a cycle (a topic that came from the target).
func (f *Flow) TopicMatches(sourceTopic string) bool {
	f.ensureCompiled()
	filtered := f.topics.Matches(sourceTopic) && !f.topicsExclude.Matches(sourceTopic)
	if !filtered && !f.isHeartbeatsTopic(sourceTopic) {
		return false
	}
	return !f.isInternalTopic(sourceTopic) && !f.isCycle(sourceTopic, 0)
}

// TopicMirrored is TopicMatches with the reason: whether the flow replicates sourceTopic,
// and when it does not, why, naming the flow and its topic lists.
func (f *Flow) TopicMirrored(sourceTopic string) (ok bool, why string) {
	if f.TopicMatches(sourceTopic) {
		return true, ""
	}
	return false, fmt.Sprintf("topic not mirrored: flow %s does not replicate %q (topics = %s, topics.exclude = %s, or an internal or cyclic topic)",
		f.Name(), sourceTopic, strings.Join(f.Topics, ","), strings.Join(f.TopicsExclude, ","))
}

// GroupMatches reports whether MM2 would checkpoint group in this flow (DefaultGroupFilter).
func (f *Flow) GroupMatches(group string) bool {
	f.ensureCompiled()
	return f.groups.Matches(group) && !f.groupsExclude.Matches(group)
}

// TargetTopic is the name of sourceTopic on the target.
func (f *Flow) TargetTopic(sourceTopic string) string {
	if f.Policy == nil {
		return DefaultPolicy{Separator: f.Separator}.TargetTopic(f.Source, sourceTopic)
	}
	return f.Policy.TargetTopic(f.Source, sourceTopic)
}

// internalSeparator is the separator of internal topic names: replication.policy.separator
// unless replication.policy.internal.topic.separator.enabled=false (DefaultReplicationPolicy).
func (f *Flow) internalSeparator() string {
	if f.InternalTopicSeparator {
		return f.Separator
	}
	return "."
}

// OffsetSyncsTopic is mm2-offset-syncs.<alias>.internal, where alias is the target alias when
// the syncs live on the source (the default) and the source alias when they live on the target.
func (f *Flow) OffsetSyncsTopic() string {
	alias := f.Target
	if f.OffsetSyncsOnTarget() {
		alias = f.Source
	}
	return OffsetSyncsTopicName(alias, f.internalSeparator())
}

// OffsetSyncsOnTarget reports whether offset-syncs.topic.location=target.
func (f *Flow) OffsetSyncsOnTarget() bool { return strings.EqualFold(f.OffsetSyncsLocation, "target") }

// CheckpointsTopic is <source>.checkpoints.internal, on the target.
func (f *Flow) CheckpointsTopic() string {
	return CheckpointsTopicName(f.Source, f.internalSeparator())
}

// HeartbeatsTopic is "heartbeats", on the target (and on the source, for the reverse herder).
func (f *Flow) HeartbeatsTopic() string { return HeartbeatsTopic }

func (f *Flow) isInternalTopic(t string) bool {
	return strings.HasSuffix(t, f.internalSeparator()+"internal") ||
		strings.HasPrefix(t, "__") || strings.HasPrefix(t, ".") ||
		strings.HasSuffix(t, "-internal") || strings.HasSuffix(t, ".internal")
}

// upstream returns the source alias and upstream name of a remote topic, as the policy's
// topicSource and upstreamTopic do; ok is false for a topic that is not remote.
func (f *Flow) upstream(t string) (source, upstream string, ok bool) {
	prefixed := true
	if _, identity := f.Policy.(IdentityPolicy); identity {
		prefixed = strings.HasSuffix(t, HeartbeatsTopic)
		if !prefixed {
			return f.Source, t, true
		}
	}
	sep := f.Separator
	if sep == "" {
		return "", "", false
	}
	parts := strings.Split(t, sep)
	for len(parts) > 0 && parts[len(parts)-1] == "" { // Java's split drops trailing empties
		parts = parts[:len(parts)-1]
	}
	if len(parts) < 2 {
		return "", "", false
	}
	if len(parts[0])+len(sep) > len(t) {
		return "", "", false
	}
	return parts[0], t[len(parts[0])+len(sep):], true
}

func (f *Flow) isCycle(t string, depth int) bool {
	if depth > 32 {
		return false
	}
	source, up, ok := f.upstream(t)
	switch {
	case !ok:
		return false
	case source == f.Target:
		return true
	case up == t:
		return false
	}
	return f.isCycle(up, depth+1)
}

func (f *Flow) isHeartbeatsTopic(t string) bool {
	for depth := 0; depth < 32; depth++ {
		_, up, ok := f.upstream(t)
		if !ok || up == t {
			break
		}
		t = up
	}
	return t == HeartbeatsTopic
}
