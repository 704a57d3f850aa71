package integration

import (
	"slices"
	"sync"
	"testing"
)

// TestBedGateOrder: bedGate admits its queue in order, the long tests first, whatever order
// their goroutines reach it in, and never more than its limit at once.
func TestBedGateOrder(t *testing.T) {
	g := &bedGateQueue{limit: 1}
	g.cond.L = &g.mu
	names := []string{"short-a", "long-b", "short-c", "long-d"}
	tickets := map[string]*bedTicket{}
	for _, n := range names {
		tickets[n] = g.register(n[:4] == "long")
	}
	var (
		mu    sync.Mutex
		order []string
		wg    sync.WaitGroup
	)
	for _, n := range slices.Backward(names) { // reach acquire in the reverse order
		wg.Go(func() {
			g.acquire(tickets[n])
			g.mu.Lock()
			if g.running > g.limit {
				t.Errorf("%d running, limit %d", g.running, g.limit)
			}
			g.mu.Unlock()
			mu.Lock()
			order = append(order, n)
			mu.Unlock()
			g.release()
		})
	}
	wg.Wait()
	if want := []string{"long-b", "long-d", "short-a", "short-c"}; !slices.Equal(order, want) {
		t.Fatalf("admitted %v, want %v", order, want)
	}
}
