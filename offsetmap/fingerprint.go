package offsetmap

import (
	"encoding/binary"
	"fmt"
	"strings"

	"github.com/cespare/xxhash/v2"
	"github.com/twmb/franz-go/pkg/kgo"
)

// Fields selects what a fingerprint covers.
type Fields uint8

// The fields --compare can name.
const (
	FieldKey Fields = 1 << iota
	FieldValue
	FieldHeaders
	FieldTimestamp
)

// DefaultFields is what kverify compares unless told otherwise: the timestamp is left out
// because a target topic with LogAppendTime rewrites it.
const DefaultFields = FieldKey | FieldValue | FieldHeaders

var fieldNames = []struct {
	f    Fields
	name string
}{{FieldKey, "key"}, {FieldValue, "value"}, {FieldHeaders, "headers"}, {FieldTimestamp, "timestamp"}}

// ParseFields parses a --compare list such as "key,value,headers".
func ParseFields(s string) (Fields, error) {
	var f Fields
	for _, part := range strings.Split(s, ",") {
		part = strings.TrimSpace(strings.ToLower(part))
		if part == "" {
			continue
		}
		found := false
		for _, fn := range fieldNames {
			if fn.name == part {
				f |= fn.f
				found = true
			}
		}
		if !found {
			return 0, fmt.Errorf("unknown field %q: use key, value, headers, timestamp", part)
		}
	}
	if f == 0 {
		return 0, fmt.Errorf("no field to compare: use key, value, headers, timestamp")
	}
	return f, nil
}

// Names lists the fields in f, e.g. ["key","value"].
func (f Fields) Names() []string {
	var out []string
	for _, fn := range fieldNames {
		if f&fn.f != 0 {
			out = append(out, fn.name)
		}
	}
	return out
}

// String implements fmt.Stringer.
func (f Fields) String() string { return strings.Join(f.Names(), ",") }

// Fingerprint hashes the selected fields of r with xxhash64. Every byte string is framed by a
// presence marker and its length, so a null key differs from an empty one and no two different
// records hash alike by moving bytes between fields.
func Fingerprint(r *kgo.Record, f Fields) uint64 {
	var d xxhash.Digest
	d.Reset()
	var scratch [9]byte
	if f&FieldKey != 0 {
		writeBytes(&d, &scratch, r.Key)
	}
	if f&FieldValue != 0 {
		writeBytes(&d, &scratch, r.Value)
	}
	if f&FieldHeaders != 0 {
		binary.BigEndian.PutUint32(scratch[:4], uint32(len(r.Headers)))
		d.Write(scratch[:4])
		for _, h := range r.Headers {
			writeString(&d, &scratch, h.Key)
			writeBytes(&d, &scratch, h.Value)
		}
	}
	if f&FieldTimestamp != 0 {
		binary.BigEndian.PutUint64(scratch[:8], uint64(r.Timestamp.UnixMilli()))
		d.Write(scratch[:8])
	}
	return d.Sum64()
}

// FieldPrints hashes each field on its own, to say which fields differ at a mismatch.
func FieldPrints(r *kgo.Record, f Fields) map[Fields]uint64 {
	out := make(map[Fields]uint64, 4)
	for _, fn := range fieldNames {
		if f&fn.f != 0 {
			out[fn.f] = Fingerprint(r, fn.f)
		}
	}
	return out
}

// DiffFields lists the names of the selected fields in which a and b differ.
func DiffFields(a, b *kgo.Record, f Fields) []string {
	pa, pb := FieldPrints(a, f), FieldPrints(b, f)
	var out []string
	for _, fn := range fieldNames {
		if f&fn.f != 0 && pa[fn.f] != pb[fn.f] {
			out = append(out, fn.name)
		}
	}
	return out
}

func writeBytes(d *xxhash.Digest, scratch *[9]byte, b []byte) {
	if b == nil {
		scratch[0] = 0
		d.Write(scratch[:1])
		return
	}
	scratch[0] = 1
	binary.BigEndian.PutUint64(scratch[1:9], uint64(len(b)))
	d.Write(scratch[:9])
	d.Write(b)
}

func writeString(d *xxhash.Digest, scratch *[9]byte, s string) {
	scratch[0] = 1
	binary.BigEndian.PutUint64(scratch[1:9], uint64(len(s)))
	d.Write(scratch[:9])
	d.WriteString(s)
}

// Hasher computes Fingerprint with one hash call over a reused buffer of the framed fields (the
// same bytes Fingerprint hashes, so the same value), which is cheaper for the small fields of
// typical records than a digest write per field. The zero value is ready; a Hasher is not safe
// for concurrent use.
type Hasher struct{ buf []byte }

// Sum returns Fingerprint(r, f).
func (p *Hasher) Sum(r *kgo.Record, f Fields) uint64 {
	b := p.buf[:0]
	if f&FieldKey != 0 {
		b = appendFramed(b, r.Key)
	}
	if f&FieldValue != 0 {
		b = appendFramed(b, r.Value)
	}
	if f&FieldHeaders != 0 {
		b = binary.BigEndian.AppendUint32(b, uint32(len(r.Headers)))
		for _, h := range r.Headers {
			b = append(b, 1)
			b = binary.BigEndian.AppendUint64(b, uint64(len(h.Key)))
			b = append(b, h.Key...)
			b = appendFramed(b, h.Value)
		}
	}
	if f&FieldTimestamp != 0 {
		b = binary.BigEndian.AppendUint64(b, uint64(r.Timestamp.UnixMilli()))
	}
	p.buf = b
	if cap(p.buf) > 1<<20 {
		p.buf = nil // do not keep a huge record's buffer
	}
	return xxhash.Sum64(b)
}

func appendFramed(b, field []byte) []byte {
	if field == nil {
		return append(b, 0)
	}
	b = append(b, 1)
	b = binary.BigEndian.AppendUint64(b, uint64(len(field)))
	return append(b, field...)
}
