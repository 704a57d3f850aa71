package testkit

import (
	"testing"
	"time"
)

// WaitFor calls cond every 20 ms until it returns "" and fails the test when within passes
// first, naming what it waited for and cond's last answer (what was still missing).
func WaitFor(t testing.TB, what string, within time.Duration, cond func() string) {
	t.Helper()
	deadline := time.Now().Add(within)
	last := ""
	for time.Now().Before(deadline) {
		if last = cond(); last == "" {
			return
		}
		time.Sleep(20 * time.Millisecond)
	}
	t.Fatalf("timed out waiting for %s: %s", what, last)
}
