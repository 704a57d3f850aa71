package align

import "github.com/kmigrate/kmigrate/offsetmap"

// Counts are record counts per alignment class.
type Counts struct {
	Matched    int64 `json:"matched"`
	Missing    int64 `json:"missing"`
	Duplicated int64 `json:"duplicated"`
	Mismatched int64 `json:"mismatched"`
	Extra      int64 `json:"extra"`
	// Ambiguous counts matched records that sit in a run of identical neighbouring records, so
	// which copy is which cannot be told from content.
	Ambiguous int64 `json:"ambiguous"`
}

// Add adds o to c.
func (c *Counts) Add(o Counts) {
	c.Matched += o.Matched
	c.Missing += o.Missing
	c.Duplicated += o.Duplicated
	c.Mismatched += o.Mismatched
	c.Extra += o.Extra
	c.Ambiguous += o.Ambiguous
}

// Differs reports whether any record is missing, duplicated, mismatched or extra.
func (c Counts) Differs() bool {
	return c.Missing+c.Duplicated+c.Mismatched+c.Extra > 0
}

// PartitionResult is the alignment of one partition. Ranges are inclusive and each covers
// consecutive offsets of one class.
type PartitionResult struct {
	Partition int32 `json:"partition"`
	Counts
	SourceStart int64 `json:"source_start"`
	SourceEnd   int64 `json:"source_end"`
	TargetStart int64 `json:"target_start"`
	TargetEnd   int64 `json:"target_end"`

	MissingRanges   []SourceRange    `json:"missing_ranges"`
	Duplicates      []offsetmap.Copy `json:"duplicates"`
	Mismatches      []Mismatch       `json:"mismatches"`
	ExtraRanges     []TargetRange    `json:"extra_ranges"`
	AmbiguousRanges []TargetRange    `json:"ambiguous_ranges,omitempty"`
	// TargetSkipped counts target records read before the copy of the source range began
	// (the target was read from a lower bound such as an MM2 offset sync or a timestamp);
	// they are outside the comparison, in no class.
	TargetSkipped      int64        `json:"target_skipped,omitempty"`
	TargetSkippedRange *TargetRange `json:"target_skipped_range,omitempty"`
	// Truncated is set when a list above was cut to keep the report bounded; the counts are
	// always complete.
	Truncated bool `json:"truncated,omitempty"`
	// Err is set when this partition could not be aligned (the others still were).
	Err string `json:"error,omitempty"`
	// Cause is the error Err says, for errors.Is and errors.As: ErrTargetMissing when the
	// target topic or partition does not exist, else the read's own error (a kerr code, the
	// context's). Not part of the JSON form.
	Cause error `json:"-"`
	// NotCompared is set, saying why, when the partition had no source record in the range
	// asked and no target record that differs: nothing was compared, nothing is proved.
	NotCompared string `json:"not_compared,omitempty"`
	// MapLeftOut is set, saying why, when the partition's offset map is not proven: the copy
	// has replays, losses or extra records (the alignment chose where to resynchronise), runs
	// of identical records, or records that repeat and a copy that ends early. kverify diff
	// --offset-map leaves such a partition out.
	MapLeftOut string `json:"map_left_out,omitempty"`
}

// SourceRange is an inclusive range of source offsets.
type SourceRange struct {
	From int64 `json:"source_from"`
	To   int64 `json:"source_to"`
}

// TargetRange is an inclusive range of target offsets.
type TargetRange struct {
	From int64 `json:"target_from"`
	To   int64 `json:"target_to"`
}

// Mismatch is an aligned position whose record differs in Fields ("key", "value", "headers",
// "timestamp").
type Mismatch struct {
	SourceOffset int64    `json:"source_offset"`
	TargetOffset int64    `json:"target_offset"`
	Fields       []string `json:"fields"`
}
