package verify

import (
	"errors"

	"github.com/kmigrate/kmigrate/align"
)

// Result is what Diff returns for one topic: the report renders it and its JSON form is part of
// kverify's interface (field names are stable; fields may be added, never renamed).
type Result struct {
	SourceTopic string `json:"source_topic"`
	TargetTopic string `json:"target_topic"`
	// Identical is true when every compared partition has only matched records (and ambiguous
	// ones, which are matched but could be assigned differently), at least one partition was
	// compared, and there is no problem and no partition error. Partitions in NotCompared are
	// not part of it: they had nothing to compare.
	Identical bool `json:"identical"`
	// NotCompared lists the partitions that had no source record in the range asked and no
	// target record that differs (e.g. --from after their last record): nothing was proved
	// about them, they are not identical and have no offset map.
	NotCompared []int32 `json:"not_compared,omitempty"`
	// Compared lists the fields that were compared, e.g. ["key","value","headers"].
	Compared   []string                `json:"compared"`
	Summary    align.Counts            `json:"summary"`
	Partitions []align.PartitionResult `json:"partitions"`
	// Problems are topic-level findings: partition count mismatch, missing target topic.
	Problems []string `json:"problems,omitempty"`
}

// ErrTargetMissing is what a align.PartitionResult's Cause matches when the target topic, or its
// partition, does not exist: nothing of the partition was mirrored there.
var ErrTargetMissing = errors.New("target topic or partition does not exist")

// targetMissingError says which target topic or partition is missing.
type targetMissingError struct{ msg string }

func (e *targetMissingError) Error() string { return e.msg }
func (e *targetMissingError) Unwrap() error { return ErrTargetMissing }
