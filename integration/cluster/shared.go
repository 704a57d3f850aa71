package cluster

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"testing"
)

// Shared is a cluster that the tests of one test binary share: started at most once, by the
// first Start or T, whichever test calls it first, and stopped by Close (TestMain, after
// m.Run) or CloseAll. Tests on a shared cluster must leave it whole (no broker stopped, killed,
// frozen or restarted) and name their topics, groups and transactional ids uniquely, asserting
// only on what they created. The zero value is not usable: set Spec.
type Shared struct {
	Spec Spec

	once sync.Once
	c    Cluster
	err  error
}

// Start starts the cluster on the first call and returns it, or the error of that first
// start, on every call. Calls may come from several goroutines at once; all wait for the one
// start.
func (s *Shared) Start() (Cluster, error) {
	s.once.Do(func() {
		ctx, cancel := context.WithTimeout(context.Background(), startTimeout)
		defer cancel()
		s.c, s.err = Start(ctx, s.Spec)
	})
	return s.c, s.err
}

// T is Start for a test: it skips or fails the test as StartT does when the cluster cannot
// start (a failed first start fails or skips every test that asks), and prints the tail of
// the cluster's logs when the test fails. The cluster outlives the test.
func (s *Shared) T(t testing.TB) Cluster {
	t.Helper()
	if testing.Short() && s.Spec.Version != Kfake && s.Spec.Provider != ProviderKfake {
		t.Skipf("skip: -short: no real %s brokers", s.Spec.Version)
	}
	c, err := s.Start()
	if err != nil {
		skipOrFail(t, err)
		return nil
	}
	t.Logf("cluster %s (shared): %s on %s, bootstrap %s", c.Name(), c.Version(), providerOf(c), strings.Join(c.Bootstrap(), ","))
	t.Cleanup(func() {
		if t.Failed() {
			if l, ok := c.(Logger); ok {
				for _, f := range l.LogFiles() {
					t.Logf("tail of %s (shared with other tests):\n%s", f, Tail(f, tailLines))
				}
			}
		}
	})
	return c
}

// Close stops the cluster if it was started; a Start after it starts nothing.
func (s *Shared) Close() error {
	s.once.Do(func() { s.err = fmt.Errorf("shared cluster %s: closed before it started", s.Spec.Name) })
	if s.c == nil {
		return nil
	}
	return s.c.Close()
}
