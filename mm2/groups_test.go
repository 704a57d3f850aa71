package mm2_test

import (
	"errors"
	"strings"
	"testing"

	"github.com/twmb/franz-go/pkg/kadm"

	"github.com/kmigrate/kmigrate/mm2"
)

func TestGroupWritable(t *testing.T) {
	t.Parallel()
	member := []kadm.DescribedGroupMember{{MemberID: "m1"}}
	tests := []struct {
		name string
		d    kadm.DescribedGroup
		want string // "" writable, else a part of the refusal
	}{
		{name: "absent", d: kadm.DescribedGroup{Group: "g"}},
		{name: "dead", d: kadm.DescribedGroup{Group: "g", State: "Dead"}},
		{name: "empty", d: kadm.DescribedGroup{Group: "g", State: "Empty"}},
		{name: "stable with a member", d: kadm.DescribedGroup{Group: "g", State: "Stable", Members: member}, want: `group "g" is Stable with 1 member on target cluster B`},
		{name: "rebalancing without members", d: kadm.DescribedGroup{Group: "g", State: "PreparingRebalance"}, want: "is PreparingRebalance with 0 members"},
		{name: "empty but a member listed", d: kadm.DescribedGroup{Group: "g", State: "Empty", Members: member}, want: "is Empty with 1 member"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			err := mm2.GroupWritable("B", tt.d)
			if tt.want == "" {
				if err != nil {
					t.Fatalf("got %v, want writable", err)
				}
				return
			}
			var in *mm2.GroupInUseError
			if !errors.Is(err, mm2.ErrGroupInUse) || !errors.As(err, &in) || !strings.Contains(err.Error(), tt.want) ||
				!strings.Contains(err.Error(), "stop its consumers") {
				t.Fatalf("got %v, want a *GroupInUseError containing %q and what to do", err, tt.want)
			}
		})
	}
}
