package mirror_test

import (
	"context"
	"fmt"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kversion"

	"github.com/kmigrate/kmigrate/internal/testkit"
	"github.com/kmigrate/kmigrate/mirror"
)

// newPairVersions is newPair with both clusters limited to the request versions of v (nil: all).
// kversion.V2_3_0 makes kfake answer like a 2.3.0 broker: metadata without topic IDs.
func newPairVersions(t *testing.T, v *kversion.Versions) pair {
	t.Helper()
	if v == nil {
		return newPair(t)
	}
	return newPair(t, kfake.MaxVersions(v))
}

// logged is an engine running with its log (info and above) captured.
type logged struct {
	e      *mirror.Engine
	logs   *testkit.SyncBuffer
	done   chan error
	cancel context.CancelFunc
}

func startLogged(t *testing.T, p pair, cfg mirror.Config) *logged {
	t.Helper()
	l := &logged{logs: &testkit.SyncBuffer{}, done: make(chan error, 1)}
	e, err := mirror.New(cfg, seeds(p.src), seeds(p.dst), slog.New(slog.NewTextHandler(l.logs, &slog.HandlerOptions{Level: slog.LevelInfo})))
	if err != nil {
		t.Fatal(err)
	}
	l.e = e
	ctx, cancel := context.WithCancel(context.Background())
	l.cancel = cancel
	go func() { l.done <- e.Run(ctx) }()
	t.Cleanup(func() {
		cancel()
		select {
		case <-l.done:
		case <-time.After(40 * time.Second):
		}
		if t.Failed() {
			t.Logf("log:\n%s", l.logs.String())
		}
	})
	return l
}

// stop ends Run and returns its error.
func (l *logged) stop(t *testing.T) error {
	t.Helper()
	l.cancel()
	select {
	case err := <-l.done:
		l.done <- err // for the cleanup
		return err
	case <-time.After(40 * time.Second):
		t.Fatal("engine did not stop in 40s")
		return nil
	}
}

// running fails the test if Run has returned: a stopped partition must not stop the process.
func (l *logged) running(t *testing.T) {
	t.Helper()
	select {
	case err := <-l.done:
		l.done <- err
		t.Fatalf("Run returned %v, want it to keep running (only the partition stops)", err)
	default:
	}
}

// stoppedLines returns the ERROR lines that say topic/partition is stopped for reason.
func (l *logged) stoppedLines(topic string, partition int32, reason string) []string {
	var out []string
	for _, line := range strings.Split(l.logs.String(), "\n") {
		if strings.Contains(line, "level=ERROR") && strings.Contains(line, `msg="partition stopped"`) &&
			strings.Contains(line, fmt.Sprintf("topic=%s partition=%d ", topic, partition)) &&
			strings.Contains(line, "reason="+reason) {
			out = append(out, line)
		}
	}
	return out
}

// waitStopped waits until the partition was reported stopped for reason at least n times (the
// first report and n-1 re-checks), while Run keeps running, and returns the last line.
func (l *logged) waitStopped(t *testing.T, topic string, partition int32, reason string, n int) string {
	t.Helper()
	var lines []string
	waitFor(t, fmt.Sprintf("%d reports that %s/%d is stopped (reason=%s)", n, topic, partition, reason), func() bool {
		l.running(t)
		lines = l.stoppedLines(topic, partition, reason)
		return len(lines) >= n
	})
	return lines[len(lines)-1]
}

// written counts the data records written to topic/partition on c, committed or not: what a
// writer put there, which end offsets do not tell once transaction markers take offsets.
func written(t *testing.T, c *kfake.Cluster, topic string, partition int32) int64 {
	t.Helper()
	return countData(t, c, topic, partition, false)
}

func recreateTopic(t *testing.T, c *kfake.Cluster, topic string, partitions int32) {
	t.Helper()
	adm := kadm.NewClient(testkit.Client(t, c))
	ctx := context.Background()
	resp, err := adm.DeleteTopics(ctx, topic)
	if err == nil {
		err = resp.Error()
	}
	if err != nil {
		t.Fatalf("delete topic %s: %v", topic, err)
	}
	waitFor(t, "topic "+topic+" created again", func() bool {
		r, err := adm.CreateTopic(ctx, partitions, 1, nil, topic)
		return err == nil && r.Err == nil
	})
}

func containsAll(s string, subs ...string) string {
	for _, sub := range subs {
		if !strings.Contains(s, sub) {
			return sub
		}
	}
	return ""
}

// TestMirrorRecreatedSourceTopic deletes a mirrored source topic and creates it again, with
// fewer records than were mirrored (the consumer's offset is out of range) or more (the offset
// is valid in the new topic, the dangerous case), while kmirror is stopped or while it runs,
// on a cluster with topic IDs and on one without (2.3.0). The partition must stop with an
// ERROR that names topic, partition and what to do, repeated at each re-check; the target
// must keep exactly the old topic's records; another topic of the flow goes on.
func TestMirrorRecreatedSourceTopic(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name       string
		versions   *kversion.Versions
		running    bool
		newRecords int
		reason     string // without topic IDs, a differing fingerprint cannot tell which side was recreated
	}{
		{"stopped, new topic shorter", nil, false, 20, "source_recreated"},
		{"stopped, new topic longer", nil, false, 80, "source_recreated"},
		{"stopped, no topic IDs (2.3.0), new topic shorter", kversion.V2_3_0(), false, 20, "source_recreated"},
		{"stopped, no topic IDs (2.3.0), new topic longer", kversion.V2_3_0(), false, 80, "source_or_target_recreated"},
		{"running, new topic shorter", nil, true, 20, "source_recreated"},
		{"running, new topic longer", nil, true, 80, "source_recreated"},
		{"running, no topic IDs (2.3.0), new topic shorter", kversion.V2_3_0(), true, 20, "source_recreated"},
	}
	for i, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			p := newPairVersions(t, tt.versions)
			topic, other := fmt.Sprintf("orders-recreated-%d", i), fmt.Sprintf("other-%d", i)
			testkit.CreateTopic(t, testkit.Client(t, p.src), topic, 1, nil)
			testkit.CreateTopic(t, testkit.Client(t, p.src), other, 1, nil)
			produce(t, p.src, topic, 1, 0, 50)
			produce(t, p.src, other, 1, 0, 10)
			cfg := testConfig(topic)
			cfg.Topics = []string{topic, other}
			cfg.RefreshTopicsInterval = 200 * time.Millisecond

			l := startLogged(t, p, cfg)
			waitMirrored(t, p, topic, 1)
			waitMirrored(t, p, other, 1)
			if !tt.running {
				if err := l.stop(t); err != nil {
					t.Fatalf("Run: %v", err)
				}
			}
			recreateTopic(t, p.src, topic, 1)
			produce(t, p.src, topic, 1, 1000, tt.newRecords)
			if !tt.running {
				l = startLogged(t, p, cfg)
			}

			line := l.waitStopped(t, topic, 0, tt.reason, 2)
			if missing := containsAll(line, "cluster=A", "created again", "offset map", "what to do"); missing != "" {
				t.Errorf("got %q, want it to contain %q", line, missing)
			}
			if got := written(t, p.dst, topic, 0); got != 50 {
				t.Errorf("target %s/0 holds %d written records, want 50: records of the new source topic were mirrored after the old one's", topic, got)
			}
			produce(t, p.src, other, 1, 10, 10)
			waitMirrored(t, p, other, 1)
			sameRecords(t, p, other, 0)
			if info := strings.Count(l.logs.String(), "source records deleted before they were mirrored"); info > 0 {
				t.Errorf("the recreated topic was reported as retention (%d lines), want it reported as recreated", info)
			}
			l.running(t)
		})
	}
}

// TestMirrorRecreatedTargetTopic deletes the target topic while kmirror is stopped and creates
// it again, empty or refilled by another writer up to exactly the offset the map says kmirror
// wrote (so the tail check finds nothing). The partition must stop with an ERROR; nothing is
// written to the new target topic.
func TestMirrorRecreatedTargetTopic(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name     string
		versions *kversion.Versions
		foreign  int // records another writer puts in the recreated target topic
		reason   string
		cluster  string
	}{
		{"empty", nil, 0, "target_recreated", "cluster=B"},
		{"refilled to the mapped end", nil, 50, "target_recreated", "cluster=B"},
		{"no topic IDs (2.3.0), empty", kversion.V2_3_0(), 0, "target_recreated", "cluster=B"},
		{"no topic IDs (2.3.0), refilled to the mapped end", kversion.V2_3_0(), 50, "source_or_target_recreated", "cluster=A,B"},
	}
	for i, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			p := newPairVersions(t, tt.versions)
			topic := fmt.Sprintf("orders-target-recreated-%d", i)
			testkit.CreateTopic(t, testkit.Client(t, p.src), topic, 1, nil)
			produce(t, p.src, topic, 1, 0, 50)
			cfg := testConfig(topic)
			l := startLogged(t, p, cfg)
			waitMirrored(t, p, topic, 1)
			if err := l.stop(t); err != nil {
				t.Fatalf("Run: %v", err)
			}
			recreateTopic(t, p.dst, topic, 1)
			if tt.foreign > 0 {
				produce(t, p.dst, topic, 1, 5000, tt.foreign)
			}
			produce(t, p.src, topic, 1, 50, 10)

			l = startLogged(t, p, cfg)
			line := l.waitStopped(t, topic, 0, tt.reason, 2)
			if missing := containsAll(line, tt.cluster, "created again", "offset map", "what to do"); missing != "" {
				t.Errorf("got %q, want it to contain %q", line, missing)
			}
			if got := written(t, p.dst, topic, 0); got != int64(tt.foreign) {
				t.Errorf("target %s/0 holds %d written records, want %d: kmirror wrote into the recreated target topic", topic, got, tt.foreign)
			}
			l.running(t)
		})
	}
}

// TestIdentityRecord round-trips identity records and checks that the offset map's segment
// decoder (the reader of older kmirror versions) skips them, and the identity decoder skips
// segment records.
func TestIdentityRecord(t *testing.T) {
	t.Parallel()
	id := func(b byte) (out [16]byte) {
		for i := range out {
			out[i] = b + byte(i)
		}
		return out
	}
	tests := []struct {
		name     string
		topic    string
		src, dst [16]byte
	}{
		{"both IDs", "orders", id(1), id(100)},
		{"no IDs (2.3.0)", "orders.v2", [16]byte{}, [16]byte{}},
		{"source only", "a", id(7), [16]byte{}},
		{"long name", strings.Repeat("t", 249), id(3), id(4)},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			k, v := mirror.EncodeIdentityRecord(tt.topic, tt.src, tt.dst)
			topic, src, dst, err := mirror.DecodeIdentityRecord(k, v)
			if err != nil || topic != tt.topic || src != tt.src || dst != tt.dst {
				t.Fatalf("got %q %x %x %v, want %q %x %x", topic, src, dst, err, tt.topic, tt.src, tt.dst)
			}
			if _, _, _, _, _, err := mirror.DecodeMapRecord(k, v); err == nil {
				t.Fatalf("the segment decoder accepted an identity record: older readers would misread it")
			}
			if _, _, _, err := mirror.DecodeIdentityRecord(k[:len(k)-1], v); err == nil {
				t.Errorf("a truncated key decoded")
			}
		})
	}
}
