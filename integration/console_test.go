package integration

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/kmigrate/kmigrate/integration/cluster"
)

// bedConsole runs Kafka 4.3.1's console consumer (org.apache.kafka.tools.consumer.
// ConsoleConsumer, a client any 2.1 or later broker serves) on topic of c with the extra
// arguments (e.g. --group, --from-beginning, --isolation-level) until no record arrives for
// 15 s, and returns the lines of standard output that isRecord says are records (it also
// prints notices there), checked against the tool's own count ("Processed a total of N
// messages"). Its isolation level is its default, read_uncommitted, unless extra says else.
func bedConsole(ctx context.Context, t *testing.T, c cluster.Cluster, topic string, isRecord func(line string) bool, extra ...string) []string {
	t.Helper()
	cache := os.Getenv(cluster.EnvCache)
	if cache == "" {
		home, _ := os.UserHomeDir()
		cache = filepath.Join(home, ".cache", "kmigrate")
	}
	lib := filepath.Join(cache, "kafka-"+cluster.V431, "lib")
	cctx, cancel := context.WithTimeout(ctx, 3*time.Minute)
	defer cancel()
	args := append([]string{"-Xmx256m", "-XX:TieredStopAtLevel=1", "-cp", lib + "/*",
		"org.apache.kafka.tools.consumer.ConsoleConsumer", "--bootstrap-server", strings.Join(c.Bootstrap(), ","),
		"--topic", topic, "--timeout-ms", "15000"}, extra...)
	cmd := exec.CommandContext(cctx, aclJava(t), args...)
	var stderr strings.Builder
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	var ee *exec.ExitError
	if err != nil && !errors.As(err, &ee) { // the tool exits non-zero on its timeout in some versions
		t.Fatalf("console consumer %s: %v\n%s", strings.Join(extra, " "), err, stderr.String())
	}
	t.Logf("console consumer %s, stderr (last 400 bytes): %s", strings.Join(extra, " "), stderr.String()[max(stderr.Len()-400, 0):])
	var records []string
	for _, line := range strings.Split(string(out), "\n") {
		if isRecord(line) {
			records = append(records, line)
		}
	}
	if want := fmt.Sprintf("Processed a total of %d messages", len(records)); !strings.Contains(stderr.String(), want) {
		t.Fatalf("console consumer %s: printed %d records, but its summary is not %q\nstdout:\n%s\nstderr:\n%s", strings.Join(extra, " "), len(records), want, out, stderr.String())
	}
	return records
}
