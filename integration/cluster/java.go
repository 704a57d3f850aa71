package cluster

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime"
	"sync"
	"syscall"
)

// cacheDir is $KMIGRATE_CACHE, default ~/.cache/kmigrate (as in scripts/fetch-kafka.sh).
func cacheDir() string {
	if d := os.Getenv(EnvCache); d != "" {
		return d
	}
	home, err := os.UserHomeDir()
	if err != nil {
		return filepath.Join(os.TempDir(), "kmigrate-cache")
	}
	return filepath.Join(home, ".cache", "kmigrate")
}

var (
	javaOnce sync.Once
	javaBin  string
	javaErr  error
)

var javaVersionRE = regexp.MustCompile(`version "([0-9]+)[^"]*"`)

// java returns the path of a Java 17 binary: $JAVA_HOME/bin/java when JAVA_HOME is set (it
// must be 17), else /usr/lib/jvm/java-17-openjdk-amd64, else java on PATH. Every JVM of the
// test bed runs on it: Kafka 2.3.0 predates Java 17 support, and pinning one version keeps
// the runs comparable.
func java() (string, error) {
	javaOnce.Do(func() { javaBin, javaErr = findJava() })
	return javaBin, javaErr
}

func findJava() (string, error) {
	const want = "17"
	unavailable := func(format string, a ...any) error {
		return &UnavailableError{Provider: ProviderJVM, Reason: fmt.Sprintf(format, a...) +
			"; install Java 17 (apt-get install openjdk-17-jdk-headless) and point JAVA_HOME at it or unset it"}
	}
	if home := os.Getenv("JAVA_HOME"); home != "" {
		bin := filepath.Join(home, "bin", "java")
		v, err := javaVersion(bin)
		if err != nil {
			return "", unavailable("JAVA_HOME=%s: %v", home, err)
		}
		if v != want {
			return "", unavailable("JAVA_HOME=%s is Java %s, the test bed pins Java %s", home, v, want)
		}
		return bin, nil
	}
	candidates := []string{"/usr/lib/jvm/java-17-openjdk-amd64/bin/java", "/usr/lib/jvm/java-17-openjdk-arm64/bin/java"}
	if p, err := exec.LookPath("java"); err == nil {
		candidates = append(candidates, p)
	}
	var found []string
	for _, bin := range candidates {
		v, err := javaVersion(bin)
		if err != nil {
			continue
		}
		if v == want {
			return bin, nil
		}
		found = append(found, fmt.Sprintf("%s is Java %s", bin, v))
	}
	if len(found) > 0 {
		return "", unavailable("no Java %s found (%v)", want, found)
	}
	return "", unavailable("no java found (JAVA_HOME unset, none in /usr/lib/jvm/java-17-openjdk-*, none on PATH)")
}

func javaVersion(bin string) (string, error) {
	out, err := exec.Command(bin, "-version").CombinedOutput()
	if err != nil {
		return "", fmt.Errorf("%s -version: %v", bin, err)
	}
	m := javaVersionRE.FindSubmatch(out)
	if m == nil {
		return "", fmt.Errorf("%s -version: no version in %q", bin, bytes.TrimSpace(out))
	}
	return string(m[1]), nil
}

// repoRoot finds the module root (for scripts/fetch-kafka.sh) from this source file, or from
// the working directory upwards.
func repoRoot() string {
	if _, file, _, ok := runtime.Caller(0); ok {
		root := filepath.Clean(filepath.Join(filepath.Dir(file), "..", ".."))
		if _, err := os.Stat(filepath.Join(root, "scripts", "fetch-kafka.sh")); err == nil {
			return root
		}
	}
	dir, _ := os.Getwd()
	for dir != "" && dir != "/" {
		if _, err := os.Stat(filepath.Join(dir, "scripts", "fetch-kafka.sh")); err == nil {
			return dir
		}
		dir = filepath.Dir(dir)
	}
	return ""
}

var fetchMu sync.Mutex

// libDir returns the jar directory of a Kafka runtime, running scripts/fetch-kafka.sh (under
// a file lock shared with other test processes) when it is not cached yet.
func libDir(ctx context.Context, version string) (string, error) {
	lib := filepath.Join(cacheDir(), "kafka-"+version, "lib")
	if _, err := os.Stat(filepath.Join(lib, ".complete")); err == nil {
		return lib, nil
	}
	fetchMu.Lock()
	defer fetchMu.Unlock()
	if _, err := exec.LookPath("mvn"); err != nil {
		return "", &UnavailableError{Provider: ProviderJVM, Reason: fmt.Sprintf(
			"Kafka %s jars are not in %s and Maven is not installed to fetch them: install Maven (apt-get install maven) or run scripts/fetch-kafka.sh %s on a machine that has it", version, lib, version)}
	}
	root := repoRoot()
	if root == "" {
		return "", fmt.Errorf("the Kafka %s jars are not in %s and scripts/fetch-kafka.sh was not found: run it from the kmigrate checkout", version, lib)
	}
	if err := os.MkdirAll(cacheDir(), 0o755); err != nil {
		return "", fmt.Errorf("create cache %s: %w", cacheDir(), err)
	}
	lock, err := os.OpenFile(filepath.Join(cacheDir(), "fetch.lock"), os.O_CREATE|os.O_RDWR, 0o644)
	if err != nil {
		return "", fmt.Errorf("lock cache %s: %w", cacheDir(), err)
	}
	defer lock.Close()
	if err := syscall.Flock(int(lock.Fd()), syscall.LOCK_EX); err != nil {
		return "", fmt.Errorf("lock cache %s: %w", cacheDir(), err)
	}
	defer syscall.Flock(int(lock.Fd()), syscall.LOCK_UN)
	cmd := exec.CommandContext(ctx, filepath.Join(root, "scripts", "fetch-kafka.sh"), version)
	cmd.Env = append(os.Environ(), EnvCache+"="+cacheDir())
	if out, err := cmd.CombinedOutput(); err != nil {
		return "", fmt.Errorf("fetch Kafka %s jars with scripts/fetch-kafka.sh: %w\n%s", version, err, out)
	}
	if _, err := os.Stat(filepath.Join(lib, ".complete")); err != nil {
		return "", fmt.Errorf("fetch Kafka %s jars: scripts/fetch-kafka.sh did not complete %s", version, lib)
	}
	return lib, nil
}

// StreamsLib returns the jar directory of a Kafka Streams runtime of the test tree's
// application (scripts/fetch-kafka.sh streams-<version>: V371 or V431), fetching it when it
// is not cached.
func StreamsLib(ctx context.Context, version string) (string, error) {
	return libDir(ctx, "streams-"+version)
}

// Java returns the Java 17 binary every JVM of the bed runs on.
func Java() (string, error) { return java() }
