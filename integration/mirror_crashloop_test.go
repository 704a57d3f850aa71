package integration

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/kmigrate/kmigrate/integration/cluster"
)

// TestMirrorCrashLoop measures how long the target stays behind after kmirror crash-loops, as
// a pod whose container is killed over and over does: kmirror is killed with SIGKILL three
// times 700 ms apart while a producer writes, then started once more. The figure is the time
// from that last start until the target has every source record committed (lag 0); the test
// asserts that every record arrives exactly once, and, on the in-process fake, that lag 0 comes
// within 2 minutes (catchUpBound). It runs on the provider the suite runs on
// (KMIGRATE_PROVIDER=kfake for the in-process fake), 4 partitions, 20,000 records, with
// kmirror's default settings and with a stable group.instance.id (static membership), which
// lets the restarted process take its old member's place without waiting for its session to
// time out. Measured 2026-12-04, 2.3.0 -> 3.7.1 on JVMs: 82.2 s with the defaults (the dead
// members' 45 s sessions, then a rebalance), 1.2 s with static membership. On kfake,
// 2026-12-06: 211.9 s with a rebalance timeout of 60 s (franz-go's default: each round waits
// that long for the dead members), 30.5 and 76.2 s with kmirror's 15 s, 0.1 s static.
func TestMirrorCrashLoop(t *testing.T) {
	bedParallel(t)
	src := cluster.StartT(t, cluster.Spec{Version: cluster.V230, Name: "crash-src"})
	dst := cluster.StartT(t, cluster.Spec{Version: cluster.V371, Name: "crash-dst"})
	if t.Failed() || t.Skipped() {
		return
	}
	bin := filepath.Join(bedBuild(t, "kmirror"), "kmirror")
	for _, v := range []struct{ name, extra string }{
		{"default", ""},
		{"static membership", "S9.consumer.group.instance.id=kmirror-crashloop\n"},
	} {
		t.Run(v.name, func(t *testing.T) {
			mirCrashLoop(t, src, dst, bin, v.extra)
		})
	}
}

// catchUpBound is how long, on kfake, the last run may take to reach lag 0.
const catchUpBound = 2 * time.Minute

func mirCrashLoop(t *testing.T, src, dst cluster.Cluster, bin, extra string) {
	const parts, total = 4, 20000
	topic := bedUnique("mir-crashloop")
	bedCreateTopic(t, src, topic, parts, nil)
	// kmirror's defaults (session timeout 45 s), unlike mirProps' short session.
	props := filepath.Join(t.TempDir(), "mm2.properties")
	text := bedProperties(src, dst, "S9", "T9", topic, "emit.checkpoints.enabled=false", "T9.producer.linger.ms=10") + extra
	if err := os.WriteFile(props, []byte(text), 0o600); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	waitProduced, _ := mirProducer(ctx, t, src, topic, parts, total, 10*time.Second)

	first := mirStart(t, bin, props, "S9->T9", "kmirror-crash0")
	bedWaitFor(ctx, t, 100*time.Millisecond, "the first run to own every partition and commit", func() string {
		if owned := first.owned(); owned != parts {
			return fmt.Sprintf("owns %d of %d partitions", owned, parts)
		}
		if got := sumRecords(ctx, t, dst, topic); got == 0 {
			return "nothing committed on the target yet"
		}
		return ""
	})
	first.kill()
	<-first.exited
	for i := 1; i <= 3; i++ {
		p := mirStart(t, bin, props, "S9->T9", fmt.Sprintf("kmirror-crash%d", i))
		time.Sleep(700 * time.Millisecond) // the crash loop's own rhythm, not a wait for a condition
		p.kill()
		<-p.exited
	}
	waitProduced()
	want := sumEnds(ctx, t, src, topic)
	last := mirStart(t, bin, props, "S9->T9", "kmirror-crash-last")
	started := time.Now()
	wait := ctx
	if _, fake := cluster.AsKfake(src); fake {
		// In-process brokers answer at once: what is left is the group's waits for the dead
		// members, which must not add up to minutes.
		var cancelWait context.CancelFunc
		wait, cancelWait = context.WithTimeout(ctx, catchUpBound)
		defer cancelWait()
	}
	bedWaitFor(wait, t, 100*time.Millisecond, "the last run to mirror everything", func() string { return mirBehind(ctx, t, dst, topic, want) })
	caughtUp := time.Since(started)
	last.term(t)
	if got := sumRecords(ctx, t, dst, topic); got != want {
		t.Errorf("target has %d committed records, source %d", got, want)
	}
	for part := int32(0); part < parts; part++ {
		mirClean(t, topic, part, mirAlign(ctx, t, src, dst, topic, part))
	}
	provider := "jvm"
	if _, fake := cluster.AsKfake(src); fake {
		provider = "kfake"
	}
	t.Logf("CRASHLOOP %s, %s %s -> %s: lag 0 %.1f s after the last start (%d records, %d partitions, 3 kill -9 700 ms apart)",
		t.Name(), provider, src.Version(), dst.Version(), caughtUp.Seconds(), want, parts)
}
