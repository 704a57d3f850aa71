package offsetmap

import (
	"reflect"
	"strings"
	"testing"
)

// TestExtend: record by record, a map grows as segments where both offsets advance by one,
// new segments at a gap on either side, and Duplicates (sorted) for replays; copies out of
// order are refused and change nothing.
func TestExtend(t *testing.T) {
	type step struct {
		s, t int64
		want Growth
		err  string
	}
	tests := []struct {
		name  string
		start PartitionMap
		steps []step
		want  PartitionMap
	}{
		{
			name:  "contiguous run",
			start: PartitionMap{SourceFrom: 5, SourceTo: 5, TargetTo: 10},
			steps: []step{{5, 10, NewSegment, ""}, {6, 11, Extended, ""}, {7, 12, Extended, ""}},
			want:  PartitionMap{SourceFrom: 5, SourceTo: 8, TargetTo: 13, Segments: []Segment{{5, 10, 3}}},
		},
		{
			name:  "source gap and target gap start segments",
			steps: []step{{0, 0, NewSegment, ""}, {2, 1, NewSegment, ""}, {3, 4, NewSegment, ""}, {4, 5, Extended, ""}},
			want:  PartitionMap{SourceTo: 5, TargetTo: 6, Segments: []Segment{{0, 0, 1}, {2, 1, 1}, {3, 4, 2}}},
		},
		{
			name: "replays become sorted duplicates",
			steps: []step{
				{0, 0, NewSegment, ""}, {1, 1, Extended, ""}, {2, 2, Extended, ""},
				{1, 3, Replayed, ""}, {2, 4, Replayed, ""}, {3, 5, NewSegment, ""},
				{0, 6, Replayed, ""}, {2, 7, Replayed, ""},
			},
			want: PartitionMap{SourceTo: 4, TargetTo: 8, Segments: []Segment{{0, 0, 3}, {3, 5, 1}},
				Duplicates: []Copy{{Target: 6, Source: 0}, {Target: 3, Source: 1}, {Target: 4, Source: 2}, {Target: 7, Source: 2}}},
		},
		{
			name:  "mirror origin below the first copy",
			start: PartitionMap{SourceFrom: 100, SourceTo: 100, TargetTo: 40},
			steps: []step{{98, 40, NewSegment, ""}},
			want:  PartitionMap{SourceFrom: 98, SourceTo: 100, TargetTo: 41, Segments: []Segment{{98, 40, 1}}},
		},
		{
			name:  "target below what was examined",
			start: PartitionMap{TargetTo: 10},
			steps: []step{{0, 10, NewSegment, ""}, {1, 9, 0, "below target offset 11"}, {1, 10, 0, "below target offset 11"}},
			want:  PartitionMap{SourceTo: 1, TargetTo: 11, Segments: []Segment{{0, 10, 1}}},
		},
		{
			name:  "unmapped source below the end",
			steps: []step{{0, 0, NewSegment, ""}, {5, 1, NewSegment, ""}, {3, 2, 0, "never copied before"}},
			want:  PartitionMap{SourceTo: 6, TargetTo: 2, Segments: []Segment{{0, 0, 1}, {5, 1, 1}}},
		},
		{
			name:  "negative offset",
			steps: []step{{-1, 0, 0, "negative"}},
			want:  PartitionMap{},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			pm := tt.start
			for _, st := range tt.steps {
				g, err := pm.Extend(st.s, st.t)
				switch {
				case st.err == "" && err != nil:
					t.Fatalf("Extend(%d, %d): %v", st.s, st.t, err)
				case st.err != "" && (err == nil || !strings.Contains(err.Error(), st.err)):
					t.Fatalf("Extend(%d, %d): error %v, want one saying %q", st.s, st.t, err, st.err)
				case g != st.want:
					t.Fatalf("Extend(%d, %d) = %v, want %v", st.s, st.t, g, st.want)
				}
			}
			if !reflect.DeepEqual(pm, tt.want) {
				t.Errorf("map\n got %+v\nwant %+v", pm, tt.want)
			}
			if err := pm.validate(); err != nil {
				t.Errorf("the grown map is not valid: %v", err)
			}
		})
	}
}

// TestExtendAnswers: a map grown by Extend answers E(G) past every copy of s*, replays
// included.
func TestExtendAnswers(t *testing.T) {
	var pm PartitionMap
	for _, c := range [][2]int64{{0, 0}, {1, 1}, {2, 2}, {1, 3}, {2, 4}, {3, 5}} {
		if _, err := pm.Extend(c[0], c[1]); err != nil {
			t.Fatal(err)
		}
	}
	for g, want := range map[int64]int64{0: 0, 1: 1, 2: 4, 3: 5, 4: 6} {
		if got := pm.ExactTarget(g); !got.Known || got.Target != want {
			t.Errorf("ExactTarget(%d) = %+v, want %d", g, got, want)
		}
	}
}

// TestCopies: every copy of a source offset, in target order; none for an unmapped one.
func TestCopies(t *testing.T) {
	pm := PartitionMap{SourceTo: 10, TargetTo: 20, Segments: []Segment{{0, 0, 3}, {5, 8, 2}},
		Duplicates: []Copy{{Target: 4, Source: 1}, {Target: 12, Source: 1}, {Target: 13, Source: 6}}}
	for s, want := range map[int64][]int64{0: {0}, 1: {1, 4, 12}, 2: {2}, 3: nil, 6: {9, 13}, 9: nil} {
		if got := pm.Copies(s); !reflect.DeepEqual(got, want) {
			t.Errorf("Copies(%d) = %v, want %v", s, got, want)
		}
	}
}
