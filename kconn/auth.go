package kconn

import (
	"context"
	"crypto/tls"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"net"
	"strings"
	"sync"
	"syscall"
	"time"
	"unicode"

	"github.com/twmb/franz-go/pkg/kgo"
)

// AuthError is a SASL login that a broker refused: it either answered
// SASL_AUTHENTICATION_FAILED or closed the connection in the middle of the login, which is
// what brokers do on a wrong password (franz-go alone reports the latter as "EOF"). It names
// the cluster alias, the user, the mechanism and the broker, never the password.
type AuthError struct {
	Cluster   string
	User      string
	Mechanism string
	Broker    string
	// Detail is the broker's own message, or what it did.
	Detail string
}

func (e *AuthError) Error() string {
	return fmt.Sprintf("cluster %s: authentication failed for user %q with SASL %s at broker %s (%s): check the user and password "+
		"(sasl.jaas.config in the MM2 file, or --source/--target-sasl-user and -sasl-password-file/-env) and the mechanism (sasl.mechanism, --source/--target-sasl-mechanism)",
		e.Cluster, e.User, e.Mechanism, e.Broker, e.Detail)
}

// Kafka API keys and the error code the SASL watch looks at.
const (
	apiSASLHandshake       = 17
	apiSASLAuthenticate    = 36
	errSASLAuthFailed      = 58
	maxSASLResponse        = 1 << 20
	defaultDialTimeout     = 10 * time.Second
	flexibleSASLAuthenticV = 2 // SASLAuthenticate v2+ uses flexible (tagged) headers
)

// saslDialer dials brokers (with TLS when tlsCfg is set, as kgo.DialTLSConfig does) and wraps
// each connection so that a refused SASL login becomes an *AuthError.
func saslDialer(tlsCfg *tls.Config, authErr func(broker, detail string) error) kgo.Opt {
	nd := &net.Dialer{Timeout: defaultDialTimeout}
	return kgo.Dialer(func(ctx context.Context, network, host string) (net.Conn, error) {
		var conn net.Conn
		var err error
		if tlsCfg != nil {
			c := tlsCfg.Clone()
			if c.ServerName == "" {
				server, _, err := net.SplitHostPort(host)
				if err != nil {
					return nil, fmt.Errorf("unable to split host:port for dialing: %w", err)
				}
				c.ServerName = server
			}
			conn, err = (&tls.Dialer{NetDialer: nd, Config: c}).DialContext(ctx, network, host)
		} else {
			conn, err = nd.DialContext(ctx, network, host)
		}
		if err != nil {
			return nil, err
		}
		return &saslConn{Conn: conn, fail: func(detail string) error { return authErr(host, detail) }, pendingKey: -1}, nil
	})
}

// saslConn watches the Kafka requests written on a connection. While a SASLHandshake or
// SASLAuthenticate request waits for its answer, it reads that answer whole: an
// authentication error code, or the connection closing, becomes an *AuthError. Other traffic
// passes through untouched.
type saslConn struct {
	net.Conn
	fail func(detail string) error

	// write side (one writer at a time, as franz-go writes)
	hdr  []byte // the first 8 bytes of the request being written
	left int    // bytes of the current request still to come
	off  bool   // the stream is not Kafka framing we understand (raw SASL v0): stop watching

	mu         sync.Mutex
	pendingKey int16 // API key of the SASL request awaiting its response, or -1
	pendingVer int16

	buf []byte // a response read ahead, handed out by Read
}

func (c *saslConn) Write(p []byte) (int, error) {
	c.track(p) // before the write, so the state is set when the answer comes
	return c.Conn.Write(p)
}

func (c *saslConn) track(p []byte) {
	for len(p) > 0 && !c.off {
		if c.left > 0 {
			n := min(c.left, len(p))
			c.left -= n
			p = p[n:]
			continue
		}
		n := min(8-len(c.hdr), len(p))
		c.hdr = append(c.hdr, p[:n]...)
		p = p[n:]
		if len(c.hdr) < 8 {
			return
		}
		size := int(int32(binary.BigEndian.Uint32(c.hdr[:4])))
		key := int16(binary.BigEndian.Uint16(c.hdr[4:6]))
		ver := int16(binary.BigEndian.Uint16(c.hdr[6:8]))
		c.hdr, c.left = c.hdr[:0], size-4
		c.mu.Lock()
		switch {
		case size < 4:
			c.off, c.pendingKey = true, -1
		case key == apiSASLHandshake && ver == 0: // raw SASL tokens follow, not Kafka requests
			c.off, c.pendingKey = true, -1
		case key == apiSASLHandshake || key == apiSASLAuthenticate:
			c.pendingKey, c.pendingVer = key, ver
		default:
			c.pendingKey = -1
		}
		c.mu.Unlock()
	}
}

func (c *saslConn) Read(p []byte) (int, error) {
	if len(c.buf) > 0 {
		n := copy(p, c.buf)
		c.buf = c.buf[n:]
		return n, nil
	}
	c.mu.Lock()
	key, ver := c.pendingKey, c.pendingVer
	c.pendingKey = -1
	c.mu.Unlock()
	if key < 0 {
		return c.Conn.Read(p)
	}
	var size [4]byte
	if _, err := io.ReadFull(c.Conn, size[:]); err != nil {
		return 0, c.readErr(err)
	}
	n := int(int32(binary.BigEndian.Uint32(size[:])))
	if n < 0 || n > maxSASLResponse {
		c.buf = size[:]
		return c.Read(p)
	}
	frame := make([]byte, 4+n)
	copy(frame, size[:])
	if _, err := io.ReadFull(c.Conn, frame[4:]); err != nil {
		return 0, c.readErr(err)
	}
	if key == apiSASLAuthenticate {
		if code, msg, ok := saslAuthenticateError(frame[4:], ver); ok && code == errSASLAuthFailed {
			if msg == "" {
				msg = "the broker answered SASL_AUTHENTICATION_FAILED"
			}
			return 0, c.fail(msg)
		}
	}
	c.buf = frame
	return c.Read(p)
}

// readErr turns the connection closing during a SASL exchange into an *AuthError.
func (c *saslConn) readErr(err error) error {
	if errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) || errors.Is(err, syscall.ECONNRESET) {
		return c.fail("the broker closed the connection during the SASL login, as brokers do on a wrong user or password")
	}
	return err
}

// saslAuthenticateError reads the error code and message of a SASLAuthenticate response body
// (after the size).
func saslAuthenticateError(b []byte, ver int16) (int16, string, bool) {
	if len(b) < 4 {
		return 0, "", false
	}
	b = b[4:] // correlation ID
	if ver >= flexibleSASLAuthenticV {
		var ok bool
		if b, ok = skipTags(b); !ok {
			return 0, "", false
		}
	}
	if len(b) < 2 {
		return 0, "", false
	}
	code := int16(binary.BigEndian.Uint16(b))
	b = b[2:]
	var msg []byte
	if ver >= flexibleSASLAuthenticV {
		l, n := binary.Uvarint(b)
		if n > 0 && l > 0 && uint64(len(b)-n) >= l-1 {
			msg = b[n : n+int(l-1)]
		}
	} else if len(b) >= 2 {
		if l := int(int16(binary.BigEndian.Uint16(b))); l > 0 && len(b)-2 >= l {
			msg = b[2 : 2+l]
		}
	}
	return code, printable(string(msg)), true
}

// skipTags skips the tagged fields of a flexible response header.
func skipTags(b []byte) ([]byte, bool) {
	count, n := binary.Uvarint(b)
	if n <= 0 {
		return nil, false
	}
	b = b[n:]
	for ; count > 0; count-- {
		if _, n = binary.Uvarint(b); n <= 0 {
			return nil, false
		}
		b = b[n:]
		size, n := binary.Uvarint(b)
		if n <= 0 || uint64(len(b)-n) < size {
			return nil, false
		}
		b = b[n+int(size):]
	}
	return b, true
}

// printable keeps a broker message short and on one line.
func printable(s string) string {
	s = strings.Map(func(r rune) rune {
		if unicode.IsPrint(r) {
			return r
		}
		return ' '
	}, s)
	if len(s) > 300 {
		s = s[:300] + "..."
	}
	return strings.TrimSpace(s)
}
