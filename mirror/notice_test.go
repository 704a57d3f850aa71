package mirror_test

import (
	"strings"
	"testing"

	"github.com/kmigrate/kmigrate/internal/testkit"
	"github.com/kmigrate/kmigrate/mirror"
)

// TestReadCommittedNotice: in fenced mode kmirror says at start that target consumers must
// read committed, and why; without the fence it warns that writes are not fenced instead.
func TestReadCommittedNotice(t *testing.T) {
	t.Parallel()
	for _, fencing := range []string{mirror.FenceTransactions, mirror.FenceNone} {
		t.Run(fencing, func(t *testing.T) {
			t.Parallel()
			p := newPair(t)
			topic := "orders-notice-" + fencing
			testkit.CreateTopic(t, testkit.Client(t, p.src), topic, 1, nil)
			produce(t, p.src, topic, 1, 0, 5)
			cfg := testConfig(topic)
			cfg.Fencing = fencing
			l := startLogged(t, p, cfg)
			waitMirrored(t, p, topic, 1)
			if err := l.stop(t); err != nil {
				t.Fatal(err)
			}
			logs := l.logs.String()
			notice := strings.Contains(logs, "target consumers must read with isolation.level=read_committed") &&
				strings.Contains(logs, "read_uncommitted consumer (the default of Kafka's Java client and console consumer)")
			if notice != (fencing == mirror.FenceTransactions) {
				t.Errorf("fencing %s: read_committed notice logged %v, want %v", fencing, notice, fencing == mirror.FenceTransactions)
			}
			if warned := strings.Contains(logs, "fencing none: writes are not fenced"); warned != (fencing == mirror.FenceNone) {
				t.Errorf("fencing %s: no-fence warning logged %v", fencing, warned)
			}
		})
	}
}
