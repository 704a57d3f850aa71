package logread

import (
	"context"
	"fmt"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/kmigrate/kmigrate/internal/testkit"
)

// fixture is a kfake cluster with one single-partition topic and a client of it.
type fixture struct {
	t     *testing.T
	fake  *kfake.Cluster
	cl    *kgo.Client
	topic string
}

func newFixture(t *testing.T, brokers int) *fixture {
	t.Helper()
	topic := testkit.TopicName("logread")
	fake := testkit.StartCluster(t, kfake.NumBrokers(brokers), kfake.SeedTopics(1, topic))
	cl := testkit.Client(t, fake, kgo.DefaultProduceTopic(topic), kgo.ProducerLinger(0))
	return &fixture{t: t, fake: fake, cl: cl, topic: topic}
}

func ctxFor(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	t.Cleanup(cancel)
	return ctx
}

// produce writes plain records with the given values, one batch each.
func (f *fixture) produce(values ...string) {
	f.t.Helper()
	for _, v := range values {
		if err := f.cl.ProduceSync(ctxFor(f.t), &kgo.Record{Value: []byte(v)}).FirstErr(); err != nil {
			f.t.Fatal(err)
		}
	}
}

// txn writes values in one transaction of their own (testkit.WriteTxn) and commits or aborts
// it (a marker follows).
func (f *fixture) txn(commit bool, values ...string) {
	f.t.Helper()
	testkit.WriteTxn(f.t, f.fake, f.topic, 0, kgo.TransactionEndTry(commit), false, valueRecords(values)...)
}

// openTxn writes values in a transaction left open (testkit.WriteTxn) until the test ends.
func (f *fixture) openTxn(values ...string) {
	f.t.Helper()
	testkit.WriteTxn(f.t, f.fake, f.topic, 0, kgo.TryAbort, true, valueRecords(values)...)
}

// valueRecords are records with the values given, nothing else set.
func valueRecords(values []string) []*kgo.Record {
	recs := make([]*kgo.Record, len(values))
	for i, v := range values {
		recs[i] = &kgo.Record{Value: []byte(v)}
	}
	return recs
}

func (f *fixture) opts(from, to int64) Options {
	return Options{Cluster: "source", Topic: f.topic, From: from, To: to}
}

// describe renders records as "offset:value" ("offset:ctrl" for a marker).
func describe(recs []*kgo.Record) string {
	var b []string
	for _, r := range recs {
		v := string(r.Value)
		if r.Attrs.IsControl() {
			v = "ctrl"
		}
		b = append(b, fmt.Sprintf("%d:%s", r.Offset, v))
	}
	return strings.Join(b, " ")
}

// each reads with Each; stream reads the same range with Start: both must agree.
func each(t *testing.T, cl *kgo.Client, o Options) (string, error) {
	var got []*kgo.Record
	err := Each(ctxFor(t), cl, o, func(r *kgo.Record) (bool, error) {
		got = append(got, r)
		return true, nil
	})
	return describe(got), err
}

func stream(t *testing.T, cl *kgo.Client, o Options) (string, error) {
	ctx := ctxFor(t)
	s := Start(ctx, cl, o, func(r *kgo.Record) *kgo.Record { return r })
	defer s.Close()
	var got []*kgo.Record
	for {
		r, ok, err := s.Next(ctx)
		if err != nil || !ok {
			return describe(got), err
		}
		got = append(got, r)
	}
}

// The log: 0 a, 1 b (committed), 2 marker, 3 x, 4 y (aborted), 5 marker, 6 c (committed),
// 7 marker.
func transactionalLog(t *testing.T) *fixture {
	f := newFixture(t, 1)
	f.txn(true, "a", "b")
	f.txn(false, "x", "y")
	f.txn(true, "c")
	return f
}

func TestReadTransactions(t *testing.T) {
	t.Parallel()
	f := transactionalLog(t)
	tests := []struct {
		name string
		o    func(Options) Options
		want string
	}{
		{"read_committed skips aborted records and markers", func(o Options) Options { o.Committed = true; return o }, "0:a 1:b 6:c"},
		{"read_uncommitted keeps aborted records", func(o Options) Options { return o }, "0:a 1:b 3:x 4:y 6:c"},
		{"read_committed with controls", func(o Options) Options { o.Committed, o.Controls = true, true; return o }, "0:a 1:b 2:ctrl 5:ctrl 6:c 7:ctrl"},
		{"read_uncommitted with controls", func(o Options) Options { o.Controls = true; return o }, "0:a 1:b 2:ctrl 3:x 4:y 5:ctrl 6:c 7:ctrl"},
		{"a range ending in a marker is done", func(o Options) Options { o.Committed, o.To = true, 3; return o }, "0:a 1:b"},
		{"a range of only aborted records and a marker is empty", func(o Options) Options { o.Committed, o.From, o.To = true, 3, 6; return o }, ""},
		{"max records", func(o Options) Options { o.Committed, o.MaxRecords = true, 2; return o }, "0:a 1:b"},
		{"max records counts controls when delivered", func(o Options) Options { o.Controls, o.MaxRecords = true, 3; return o }, "0:a 1:b 2:ctrl"},
		{"from inside a batch", func(o Options) Options { o.From = 1; return o }, "1:b 3:x 4:y 6:c"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			o := tt.o(f.opts(0, 8))
			for name, read := range map[string]func(*testing.T, *kgo.Client, Options) (string, error){"Each": each, "Start": stream} {
				got, err := read(t, f.cl, o)
				if err != nil || got != tt.want {
					t.Errorf("%s: got %q, %v; want %q", name, got, err, tt.want)
				}
			}
		})
	}
}

// Read's chunks cover the range without a gap, markers included, and tell where they end.
func TestReadChunksCoverTheRange(t *testing.T) {
	t.Parallel()
	f := transactionalLog(t)
	next := int64(0)
	var recs []*kgo.Record
	err := Read(ctxFor(t), f.cl, Options{Topic: f.topic, From: 0, To: 8, Committed: true}, func(c Chunk) (bool, error) {
		if c.From != next || c.To <= c.From {
			t.Errorf("chunk [%d, %d), want one from %d", c.From, c.To, next)
		}
		next = c.To
		recs = append(recs, c.Records...)
		return true, nil
	})
	if err != nil || next != 8 || describe(recs) != "0:a 1:b 6:c" {
		t.Fatalf("got %q up to %d, %v; want \"0:a 1:b 6:c\" up to 8", describe(recs), next, err)
	}
}

// A transaction still open below To is waited for under read_committed (the log does not end
// at the last stable offset while the high watermark is at To).
func TestReadWaitsForOpenTransaction(t *testing.T) {
	t.Parallel()
	f := newFixture(t, 1)
	f.produce("a")
	ctx := ctxFor(t)
	txn, _ := testkit.OpenTxn(t, f.fake, f.topic, 0, valueRecords([]string{"b"})...)
	// Count the fetches at offset 1, past the last stable offset: the reader polls there.
	polled := make(chan struct{})
	var polls atomic.Int64
	f.fake.ControlKey(int16(kmsg.Fetch), func(req kmsg.Request) (kmsg.Response, error, bool) {
		f.fake.KeepControl()
		for _, rt := range req.(*kmsg.FetchRequest).Topics {
			for _, rp := range rt.Partitions {
				if rp.FetchOffset == 1 && polls.Add(1) == 3 {
					close(polled)
				}
			}
		}
		return nil, nil, false
	})
	s := Start(ctx, f.cl, Options{Topic: f.topic, From: 0, To: 2, Committed: true}, func(r *kgo.Record) string { return string(r.Value) })
	defer s.Close()
	if v, ok, err := s.Next(ctx); err != nil || !ok || v != "a" {
		t.Fatalf("first record: got %q, %v, %v; want a", v, ok, err)
	}
	peeked := make(chan error, 1)
	go func() { _, _, err := s.Peek(ctx); peeked <- err }()
	select {
	case <-polled:
	case <-ctx.Done():
		t.Fatal("the reader did not poll at the last stable offset")
	}
	select {
	case err := <-peeked:
		t.Fatalf("got %v after polling past the last stable offset, before the transaction ended; want a wait", err)
	default:
	}
	if err := txn.EndTransaction(ctx, kgo.TryCommit); err != nil {
		t.Fatal(err)
	}
	if err := <-peeked; err != nil {
		t.Fatal(err)
	}
	if v, ok, err := s.Next(ctx); err != nil || !ok || v != "b" {
		t.Fatalf("after the commit: got %q, %v, %v; want b", v, ok, err)
	}
	if _, ok, err := s.Next(ctx); err != nil || ok {
		t.Fatalf("at To: got %v, %v; want the end", ok, err)
	}
}

// A log that ends before To: an error naming where (ShortError), or the end of the read
// (ShortStop).
func TestReadLogEndsBeforeTo(t *testing.T) {
	t.Parallel()
	f := newFixture(t, 1)
	f.produce("a", "b", "c")
	o := f.opts(0, 10)
	for name, read := range map[string]func(*testing.T, *kgo.Client, Options) (string, error){"Each": each, "Start": stream} {
		got, err := read(t, f.cl, o)
		if err == nil || !strings.Contains(err.Error(), `the log ends at 3, before the end offset 10`) || !strings.Contains(err.Error(), `source topic "`+f.topic+`" partition 0`) {
			t.Errorf("%s, ShortError: got %q, %v; want an error naming the partition and the end", name, got, err)
		}
	}
	o.Short = ShortStop
	for name, read := range map[string]func(*testing.T, *kgo.Client, Options) (string, error){"Each": each, "Start": stream} {
		if got, err := read(t, f.cl, o); err != nil || got != "0:a 1:b 2:c" {
			t.Errorf("%s, ShortStop: got %q, %v; want the three records", name, got, err)
		}
		past := o
		past.From = 5
		if got, err := read(t, f.cl, past); err != nil || got != "" {
			t.Errorf("%s, ShortStop from past the end: got %q, %v; want nothing", name, got, err)
		}
	}
}

// Records deleted below the position: an error saying so, not a silent skip.
func TestReadDeletedRecords(t *testing.T) {
	t.Parallel()
	f := newFixture(t, 1)
	f.produce("a", "b", "c", "d")
	if err := f.fake.DeleteRecords(f.topic, 0, 2); err != nil {
		t.Fatal(err)
	}
	if got, err := each(t, f.cl, f.opts(0, 4)); err == nil || !strings.Contains(err.Error(), "offset 0 is out of range (log start 2") {
		t.Errorf("got %q, %v; want an out of range error naming the log start", got, err)
	}
	if got, err := each(t, f.cl, f.opts(2, 4)); err != nil || got != "2:c 3:d" {
		t.Errorf("from the log start: got %q, %v", got, err)
	}
}

// A batch larger than the fetch size is fetched again with a larger size.
func TestReadGrowsFetchSize(t *testing.T) {
	t.Parallel()
	f := newFixture(t, 1)
	big := strings.Repeat("v", 10_000)
	f.produce("a", big, "c")
	o := f.opts(0, 3)
	o.PartitionBytes = 1024
	got, err := stream(t, f.cl, o)
	if err != nil || got != "0:a 1:"+big+" 2:c" {
		t.Errorf("got %d bytes, %v; want the three records", len(got), err)
	}
}

// conv runs once per record delivered: not for records past To, nor past MaxRecords.
func TestStreamConvertsOnlyDelivered(t *testing.T) {
	t.Parallel()
	f := newFixture(t, 1)
	if err := f.cl.ProduceSync(ctxFor(t), &kgo.Record{Value: []byte("a")}, &kgo.Record{Value: []byte("b")}, &kgo.Record{Value: []byte("c")}, &kgo.Record{Value: []byte("d")}).FirstErr(); err != nil {
		t.Fatal(err)
	}
	for _, tt := range []struct {
		to, max int
		want    int64
	}{{to: 2, want: 2}, {to: 4, max: 3, want: 3}} {
		var calls atomic.Int64
		o := f.opts(0, int64(tt.to))
		o.MaxRecords = tt.max
		ctx := ctxFor(t)
		s := Start(ctx, f.cl, o, func(r *kgo.Record) int64 { calls.Add(1); return r.Offset })
		n := int64(0)
		for {
			_, ok, err := s.Next(ctx)
			if err != nil {
				t.Fatal(err)
			}
			if !ok {
				break
			}
			n++
		}
		s.Close()
		if n != tt.want || calls.Load() != tt.want {
			t.Errorf("to %d max %d: got %d records, %d conversions; want %d", tt.to, tt.max, n, calls.Load(), tt.want)
		}
	}
}

// A leader that moves between reads (Leaders remembers the old one) or during a read is
// looked up again.
func TestReadLeaderMoves(t *testing.T) {
	t.Parallel()
	f := newFixture(t, 2)
	f.produce("a", "b")
	leaders := &Leaders{}
	o := f.opts(0, 2)
	o.Leaders = leaders
	if got, err := each(t, f.cl, o); err != nil || got != "0:a 1:b" {
		t.Fatalf("before the move: got %q, %v", got, err)
	}
	old, ok := leaders.get(f.topic, 0)
	if !ok {
		t.Fatal("Leaders does not hold the partition's leader after a read")
	}
	other := int32(0)
	if other == old.broker {
		other = 1
	}
	if err := f.fake.MoveTopicPartition(f.topic, 0, other); err != nil {
		t.Fatal(err)
	}
	if got, err := each(t, f.cl, o); err != nil || got != "0:a 1:b" {
		t.Fatalf("after the move: got %q, %v", got, err)
	}
	if now, _ := leaders.get(f.topic, 0); now.broker != other {
		t.Errorf("Leaders holds broker %d, want the new leader %d", now.broker, other)
	}

	// During a stream: the move lands between two fetches.
	f.produce("c")
	ctx := ctxFor(t)
	s := Start(ctx, f.cl, Options{Topic: f.topic, From: 0, To: 3, PartitionBytes: 1}, func(r *kgo.Record) string { return string(r.Value) })
	defer s.Close()
	if v, ok, err := s.Next(ctx); err != nil || !ok || v != "a" {
		t.Fatalf("stream: got %q, %v, %v; want a", v, ok, err)
	}
	if err := f.fake.MoveTopicPartition(f.topic, 0, old.broker); err != nil {
		t.Fatal(err)
	}
	var rest []string
	for {
		v, ok, err := s.Next(ctx)
		if err != nil {
			t.Fatalf("stream after the move: %v", err)
		}
		if !ok {
			break
		}
		rest = append(rest, v)
	}
	if strings.Join(rest, " ") != "b c" {
		t.Errorf("stream after the move: got %v, want b c", rest)
	}
}
