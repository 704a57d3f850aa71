package groupsync_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"

	"github.com/kmigrate/kmigrate/mirror/groupsync"
)

// BenchmarkIdlePass measures a pass that finds nothing new (the steady state of Run) over 200
// groups of 4 partitions each, on kfake.
func BenchmarkIdlePass(b *testing.B) {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	e := newBenchEnv(b, ctx)
	const groups, parts = 200, 4
	e.topic("bench", parts)
	for p := int32(0); p < parts; p++ {
		e.tr.mirrored("bench", p, 1000, 0)
	}
	for g := range groups {
		os := make(kadm.Offsets)
		for p := int32(0); p < parts; p++ {
			os.Add(kadm.Offset{Topic: "bench", Partition: p, At: int64(g), LeaderEpoch: -1})
		}
		if resp, err := e.srcAdm.CommitOffsets(ctx, fmt.Sprintf("g%03d", g), os); err != nil || resp.Error() != nil {
			b.Fatalf("commit: %v %v", err, resp.Error())
		}
	}
	s, err := groupsync.New(e.config())
	if err != nil {
		b.Fatal(err)
	}
	start := time.Now()
	rep, err := s.SyncOnce(ctx)
	if err != nil || rep.Committed != groups*parts || rep.Emitted != groups*parts {
		b.Fatalf("first pass: %v, committed %d emitted %d, errors %d", err, rep.Committed, rep.Emitted, rep.Errors())
	}
	first := time.Since(start)
	b.ResetTimer()
	for b.Loop() {
		rep, err := s.SyncOnce(ctx)
		if err != nil || rep.Committed != 0 || rep.Emitted != 0 {
			b.Fatalf("idle pass: %v, committed %d emitted %d", err, rep.Committed, rep.Emitted)
		}
	}
	b.ReportMetric(float64(first.Milliseconds()), "first-pass-ms")
}
