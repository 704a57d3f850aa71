package cluster

import (
	"context"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/testcontainers/testcontainers-go"
)

// TestReapContainers checks that Reap removes the containers of a starter that has ended and
// leaves those of a live one: what Ryuk would do, without its image.
func TestReapContainers(t *testing.T) {
	if testing.Short() {
		t.Skip("skip: -short: no containers")
	}
	if err := dockerAvailable(); err != nil {
		if os.Getenv(EnvRequireContainers) == "1" {
			t.Fatalf("%v (%s=1 makes this a failure)", err, EnvRequireContainers)
		}
		t.Skipf("skip: %v", err)
	}
	setupTestcontainers()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	image := Image(EnvImageKmigrate)
	if err := imagePresent(ctx, image); err != nil {
		if os.Getenv(EnvRequireContainers) == "1" {
			t.Fatalf("%v (%s=1 makes this a failure)", err, EnvRequireContainers)
		}
		t.Skipf("skip: %v", err)
	}
	run := func(owner string) testcontainers.Container {
		// kmirror --version exits at once: a stopped container, as a killed run leaves them.
		ctr, err := testcontainers.Run(ctx, image, testcontainers.WithCmd("--version"),
			testcontainers.WithLabels(map[string]string{ownerLabel: owner}))
		if err != nil {
			t.Fatalf("run %s: %v", image, err)
		}
		t.Cleanup(func() { _ = ctr.Terminate(context.Background()) })
		return ctr
	}
	// No process has pid 2^22+1 (above pid_max's default limit); its start time is made up.
	orphan := run("4194305:123")
	mine := run(ownerValue())
	reaped := strings.Join(Reap(), "\n")
	if !strings.Contains(reaped, orphan.GetContainerID()[:12]) {
		t.Errorf("Reap() = %q, want a line for the orphaned container %.12s", reaped, orphan.GetContainerID())
	}
	if strings.Contains(reaped, mine.GetContainerID()[:12]) {
		t.Errorf("Reap() removed %.12s, the container of this live process", mine.GetContainerID())
	}
	if _, err := orphan.State(ctx); err == nil {
		t.Errorf("the orphaned container %.12s still exists after Reap", orphan.GetContainerID())
	}
	if _, err := mine.State(ctx); err != nil {
		t.Errorf("this process's container: %v after Reap, want it kept", err)
	}
}
