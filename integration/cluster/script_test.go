package cluster_test

import (
	"bytes"
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/kmigrate/kmigrate/integration/cluster"
)

// clusterScript skips (or fails, under KMIGRATE_REQUIRE_REAL=1) when version's brokers cannot
// run here, and returns a runner of scripts/cluster.sh with its own run directory (each call
// bounded by timeout; stdout and stderr together) and that directory.
func clusterScript(t *testing.T, version string, timeout time.Duration) (func(args ...string) (string, error), string) {
	t.Helper()
	if testing.Short() {
		t.Skip("skip: -short: no real brokers")
	}
	if err := cluster.Check(cluster.Spec{Version: version}); err != nil {
		if cluster.IsUnavailable(err) && os.Getenv(cluster.EnvRequireReal) != "1" {
			t.Skipf("skip: %v", err)
		}
		t.Fatal(err)
	}
	_, file, _, _ := runtime.Caller(0)
	script := filepath.Join(filepath.Dir(file), "..", "..", "scripts", "cluster.sh")
	rundir := filepath.Join(t.TempDir(), "run")
	return func(args ...string) (string, error) {
		ctx, cancel := context.WithTimeout(context.Background(), timeout)
		defer cancel()
		cmd := exec.CommandContext(ctx, "bash", append([]string{script}, args...)...)
		cmd.Env = append(os.Environ(), "KMIGRATE_RUNDIR="+rundir)
		var out bytes.Buffer
		cmd.Stdout, cmd.Stderr = &out, &out
		err := cmd.Run()
		return out.String(), err
	}, rundir
}

// TestClusterScript drives scripts/cluster.sh as a user would: up 2.3.0, status, down, and
// checks that every JVM it recorded is gone afterwards.
func TestClusterScript(t *testing.T) {
	sh, rundir := clusterScript(t, cluster.V230, 6*time.Minute)
	t.Cleanup(func() { sh("down") })

	out, err := sh("up", "2.3.0")
	if err != nil {
		t.Fatalf("cluster.sh up 2.3.0: %v\n%s", err, out)
	}
	if !strings.Contains(out, "bootstrap=127.0.0.1:") {
		t.Errorf("up printed no bootstrap address:\n%s", out)
	}
	state, err := os.ReadFile(filepath.Join(rundir, "clusters"))
	if err != nil {
		t.Fatalf("state file: %v", err)
	}
	f := strings.Fields(string(state))
	if len(f) != 6 {
		t.Fatalf("state line %q: got %d fields, want 6", state, len(f))
	}
	var pids []int
	for _, p := range strings.Split(f[5], ",") {
		n, err := strconv.Atoi(p)
		if err != nil {
			t.Fatalf("state pids %q: %v", f[5], err)
		}
		pids = append(pids, n)
	}
	if got, want := len(pids), 2; got != want {
		t.Errorf("recorded JVMs: got %d, want %d (ZooKeeper and one broker)", got, want)
	}
	if out, err := sh("status"); err != nil || !strings.Contains(out, "listening") {
		t.Errorf("cluster.sh status: %v\n%s", err, out)
	}
	if out, err := sh("up", "3.7.1"); err == nil {
		t.Errorf("second up: got success, want a refusal while clusters are up\n%s", out)
	}
	if out, err := sh("down"); err != nil {
		t.Fatalf("cluster.sh down: %v\n%s", err, out)
	}
	for _, p := range pids {
		if _, err := os.Stat("/proc/" + strconv.Itoa(p)); err == nil {
			t.Errorf("JVM %d still running after down", p)
		}
	}
	if out, err := sh("status"); err == nil {
		t.Errorf("status after down: got success, want exit 1\n%s", out)
	}
}
