package verify

import (
	"fmt"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
)

// The synthetic partition of the diff tests (the same records as align's tests).

// r makes record i of a synthetic partition: key "k<i>", value "v<i>", one header, a
// timestamp that grows with i.
func r(i int) *kgo.Record {
	return &kgo.Record{
		Key:       []byte(fmt.Sprintf("k%d", i)),
		Value:     []byte(fmt.Sprintf("v%d", i)),
		Headers:   []kgo.RecordHeader{{Key: "h", Value: []byte("x")}},
		Timestamp: time.UnixMilli(1_700_000_000_000 + int64(i)),
	}
}

// span returns records from..to (inclusive) of the synthetic partition.
func span(from, to int) []*kgo.Record {
	var out []*kgo.Record
	for i := from; i <= to; i++ {
		out = append(out, r(i))
	}
	return out
}

func cat(parts ...[]*kgo.Record) []*kgo.Record {
	var out []*kgo.Record
	for _, p := range parts {
		out = append(out, p...)
	}
	return out
}

func with(rec *kgo.Record, f func(*kgo.Record)) []*kgo.Record {
	c := *rec
	c.Headers = append([]kgo.RecordHeader(nil), rec.Headers...)
	f(&c)
	return []*kgo.Record{&c}
}
