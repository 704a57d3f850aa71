package mm2_test

import (
	"context"
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
