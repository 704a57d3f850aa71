package cluster

import (
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
)

// The pid registry: every JVM started here gets a file <cache>/run/pids/<pid> holding its
// start time and its owner (this process, with its start time). Reap kills the JVMs whose
// owner is gone, e.g. after `go test` was killed by its timeout. Start times make a reused
// pid harmless: a file whose process has another start time is just removed.

var (
	selfStart     = procStart(os.Getpid())
	reapOnceGuard sync.Once
)

func registryDir() string { return filepath.Join(cacheDir(), "run", "pids") }

func register(pid int, name string) string {
	dir := registryDir()
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return ""
	}
	path := filepath.Join(dir, strconv.Itoa(pid))
	body := fmt.Sprintf("%d %s %d %s %s\n", pid, procStart(pid), os.Getpid(), selfStart, name)
	if err := os.WriteFile(path, []byte(body), 0o644); err != nil {
		return ""
	}
	return path
}

func unregister(path string) {
	if path != "" {
		_ = os.Remove(path)
	}
}

// procStart is field 22 of /proc/<pid>/stat (start time in clock ticks since boot), or "" if
// the process does not exist.
func procStart(pid int) string {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return ""
	}
	s := string(b)
	i := strings.LastIndexByte(s, ')')
	if i < 0 {
		return ""
	}
	f := strings.Fields(s[i+1:])
	if len(f) < 20 {
		return ""
	}
	return f[19]
}

func alive(pid int, start string) bool {
	return start != "" && procStart(pid) == start
}

// Reap kills every JVM of the registry whose owning process has ended, removes the containers
// and networks of such processes (see ownerLabel), and returns a line per thing it removed. Processes of live owners (another `go test` running now) are left alone.
func Reap() []string {
	entries, err := os.ReadDir(registryDir())
	if err != nil {
		return nil
	}
	var reaped []string
	for _, e := range entries {
		path := filepath.Join(registryDir(), e.Name())
		b, err := os.ReadFile(path)
		if err != nil {
			continue
		}
		f := strings.Fields(string(b))
		if len(f) < 5 {
			_ = os.Remove(path)
			continue
		}
		pid, _ := strconv.Atoi(f[0])
		owner, _ := strconv.Atoi(f[2])
		if pid <= 0 || alive(owner, f[3]) {
			continue
		}
		if alive(pid, f[1]) {
			_ = syscall.Kill(-pid, syscall.SIGKILL)
			_ = syscall.Kill(pid, syscall.SIGKILL)
			reaped = append(reaped, fmt.Sprintf("pid %d (%s) of ended process %d", pid, f[4], owner))
		}
		_ = os.Remove(path)
	}
	return append(reaped, reapContainers()...)
}

func reapOnce() { reapOnceGuard.Do(func() { Reap() }) }

// live holds what this process started and has not closed yet, for CloseAll.
var (
	liveMu sync.Mutex
	live   = map[interface{ Close() error }]bool{}
)

func track(c interface{ Close() error }) {
	liveMu.Lock()
	live[c] = true
	liveMu.Unlock()
}

func untrack(c interface{ Close() error }) {
	liveMu.Lock()
	delete(live, c)
	liveMu.Unlock()
}

// CloseAll closes every cluster and MirrorMaker this process started and has not closed: for
// a signal handler (TestMain, kcluster) that must leave no JVM behind.
func CloseAll() {
	liveMu.Lock()
	var cs []interface{ Close() error }
	for c := range live {
		cs = append(cs, c)
	}
	liveMu.Unlock()
	var wg sync.WaitGroup
	for _, c := range cs {
		wg.Go(func() { _ = c.Close() })
	}
	wg.Wait()
}
