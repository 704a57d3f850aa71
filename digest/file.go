package digest

import (
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"time"
)

// Format and Version name a digest file.
const (
	Format  = "kverify-digest"
	Version = 1
)

// File is a digest file (doc.go shows it).
type File struct {
	Format    string    `json:"format"`
	Version   int       `json:"version"`
	Tool      string    `json:"tool"`
	Created   time.Time `json:"created"`
	Side      string    `json:"side"` // "source" or "target"
	Cluster   string    `json:"cluster"`
	ClusterID string    `json:"cluster_id"`
	Topic     string    `json:"topic"`
	Compared  []string  `json:"compared"`
	Isolation string    `json:"isolation"` // read_committed or read_uncommitted
	// Fingerprint, ChunkHash and RootHash say how the hashes were made, for a reader who does
	// not have this program.
	Fingerprint string      `json:"fingerprint"`
	ChunkHash   string      `json:"chunk_hash"`
	RootHash    string      `json:"root_hash"`
	Chunking    Params      `json:"chunking"`
	ChunkFields []string    `json:"chunk_fields"`
	Partitions  []Partition `json:"partitions"`
}

// Partition is one partition of a digest: every record of [From, To) read, as chunks.
type Partition struct {
	Partition int32  `json:"partition"`
	From      int64  `json:"from"`
	To        int64  `json:"to"`
	Records   int64  `json:"records"`
	Bytes     int64  `json:"record_bytes"`
	Root      string `json:"root"`
	// Txns is what the read_committed read of a target digest passed over: the records of
	// aborted transactions in [From, To) and a transaction open where it ends. nil when not
	// recorded: a source digest, a read_uncommitted one (the aborted records are among the
	// chunks), or one taken by a kverify that did not record them.
	Txns   *Txns   `json:"transactions,omitempty"`
	Chunks []Chunk `json:"chunks"`
}

// The descriptions a File carries.
const (
	FingerprintDesc = "xxhash64 of the compared fields, each framed by presence and length (kmigrate offsetmap.Fingerprint)"
	ChunkHashDesc   = "first 16 bytes of SHA-256 over the chunk's fingerprints, 8 bytes big-endian each, in offset order"
	RootHashDesc    = "SHA-256 over every fingerprint of [from, to), 8 bytes big-endian each, in offset order"
)

// ChunkFields names the members of a chunk's JSON array.
var ChunkFields = []string{"first_offset", "last_offset", "records", "hash"}

// NewFile is a File with the descriptions filled in.
func NewFile(p Params) *File {
	return &File{Format: Format, Version: Version, Fingerprint: FingerprintDesc, ChunkHash: ChunkHashDesc,
		RootHash: RootHashDesc, Chunking: p, ChunkFields: ChunkFields, Partitions: []Partition{}}
}

// MarshalJSON writes a chunk as [first, last, records, "hash"]: the file stays small.
func (c Chunk) MarshalJSON() ([]byte, error) {
	return fmt.Appendf(nil, `[%d,%d,%d,"%s"]`, c.First, c.Last, c.Records, c.Hash), nil
}

// UnmarshalJSON reads [first, last, records, "hash"].
func (c *Chunk) UnmarshalJSON(b []byte) error {
	var raw [4]json.RawMessage
	var n []json.RawMessage
	if err := json.Unmarshal(b, &n); err != nil || len(n) != 4 {
		return fmt.Errorf("a chunk is [first_offset, last_offset, records, \"hash\"], got %.40s", b)
	}
	copy(raw[:], n)
	var h string
	for i, dst := range []any{&c.First, &c.Last, &c.Records, &h} {
		if err := json.Unmarshal(raw[i], dst); err != nil {
			return fmt.Errorf("chunk %.60s: member %s: %v", b, ChunkFields[i], err)
		}
	}
	hb, err := hex.DecodeString(h)
	if err != nil || len(hb) != len(c.Hash) {
		return fmt.Errorf("chunk %.60s: hash %q is not 32 hexadecimal digits", b, h)
	}
	copy(c.Hash[:], hb)
	return nil
}

// Write encodes f as compact JSON (indenting would put every chunk member on a line of its
// own and double the size).
func Write(w io.Writer, f *File) error { return writeJSON(w, f, false) }

// ReadFile reads and checks a digest file; errors name the file.
func ReadFile(path string) (*File, error) { return readNamed(path, "digest", Parse) }

// Parse decodes one digest object and checks it: the format and version, no unknown field,
// nothing after it, each partition once and consistent chunks (inside [from, to), in
// increasing order, counts adding up to the records).
func Parse(data []byte) (*File, error) {
	var f File
	if err := decodeOne(data, &f, "digest"); err != nil {
		return nil, err
	}
	if f.Format != Format || f.Version != Version {
		return nil, fmt.Errorf("format %q version %d: this kverify reads %s version %d", f.Format, f.Version, Format, Version)
	}
	if f.Side != "source" && f.Side != "target" {
		return nil, fmt.Errorf("side %q: want source or target", f.Side)
	}
	if f.Topic == "" {
		return nil, errors.New("no topic")
	}
	if err := f.Chunking.Validate(); err != nil {
		return nil, err
	}
	seen := map[int32]bool{}
	for _, p := range f.Partitions {
		if seen[p.Partition] {
			return nil, fmt.Errorf("partition %d listed twice", p.Partition)
		}
		seen[p.Partition] = true
		if err := p.check(); err != nil {
			return nil, fmt.Errorf("partition %d: %w", p.Partition, err)
		}
	}
	return &f, nil
}

func (p Partition) check() error {
	if p.Partition < 0 || p.From < 0 || p.To < p.From {
		return fmt.Errorf("range [%d, %d) is not valid", p.From, p.To)
	}
	if _, err := ParseRoot(p.Root); err != nil {
		return err
	}
	next, n := p.From, int64(0)
	for i, c := range p.Chunks {
		if c.First < next || c.Last < c.First || c.Last >= p.To || c.Records < 1 || c.Records > c.Last-c.First+1 {
			return fmt.Errorf("chunk %d [%d, %d] of %d records is out of order or outside [%d, %d)", i, c.First, c.Last, c.Records, p.From, p.To)
		}
		next, n = c.Last+1, n+c.Records
	}
	if n != p.Records {
		return fmt.Errorf("chunks hold %d records, the partition says %d", n, p.Records)
	}
	if p.Txns != nil {
		return p.Txns.check(p.From, p.To)
	}
	return nil
}

// Lookup returns partition p of f.
func (f *File) Lookup(p int32) (*Partition, bool) {
	for i := range f.Partitions {
		if f.Partitions[i].Partition == p {
			return &f.Partitions[i], true
		}
	}
	return nil, false
}
