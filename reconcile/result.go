package reconcile

import (
	"errors"
	"fmt"

	"github.com/kmigrate/kmigrate/internal/backupfile"
)

// Status is the verdict for one group partition.
type Status string

// Statuses, as docs/design.md "What exact means: E(G)" and the kreconcile help define them.
const (
	// StatusExact: the target committed offset equals E(G).
	StatusExact Status = "exact"
	// StatusBehind: the target committed offset is below E(G); switching re-delivers records.
	StatusBehind Status = "behind"
	// StatusAhead: the target committed offset is above E(G); switching skips records (loss).
	StatusAhead Status = "ahead"
	// StatusPending: the mirror has not yet copied the records below G.
	StatusPending Status = "pending"
	// StatusMissingTargetOffset: E(G) is known but the group has no commit on the target.
	StatusMissingTargetOffset Status = "missing-target-offset"
	// StatusUnmappable: E(G) cannot be determined; Reason says why.
	StatusUnmappable Status = "unmappable"
)

// Result is what Plan returns and Apply updates; its JSON form is part of kreconcile's
// interface (field names are stable; fields may be added, never renamed).
type Result struct {
	// Applied is true when Apply committed anything (see the groups and partitions for what).
	Applied bool    `json:"applied"`
	Groups  []Group `json:"groups"`
	// Backup is the file Apply saved the previous target offsets to.
	Backup string `json:"backup,omitempty"`
	// SourceCluster and TargetCluster are the clusters Plan read (alias and cluster ID); Apply
	// writes only to TargetCluster and records both in the backup.
	SourceCluster *ClusterRef `json:"source_cluster,omitempty"`
	TargetCluster *ClusterRef `json:"target_cluster,omitempty"`
}

// ClusterRef names a cluster: its alias (the flow's) and the cluster ID its brokers report.
type ClusterRef = backupfile.ClusterRef

// Group is one consumer group.
type Group struct {
	Group       string `json:"group"`
	SourceState string `json:"source_state"`
	TargetState string `json:"target_state"`
	// SourceType and TargetType are the group's type on each cluster as Kafka 3.8+ names it
	// ("classic", "consumer" for the protocol of KIP-848, "share", "streams"); empty when the
	// broker names none (before 3.8 every group is classic) or the group is absent.
	SourceType string      `json:"source_type,omitempty"`
	TargetType string      `json:"target_type,omitempty"`
	Partitions []Partition `json:"partitions"`
	// App is set when the group is a Kafka Streams application (streams.go): it is then
	// planned and applied as one unit.
	App *App `json:"application,omitempty"`
	// NotMigrated says why the group is listed but not reconciled: a share group (KIP-932) on
	// the source. Such a group has no partitions here and is never written.
	NotMigrated string `json:"not_migrated,omitempty"`
	// Applied is true when Apply committed at least one partition of this group (the
	// partitions' Applied say which); Refused says why it wrote nothing.
	Applied bool   `json:"applied,omitempty"`
	Refused string `json:"refused,omitempty"`
	// Err is set when this group could not be planned or applied (the others still were).
	Err string `json:"error,omitempty"`
	// AbortedAhead is the sum of the partitions' AbortedAhead (those counted): when it is not
	// zero, consumers of the group reading read_uncommitted (the Java client's default) read
	// that many records of aborted transactions again after the switch.
	AbortedAhead int64 `json:"aborted_ahead,omitempty"`
}

// Partition is one group partition. Pointers are null in JSON when unknown.
type Partition struct {
	Topic       string `json:"topic"`
	TargetTopic string `json:"target_topic"`
	Partition   int32  `json:"partition"`

	SourceCommitted int64  `json:"source_committed"`
	SourceMetadata  string `json:"source_metadata,omitempty"`
	SourceStart     int64  `json:"source_start"`
	SourceEnd       int64  `json:"source_end"`
	TargetCommitted *int64 `json:"target_committed"`
	TargetEnd       int64  `json:"target_end"`
	// TargetLastStable is the target's last stable offset: a read_committed consumer's log
	// ends there, below the first transaction still open (TargetEnd when none is).
	TargetLastStable int64 `json:"target_last_stable"`
	// SourceRecordsLeft and TargetRecordsLeft are the records a read_committed consumer at the
	// commit still reads: the lag in offsets without transaction markers, records of aborted
	// transactions and compacted records. Null when not known: no commit, a transaction still
	// open on that side (its records count once it ended), or a span longer than
	// Config.ScanLimit offsets.
	SourceRecordsLeft *int64 `json:"source_records_left"`
	TargetRecordsLeft *int64 `json:"target_records_left"`
	Checkpoint        *int64 `json:"checkpoint"`
	// CheckpointUpstream is the source offset MM2's checkpoint was translated from; when it is
	// not SourceCommitted the checkpoint is stale.
	CheckpointUpstream *int64 `json:"checkpoint_upstream,omitempty"`
	ExactTarget        *int64 `json:"exact_target"`

	Status Status `json:"status"`
	Reason string `json:"reason,omitempty"`
	// Err is set, with Status and Reason, when E(G) is not known: a *PartitionError that
	// errors.Is matches to ErrPending or ErrUnmappable (and to the cause of a failed read). It
	// is not part of the JSON form, which says the same in status and reason.
	Err error `json:"-"`
	// RedeliveredIfUnchanged is how many already-consumed records a consumer switched to the
	// target now would read again; SkippedIfUnchanged how many it would never read.
	RedeliveredIfUnchanged int64 `json:"redelivered_if_unchanged"`
	SkippedIfUnchanged     int64 `json:"skipped_if_unchanged"`
	// AbortedAhead is how many records of aborted transactions lie between the position the
	// group resumes from on the target (E(G), or the target commit when it is exact: the same
	// position for a read_committed consumer) and the last stable offset: what a consumer reading read_uncommitted (the Java
	// client's default) reads again after the switch; a read_committed one does not. Null when
	// not counted: E(G) unknown, or (AbortedNote says why) a target log that ended early.
	// AbortedRanges are their offsets (at most 1000 ranges; the count is whole).
	AbortedAhead  *int64        `json:"aborted_ahead"`
	AbortedRanges []OffsetRange `json:"aborted_ranges,omitempty"`
	// AbortedNote says why AbortedAhead was not counted, and names a transaction still open
	// ("open transaction at offset N"), whose records are not counted.
	AbortedNote string `json:"aborted_note,omitempty"`
	// OpenTransaction is the target's last stable offset when a transaction is open there
	// (below TargetEnd): where its first record is.
	OpenTransaction *int64 `json:"open_transaction,omitempty"`
	// CheckpointStatus judges MM2's checkpoint against E(G) with the same statuses.
	CheckpointStatus Status `json:"checkpoint_status,omitempty"`
	// Proof says how E(G) was established, e.g. "fingerprint of source 41 = target 49".
	Proof string `json:"proof,omitempty"`
	// ProofSource says where E(G) came from: "kmirror-map", "offset-syncs" (an MM2 offset
	// sync pinned the copy of s*) or "content" (an offset map file is only checked against it).
	ProofSource string `json:"proof_source,omitempty"`
	// Action says what Apply did or why it left the partition alone.
	Action string `json:"action,omitempty"`
	// Applied is true when Apply committed E(G) here and the target confirmed it; ApplyError
	// says why a commit Apply attempted did not take.
	Applied    bool   `json:"applied,omitempty"`
	ApplyError string `json:"apply_error,omitempty"`
}

// ErrPending and ErrUnmappable are what a Partition's Err matches (errors.Is) when its status
// is StatusPending or StatusUnmappable.
var (
	ErrPending    = errors.New("pending: the mirror has not copied the records below the committed offset yet")
	ErrUnmappable = errors.New("unmappable: E(G) cannot be proven by content")
)

// PartitionError says why a group partition has no E(G): its status (pending or unmappable),
// the reason Partition.Reason carries, and the failure behind it when a read failed.
type PartitionError struct {
	Group     string
	Topic     string
	Partition int32
	Status    Status
	Reason    string
	// Cause is the error of a failed read or lookup, nil when content decided.
	Cause error
}

func (e *PartitionError) Error() string {
	return fmt.Sprintf("group %q, source topic %s partition %d: %s: %s", e.Group, e.Topic, e.Partition, e.Status, e.Reason)
}

// Unwrap returns the sentinel of the status and the cause, if any.
func (e *PartitionError) Unwrap() []error {
	errs := []error{ErrUnmappable}
	if e.Status == StatusPending {
		errs[0] = ErrPending
	}
	if e.Cause != nil {
		errs = append(errs, e.Cause)
	}
	return errs
}

// refuse records that E(G) is not known for p in group: Status, Reason and Err agree.
func (p *Partition) refuse(group string, status Status, reason string, cause error) {
	p.Status, p.Reason = status, reason
	p.Err = &PartitionError{Group: group, Topic: p.Topic, Partition: p.Partition, Status: status, Reason: reason, Cause: cause}
}
