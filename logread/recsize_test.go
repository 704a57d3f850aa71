package logread

import (
	"testing"

	"github.com/twmb/franz-go/pkg/kgo"
)

func TestRecordBatchSizeSmall(t *testing.T) {
	// 61 header + length 1 + attributes, deltas 3 + key null 1 + value varint 1 + 5 + headers count 1.
	if got := RecordBatchSize(&kgo.Record{Value: []byte("hello")}); got != 61+1+3+1+1+5+1 {
		t.Errorf("got %d", got)
	}
}
