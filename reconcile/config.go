package reconcile

import (
	"errors"
	"fmt"
	"io"
	"log/slog"
	"regexp"
	"strings"

	"github.com/kmigrate/kmigrate/mm2"
	"github.com/kmigrate/kmigrate/offsetmap"
)

// DefaultGroupsExclude are the groups MM2 never syncs by default (groups.exclude), which a
// flow without an MM2 file excludes.
var DefaultGroupsExclude = strings.Join(mm2.DefaultGroupsExclude, "|")

// Config says which groups Plan looks at and how it finds E(G).
type Config struct {
	// Groups narrows the groups planned to those whose whole name matches. Default: nil, no
	// narrowing.
	Groups *regexp.Regexp
	// GroupsExclude, when set, replaces the flow's group selection: every group (that Groups
	// matches) except those whose whole name matches; regexp.MustCompile(`$^`) excludes
	// nothing. Default: nil, the flow selects the groups as MM2 and kmirror's group sync do
	// (Flow.GroupMatches: its groups and groups.exclude lists; a Flow that sets neither list
	// selects as MM2's defaults do, every group but DefaultGroupsExclude).
	GroupsExclude *regexp.Regexp
	// Topics selects source topics by name (full match). Default: every topic.
	Topics *regexp.Regexp

	// Flow names target topics (its replication policy), the checkpoints topic and where
	// MM2's offset syncs live, and says which topics are mirrored at all. Default:
	// mm2.NewFlow("source", "target", mm2.IdentityPolicy{}) (MM2 defaults, offset syncs on the
	// source, topics keep their names).
	Flow *mm2.Flow
	// CheckpointsTopic overrides the checkpoints topic on the target. Default:
	// Flow.CheckpointsTopic(), "<source alias>.checkpoints.internal".
	CheckpointsTopic string
	// OffsetSyncsTopic overrides the offset-syncs topic. Default: Flow.OffsetSyncsTopic(),
	// "mm2-offset-syncs.<alias>.internal", on the cluster Flow.OffsetSyncsOnTarget() says.
	OffsetSyncsTopic string

	// OffsetMap, when set, is kverify diff's offset map of its source topic: each answer of
	// that topic is checked against it (the proof says whether it agrees), never taken from
	// it, since kverify aligned by content too. It also names the topic's target topic.
	OffsetMap *offsetmap.TopicMap

	// Fields are what record fingerprints cover. Default: offsetmap.DefaultFields.
	Fields offsetmap.Fields
	// Before is how many source records below G Plan reads (more when gaps hide them).
	// Default: 16.
	Before int
	// Window is how many target records Plan reads per step around the copy of s*, and the
	// look-ahead after the last copy found, within which a later copy (a replay) is searched.
	// Default: 500.
	Window int
	// MaxTargetRead bounds the target records read for one group partition before Plan gives
	// up with "unmappable: record not found". Default: 20000.
	MaxTargetRead int
	// ScanLimit bounds the offsets Plan reads under read_committed from one position to step
	// over the markers and aborted records right after the copy of s*, and past a commit to
	// count the records left (a longer span is reported "not counted", never guessed); past
	// it the records of aborted transactions ahead of E(G) are counted as they are read,
	// without keeping the span. Default: 10000.
	ScanLimit int
	// Concurrency is how many group partitions are planned at once. Default: 8.
	Concurrency int
	// StateOffsets, by application id, are the changelog positions a Kafka Streams state
	// directory kept from the source names (its .checkpoint files, PlanStateDir): Plan
	// translates each for the application of that id (App.Checkpoints).
	StateOffsets map[string][]StateOffset
	// Logger receives progress at debug level. Default: discard.
	Logger *slog.Logger
}

// SetDefaults fills the zero fields with their defaults.
func (c *Config) SetDefaults() {
	if c.Flow == nil {
		c.Flow = mm2.NewFlow("source", "target", mm2.IdentityPolicy{})
	}
	if c.Fields == 0 {
		c.Fields = offsetmap.DefaultFields
	}
	if c.Before <= 0 {
		c.Before = 16
	}
	if c.Window <= 0 {
		c.Window = 500
	}
	if c.MaxTargetRead <= 0 {
		c.MaxTargetRead = 20000
	}
	if c.ScanLimit <= 0 {
		c.ScanLimit = 10000
	}
	if c.Concurrency <= 0 {
		c.Concurrency = 8
	}
	if c.Logger == nil {
		c.Logger = slog.New(slog.NewTextHandler(io.Discard, nil))
	}
}

// groupFilter reports whether Plan looks at a group: Groups narrows, and GroupsExclude, when
// set, replaces the flow's selection (see the fields). Call it after SetDefaults.
func (c *Config) groupFilter() func(group string) bool {
	only, exclude, flow := anchored(c.Groups), anchored(c.GroupsExclude), c.Flow
	if len(flow.Groups) == 0 && len(flow.GroupsExclude) == 0 {
		// A Flow literal that names no group list: MM2's defaults.
		flow = mm2.NewFlow(flow.Source, flow.Target, flow.Policy)
	}
	return func(g string) bool {
		switch {
		case only != nil && !only.MatchString(g):
			return false
		case exclude != nil:
			return !exclude.MatchString(g)
		}
		return flow.GroupMatches(g)
	}
}

// Validate reports a configuration Plan cannot run with.
func (c *Config) Validate() error {
	var errs []error
	if c.Flow != nil && c.Flow.Source == "" {
		errs = append(errs, errors.New("flow: the source alias is empty: set --source-alias or the flow in the MM2 file"))
	}
	if c.Flow != nil && c.Flow.OffsetSyncsLocation != "" && c.Flow.OffsetSyncsLocation != "source" && c.Flow.OffsetSyncsLocation != "target" {
		errs = append(errs, fmt.Errorf("flow %s->%s: offset-syncs.topic.location is %q: use source or target", c.Flow.Source, c.Flow.Target, c.Flow.OffsetSyncsLocation))
	}
	if c.OffsetMap != nil && c.OffsetMap.SourceTopic == "" {
		errs = append(errs, errors.New("offset map: it names no source topic: write it again with kverify diff --offset-map"))
	}
	if c.Window > 0 && c.MaxTargetRead > 0 && c.MaxTargetRead < c.Window {
		errs = append(errs, fmt.Errorf("max target read %d is below the window %d: raise it", c.MaxTargetRead, c.Window))
	}
	return errors.Join(errs...)
}

// ApplyConfig tunes Apply.
type ApplyConfig struct {
	// AllowRewind lets Apply move a target offset backwards (an "ahead" partition, whose
	// consumers would otherwise skip records). Default: false, such partitions are left alone.
	AllowRewind bool
	// Backup is the file the previous target offsets are saved to before anything is written.
	// Default: "kreconcile-backup-<UTC time>.json" in the working directory.
	Backup string
	// Logger receives what was written at info level. Default: discard.
	Logger *slog.Logger
	// BeforeCommit, when set, is called with a group's name after the backup is written and
	// just before that group's commit: tests use it to let a consumer join in between.
	BeforeCommit func(group string)
}

// RollbackConfig tunes Rollback.
type RollbackConfig struct {
	// Force restores partitions whose target commit is no longer the one Apply wrote (the
	// group consumed or was moved since): without it they are left alone and reported.
	Force bool
	// TargetAlias names the connected cluster in messages. Default: "target".
	TargetAlias string
	// LegacyClusterID accepts a version 1 backup (which records no cluster) on the connected
	// cluster, if and only if it is that cluster's ID: the user vouches that the backup was
	// taken there.
	LegacyClusterID string
}
