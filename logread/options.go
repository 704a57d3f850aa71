package logread

import (
	"fmt"
	"sync"

	"github.com/twmb/franz-go/pkg/kgo"
)

// Short says what a read does when the log ends before Options.To.
type Short int

const (
	// ShortError ends the read with an error naming where the log ends: To was listed before
	// the read, so the log was truncated since (run again). Under read_committed a log whose
	// last stable offset is below To but whose high watermark is not (a transaction still
	// open) is waited for.
	ShortError Short = iota
	// ShortStop ends the read at the end of the log, as if To were there: for a caller whose
	// To is only a bound. The end is the last stable offset under read_committed, the high
	// watermark otherwise; a From past the high watermark reads nothing. The broker is not
	// asked to wait for data at the end.
	ShortStop
)

// Options says what to read.
type Options struct {
	// Cluster names the cluster in errors ("source", "target"); it may be empty.
	Cluster   string
	Topic     string
	Partition int32
	// From and To are the range [From, To). Offsets in it without a record (markers,
	// compacted or aborted records) are simply passed. From >= To reads nothing.
	From, To int64
	// Committed reads with read_committed (records of aborted transactions skipped, the log
	// ends at the last stable offset); otherwise read_uncommitted.
	Committed bool
	// Short is what happens when the log ends before To. Default: ShortError.
	Short Short
	// Controls delivers control records (transaction markers, Attrs.IsControl) like other
	// records. Default: they are passed over.
	Controls bool
	// MaxRecords ends the read once this many records of the range were delivered (controls
	// count when delivered); 0: no limit.
	MaxRecords int
	// PartitionBytes is the partition fetch size (a batch larger than it is fetched again
	// with twice the size, up to 256 MiB). Default: 1 MiB.
	PartitionBytes int32
	// Leaders, when set, is shared by the reads of one cluster: the leader and topic ID are
	// looked up once, not per read. Default: each read asks the metadata itself.
	Leaders *Leaders
	// Txns, with Committed, is told the aborted records the read passes over and a
	// transaction open at the end of the log (see TxnWatch). Default: nothing is told.
	Txns *TxnWatch
}

func (o Options) where() string {
	s := fmt.Sprintf("topic %q partition %d", o.Topic, o.Partition)
	if o.Cluster != "" {
		s = o.Cluster + " " + s
	}
	return s
}

func (o Options) isolation() kgo.IsolationLevel {
	if o.Committed {
		return kgo.ReadCommitted()
	}
	return kgo.ReadUncommitted()
}

// Chunk is the part of the log one fetch response covered: offsets [From, To) hold exactly
// Records at the isolation level read (and the controls, with Options.Controls), in offset
// order. A chunk is never cut: its records may reach past Options.To (the last response
// carries whole batches), and a caller that caches what it fetched keeps them.
type Chunk struct {
	From, To int64
	Records  []*kgo.Record
}

// Leaders remembers partition leaders and topic IDs of one cluster across reads, forgetting
// a partition's when a read finds that its leader moved. The zero value is ready; it is safe
// for concurrent use.
type Leaders struct {
	mu sync.Mutex
	m  map[partitionKey]leader
}

type partitionKey struct {
	topic     string
	partition int32
}

type leader struct {
	broker  int32
	topicID [16]byte
}

func (l *Leaders) get(topic string, partition int32) (leader, bool) {
	l.mu.Lock()
	defer l.mu.Unlock()
	ld, ok := l.m[partitionKey{topic, partition}]
	return ld, ok
}

func (l *Leaders) put(topic string, partition int32, ld leader) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.m == nil {
		l.m = make(map[partitionKey]leader)
	}
	l.m[partitionKey{topic, partition}] = ld
}

// Remember records that broker leads partition of topic, whose ID is topicID (zero when the
// cluster predates topic IDs): a caller that already holds a metadata answer gives it to the
// reads of the cluster this way, so that none of them asks for it again.
func (l *Leaders) Remember(topic string, partition, broker int32, topicID [16]byte) {
	if broker >= 0 {
		l.put(topic, partition, leader{broker, topicID})
	}
}

func (l *Leaders) forget(topic string, partition int32) {
	l.mu.Lock()
	defer l.mu.Unlock()
	delete(l.m, partitionKey{topic, partition})
}
