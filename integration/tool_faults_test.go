package integration

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/kmigrate/kmigrate/integration/cluster"
	"github.com/kmigrate/kmigrate/reconcile"
	"github.com/kmigrate/kmigrate/verify"
)

// Faults around the tools that are not a mirror. kverify during a broker
// restart must finish with the right verdict or exit 2 naming what failed, never a wrong
// verdict; kreconcile groups --apply killed -9 half-way must leave a complete backup, finish
// when run again, and roll back exactly.

// TestReconcileApplyKilled applies exact offsets for 200 groups, SIGKILLs kreconcile after
// its first 20 groups are committed, runs it again, then rolls the first run's backup back.
// The backup is written whole before the first commit, so it must name every group partition
// the first run meant to change, with the offset before; the second run must commit the rest;
// the rollback must put every one of the 200 groups back where it was, and leave the source
// untouched.
func TestReconcileApplyKilled(t *testing.T) {
	src := cluster.StartT(t, cluster.Spec{Version: cluster.V230, Name: "source"})
	dst := cluster.StartT(t, cluster.Spec{Version: cluster.V371, Name: "target"})
	if t.Failed() || t.Skipped() {
		return
	}
	ctx := bedCtx(t, 8*time.Minute)
	run := fmt.Sprintf("%x", time.Now().UnixNano())
	topic := "rckill-" + run
	const parts, groups = 2, 200
	bedCreateTopic(t, src, topic, parts, nil)
	bedCreateTopic(t, dst, topic, parts, nil)
	for p := range int32(parts) {
		recs := rcRecords(fmt.Sprintf("v%d-%s", p, run), "k", 0, 300)
		bedProduce(ctx, t, src, topic, p, recs)
		var copies []*kgo.Record // the copy replays 5 records at 40: E(G) = G+5 above it
		for _, i := range append(append(rcSeq(0, 40), rcSeq(35, 40)...), rcSeq(40, 300)...) {
			copies = append(copies, &kgo.Record{Key: recs[i].Key, Value: recs[i].Value})
		}
		bedProduce(ctx, t, dst, topic, p, copies)
	}
	prefix := "rckill-" + run + "-"
	before := map[string]int64{} // group/partition -> target commit before any apply
	for i := range groups {
		g := fmt.Sprintf("%s%03d", prefix, i)
		for p := range int32(parts) {
			rcCommit(t, src, g, topic, p, int64(100+i), "m")
			rcCommit(t, dst, g, topic, p, int64(50+i%7), "mm2")
			before[fmt.Sprintf("%s/%d", g, p)] = int64(50 + i%7)
		}
	}
	propsFile := filepath.Join(t.TempDir(), "mm2.properties")
	if err := os.WriteFile(propsFile, []byte(rcProperties(src, dst, topic)), 0o600); err != nil {
		t.Fatal(err)
	}
	kreconcile := filepath.Join(bedBuild(t, "kreconcile"), "kreconcile")
	args := []string{"groups", "--mm2-config", propsFile, "--group", regexp.QuoteMeta(prefix) + ".*", "--apply"}

	backup1 := filepath.Join(t.TempDir(), "backup-1.json")
	killedAt := rcApplyKilled(ctx, t, kreconcile, append(args, "--backup", backup1), 20)
	applied := rcGroupCommits(ctx, t, dst, prefix, topic)
	moved := 0
	for k, v := range applied {
		if v != before[k] {
			moved++
		}
	}
	t.Logf("killed after %d groups were logged as committed; %d of %d group partitions moved", killedAt, moved, groups*parts)
	if moved == 0 || moved >= groups*parts {
		t.Fatalf("the kill was not half-way: %d of %d group partitions moved", moved, groups*parts)
	}

	b, err := reconcile.ReadBackup(backup1)
	if err != nil {
		t.Fatalf("the backup of the killed run is not valid: %v", err)
	}
	if len(b.Entries) != groups*parts {
		t.Fatalf("the backup of the killed run holds %d entries, want every planned group partition (%d)", len(b.Entries), groups*parts)
	}
	for _, e := range b.Entries {
		k := fmt.Sprintf("%s/%d", e.Group, e.Partition)
		if e.Offset == nil || *e.Offset != before[k] || e.Committed == nil {
			t.Fatalf("backup entry %s: previous %s, committed %s; want previous %d and the planned commit", k, fmtP(e.Offset), fmtP(e.Committed), before[k])
		}
	}

	code, out, errOut := bedOutput(t, kreconcile, append(args, "--backup", filepath.Join(t.TempDir(), "backup-2.json"), "--format", "json")...)
	if code != 0 {
		t.Fatalf("the rerun exited %d, want 0 (every group exact)\n%s\n%s", code, out, errOut)
	}
	final := rcGroupCommits(ctx, t, dst, prefix, topic)
	for _, e := range b.Entries {
		k := fmt.Sprintf("%s/%d", e.Group, e.Partition)
		if final[k] != *e.Committed {
			t.Fatalf("after the rerun %s is at %d, want E(G) = %d", k, final[k], *e.Committed)
		}
	}
	again, _, _ := bedOutput(t, kreconcile, append(args, "--backup", filepath.Join(t.TempDir(), "backup-3.json"))...)
	if again != 0 || !maps.Equal(rcGroupCommits(ctx, t, dst, prefix, topic), final) {
		t.Fatalf("a third run changed something or did not exit 0 (exit %d)", again)
	}

	code, out, errOut = bedOutput(t, kreconcile, "rollback", "--mm2-config", propsFile, "--backup", backup1)
	if code != 0 {
		t.Fatalf("rollback of the killed run's backup exited %d\n%s\n%s", code, out, errOut)
	}
	if got := rcGroupCommits(ctx, t, dst, prefix, topic); !maps.Equal(got, before) {
		t.Fatalf("after rollback %d group partitions, want the %d from before, exactly", len(got), len(before))
	}
	srcNow := rcGroupCommits(ctx, t, src, prefix, topic)
	for i := range groups {
		for p := range int32(parts) {
			k := fmt.Sprintf("%s%03d/%d", prefix, i, p)
			if srcNow[k] != int64(100+i) {
				t.Fatalf("source commit %s is %d, want %d (untouched)", k, srcNow[k], 100+i)
			}
		}
	}
}

// rcApplyKilled runs kreconcile with args (which include --apply) and --verbose, and sends it
// SIGKILL once its log names n distinct committed groups. It returns how many it had seen.
func rcApplyKilled(ctx context.Context, t *testing.T, bin string, args []string, n int) int {
	t.Helper()
	cmd := exec.CommandContext(ctx, bin, append(args, "--verbose")...)
	stderr, err := cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	seen := map[string]bool{}
	group := regexp.MustCompile(`msg=committed group=(\S+)`)
	sc := bufio.NewScanner(stderr)
	for sc.Scan() {
		if m := group.FindStringSubmatch(sc.Text()); m != nil {
			seen[m[1]] = true
			if len(seen) >= n {
				_ = cmd.Process.Kill()
				break
			}
		}
	}
	go func() { // let the pipe drain so Wait returns
		for sc.Scan() {
		}
	}()
	err = cmd.Wait()
	if len(seen) < n {
		t.Fatalf("kreconcile ended (%v) after %d committed groups, before the kill at %d", err, len(seen), n)
	}
	return len(seen)
}

// rcGroupCommits returns the commits on topic of every group named prefix* on c (source or
// target), by "group/partition".
func rcGroupCommits(ctx context.Context, t *testing.T, c cluster.Cluster, prefix, topic string) map[string]int64 {
	t.Helper()
	adm := bedAdmin(t, c)
	listed, err := adm.ListGroups(ctx)
	if err != nil {
		t.Fatalf("list groups on %s: %v", c.Name(), err)
	}
	var names []string
	for _, g := range listed.Groups() {
		if strings.HasPrefix(g, prefix) {
			names = append(names, g)
		}
	}
	out := map[string]int64{}
	for _, g := range names {
		offs, err := adm.FetchOffsets(ctx, g)
		if err == nil {
			err = offs.Error()
		}
		if err != nil {
			t.Fatalf("fetch offsets of %s on %s: %v", g, c.Name(), err)
		}
		offs.Each(func(o kadm.OffsetResponse) {
			if o.Topic == topic {
				out[fmt.Sprintf("%s/%d", g, o.Partition)] = o.At
			}
		})
	}
	return out
}

// TestVerifyBrokerRestart runs kverify diff on a 3-broker target (replication factor 3) while
// the leader of one of its partitions is killed and restarted, as kverify starts and while it
// reads, and on a one-broker source while that broker is, over an identical copy and over a
// copy missing one record. On the target each run must give the right verdict (0 and
// identical; 1 with exactly that record missing); on the source it may also exit 2 naming the
// cluster and the broker. A wrong verdict fails the test, and so does a run that ended before
// the broker died. A kill as kverify starts must not make it exit 2 on the target: ListOffsets
// to the dead leader is asked again (verify.listRetrying).
func TestVerifyBrokerRestart(t *testing.T) {
	bedParallelLong(t)
	src := cluster.StartT(t, cluster.Spec{Version: cluster.V230, Name: "source"})
	dst := cluster.StartT(t, cluster.Spec{Version: cluster.V371, Name: "target", Brokers: 3})
	if t.Failed() || t.Skipped() {
		return
	}
	ctx := bedCtx(t, 10*time.Minute)
	run := fmt.Sprintf("%x", time.Now().UnixNano())
	const parts, perPart = 3, 200000
	same, lossy := "vfrestart-same-"+run, "vfrestart-lossy-"+run
	for _, topic := range []string{same, lossy} {
		bedCreateTopic(t, src, topic, parts, nil)
		bedCreateTopic(t, dst, topic, parts, nil)
	}
	base := time.Now().Add(-time.Hour)
	for p := range int32(parts) {
		recs := vfRecords(fmt.Sprintf("p%d-%s", p, run), 0, perPart, base)
		for _, topic := range []string{same, lossy} {
			bedProduce(ctx, t, src, topic, p, recs)
		}
		bedProduce(ctx, t, dst, same, p, recs)
		if p == 1 {
			bedProduce(ctx, t, dst, lossy, p, vfJoin(recs[:perPart/2], recs[perPart/2+1:]))
		} else {
			bedProduce(ctx, t, dst, lossy, p, recs)
		}
	}
	propsFile := filepath.Join(t.TempDir(), "mm2.properties")
	if err := os.WriteFile(propsFile, []byte(vfProperties(src, dst, same+","+lossy)), 0o600); err != nil {
		t.Fatal(err)
	}
	kverify := filepath.Join(bedBuild(t, "kverify"), "kverify")
	leader := func(topic string, p int32) int {
		md, err := bedAdmin(t, dst).Metadata(ctx, topic)
		if err != nil {
			t.Fatalf("target metadata: %v", err)
		}
		id := md.Topics[topic].Partitions[p].Leader
		for _, b := range md.Brokers {
			for i, addr := range dst.Bootstrap() {
				if b.NodeID == id && strings.HasSuffix(addr, fmt.Sprintf(":%d", b.Port)) {
					return i
				}
			}
		}
		t.Fatalf("no target broker leads %s/%d", topic, p)
		return -1
	}
	// On the target two of three brokers hold every partition (replication factor 3), so
	// kverify must give the verdict; on the one-broker source it may refuse instead.
	for _, c := range []struct {
		name    string
		topic   string
		c       cluster.Cluster
		broker  func() int
		reading bool // kill once kverify reads records, not as it starts
		verdict bool // exit 2 is wrong too
	}{
		{"target leader killed as kverify starts, identical copy", same, dst, func() int { return leader(same, 0) }, false, true},
		{"target leader killed while kverify reads, identical copy", same, dst, func() int { return leader(same, 1) }, true, true},
		{"target leader killed while kverify reads, one record lost", lossy, dst, func() int { return leader(lossy, 1) }, true, true},
		{"source broker killed while kverify reads, identical copy", same, src, func() int { return 0 }, true, false},
		{"source broker killed while kverify reads, one record lost", lossy, src, func() int { return 0 }, true, false},
	} {
		t.Run(c.name, func(t *testing.T) {
			// The case before restarted a broker: start from a whole cluster, every partition
			// led and every replica in sync, so that no case runs on the one before's fault.
			for _, cl := range []cluster.Cluster{src, dst} {
				vfWaitWhole(ctx, t, cl, c.topic)
			}
			i := c.broker()
			code, res, errOut, overlapped := vfDuringFault(ctx, t, kverify, propsFile, c.topic, c.c, i, c.reading)
			t.Logf("exit %d; kverify was still running when the broker died: %v", code, overlapped)
			if !overlapped {
				t.Fatalf("kverify finished before the broker was killed: the fault was not exercised\n%s", errOut)
			}
			switch {
			case code == 2 && c.verdict:
				t.Fatalf("exit 2 although two of three replicas of every partition served:\n%s", errOut)
			case code == 2:
				if addr := c.c.Bootstrap()[i]; !strings.Contains(errOut, "cluster") || !strings.Contains(errOut, addr) {
					t.Fatalf("exit 2 without naming the cluster and the broker %s:\n%s", addr, errOut)
				}
				t.Logf("refused: %s", strings.TrimSpace(errOut))
			case c.topic == same && code == 0 && res.Identical && res.Summary.Matched == int64(parts*perPart) && res.Summary.Missing == 0:
			case c.topic == lossy && code == 1 && !res.Identical && res.Summary.Missing == 1 && res.Summary.Duplicated == 0 &&
				res.Summary.Matched == int64(parts*perPart-1):
			default:
				t.Fatalf("wrong verdict: exit %d, summary %+v\n%s", code, res.Summary, errOut)
			}
		})
	}
}

// vfProcState is the state letter of process pid (R, S, T for stopped, Z for ended and not yet
// reaped), or 0 once it is gone.
func vfProcState(pid int) byte {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return 0
	}
	s := string(b)
	i := strings.LastIndexByte(s, ')') // the command name may hold spaces
	if i < 0 || i+2 >= len(s) {
		return 0
	}
	return s[i+2]
}

// vfWaitWhole waits until every partition of topic on c has a leader and all its replicas in
// sync.
func vfWaitWhole(ctx context.Context, t *testing.T, c cluster.Cluster, topic string) {
	t.Helper()
	adm := bedAdmin(t, c)
	bedWaitFor(ctx, t, 200*time.Millisecond, fmt.Sprintf("cluster %s: every partition of %s led and in sync", c.Name(), topic), func() string {
		td, err := adm.ListTopics(ctx, topic)
		if err != nil {
			return err.Error()
		}
		if err := td[topic].Err; err != nil {
			return err.Error()
		}
		for _, p := range td[topic].Partitions {
			if p.Leader < 0 || p.Err != nil || len(p.ISR) != len(p.Replicas) {
				return fmt.Sprintf("partition %d: leader %d, replicas %v, in sync %v, %v", p.Partition, p.Leader, p.Replicas, p.ISR, p.Err)
			}
		}
		return ""
	})
}

// vfReadingCPU is the CPU time after which kverify is reading records (TestVerifyBrokerRestart).
const vfReadingCPU = 400 * time.Millisecond

// vfDuringFault starts kverify diff on topic and, once kverify reads records when reading is
// set (else at once), stops it (SIGSTOP), kills broker i of c, lets kverify go on (SIGCONT)
// and restarts the broker. It returns kverify's exit code, its decoded JSON report (exit 0
// or 1), its standard error, and whether kverify was still running when the broker died:
// stopped, it cannot finish in the meantime, however fast this machine reads.
func vfDuringFault(ctx context.Context, t *testing.T, bin, propsFile, topic string, c cluster.Cluster, i int, reading bool) (int, *verify.Result, string, bool) {
	t.Helper()
	var out, errb strings.Builder
	cmd := exec.CommandContext(ctx, bin, "diff", "--mm2-config", propsFile, "--topic", topic, "--format", "json", "--parallel", "1")
	cmd.Stdout, cmd.Stderr = &out, &errb
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	pid := cmd.Process.Pid
	// Kill once kverify is reading records, not while it connects: its start-up costs it a few
	// tens of milliseconds of CPU, reading the topic about two seconds.
	if reading {
		bedWaitFor(ctx, t, 10*time.Millisecond, "kverify to be reading records", func() string {
			cpu, err := bpCPU(pid)
			if err != nil || cpu >= vfReadingCPU {
				return "" // an error: kverify has ended, which the check below reports
			}
			return fmt.Sprintf("kverify has used %s of CPU", cpu)
		})
	}
	_ = cmd.Process.Signal(syscall.SIGSTOP) // fails only if kverify has ended and been reaped
	var state byte
	bedWaitFor(ctx, t, 5*time.Millisecond, "kverify to stop (SIGSTOP)", func() string {
		state = vfProcState(pid)
		if state == 'T' || state == 'Z' || state == 0 {
			return ""
		}
		return fmt.Sprintf("kverify in state %q", state)
	})
	overlapped := state == 'T'
	if err := c.KillBroker(i); err != nil {
		t.Fatalf("kill broker %d of %s: %v", i, c.Name(), err)
	}
	if overlapped {
		if err := cmd.Process.Signal(syscall.SIGCONT); err != nil {
			t.Fatalf("continue kverify (SIGCONT): %v", err)
		}
	}
	if err := c.RestartBroker(ctx, i); err != nil {
		t.Fatalf("restart broker %d of %s: %v", i, c.Name(), err)
	}
	err := <-done
	code := 0
	if ee, ok := err.(*exec.ExitError); ok {
		code = ee.ExitCode()
	} else if err != nil {
		t.Fatalf("kverify: %v", err)
	}
	var res *verify.Result
	if code == 0 || code == 1 {
		res = &verify.Result{}
		if err := json.Unmarshal([]byte(out.String()), res); err != nil {
			t.Fatalf("kverify report: %v\n%s", err, out.String())
		}
	}
	return code, res, errb.String(), overlapped
}
