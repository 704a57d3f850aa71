package netfault

import (
	"errors"
	"fmt"
	"io"
	"net"
	"strconv"
	"sync"
	"time"
)

// Mode is what the proxy does with traffic.
type Mode int

// The modes (see the package doc).
const (
	Pass Mode = iota
	Blackhole
	Reset
)

func (m Mode) String() string {
	switch m {
	case Pass:
		return "pass"
	case Blackhole:
		return "blackhole"
	case Reset:
		return "reset"
	}
	return "mode(" + strconv.Itoa(int(m)) + ")"
}

// MaxFault is the longest fault a proxy accepts.
const MaxFault = 10 * time.Minute

// dialTimeout bounds the dial of the upstream for each accepted connection.
const dialTimeout = 5 * time.Second

// Proxy forwards connections from its loopback address to one loopback upstream. Its methods
// are safe for concurrent use.
type Proxy struct {
	ln       net.Listener
	upstream string

	mu     sync.Mutex
	mode   Mode
	gen    uint64        // bumped by every mode change: an old fault's timer does not end a newer one
	gate   chan struct{} // closed unless the mode is Blackhole
	timer  *time.Timer
	links  map[*link]struct{}
	closed bool
	wg     sync.WaitGroup
}

// link is one proxied connection: the client's side and the upstream's (nil until dialled).
type link struct {
	client, up net.Conn
	done       chan struct{} // closed when the link is torn down
	once       sync.Once
}

// New starts a proxy on 127.0.0.1 (a free port) forwarding to upstream, a host:port whose
// host is a loopback IP address or resolves only to loopback addresses ("localhost").
func New(upstream string) (*Proxy, error) {
	if err := checkLoopback(upstream); err != nil {
		return nil, err
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, fmt.Errorf("netfault: listen on 127.0.0.1: %w", err)
	}
	gate := make(chan struct{})
	close(gate)
	p := &Proxy{ln: ln, upstream: upstream, gate: gate, links: map[*link]struct{}{}}
	p.wg.Add(1)
	go p.accept()
	return p, nil
}

// checkLoopback refuses an upstream that is not host:port on the loopback.
func checkLoopback(upstream string) error {
	host, port, err := net.SplitHostPort(upstream)
	if err != nil {
		return fmt.Errorf("netfault: upstream %q: want host:port on the loopback: %w", upstream, err)
	}
	if _, err := strconv.ParseUint(port, 10, 16); err != nil {
		return fmt.Errorf("netfault: upstream %q: port %q is not a number from 0 to 65535", upstream, port)
	}
	if ip := net.ParseIP(host); ip != nil {
		if !ip.IsLoopback() {
			return fmt.Errorf("netfault: upstream %q is not a loopback address: the proxy only forwards to 127.0.0.0/8 or ::1", upstream)
		}
		return nil
	}
	if host != "localhost" {
		return fmt.Errorf("netfault: upstream %q: give a loopback IP address or localhost, not a host name", upstream)
	}
	ips, err := net.LookupIP(host)
	if err != nil || len(ips) == 0 {
		return fmt.Errorf("netfault: upstream %q: resolve localhost: %v", upstream, err)
	}
	for _, ip := range ips {
		if !ip.IsLoopback() {
			return fmt.Errorf("netfault: upstream %q: localhost resolves to %s, not a loopback address", upstream, ip)
		}
	}
	return nil
}

// Addr is the proxy's address, 127.0.0.1:port.
func (p *Proxy) Addr() string { return p.ln.Addr().String() }

// Port is the proxy's port.
func (p *Proxy) Port() int { return p.ln.Addr().(*net.TCPAddr).Port }

// Upstream is the address the proxy forwards to.
func (p *Proxy) Upstream() string { return p.upstream }

// Mode is the current mode.
func (p *Proxy) Mode() Mode {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.mode
}

// Blackhole drops all traffic for d (0 < d <= MaxFault), then passes again by itself.
func (p *Proxy) Blackhole(d time.Duration) error { return p.fault(Blackhole, d) }

// Reset resets every open connection now and every connection accepted in the next d
// (0 <= d <= MaxFault; 0 resets the open ones only), then passes again by itself.
func (p *Proxy) Reset(d time.Duration) error { return p.fault(Reset, d) }

// Pass ends any fault now.
func (p *Proxy) Pass() {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.setLocked(Pass, 0)
}

func (p *Proxy) fault(m Mode, d time.Duration) error {
	if d < 0 || d > MaxFault || (m == Blackhole && d == 0) {
		return fmt.Errorf("netfault: %s for %s: a fault lasts more than 0 and at most %s", m, d, MaxFault)
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.closed {
		return fmt.Errorf("netfault: proxy %s is closed", p.Addr())
	}
	p.setLocked(m, d)
	return nil
}

// setLocked switches to m; a fault returns to Pass after d.
func (p *Proxy) setLocked(m Mode, d time.Duration) {
	p.gen++
	if p.timer != nil {
		p.timer.Stop()
		p.timer = nil
	}
	if m == Blackhole && isClosed(p.gate) {
		p.gate = make(chan struct{})
	}
	if m != Blackhole && !isClosed(p.gate) {
		close(p.gate)
	}
	p.mode = m
	if m == Reset {
		for l := range p.links {
			l.teardown(true)
		}
	}
	if m != Pass && d > 0 {
		gen := p.gen
		p.timer = time.AfterFunc(d, func() {
			p.mu.Lock()
			defer p.mu.Unlock()
			if p.gen == gen {
				p.setLocked(Pass, 0)
			}
		})
	} else if m == Reset {
		p.mode = Pass // d == 0: the open connections only
	}
}

// isClosed says whether ch is closed (a gate lets traffic through when it is).
func isClosed(ch chan struct{}) bool {
	select {
	case <-ch:
		return true
	default:
		return false
	}
}

// Close stops the proxy and closes every connection (with a reset).
func (p *Proxy) Close() error {
	p.mu.Lock()
	if p.closed {
		p.mu.Unlock()
		return nil
	}
	p.closed = true
	p.setLocked(Pass, 0)
	for l := range p.links {
		l.teardown(true)
	}
	p.mu.Unlock()
	err := p.ln.Close()
	p.wg.Wait()
	return err
}

func (p *Proxy) accept() {
	defer p.wg.Done()
	for {
		c, err := p.ln.Accept()
		if err != nil {
			if errors.Is(err, net.ErrClosed) {
				return
			}
			time.Sleep(10 * time.Millisecond) // e.g. too many open files: try again
			continue
		}
		l := &link{client: c, done: make(chan struct{})}
		p.mu.Lock()
		if p.closed || p.mode == Reset {
			p.mu.Unlock()
			l.teardown(true)
			continue
		}
		p.links[l] = struct{}{}
		p.wg.Add(1)
		p.mu.Unlock()
		go p.serve(l)
	}
}

// wait blocks while the proxy is a blackhole; false when the link was torn down meanwhile.
func (p *Proxy) wait(l *link) bool {
	p.mu.Lock()
	gate := p.gate
	p.mu.Unlock()
	select {
	case <-gate:
	case <-l.done:
		return false
	}
	select {
	case <-l.done:
		return false
	default:
		return true
	}
}

// serve dials the upstream once traffic passes and pumps both ways until both are done.
func (p *Proxy) serve(l *link) {
	defer p.wg.Done()
	defer func() {
		p.mu.Lock()
		delete(p.links, l)
		p.mu.Unlock()
	}()
	if !p.wait(l) {
		return
	}
	up, err := net.DialTimeout("tcp", p.upstream, dialTimeout)
	if err != nil {
		l.teardown(true) // as the upstream's own refusal would: a reset
		return
	}
	p.mu.Lock()
	l.up = up
	torn := isClosed(l.done)
	p.mu.Unlock()
	if torn {
		reset(up)
		return
	}
	var wg sync.WaitGroup
	wg.Go(func() { p.pump(l, l.client, up) })
	wg.Go(func() { p.pump(l, up, l.client) })
	wg.Wait()
	l.teardown(false)
}

// pump copies src to dst, holding every chunk (and the end of the stream) while the proxy is
// a blackhole. An end of stream is forwarded as a half-close; an error tears the link down
// with resets, as the network would.
func (p *Proxy) pump(l *link, src, dst net.Conn) {
	buf := make([]byte, 32<<10)
	for {
		n, err := src.Read(buf)
		if !p.wait(l) {
			return
		}
		if n > 0 {
			if _, werr := dst.Write(buf[:n]); werr != nil {
				l.teardown(true)
				return
			}
		}
		if err == io.EOF {
			if tc, ok := dst.(*net.TCPConn); ok {
				_ = tc.CloseWrite()
			}
			return
		}
		if err != nil {
			l.teardown(true)
			return
		}
	}
}

// teardown closes both sides once, with a reset when rst is set.
func (l *link) teardown(rst bool) {
	l.once.Do(func() {
		close(l.done)
		for _, c := range []net.Conn{l.client, l.up} {
			if c == nil {
				continue
			}
			if rst {
				reset(c)
			} else {
				c.Close()
			}
		}
	})
}

// reset closes c with a TCP reset instead of a FIN.
func reset(c net.Conn) {
	if tc, ok := c.(*net.TCPConn); ok {
		_ = tc.SetLinger(0)
	}
	c.Close()
}
