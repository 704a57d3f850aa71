package integration

import (
	"os"
	"strings"
	"testing"

	"github.com/kmigrate/kmigrate/integration/cluster"
)

// envPair names the source and target versions of the suites that migrate from one cluster
// to another (verify, reconcile, mirror, digest, preflight, ACLs, cutover): "2.3.0-3.7.1"
// when unset, which is what CI runs.
const envPair = "KMIGRATE_PAIR"

// bedPairs are the pairs KMIGRATE_PAIR may name, "source-target"; the first is the default.
// Kafka 4 has no ZooKeeper mode, so a 4.3.1 source is only ever a KRaft one.
var bedPairs = []string{
	cluster.V230 + "-" + cluster.V371,
	cluster.V230 + "-" + cluster.V431,
	cluster.V371 + "-" + cluster.V431,
	cluster.V431 + "-" + cluster.V431,
}

// bedPair is the source and target version from $KMIGRATE_PAIR (2.3.0 and 3.7.1 when unset);
// any other value fails the test, naming the allowed ones.
func bedPair(t testing.TB) (src, dst string) {
	t.Helper()
	p := os.Getenv(envPair)
	if p == "" {
		p = bedPairs[0]
	}
	for _, ok := range bedPairs {
		if p == ok {
			src, dst, _ = strings.Cut(p, "-")
			return src, dst
		}
	}
	t.Fatalf("%s=%q: want one of %s (unset: %s)", envPair, p, strings.Join(bedPairs, ", "), bedPairs[0])
	return "", ""
}

// bedTag is a version without its dots, for cluster names: "230", "371", "431".
func bedTag(v string) string { return strings.ReplaceAll(v, ".", "") }

// bedPairNames names the clusters of a pair prefix-<tag>: "acls-230" and "acls-371". Two
// clusters of one version (4.3.1-4.3.1) are told apart by -source and -target.
func bedPairNames(prefix, src, dst string) (string, string) {
	s, d := prefix+"-"+bedTag(src), prefix+"-"+bedTag(dst)
	if src == dst {
		s, d = s+"-source", d+"-target"
	}
	return s, d
}

// bedSkipSource skips the test when the pair's source is not version v, saying why: a test
// about what only that source has (2.3.0's ZooKeeper, a quirk of the old release).
func bedSkipSource(t testing.TB, v, why string) {
	t.Helper()
	if src, dst := bedPair(t); src != v {
		t.Skipf("%s=%s-%s: %s", envPair, src, dst, why)
	}
}
