package mm2

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// javaOracle is a Java class compiled against MirrorMaker 2 3.7.1's jars, in MM2's package
// (org.apache.kafka.connect.mirror) so that it reaches the package-private members the
// connectors use, and run in a small JVM: the oracle TestAgainstMM2 and
// TestSyncIndexAgainstMM2 ask what MM2's own classes make of their input.
type javaOracle struct {
	class    string // the class name, in MM2's package
	dir      string // the test's directory for the oracle's input files
	classes  string // the compiled class
	cp       string // MM2's jars
	deadline context.Context
}

// newJavaOracle compiles source, the class named class. It starts a JVM: skipped with -short,
// and without the jars or Java (mm2Lib).
func newJavaOracle(t *testing.T, class, source string) *javaOracle {
	t.Helper()
	if testing.Short() {
		t.Skip("starts a JVM; skipped with -short")
	}
	dir := t.TempDir()
	o := &javaOracle{class: class, dir: dir, classes: filepath.Join(dir, "classes"), cp: filepath.Join(mm2Lib(t), "*")}
	ctx, cancel := context.WithTimeout(context.Background(), 8*time.Minute)
	t.Cleanup(cancel)
	o.deadline = ctx
	src := filepath.Join(dir, "src", "org", "apache", "kafka", "connect", "mirror")
	if err := os.MkdirAll(src, 0o755); err != nil {
		t.Fatal(err)
	}
	file := filepath.Join(src, class+".java")
	if err := os.WriteFile(file, []byte(source), 0o644); err != nil {
		t.Fatal(err)
	}
	javac := exec.CommandContext(ctx, "javac", "-nowarn", "-cp", o.cp, "-d", o.classes, file)
	if out, err := javac.CombinedOutput(); err != nil {
		t.Fatalf("javac: %v\n%s", err, out)
	}
	return o
}

// write writes content to the file name in the oracle's directory and returns its path, for
// an argument of run.
func (o *javaOracle) write(t *testing.T, name, content string) string {
	t.Helper()
	path := filepath.Join(o.dir, name)
	if err := os.WriteFile(path, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

// run runs the class with args and returns what it printed; a failure fails the test, with
// what the JVM wrote to its standard error.
func (o *javaOracle) run(t *testing.T, args ...string) []byte {
	t.Helper()
	jvm := []string{"-Xmx128m", "-Xshare:auto", "-XX:+UseSerialGC", "-XX:TieredStopAtLevel=1", "-XX:-UsePerfData",
		"-cp", o.classes + string(os.PathListSeparator) + o.cp, "org.apache.kafka.connect.mirror." + o.class}
	java := exec.CommandContext(o.deadline, "java", append(jvm, args...)...)
	var stderr strings.Builder
	java.Stderr = &stderr
	out, err := java.Output()
	if err != nil {
		t.Fatalf("java oracle: %v\n%s", err, stderr.String())
	}
	return out
}

// mm2Lib finds the MM2 3.7.1 jars that scripts/fetch-kafka.sh caches.
func mm2Lib(t *testing.T) string {
	t.Helper()
	skip := func(why string) {
		if os.Getenv("KMIGRATE_REQUIRE_REAL") == "1" {
			t.Fatalf("KMIGRATE_REQUIRE_REAL=1 but %s", why)
		}
		t.Skip(why)
	}
	cache := os.Getenv("KMIGRATE_CACHE")
	if cache == "" {
		home, err := os.UserHomeDir()
		if err != nil {
			skip("no home directory for the Kafka jar cache")
		}
		cache = filepath.Join(home, ".cache", "kmigrate")
	}
	lib := filepath.Join(cache, "kafka-3.7.1", "lib")
	if _, err := os.Stat(filepath.Join(lib, "connect-mirror-3.7.1.jar")); err != nil {
		skip("MirrorMaker 2 3.7.1 jars not in " + lib + ": run scripts/fetch-kafka.sh 3.7.1")
	}
	for _, tool := range []string{"javac", "java"} {
		if _, err := exec.LookPath(tool); err != nil {
			skip(tool + " not found: install Java 17")
		}
	}
	return lib
}
