package integration

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestDemoReal is `make demo-real`: the seed story of `make demo` on real brokers with the real
// MirrorMaker 2 3.7.1 (Kafka 2.3.0 on ZooKeeper -> 3.7.1 on KRaft), driving the kverify and
// kreconcile binaries as an operator would. It runs only with KMIGRATE_DEMO_REAL=1, because
// TestSeedScenario and TestReconcileSeed already check the same facts in `make test`.
func TestDemoReal(t *testing.T) {
	if os.Getenv("KMIGRATE_DEMO_REAL") == "" {
		t.Skip("the real-broker demo runs with KMIGRATE_DEMO_REAL=1 (make demo-real); TestReconcileSeed covers it in make test")
	}
	say := func(format string, args ...any) { fmt.Printf("\n== "+format+"\n", args...) }
	bin := bedBuild(t, "kverify", "kreconcile")

	say("starting Kafka 2.3.0 (ZooKeeper) and 3.7.1 (KRaft) and MirrorMaker 2 3.7.1 with the user's mm2.properties")
	f := runSeedScenario(t)
	fmt.Printf("source %s, target %s\n", strings.Join(f.Source.Bootstrap(), ","), strings.Join(f.Target.Bootstrap(), ","))
	fmt.Printf("the group consumed %d records and stopped; %d more were produced; MM2 mirrored all and checkpointed\n",
		len(f.Consumed), len(f.Unconsumed))
	fmt.Printf("MM2's offset syncs:")
	for _, s := range f.OffsetSyncs {
		fmt.Printf(" %d->%d", s.Upstream, s.Downstream)
	}
	fmt.Printf("\nMM2's checkpoint: G=%d -> %d (read at %d); target group synced to %d\n", f.SourceCommitted, f.Checkpoint.Downstream, f.Checkpoint.Upstream, f.TargetCommitted)
	fmt.Printf("source lag %d, target lag %d: a consumer switched now re-reads %d records\n", f.SourceLag, f.TargetLag, f.Reread)
	if err := f.MM2.Close(); err != nil { // the cut-over: the mirror is stopped before consumers switch
		t.Fatalf("stop MirrorMaker 2: %v", err)
	}

	props := filepath.Join(t.TempDir(), "mm2.properties")
	if err := os.WriteFile(props, []byte(f.MM2Properties), 0o600); err != nil {
		t.Fatal(err)
	}
	run := func(want int, tool string, args ...string) {
		t.Helper()
		fmt.Printf("$ %s %s\n", tool, strings.Join(args, " "))
		if got := bedRun(t, os.Stdout, os.Stderr, filepath.Join(bin, tool), args...); got != want {
			t.Fatalf("%s: exit %d, want %d", tool, got, want)
		}
	}
	say("kverify diff: every record arrived, byte for byte")
	run(0, "kverify", "diff", "--mm2-config", props, "--topic", f.Topic, "--quiet")
	say("kreconcile groups: the exact target offset")
	run(1, "kreconcile", "groups", "--mm2-config", props, "--group", f.Group)
	say("kreconcile groups --apply")
	run(0, "kreconcile", "groups", "--mm2-config", props, "--group", f.Group, "--apply", "--backup", filepath.Join(t.TempDir(), "backup.json"))

	say("the group switches to the target and consumes")
	got := rcConsumeGroup(t, f.Target, f.Group, f.Topic)
	rcSameValues(t, "the group on the target after --apply", got, f.Unconsumed)
	if !t.Failed() {
		fmt.Printf("read %d records on the target: exactly the %d the group had not consumed; re-delivered 0, skipped 0\n", len(got), len(f.Unconsumed))
	}
}
