package groupsync

import "errors"

// Status says what a pass did with one group partition, for the target group offset and for
// the checkpoint separately.
type Status string

// Statuses.
const (
	// StatusSynced: the offset was committed on the target, or the checkpoint emitted.
	StatusSynced Status = "synced"
	// StatusRewound: the source group moved back since the last sync, so the lower E(G) was
	// committed or checkpointed (the only case in which a value goes down).
	StatusRewound Status = "rewound"
	// StatusUnchanged: the target already holds E(G), or an offset that a read_committed
	// consumer resumes from as from E(G) (only transaction markers and records of aborted
	// transactions between; Reason says so), or the same checkpoint was emitted before;
	// nothing was written.
	StatusUnchanged Status = "unchanged"
	// StatusHeld: E(G) is below what the target (or the previous checkpoint) holds, past
	// the offsets that are the same position as E(G), and the source group did not rewind,
	// so nothing was written: values never move backwards.
	StatusHeld Status = "held"
	// StatusSkippedActive: the target group has active members; it is never written.
	StatusSkippedActive Status = "skipped-active"
	// StatusPending: the mirror has not yet copied the records below G, so E(G) is unknown;
	// the partition is tried again next pass.
	StatusPending Status = "pending"
	// StatusNotOwned: another process mirrors this partition and syncs it.
	StatusNotOwned Status = "not-owned"
	// StatusDisabled: the action is switched off (sync.group.offsets.enabled or
	// emit.checkpoints.enabled), or was not due in this pass.
	StatusDisabled Status = "disabled"
	// StatusError: the write or a read it needed failed; Error and Err say why. Retried next
	// pass.
	StatusError Status = "error"
)

// Wrote reports whether the status stands for a value written in this pass.
func (s Status) Wrote() bool { return s == StatusSynced || s == StatusRewound }

// The steps of a pass that can fail. A *SyncError wraps one of them and its cause, so that
// errors.Is finds both: errors.Is(p.Err, ErrCommit), errors.Is(p.Err, kerr.UnknownTopicOrPartition).
var (
	ErrFetchSource      = errors.New("fetch the source group's committed offsets")
	ErrDescribeTarget   = errors.New("describe the target group")
	ErrFetchTarget      = errors.New("fetch the target group's committed offsets")
	ErrCommit           = errors.New("commit offsets on the target")
	ErrProduce          = errors.New("produce checkpoints on the target")
	ErrCheckpointsTopic = errors.New("read or create the checkpoints topic")
)

// SyncError is one failure of a pass, as Report.Err, GroupReport.Err and PartitionReport.Err
// hold it beside their Error text (which is its Error()).
type SyncError struct {
	Step      error  // one of ErrFetchSource, ErrDescribeTarget, ... (errors.Is)
	Cluster   string // alias of the cluster that answered with the error
	Group     string // "" for a failure of the whole pass
	Topic     string // "" for a failure of the whole group
	Partition int32
	Err       error // the cause, e.g. a kerr error or a *kadm.ShardErrors

	msg string
}

func (e *SyncError) Error() string { return e.msg }

// Unwrap returns the step and the cause.
func (e *SyncError) Unwrap() []error { return []error{e.Step, e.Err} }

// Report is what one pass did, as data: per group and partition what was written and why.
// Its JSON form is stable (fields may be added, never renamed).
type Report struct {
	// Source and Target are the cluster aliases of the flow.
	Source string `json:"source"`
	Target string `json:"target"`
	// Groups are sorted by name; only groups the flow selects appear.
	Groups []GroupReport `json:"groups"`
	// Committed counts the partition offsets committed on the target, Emitted the checkpoint
	// records produced.
	Committed int `json:"committed"`
	Emitted   int `json:"emitted"`
	// Error is set when no checkpoint could be emitted in this pass (the checkpoints topic
	// could not be read or created); the offset sync still ran. Err is the same as an error
	// value (a *SyncError, ErrCheckpointsTopic), for errors.Is and errors.As.
	Error string `json:"error,omitempty"`
	Err   error  `json:"-"`
}

// GroupReport is one source consumer group.
type GroupReport struct {
	Group string `json:"group"`
	// TargetState is the target group's state as described before committing ("Empty",
	// "Stable", ...; "absent" when it does not exist; empty when not described).
	TargetState   string `json:"target_state,omitempty"`
	TargetMembers int    `json:"target_members,omitempty"`
	// Type is the source group's type when it is one kmirror does not sync ("share",
	// "streams"); TargetType the target group's type as described ("classic", "consumer" for
	// the protocol of KIP-848, "streams"; empty when absent or the broker names no type).
	Type       string `json:"type,omitempty"`
	TargetType string `json:"target_type,omitempty"`
	// NotMigrated says why the group is listed but never synced: a share group (KIP-932),
	// which no tool migrates, or a streams group (KIP-1071), which kreconcile moves as one
	// application. It then has no partitions.
	NotMigrated string `json:"not_migrated,omitempty"`
	// Partitions are sorted by topic, then partition.
	Partitions []PartitionReport `json:"partitions"`
	// Error is set when the group as a whole could not be synced (the other groups were); Err
	// is the same as a *SyncError.
	Error string `json:"error,omitempty"`
	Err   error  `json:"-"`
}

// PartitionReport is one group partition.
type PartitionReport struct {
	Topic       string `json:"topic"` // source topic
	TargetTopic string `json:"target_topic"`
	Partition   int32  `json:"partition"`
	// Upstream is the source group's committed offset G.
	Upstream int64 `json:"upstream"`
	// Downstream is E(G), or -1 when it is not known (pending, not owned). On a
	// transactional target it is the offset of the next record a read_committed consumer
	// reads when only transaction markers and records of ended aborted transactions lie
	// between it and the copy of the last record below G (Reason says so); otherwise the
	// offset right after that copy.
	Downstream int64 `json:"downstream"`
	// TargetBefore is the target group's committed offset before this pass (-1: none, or
	// not read).
	TargetBefore int64 `json:"target_before"`

	Offset     Status `json:"offset"`
	Checkpoint Status `json:"checkpoint"`
	// Reason explains a status that is not self-evident.
	Reason string `json:"reason,omitempty"`
	// Error says why a status is StatusError; Err is the same as an error value: a
	// *SyncError, or several joined (errors.Join) when both actions failed.
	Error string `json:"error,omitempty"`
	Err   error  `json:"-"`
}

// Errors returns how many errors the report carries (pass, groups and partitions).
func (r *Report) Errors() int {
	n := 0
	if r.Error != "" {
		n++
	}
	for _, g := range r.Groups {
		if g.Error != "" {
			n++
		}
		for _, p := range g.Partitions {
			if p.Error != "" {
				n++
			}
		}
	}
	return n
}

// Partition returns the report of one group partition and whether it is present.
func (r *Report) Partition(group, topic string, partition int32) (PartitionReport, bool) {
	for _, g := range r.Groups {
		if g.Group != group {
			continue
		}
		for _, p := range g.Partitions {
			if p.Topic == topic && p.Partition == partition {
				return p, true
			}
		}
	}
	return PartitionReport{}, false
}
