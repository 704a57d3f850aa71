// Package peakrss measures a child process's own peak resident set size, for the benchmarks.
//
// The obvious figure, the child's rusage (ProcessState.SysUsage().Maxrss), is wrong on Linux
// for a child started from a Go program: Go starts children with clone(CLONE_VM|CLONE_VFORK),
// so until exec the child runs in the parent's address space, and exec folds that address
// space's high-water mark into the child's maxrss. A 5 MiB child of a test holding 400 MiB
// reports 400 MiB. The child's own figure is VmHWM in /proc/PID/status, which belongs to the
// address space exec gave it. VmHWM is gone once the process exits, so a Watch samples it
// while the process runs and keeps the largest value; as VmHWM only grows, the figure misses
// at most what the process gained in its last sampling interval (10 ms).
package peakrss

import (
	"fmt"
	"os"
	"strconv"
	"strings"
	"sync"
	"time"
)

// Interval is how often a Watch reads VmHWM.
const Interval = 10 * time.Millisecond

// Watch samples the VmHWM of one process until Stop is called or the process is gone.
type Watch struct {
	pid  int
	stop chan struct{}
	done chan struct{}
	mu   sync.Mutex
	peak int64 // KiB
}

// Start begins sampling process pid (started, not yet waited for).
func Start(pid int) *Watch {
	w := &Watch{pid: pid, stop: make(chan struct{}), done: make(chan struct{})}
	w.sample()
	go func() {
		defer close(w.done)
		t := time.NewTicker(Interval)
		defer t.Stop()
		for {
			select {
			case <-w.stop:
				return
			case <-t.C:
				if !w.sample() {
					return
				}
			}
		}
	}()
	return w
}

// sample reads VmHWM once; false when the process (or its address space) is gone.
func (w *Watch) sample() bool {
	kib, ok := VmHWM(w.pid)
	if !ok {
		return false
	}
	w.mu.Lock()
	w.peak = max(w.peak, kib)
	w.mu.Unlock()
	return true
}

// Stop reads VmHWM a last time if the process is still there, stops sampling and returns the
// peak in KiB (0 if it was never read). Call it before signalling a process to stop, or after
// one that exits on its own has been waited for.
func (w *Watch) Stop() int64 {
	w.sample()
	select {
	case <-w.stop:
	default:
		close(w.stop)
	}
	<-w.done
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.peak
}

// VmHWM returns the peak resident set size of process pid in KiB, from /proc/PID/status, and
// false when it cannot be read (no such process, a zombie, not Linux).
func VmHWM(pid int) (int64, bool) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return 0, false
	}
	for line := range strings.SplitSeq(string(b), "\n") {
		if rest, ok := strings.CutPrefix(line, "VmHWM:"); ok {
			n, err := strconv.ParseInt(strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(rest), "kB")), 10, 64)
			return n, err == nil
		}
	}
	return 0, false
}
