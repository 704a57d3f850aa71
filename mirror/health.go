package mirror

import (
	"context"
	"fmt"
	"net/http"
	"sort"
	"sync"

	"github.com/twmb/franz-go/pkg/kgo"
)

// health is what Ready answers (/readyz), from the group's callbacks.
//
// franz-go ends a group session, at every rebalance of the group, with a revoke callback
// (cooperative: the partitions this member gives up, possibly none) and begins the next with
// an assign callback (always called, with the partitions added, possibly none); the resume of
// added partitions (onAssigned, the fetch offset adjustment) runs after it. So: not ready
// from a revoke until the next assign (a rebalance is under way), and then until every
// partition assigned and not revoked since has been resumed (is in e.parts).
type health struct {
	mu       sync.Mutex
	running  bool   // Run is past its start and not draining
	why      string // why not running
	session  bool   // a group session is under way: assigned since the last revoke or loss
	assigned map[tp]bool
}

func (h *health) setRunning(running bool, why string) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.running, h.why = running, why
}

// ended ends the group session and forgets what the group took back.
func (h *health) ended(revoked map[string][]int32) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.session = false
	for t, ps := range revoked {
		for _, p := range ps {
			delete(h.assigned, tp{t, p})
		}
	}
}

// onSessionAssigned is the group's assign callback: a session began with these partitions
// added (their resume follows).
func (e *Engine) onSessionAssigned(_ context.Context, _ *kgo.Client, added map[string][]int32) {
	h := &e.health
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.assigned == nil {
		h.assigned = map[tp]bool{}
	}
	h.session = true
	for t, ps := range added {
		for _, p := range ps {
			h.assigned[tp{t, p}] = true
		}
	}
}

// onSessionRevoked is the group's revoke callback: a rebalance began (or this process leaves).
func (e *Engine) onSessionRevoked(ctx context.Context, cl *kgo.Client, revoked map[string][]int32) {
	e.health.ended(revoked)
	if e.testHooks.duringRevoke != nil {
		e.testHooks.duringRevoke()
	}
	e.onRevoked(ctx, cl, revoked)
}

// onSessionLost is the group's lost callback: the session ended without a clean revoke.
func (e *Engine) onSessionLost(ctx context.Context, cl *kgo.Client, lost map[string][]int32) {
	e.health.ended(lost)
	e.onRevoked(ctx, cl, lost)
}

// Ready says whether the engine mirrors everything the group assigned to it: Run is running,
// its group session is not in a rebalance, and every assigned partition's resume has finished
// (a partition stopped at resume counts as resumed: kmirror_partition_stopped reports it). A
// process the group assigned no partition (more processes than partitions) is ready once in a
// session. The string says why not, or what is assigned.
func (e *Engine) Ready() (bool, string) {
	select {
	case <-e.failed:
		return false, "stopped on an error (see the log)"
	default:
	}
	h := &e.health
	h.mu.Lock()
	defer h.mu.Unlock()
	switch {
	case !h.running && h.why != "":
		return false, h.why
	case !h.running:
		return false, "not started"
	case !h.session:
		return false, fmt.Sprintf("joining consumer group %s on cluster %s, or a rebalance of it is under way", e.cfg.GroupID, e.cfg.SourceAlias)
	}
	var waiting []string
	e.mu.Lock()
	for t := range h.assigned {
		if _, ok := e.parts[t]; !ok {
			waiting = append(waiting, t.String())
		}
	}
	e.mu.Unlock()
	if len(waiting) > 0 {
		sort.Strings(waiting)
		return false, fmt.Sprintf("resuming %d of %d assigned partitions (%s first)", len(waiting), len(h.assigned), waiting[0])
	}
	return true, fmt.Sprintf("%d assigned partitions resumed", len(h.assigned))
}

// ReadyHandler serves Ready: 200 when ready, 503 with the reason before.
func (e *Engine) ReadyHandler() http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		ok, why := e.Ready()
		w.Header().Set("Content-Type", "text/plain; charset=utf-8")
		if !ok {
			w.WriteHeader(http.StatusServiceUnavailable)
			fmt.Fprintf(w, "not ready: %s\n", why)
			return
		}
		fmt.Fprintf(w, "ready: %s\n", why)
	})
}

// LiveHandler answers 200 while the process serves HTTP (/healthz): a stopped engine ends the
// process, so liveness needs nothing more.
func LiveHandler() http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "text/plain; charset=utf-8")
		fmt.Fprintln(w, "ok")
	})
}
