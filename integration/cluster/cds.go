package cluster

import (
	"context"
	"crypto/sha256"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"time"
)

// Class-data sharing archives (the package doc says what they are for and what they change):
// the first JVM of a main class trains one while this process holds its lock file, the others
// map it once it is there.

// EnvCDS set to "off" starts the bed's JVMs without class-data sharing archives.
const EnvCDS = "KMIGRATE_CDS"

var classShare = struct {
	mu    sync.Mutex
	keys  map[string]*shareTraining // shareKey -> this process's training of its archive
	dumps sync.WaitGroup
}{keys: map[string]*shareTraining{}}

// shareTraining is this process's training of one archive: the lock held while it lasts and
// the class list its JVM writes.
type shareTraining struct {
	java, lib, archive string
	lock               *os.File
	classList          string
	dumped             bool // shareReady started the dump
}

// shareFlags returns the flags that let a JVM of main on lib's jars share classes: the archive
// when there is one, else the training of it when no other JVM trains it, else none.
func shareFlags(java, lib, main string) []string {
	if os.Getenv(EnvCDS) == "off" {
		return nil
	}
	archive, err := sharePath(java, lib, main)
	if err != nil {
		return nil
	}
	if _, err := os.Stat(archive); err == nil {
		return []string{"-XX:SharedArchiveFile=" + archive}
	}
	if _, err := os.Stat(archive + ".failed"); err == nil {
		return nil // a dump failed on this machine: its output is in the file
	}
	key := shareKey(java, lib, main)
	classShare.mu.Lock()
	defer classShare.mu.Unlock()
	if _, ok := classShare.keys[key]; ok {
		return nil // one JVM of this process trains it
	}
	if err := os.MkdirAll(filepath.Dir(archive), 0o755); err != nil {
		return nil
	}
	lock, err := os.OpenFile(archive+".lock", os.O_CREATE|os.O_RDWR, 0o644)
	if err != nil {
		return nil
	}
	if err := syscall.Flock(int(lock.Fd()), syscall.LOCK_EX|syscall.LOCK_NB); err != nil {
		lock.Close()
		return nil // another process trains it
	}
	if _, err := os.Stat(archive); err == nil { // it finished between the two looks
		lock.Close()
		return []string{"-XX:SharedArchiveFile=" + archive}
	}
	// What a killed training left.
	left, _ := filepath.Glob(archive + ".tmp-*")
	more, _ := filepath.Glob(archive + ".classlist-*")
	for _, f := range append(left, more...) {
		_ = os.Remove(f)
	}
	tr := &shareTraining{java: java, lib: lib, archive: archive, lock: lock,
		classList: fmt.Sprintf("%s.classlist-%d", archive, os.Getpid())}
	classShare.keys[key] = tr
	return []string{"-XX:DumpLoadedClassList=" + tr.classList}
}

// shareReady is called once a JVM of main on lib's jars is ready (or, for a tool, has
// succeeded): if this process trains that archive, the classes loaded so far are dumped into
// it in the background.
func shareReady(java, lib, main string) {
	classShare.mu.Lock()
	defer classShare.mu.Unlock()
	tr, ok := classShare.keys[shareKey(java, lib, main)]
	if !ok || tr.dumped {
		return
	}
	tr.dumped = true
	classShare.dumps.Go(tr.dump)
}

// dump writes the archive from a copy of the class list (the JVM that writes it may still be
// running and loading more) and releases the lock.
func (tr *shareTraining) dump() {
	defer tr.lock.Close()
	defer os.Remove(tr.classList)
	b, err := os.ReadFile(tr.classList)
	if err != nil {
		return
	}
	b = b[:strings.LastIndexByte(string(b), '\n')+1] // whole lines only
	snap := tr.classList + ".snapshot"
	if err := os.WriteFile(snap, b, 0o644); err != nil {
		return
	}
	defer os.Remove(snap)
	tmp := fmt.Sprintf("%s.tmp-%d", tr.archive, os.Getpid())
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, tr.java, "-Xshare:dump", "-XX:+UseSerialGC", "-XX:-UsePerfData",
		"-XX:SharedClassListFile="+snap, "-XX:SharedArchiveFile="+tmp, "-cp", filepath.Join(tr.lib, "*"))
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	out, err := cmd.CombinedOutput()
	if err == nil {
		_, err = os.Stat(tmp)
	}
	if err != nil {
		_ = os.Remove(tmp)
		if ctx.Err() == nil && !errors.Is(err, os.ErrNotExist) {
			_ = os.WriteFile(tr.archive+".failed", fmt.Appendf(nil, "%s: %v\n%s", strings.Join(cmd.Args, " "), err, out), 0o644)
		}
		return
	}
	_ = os.Rename(tmp, tr.archive)
}

// WaitArchives waits, at most timeout, for the archives this process is dumping: for the end
// of a run (TestMain), so that a short run's training is not lost with its process.
func WaitArchives(timeout time.Duration) {
	done := make(chan struct{})
	go func() {
		classShare.dumps.Wait()
		close(done)
	}()
	select {
	case <-done:
	case <-time.After(timeout):
	}
}

// shareKey names a training in this process (the jars stay the same for its life), by the
// directory its archive goes to, the java binary, the jars and the main class.
func shareKey(java, lib, main string) string {
	return strings.Join([]string{shareDir(), java, lib, main}, "\x00")
}

// sharePath is the archive of main on lib's jars for the java binary: named after the jars'
// directory and the main class, with a hash of the binary, the jars and the main class.
func sharePath(java, lib, main string) (string, error) {
	h := sha256.New()
	fmt.Fprintf(h, "%s\n", main)
	files := []string{java}
	ents, err := os.ReadDir(lib)
	if err != nil {
		return "", err
	}
	for _, e := range ents {
		files = append(files, filepath.Join(lib, e.Name()))
	}
	for _, f := range files {
		fi, err := os.Stat(f)
		if err != nil {
			return "", err
		}
		fmt.Fprintf(h, "%s %d %d\n", f, fi.Size(), fi.ModTime().UnixNano())
	}
	name := fmt.Sprintf("%s-%s-%x.jsa", filepath.Base(filepath.Dir(lib)), main[strings.LastIndexByte(main, '.')+1:], h.Sum(nil)[:6])
	return filepath.Join(shareDir(), name), nil
}

// shareDir is where the archives are kept (a test points it elsewhere).
var shareDir = func() string { return filepath.Join(cacheDir(), "cds") }
