package align

import (
	"strconv"
	"strings"
	"testing"
)

// parseItems reads "offset:value" pairs.
func parseItems(t *testing.T, s string) []Item {
	t.Helper()
	var out []Item
	for _, f := range strings.Fields(s) {
		o, v, ok := strings.Cut(f, ":")
		off, err1 := strconv.ParseInt(o, 10, 64)
		fp, err2 := strconv.ParseUint(v, 10, 64)
		if !ok || err1 != nil || err2 != nil {
			t.Fatalf("bad item %q", f)
		}
		out = append(out, Item{Offset: off, FP: fp})
	}
	return out
}

// A loss next to a record that repeats: the mirror copied source 101 to target 107, lost
// 102..107, copied 108 to 108, lost 109..114 and went on from 115. The simplest history (one
// loss, 102..113, and 114 copied to 108) puts E(109) at 108; the mirror's, one event dearer,
// at 109; the copies after the second loss back both. Content cannot tell them apart, so
// Locate must not answer (with no margin it answered 108).
func TestLocateNearTieRefused(t *testing.T) {
	src := parseItems(t, "85:1 86:2 87:2 88:1 89:2 90:3 91:1 92:3 93:2 94:2 95:3 96:2 97:2 98:2 99:2 100:2 101:1 102:2 103:2 104:3 105:2 106:2 107:2 108:1 109:3 110:3 111:2 112:1 113:3 114:1 115:1 116:3 117:3 118:2 119:3 120:2 121:3 122:2 123:1 124:2 125:1 126:3 127:2 130:3 131:3 132:3 133:2 134:3 135:1 137:2 138:2 139:3 140:1 141:1 142:3 143:3 144:3 145:3 146:2 148:1 149:1 150:1 152:2 153:3 154:1 156:3 157:1 158:3 159:3 160:3 161:1 162:1 163:2 164:1 165:3 166:2 167:3 168:2 169:2 170:3 171:3 172:2 173:3 174:2 176:3 177:2 178:2 179:2 180:3 181:3 182:3 183:3 184:3 185:1 186:3 187:1")
	dst := parseItems(t, "82:1 83:2 84:2 85:1 86:2 87:3 88:1 89:3 90:2 91:2 95:3 96:2 97:2 98:2 104:2 106:2 107:1 108:1 109:1 110:3 111:3 112:2 113:3 117:2 118:3 119:2 120:1 121:2 123:1 125:3 126:2 127:3 128:3 129:3 130:2 131:3 132:1 133:2 134:2 135:3 136:1 137:1 138:3 139:3 140:3 141:3 142:2 143:1 145:1 146:1 147:2 148:3 149:1 150:3 151:1 152:3 153:3 154:3 155:1 156:1 157:2 158:1 159:3 160:2 161:3 162:2 163:2 164:3 165:3 166:2 167:3 168:2 169:3 170:2 171:2 172:2 173:3 174:3 175:3 177:3 178:3 179:1 180:3 181:1")
	loc := Locate(LocateInput{Source: src, Target: dst, G: 109, SourceAtEnd: true, TargetAtEnd: true, Start: -1})
	if !loc.Ambiguous() {
		t.Fatalf("got %v (events %d), want ambiguous: a history one event dearer puts E(109) at 109", loc.Outcomes, loc.Events)
	}
	if len(loc.Outcomes) == 1 && len(loc.Near) == 0 && !loc.Overflow && loc.Run == nil {
		t.Fatalf("ambiguous without a reason: %+v", loc)
	}
}

// A clean copy of records with five values is answered at every position, its ends included:
// "the last record read is a replay of an equal one" is always possible, but nothing backs it.
func TestLocateCleanCopyAnswered(t *testing.T) {
	var src []Item
	x := uint64(7)
	for i := range 200 {
		x = x*6364136223846793005 + 1442695040888963407
		src = append(src, Item{Offset: int64(i), FP: x>>61%5 + 1})
	}
	for _, g := range []int64{40, 100, 150, 199, 200} {
		lo := g - 30
		loc := Locate(LocateInput{Source: src[lo:], Target: src[lo:], G: g, SourceAtEnd: true, TargetAtEnd: true, Start: -1})
		if loc.Ambiguous() || loc.Outcomes[0].Kind != Known || loc.Outcomes[0].E != g {
			t.Errorf("G=%d: got %v near %v (run %v, overflow %v), want E(G) %d", g, loc.Outcomes, loc.Near, loc.Run, loc.Overflow, g)
		}
	}
}
