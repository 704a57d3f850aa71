package report_test

import (
	"github.com/kmigrate/kmigrate/align"
	"github.com/kmigrate/kmigrate/digest"
	"github.com/kmigrate/kmigrate/mm2"
	"github.com/kmigrate/kmigrate/offsetmap"
	"github.com/kmigrate/kmigrate/reconcile"
	"github.com/kmigrate/kmigrate/verify"
)

func ptr(n int64) *int64 { return &n }

// verifyDiffering is a verify result with every class: partition 0 is identical, 1 has one
// of each kind, 2 has more missing ranges than a table shows and was cut by kverify, 3 could not be aligned.
func verifyDiffering() *verify.Result {
	var p2missing []align.SourceRange
	for o := int64(100); o <= 650; o += 50 {
		p2missing = append(p2missing, align.SourceRange{From: o, To: o})
	}
	r := &verify.Result{
		SourceTopic: "orders",
		TargetTopic: "orders",
		Compared:    []string{"key", "value", "headers"},
		Partitions: []align.PartitionResult{
			{
				// The target topic held 12 records before the mirror started: read, not compared.
				Partition: 0, Counts: align.Counts{Matched: 1000},
				SourceStart: 0, SourceEnd: 1000, TargetStart: 0, TargetEnd: 1012,
				TargetSkipped: 12, TargetSkippedRange: &align.TargetRange{From: 0, To: 11},
			},
			{
				Partition: 1,
				Counts:    align.Counts{Matched: 985, Missing: 3, Duplicated: 5, Mismatched: 2, Extra: 1, Ambiguous: 4},
				// 990 source records: 985 matched + 3 missing + 2 mismatched; 993 target records:
				// 985 matched + 5 duplicated + 2 mismatched + 1 extra.
				SourceStart: 0, SourceEnd: 990, TargetStart: 0, TargetEnd: 993,
				MissingRanges: []align.SourceRange{{From: 120, To: 121}, {From: 500, To: 500}},
				Duplicates: []offsetmap.Copy{
					{Target: 300, Source: 295}, {Target: 301, Source: 296}, {Target: 302, Source: 297},
					{Target: 303, Source: 298}, {Target: 304, Source: 299},
				},
				Mismatches: []align.Mismatch{
					{SourceOffset: 610, TargetOffset: 612, Fields: []string{"value"}},
					{SourceOffset: 611, TargetOffset: 613, Fields: []string{"value"}},
				},
				ExtraRanges:     []align.TargetRange{{From: 992, To: 992}},
				AmbiguousRanges: []align.TargetRange{{From: 700, To: 703}},
			},
			{
				Partition: 2, Counts: align.Counts{Matched: 688, Missing: 12},
				SourceStart: 0, SourceEnd: 700, TargetStart: 0, TargetEnd: 688,
				MissingRanges: p2missing,
				// kverify cut its lists (the counts stay complete): every renderer says so.
				Truncated: true,
			},
			{
				Partition: 3, SourceStart: 0, SourceEnd: 640, TargetStart: 0, TargetEnd: 640,
				Err: "fetch target orders[3]: NOT_LEADER_OR_FOLLOWER after 5 retries; check the target cluster's leader for partition 3 and rerun with --partitions 3",
			},
		},
	}
	for _, p := range r.Partitions {
		r.Summary.Add(p.Counts)
	}
	return r
}

// verifyIdentical is a clean result, with ambiguity reported but not counted as a difference.
func verifyIdentical() *verify.Result {
	r := &verify.Result{
		SourceTopic: "payments",
		TargetTopic: "dc1.payments",
		Identical:   true,
		Compared:    []string{"key", "value", "headers", "timestamp"},
		Partitions: []align.PartitionResult{
			{Partition: 0, Counts: align.Counts{Matched: 25000}, SourceEnd: 25000, TargetEnd: 25000},
			{
				Partition: 1, Counts: align.Counts{Matched: 24871, Ambiguous: 6},
				SourceStart: 129, SourceEnd: 25000, TargetStart: 0, TargetEnd: 24871,
				AmbiguousRanges: []align.TargetRange{{From: 4410, To: 4415}},
			},
		},
	}
	for _, p := range r.Partitions {
		r.Summary.Add(p.Counts)
	}
	return r
}

// verifyAborted is identical read_committed, with the aborted records a mirror killed twice
// in a transaction left on the target (partition 0: two aborted batches, the first copies of
// records committed after them), and a transaction still open on partition 1.
func verifyAborted() *verify.Result {
	r := &verify.Result{
		SourceTopic: "orders",
		TargetTopic: "orders",
		Identical:   true,
		Compared:    []string{"key", "value", "headers"},
		Partitions: []align.PartitionResult{
			{Partition: 0, Counts: align.Counts{Matched: 240000}, SourceEnd: 240000, TargetEnd: 246002},
			{Partition: 1, Counts: align.Counts{Matched: 1000}, SourceEnd: 1000, TargetEnd: 1000},
		},
		Aborted:       6000,
		AbortedCopies: 5990,
		Transactions: []verify.TxnPartition{
			{Partition: 0, Txns: digest.Txns{Aborted: 6000, AbortedCopies: 5990, AbortedRanges: []align.TargetRange{{From: 50000, To: 55999}, {From: 120001, To: 120010}}}},
			{Partition: 1, Txns: digest.Txns{OpenTransaction: &align.TargetRange{From: 1000, To: 1024}}},
		},
	}
	for _, p := range r.Partitions {
		r.Summary.Add(p.Counts)
	}
	return r
}

// reconcileSeed is the case docs/design.md "Root cause: the 30-vs-38 gap" starts from: the
// consumer stopped at 120, 30 more records arrived, and MM2 3.7.1 left the target group at 112
// (translated from an offset sync 9 records back), so the target lag is 38 and a switch
// re-delivers 8.
func reconcileSeed() *reconcile.Result {
	return &reconcile.Result{
		Groups: []reconcile.Group{{
			Group: "orders-consumer", SourceState: "Empty", TargetState: "Empty",
			Partitions: []reconcile.Partition{{
				Topic: "orders", TargetTopic: "orders", Partition: 0,
				SourceCommitted: 120, SourceStart: 0, SourceEnd: 150,
				TargetCommitted: ptr(112), TargetEnd: 150,
				Checkpoint: ptr(112), CheckpointUpstream: ptr(120), ExactTarget: ptr(120),
				Status: reconcile.StatusBehind, RedeliveredIfUnchanged: 8,
				CheckpointStatus: reconcile.StatusBehind,
				Proof:            "fingerprint of source 119 = target 119",
			}},
		}},
	}
}

// reconcileMixed has one group partition in every status, a group that failed and an apply.
func reconcileMixed() *reconcile.Result {
	return &reconcile.Result{
		Applied: true,
		Backup:  "kreconcile-backup-20261201T070000Z.json",
		Groups: []reconcile.Group{
			{
				Group: "billing", SourceState: "Empty", TargetState: "Empty", Applied: true,
				Partitions: []reconcile.Partition{
					{Topic: "invoices", TargetTopic: "invoices", Partition: 0, SourceCommitted: 5000, SourceEnd: 5000,
						TargetCommitted: ptr(5000), TargetEnd: 5000, Checkpoint: ptr(4991), ExactTarget: ptr(5000),
						CheckpointUpstream: ptr(4991), Status: reconcile.StatusExact, CheckpointStatus: reconcile.StatusBehind,
						Proof: "fingerprint of source 4999 = target 4999", Action: "committed 5000 (was 4991)"},
					{Topic: "invoices", TargetTopic: "invoices", Partition: 1, SourceCommitted: 4870, SourceEnd: 4900,
						TargetCommitted: ptr(4876), TargetEnd: 4903, Checkpoint: ptr(4876), ExactTarget: ptr(4873),
						Status: reconcile.StatusAhead, SkippedIfUnchanged: 3, CheckpointStatus: reconcile.StatusAhead,
						Proof: "fingerprint of source 4869 = target 4872 (3 duplicates earlier in the target)"},
				},
			},
			{
				Group: "audit", SourceState: "Stable", TargetState: "",
				Refused: "the source group is Stable with 2 members: stop its consumers first, then rerun with --apply",
				Partitions: []reconcile.Partition{
					{Topic: "events", TargetTopic: "src.events", Partition: 0, SourceCommitted: 90210, SourceEnd: 90400,
						TargetEnd: 88000, Status: reconcile.StatusPending,
						Reason: "the mirror has copied source offsets up to 87999 only; rerun once it passes 90209"},
					{Topic: "events", TargetTopic: "src.events", Partition: 1, SourceCommitted: 1200, SourceEnd: 1300,
						TargetEnd: 1300, ExactTarget: ptr(1200), Status: reconcile.StatusMissingTargetOffset,
						RedeliveredIfUnchanged: 1200, Proof: "fingerprint of source 1199 = target 1199"},
				},
			},
			{
				Group: "legacy<app>", SourceState: "Empty", TargetState: "Empty",
				Partitions: []reconcile.Partition{
					{Topic: "clicks", TargetTopic: "clicks", Partition: 0, SourceCommitted: 40, SourceStart: 100, SourceEnd: 400,
						TargetCommitted: ptr(0), TargetEnd: 300, Status: reconcile.StatusUnmappable,
						Reason: "the source group is committed at 40, below the log start 100: the records it has not consumed were deleted by retention"},
				},
			},
			{
				Group: "reports", Err: "describe group reports on cluster target: GROUP_AUTHORIZATION_FAILED: grant Describe on the group to the kreconcile principal",
			},
		},
	}
}

// lintFindings is what kmirror lint says about the seed case's mm2.properties.
func lintFindings() []mm2.Finding {
	return []mm2.Finding{
		{Line: 14, Key: "offset.max.lag", Severity: mm2.SeverityError,
			Message:    "unknown key: MirrorMaker 2 ignores it without a word, so offset.lag.max stays at its default 100",
			Suggestion: "offset.lag.max"},
		{Line: 9, Key: "source->target.enabled", Severity: mm2.SeverityError,
			Message: `flow "source->target" names alias "source", but clusters declares "SOURCE" (aliases are case-sensitive)`, Suggestion: "SOURCE->target.enabled"},
		{Line: 0, Key: "offset-syncs.topic.replication.factor", Severity: mm2.SeverityWarning,
			Message: "not set: the default 3 needs three brokers on the cluster that holds the offset syncs"},
		{Line: 21, Key: "sync.group.offsets.interval.seconds", Severity: mm2.SeverityInfo,
			Message: "10 s: target groups are written at most this often, and only while they are empty"},
	}
}

// rollbackMixed restores one group, refuses one that has consumers again, and leaves alone a
// partition of a third that consumed on the target after the apply.
func rollbackMixed() *reconcile.RollbackResult {
	return &reconcile.RollbackResult{
		Backup: "kreconcile-backup-20261201T070000Z.json",
		Groups: []reconcile.RolledBackGrp{
			{Group: "billing", Restored: 2},
			{Group: "orders-consumer", Refused: "the target group has 1 member: stop its consumers first, then rerun rollback"},
			{Group: "payments", Restored: 1, Unchanged: 1, Conflicts: []reconcile.RollbackConflict{
				{Topic: "payments", Partition: 2, Backup: ptr(40), Applied: ptr(48), Now: ptr(51)}}},
		},
		TargetCluster: &reconcile.ClusterRef{Alias: "target", ID: "Zq3kVb9bTJ2N0mJtYxW1cA"},
	}
}
