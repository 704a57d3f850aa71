package align

import "github.com/kmigrate/kmigrate/offsetmap"

// segs builds segments from (source, target, len) triples.
func segs(v ...int64) []offsetmap.Segment {
	var out []offsetmap.Segment
	for i := 0; i+2 < len(v); i += 3 {
		out = append(out, offsetmap.Segment{Source: v[i], Target: v[i+1], Len: v[i+2]})
	}
	return out
}

// copies builds duplicate copies from (target, source) pairs.
func copies(v ...int64) []offsetmap.Copy {
	var out []offsetmap.Copy
	for i := 0; i+1 < len(v); i += 2 {
		out = append(out, offsetmap.Copy{Target: v[i], Source: v[i+1]})
	}
	return out
}
