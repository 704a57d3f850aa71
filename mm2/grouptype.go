package mm2

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
)

// Group types, as Kafka 3.8 and later lists them (ListGroups version 5). Before 3.8 every
// group is classic and the listing names no type.
const (
	GroupTypeClassic  = "classic"  // the JoinGroup/SyncGroup protocol
	GroupTypeConsumer = "consumer" // the consumer group protocol of KIP-848 (group.protocol=consumer)
	GroupTypeShare    = "share"    // share groups, KIP-932
	GroupTypeStreams  = "streams"  // streams groups, KIP-1071
)

// DescribedGroup is a group as one cluster describes it by its type: the classic
// DescribeGroups for a classic group, ConsumerGroupDescribe for a consumer group.
type DescribedGroup struct {
	Group string
	// Type is the group's type (GroupTypeClassic, ...); "" when the group does not exist.
	// A broker before Kafka 3.8 names no type: its groups are classic.
	Type string
	// ProtocolType is a classic group's protocol type ("consumer", "connect", "" for a group
	// that only holds commits).
	ProtocolType string
	// State is the group's state ("Empty", "Stable", ...); "" when it does not exist.
	State string
	// Members is how many members the group has (of either protocol, for a consumer group).
	Members int
	// Err is why the group could not be described; the other fields are then not known.
	Err error
}

// Absent reports whether the cluster has no such group.
func (d DescribedGroup) Absent() bool {
	return d.Err == nil && d.Type == "" && (d.State == "" || d.State == "Dead")
}

// NotMigrated says why no tool migrates the offsets of a group of type typ, or "" when they
// are migrated (classic and consumer groups, and groups of no known type).
func NotMigrated(typ string) string {
	switch typ {
	case GroupTypeShare:
		return "share group (KIP-932): its progress is per-record acquisition state kept by the share coordinator, not committed offsets; neither kmigrate nor MirrorMaker 2 migrates it: on the target its consumers start where the group config share.auto.offset.reset puts them"
	case GroupTypeStreams:
		return "streams group (KIP-1071, group.protocol=streams): its committed offsets are only part of its state (the tasks' state stores and changelogs are the rest), and it is not migrated; reset or rebuild the application's state on the target"
	case "", GroupTypeClassic, GroupTypeConsumer:
		return ""
	default:
		return fmt.Sprintf("group of type %q: not a type kmigrate knows how to migrate", typ)
	}
}

// DescribeGroups describes the named groups on one cluster by their type. listed is the
// cluster's listing (kadm's ListGroups, which asks for the types where the broker knows them)
// when the caller has one; nil lists the groups now. A group listed as a consumer group is
// described with ConsumerGroupDescribe, any other with DescribeGroups; a share or streams
// group is not described (its state is the listing's, its members unknown: -1). A group that
// the first describe does not find (Kafka 4 answers GROUP_ID_NOT_FOUND for a group of the
// other type) is asked the other way, so a group created or converted since the listing is
// still described by its type; a group neither finds is absent. Brokers before Kafka 4 are
// asked exactly what they were asked before: they answer an absent group as Dead, without an
// error. The error is for a failure of a whole request when nothing was described.
func DescribeGroups(ctx context.Context, adm *kadm.Client, listed kadm.ListedGroups, names ...string) (map[string]DescribedGroup, error) {
	out := make(map[string]DescribedGroup, len(names))
	if len(names) == 0 {
		return out, nil
	}
	if listed == nil {
		var err error
		if listed, err = adm.ListGroups(ctx); err != nil && len(listed) == 0 {
			return nil, fmt.Errorf("list groups: %w", err)
		}
	}
	var classic, consumer []string
	for _, name := range names {
		l, ok := listed[name]
		switch {
		case ok && l.GroupType == GroupTypeConsumer:
			consumer = append(consumer, name)
		case ok && NotMigrated(l.GroupType) != "":
			out[name] = DescribedGroup{Group: name, Type: l.GroupType, ProtocolType: l.ProtocolType, State: l.State, Members: -1}
		default:
			classic = append(classic, name)
		}
	}
	type describer func(context.Context, *kadm.Client, []string, map[string]DescribedGroup) ([]string, error)
	var errs []error
	for _, step := range []struct {
		names        []string
		first, other describer
	}{{classic, describeClassic, describeConsumer}, {consumer, describeConsumer, describeClassic}} {
		again, err := step.first(ctx, adm, step.names, out)
		if err != nil {
			errs = append(errs, err)
		}
		// Once the other way: a group the describe of its listed type does not find.
		if _, err := step.other(ctx, adm, again, out); err != nil {
			errs = append(errs, err)
		}
		for _, name := range again {
			if errors.Is(out[name].Err, kerr.GroupIDNotFound) {
				out[name] = DescribedGroup{Group: name} // found by neither: absent
			}
		}
	}
	for _, d := range out {
		if d.Err == nil {
			return out, nil
		}
	}
	if len(errs) > 0 {
		return nil, errors.Join(errs...)
	}
	return out, nil
}

// describeClassic describes groups with DescribeGroups into out and returns those the broker
// did not find (Kafka 4: GROUP_ID_NOT_FOUND, also for a group of another type).
func describeClassic(ctx context.Context, adm *kadm.Client, names []string, out map[string]DescribedGroup) ([]string, error) {
	return describeInto(ctx, "describe groups", adm.DescribeGroups, names, out, func(name string, d kadm.DescribedGroup) DescribedGroup {
		if d.State == "" || d.State == "Dead" {
			return DescribedGroup{Group: name} // absent (brokers before Kafka 4)
		}
		return DescribedGroup{Group: name, Type: GroupTypeClassic, ProtocolType: d.ProtocolType, State: d.State, Members: len(d.Members)}
	})
}

// describeConsumer describes groups with ConsumerGroupDescribe (KIP-848) into out and returns
// those the broker did not find as consumer groups.
func describeConsumer(ctx context.Context, adm *kadm.Client, names []string, out map[string]DescribedGroup) ([]string, error) {
	return describeInto(ctx, "describe consumer groups", adm.DescribeConsumerGroups, names, out, func(name string, d kadm.DescribedConsumerGroup) DescribedGroup {
		return DescribedGroup{Group: name, Type: GroupTypeConsumer, ProtocolType: "consumer", State: d.State, Members: len(d.Members)}
	})
}

// describeInto is describeClassic and describeConsumer: it describes names with describe
// (the request what names in errors), waiting for the group coordinator, into out, and returns
// those the broker did not find (GROUP_ID_NOT_FOUND). found makes the entry of a group the
// broker answered without an error.
func describeInto[M ~map[string]G, G kadm.DescribedGroup | kadm.DescribedConsumerGroup](ctx context.Context, what string,
	describe func(context.Context, ...string) (M, error), names []string, out map[string]DescribedGroup,
	found func(name string, d G) DescribedGroup,
) ([]string, error) {
	if len(names) == 0 {
		return nil, nil
	}
	desc, err := awaitCoordinator(ctx, func() (M, error) {
		d, err := describe(ctx, names...)
		return d, errors.Join(err, coordinatorErr(d))
	})
	if err != nil && len(desc) == 0 {
		err = fmt.Errorf("%s: %w", what, err)
		for _, name := range names {
			out[name] = DescribedGroup{Group: name, Err: err}
		}
		return nil, err
	}
	var notFound []string
	for _, name := range names {
		d, ok := desc[name]
		switch derr := groupErr(d); {
		case !ok:
			out[name] = DescribedGroup{Group: name, Err: fmt.Errorf("%s: no answer for this group: %w", what, err)}
		case errors.Is(derr, kerr.GroupIDNotFound):
			notFound = append(notFound, name)
			out[name] = DescribedGroup{Group: name, Err: derr}
		case derr != nil:
			out[name] = DescribedGroup{Group: name, Err: derr}
		default:
			out[name] = found(name, d)
		}
	}
	return notFound, nil
}

// coordinatorBound is how long a describe waits for the group coordinator of a cluster that has
// none yet: a cluster where no group ever committed creates __consumer_offsets at the first
// FindCoordinator, and answers COORDINATOR_NOT_AVAILABLE until it has (seconds on Kafka 4).
const coordinatorBound = 30 * time.Second

// awaitCoordinator calls describe again, after a pause that doubles from 100 ms to 1 s, while
// its error says the group coordinator is not there yet, for coordinatorBound at most; it
// returns the last answer.
func awaitCoordinator[T any](ctx context.Context, describe func() (T, error)) (T, error) {
	deadline := time.Now().Add(coordinatorBound)
	pause := 100 * time.Millisecond
	for {
		v, err := describe()
		if !waitingForCoordinator(err) || time.Now().Add(pause).After(deadline) {
			return v, err
		}
		t := time.NewTimer(pause)
		select {
		case <-ctx.Done():
			t.Stop()
			return v, err
		case <-t.C:
		}
		pause = min(2*pause, time.Second)
	}
}

func waitingForCoordinator(err error) bool {
	return errors.Is(err, kerr.CoordinatorNotAvailable) || errors.Is(err, kerr.CoordinatorLoadInProgress) || errors.Is(err, kerr.NotCoordinator)
}

// coordinatorErr is the first per-group error of an answer that says the coordinator is not
// there yet, nil when none does.
func coordinatorErr[G kadm.DescribedGroup | kadm.DescribedConsumerGroup](groups map[string]G) error {
	for _, g := range groups {
		if err := groupErr(g); waitingForCoordinator(err) {
			return err
		}
	}
	return nil
}

// groupErr is the per-group error of a describe answer.
func groupErr[G kadm.DescribedGroup | kadm.DescribedConsumerGroup](g G) error {
	switch d := any(g).(type) {
	case kadm.DescribedGroup:
		return d.Err
	case kadm.DescribedConsumerGroup:
		return d.Err
	}
	return nil
}
