package integration

import (
	"math"
	"os"
	"strings"
	"syscall"
	"testing"
	"time"
)

// The benchmarks' own arithmetic, checked without brokers.

func TestLatHistQuantile(t *testing.T) {
	inf := math.Inf(1)
	// 10 observations before; then 50 more at or under 10 ms, 49 in (10 ms, 100 ms], 1 in (100 ms, 1 s].
	before := map[float64]float64{0.01: 10, 0.1: 10, 1: 10, inf: 10}
	after := map[float64]float64{0.01: 60, 0.1: 109, 1: 110, inf: 110}
	for _, tt := range []struct{ q, want float64 }{{0.5, 0.01}, {0.99, 0.1}, {0.25, 0.005}, {1, 1}} {
		if got := latHistQuantile(before, after, tt.q); math.Abs(got-tt.want) > 1e-9 {
			t.Errorf("q %v: %v, want %v", tt.q, got, tt.want)
		}
	}
	// Past the last finite bound: that bound, as histogram_quantile answers.
	if got := latHistQuantile(map[float64]float64{}, map[float64]float64{1: 1, inf: 2}, 0.9); got != 1 {
		t.Errorf("+Inf bucket: %v, want 1", got)
	}
	if got := latHistQuantile(after, after, 0.5); !math.IsNaN(got) {
		t.Errorf("no observations between the scrapes: %v, want NaN", got)
	}
}

func TestLatQuantile(t *testing.T) {
	s := make([]time.Duration, 100)
	for i := range s {
		s[i] = time.Duration(i+1) * time.Millisecond
	}
	for _, tt := range []struct {
		q    float64
		want time.Duration
	}{{0.5, 50 * time.Millisecond}, {0.99, 99 * time.Millisecond}, {1, 100 * time.Millisecond}, {0, time.Millisecond}} {
		if got := latQuantile(s, tt.q); got != tt.want {
			t.Errorf("q %v: %v, want %v", tt.q, got, tt.want)
		}
	}
}

// TestBPCPU compares bpCPU's reading of /proc/self/stat with the process's own rusage.
func TestBPCPU(t *testing.T) {
	// Burn CPU until the process's own rusage says 250 ms (wall time would not do: on a loaded
	// machine a busy loop gets a share of a core, not the core).
	var ru syscall.Rusage
	cpu := func() time.Duration {
		if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
			t.Fatal(err)
		}
		return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
	}
	for x := 0; cpu() < 250*time.Millisecond; x++ {
		for i := 0; i < 100000; i++ {
			x ^= i
		}
	}
	got, err := bpCPU(os.Getpid())
	if err != nil {
		t.Fatal(err)
	}
	want := cpu()
	if got < 200*time.Millisecond || got > want+50*time.Millisecond || got < want-100*time.Millisecond {
		t.Errorf("bpCPU = %v, rusage says %v (and at least 250ms were burnt)", got, want)
	}
}

// TestBPSteadyGoals: a steady ratio is judged only over a window of at least bpSteadyMin, and
// the records a first commit made visible at once are not counted inside the window. A quick
// run in which 100,000 records became visible in one commit read as 20x the bare loop, "met".
func TestBPSteadyGoals(t *testing.T) {
	burst := bpRun{key: "km", name: "kmirror", wall: 12 * time.Second, steady: 50 * time.Millisecond, atFirst: 100_000}
	burst.finish(100_000, 100_000*1024)
	bare := bpRun{key: "bare", name: "bare franz-go loop", wall: 6 * time.Second, steady: 5 * time.Second, atFirst: 500}
	bare.finish(100_000, 100_000*1024)
	for _, r := range []*bpRun{&burst, &bare} {
		r.copied = r.records
	}
	var b strings.Builder
	bpGoals(&b, map[string]bpRun{"km": burst, "bare": bare})
	if !strings.Contains(b.String(), "steady: 0.00 (goal >= 0.95: too short to judge") || strings.Contains(b.String(), "steady: 0.00 (goal >= 0.95: met") {
		t.Errorf("a run whose records all became visible in one commit:\n%s", b.String())
	}
	long := bpRun{key: "km", name: "kmirror", wall: 70 * time.Second, steady: 60 * time.Second, atFirst: 1_000}
	long.finish(1_000_000, 1_000_000*1024)
	longBare := bpRun{key: "bare", name: "bare franz-go loop", wall: 62 * time.Second, steady: 60 * time.Second, atFirst: 100}
	longBare.finish(1_000_000, 1_000_000*1024)
	long.copied, longBare.copied = long.records, longBare.records
	b.Reset()
	bpGoals(&b, map[string]bpRun{"km": long, "bare": longBare})
	if !strings.Contains(b.String(), "steady: 1.00 (goal >= 0.95: met)") {
		t.Errorf("two runs of 60 s at the same rate:\n%s", b.String())
	}
}
