package mm2

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
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
// DescribeGroups for a classic group, ConsumerGroupDescribe for a consumer group,
// StreamsGroupDescribe for a streams group.
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
	// Topology is a streams group's topology as its group coordinator keeps it (also while
	// the group is Empty); nil for other groups and for a streams group whose topology is not
	// initialized.
	Topology *StreamsTopology
	// Err is why the group could not be described; the other fields are then not known.
	Err error
}

// Absent reports whether the cluster has no such group.
func (d DescribedGroup) Absent() bool {
	return d.Err == nil && d.Type == "" && (d.State == "" || d.State == "Dead")
}

// StreamsTopology is the part of a streams group's topology (KIP-1071) that names its topics,
// from all its subtopologies, each list sorted and without repeats.
type StreamsTopology struct {
	Epoch int32
	// Inputs are the topics it reads that are not its repartition topics; Repartition its
	// repartition topics; Changelogs its state stores' changelog topics.
	Inputs, Repartition, Changelogs []string
}

// StreamsNotSynced is why kmirror's group sync leaves a streams group alone: its offsets are
// migrated by kreconcile, which plans the application as one unit.
const StreamsNotSynced = "streams group (KIP-1071, group.protocol=streams): a Kafka Streams application switches as a whole with its internal topics and state, never partition by partition while it runs, so kmirror does not sync it; once every instance is stopped, move it with kreconcile groups --group <application.id> --apply"

// NotMigrated says why no tool migrates the offsets of a group of type typ, or "" when they
// are migrated (classic, consumer and streams groups, and groups of no known type; a streams
// group by kreconcile only, as one application).
func NotMigrated(typ string) string {
	switch typ {
	case GroupTypeShare:
		return "share group (KIP-932): its progress is per-record acquisition state kept by the share coordinator, not committed offsets; neither kmigrate nor MirrorMaker 2 migrates it: on the target its consumers start where the group config share.auto.offset.reset puts them"
	case "", GroupTypeClassic, GroupTypeConsumer, GroupTypeStreams:
		return ""
	default:
		return fmt.Sprintf("group of type %q: not a type kmigrate knows how to migrate", typ)
	}
}

// DescribeGroups describes the named groups on one cluster by their type. listed is the
// cluster's listing (kadm's ListGroups, which asks for the types where the broker knows them)
// when the caller has one; nil lists the groups now. A group listed as a consumer group is
// described with ConsumerGroupDescribe, a streams group with StreamsGroupDescribe, any other
// with DescribeGroups; a share group is not described (its state is the listing's, its
// members unknown: -1). A group that
// the first describe does not find (Kafka 4 answers GROUP_ID_NOT_FOUND for a group of the
// other type) is asked the other way, so a group created or converted since the listing is
// still described by its type; a group neither finds is absent. Brokers before Kafka 4 are
// asked exactly what they were asked before: they answer an absent group as Dead, without an
// error. The error is for a failure of a whole request when nothing was described.
func DescribeGroups(ctx context.Context, cl *kgo.Client, listed kadm.ListedGroups, names ...string) (map[string]DescribedGroup, error) {
	adm := kadm.NewClient(cl)
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
	var classic, consumer, streams []string
	for _, name := range names {
		l, ok := listed[name]
		switch {
		case ok && l.GroupType == GroupTypeConsumer:
			consumer = append(consumer, name)
		case ok && l.GroupType == GroupTypeStreams:
			streams = append(streams, name)
		case ok && NotMigrated(l.GroupType) != "":
			out[name] = DescribedGroup{Group: name, Type: l.GroupType, ProtocolType: l.ProtocolType, State: l.State, Members: -1}
		default:
			classic = append(classic, name)
		}
	}
	type describer func(context.Context, *kgo.Client, []string, map[string]DescribedGroup) ([]string, error)
	var errs []error
	for _, step := range []struct {
		names        []string
		first, other describer
	}{{classic, describeClassic, describeConsumer}, {consumer, describeConsumer, describeClassic}, {streams, describeStreams, describeClassic}} {
		again, err := step.first(ctx, cl, step.names, out)
		if err != nil {
			errs = append(errs, err)
		}
		// Once the other way: a group the describe of its listed type does not find.
		if _, err := step.other(ctx, cl, again, out); err != nil {
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
func describeClassic(ctx context.Context, cl *kgo.Client, names []string, out map[string]DescribedGroup) ([]string, error) {
	return describeInto(ctx, "describe groups", kadm.NewClient(cl).DescribeGroups, names, out, func(name string, d kadm.DescribedGroup) DescribedGroup {
		if d.State == "" || d.State == "Dead" {
			return DescribedGroup{Group: name} // absent (brokers before Kafka 4)
		}
		return DescribedGroup{Group: name, Type: GroupTypeClassic, ProtocolType: d.ProtocolType, State: d.State, Members: len(d.Members)}
	})
}

// describeConsumer describes groups with ConsumerGroupDescribe (KIP-848) into out and returns
// those the broker did not find as consumer groups.
func describeConsumer(ctx context.Context, cl *kgo.Client, names []string, out map[string]DescribedGroup) ([]string, error) {
	return describeInto(ctx, "describe consumer groups", kadm.NewClient(cl).DescribeConsumerGroups, names, out, func(name string, d kadm.DescribedConsumerGroup) DescribedGroup {
		return DescribedGroup{Group: name, Type: GroupTypeConsumer, ProtocolType: "consumer", State: d.State, Members: len(d.Members)}
	})
}

// describeStreams describes streams groups (KIP-1071) with StreamsGroupDescribe into out, with
// their topologies, and returns those the broker did not find as streams groups. kgo does not
// route this request: it goes to each group's coordinator, found with FindCoordinator.
func describeStreams(ctx context.Context, cl *kgo.Client, names []string, out map[string]DescribedGroup) ([]string, error) {
	describe := func(ctx context.Context, names ...string) (map[string]kmsg.StreamsGroupDescribeResponseGroup, error) {
		coords := kadm.NewClient(cl).FindGroupCoordinators(ctx, names...)
		byBroker := map[int32][]string{}
		got := map[string]kmsg.StreamsGroupDescribeResponseGroup{}
		var errs []error
		for _, name := range names {
			c, ok := coords[name]
			switch {
			case !ok:
				errs = append(errs, fmt.Errorf("group %s: no coordinator found", name))
			case errCode(c.Err) != 0: // coordinator not available yet, ...: the group's answer
				got[name] = kmsg.StreamsGroupDescribeResponseGroup{Group: name, ErrorCode: errCode(c.Err)}
			case c.Err != nil:
				errs = append(errs, fmt.Errorf("group %s: find coordinator: %w", name, c.Err))
			default:
				byBroker[c.NodeID] = append(byBroker[c.NodeID], name)
			}
		}
		for id, group := range byBroker {
			req := kmsg.NewPtrStreamsGroupDescribeRequest()
			req.Groups = group
			resp, err := req.RequestWith(ctx, cl.Broker(int(id)))
			if err != nil {
				errs = append(errs, fmt.Errorf("broker %d: %w", id, err))
				continue
			}
			for _, g := range resp.Groups {
				got[g.Group] = g
			}
		}
		return got, errors.Join(errs...)
	}
	return describeInto(ctx, "describe streams groups", describe, names, out, func(name string, d kmsg.StreamsGroupDescribeResponseGroup) DescribedGroup {
		return DescribedGroup{Group: name, Type: GroupTypeStreams, ProtocolType: "streams", State: d.State, Members: len(d.Members), Topology: streamsTopology(d.Topology)}
	})
}

// errCode is the Kafka error code of err, 0 when it is none.
func errCode(err error) int16 {
	var ke *kerr.Error
	if errors.As(err, &ke) {
		return ke.Code
	}
	return 0
}

// streamsTopology is the topics of a streams group's topology; nil when it is not
// initialized (the broker answers no subtopologies then).
func streamsTopology(t *kmsg.StreamsGroupDescribeResponseGroupTopology) *StreamsTopology {
	if t == nil || t.Subtopologies == nil {
		return nil
	}
	out := &StreamsTopology{Epoch: t.Epoch, Inputs: []string{}, Repartition: []string{}, Changelogs: []string{}}
	repartition := map[string]bool{}
	for _, s := range t.Subtopologies {
		for _, r := range s.RepartitionSourceTopics {
			repartition[r.Topic] = true
		}
		for _, r := range s.RepartitionSinkTopics {
			repartition[r] = true
		}
	}
	for _, s := range t.Subtopologies {
		for _, in := range s.SourceTopics {
			if !repartition[in] {
				out.Inputs = append(out.Inputs, in)
			}
		}
		for _, c := range s.StateChangelogTopics {
			out.Changelogs = append(out.Changelogs, c.Topic)
		}
	}
	for r := range repartition {
		out.Repartition = append(out.Repartition, r)
	}
	for _, l := range []*[]string{&out.Inputs, &out.Repartition, &out.Changelogs} {
		slices.Sort(*l)
		*l = slices.Compact(*l)
	}
	return out
}

// describedAnswer is a group in the answer of one of the three describes.
type describedAnswer interface {
	kadm.DescribedGroup | kadm.DescribedConsumerGroup | kmsg.StreamsGroupDescribeResponseGroup
}

// describeInto is describeClassic, describeConsumer and describeStreams: it describes names
// with describe (the request what names in errors), waiting for the group coordinator, into
// out, and returns those the broker did not find (GROUP_ID_NOT_FOUND). found makes the entry
// of a group the broker answered without an error.
func describeInto[M ~map[string]G, G describedAnswer](ctx context.Context, what string,
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
func coordinatorErr[G describedAnswer](groups map[string]G) error {
	for _, g := range groups {
		if err := groupErr(g); waitingForCoordinator(err) {
			return err
		}
	}
	return nil
}

// groupErr is the per-group error of a describe answer.
func groupErr[G describedAnswer](g G) error {
	switch d := any(g).(type) {
	case kmsg.StreamsGroupDescribeResponseGroup:
		return kerr.ErrorForCode(d.ErrorCode)
	case kadm.DescribedGroup:
		return d.Err
	case kadm.DescribedConsumerGroup:
		return d.Err
	}
	return nil
}
