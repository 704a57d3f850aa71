package testkit

import (
	"fmt"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
)

// Record is record i of the synthetic partition the tests compare: key "k<i>", value "v<i>",
// one header h=x, a timestamp that grows with i.
func Record(i int) *kgo.Record {
	return &kgo.Record{
		Key:       []byte(fmt.Sprintf("k%d", i)),
		Value:     []byte(fmt.Sprintf("v%d", i)),
		Headers:   []kgo.RecordHeader{{Key: "h", Value: []byte("x")}},
		Timestamp: time.UnixMilli(1_700_000_000_000 + int64(i)),
	}
}

// Records are records from..to (inclusive) of the synthetic partition.
func Records(from, to int) []*kgo.Record {
	var out []*kgo.Record
	for i := from; i <= to; i++ {
		out = append(out, Record(i))
	}
	return out
}

// With is a copy of rec (its own headers) changed by f, as a one-record slice.
func With(rec *kgo.Record, f func(*kgo.Record)) []*kgo.Record {
	c := *rec
	c.Headers = append([]kgo.RecordHeader(nil), rec.Headers...)
	f(&c)
	return []*kgo.Record{&c}
}
