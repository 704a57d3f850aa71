package mirror

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"syscall"
	"testing"

	"github.com/twmb/franz-go/pkg/kerr"
)

// TestIsTransient: a restart of the engine is for what a new start gets past, and for nothing
// an operator must act on.
func TestIsTransient(t *testing.T) {
	t.Parallel()
	wrap := func(err error) error {
		return fmt.Errorf("target cluster B: write offset map of transaction g-t-0: %w", err)
	}
	tests := []struct {
		name string
		err  error
		want bool
	}{
		{"coordinator not available", wrap(kerr.CoordinatorNotAvailable), true},
		{"not coordinator", wrap(kerr.NotCoordinator), true},
		{"request timed out", wrap(kerr.RequestTimedOut), true},
		{"connection refused", wrap(&net.OpError{Op: "dial", Net: "tcp", Err: syscall.ECONNREFUSED}), true},
		{"connection reset", wrap(syscall.ECONNRESET), true},
		{"nil", nil, false},
		{"fenced", fmt.Errorf("partition t/0: commit: %w (%v)", errFenced, kerr.ProducerFenced), false},
		{"producer fenced", wrap(kerr.ProducerFenced), false},
		{"producer id mapping lost, partition still assigned", fmt.Errorf("target cluster B: partition t/0: transactional id g-bucket-0-of-16: %w", errLostProducerID), true},
		{"producer id mapping lost in a commit", fmt.Errorf("transaction g-bucket-0-of-16: commit: %w (%w)", errFenced, kerr.InvalidProducerIDMapping), false},
		{"commit bound", wrap(fmt.Errorf("within 90s (the commit bound): %w", context.DeadlineExceeded)), false},
		{"canceled", wrap(context.Canceled), false},
		{"topic gone", wrap(kerr.UnknownTopicOrPartition), false},
		{"authorization", wrap(kerr.TopicAuthorizationFailed), false},
		{"record too large", wrap(kerr.MessageTooLarge), false},
		{"safety stop", errors.New("source cluster A: topic t was recreated"), false},
	}
	for _, tt := range tests {
		if got := IsTransient(tt.err); got != tt.want {
			t.Errorf("%s: IsTransient(%v) = %v, want %v", tt.name, tt.err, got, tt.want)
		}
	}
}

// TestSupervisorHandlersBeforeStart: before the first engine exists, readiness and metrics
// answer 503, not a panic on the missing engine.
func TestSupervisorHandlersBeforeStart(t *testing.T) {
	t.Parallel()
	s := &Supervisor{}
	for name, h := range map[string]http.Handler{"ready": s.ReadyHandler(), "metrics": s.MetricsHandler()} {
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/", nil))
		if rec.Code != http.StatusServiceUnavailable {
			t.Errorf("%s before start: got %d, want 503", name, rec.Code)
		}
	}
}
