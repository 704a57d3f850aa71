package netfault

import (
	"bytes"
	"errors"
	"io"
	"net"
	"os"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"
)

// upstream is a loopback echo server that counts what reaches it.
type upstream struct {
	ln       net.Listener
	accepted atomic.Int64
	received atomic.Int64
	mu       sync.Mutex
	conns    []net.Conn
}

func newUpstream(t *testing.T) *upstream {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	u := &upstream{ln: ln}
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			u.accepted.Add(1)
			u.mu.Lock()
			u.conns = append(u.conns, c)
			u.mu.Unlock()
			go func() {
				buf := make([]byte, 4096)
				for {
					n, err := c.Read(buf)
					u.received.Add(int64(n))
					if n > 0 {
						c.Write(buf[:n])
					}
					if err != nil {
						c.Close()
						return
					}
				}
			}()
		}
	}()
	t.Cleanup(func() {
		ln.Close()
		u.mu.Lock()
		defer u.mu.Unlock()
		for _, c := range u.conns {
			c.Close()
		}
	})
	return u
}

func newProxy(t *testing.T, u *upstream) *Proxy {
	t.Helper()
	p, err := New(u.ln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { p.Close() })
	return p
}

func dial(t *testing.T, p *Proxy) net.Conn {
	t.Helper()
	c, err := net.Dial("tcp", p.Addr())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}

// roundTrip writes msg and reads the echo within d.
func roundTrip(c net.Conn, msg []byte, d time.Duration) error {
	if _, err := c.Write(msg); err != nil {
		return err
	}
	_ = c.SetReadDeadline(time.Now().Add(d))
	got := make([]byte, len(msg))
	if _, err := io.ReadFull(c, got); err != nil {
		return err
	}
	if !bytes.Equal(got, msg) {
		return errors.New("echo differs")
	}
	return nil
}

func TestPassForwards(t *testing.T) {
	u := newUpstream(t)
	p := newProxy(t, u)
	c := dial(t, p)
	msg := bytes.Repeat([]byte("kmigrate"), 20000) // several buffers
	errc := make(chan error, 1)
	go func() { errc <- roundTrip(c, msg, 5*time.Second) }()
	if err := <-errc; err != nil {
		t.Fatalf("round trip through the proxy: %v", err)
	}
	if got := u.received.Load(); got != int64(len(msg)) {
		t.Fatalf("upstream received %d bytes, want %d", got, len(msg))
	}
}

// TestBlackholeHoldsThenPasses: during a blackhole an open connection forwards nothing and
// is neither reset nor closed, a new connection is accepted but not dialled through; when the
// fault's duration ends the proxy passes again by itself and the held bytes arrive.
func TestBlackholeHoldsThenPasses(t *testing.T) {
	u := newUpstream(t)
	p := newProxy(t, u)
	c := dial(t, p)
	if err := roundTrip(c, []byte("before"), 5*time.Second); err != nil {
		t.Fatalf("before the fault: %v", err)
	}
	recv, acc := u.received.Load(), u.accepted.Load()
	const hold = 700 * time.Millisecond
	start := time.Now()
	if err := p.Blackhole(hold); err != nil {
		t.Fatal(err)
	}
	if m := p.Mode(); m != Blackhole {
		t.Fatalf("mode %s, want blackhole", m)
	}
	c2 := dial(t, p) // accepted by the proxy: the dial itself succeeds
	if _, err := c.Write([]byte("during")); err != nil {
		t.Fatalf("write during the blackhole: %v", err)
	}
	if _, err := c2.Write([]byte("new")); err != nil {
		t.Fatalf("write on a new connection during the blackhole: %v", err)
	}
	_ = c.SetReadDeadline(time.Now().Add(hold / 2))
	_, err := c.Read(make([]byte, 16))
	if !errors.Is(err, os.ErrDeadlineExceeded) {
		t.Fatalf("read during the blackhole: %v, want a timeout (no data, no reset, no EOF)", err)
	}
	if got := u.received.Load(); got != recv {
		t.Fatalf("upstream received %d bytes during the blackhole", got-recv)
	}
	if got := u.accepted.Load(); got != acc {
		t.Fatalf("upstream accepted %d connections during the blackhole", got-acc)
	}
	got := make([]byte, len("during"))
	_ = c.SetReadDeadline(time.Now().Add(5 * time.Second))
	if _, err := io.ReadFull(c, got); err != nil || string(got) != "during" {
		t.Fatalf("after the blackhole: read %q, %v; want the held bytes", got, err)
	}
	if el := time.Since(start); el < hold {
		t.Fatalf("held bytes arrived after %s, before the fault's %s ended", el, hold)
	}
	if m := p.Mode(); m != Pass {
		t.Fatalf("mode %s after the fault's duration, want pass", m)
	}
	got = make([]byte, 3)
	_ = c2.SetReadDeadline(time.Now().Add(5 * time.Second))
	if _, err := io.ReadFull(c2, got); err != nil || string(got) != "new" {
		t.Fatalf("connection accepted during the blackhole: read %q, %v after it", got, err)
	}
}

// TestBlackholeHoldsClose: a client's close during a blackhole does not reach the upstream
// until the blackhole ends.
func TestBlackholeHoldsClose(t *testing.T) {
	u := newUpstream(t)
	p := newProxy(t, u)
	c := dial(t, p)
	if err := roundTrip(c, []byte("x"), 5*time.Second); err != nil {
		t.Fatal(err)
	}
	if err := p.Blackhole(time.Minute); err != nil {
		t.Fatal(err)
	}
	c.Close()
	// The link must still be there: a forwarded close would end it.
	time.Sleep(200 * time.Millisecond) // the fault is the point: give a forwarded FIN time to go
	p.mu.Lock()
	n := len(p.links)
	p.mu.Unlock()
	if n != 1 {
		t.Fatalf("%d links during the blackhole after the client closed, want 1 (the close held)", n)
	}
	p.Pass()
	deadline := time.Now().Add(5 * time.Second)
	for {
		p.mu.Lock()
		n = len(p.links)
		p.mu.Unlock()
		if n == 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("link still open 5 s after the blackhole ended")
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// TestResetResets: Reset sends a TCP reset on open connections and on connections accepted
// while it lasts, then passes by itself.
func TestResetResets(t *testing.T) {
	u := newUpstream(t)
	p := newProxy(t, u)
	c := dial(t, p)
	if err := roundTrip(c, []byte("x"), 5*time.Second); err != nil {
		t.Fatal(err)
	}
	const hold = 500 * time.Millisecond
	if err := p.Reset(hold); err != nil {
		t.Fatal(err)
	}
	_ = c.SetReadDeadline(time.Now().Add(5 * time.Second))
	if _, err := c.Read(make([]byte, 1)); !errors.Is(err, syscall.ECONNRESET) {
		t.Fatalf("read on an open connection after Reset: %v, want ECONNRESET", err)
	}
	// The reset may come before connect returns or on the first read.
	if c2, err := net.Dial("tcp", p.Addr()); err == nil {
		_ = c2.SetReadDeadline(time.Now().Add(5 * time.Second))
		_, err = c2.Read(make([]byte, 1))
		c2.Close()
		if !errors.Is(err, syscall.ECONNRESET) {
			t.Fatalf("read on a connection made during Reset: %v, want ECONNRESET", err)
		}
	} else if !errors.Is(err, syscall.ECONNRESET) {
		t.Fatalf("dial during Reset: %v, want success or ECONNRESET", err)
	}
	time.Sleep(hold + 100*time.Millisecond) // the fault's own duration
	if m := p.Mode(); m != Pass {
		t.Fatalf("mode %s after the reset window, want pass", m)
	}
	if err := roundTrip(dial(t, p), []byte("after"), 5*time.Second); err != nil {
		t.Fatalf("after the reset window: %v", err)
	}
}

// TestLaterFaultWins: an earlier fault's timer does not end a later fault.
func TestLaterFaultWins(t *testing.T) {
	p := newProxy(t, newUpstream(t))
	if err := p.Blackhole(100 * time.Millisecond); err != nil {
		t.Fatal(err)
	}
	if err := p.Blackhole(time.Minute); err != nil {
		t.Fatal(err)
	}
	time.Sleep(300 * time.Millisecond) // past the first fault's end
	if m := p.Mode(); m != Blackhole {
		t.Fatalf("mode %s: the first fault's timer ended the second", m)
	}
	p.Pass()
	if m := p.Mode(); m != Pass {
		t.Fatalf("mode %s after Pass", m)
	}
}

func TestRefusals(t *testing.T) {
	for _, up := range []string{"10.0.0.1:9092", "192.168.1.2:1", "example.com:9092", "127.0.0.1", "127.0.0.1:http", "[::]:9092", "0.0.0.0:9092"} {
		if p, err := New(up); err == nil {
			p.Close()
			t.Errorf("New(%q): got a proxy, want a refusal", up)
		}
	}
	for _, up := range []string{"127.0.0.1:9092", "127.1.2.3:1", "[::1]:9092"} {
		p, err := New(up)
		if err != nil {
			t.Errorf("New(%q): %v", up, err)
			continue
		}
		if host, _, _ := net.SplitHostPort(p.Addr()); host != "127.0.0.1" {
			t.Errorf("proxy listens on %s, want 127.0.0.1", p.Addr())
		}
		p.Close()
	}
	p := newProxy(t, newUpstream(t))
	for _, d := range []time.Duration{0, -time.Second, MaxFault + time.Second} {
		if err := p.Blackhole(d); err == nil {
			t.Errorf("Blackhole(%s): accepted, want a refusal (unbounded or negative)", d)
		}
	}
	if err := p.Reset(-time.Second); err == nil {
		t.Errorf("Reset(-1s): accepted")
	}
	p.Close()
	if err := p.Blackhole(time.Second); err == nil {
		t.Errorf("Blackhole on a closed proxy: accepted")
	}
}

// TestCloseEndsLinks: Close returns with connections open and blackholed (no goroutine left
// waiting on the gate) and the client sees its connection end.
func TestCloseEndsLinks(t *testing.T) {
	u := newUpstream(t)
	p, err := New(u.ln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	c := dial(t, p)
	if err := roundTrip(c, []byte("x"), 5*time.Second); err != nil {
		t.Fatal(err)
	}
	if err := p.Blackhole(time.Minute); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- p.Close() }()
	select {
	case <-done:
	case <-time.After(5 * time.Second):
		t.Fatal("Close did not return within 5 s with a blackholed link")
	}
	_ = c.SetReadDeadline(time.Now().Add(5 * time.Second))
	if _, err := c.Read(make([]byte, 1)); err == nil || errors.Is(err, os.ErrDeadlineExceeded) {
		t.Fatalf("read after Close: %v, want the connection ended", err)
	}
}
