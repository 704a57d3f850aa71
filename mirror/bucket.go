package mirror

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"hash/fnv"
	"maps"
	"slices"
	"strings"
	"sync"

	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// Buckets: with Config.Fencing transactions the flow's source partitions are split into
// Config.Buckets buckets, each written by one transactional producer, so a process holds at
// most one producer (and one open transaction) per bucket it owns, however
// many partitions it mirrors. The source group's balancer (bucketBalancer) assigns whole
// buckets: every partition of a bucket goes to the bucket's one owner. The next owner of a
// bucket initialises its transactional id, which fences the previous owner's writes to every
// partition of the bucket at once (docs/design.md, "kmirror's transactional writes").

// DefaultBuckets is Config.Buckets' default: enough buckets to share a flow between up to 16
// processes, few enough that a process holds no more than 16 producers.
const DefaultBuckets = 16

// MaxBuckets bounds Config.Buckets: each bucket is a producer in its owner.
const MaxBuckets = 1024

// bucketScheme is the flow's split into buckets, the one owner of the bucket count
// (Config.Buckets) and of which bucket a partition falls into: every process of a flow, and
// every run, computes the same. The engine, its writers, the resume and the balancer ask it;
// none of them reads the count from the configuration.
type bucketScheme struct {
	n     int    // the bucket count
	group string // the flow's group id, which names the transactional ids
}

func newBucketScheme(c *Config) bucketScheme { return bucketScheme{n: c.Buckets, group: c.GroupID} }

// of is the bucket of partition t.
func (s bucketScheme) of(t tp) int { return bucketOf(t, s.n) }

// txnID is the transactional id of bucket b.
func (s bucketScheme) txnID(b int) string { return bucketTxnID(s.group, b, s.n) }

// protocol is the source group's protocol of the scheme (bucketProtocol).
func (s bucketScheme) protocol() string { return bucketProtocol(s.n) }

// balancer is the source group's balancer of the scheme.
func (s bucketScheme) balancer() bucketBalancer { return bucketBalancer{n: s.n} }

// what names bucket b for errors and warnings.
func (s bucketScheme) what(b int) string { return fmt.Sprintf("bucket %d of %d", b, s.n) }

// earlierIDs are the transactional ids of the scheme the offset map was last written under,
// when it is not this one: every bucket's of another count (earlier > 0), or, for kmirror's
// earlier one id per partition (earlier 0), the id of every partition of parts.
func (s bucketScheme) earlierIDs(earlier int, parts map[tp]bool) []string {
	var ids []string
	if earlier > 0 {
		for b := range earlier {
			ids = append(ids, bucketTxnID(s.group, b, earlier))
		}
		return ids
	}
	for t := range parts {
		ids = append(ids, fmt.Sprintf("%s-%s-%d", s.group, t.topic, t.partition))
	}
	slices.Sort(ids)
	return ids
}

// bucketOf is the bucket of partition t among n: consecutive partitions of a topic fall into
// consecutive buckets, from a place the topic's name decides, so a topic's partitions spread
// over the buckets. It depends only on the name, the partition and n.
func bucketOf(t tp, n int) int {
	h := fnv.New32a()
	h.Write([]byte(t.topic))
	return int((uint64(h.Sum32()) + uint64(t.partition)) % uint64(n))
}

// bucketTxnID is the transactional id of bucket b of n in group's flow. It names the bucket
// count, so a flow run with another count uses other ids (and fences the old ones first:
// fenceScheme).
func bucketTxnID(group string, b, n int) string {
	return fmt.Sprintf("%s-bucket-%d-of-%d", group, b, n)
}

// bucket is one bucket this process owns: its writer and the owned partitions that write
// through it (their commits are the bucket's).
type bucket struct {
	id int
	w  *txnWriter

	mu    sync.Mutex
	parts map[tp]*partState
}

// states lists the bucket's partitions.
func (bk *bucket) states() []*partState {
	bk.mu.Lock()
	defer bk.mu.Unlock()
	return slices.Collect(maps.Values(bk.parts))
}

// failed says whether a partition of the bucket failed (a fenced one, or one whose failure
// stops the engine): the bucket's transaction must not commit.
func (bk *bucket) failed() bool {
	for _, ps := range bk.states() {
		if ps.failure() != nil {
			return true
		}
	}
	return false
}

// isDirty says whether a partition of the bucket has map segments or offset syncs to commit.
func (bk *bucket) isDirty() bool {
	for _, ps := range bk.states() {
		if ps.isDirty() {
			return true
		}
	}
	return false
}

// bucketProtocol is the group protocol of a flow with n buckets. It names n, so the source
// group refuses (INCONSISTENT_GROUP_PROTOCOL) a process that splits the flow another way, and
// a process of an earlier kmirror (cooperative-sticky, one id per partition) while a
// bucketed one is in the group.
func bucketProtocol(n int) string { return fmt.Sprintf("kmirror-buckets-%d", n) }

// bucketBalancer is the source group's balancer with fencing transactions: it assigns whole
// buckets, sticky (a bucket stays with the member that owned it while that member's share
// allows), and as evenly as the bucket count allows. It is cooperative (KIP-429): a bucket
// that moves is first revoked from its owner, whose revoke commits the bucket's transaction,
// and assigned in the next round.
type bucketBalancer struct{ n int }

func (bb bucketBalancer) ProtocolName() string { return bucketProtocol(bb.n) }
func (bucketBalancer) IsCooperative() bool     { return true }

func (bucketBalancer) JoinGroupMetadata(interests []string, current map[string][]int32, generation int32) []byte {
	meta := kmsg.NewConsumerMemberMetadata()
	meta.Version = 2 // owned partitions (v1) and the generation (v2), as KIP-429 and KIP-792 need
	meta.Topics = interests
	meta.Generation = generation
	for topic, partitions := range current {
		o := kmsg.NewConsumerMemberMetadataOwnedPartition()
		o.Topic = topic
		o.Partitions = partitions
		meta.OwnedPartitions = append(meta.OwnedPartitions, o)
	}
	slices.SortFunc(meta.OwnedPartitions, func(a, b kmsg.ConsumerMemberMetadataOwnedPartition) int {
		return strings.Compare(a.Topic, b.Topic)
	})
	return meta.AppendTo(nil)
}

func (bucketBalancer) ParseSyncAssignment(assignment []byte) (map[string][]int32, error) {
	return kgo.ParseConsumerSyncAssignment(assignment)
}

func (bb bucketBalancer) MemberBalancer(members []kmsg.JoinGroupResponseMember) (kgo.GroupMemberBalancer, map[string]struct{}, error) {
	b, err := kgo.NewConsumerBalancer(bb, members)
	if err != nil {
		return nil, nil, err
	}
	return b, b.MemberTopics(), nil
}

// Balance assigns the buckets of topics (topic -> partition count) to the members.
func (bb bucketBalancer) Balance(b *kgo.ConsumerBalancer, topics map[string]int32) kgo.IntoSyncAssignment {
	plan := b.NewPlan()
	members := b.Members() // sorted by instance id, then member id: the same order in every leader
	if len(members) == 0 {
		return plan
	}
	interest := make([]map[string]bool, len(members))
	prev := make(map[int]int, bb.n) // bucket -> the member that owned a partition of it
	prevGen := make(map[int]int32, bb.n)
	for i := range members {
		_, meta := b.MemberAt(i)
		interest[i] = map[string]bool{}
		for _, t := range meta.Topics {
			interest[i][t] = true
		}
		for _, o := range meta.OwnedPartitions {
			for _, p := range o.Partitions {
				k := bucketOf(tp{o.Topic, p}, bb.n)
				// The claim of the highest generation wins: a member that missed rebalances
				// may still claim what another owns now (KIP-792).
				if g, ok := prevGen[k]; !ok || meta.Generation > g {
					prev[k], prevGen[k] = i, meta.Generation
				}
			}
		}
	}
	parts := make([][]tp, bb.n)
	for _, t := range slices.Sorted(maps.Keys(topics)) {
		for p := int32(0); p < topics[t]; p++ {
			k := bucketOf(tp{t, p}, bb.n)
			parts[k] = append(parts[k], tp{t, p})
		}
	}
	var used []int
	for k := range parts {
		if len(parts[k]) > 0 {
			used = append(used, k)
		}
	}
	owner := assignBuckets(used, prev, len(members))
	for _, k := range used {
		i := owner[k]
		for _, t := range parts[k] {
			// A member that does not (yet) subscribe the topic gets none of it; no other member
			// gets it either, so a bucket is never split between two writers.
			if interest[i][t.topic] {
				plan.AddPartition(&members[i], t.topic, t.partition)
			}
		}
	}
	plan.AdjustCooperative(b)
	return plan
}

// assignBuckets gives each bucket of used to one of members members: each member gets
// len(used)/members buckets or one more; a bucket stays with its previous owner (prev) while
// that owner is under its share.
func assignBuckets(used []int, prev map[int]int, members int) map[int]int {
	quota := (len(used) + members - 1) / members
	extra := len(used) % members // how many members may have quota buckets when it is not even
	if extra == 0 {
		extra = members
	}
	count := make([]int, members)
	atQuota := 0 // members with quota buckets
	full := func(i int) bool {
		// Below quota-1 a member may take more; at quota-1 one more while fewer than extra
		// members have quota.
		return count[i] >= quota || count[i] == quota-1 && atQuota >= extra
	}
	owner := make(map[int]int, len(used))
	give := func(k, i int) {
		owner[k] = i
		count[i]++
		if count[i] == quota {
			atQuota++
		}
	}
	var free []int
	for _, k := range used {
		if i, ok := prev[k]; ok && i < members && !full(i) {
			give(k, i)
			continue
		}
		free = append(free, k)
	}
	for _, k := range free {
		best := -1
		for i := range count {
			if !full(i) && (best < 0 || count[i] < count[best]) {
				best = i
			}
		}
		give(k, best)
	}
	return owner
}

// The fencing scheme record of the offset map topic says how the flow's writes were last
// fenced: by Config.Buckets buckets. A resume that finds another scheme (another count, or
// none in a map written by kmirror's earlier one id per partition) fences the old scheme's
// ids before it reads the target (fenceScheme).
//
//	key:   version INT16 = 2, kind INT8 = 2, group STRING
//	value: version INT16 = 2, buckets INT32
const schemeKind = 2

func schemeKey(group string) []byte { return kindKey(schemeKind, group) }

func schemeValue(buckets int) []byte {
	b := binary.BigEndian.AppendUint16(make([]byte, 0, 6), identityVersion)
	return binary.BigEndian.AppendUint32(b, uint32(buckets))
}

var errSchemeRecord = errors.New("not a kmirror fencing scheme record")

func decodeSchemeRecord(key, value []byte) (string, int, error) {
	group, _, ok := decodeKindKey(key, schemeKind)
	if !ok || len(value) < 6 || binary.BigEndian.Uint16(value) != identityVersion {
		return "", 0, errSchemeRecord
	}
	return group, int(binary.BigEndian.Uint32(value[2:])), nil
}

// fenceScheme fences the transactional ids of the scheme the offset map was last written
// under, when it is not this process's, and then records this one (the scheme record): the
// ids of a flow run with another bucket count (scheme > 0), or, in a map written by kmirror's
// earlier one id per partition (scheme 0), the id of every partition the map, the flow's
// topics or this assignment name. A process of the earlier scheme that lost the group
// (paused, partitioned) but still reaches the target could otherwise commit a transaction
// after this process took over its partitions. A map without segments has nothing to fence.
// It runs once per change of scheme: every later resume finds the record.
func (rs *resumer) fenceScheme(ctx context.Context, scheme int, persisted persistedMap, assigned []tp) error {
	var ids []string
	if scheme > 0 || len(persisted) > 0 {
		seen := map[tp]bool{}
		if scheme == 0 {
			for t := range persisted {
				seen[t] = true
			}
			for _, t := range assigned {
				seen[t] = true
			}
			for topic, n := range rs.flowTopics() {
				for p := range int32(n) {
					seen[tp{topic, p}] = true
				}
			}
		}
		ids = rs.buckets.earlierIDs(scheme, seen)
	}
	if len(ids) > 0 {
		rs.log.Info("the offset map was written under another fencing scheme: fencing its transactional ids first",
			"cluster", rs.cfg.TargetAlias, "map_topic", rs.cfg.MapTopic, "earlier_buckets", scheme, "buckets", rs.buckets.n, "ids", len(ids))
	}
	err := fenceEach(ids, func(id string) error {
		cl, err := rs.txn.initID(ctx, id, "the earlier fencing scheme")
		if err == nil {
			cl.Close()
		}
		return err
	})
	if err != nil {
		return err
	}
	rec := &kgo.Record{Topic: rs.cfg.MapTopic, Partition: 0, Key: schemeKey(rs.cfg.GroupID), Value: schemeValue(rs.buckets.n)}
	if err := rs.dst.ProduceSync(ctx, rec).FirstErr(); err != nil {
		return fmt.Errorf("target cluster %s: record the fencing scheme (%d buckets) in %s: %w%s", rs.cfg.TargetAlias, rs.buckets.n, rs.cfg.MapTopic, err, hint(err))
	}
	return nil
}
