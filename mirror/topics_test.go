package mirror_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/kmigrate/kmigrate/internal/testkit"
	"github.com/kmigrate/kmigrate/mirror"
)

// TestMirrorTopicChanges: a target topic with fewer partitions than the source is grown, a
// source topic that gains partitions is followed, and a new matching topic is found on
// refresh.
func TestMirrorTopicChanges(t *testing.T) {
	t.Parallel()
	p := newPair(t)
	const short, growing, later = "changes-short", "changes-growing", "changes-later"
	testkit.CreateTopic(t, testkit.Client(t, p.src), short, 3, nil)
	testkit.CreateTopic(t, testkit.Client(t, p.dst), short, 1, nil) // fewer partitions than the source
	testkit.CreateTopic(t, testkit.Client(t, p.src), growing, 1, nil)
	produce(t, p.src, short, 3, 0, 20)
	produce(t, p.src, growing, 1, 0, 20)

	cfg := testConfig("changes-.*")
	cfg.RefreshTopicsInterval = 300 * time.Millisecond
	e, stop := start(t, p, cfg)
	waitMirrored(t, p, short, 3)
	waitMirrored(t, p, growing, 1)

	srcAdm := kadm.NewClient(testkit.Client(t, p.src))
	if _, err := srcAdm.UpdatePartitions(context.Background(), 3, growing); err != nil {
		t.Fatal(err)
	}
	produce(t, p.src, growing, 3, 20, 20)
	testkit.CreateTopic(t, testkit.Client(t, p.src), later, 2, nil)
	produce(t, p.src, later, 2, 0, 30)
	waitMirrored(t, p, growing, 3)
	waitMirrored(t, p, later, 2)
	for _, c := range []struct {
		topic string
		parts int32
	}{{short, 3}, {growing, 3}, {later, 2}} {
		for part := int32(0); part < c.parts; part++ {
			sameRecords(t, p, c.topic, part)
		}
	}
	waitFor(t, "engine owns the new partitions", func() bool { return count(e.Owned()) == 8 })
	if err := stop(); err != nil {
		t.Fatalf("Run: %v", err)
	}
}

func TestMirrorUnreachable(t *testing.T) {
	t.Parallel()
	p := newPair(t)
	cfg := testConfig("x")
	cfg.ConnectTimeout = time.Second
	e, err := mirror.New(cfg, []kgo.Opt{kgo.SeedBrokers("127.0.0.1:1")}, seeds(p.dst), nil)
	if err != nil {
		t.Fatal(err)
	}
	err = e.Run(context.Background())
	if err == nil || !strings.Contains(err.Error(), "source cluster A is unreachable") {
		t.Fatalf("got %v, want an error saying the source cluster A is unreachable", err)
	}
}
