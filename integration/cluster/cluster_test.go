package cluster_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/kmigrate/kmigrate/integration/cluster"
)

func TestSpecValidation(t *testing.T) {
	tests := []struct {
		name string
		spec cluster.Spec
		want string // "" = valid
	}{
		{name: "kfake default", spec: cluster.Spec{Version: "kfake"}},
		{name: "no version", spec: cluster.Spec{}, want: "spec: empty version: want kfake, 2.3.0, 3.7.1 or 4.3.1"},
		{name: "unknown version", spec: cluster.Spec{Version: "2.8.0"}, want: `spec: unknown version "2.8.0": want kfake, 2.3.0, 3.7.1 or 4.3.1`},
		{name: "too many brokers", spec: cluster.Spec{Version: "kfake", Brokers: 7}, want: "spec: brokers 7: want 1 to 5 (1 or 3 are tested)"},
		{name: "kfake on jvm", spec: cluster.Spec{Version: "kfake", Provider: "jvm"}, want: `spec: version kfake runs only on the kfake provider, not "jvm"`},
		{name: "proxied kfake", spec: cluster.Spec{Version: "kfake", Proxied: true}, want: "spec: provider kfake, secure false: Spec.Proxied runs on the jvm provider, plaintext, only"},
		{name: "proxied secure", spec: cluster.Spec{Version: "3.7.1", Provider: "jvm", Proxied: true, Secure: true}, want: "spec: provider jvm, secure true: Spec.Proxied runs on the jvm provider, plaintext, only"},
		{name: "unknown provider", spec: cluster.Spec{Version: "3.7.1", Provider: "docker"}, want: `spec: unknown provider "docker" (from Spec.Provider or $KMIGRATE_PROVIDER): want kfake, jvm or testcontainers`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c, err := cluster.Start(context.Background(), tt.spec)
			if c != nil {
				c.Close()
			}
			got := ""
			if err != nil {
				got = err.Error()
			}
			if got != tt.want {
				t.Errorf("got error %q, want %q", got, tt.want)
			}
		})
	}
}

func TestKfake(t *testing.T) {
	c := cluster.StartT(t, cluster.Spec{Version: "kfake", Brokers: 3})
	if got, want := len(c.Bootstrap()), 3; got != want {
		t.Errorf("got %d bootstrap addresses, want %d", got, want)
	}
	roundTrip(t, c, "kfake-roundtrip", 1, 10)
	if err := c.KillBroker(0); !errors.Is(err, cluster.ErrNotSupported) {
		t.Errorf("KillBroker: got %v, want ErrNotSupported", err)
	}
	if err := c.KillBroker(3); err == nil || errors.Is(err, cluster.ErrNotSupported) {
		t.Errorf("KillBroker(3): got %v, want an out of range error", err)
	}
}

// TestJVMSingleBroker starts each real version with one broker and round-trips records.
func TestJVMSingleBroker(t *testing.T) {
	for _, v := range []string{cluster.V230, cluster.V371} {
		t.Run(v, func(t *testing.T) {
			start := time.Now()
			flag := "-Dkmigrate.test.flag=" + v
			c := cluster.StartT(t, cluster.Spec{Version: v, JVMFlags: []string{flag}})
			t.Logf("%s ready in %s", v, time.Since(start).Round(time.Millisecond))
			pids := c.(interface{ Pids() []int }).Pids()
			if len(pids) == 0 {
				t.Fatalf("got no pids, want the running JVMs")
			}
			cmdline, err := os.ReadFile(fmt.Sprintf("/proc/%d/cmdline", pids[len(pids)-1]))
			if err != nil || !strings.Contains(string(cmdline), flag) {
				t.Errorf("broker command line (err %v) lacks Spec.JVMFlags %s", err, flag)
			}
			if got, want := c.Version(), v; got != want {
				t.Errorf("got version %s, want %s", got, want)
			}
			roundTrip(t, c, "single-"+v, 1, 100)
		})
	}
}

// TestJVMKillBroker runs three brokers of each version, kills one with SIGKILL, checks that a
// topic with replication factor 3 keeps serving produce (acks=all) and fetch, restarts it
// (on 2.3.0 that waits for its old ZooKeeper session to expire), and stops another cleanly.
func TestJVMKillBroker(t *testing.T) {
	for _, v := range []string{cluster.V371, cluster.V230} {
		t.Run(v, func(t *testing.T) { killBroker(t, v) })
	}
}

func killBroker(t *testing.T, version string) {
	c := cluster.StartT(t, cluster.Spec{Version: version, Brokers: 3})
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	topic := "kill-" + strconv.FormatInt(time.Now().UnixNano(), 36)
	createTopic(t, c, topic, 3, 3)
	produce(t, c, topic, 0, 30)

	if err := c.KillBroker(1); err != nil {
		t.Fatalf("kill broker 1: %v", err)
	}
	// Only the survivors as seeds: the client must not need the dead one.
	survivors := []string{c.Bootstrap()[0], c.Bootstrap()[2]}
	produceTo(t, survivors, topic, 30, 30)
	if got, want := consume(t, survivors, topic, 60), 60; got != want {
		t.Errorf("with broker 1 killed: got %d records, want %d", got, want)
	}

	if err := c.RestartBroker(ctx, 1); err != nil {
		t.Fatalf("restart broker 1: %v", err)
	}
	// The restarted broker catches up and serves as the only seed.
	produce(t, c, topic, 60, 10)
	if got, want := consume(t, c.Bootstrap()[1:2], topic, 70), 70; got != want {
		t.Errorf("after restart: got %d records, want %d", got, want)
	}
	if err := c.StopBroker(ctx, 2); err != nil {
		t.Fatalf("stop broker 2: %v", err)
	}
	if got, want := consume(t, c.Bootstrap()[:1], topic, 70), 70; got != want {
		t.Errorf("with broker 2 stopped: got %d records, want %d", got, want)
	}
}

// TestReap checks that a registered process whose owner has ended is killed by Reap, and that
// one with a live owner is not.
func TestReap(t *testing.T) {
	cache := t.TempDir()
	t.Setenv(cluster.EnvCache, cache)
	dir := filepath.Join(cache, "run", "pids")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	// An ended owner: a process that ran and was reaped.
	gone := exec.Command("true")
	if err := gone.Run(); err != nil {
		t.Fatal(err)
	}
	orphan := startSleep(t)
	kept := startSleep(t)
	write := func(p *exec.Cmd, owner int, ownerStart string) {
		t.Helper()
		body := fmt.Sprintf("%d %s %d %s test-sleep\n", p.Process.Pid, procStart(t, p.Process.Pid), owner, ownerStart)
		if err := os.WriteFile(filepath.Join(dir, strconv.Itoa(p.Process.Pid)), []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write(orphan, gone.Process.Pid, "1")
	write(kept, os.Getpid(), procStart(t, os.Getpid()))

	reaped := cluster.Reap()
	if got, want := len(reaped), 1; got != want {
		t.Fatalf("got %d reaped (%v), want %d", got, reaped, want)
	}
	if err := orphan.Wait(); err == nil {
		t.Errorf("orphan sleep: got exit status 0, want killed")
	}
	if err := kept.Process.Signal(syscall.Signal(0)); err != nil {
		t.Errorf("sleep of a live owner: got %v, want it still running", err)
	}
}

func startSleep(t *testing.T) *exec.Cmd {
	t.Helper()
	cmd := exec.Command("sleep", "60")
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = cmd.Process.Kill()
		_, _ = cmd.Process.Wait()
	})
	return cmd
}

func procStart(t *testing.T, pid int) string {
	t.Helper()
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		t.Fatal(err)
	}
	s := string(b)
	f := strings.Fields(s[strings.LastIndexByte(s, ')')+1:])
	return f[19] // field 22, start time
}

func roundTrip(t *testing.T, c cluster.Cluster, topic string, partitions int32, n int) {
	t.Helper()
	createTopic(t, c, topic, partitions, int16(min(c.Brokers(), 3)))
	produce(t, c, topic, 0, n)
	if got := consume(t, c.Bootstrap(), topic, n); got != n {
		t.Errorf("topic %s: got %d records back, want %d", topic, got, n)
	}
}

func client(t *testing.T, seeds []string, opts ...kgo.Opt) *kgo.Client {
	t.Helper()
	cl, err := kgo.NewClient(append([]kgo.Opt{kgo.SeedBrokers(seeds...)}, opts...)...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(cl.Close)
	return cl
}

// createTopic creates topic on any cluster of the bed. testkit.CreateTopic does not fit: it
// takes replication factor 1 and a bound made for kfake, where these tests replicate a topic
// over real brokers, which take longer.
func createTopic(t *testing.T, c cluster.Cluster, topic string, partitions int32, rf int16) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	adm := kadm.NewClient(client(t, c.Bootstrap()))
	resp, err := adm.CreateTopic(ctx, partitions, rf, nil, topic)
	if err == nil {
		err = resp.Err
	}
	if err != nil {
		t.Fatalf("create topic %s on %s: %v", topic, c.Name(), err)
	}
}

func produce(t *testing.T, c cluster.Cluster, topic string, from, n int) {
	t.Helper()
	produceTo(t, c.Bootstrap(), topic, from, n)
}

// produceTo writes records from..from+n-1 to topic through seeds, spread over its partitions
// by key and acknowledged by every in-sync replica. testkit.Produce writes to one partition
// with the client's acks, which tells nothing of a replicated topic on real brokers.
func produceTo(t *testing.T, seeds []string, topic string, from, n int) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	cl := client(t, seeds, kgo.DefaultProduceTopic(topic), kgo.RequiredAcks(kgo.AllISRAcks()))
	var recs []*kgo.Record
	for i := from; i < from+n; i++ {
		recs = append(recs, &kgo.Record{Key: []byte(strconv.Itoa(i)), Value: []byte("value-" + strconv.Itoa(i))})
	}
	if err := cl.ProduceSync(ctx, recs...).FirstErr(); err != nil {
		t.Fatalf("produce %d records to %s: %v", n, topic, err)
	}
}

// consume reads topic from the start until it has want records or a deadline passes, and
// returns how many it read.
func consume(t *testing.T, seeds []string, topic string, want int) int {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	cl := client(t, seeds, kgo.ConsumeTopics(topic), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
	got := 0
	for got < want {
		fs := cl.PollFetches(ctx)
		if ctx.Err() != nil {
			break
		}
		fs.EachError(func(topic string, p int32, err error) {
			t.Logf("fetch %s/%d: %v", topic, p, err)
		})
		got += fs.NumRecords()
	}
	return got
}

// TestTestcontainers runs one broker of each version in containers where a Docker engine
// answers; elsewhere it checks that the provider says so quickly instead of hanging.
func TestTestcontainers(t *testing.T) {
	if testing.Short() {
		t.Skip("skip: -short: no real brokers")
	}
	for _, v := range []string{cluster.V230, cluster.V371, cluster.V431} {
		t.Run(v, func(t *testing.T) {
			start := time.Now()
			ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
			defer cancel()
			c, err := cluster.Start(ctx, cluster.Spec{Version: v, Provider: cluster.ProviderTestcontainers})
			if cluster.IsUnavailable(err) {
				if d := time.Since(start); d > 5*time.Second {
					t.Errorf("unavailable after %s, want within 5s", d)
				}
				if os.Getenv(cluster.EnvRequireContainers) == "1" {
					t.Fatalf("%v (%s=1 makes this a failure)", err, cluster.EnvRequireContainers)
				}
				t.Skipf("skip: %v", err)
			}
			if err != nil {
				t.Fatalf("start: %v", err)
			}
			t.Cleanup(func() { c.Close() })
			roundTrip(t, c, "tc-"+v, 1, 20)
		})
	}
}

// TestMM2 runs MirrorMaker 2 from one alias of a 3.7.1 cluster to another alias of the same
// cluster (DefaultReplicationPolicy renames the copy "a.<topic>"), kills it, and restarts it.
func TestMM2(t *testing.T) {
	c := cluster.StartT(t, cluster.Spec{Version: cluster.V371})
	topic := "mm2-" + strconv.FormatInt(time.Now().UnixNano(), 36)
	createTopic(t, c, topic, 1, 1)
	produce(t, c, topic, 0, 10)
	boot := strings.Join(c.Bootstrap(), ",")
	props := strings.Join([]string{
		"clusters=a,b",
		"a.bootstrap.servers=" + boot,
		"b.bootstrap.servers=" + boot,
		"a->b.enabled=true",
		"a->b.topics=" + topic,
		"replication.factor=1",
		"checkpoints.topic.replication.factor=1",
		"heartbeats.topic.replication.factor=1",
		"offset-syncs.topic.replication.factor=1",
		"offset.storage.replication.factor=1",
		"status.storage.replication.factor=1",
		"config.storage.replication.factor=1",
		"refresh.topics.interval.seconds=2",
		"sync.topic.configs.enabled=false",
		"sync.topic.acls.enabled=false",
	}, "\n")
	m := cluster.StartMM2T(t, cluster.MM2Spec{Properties: props, Target: "b"})
	if m.Pid() == 0 {
		t.Fatalf("got pid 0 after start, want a running MirrorMaker")
	}
	if got, want := waitRecords(t, c, "a."+topic, 10), int64(10); got != want {
		t.Fatalf("mirrored %d records, want %d (log %s)", got, want, m.LogPath())
	}
	m.Kill()
	if m.Pid() != 0 {
		t.Errorf("got pid %d after Kill, want 0", m.Pid())
	}
	produce(t, c, topic, 10, 5)
	if err := m.Restart(); err != nil {
		t.Fatalf("restart: %v", err)
	}
	if got := waitRecords(t, c, "a."+topic, 15); got < 15 {
		t.Fatalf("after restart: mirrored %d records, want at least 15 (log %s)", got, m.LogPath())
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if err := m.Stop(ctx); err != nil {
		t.Errorf("stop: %v", err)
	}
}

// waitRecords polls the end offset of topic/0 until it reaches want (or 2 minutes pass) and
// returns it.
func waitRecords(t *testing.T, c cluster.Cluster, topic string, want int64) int64 {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	adm := kadm.NewClient(client(t, c.Bootstrap()))
	var end int64
	for {
		if ends, err := adm.ListEndOffsets(ctx, topic); err == nil {
			if o, ok := ends.Lookup(topic, 0); ok && o.Err == nil {
				end = o.Offset
			}
		}
		if end >= want {
			return end
		}
		select {
		case <-ctx.Done():
			return end
		case <-time.After(500 * time.Millisecond):
		}
	}
}

// TestJVMStartFailsFast checks that a broker that dies while starting fails Start at once
// (after one retry) with its exit status and log tail, instead of waiting for the deadline.
func TestJVMStartFailsFast(t *testing.T) {
	if testing.Short() {
		t.Skip("skip: -short: no real brokers")
	}
	dir := filepath.Join(t.TempDir(), "bad")
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	start := time.Now()
	c, err := cluster.Start(ctx, cluster.Spec{Version: cluster.V230, Dir: dir, Config: map[string]string{"broker.id": "not-a-number"}})
	if cluster.IsUnavailable(err) {
		t.Skipf("skip: %v", err)
	}
	if err == nil {
		c.Close()
		t.Fatal("got a running cluster, want a start error")
	}
	for _, want := range []string{"before it was ready", "second attempt", "--- tail of"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error does not say %q:\n%v", want, err)
		}
	}
	if d := time.Since(start); d > 2*time.Minute {
		t.Errorf("failed after %s, want well before the deadline", d)
	}
	if _, err := os.Stat(dir + ".failed"); err != nil {
		t.Errorf("first attempt's directory: %v, want it kept as %s.failed", err, dir)
	}
}
