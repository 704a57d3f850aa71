package mm2

import (
	"errors"
	"fmt"
)

// ErrGroupInUse is what GroupWritable's refusal wraps: the target group has members, or is
// rebalancing, so its offsets must not be written.
var ErrGroupInUse = errors.New("target group in use")

// GroupInUseError is GroupWritable's refusal, with what the target said of the group.
type GroupInUseError struct {
	Cluster string // the target cluster's alias, or "" when the caller has none
	Group   string
	State   string
	Members int // -1: not known (a share group)
	// Type is the group's type on the target ("" when the broker names none); Why is set
	// when a group of that type is never written, whatever its state.
	Type string
	Why  string
}

func (e *GroupInUseError) Error() string {
	on := "the target"
	if e.Cluster != "" {
		on = "target cluster " + e.Cluster
	}
	if e.Why != "" {
		return fmt.Sprintf("group %q is a %s on %s: offsets are never written to it (nothing was written for it)", e.Group, e.Why, on)
	}
	members := fmt.Sprintf("%d members", e.Members)
	if e.Members == 1 {
		members = "1 member"
	}
	kind := ""
	switch e.Type {
	case GroupTypeConsumer:
		kind = " (a consumer group of the new protocol, group.protocol=consumer)"
	case GroupTypeStreams:
		kind = " (a streams group, group.protocol=streams: a Kafka Streams application)"
	}
	return fmt.Sprintf("group %q is %s with %s on %s%s: offsets are written only to a group that is empty or absent there; stop its consumers on %s, then run again (nothing was written for it)",
		e.Group, e.State, members, on, kind, on)
}

func (e *GroupInUseError) Unwrap() error { return ErrGroupInUse }

// GroupWritable is the one rule every tool applies before it commits offsets for a group on
// a target cluster, as MirrorMaker 2's checkpoint task does: only a group that is absent or
// Empty, with no member, whether classic, a consumer group of the new protocol (KIP-848) or
// a streams group (KIP-1071): an admin commit with no member is accepted by an empty one of
// each; never a share group. d is the group as DescribeGroups described it on the target
// just before the commit; a described error is the caller's to handle first. It returns nil
// or a *GroupInUseError.
func GroupWritable(cluster string, d DescribedGroup) error {
	if why := NotMigrated(d.Type); why != "" {
		return &GroupInUseError{Cluster: cluster, Group: d.Group, State: d.State, Members: d.Members, Type: d.Type, Why: why}
	}
	if d.Absent() || d.State == "Empty" && d.Members == 0 {
		return nil
	}
	state := d.State
	if state == "" || state == "Dead" {
		state = "absent"
	}
	return &GroupInUseError{Cluster: cluster, Group: d.Group, State: state, Members: d.Members, Type: d.Type}
}
