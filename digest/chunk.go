package digest

import (
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"fmt"
	"hash"
	"math/bits"
)

// Params choose the chunk boundaries. A boundary follows record i when the chunk holds at least
// MinRecords records and the top Bits bits of fingerprint(i) are zero, or when it holds
// MaxRecords records.
type Params struct {
	Bits       int   `json:"boundary_bits"`
	MinRecords int64 `json:"min_records"`
	MaxRecords int64 `json:"max_records"`
}

// DefaultAverage is the default average chunk length in records (see doc.go for why).
const DefaultAverage = 4096

// ParamsFor returns the parameters for an average chunk of about avg records (a power of two,
// 16 to 2^20): Bits = log2(avg), MinRecords = avg/16, MaxRecords = avg*16.
func ParamsFor(avg int64) (Params, error) {
	if avg < 16 || avg > 1<<20 || avg&(avg-1) != 0 {
		return Params{}, fmt.Errorf("average chunk %d: give a power of two from 16 to %d (default %d)", avg, 1<<20, DefaultAverage)
	}
	return Params{Bits: bits.TrailingZeros64(uint64(avg)), MinRecords: avg / 16, MaxRecords: avg * 16}, nil
}

// Validate checks p as read from a file.
func (p Params) Validate() error {
	if p.Bits < 1 || p.Bits > 30 || p.MinRecords < 1 || p.MaxRecords < p.MinRecords {
		return fmt.Errorf("chunk parameters %+v are not valid (boundary_bits 1-30, 1 <= min_records <= max_records)", p)
	}
	return nil
}

// Chunk is a run of consecutive records of one partition: the first and last offset, the
// record count and the hash of their fingerprints in order.
type Chunk struct {
	First, Last int64
	Records     int64
	Hash        Hash
}

// Hash is a chunk hash: the first 16 bytes of SHA-256 over the chunk's fingerprints, each as 8
// bytes big-endian, in offset order.
type Hash [16]byte

func (h Hash) String() string { return hex.EncodeToString(h[:]) }

// Builder cuts a fingerprint stream into chunks and computes the root over all of it. The zero
// value is not ready: use NewBuilder.
type Builder struct {
	p      Params
	mask   uint64
	chunks []Chunk
	cur    Chunk
	ch     hash.Hash
	root   hash.Hash
	n      int64
	buf    [8]byte
}

// NewBuilder starts a stream.
func NewBuilder(p Params) *Builder {
	return &Builder{p: p, mask: ^uint64(0) << (64 - p.Bits), ch: sha256.New(), root: sha256.New()}
}

// Add adds the record at offset with fingerprint fp; offsets must increase.
func (b *Builder) Add(offset int64, fp uint64) {
	binary.BigEndian.PutUint64(b.buf[:], fp)
	b.root.Write(b.buf[:])
	b.ch.Write(b.buf[:])
	b.n++
	if b.cur.Records == 0 {
		b.cur.First = offset
	}
	b.cur.Last = offset
	b.cur.Records++
	if b.cur.Records >= b.p.MaxRecords || b.cur.Records >= b.p.MinRecords && fp&b.mask == 0 {
		b.cut()
	}
}

func (b *Builder) cut() {
	var sum [sha256.Size]byte
	copy(b.cur.Hash[:], b.ch.Sum(sum[:0]))
	b.chunks = append(b.chunks, b.cur)
	b.cur = Chunk{}
	b.ch.Reset()
}

// Finish ends the stream: the last chunk is cut where the stream ends. It returns the chunks,
// the record count and the root.
func (b *Builder) Finish() ([]Chunk, int64, Root) {
	if b.cur.Records > 0 {
		b.cut()
	}
	var r Root
	copy(r[:], b.root.Sum(nil))
	return b.chunks, b.n, r
}

// Root is SHA-256 over every fingerprint of a range, each as 8 bytes big-endian, in offset
// order: what evidence keeps and a digest carries per partition.
type Root [sha256.Size]byte

func (r Root) String() string { return hex.EncodeToString(r[:]) }

// ParseRoot parses the hex form of a Root.
func ParseRoot(s string) (Root, error) {
	var r Root
	b, err := hex.DecodeString(s)
	if err != nil || len(b) != len(r) {
		return r, fmt.Errorf("root %q is not 64 hexadecimal digits", s)
	}
	copy(r[:], b)
	return r, nil
}
