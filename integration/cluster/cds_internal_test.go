package cluster

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// A fresh machine trains the archive on its first broker and the next broker maps it; only
// one JVM trains it at a time, in this process or another.
func TestClassShare(t *testing.T) {
	if testing.Short() {
		t.Skip("skip: -short: no real brokers")
	}
	bin, err := java()
	if err != nil {
		t.Skipf("skip: %v", err)
	}
	lib, err := libDir(context.Background(), V371)
	if err != nil {
		skipOrFail(t, err)
		return
	}
	dir := t.TempDir()
	was := shareDir
	shareDir = func() string { return dir }
	t.Cleanup(func() { shareDir = was })
	archive, err := sharePath(bin, lib, "kafka.Kafka")
	if err != nil {
		t.Fatal(err)
	}

	t.Run("another process trains it", func(t *testing.T) {
		if err := os.MkdirAll(dir, 0o755); err != nil {
			t.Fatal(err)
		}
		lock, err := os.OpenFile(archive+".lock", os.O_CREATE|os.O_RDWR, 0o644)
		if err != nil {
			t.Fatal(err)
		}
		defer lock.Close()
		if err := syscall.Flock(int(lock.Fd()), syscall.LOCK_EX|syscall.LOCK_NB); err != nil {
			t.Fatal(err)
		}
		if f := shareFlags(bin, lib, "kafka.Kafka"); f != nil {
			t.Errorf("flags %v while another holds the lock: want none", f)
		}
	})

	c := StartT(t, Spec{Version: V371, Name: "cds-first"}).(*jvmCluster)
	if t.Failed() {
		return
	}
	if a := strings.Join(c.nodes[0].proc.argv, " "); !strings.Contains(a, "-XX:DumpLoadedClassList=") {
		t.Fatalf("the first broker did not train the archive: %s", a)
	}
	if f := shareFlags(bin, lib, "kafka.Kafka"); f != nil {
		t.Errorf("flags %v while this process trains the archive: want none", f)
	}
	classShare.dumps.Wait()
	if _, err := os.Stat(archive); err != nil {
		b, _ := os.ReadFile(archive + ".failed")
		t.Fatalf("no archive after the first broker was ready: %v\n%s", err, b)
	}
	if left, _ := filepath.Glob(archive + ".*-*"); len(left) != 0 {
		t.Errorf("training left %v", left)
	}

	d := StartT(t, Spec{Version: V371, Name: "cds-second"}).(*jvmCluster)
	if t.Failed() {
		return
	}
	maps, err := os.ReadFile(filepath.Join("/proc", strconv.Itoa(d.nodes[0].proc.cmd.Process.Pid), "maps"))
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(maps), archive) {
		t.Errorf("the second broker does not map %s", archive)
	}

	t.Run("a stale archive only loses the speed", func(t *testing.T) {
		bad := filepath.Join(t.TempDir(), "bad.jsa")
		if err := os.WriteFile(bad, []byte("not an archive"), 0o644); err != nil {
			t.Fatal(err)
		}
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		out, err := exec.CommandContext(ctx, bin, "-XX:SharedArchiveFile="+bad, "-cp", filepath.Join(lib, "*"), "kafka.Kafka", "--version").CombinedOutput()
		if err != nil || !strings.Contains(string(out), V371) {
			t.Errorf("kafka.Kafka --version with a broken archive: %v\n%s", err, out)
		}
	})
}
