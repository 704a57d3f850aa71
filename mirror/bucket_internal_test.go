package mirror

import (
	"fmt"
	"testing"

	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// TestBucketOfSpreads: consecutive partitions of a topic fall into consecutive buckets, so a
// topic of k*n partitions puts k in every bucket.
func TestBucketOfSpreads(t *testing.T) {
	for _, topic := range []string{"orders", "payments", "a"} {
		per := map[int]int{}
		for p := range int32(48) {
			per[bucketOf(tp{topic, p}, 16)]++
		}
		for b := range 16 {
			if per[b] != 3 {
				t.Fatalf("topic %s: bucket %d holds %d of 48 partitions, want 3 (%v)", topic, b, per[b], per)
			}
		}
	}
}

// balance runs bucketBalancer over members (each owning owned[i] at generation gen) and
// returns what each member gets.
func balance(t *testing.T, n int, topics map[string]int32, owned []map[string][]int32, gen int32) []map[string][]int32 {
	t.Helper()
	bb := bucketBalancer{n: n}
	var names []string
	for topic := range topics {
		names = append(names, topic)
	}
	members := make([]kmsg.JoinGroupResponseMember, len(owned))
	for i := range owned {
		members[i] = kmsg.NewJoinGroupResponseMember()
		members[i].MemberID = fmt.Sprintf("m%d", i)
		members[i].ProtocolMetadata = bb.JoinGroupMetadata(names, owned[i], gen)
	}
	b, err := kgo.NewConsumerBalancer(bb, members)
	if err != nil {
		t.Fatal(err)
	}
	plan := bb.Balance(b, topics).(*kgo.BalancePlan).AsMemberIDMap()
	out := make([]map[string][]int32, len(owned))
	for i := range owned {
		out[i] = plan[fmt.Sprintf("m%d", i)]
	}
	return out
}

// bucketsOwned maps each bucket to the members given a partition of it, failing on a bucket
// split between members.
func bucketsOwned(t *testing.T, n int, got []map[string][]int32) map[int]int {
	t.Helper()
	owner := map[int]int{}
	for i, m := range got {
		for topic, ps := range m {
			for _, p := range ps {
				k := bucketOf(tp{topic, p}, n)
				if o, ok := owner[k]; ok && o != i {
					t.Fatalf("bucket %d split between members %d and %d", k, o, i)
				}
				owner[k] = i
			}
		}
	}
	return owner
}

// TestBucketBalancer: whole buckets, even shares, sticky, and cooperative (a bucket that
// moves is given to nobody in the round that revokes it).
func TestBucketBalancer(t *testing.T) {
	const n = 8
	topics := map[string]int32{"orders": 20, "payments": 7}
	all := 0
	for _, c := range topics {
		all += int(c)
	}

	// Three new members: every partition assigned, whole buckets, shares 3/3/2.
	got := balance(t, n, topics, []map[string][]int32{nil, nil, nil}, -1)
	owner := bucketsOwned(t, n, got)
	total := 0
	shares := map[int]int{}
	for i, m := range got {
		for _, ps := range m {
			total += len(ps)
		}
		for _, o := range owner {
			if o == i {
				shares[i]++
			}
		}
	}
	if total != all || len(owner) != n {
		t.Fatalf("assigned %d of %d partitions in %d of %d buckets", total, all, len(owner), n)
	}
	for i := range 3 {
		if shares[i] < 2 || shares[i] > 3 {
			t.Fatalf("member %d got %d buckets of 8 among 3 members: %v", i, shares[i], shares)
		}
	}

	// The same members again, each claiming what it got: nothing moves.
	again := balance(t, n, topics, got, 1)
	for k, o := range bucketsOwned(t, n, again) {
		if owner[k] != o {
			t.Fatalf("bucket %d moved from member %d to %d in a balance with no change", k, owner[k], o)
		}
	}

	// A fourth member joins: it gets buckets only in the next round; this round, the buckets
	// that move are revoked from their owners and given to nobody; the others stay.
	joined := balance(t, n, topics, append(append([]map[string][]int32(nil), got...), nil), 1)
	if len(joined[3]) != 0 {
		t.Fatalf("the new member got %v while their owners still hold them", joined[3])
	}
	kept := bucketsOwned(t, n, joined)
	if len(kept) == n {
		t.Fatalf("no bucket was revoked for the new member")
	}
	for k, o := range kept {
		if owner[k] != o {
			t.Fatalf("bucket %d moved from member %d straight to %d", k, owner[k], o)
		}
	}
	// Next round (the revoked buckets free): the new member gets 2.
	next := balance(t, n, topics, append(joined[:3:3], nil), 2)
	newShare := 0
	for _, o := range bucketsOwned(t, n, next) {
		if o == 3 {
			newShare++
		}
	}
	if newShare != 2 {
		t.Fatalf("the new member got %d buckets of 8 among 4 members, want 2", newShare)
	}
}
