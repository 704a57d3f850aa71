package verify

import (
	"context"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/kmigrate/kmigrate/align"
	"github.com/kmigrate/kmigrate/digest"
	"github.com/kmigrate/kmigrate/logread"
	"github.com/kmigrate/kmigrate/offsetmap"
)

// fetchStream reads one side of a partition over [from, to) with logread: raw fetches, exact
// positions (a range ending in markers or a compacted gap is known to be done), fingerprints
// computed on logread's decoding goroutine, a few record batches ahead of the aligner.
type fetchStream struct {
	*logread.Stream[align.Item]
}

type fetchSpec struct {
	cluster   string // "source" or "target", for errors
	topic     string
	partition int32
	from, to  int64
	committed bool
	fields    offsetmap.Fields
	// maxPartBytes is the partition fetch size. Default: 1 MiB (as kgo's).
	maxPartBytes int32
	// leaders is the cluster's leader cache shared by the reads of one call; nil: the read
	// looks its leader up.
	leaders *logread.Leaders
	// tally, on a read_committed read, is told the aborted records passed over and every
	// record yielded (see digest.TxnTally); nil: none.
	tally *digest.TxnTally
}

// startFetch starts reading; the log ending before to is an error (to was listed up front).
func startFetch(ctx context.Context, cl *kgo.Client, spec fetchSpec) *fetchStream {
	var h offsetmap.Hasher // used by the decoding goroutine only
	fields := spec.fields
	var txns *logread.TxnWatch
	if spec.tally != nil && spec.committed {
		txns = spec.tally.Watch()
	}
	tally := spec.tally
	return &fetchStream{logread.Start(ctx, cl, logread.Options{
		Cluster:        spec.cluster,
		Topic:          spec.topic,
		Partition:      spec.partition,
		From:           spec.from,
		To:             spec.to,
		Committed:      spec.committed,
		Short:          logread.ShortError,
		PartitionBytes: spec.maxPartBytes,
		Leaders:        spec.leaders,
		Txns:           txns,
	}, func(r *kgo.Record) align.Item {
		it := align.Item{Offset: r.Offset, FP: h.Sum(r, fields), Record: r}
		if txns != nil {
			tally.Delivered(it.Offset, it.FP)
		}
		return it
	})}
}

// rememberLeaders puts the leaders of td's partitions, as a metadata answer gave them, in l.
func rememberLeaders(l *logread.Leaders, td kadm.TopicDetail) {
	for _, pd := range td.Partitions {
		l.Remember(td.Topic, pd.Partition, pd.Leader, td.ID)
	}
}

// peek returns the first item without consuming it.
func (s *fetchStream) peek(ctx context.Context) (align.Item, bool, error) { return s.Peek(ctx) }

// close stops the reader and waits for it.
func (s *fetchStream) close() { s.Close() }
