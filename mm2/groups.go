package mm2

import (
	"errors"
	"fmt"

	"github.com/twmb/franz-go/pkg/kadm"
)

// ErrGroupInUse is what GroupWritable's refusal wraps: the target group has members, or is
// rebalancing, so its offsets must not be written.
var ErrGroupInUse = errors.New("target group in use")

// GroupInUseError is GroupWritable's refusal, with what the target said of the group.
type GroupInUseError struct {
	Cluster string // the target cluster's alias, or "" when the caller has none
	Group   string
	State   string
	Members int
}

func (e *GroupInUseError) Error() string {
	on := "the target"
	if e.Cluster != "" {
		on = "target cluster " + e.Cluster
	}
	members := fmt.Sprintf("%d members", e.Members)
	if e.Members == 1 {
		members = "1 member"
	}
	return fmt.Sprintf("group %q is %s with %s on %s: offsets are written only to a group that is empty or absent there; stop its consumers on %s, then run again (nothing was written for it)",
		e.Group, e.State, members, on, on)
}

func (e *GroupInUseError) Unwrap() error { return ErrGroupInUse }

// GroupWritable is the one rule every tool applies before it commits offsets for a group on
// a target cluster, as MirrorMaker 2's checkpoint task does: only a group that is absent (no
// state, or Dead) or Empty, with no member. d is the group as the target described it just
// before the commit; a described error is the caller's to handle first. It returns nil or a
// *GroupInUseError.
func GroupWritable(cluster string, d kadm.DescribedGroup) error {
	switch d.State {
	case "Empty", "Dead", "":
		if len(d.Members) == 0 {
			return nil
		}
	}
	state := d.State
	if state == "" || state == "Dead" {
		state = "absent"
	}
	return &GroupInUseError{Cluster: cluster, Group: d.Group, State: state, Members: len(d.Members)}
}
