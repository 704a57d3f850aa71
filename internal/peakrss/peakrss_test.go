package peakrss

import (
	"os"
	"os/exec"
	"runtime"
	"syscall"
	"testing"
)

// TestSmallChildOfLargeParent is why the package exists: a child started while this process
// holds 400 MiB has its own small peak, which its rusage does not show.
func TestSmallChildOfLargeParent(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("VmHWM is Linux's")
	}
	if _, ok := VmHWM(os.Getpid()); !ok {
		t.Skip("no /proc/PID/status VmHWM here")
	}
	ballast := make([]byte, 400<<20)
	for i := range ballast {
		if i%4096 == 0 {
			ballast[i] = 1 // touch every page, so it is resident
		}
	}
	// cat waits for its standard input to close: it is alive while we sample, without a sleep.
	cmd := exec.Command("cat")
	stdin, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Skipf("no cat to start: %v", err)
	}
	w := Start(cmd.Process.Pid)
	peak := w.Stop()
	stdin.Close()
	if err := cmd.Wait(); err != nil {
		t.Fatal(err)
	}
	runtime.KeepAlive(ballast)
	rusage := cmd.ProcessState.SysUsage().(*syscall.Rusage).Maxrss
	t.Logf("child peak: VmHWM %d KiB, rusage maxrss %d KiB (parent holds 400 MiB)", peak, rusage)
	if peak <= 0 || peak > 32<<10 {
		t.Fatalf("child's own peak is %d KiB, want a small positive figure (cat needs a few MiB)", peak)
	}
	if rusage < 300<<10 {
		t.Logf("this kernel's rusage does not include the parent's peak (%d KiB); the VmHWM figure is right either way", rusage)
	}
}

// TestStopAfterExit: a Watch of a process that exited on its own keeps what it sampled.
func TestStopAfterExit(t *testing.T) {
	if _, ok := VmHWM(os.Getpid()); !ok {
		t.Skip("no /proc/PID/status VmHWM here")
	}
	cmd := exec.Command("cat")
	stdin, _ := cmd.StdinPipe()
	if err := cmd.Start(); err != nil {
		t.Skipf("no cat to start: %v", err)
	}
	w := Start(cmd.Process.Pid) // samples once at once, while cat waits for input
	stdin.Close()
	if err := cmd.Wait(); err != nil {
		t.Fatal(err)
	}
	if peak := w.Stop(); peak <= 0 {
		t.Fatalf("peak %d KiB after exit, want the figure sampled while it ran", peak)
	}
}
