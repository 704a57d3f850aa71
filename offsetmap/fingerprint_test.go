package offsetmap

import (
	"bytes"
	"testing"

	"github.com/twmb/franz-go/pkg/kgo"
)

func TestFingerprintFraming(t *testing.T) {
	tests := []struct {
		name string
		a, b *kgo.Record
	}{
		{name: "null key vs empty key", a: &kgo.Record{Value: []byte("v")}, b: &kgo.Record{Key: []byte{}, Value: []byte("v")}},
		{name: "null value vs empty value", a: &kgo.Record{Key: []byte("k")}, b: &kgo.Record{Key: []byte("k"), Value: []byte{}}},
		{name: "byte moved from key to value", a: &kgo.Record{Key: []byte("ab"), Value: []byte("c")}, b: &kgo.Record{Key: []byte("a"), Value: []byte("bc")}},
		{name: "header value moved to header key", a: rec("k", "v", "h", "x"), b: rec("k", "v", "hx", "")},
		{name: "no header vs one empty header", a: &kgo.Record{Key: []byte("k")}, b: &kgo.Record{Key: []byte("k"), Headers: []kgo.RecordHeader{{}}}},
		{name: "null header value vs empty", a: rec("k", "v", "h", ""), b: &kgo.Record{Key: []byte("k"), Value: []byte("v"), Headers: []kgo.RecordHeader{{Key: "h"}}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if Fingerprint(tt.a, DefaultFields) == Fingerprint(tt.b, DefaultFields) {
				t.Errorf("got equal fingerprints for %+v and %+v, want different", tt.a, tt.b)
			}
		})
	}
}

func rec(k, v, hk, hv string) *kgo.Record {
	return &kgo.Record{Key: []byte(k), Value: []byte(v), Headers: []kgo.RecordHeader{{Key: hk, Value: []byte(hv)}}}
}

func TestDiffFields(t *testing.T) {
	a := rec("k", "v", "h", "x")
	b := rec("k", "w", "h", "y")
	got := DiffFields(a, b, DefaultFields)
	if len(got) != 2 || got[0] != "value" || got[1] != "headers" {
		t.Errorf("got %v, want [value headers]", got)
	}
}

// split cuts data into a record: key, value and one header (key, value) at the cut points,
// with null markers taken from the mask.
func split(data []byte, c1, c2, c3 uint8, nulls uint8) *kgo.Record {
	cut := func(c uint8, lo int) int { return lo + int(c)%(len(data)-lo+1) }
	i := cut(c1, 0)
	j := cut(c2, i)
	k := cut(c3, j)
	r := &kgo.Record{Key: data[:i:i], Value: data[i:j:j]}
	if nulls&1 != 0 && i == 0 {
		r.Key = nil
	}
	if nulls&2 != 0 && j == i {
		r.Value = nil
	}
	if nulls&4 == 0 {
		hv := data[k:]
		if nulls&8 != 0 && len(hv) == 0 {
			hv = nil
		}
		r.Headers = []kgo.RecordHeader{{Key: string(data[j:k]), Value: hv}}
	}
	return r
}

func sameRecord(a, b *kgo.Record) bool {
	eq := func(x, y []byte) bool { return (x == nil) == (y == nil) && bytes.Equal(x, y) }
	if !eq(a.Key, b.Key) || !eq(a.Value, b.Value) || len(a.Headers) != len(b.Headers) {
		return false
	}
	for i := range a.Headers {
		if a.Headers[i].Key != b.Headers[i].Key || !eq(a.Headers[i].Value, b.Headers[i].Value) {
			return false
		}
	}
	return true
}

// FuzzFingerprintConcatenation cuts the same bytes into two records in different places
// (moving bytes between key, value, header key and header value; null against empty): two
// different records must never hash alike.
func FuzzFingerprintConcatenation(f *testing.F) {
	f.Add([]byte("abc"), uint8(1), uint8(1), uint8(0), uint8(2), uint8(0), uint8(1), uint8(0), uint8(0))
	f.Add([]byte(""), uint8(0), uint8(0), uint8(0), uint8(0), uint8(0), uint8(0), uint8(1), uint8(0))
	f.Fuzz(func(t *testing.T, data []byte, a1, a2, a3, b1, b2, b3, na, nb uint8) {
		x, y := split(data, a1, a2, a3, na), split(data, b1, b2, b3, nb)
		if sameRecord(x, y) {
			return
		}
		if Fingerprint(x, DefaultFields) == Fingerprint(y, DefaultFields) {
			t.Errorf("collision: %+v and %+v", x, y)
		}
	})
}

// FuzzFingerprinter checks that the buffered fingerprint used when reading equals Fingerprint.
func FuzzFingerprinter(f *testing.F) {
	f.Add([]byte("abc"), uint8(1), uint8(2), uint8(0), uint8(0), uint8(15))
	f.Fuzz(func(t *testing.T, data []byte, c1, c2, c3, nulls, fields uint8) {
		r := split(data, c1, c2, c3, nulls)
		fl := Fields(fields) & (FieldKey | FieldValue | FieldHeaders | FieldTimestamp)
		var p Hasher
		for i := 0; i < 2; i++ { // twice: the buffer is reused
			if got, want := p.Sum(r, fl), Fingerprint(r, fl); got != want {
				t.Fatalf("fingerprinter: got %x, want Fingerprint %x for %+v fields %v", got, want, r, fl)
			}
		}
	})
}
