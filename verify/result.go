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
	// Aborted counts the records of aborted transactions in the compared target ranges, and
	// AbortedCopies those of them that are copies of records committed there: a
	// read_uncommitted consumer (the Java default) reads them, a read_committed one does
	// not. They do not change the verdict of a read_committed comparison. Zero (and left out)
	// with ReadUncommitted, whose reads do not tell aborted records apart.
	Aborted       int64 `json:"aborted,omitempty"`
	AbortedCopies int64 `json:"aborted_copies,omitempty"`
	// TargetReadUncommitted is set when the target was compared as read_uncommitted reads it
	// (Config.TargetReadUncommitted): the aborted records were compared like the others.
	TargetReadUncommitted bool `json:"target_read_uncommitted,omitempty"`
	// Judged is how the topic was judged: "log" (record by record) or "table" (the latest
	// record of every key, Config.Judge), and JudgedWhy why. With a table the partitions'
	// counts are of keys (Matched the same, Missing, Mismatched the differing, Extra), Tables
	// holds each partition's records and keys, and no offset map is written.
	Judged    Judgement        `json:"judged,omitempty"`
	JudgedWhy string           `json:"judged_why,omitempty"`
	Tables    []TablePartition `json:"tables,omitempty"`
	// Transactions lists, in partition order, the target partitions with aborted records in
	// the compared range or a transaction open at the end (TxnPartition).
	Transactions []TxnPartition `json:"target_transactions,omitempty"`
}

// ErrTargetMissing is what a align.PartitionResult's Cause matches when the target topic, or its
// partition, does not exist: nothing of the partition was mirrored there.
var ErrTargetMissing = errors.New("target topic or partition does not exist")

// targetMissingError says which target topic or partition is missing.
type targetMissingError struct{ msg string }

func (e *targetMissingError) Error() string { return e.msg }
func (e *targetMissingError) Unwrap() error { return ErrTargetMissing }
