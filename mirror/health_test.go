package mirror_test

import (
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/kmigrate/kmigrate/internal/testkit"
	"github.com/kmigrate/kmigrate/mirror"
)

// readyz asks e's /readyz handler.
func readyz(e *mirror.Engine) (int, string) {
	rec := httptest.NewRecorder()
	e.ReadyHandler().ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/readyz", nil))
	return rec.Code, rec.Body.String()
}

func wantReadyz(t *testing.T, e *mirror.Engine, code int, body string) {
	t.Helper()
	gotCode, gotBody := readyz(e)
	if gotCode != code || !strings.Contains(gotBody, body) {
		t.Fatalf("/readyz: got %d %q, want %d with %q", gotCode, gotBody, code, body)
	}
}

// gate blocks a hook until opened, and tells when the hook was entered.
type gate struct {
	entered chan struct{}
	open    chan struct{}
}

func newGate() *gate { return &gate{entered: make(chan struct{}, 64), open: make(chan struct{})} }

func (g *gate) hook() {
	g.entered <- struct{}{}
	<-g.open
}

func (g *gate) waitEntered(t *testing.T, what string) {
	t.Helper()
	select {
	case <-g.entered:
	case <-time.After(30 * time.Second):
		t.Fatalf("timed out waiting for %s", what)
	}
}

// gatedEngine is an engine of topic whose resumes wait for g.
func gatedEngine(t *testing.T, p pair, topic string, g *gate) *mirror.Engine {
	t.Helper()
	e, err := mirror.New(testConfig(topic), seeds(p.src), seeds(p.dst), testLogger(t))
	if err != nil {
		t.Fatal(err)
	}
	e.SetBeforeResume(g.hook)
	return e
}

// TestReadyz follows /readyz through an engine's life: 503 before Run, 503 while its assigned
// partitions resume (held by a hook), 200 once they are; when a second engine joins, the first
// one's revoke callback sees 503 (a rebalance), the second answers 503 while its share resumes
// and the first is ready meanwhile; both 200 after; 503 once stopped.
func TestReadyz(t *testing.T) {
	t.Parallel()
	p := newPair(t)
	const topic, parts = "orders-ready", 4
	testkit.CreateTopic(t, testkit.Client(t, p.src), topic, parts, nil)
	produce(t, p.src, topic, parts, 0, 50)

	g1 := newGate()
	e1 := gatedEngine(t, p, topic, g1)
	var mu sync.Mutex
	var duringRevoke []string // what e1's Ready said inside its revoke callbacks
	e1.SetDuringRevoke(func() {
		ok, why := e1.Ready()
		mu.Lock()
		defer mu.Unlock()
		if ok {
			why = "ready: " + why
		}
		duringRevoke = append(duringRevoke, why)
	})
	wantReadyz(t, e1, http.StatusServiceUnavailable, "not started")

	stop1 := run(t, e1)
	g1.waitEntered(t, "engine 1 to resume its partitions")
	wantReadyz(t, e1, http.StatusServiceUnavailable, "resuming 4 of 4 assigned partitions")
	close(g1.open)
	waitFor(t, "engine 1 ready", func() bool { ok, _ := e1.Ready(); return ok })
	wantReadyz(t, e1, http.StatusOK, "ready: 4 assigned partitions resumed")

	g2 := newGate()
	e2 := gatedEngine(t, p, topic, g2)
	stop2 := run(t, e2)
	g2.waitEntered(t, "engine 2 to resume its share")
	mu.Lock()
	revokes := append([]string(nil), duringRevoke...)
	mu.Unlock()
	if len(revokes) == 0 {
		t.Fatal("engine 1 had no revoke callback before engine 2 got partitions")
	}
	for _, why := range revokes {
		if !strings.Contains(why, "rebalance of it is under way") {
			t.Errorf("engine 1 during a revoke: Ready said %q, want not ready (a rebalance)", why)
		}
	}
	wantReadyz(t, e2, http.StatusServiceUnavailable, "resuming 2 of 2 assigned partitions")
	waitFor(t, "engine 1 ready again while engine 2 resumes", func() bool { ok, _ := e1.Ready(); return ok })
	wantReadyz(t, e1, http.StatusOK, "ready: 2 assigned partitions resumed")

	close(g2.open)
	waitFor(t, "engine 2 ready", func() bool { ok, _ := e2.Ready(); return ok })
	wantReadyz(t, e2, http.StatusOK, "ready: 2 assigned partitions resumed")
	if n := count(e1.Owned()) + count(e2.Owned()); n != parts {
		t.Errorf("engines own %d partitions together, want %d", n, parts)
	}

	if err := stop2(); err != nil {
		t.Fatalf("Run 2: %v", err)
	}
	wantReadyz(t, e2, http.StatusServiceUnavailable, "draining")
	if err := stop1(); err != nil {
		t.Fatalf("Run 1: %v", err)
	}
}

func TestHealthz(t *testing.T) {
	rec := httptest.NewRecorder()
	mirror.LiveHandler().ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/healthz", nil))
	if rec.Code != http.StatusOK || rec.Body.String() != "ok\n" {
		t.Fatalf("/healthz: got %d %q, want 200 \"ok\\n\"", rec.Code, rec.Body.String())
	}
}
