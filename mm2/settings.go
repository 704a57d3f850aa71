package mm2

import (
	"errors"
	"fmt"
	"math"
	"regexp"
	"strconv"
	"strings"
	"time"
)

// This file is the one reader of a flow's connector keys (Flow.Settings): every tool that
// honours an MM2 key reads it here, so that a key means one thing everywhere. Each reader
// follows what MirrorMaker 2 3.7.1 does with the value, written beside it; where kmigrate is
// stricter than MM2 the comment says so and why.

// SettingError is a key whose value kmigrate refuses, with what it accepts instead. Value is
// redacted for a secret-bearing key (IsSecretKey).
type SettingError struct {
	Flow   string // "A->B", or "" for a key that belongs to no flow (a client override)
	Key    string
	Value  string
	Accept string // what to write instead
}

func (e *SettingError) Error() string {
	if e.Flow == "" {
		return fmt.Sprintf("%s=%q: %s", e.Key, e.Value, e.Accept)
	}
	return fmt.Sprintf("flow %s: %s=%q: %s", e.Flow, e.Key, e.Value, e.Accept)
}

// NewSettingError builds the error about key=value of flow ("" for none); accept says what to
// write instead.
func NewSettingError(flow, key, value, accept string) *SettingError {
	if IsSecretKey(key) {
		value = Redacted
	}
	return &SettingError{Flow: flow, Key: key, Value: value, Accept: accept}
}

// ParseBool reads a BOOLEAN key as MM2's ConfigDef does: the value trimmed, "true" or
// "false" in any case. Anything else ("1", "yes", "on") makes MM2 refuse the connector config.
func ParseBool(v string) (b, ok bool) {
	switch strings.ToLower(strings.TrimSpace(v)) {
	case "true":
		return true, true
	case "false":
		return false, true
	}
	return false, false
}

// Errors of ParseDuration, for errors.Is.
var (
	ErrNotWholeNumber = errors.New("not a whole number")
	ErrTooLarge       = errors.New("too large for a duration")
)

// MaxDurationIn is the largest count of unit a time.Duration holds (about 292 years).
func MaxDurationIn(unit time.Duration) int64 { return int64(math.MaxInt64 / unit) }

// ParseDuration reads a LONG key counted in unit (time.Second for "*.seconds" keys,
// time.Millisecond for "*.ms" keys) as MM2's ConfigDef does, trimmed, with an optional sign;
// n is the number as written and d the duration. It refuses a value that is not a whole
// number (ErrNotWholeNumber) and one beyond MaxDurationIn(unit) either way (ErrTooLarge):
// MM2 itself fails on values a thousandfold larger (Duration.toMillis overflows), kmigrate
// already at 292 years. Zero and negative values are the caller's to judge.
func ParseDuration(v string, unit time.Duration) (n int64, d time.Duration, err error) {
	n, err = strconv.ParseInt(strings.TrimSpace(v), 10, 64)
	switch {
	case errors.Is(err, strconv.ErrRange):
		return 0, 0, ErrTooLarge
	case err != nil:
		return 0, 0, ErrNotWholeNumber
	case n > MaxDurationIn(unit) || n < -MaxDurationIn(unit):
		return 0, 0, ErrTooLarge
	}
	return n, time.Duration(n) * unit, nil
}

// Task is one of MM2's periodic tasks, configured by the keys Name+".enabled" and
// Name+".interval.seconds", with MM2 3.7.1's defaults.
type Task struct {
	Name     string
	Enabled  bool          // default of <name>.enabled
	Interval time.Duration // default of <name>.interval.seconds
}

// EnabledKey is "<name>.enabled".
func (t Task) EnabledKey() string { return t.Name + ".enabled" }

// IntervalKey is "<name>.interval.seconds".
func (t Task) IntervalKey() string { return t.Name + ".interval.seconds" }

// MM2 3.7.1's periodic tasks (MirrorSourceConfig, MirrorCheckpointConfig) that kmigrate runs.
var (
	TaskRefreshTopics    = Task{"refresh.topics", true, 600 * time.Second}
	TaskSyncTopicConfigs = Task{"sync.topic.configs", true, 600 * time.Second}
	TaskRefreshGroups    = Task{"refresh.groups", true, 600 * time.Second}
	TaskEmitCheckpoints  = Task{"emit.checkpoints", true, 60 * time.Second}
	TaskSyncGroupOffsets = Task{"sync.group.offsets", false, 60 * time.Second}
)

// Schedule is a Task as a flow configures it.
type Schedule struct {
	// Enabled is <name>.enabled.
	Enabled bool
	// Interval is <name>.interval.seconds, or -1 when that is negative.
	Interval time.Duration
}

// On reports whether the task runs: enabled, with a positive interval.
func (s Schedule) On() bool { return s.Enabled && s.Interval > 0 }

// Schedule reads the two keys of task t, with MM2 3.7.1's defaults for absent keys.
//
// MM2 3.7.1 turns them into one period (MirrorSourceConfig.refreshTopicsInterval and its
// siblings): <name>.enabled=false gives -1 ms, else <name>.interval.seconds as given. Its
// Scheduler skips a negative period, so a negative interval switches the task off, as false
// does. A zero period is an IllegalArgumentException of the executor: for refresh.topics,
// sync.topic.configs and refresh.groups the connector fails to start and nothing of it runs;
// for sync.group.offsets the checkpoint task logs the exception and never syncs a group.
// emit.checkpoints is not scheduled: zero makes the checkpoint task emit without pause.
// kmigrate refuses zero for every task, enabled or not, so that no file holds an interval
// that breaks (or spins) once its task is switched on. A negative value is read as -1 here.
//
// Note that in MM2 3.7.1 the checkpoint connector starts no task at all when the checkpoints
// are off (emit.checkpoints.enabled=false or a negative interval), so sync.group.offsets does
// nothing then either; kmigrate runs the two independently.
func (f *Flow) Schedule(t Task) (Schedule, error) {
	s := Schedule{Enabled: t.Enabled, Interval: t.Interval}
	var errs []error
	if on, set, err := f.Bool(t.EnabledKey(), t.Enabled); err != nil {
		errs = append(errs, err)
	} else if set {
		s.Enabled = on
	}
	if v, ok := f.Settings[t.IntervalKey()]; ok {
		switch n, d, err := ParseDuration(v, time.Second); {
		case errors.Is(err, ErrTooLarge):
			errs = append(errs, f.settingError(t.IntervalKey(), v, fmt.Sprintf("too large: at most %d seconds (292 years); a negative value switches the task off", MaxDurationIn(time.Second))))
		case err != nil:
			errs = append(errs, f.settingError(t.IntervalKey(), v, "want a whole number of seconds; a negative value switches the task off"))
		case n == 0:
			errs = append(errs, f.settingError(t.IntervalKey(), v, fmt.Sprintf("zero is no interval: MM2 3.7.1 cannot schedule it; give a positive number of seconds, or a negative one (or %s=false) to switch the task off", t.EnabledKey())))
		case n < 0:
			s.Interval = -1
		default:
			s.Interval = d
		}
	}
	return s, errors.Join(errs...)
}

// Bool reads a BOOLEAN key of the flow (ParseBool): its value and whether it is set, def when
// it is not.
func (f *Flow) Bool(key string, def bool) (b, set bool, err error) {
	v, ok := f.Settings[key]
	if !ok {
		return def, false, nil
	}
	b, ok = ParseBool(v)
	if !ok {
		return def, true, f.settingError(key, v, "use true or false (MM2 refuses any other value)")
	}
	return b, true, nil
}

// ReplicationFactor reads a SHORT replication-factor key of the flow: -1 (the broker's
// default, brokers 2.4+) or a positive factor; set is false when the key is absent. MM2
// accepts any short here and fails later, when it creates the topic; kmigrate refuses 0 and
// values below -1 at once.
func (f *Flow) ReplicationFactor(key string) (rf int16, set bool, err error) {
	v, ok := f.Settings[key]
	if !ok {
		return 0, false, nil
	}
	n, perr := strconv.ParseInt(strings.TrimSpace(v), 10, 16)
	if perr != nil || n == 0 || n < -1 {
		return 0, true, f.settingError(key, v, "want -1 (the broker's default) or a positive replication factor")
	}
	return int16(n), true, nil
}

// List reads a LIST key of the flow as MM2's ConfigDef does: a blank value is the empty list,
// else the items split at commas and the blanks around them (empty items kept). keys are a key
// and its deprecated aliases: the first one set wins, as in MM2 (the new name over the old).
func (f *Flow) List(keys ...string) ([]string, bool) {
	for _, k := range keys {
		if v, ok := f.Settings[k]; ok {
			return parseList(v), true
		}
	}
	return nil, false
}

// ConfigExclude is config.properties.exclude (or its deprecated alias
// config.properties.blacklist), else MM2's DefaultConfigExclude: the topic configuration
// properties never copied to the target.
func (f *Flow) ConfigExclude() []string {
	if l, ok := f.List("config.properties.exclude", "config.properties.blacklist"); ok {
		return l
	}
	return clone(DefaultConfigExclude)
}

// DefaultConfigExclude is MM2 3.7.1's config.properties.exclude default
// (DefaultConfigPropertyFilter).
var DefaultConfigExclude = []string{
	`follower\.replication\.throttled\.replicas`,
	`leader\.replication\.throttled\.replicas`,
	`message\.timestamp\.difference\.max\.ms`,
	`message\.timestamp\.type`,
	`unclean\.leader\.election\.enable`,
	`min\.insync\.replicas`,
}

func (f *Flow) settingError(key, value, accept string) error {
	return NewSettingError(f.Name(), key, value, accept)
}

// Pattern is a filter list (topics, groups, config.properties.exclude and their excludes)
// compiled as MM2 3.7.1 compiles one: the items joined with "|" into one regex that must match
// the whole name (Java's Matcher.matches). Blank items are dropped: no topic, group or config
// property has an empty name. The zero Pattern, like an empty list, matches nothing.
type Pattern struct{ re *regexp.Regexp }

// CompilePattern compiles list; key names it in the error.
func CompilePattern(key string, list []string) (Pattern, error) {
	p, err := compilePattern(list)
	if err != nil {
		return Pattern{}, fmt.Errorf("%s: invalid regex %q: %w", key, strings.Join(list, ","), err)
	}
	return p, nil
}

func compilePattern(list []string) (Pattern, error) {
	items := make([]string, 0, len(list))
	for _, it := range list {
		if it = strings.TrimSpace(it); it != "" {
			items = append(items, it)
		}
	}
	if len(items) == 0 {
		return Pattern{}, nil
	}
	re, err := regexp.Compile(`\A(?:` + strings.Join(items, "|") + `)\z`)
	if err != nil {
		return Pattern{}, err
	}
	return Pattern{re}, nil
}

// Matches reports whether name matches one of the regexes.
func (p Pattern) Matches(name string) bool { return p.re != nil && p.re.MatchString(name) }

// OffsetSyncsTopicName is MM2's offset-syncs topic "mm2-offset-syncs<sep><alias><sep>internal"
// (sep "." unless replication.policy.internal.topic.separator.enabled says otherwise).
func OffsetSyncsTopicName(alias, sep string) string {
	return "mm2-offset-syncs" + sep + alias + sep + "internal"
}

// CheckpointsTopicName is MM2's checkpoints topic "<source-alias><sep>checkpoints<sep>internal".
func CheckpointsTopicName(sourceAlias, sep string) string {
	return sourceAlias + sep + "checkpoints" + sep + "internal"
}
