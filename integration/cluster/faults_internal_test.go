package cluster

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"
)

// The cgroup freezer's give-up is staged by a pause function that fails with Docker's
// message a set number of times; retryFreeze must ask again exactly as often as it needs,
// never retry any other error, and stop at its bound or the context's end.
func TestRetryFreeze(t *testing.T) {
	v1 := errors.New("Error response from daemon: Cannot pause container f22d: OCI runtime pause failed: unable to freeze: unknown")
	v2 := errors.New("Error response from daemon: cannot pause container f22d: OCI runtime pause failed: timeout of 10s reached: unknown")
	other := errors.New("Error response from daemon: Container f22d is not running")
	staged := func(fails int, freezeErr error, calls *int) func() error {
		return func() error {
			*calls++
			if *calls <= fails {
				return freezeErr
			}
			return nil
		}
	}
	for _, c := range []struct {
		name      string
		fails     int
		err       error
		wantCalls int
		wantErr   string
	}{
		{"first attempt", 0, v1, 1, ""},
		{"v1 freezer gives up twice", 2, v1, 3, ""},
		{"v2 freezer times out four times", 4, v2, 5, ""},
		{"freezer never succeeds", 99, v1, 5, "failed 5 times"},
		{"other error is not retried", 99, other, 1, "is not running"},
	} {
		t.Run(c.name, func(t *testing.T) {
			calls := 0
			err := retryFreeze(context.Background(), 5, time.Microsecond, staged(c.fails, c.err, &calls))
			if calls != c.wantCalls {
				t.Errorf("pause called %d times, want %d", calls, c.wantCalls)
			}
			switch {
			case c.wantErr == "" && err != nil:
				t.Errorf("err = %v, want nil", err)
			case c.wantErr != "" && (err == nil || !strings.Contains(err.Error(), c.wantErr)):
				t.Errorf("err = %v, want one containing %q", err, c.wantErr)
			}
		})
	}
	t.Run("context ends between attempts", func(t *testing.T) {
		ctx, cancel := context.WithCancel(context.Background())
		calls := 0
		err := retryFreeze(ctx, 5, time.Hour, func() error {
			calls++
			cancel()
			return v1
		})
		if calls != 1 || !errors.Is(err, context.Canceled) {
			t.Errorf("calls %d, err %v; want 1 call and context.Canceled", calls, err)
		}
	})
}
