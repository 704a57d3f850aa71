package testkit

import (
	"context"
	"net"
	"testing"
	"time"
)

// Context returns a context that ends after d, or when the test ends.
func Context(t testing.TB, d time.Duration) context.Context {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), d)
	t.Cleanup(cancel)
	return ctx
}

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

// FreeAddr returns a loopback TCP address that was free a moment ago, for a server the test
// starts (a metrics endpoint).
func FreeAddr(t testing.TB) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	return ln.Addr().String()
}
