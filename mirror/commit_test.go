package mirror_test

import (
	"testing"
	"time"

	"github.com/kmigrate/kmigrate/internal/testkit"
	"github.com/kmigrate/kmigrate/mirror"
)

// TestCommitLightFlowEarly: with a bound of a minute, a light flow's records are visible to
// read_committed readers as soon as the flow pauses, long before the bound.
func TestCommitLightFlowEarly(t *testing.T) {
	t.Parallel()
	p := newPair(t)
	const topic, parts = "orders-light", 2
	testkit.CreateTopic(t, testkit.Client(t, p.src), topic, parts, nil)
	produce(t, p.src, topic, parts, 0, 5)
	cfg := testConfig(topic)
	cfg.CommitLatency = mirror.MaxCommitLatency
	e, stop := start(t, p, cfg)
	defer stop()
	waitMirrored(t, p, topic, parts) // within 30 s, half the bound
	produce(t, p.src, topic, parts, 5, 3)
	waitMirrored(t, p, topic, parts)
	if n := e.Commits("pause"); n < 2 {
		t.Fatalf("%v commits when the flow paused, want 2 or more", n)
	}
	if n := e.Commits("bound"); n != 0 {
		t.Fatalf("%v commits at the bound of a minute, want none", n)
	}
}

// TestCommitAtTheBound: a bucket whose flow never pauses (here: the pause rule switched off)
// still commits, at the bound.
func TestCommitAtTheBound(t *testing.T) {
	t.Parallel()
	p := newPair(t)
	const topic, parts = "orders-bound", 2
	testkit.CreateTopic(t, testkit.Client(t, p.src), topic, parts, nil)
	produce(t, p.src, topic, parts, 0, 50)
	cfg := testConfig(topic)
	cfg.CommitLatency = 300 * time.Millisecond
	e, err := mirror.New(cfg, seeds(p.src), seeds(p.dst), testLogger(t))
	if err != nil {
		t.Fatal(err)
	}
	e.SetCommitPause(time.Hour)
	stop := run(t, e)
	defer stop()
	waitMirrored(t, p, topic, parts)
	if n := e.Commits("bound"); n < 1 {
		t.Fatalf("%v commits at the bound, want 1 or more", n)
	}
	if n := e.Commits("pause"); n != 0 {
		t.Fatalf("%v commits at a pause, want none (switched off)", n)
	}
	n, under := e.CommitWaits()
	if n == 0 {
		t.Fatal("no commit wait observed (kmirror_commit_wait_seconds)")
	}
	t.Logf("%d commits, every first record visible within %v s", n, under)
}
