package offsetmap

// Translator answers E(G) for the source partitions a running mirror owns. kmirror's engine
// implements it from its in-memory maps (one PartitionMap per mirrored source partition, built
// from produce results), and its group offset sync asks it. Implementations are safe for
// concurrent use: the sync asks while partitions are mirrored, assigned and revoked.
type Translator interface {
	// Translate returns E(G) for group offset g of source topic/partition. ok=false means this
	// process does not own the partition, or (for a partition Owned lists) that the answer is
	// pending; a Translation with Known=false is pending too.
	Translate(topic string, partition int32, g int64) (Translation, bool)
	// Owned lists the source topic partitions this process currently mirrors.
	Owned() map[string][]int32
}
