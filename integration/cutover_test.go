package integration

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/kmigrate/kmigrate/integration/cluster"
	"github.com/kmigrate/kmigrate/reconcile"
)

// TestCutover is the migration's end, on the seed case, with real brokers and kmirror: Kafka
// 2.3.0 (ZooKeeper, "old") to 3.7.1 (KRaft, "new"), or the pair $KMIGRATE_PAIR names
// (pair_test.go).
//
//  1. 120 records on old; the seed group consumes all of them, a second group 50, both commit
//     and stay members; 30 more records; kmirror old->new mirrors the 150.
//  2. The way back is prepared before the producers move: kmirror old->new is stopped (it has
//     copied everything) and kmirror new->old starts, identity policy, at the end of the new
//     topic (auto.offset.reset=latest): it must not copy back the records the forward mirror
//     wrote (nor the forward flow's internal topics, which its topic filter leaves out); with
//     the identity policy both flows running would copy records in a circle.
//  3. The producers move: 60 records produced on new, copied to old by the reverse mirror.
//  4. kreconcile groups --follow --apply: both groups wait while they have members on old;
//     the seed group stops, is applied alone (the backup then holds it alone); the second
//     stops, is applied; exit 0. Consumers on new read exactly what each group had not
//     consumed: the seed group part of it (50 records), the second group all of it.
//  5. Failback: kreconcile groups --flow new->old --apply; consumers on old read exactly what
//     the groups had consumed neither on old nor on new: the seed group the rest, the second
//     group nothing.
func TestCutover(t *testing.T) {
	bedParallel(t)
	oldV, newV := bedPair(t)
	old := cluster.StartT(t, cluster.Spec{Version: oldV, Name: "cutover-old"})
	nw := cluster.StartT(t, cluster.Spec{Version: newV, Name: "cutover-new"})
	if t.Failed() || t.Skipped() {
		return
	}
	bins := bedBuild(t, "kmirror", "kreconcile")
	kmirror, kreconcile := filepath.Join(bins, "kmirror"), filepath.Join(bins, "kreconcile")
	ctx := bedCtx(t, 10*time.Minute)
	topic, gA, gB := seedTopic, seedGroup, "test-consumer-kafkaupgrade-110"
	bedCreateTopic(t, old, topic, 1, nil)
	rec := func(prefix string, from, to int) []*kgo.Record {
		var out []*kgo.Record
		for i := from; i < to; i++ {
			out = append(out, &kgo.Record{Key: fmt.Appendf(nil, "k%d", i%10), Value: fmt.Appendf(nil, "%s-%d", prefix, i)})
		}
		return out
	}
	var all [][]byte // every record ever produced, in order (one partition)
	produce := func(c cluster.Cluster, recs []*kgo.Record) {
		bedProduce(ctx, t, c, topic, 0, recs)
		for _, r := range recs {
			all = append(all, r.Value)
		}
	}

	// 1. The seed case on old, with two consumer groups still members.
	produce(old, rec("old", 0, 120))
	consA, readOldA := cutMember(ctx, t, old, gA, topic, 120)
	consB, readOldB := cutMember(ctx, t, old, gB, topic, 50)
	produce(old, rec("old", 120, 150))
	props := cutProperties(t, old, nw, topic)
	fwd := mirStart(t, kmirror, props, "old->new", "kmirror-old-new")
	bedWaitFor(ctx, t, 500*time.Millisecond, "kmirror old->new to copy 150 records", func() string {
		return mirBehind(ctx, t, nw, topic, 150)
	})
	fwd.term(t)

	// 2. The way back, before the producers move.
	rev := mirStart(t, kmirror, props, "new->old", "kmirror-new-old")
	bedWaitFor(ctx, t, 200*time.Millisecond, "kmirror new->old to own the partition", func() string {
		if n := rev.owned(); n != 1 {
			return fmt.Sprintf("it owns %d partitions", n)
		}
		return ""
	})

	// 3. The producers move.
	produce(nw, rec("new", 0, 60))
	bedWaitFor(ctx, t, 500*time.Millisecond, "kmirror new->old to copy the 60 new records", func() string {
		return mirBehind(ctx, t, old, topic, 210)
	})

	// 4. The consumer cutover, one group at a time.
	backup := filepath.Join(t.TempDir(), "cutover.json")
	follow := cutStart(t, kreconcile, "groups", "--mm2-config", props, "--flow", "old->new", "--group", gA+"|"+gB,
		"--follow", "--apply", "--backup", backup, "--interval", "1s", "--timeout", "4m")
	for _, g := range []string{gA, gB} {
		follow.waitFor(ctx, t, fmt.Sprintf("group %q waiting: its consumers still run on the source", g))
	}
	consA.Close() // the seed group stops on old
	follow.waitFor(ctx, t, fmt.Sprintf("group %q is ready on the target, exactly", gA))
	b, err := reconcile.ReadBackup(backup)
	if err != nil {
		t.Fatalf("backup after the first group: %v", err)
	}
	for _, e := range b.Entries {
		if e.Group != gA {
			t.Errorf("backup after the first group holds %s %s/%d, want only %s", e.Group, e.Topic, e.Partition, gA)
		}
	}
	if strings.Contains(follow.stderr(), fmt.Sprintf("group %q is ready", gB)) {
		t.Errorf("%s ready while its consumer still runs on old:\n%s", gB, follow.stderr())
	}
	consB.Close()
	if code := follow.wait(t); code != 0 {
		t.Fatalf("kreconcile --follow --apply: exit %d\nstderr:\n%s\nstdout:\n%s", code, follow.stderr(), follow.stdout())
	}
	t.Logf("kreconcile groups --follow --apply, stderr:\n%s", follow.stderr())
	if b, err = reconcile.ReadBackup(backup); err != nil || len(b.Entries) != 2 {
		t.Fatalf("backup at the end: %v, %+v; want both groups", err, b)
	}

	notYet := func(consumed ...[][]byte) [][]byte {
		var out [][]byte
		for _, v := range all {
			if !slices.ContainsFunc(consumed, func(c [][]byte) bool { return slices.ContainsFunc(c, func(x []byte) bool { return bytes.Equal(x, v) }) }) {
				out = append(out, v)
			}
		}
		return out
	}
	wantB := notYet(readOldB)
	readNewB := cutConsume(ctx, t, nw, gB, topic, -1)
	t.Logf("cutover %s: consumed %d on old; read %d on new (want %d: 100 old not consumed + 60 new)", gB, len(readOldB), len(readNewB), len(wantB))
	cutSame(t, gB+" on new after the cutover", readNewB, wantB)
	wantA := notYet(readOldA)
	readNewA := cutConsume(ctx, t, nw, gA, topic, 50)
	t.Logf("cutover %s: consumed %d on old; read %d on new, the first %d of the %d it had left", gA, len(readOldA), len(readNewA), len(readNewA), len(wantA))
	cutSame(t, gA+" on new after the cutover (a prefix)", readNewA, wantA[:min(50, len(wantA))])

	// 5. Failback to old.
	code, out, errOut := bedOutput(t, kreconcile, "groups", "--mm2-config", props, "--flow", "new->old", "--group", gA+"|"+gB,
		"--apply", "--backup", filepath.Join(t.TempDir(), "failback.json"))
	t.Logf("kreconcile groups --flow new->old --apply: exit %d\n%s%s", code, out, errOut)
	if code != 0 {
		t.Fatalf("failback apply: exit %d, want 0", code)
	}
	backA := cutConsume(ctx, t, old, gA, topic, -1)
	wantBackA := notYet(readOldA, readNewA)
	t.Logf("failback %s: read %d on old (want %d: consumed neither on old nor on new)", gA, len(backA), len(wantBackA))
	cutSame(t, gA+" on old after the failback", backA, wantBackA)
	backB := cutConsume(ctx, t, old, gB, topic, -1)
	t.Logf("failback %s: read %d on old (want 0: it consumed everything on new)", gB, len(backB))
	cutSame(t, gB+" on old after the failback", backB, nil)

	// What the reverse mirror must not copy back: the records the forward one wrote, and the
	// forward flow's internal topics.
	if n := sumRecords(ctx, t, old, topic); n != 210 {
		t.Errorf("old holds %d records of %s, want 210 (150 produced there + 60 copied back)", n, topic)
	}
	topics, err := bedAdmin(t, old).ListTopics(ctx)
	if err != nil {
		t.Fatalf("list topics on old: %v", err)
	}
	for _, name := range topics.Names() {
		if strings.Contains(name, ".old.internal") || strings.HasPrefix(name, "old.") {
			t.Errorf("old has topic %s: an internal topic of the forward flow was copied back", name)
		}
	}
	rev.term(t)
}

// cutProperties is an mm2.properties with both flows between old and new (identity policy,
// offset syncs on the target); the reverse flow starts new partitions at their end.
func cutProperties(t *testing.T, old, nw cluster.Cluster, topic string) string {
	t.Helper()
	text := bedProperties(old, nw, "old", "new", topic,
		"new->old.enabled=true",
		"new->old.topics="+topic,
		"new.consumer.auto.offset.reset=latest",
		"emit.checkpoints.enabled=false",
		"refresh.topics.interval.seconds=5",
		"old.consumer.session.timeout.ms=6000",
		"new.consumer.session.timeout.ms=6000",
		"new.producer.linger.ms=10",
		"old.producer.linger.ms=10")
	path := filepath.Join(t.TempDir(), "mm2.properties")
	if err := os.WriteFile(path, []byte(text), 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

// cutMember is a consumer of topic in group on c that reads n records from the start,
// commits them and stays a member (Close leaves the group). It returns the values read.
func cutMember(ctx context.Context, t *testing.T, c cluster.Cluster, group, topic string, n int) (*kgo.Client, [][]byte) {
	t.Helper()
	cl, err := kgo.NewClient(kgo.SeedBrokers(c.Bootstrap()...), kgo.ConsumerGroup(group), kgo.ConsumeTopics(topic),
		kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()), kgo.DisableAutoCommit(), kgo.FetchIsolationLevel(kgo.ReadCommitted()))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(cl.Close)
	var recs []*kgo.Record
	for len(recs) < n && ctx.Err() == nil {
		recs = append(recs, cl.PollRecords(ctx, n-len(recs)).Records()...)
	}
	if len(recs) != n {
		t.Fatalf("group %s on %s read %d records, want %d", group, c.Name(), len(recs), n)
	}
	if err := cl.CommitRecords(ctx, recs...); err != nil {
		t.Fatalf("group %s on %s: commit: %v", group, c.Name(), err)
	}
	return cl, rcValues(recs)
}

// cutConsume is an application of group on c: it reads topic (one partition) from the group's
// committed offset, read_committed, n records (all up to the last stable offset when n < 0),
// commits what it read and leaves. It returns the values read.
func cutConsume(ctx context.Context, t *testing.T, c cluster.Cluster, group, topic string, n int) [][]byte {
	t.Helper()
	adm := bedAdmin(t, c)
	offs, err := adm.FetchOffsets(ctx, group)
	if err != nil {
		t.Fatalf("fetch offsets of %s on %s: %v", group, c.Name(), err)
	}
	start, ok := offs.Lookup(topic, 0)
	if !ok || start.At < 0 {
		t.Fatalf("group %s has no commit on %s/0 on %s", group, topic, c.Name())
	}
	ends, err := adm.ListCommittedOffsets(ctx, topic)
	if err != nil {
		t.Fatalf("last stable offsets of %s on %s: %v", topic, c.Name(), err)
	}
	end, _ := ends.Lookup(topic, 0)
	cl, err := kgo.NewClient(kgo.SeedBrokers(c.Bootstrap()...), kgo.ConsumerGroup(group), kgo.ConsumeTopics(topic),
		kgo.DisableAutoCommit(), kgo.FetchIsolationLevel(kgo.ReadCommitted()), kgo.KeepControlRecords())
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	var read []*kgo.Record
	for last := start.At - 1; last < end.Offset-1 && (n < 0 || len(read) < n); {
		fs := cl.PollFetches(ctx)
		if ctx.Err() != nil {
			t.Fatalf("group %s on %s: read %d records, at offset %d of %d when the deadline came", group, c.Name(), len(read), last, end.Offset)
		}
		fs.EachError(func(tp string, p int32, err error) {
			t.Errorf("group %s on %s: fetch %s/%d: %v", group, c.Name(), tp, p, err)
		})
		for _, r := range fs.Records() {
			if r.Offset >= end.Offset || n >= 0 && len(read) == n {
				break
			}
			last = r.Offset
			if !r.Attrs.IsControl() {
				read = append(read, r)
			}
		}
	}
	if len(read) > 0 {
		if err := cl.CommitRecords(ctx, read...); err != nil {
			t.Fatalf("group %s on %s: commit: %v", group, c.Name(), err)
		}
	}
	return rcValues(read)
}

// cutSame fails unless got is want, in order: none twice, none skipped, none extra.
func cutSame(t *testing.T, what string, got, want [][]byte) {
	t.Helper()
	seen := map[string]int{}
	for _, v := range got {
		seen[string(v)]++
	}
	var twice []string
	for v, n := range seen {
		if n > 1 {
			twice = append(twice, v)
		}
	}
	var skipped []string
	for _, v := range want {
		if seen[string(v)] == 0 {
			skipped = append(skipped, string(v))
		}
	}
	equal := len(got) == len(want) && slices.EqualFunc(got, want, bytes.Equal)
	if !equal || len(twice) > 0 || len(skipped) > 0 {
		t.Errorf("%s: read %d records, want %d; twice %v; skipped %v; first read %s", what, len(got), len(want), twice, skipped, first(got))
	}
}

func first(vs [][]byte) string {
	if len(vs) == 0 {
		return "none"
	}
	return fmt.Sprintf("%q, last %q", vs[0], vs[len(vs)-1])
}

// cutProc is a command running in the background with its output captured.
type cutProc struct {
	cmd      *exec.Cmd
	mu       sync.Mutex
	out, err bytes.Buffer
	done     chan struct{}
}

type lockedWriter struct {
	mu *sync.Mutex
	b  *bytes.Buffer
}

func (w lockedWriter) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.b.Write(p)
}

func cutStart(t *testing.T, bin string, args ...string) *cutProc {
	t.Helper()
	p := &cutProc{cmd: exec.Command(bin, args...), done: make(chan struct{})}
	p.cmd.Stdout, p.cmd.Stderr = lockedWriter{&p.mu, &p.out}, lockedWriter{&p.mu, &p.err}
	p.cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	if err := p.cmd.Start(); err != nil {
		t.Fatalf("start %s: %v", filepath.Base(bin), err)
	}
	go func() {
		p.cmd.Wait()
		close(p.done)
	}()
	t.Cleanup(func() {
		if p.cmd.ProcessState == nil {
			p.cmd.Process.Kill()
		}
	})
	return p
}

func (p *cutProc) stderr() string { p.mu.Lock(); defer p.mu.Unlock(); return p.err.String() }
func (p *cutProc) stdout() string { p.mu.Lock(); defer p.mu.Unlock(); return p.out.String() }

// waitFor waits until the process printed s on standard error; it fails if it exits first.
func (p *cutProc) waitFor(ctx context.Context, t *testing.T, s string) {
	t.Helper()
	bedWaitFor(ctx, t, 200*time.Millisecond, fmt.Sprintf("kreconcile to print %q", s), func() string {
		if strings.Contains(p.stderr(), s) {
			return ""
		}
		select {
		case <-p.done:
			t.Fatalf("kreconcile exited (%v) before printing %q:\n%s\n%s", p.cmd.ProcessState, s, p.stderr(), p.stdout())
		default:
		}
		return "stderr so far:\n" + p.stderr()
	})
}

// wait waits for the exit (3 minutes at most) and returns the exit code.
func (p *cutProc) wait(t *testing.T) int {
	t.Helper()
	select {
	case <-p.done:
	case <-time.After(3 * time.Minute):
		t.Fatalf("kreconcile still runs after 3 minutes:\n%s", p.stderr())
	}
	return p.cmd.ProcessState.ExitCode()
}
