package mm2_test

import (
	"errors"
	"strings"
	"testing"

	"github.com/kmigrate/kmigrate/mm2"
)

func TestGroupWritable(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		d    mm2.DescribedGroup
		want string // "" writable, else a part of the refusal
	}{
		{name: "absent", d: mm2.DescribedGroup{Group: "g"}},
		{name: "dead", d: mm2.DescribedGroup{Group: "g", State: "Dead"}},
		{name: "empty", d: mm2.DescribedGroup{Group: "g", Type: "classic", State: "Empty"}},
		{name: "empty before types", d: mm2.DescribedGroup{Group: "g", State: "Empty"}},
		{name: "empty consumer group", d: mm2.DescribedGroup{Group: "g", Type: "consumer", State: "Empty"}},
		{name: "stable with a member", d: mm2.DescribedGroup{Group: "g", Type: "classic", State: "Stable", Members: 1}, want: `group "g" is Stable with 1 member on target cluster B`},
		{name: "rebalancing without members", d: mm2.DescribedGroup{Group: "g", Type: "classic", State: "PreparingRebalance"}, want: "is PreparingRebalance with 0 members"},
		{name: "empty but a member listed", d: mm2.DescribedGroup{Group: "g", Type: "classic", State: "Empty", Members: 1}, want: "is Empty with 1 member"},
		{name: "consumer group with members", d: mm2.DescribedGroup{Group: "g", Type: "consumer", State: "Stable", Members: 2}, want: "is Stable with 2 members on target cluster B (a consumer group of the new protocol"},
		{name: "consumer group reconciling", d: mm2.DescribedGroup{Group: "g", Type: "consumer", State: "Reconciling", Members: 1}, want: "is Reconciling with 1 member"},
		{name: "share group", d: mm2.DescribedGroup{Group: "g", Type: "share", State: "Empty", Members: -1}, want: `group "g" is a share group (KIP-932)`},
		{name: "empty streams group", d: mm2.DescribedGroup{Group: "g", Type: "streams", State: "Empty"}},
		{name: "streams group with a member", d: mm2.DescribedGroup{Group: "g", Type: "streams", State: "Stable", Members: 1}, want: "is Stable with 1 member on target cluster B (a streams group, group.protocol=streams"},
		{name: "streams group not ready", d: mm2.DescribedGroup{Group: "g", Type: "streams", State: "NotReady", Members: 1}, want: "is NotReady with 1 member"},
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
				!strings.Contains(err.Error(), "nothing was written") {
				t.Fatalf("got %v, want a *GroupInUseError containing %q and what to do", err, tt.want)
			}
		})
	}
}
