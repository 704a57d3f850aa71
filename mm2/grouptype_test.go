package mm2_test

import (
	"context"
	"errors"
	"fmt"
	"sync/atomic"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
	"github.com/twmb/franz-go/pkg/kversion"

	"github.com/kmigrate/kmigrate/internal/testkit"
	"github.com/kmigrate/kmigrate/mm2"
)

// groupCluster starts a cluster of one broker with topic "t" of one partition (opts after).
func groupCluster(t *testing.T, opts ...kfake.Opt) (*kfake.Cluster, *kgo.Client, *kadm.Client) {
	t.Helper()
	c := testkit.StartCluster(t, append([]kfake.Opt{kfake.SeedTopics(1, "t")}, opts...)...)
	cl := testkit.Client(t, c)
	return c, cl, kadm.NewClient(cl)
}

// On a broker of Kafka 2.3.0's versions an absent group is Dead without an error, an empty
// one classic: DescribeGroups answers as the classic describe always did.
func TestDescribeGroupsBeforeTypes(t *testing.T) {
	t.Parallel()
	_, cl, adm := groupCluster(t, kfake.MaxVersions(kversion.V2_3_0()))
	testkit.Commit(t, adm, "present", "t", 0, 1, "")
	got, err := mm2.DescribeGroups(context.Background(), cl, nil, "present", "absent")
	if err != nil {
		t.Fatal(err)
	}
	if d := got["present"]; d.Err != nil || d.Type != mm2.GroupTypeClassic || d.State != "Empty" || d.Absent() {
		t.Errorf("present: %+v, want an Empty classic group", d)
	}
	if d := got["absent"]; !d.Absent() {
		t.Errorf("absent: %+v, want absent", d)
	}
}

// A cluster whose group coordinator is not there yet (no group ever committed) is waited for.
func TestDescribeGroupsWaitsForCoordinator(t *testing.T) {
	t.Parallel()
	c, cl, _ := groupCluster(t)
	var refused atomic.Int32
	c.ControlKey(int16(kmsg.DescribeGroups), func(kr kmsg.Request) (kmsg.Response, error, bool) {
		if refused.Add(1) > 2 {
			return nil, nil, false
		}
		c.KeepControl()
		req := kr.(*kmsg.DescribeGroupsRequest)
		resp := req.ResponseKind().(*kmsg.DescribeGroupsResponse)
		for _, g := range req.Groups {
			rg := kmsg.NewDescribeGroupsResponseGroup()
			rg.Group, rg.ErrorCode = g, kerr.CoordinatorNotAvailable.Code
			resp.Groups = append(resp.Groups, rg)
		}
		return resp, nil, true
	})
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	got, err := mm2.DescribeGroups(ctx, cl, kadm.ListedGroups{}, "g")
	if err != nil {
		t.Fatal(err)
	}
	if d := got["g"]; d.Err != nil || !d.Absent() {
		t.Errorf("g: %+v, want absent once the coordinator answers", d)
	}
	if n := refused.Load(); n < 3 {
		t.Errorf("DescribeGroups sent %d times, want the 2 refusals and an answer", n)
	}
}

// A streams group (KIP-1071) is described with StreamsGroupDescribe at its coordinator, with
// its topology and members; one the describe does not find is asked the classic way. kfake
// has no streams groups: its brokers answer as Kafka 4.3 would, ApiVersions naming the
// streams keys, the listing naming the groups' types and the describe from the test.
func TestDescribeStreamsGroups(t *testing.T) {
	t.Parallel()
	c, cl, _ := groupCluster(t)
	c.ControlKey(int16(kmsg.ApiVersions), func(kr kmsg.Request) (kmsg.Response, error, bool) {
		c.KeepControl()
		resp := kr.(*kmsg.ApiVersionsRequest).ResponseKind().(*kmsg.ApiVersionsResponse)
		kversion.V4_3_0().EachMaxKeyVersion(func(k, v int16) {
			key := kmsg.NewApiVersionsResponseApiKey()
			key.ApiKey, key.MaxVersion = k, v
			resp.ApiKeys = append(resp.ApiKeys, key)
		})
		return resp, nil, true
	})
	c.ControlKey(int16(kmsg.ListGroups), func(kr kmsg.Request) (kmsg.Response, error, bool) {
		c.KeepControl()
		resp := kr.(*kmsg.ListGroupsRequest).ResponseKind().(*kmsg.ListGroupsResponse)
		for _, name := range []string{"wc", "busy", "gone"} {
			g := kmsg.NewListGroupsResponseGroup()
			g.Group, g.GroupType, g.ProtocolType, g.GroupState = name, "streams", "streams", "Empty"
			resp.Groups = append(resp.Groups, g)
		}
		return resp, nil, true
	})
	var asked atomic.Int32
	c.ControlKey(int16(kmsg.StreamsGroupDescribe), func(kr kmsg.Request) (kmsg.Response, error, bool) {
		c.KeepControl()
		asked.Add(1)
		req := kr.(*kmsg.StreamsGroupDescribeRequest)
		resp := req.ResponseKind().(*kmsg.StreamsGroupDescribeResponse)
		for _, name := range req.Groups {
			g := kmsg.NewStreamsGroupDescribeResponseGroup()
			g.Group, g.State = name, "Empty"
			switch name {
			case "wc":
				sub := kmsg.NewStreamsGroupDescribeResponseGroupTopologySubtopology()
				sub.SourceTopics, sub.RepartitionSinkTopics = []string{"lines"}, []string{"wc-r-repartition"}
				g.Topology = &kmsg.StreamsGroupDescribeResponseGroupTopology{Epoch: 3, Subtopologies: []kmsg.StreamsGroupDescribeResponseGroupTopologySubtopology{sub}}
			case "busy":
				g.State = "Stable"
				g.Members = make([]kmsg.StreamsGroupDescribeResponseGroupMember, 2)
			case "gone":
				g.ErrorCode = kerr.GroupIDNotFound.Code
			}
			resp.Groups = append(resp.Groups, g)
		}
		return resp, nil, true
	})
	got, err := mm2.DescribeGroups(context.Background(), cl, nil, "wc", "busy", "gone")
	if err != nil {
		t.Fatal(err)
	}
	if d := got["wc"]; d.Err != nil || d.Type != mm2.GroupTypeStreams || d.State != "Empty" || d.Members != 0 || d.Topology == nil ||
		fmt.Sprint(d.Topology.Inputs, d.Topology.Repartition, d.Topology.Epoch) != "[lines] [wc-r-repartition] 3" || mm2.GroupWritable("B", d) != nil {
		t.Errorf("wc: %+v (topology %+v), want an Empty, writable streams group with its topology", d, d.Topology)
	}
	if d := got["busy"]; d.Err != nil || d.Type != mm2.GroupTypeStreams || d.Members != 2 || !errors.Is(mm2.GroupWritable("B", d), mm2.ErrGroupInUse) {
		t.Errorf("busy: %+v, want a streams group with 2 members, not writable", d)
	}
	if d := got["gone"]; !d.Absent() {
		t.Errorf("gone: %+v, want absent (found neither way)", d)
	}
	if asked.Load() == 0 {
		t.Error("StreamsGroupDescribe was never sent")
	}
}
