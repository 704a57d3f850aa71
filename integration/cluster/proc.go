package cluster

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"slices"
	"strings"
	"sync"
	"syscall"
	"time"
)

// proc is one JVM (ZooKeeper, a broker, MirrorMaker 2). It runs in its own process group, is
// killed by the kernel if this process dies (Pdeathsig), and is recorded in the pid registry
// so that the next run reaps it if even that failed. Its stdout and stderr (log4j writes to the
// console) are appended to logPath, so a restart keeps the earlier lines.
type proc struct {
	name    string // e.g. "kafka-3.7.1/broker-0", used in errors
	logPath string
	argv    []string // java and its arguments

	mu      sync.Mutex
	cmd     *exec.Cmd
	done    chan struct{} // closed when the running process has been waited for
	waitErr error
	reg     string // pid registry file of the running process
}

// start launches the process; it fails if it is already running.
func (p *proc) start() error {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.cmd != nil && !isClosed(p.done) {
		return fmt.Errorf("start %s: already running as pid %d", p.name, p.cmd.Process.Pid)
	}
	logf, err := os.OpenFile(p.logPath, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return fmt.Errorf("start %s: open log: %w", p.name, err)
	}
	fmt.Fprintf(logf, "=== kmigrate: starting %s at %s\n", p.name, time.Now().UTC().Format(time.RFC3339))
	argv := p.argv
	if p.cmd != nil {
		// A restart does not train a class-data sharing archive again (shareFlags): the first
		// start's class list is the one dumped.
		argv = slices.DeleteFunc(slices.Clone(argv), func(a string) bool { return strings.HasPrefix(a, "-XX:DumpLoadedClassList=") })
	}
	cmd := exec.Command(argv[0], argv[1:]...)
	cmd.Stdout, cmd.Stderr = logf, logf
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	if err := cmd.Start(); err != nil {
		logf.Close()
		return fmt.Errorf("start %s: %w", p.name, err)
	}
	p.reg = register(cmd.Process.Pid, p.name)
	done := make(chan struct{})
	p.cmd, p.done = cmd, done
	go func() {
		err := cmd.Wait()
		logf.Close()
		p.mu.Lock()
		p.waitErr = err
		unregister(p.reg)
		p.mu.Unlock()
		close(done)
	}()
	return nil
}

// exited returns a channel closed when the current process has exited (nil if never started).
func (p *proc) exited() <-chan struct{} {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.done
}

func (p *proc) running() bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.cmd != nil && !isClosed(p.done)
}

// exitErr describes how the process ended, for errors.
func (p *proc) exitErr() error {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.waitErr == nil {
		return errors.New("exited with status 0")
	}
	return p.waitErr
}

func (p *proc) signal(sig syscall.Signal) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.cmd != nil && !isClosed(p.done) {
		// The whole group: a JVM has no children, but a wrapper could.
		_ = syscall.Kill(-p.cmd.Process.Pid, sig)
	}
}

// stop sends SIGTERM and waits; when ctx ends (or after grace) it kills the group.
func (p *proc) stop(ctx context.Context, grace time.Duration) error {
	done := p.exited()
	if done == nil || isClosed(done) {
		return nil
	}
	p.signal(syscall.SIGTERM)
	t := time.NewTimer(grace)
	defer t.Stop()
	select {
	case <-done:
		return nil
	case <-ctx.Done():
	case <-t.C:
	}
	p.kill()
	return fmt.Errorf("stop %s: no exit %s after SIGTERM, killed", p.name, grace)
}

// kill sends SIGKILL to the group and waits until the process is reaped.
func (p *proc) kill() {
	done := p.exited()
	if done == nil {
		return
	}
	p.signal(syscall.SIGKILL)
	<-done
}

func isClosed(ch <-chan struct{}) bool {
	if ch == nil {
		return true
	}
	select {
	case <-ch:
		return true
	default:
		return false
	}
}
