// Command demo runs the seed case of kmigrate end to end on two in-process clusters (kfake), so
// anyone can see the 30-vs-38 gap and its fix without Java: `make demo`.
//
// It plays MirrorMaker 2's part itself (copying records in order and leaving the target group
// where MM2 3.7.1 leaves an idle group: translated from an offset sync 9 records back), then
// runs the real kverify and kreconcile binaries against the two clusters and checks with a
// consumer on the target that exactly the unconsumed records are read.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"
	"golang.org/x/term"

	"github.com/kmigrate/kmigrate/mm2"
)

const (
	topic      = "GEN.LAB.P.TEST.TESTINFO.OLD2NEW"
	group      = "test-consumer-kafkaupgrade-109"
	consumed   = 100 // records the group consumes before it stops
	late       = 30  // records produced after the consumer stopped
	syncBehind = 9   // MM2's newest offset sync before G is this many records back
)

func main() {
	bin := flag.String("bin", "bin", "directory with the kverify and kreconcile binaries")
	flag.Parse()
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	ctx, cancel := context.WithTimeout(ctx, 2*time.Minute)
	defer cancel()
	if err := run(ctx, *bin); err != nil {
		fmt.Fprintf(os.Stderr, "demo: %v\n", err)
		os.Exit(1)
	}
}

// bold is whether step headings are drawn bold: only on a terminal, so that `make demo` into a
// file or a pipe (CI logs) holds no escape codes.
var bold = term.IsTerminal(int(os.Stdout.Fd()))

func step(format string, args ...any) { writeStep(os.Stdout, bold, format, args...) }

// writeStep writes one step heading to w, bold with ANSI codes only when asked.
func writeStep(w io.Writer, bold bool, format string, args ...any) {
	text := "== " + fmt.Sprintf(format, args...)
	if bold {
		text = "\033[1m" + text + "\033[0m"
	}
	fmt.Fprintf(w, "\n%s\n", text)
}

func run(ctx context.Context, bin string) error {
	start := time.Now()
	src, err := kfake.NewCluster(kfake.NumBrokers(1), kfake.SeedTopics(1, topic))
	if err != nil {
		return fmt.Errorf("start source cluster: %w", err)
	}
	defer src.Close()
	dst, err := kfake.NewCluster(kfake.NumBrokers(1), kfake.SeedTopics(1, topic))
	if err != nil {
		return fmt.Errorf("start target cluster: %w", err)
	}
	defer dst.Close()
	srcAddr, dstAddr := strings.Join(src.ListenAddrs(), ","), strings.Join(dst.ListenAddrs(), ",")
	step("two in-process clusters: source %s, target %s; topic %s", srcAddr, dstAddr, topic)

	sc, err := kgo.NewClient(kgo.SeedBrokers(src.ListenAddrs()...))
	if err != nil {
		return err
	}
	defer sc.Close()
	dc, err := kgo.NewClient(kgo.SeedBrokers(dst.ListenAddrs()...))
	if err != nil {
		return err
	}
	defer dc.Close()

	step("producer sends %d records; group %s consumes and commits them on the source", consumed, group)
	if err := produce(ctx, sc, 0, consumed); err != nil {
		return err
	}
	if err := consumeAndCommit(ctx, src.ListenAddrs(), consumed); err != nil {
		return err
	}

	step("the consumer stops; the producer sends %d more records and stops", late)
	if err := produce(ctx, sc, consumed, late); err != nil {
		return err
	}

	step("mirroring: every record copied to the target in order, as MirrorMaker 2 does")
	n, err := copyTopic(ctx, sc, dc)
	if err != nil {
		return err
	}
	fmt.Printf("copied %d records\n", n)

	g := int64(consumed)
	u := g - syncBehind
	mm2Target := u + 1 // MM2 3.7.1: newest sync s with s.upstream <= G gives s.downstream + 1
	step("where MirrorMaker 2 3.7.1 leaves the idle group (simulated, labelled as such)")
	fmt.Printf("newest offset sync before G=%d is (upstream %d, downstream %d): MM2 never adds G - upstream,\n", g, u, u)
	fmt.Printf("so its checkpoint and the synced target group say %d + 1 = %d.\n", u, mm2Target)
	if err := leaveAsMM2(ctx, dc, g, u, mm2Target); err != nil {
		return err
	}
	if err := printLags(ctx, sc, dc); err != nil {
		return err
	}
	reread, err := readFrom(ctx, dc, mm2Target, g)
	if err != nil {
		return err
	}
	fmt.Printf("a consumer switched to the target now would read %d records it already consumed: %s..%s\n",
		len(reread), reread[0], reread[len(reread)-1])

	kverify, kreconcile := filepath.Join(bin, "kverify"), filepath.Join(bin, "kreconcile")
	conn := []string{"--source-brokers", srcAddr, "--target-brokers", dstAddr}

	step("kverify diff --topic %s: every record arrived, byte for byte", topic)
	if code, err := tool(ctx, kverify, append([]string{"diff", "--topic", topic, "--quiet"}, conn...)...); err != nil || code != 0 {
		return fmt.Errorf("kverify diff: exit %d, want 0 (identical): %v", code, err)
	}

	step("kreconcile groups: the exact target offset of every group")
	if code, err := tool(ctx, kreconcile, append([]string{"groups", "--group", group}, conn...)...); err != nil || code != 1 {
		return fmt.Errorf("kreconcile groups: exit %d, want 1 (a partition is behind): %v", code, err)
	}

	backup := filepath.Join(os.TempDir(), fmt.Sprintf("kmigrate-demo-backup-%d.json", time.Now().UnixNano()))
	defer os.Remove(backup)
	step("kreconcile groups --apply: commit the exact offset (the group is empty; a backup is written first)")
	if code, err := tool(ctx, kreconcile, append([]string{"groups", "--group", group, "--apply", "--backup", backup}, conn...)...); err != nil || code > 1 {
		return fmt.Errorf("kreconcile groups --apply: exit %d: %v", code, err)
	}
	step("kreconcile groups again: nothing left to fix")
	if code, err := tool(ctx, kreconcile, append([]string{"groups", "--group", group}, conn...)...); err != nil || code != 0 {
		return fmt.Errorf("kreconcile groups after --apply: exit %d, want 0 (exact): %v", code, err)
	}
	if err := printLags(ctx, sc, dc); err != nil {
		return err
	}

	step("the group switches to the target and consumes")
	if err := switchAndConsume(ctx, dst.ListenAddrs()); err != nil {
		return err
	}
	if err := mirrorWithKmirror(ctx, bin, sc); err != nil {
		return err
	}
	step("done in %.1fs: source lag %d, target lag %d before the fix; exact after it (kreconcile on MM2's copy, kmirror on its own)", time.Since(start).Seconds(), late, late+consumed-int(mm2Target))
	return nil
}

// mirrorWithKmirror mirrors the source to a third, empty cluster with kmirror, whose group
// offset sync writes the exact target offset itself: no kreconcile step. The fence is off
// (<target>.exactly.once.source.support=disabled) so that the target's offsets are the
// source's and the lags compare one to one; with it on, commit markers take target offsets.
func mirrorWithKmirror(ctx context.Context, bin string, sc *kgo.Client) error {
	nw, err := kfake.NewCluster(kfake.NumBrokers(1))
	if err != nil {
		return fmt.Errorf("start the third cluster: %w", err)
	}
	defer nw.Close()
	nc, err := kgo.NewClient(kgo.SeedBrokers(nw.ListenAddrs()...))
	if err != nil {
		return err
	}
	defer nc.Close()
	props := filepath.Join(os.TempDir(), fmt.Sprintf("kmigrate-demo-mm2-%d.properties", time.Now().UnixNano()))
	defer os.Remove(props)
	text := fmt.Sprintf(`clusters=old,new
old.bootstrap.servers=%s
new.bootstrap.servers=%s
old->new.enabled=true
old->new.topics=%s
replication.policy.class=org.apache.kafka.connect.mirror.IdentityReplicationPolicy
sync.group.offsets.enabled=true
sync.group.offsets.interval.seconds=1
emit.checkpoints.interval.seconds=1
refresh.groups.interval.seconds=1
new.exactly.once.source.support=disabled
offset-syncs.topic.location=target
replication.factor=1
offset-syncs.topic.replication.factor=1
checkpoints.topic.replication.factor=1
`, strings.Join(sc.OptValue(kgo.SeedBrokers).([]string), ","), strings.Join(nw.ListenAddrs(), ","), topic)
	if err := os.WriteFile(props, []byte(text), 0o600); err != nil {
		return err
	}
	step("the same idle group with kmirror as the mirror, to a third, empty cluster: no kreconcile")
	fmt.Printf("$ kmirror run --mm2-config %s --flow old->new   (identity policy, group offsets synced every second)\n", filepath.Base(props))
	cmd := exec.CommandContext(ctx, filepath.Join(bin, "kmirror"), "run", "--mm2-config", props, "--flow", "old->new", "--log-level", "error")
	cmd.Stdout, cmd.Stderr = os.Stdout, os.Stderr
	if err := cmd.Start(); err != nil {
		return fmt.Errorf("run kmirror (build it with make build): %w", err)
	}
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	stop := func() error {
		cmd.Process.Signal(syscall.SIGTERM)
		return <-exited
	}
	adm := kadm.NewClient(nc)
	for {
		comm, cerr := adm.FetchOffsets(ctx, group)
		ends, eerr := adm.ListEndOffsets(ctx, topic)
		c, okc := comm.Lookup(topic, 0)
		e, oke := ends.Lookup(topic, 0)
		if cerr == nil && eerr == nil && okc && oke && c.At == consumed && e.Offset == consumed+late {
			break
		}
		select {
		case err := <-exited:
			return fmt.Errorf("kmirror exited before it synced group %s: %v", group, err)
		case <-ctx.Done():
			stop()
			return fmt.Errorf("kmirror did not sync group %s in time: %w", group, ctx.Err())
		case <-time.After(100 * time.Millisecond):
		}
	}
	if err := stop(); err != nil {
		return fmt.Errorf("kmirror after SIGTERM: %w", err)
	}
	if err := printLags(ctx, sc, nc); err != nil {
		return err
	}
	step("the group switches to kmirror's target and consumes")
	return switchAndConsume(ctx, nw.ListenAddrs())
}

// switchAndConsume runs the group on a target cluster and checks that it reads exactly the
// records it had not consumed on the source: none again, none skipped.
func switchAndConsume(ctx context.Context, addrs []string) error {
	got, err := consumeGroup(ctx, addrs, late)
	if err != nil {
		return err
	}
	redelivered := 0
	want := map[string]bool{}
	for i := consumed; i < consumed+late; i++ {
		want[value(i)] = true
	}
	for _, v := range got {
		if !want[v] {
			redelivered++
		}
		delete(want, v)
	}
	skipped := len(want)
	fmt.Printf("read %d records on the target: %s..%s; re-delivered %d, skipped %d\n",
		len(got), got[0], got[len(got)-1], redelivered, skipped)
	if redelivered != 0 || skipped != 0 {
		return errors.New("the target group did not read exactly the unconsumed records")
	}
	return nil
}

func value(i int) string { return fmt.Sprintf("record-%03d", i) }

func produce(ctx context.Context, cl *kgo.Client, from, n int) error {
	recs := make([]*kgo.Record, 0, n)
	for i := from; i < from+n; i++ {
		recs = append(recs, &kgo.Record{Topic: topic, Key: []byte(fmt.Sprintf("key-%d", i%7)), Value: []byte(value(i)),
			Headers: []kgo.RecordHeader{{Key: "source", Value: []byte("demo")}}})
	}
	if err := cl.ProduceSync(ctx, recs...).FirstErr(); err != nil {
		return fmt.Errorf("produce to source topic %s: %w", topic, err)
	}
	return nil
}

// consumeAndCommit runs the group on the source until it has consumed n records and committed.
func consumeAndCommit(ctx context.Context, seeds []string, n int) error {
	cl, err := kgo.NewClient(kgo.SeedBrokers(seeds...), kgo.ConsumerGroup(group), kgo.ConsumeTopics(topic),
		kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()), kgo.DisableAutoCommit())
	if err != nil {
		return err
	}
	defer cl.Close()
	for seen := 0; seen < n; {
		fs := cl.PollFetches(ctx)
		if err := fs.Err0(); err != nil {
			return fmt.Errorf("consume %s on the source: %w", topic, err)
		}
		seen += fs.NumRecords()
	}
	if err := cl.CommitUncommittedOffsets(ctx); err != nil {
		return fmt.Errorf("commit group %s on the source: %w", group, err)
	}
	return nil
}

// consumeGroup runs the group on the target until it has read n records or goes quiet.
func consumeGroup(ctx context.Context, seeds []string, n int) ([]string, error) {
	cl, err := kgo.NewClient(kgo.SeedBrokers(seeds...), kgo.ConsumerGroup(group), kgo.ConsumeTopics(topic), kgo.DisableAutoCommit())
	if err != nil {
		return nil, err
	}
	defer cl.Close()
	var out []string
	for len(out) < n {
		pctx, cancel := context.WithTimeout(ctx, 5*time.Second)
		fs := cl.PollFetches(pctx)
		cancel()
		if pctx.Err() != nil && fs.NumRecords() == 0 {
			break // quiet: nothing more to read
		}
		fs.EachRecord(func(r *kgo.Record) { out = append(out, string(r.Value)) })
	}
	if len(out) == 0 {
		return nil, errors.New("the target group read nothing")
	}
	return out, nil
}

// copyTopic copies every record of the source topic to the target topic, in order.
func copyTopic(ctx context.Context, sc, dc *kgo.Client) (int, error) {
	end, err := kadm.NewClient(sc).ListEndOffsets(ctx, topic)
	if err != nil {
		return 0, err
	}
	want := end[topic][0].Offset
	rd, err := kgo.NewClient(kgo.SeedBrokers(sc.OptValue(kgo.SeedBrokers).([]string)...),
		kgo.ConsumePartitions(map[string]map[int32]kgo.Offset{topic: {0: kgo.NewOffset().AtStart()}}))
	if err != nil {
		return 0, err
	}
	defer rd.Close()
	n := 0
	for int64(n) < want {
		fs := rd.PollFetches(ctx)
		if err := fs.Err0(); err != nil {
			return n, err
		}
		var out []*kgo.Record
		fs.EachRecord(func(r *kgo.Record) {
			out = append(out, &kgo.Record{Topic: topic, Partition: r.Partition, Key: r.Key, Value: r.Value, Headers: r.Headers, Timestamp: r.Timestamp})
		})
		if err := dc.ProduceSync(ctx, out...).FirstErr(); err != nil {
			return n, fmt.Errorf("produce to target topic %s: %w", topic, err)
		}
		n += len(out)
	}
	return n, nil
}

// leaveAsMM2 writes what MM2 3.7.1 leaves on the target for the idle group: the offset sync,
// the checkpoint, and the synced group offset.
func leaveAsMM2(ctx context.Context, dc *kgo.Client, g, u, translated int64) error {
	adm := kadm.NewClient(dc)
	syncs, checkpoints := "mm2-offset-syncs.source.internal", "source.checkpoints.internal"
	if _, err := adm.CreateTopics(ctx, 1, 1, map[string]*string{"cleanup.policy": kadm.StringPtr("compact")}, syncs, checkpoints); err != nil {
		return err
	}
	s := mm2.OffsetSync{Topic: topic, Partition: 0, Upstream: u, Downstream: u}
	c := mm2.Checkpoint{Group: group, Topic: topic, Partition: 0, Upstream: g, Downstream: translated}
	if err := dc.ProduceSync(ctx,
		&kgo.Record{Topic: syncs, Partition: 0, Key: s.Key(), Value: s.Value()},
		&kgo.Record{Topic: checkpoints, Partition: 0, Key: c.Key(), Value: c.Value()},
	).FirstErr(); err != nil {
		return fmt.Errorf("write MM2 offset sync and checkpoint: %w", err)
	}
	var offs kadm.Offsets
	offs.Add(kadm.Offset{Topic: topic, Partition: 0, At: translated, LeaderEpoch: -1})
	resp, err := adm.CommitOffsets(ctx, group, offs)
	if err == nil {
		err = resp.Error()
	}
	if err != nil {
		return fmt.Errorf("commit MM2's translated offset for group %s on the target: %w", group, err)
	}
	return nil
}

func printLags(ctx context.Context, sc, dc *kgo.Client) error {
	for _, side := range []struct {
		name string
		cl   *kgo.Client
	}{{"source", sc}, {"target", dc}} {
		adm := kadm.NewClient(side.cl)
		ends, err := adm.ListEndOffsets(ctx, topic)
		if err != nil {
			return err
		}
		comm, err := adm.FetchOffsets(ctx, group)
		if err != nil {
			return err
		}
		c, _ := comm.Lookup(topic, 0)
		e, _ := ends.Lookup(topic, 0)
		fmt.Printf("%s: committed %d, end %d, lag %d\n", side.name, c.At, e.Offset, e.Offset-c.At)
	}
	return nil
}

// readFrom reads target records [from, to) without a group, so nothing is committed.
func readFrom(ctx context.Context, dc *kgo.Client, from, to int64) ([]string, error) {
	rd, err := kgo.NewClient(kgo.SeedBrokers(dc.OptValue(kgo.SeedBrokers).([]string)...),
		kgo.ConsumePartitions(map[string]map[int32]kgo.Offset{topic: {0: kgo.NewOffset().At(from)}}))
	if err != nil {
		return nil, err
	}
	defer rd.Close()
	var out []string
	for int64(len(out)) < to-from {
		fs := rd.PollFetches(ctx)
		if err := fs.Err0(); err != nil {
			return nil, err
		}
		fs.EachRecord(func(r *kgo.Record) {
			if r.Offset < to {
				out = append(out, string(r.Value))
			}
		})
	}
	return out, nil
}

// tool runs one of our binaries with its output on ours and returns its exit code.
func tool(ctx context.Context, path string, args ...string) (int, error) {
	fmt.Printf("$ %s %s\n", filepath.Base(path), strings.Join(args, " "))
	cmd := exec.CommandContext(ctx, path, args...)
	cmd.Stdout, cmd.Stderr = os.Stdout, os.Stderr
	err := cmd.Run()
	var ee *exec.ExitError
	if errors.As(err, &ee) {
		return ee.ExitCode(), nil
	}
	if err != nil {
		return -1, fmt.Errorf("run %s (build it with make build): %w", path, err)
	}
	return 0, nil
}
