package verify

import (
	"context"
	"fmt"
	"strings"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/kmigrate/kmigrate/align"
	"github.com/kmigrate/kmigrate/logread"
)

// abortedListed bounds the offset ranges an aborted-records finding names per partition.
const abortedListed = 5

// AbortedOnTarget is what preflight found of transactions in one target topic: the records of
// aborted transactions, which a read_committed consumer never reads and a read_uncommitted one
// (the Java client's default) does (e.g. the copies a killed or fenced exactly-once mirror left
// there), and transactions still open.
type AbortedOnTarget struct {
	// Records counts the records of aborted transactions from each partition's log start to
	// its last stable offset.
	Records int64 `json:"records"`
	// Partitions are the partitions holding any, or a transaction still open, in order.
	Partitions []AbortedPartition `json:"partitions,omitempty"`
}

// AbortedPartition is one target partition's aborted records: their count and the first
// abortedListed ranges of consecutive offsets (Truncated: there are more).
type AbortedPartition struct {
	Partition int32               `json:"partition"`
	Records   int64               `json:"records"`
	Ranges    []align.TargetRange `json:"ranges"`
	Truncated bool                `json:"truncated,omitempty"`
	// Open is set when the last stable offset was below the high watermark when listed: a
	// transaction still open there, not read; its records count once it has ended.
	Open *align.TargetRange `json:"open_transaction,omitempty"`
}

// targetAborted reads target topic td from each partition's log start to its last stable
// offset under read_committed and counts the records of aborted transactions it passes over
// (logread.TxnWatch): only fetch responses that list aborted transactions are decoded twice.
func targetAborted(ctx context.Context, dst *kgo.Client, da *kadm.Client, alias string, td kadm.TopicDetail) (*AbortedOnTarget, error) {
	list := func(what string, f func(context.Context, ...string) (kadm.ListedOffsets, error)) (kadm.ListedOffsets, error) {
		l, err := f(ctx, td.Topic)
		if err == nil {
			err = l.Error()
		}
		if err != nil {
			return nil, fmt.Errorf("target cluster %s: list %s of topic %s: %w", alias, what, td.Topic, err)
		}
		return l, nil
	}
	starts, err := list("start offsets", da.ListStartOffsets)
	if err != nil {
		return nil, err
	}
	stable, err := list("last stable offsets", da.ListCommittedOffsets)
	if err != nil {
		return nil, err
	}
	ends, err := list("end offsets", da.ListEndOffsets)
	if err != nil {
		return nil, err
	}
	res := &AbortedOnTarget{}
	leaders := &logread.Leaders{}
	for _, p := range td.Partitions.Sorted() {
		s, _ := starts.Lookup(td.Topic, p.Partition)
		lso, _ := stable.Lookup(td.Topic, p.Partition)
		hw, _ := ends.Lookup(td.Topic, p.Partition)
		ap := AbortedPartition{Partition: p.Partition, Ranges: []align.TargetRange{}}
		if lso.Offset < hw.Offset {
			ap.Open = &align.TargetRange{From: lso.Offset, To: hw.Offset - 1}
		}
		watch := &logread.TxnWatch{Aborted: func(r *kgo.Record) {
			if r.Offset >= lso.Offset {
				return
			}
			ap.Records++
			switch n := len(ap.Ranges); {
			case n > 0 && ap.Ranges[n-1].To+1 == r.Offset:
				ap.Ranges[n-1].To = r.Offset
			case n < abortedListed:
				ap.Ranges = append(ap.Ranges, align.TargetRange{From: r.Offset, To: r.Offset})
			default:
				ap.Truncated = true
			}
		}}
		o := logread.Options{Cluster: "target " + alias, Topic: td.Topic, Partition: p.Partition,
			From: s.Offset, To: lso.Offset, Committed: true, Short: logread.ShortStop, Leaders: leaders, Txns: watch}
		if err := logread.Each(ctx, dst, o, func(*kgo.Record) (bool, error) { return true, nil }); err != nil {
			return nil, fmt.Errorf("read target topic %s partition %d (cluster %s) for aborted transactions: %w (or pass --scan-aborted=false)", td.Topic, p.Partition, alias, err)
		}
		if ap.Records > 0 || ap.Open != nil {
			res.Records += ap.Records
			res.Partitions = append(res.Partitions, ap)
		}
	}
	return res, nil
}

// abortedFinding is the finding for a target topic holding aborted records; ok false when it
// holds none.
func abortedFinding(a *AbortedOnTarget) (Finding, bool) {
	if a == nil || a.Records == 0 {
		return Finding{}, false
	}
	var parts []string
	n := 0
	for _, p := range a.Partitions {
		if p.Records == 0 {
			continue
		}
		n++
		var rs []string
		for _, r := range p.Ranges {
			if r.From == r.To {
				rs = append(rs, fmt.Sprint(r.From))
			} else {
				rs = append(rs, fmt.Sprintf("%d-%d", r.From, r.To))
			}
		}
		if p.Truncated {
			rs = append(rs, "...")
		}
		parts = append(parts, fmt.Sprintf("partition %d: %d at %s", p.Partition, p.Records, strings.Join(rs, ", ")))
	}
	return Finding{
		Field:    "aborted records",
		Target:   fmt.Sprintf("%d in %d partitions (%s)", a.Records, n, strings.Join(parts, "; ")),
		Severity: SeverityWarning,
		Note: "records of aborted transactions (e.g. the copies a killed or fenced exactly-once mirror left): consumers " +
			"reading read_uncommitted (the Java client's default) read them, read_committed consumers do not; set " +
			"isolation.level=read_committed on the target's consumers, and see what kverify diff and kreconcile groups report of them",
	}, true
}

// openNotes says, per partition with a transaction still open, that its records were not read.
func openNotes(a *AbortedOnTarget) []string {
	if a == nil {
		return nil
	}
	var notes []string
	for _, p := range a.Partitions {
		if o := p.Open; o != nil {
			notes = append(notes, fmt.Sprintf("target partition %d: a transaction is still open at offsets %d-%d (last stable offset below the high watermark): not read for aborted records; run again once it has ended", p.Partition, o.From, o.To))
		}
	}
	return notes
}
