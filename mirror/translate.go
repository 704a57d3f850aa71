package mirror

import "github.com/kmigrate/kmigrate/verify"

// Translator answers E(G) for partitions this process owns.
//
// The engine implements it from its exact in-memory offset maps (one verify.PartitionMap per
// mirrored source partition, built from produce results). It is safe for concurrent use: the
// groupsync loop calls it while partitions are being mirrored, assigned and revoked.
type Translator interface {
	// Translate returns E(G) for group offset g of source topic/partition, and ok=false when
	// this process does not own the partition or the answer is pending.
	Translate(topic string, partition int32, g int64) (verify.Translation, bool)
	// Owned lists the source topic partitions this process currently mirrors.
	Owned() map[string][]int32
}
