package mirror

import (
	"cmp"
	"slices"
	"testing"

	"github.com/kmigrate/kmigrate/offsetmap"
)

// compactedTopic models the offset map topic after Kafka's compaction: the newest value of
// each key, a tombstone removing its key.
type compactedTopic map[string][]byte

func (c compactedTopic) write(cfg *Config, ps *partState, d mapDirty) {
	for _, r := range cfg.mapRecords(ps, d) {
		if r.Value == nil {
			delete(c, string(r.Key))
			continue
		}
		c[string(r.Key)] = r.Value
	}
}

// load reads the model as readMap reads the topic.
func (c compactedTopic) load(t tp) persistedPart {
	var p persistedPart
	for k, v := range c {
		if h, exact, from, err := decodeHistoryRecord([]byte(k), v); err == nil && h == t {
			p.exactFrom, p.sourceFrom = exact, from
		}
	}
	for k, v := range c {
		if st, s, err := decodeMapRecord([]byte(k), v); err == nil && st == t && s.Source >= p.exactFrom {
			p.segs = append(p.segs, s)
		}
	}
	slices.SortFunc(p.segs, func(a, b offsetmap.Segment) int { return cmp.Compare(a.Source, b.Source) })
	return p
}

// TestMapBoundedOver30Days mirrors one partition for 30 days of commits a second
// (2,592,000), each commit one record followed by its transaction marker (source offset i is
// copied to target offset 2i), through the partition's state and its map records into a
// model of the compacted map topic. Throughout, the segments in memory stay within 9/8 of
// the window and the partition's records in the compacted topic within that plus the history
// record. Every simulated day E(G) is checked for every G of the window against the layout
// (exact above the history's start, Compacted at or below it), in memory and in a map
// resumed from the topic.
func TestMapBoundedOver30Days(t *testing.T) {
	if testing.Short() {
		t.Skip("2.6 million commits")
	}
	const commits = 30 * 86400
	const window = 2048
	bound := window + window/8
	cfg := &Config{MapTopic: "kmirror-offsets.A.internal"}
	part := tp{"orders", 0}
	ps := newPartState(part, "orders", offsetmap.PartitionMap{Partition: 0}, 0)
	ps.window = window
	topic := compactedTopic{}
	maxSegs, maxRecs := 0, 0
	check := func(pm offsetmap.PartitionMap, i int64, what string) {
		t.Helper()
		lo := max(i-int64(window)-10, 0)
		for g := lo; g <= i+1; g++ {
			tr := pm.ExactTarget(g)
			switch {
			case g > 0 && g > pm.ExactFrom:
				if !tr.Known || tr.Target != 2*(g-1)+1 {
					t.Fatalf("%s after %d commits: E(%d) = %+v, want %d", what, i+1, g, tr, 2*(g-1)+1)
				}
			case pm.ExactFrom > 0:
				if tr.Known || !tr.Compacted {
					t.Fatalf("%s after %d commits: E(%d) at or below the history start %d = %+v, want Compacted", what, i+1, g, pm.ExactFrom, tr)
				}
			}
		}
	}
	for i := int64(0); i < commits; i++ {
		ps.mu.Lock()
		ps.extend(i, 2*i)
		ps.mu.Unlock()
		d, _ := ps.takeDirtyCommit()
		topic.write(cfg, ps, d)
		maxSegs = max(maxSegs, len(ps.pm.Segments))
		maxRecs = max(maxRecs, len(topic))
		if (i+1)%86400 == 0 {
			check(ps.snapshot(), i, "in memory")
			pm, src, dst := persistedPartition(part, topic.load(part))
			if src != i+1 || dst != 2*i+1 {
				t.Fatalf("resumed after %d commits: ends at source %d, target %d; want %d, %d", i+1, src, dst, i+1, 2*i+1)
			}
			check(pm, i, "resumed from the topic")
		}
	}
	if maxSegs > bound || maxRecs > bound+2 {
		t.Fatalf("over 30 days: up to %d segments in memory and %d records in the compacted topic, want at most %d and %d", maxSegs, maxRecs, bound, bound+2)
	}
	t.Logf("30 days, %d commits: at most %d segments in memory (%d KiB) and %d records in the compacted map topic for the partition; without compaction %d of each",
		commits, maxSegs, maxSegs*24/1024, maxRecs, commits)
}

// TestMapOldFormatCompacted: a map written before compaction existed (100,000 segments, no
// history record) resumes exactly, is compacted at its first commit, and its tombstones go
// out maxTombs a commit until the compacted topic holds the window and the history record.
func TestMapOldFormatCompacted(t *testing.T) {
	const old, window = 100000, 2048
	cfg := &Config{MapTopic: "kmirror-offsets.A.internal"}
	part := tp{"orders", 0}
	topic := compactedTopic{}
	for i := int64(0); i < old; i++ {
		k, v := mapKey(part, i), mapValue(offsetmap.Segment{Source: i, Target: 2 * i, Len: 1})
		topic[string(k)] = v
	}
	pm, src, dst := persistedPartition(part, topic.load(part))
	if src != old || dst != 2*old-1 || len(pm.Segments) != old {
		t.Fatalf("old-format map read as %d segments ending at %d, %d", len(pm.Segments), src, dst)
	}
	ps := newPartState(part, "orders", pm, src)
	ps.window = window
	commits := 0
	for i := int64(old); len(topic) > window+window/8+2; i++ {
		ps.mu.Lock()
		ps.extend(i, 2*i)
		ps.mu.Unlock()
		d, _ := ps.takeDirtyCommit()
		if len(d.tombs) > maxTombs {
			t.Fatalf("a commit writes %d tombstones, more than %d", len(d.tombs), maxTombs)
		}
		topic.write(cfg, ps, d)
		commits++
		if commits > old/maxTombs+2 {
			t.Fatalf("after %d commits the compacted topic still holds %d records", commits, len(topic))
		}
	}
	resumed, _, _ := persistedPartition(part, topic.load(part))
	last := old + int64(commits) - 1
	for g := resumed.ExactFrom - 5; g <= last+1; g++ {
		tr := resumed.ExactTarget(g)
		if g > resumed.ExactFrom && (!tr.Known || tr.Target != 2*(g-1)+1) || g <= resumed.ExactFrom && !tr.Compacted {
			t.Fatalf("E(%d) = %+v (history starts at %d)", g, tr, resumed.ExactFrom)
		}
	}
	t.Logf("old-format map of %d segments: %d records after %d commits", old, len(topic), commits)
}
