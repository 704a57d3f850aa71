package mm2

import "github.com/twmb/franz-go/pkg/kgo"

// Compression is the codec a producer's compression.type names: none, gzip, snappy, lz4 or
// zstd, exactly (callers that accept other spellings normalise first); ok is false for any
// other name.
func Compression(name string) (codec kgo.CompressionCodec, ok bool) {
	switch name {
	case "none":
		return kgo.NoCompression(), true
	case "gzip":
		return kgo.GzipCompression(), true
	case "snappy":
		return kgo.SnappyCompression(), true
	case "lz4":
		return kgo.Lz4Compression(), true
	case "zstd":
		return kgo.ZstdCompression(), true
	}
	return kgo.CompressionCodec{}, false
}
