package verify

import (
	"strings"
	"testing"

	"github.com/kmigrate/kmigrate/align"
	"github.com/kmigrate/kmigrate/digest"
)

// Evidence read from a log that changed since the comparison (other record counts) is refused.
func TestEvidenceSameAsCompared(t *testing.T) {
	pr := align.PartitionResult{Partition: 3, Counts: align.Counts{Matched: 90, Missing: 2, Duplicated: 4, Extra: 1}}
	e := &digest.Evidence{Partitions: []digest.EvidencePart{{Partition: 3, Source: digest.RangeRoot{Records: 92}, Target: digest.RangeRoot{Records: 95}}}}
	if err := sameAsCompared(e, []align.PartitionResult{pr}, true); err != nil {
		t.Fatalf("counts that agree: %v", err)
	}
	e.Partitions[0].Source.Records = 91
	if err := sameAsCompared(e, []align.PartitionResult{pr}, true); err == nil || !strings.Contains(err.Error(), "partition 3 changed") {
		t.Errorf("a source record fewer: got %v, want partition 3 named", err)
	}
	e.Partitions[0].Source.Records, e.Partitions[0].Target.Records = 92, 96
	if err := sameAsCompared(e, []align.PartitionResult{pr}, true); err == nil {
		t.Errorf("a target record more: no error")
	}
	if err := sameAsCompared(e, []align.PartitionResult{pr}, false); err != nil {
		t.Errorf("a bounded target range is not counted: %v", err)
	}
}
