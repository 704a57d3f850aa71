package kconn

import (
	"context"
	"encoding/binary"
	"errors"
	"io"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/kmigrate/kmigrate/internal/testkit"
)

// TestAuthErrorAgainstKfake: a wrong password, over SASL_PLAINTEXT and SASL_SSL and with every
// mechanism, fails the client's requests with an *AuthError that names the cluster, user and
// mechanism and not the password (franz-go alone says "EOF"); the right one still connects.
func TestAuthErrorAgainstKfake(t *testing.T) {
	t.Parallel()
	p := newPKI(t)
	const wrong = "Wr0ngPassw0rd-x"
	for _, proto := range []string{"SASL_PLAINTEXT", "SASL_SSL"} {
		for _, mech := range []string{"PLAIN", "SCRAM-SHA-256", "SCRAM-SHA-512"} {
			for _, pass := range []string{"secret", wrong} {
				name := proto + "/" + mech + "/" + map[bool]string{true: "right", false: "wrong"}[pass == "secret"]
				t.Run(name, func(t *testing.T) {
					t.Parallel()
					kopts := []kfake.Opt{kfake.NumBrokers(1), kfake.EnableSASL(), kfake.Superuser(mech, "alice", "secret")}
					sec := Security{Protocol: proto, SASLMechanism: mech, SASLUser: "alice", SASLPassword: Secret(pass)}
					if proto == "SASL_SSL" {
						kopts = append(kopts, kfake.TLS(p.serverConfig()))
						sec.CAPEM, sec.CertPEM, sec.KeyPEM = string(p.caPEM), string(p.clientPEM), Secret(p.clientKPEM)
					}
					fake := testkit.StartCluster(t, kopts...)
					c := &Config{Name: "east", Bootstrap: fake.ListenAddrs(), Security: sec}
					opts, err := c.Opts()
					if err != nil {
						t.Fatalf("Opts: %v", err)
					}
					cl, err := kgo.NewClient(opts...)
					if err != nil {
						t.Fatal(err)
					}
					t.Cleanup(cl.Close)
					ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
					defer cancel()
					err = cl.Ping(ctx)
					if pass == "secret" {
						if err != nil {
							t.Fatalf("ping with the right password: %v", err)
						}
						return
					}
					var ae *AuthError
					if !errors.As(err, &ae) {
						t.Fatalf("ping: got %v (%T), want an *AuthError", err, err)
					}
					for _, want := range []string{"authentication failed", `"alice"`, mech, "cluster east"} {
						if !strings.Contains(err.Error(), want) {
							t.Errorf("error %q does not contain %q", err, want)
						}
					}
					if strings.Contains(err.Error(), wrong) || strings.Contains(err.Error(), "secret") {
						t.Errorf("error shows a password: %v", err)
					}
				})
			}
		}
	}
}

// TestSASLConnErrorCode: a broker that answers SASLAuthenticate with
// SASL_AUTHENTICATION_FAILED (as Kafka does; kfake closes the connection instead) gives an
// *AuthError with the broker's message, for the flexible (v2) and the classic (v1) response.
func TestSASLConnErrorCode(t *testing.T) {
	t.Parallel()
	const brokerMsg = "Authentication failed during authentication due to invalid credentials with SASL mechanism SCRAM-SHA-256"
	tests := []struct {
		name    string
		version int16
		body    func() []byte
	}{
		{"v2 flexible", 2, func() []byte {
			b := binary.BigEndian.AppendUint32(nil, 7) // correlation ID
			b = append(b, 0)                           // no header tags
			b = binary.BigEndian.AppendUint16(b, errSASLAuthFailed)
			b = binary.AppendUvarint(b, uint64(len(brokerMsg)+1))
			return append(b, brokerMsg...)
		}},
		{"v1 classic", 1, func() []byte {
			b := binary.BigEndian.AppendUint32(nil, 7)
			b = binary.BigEndian.AppendUint16(b, errSASLAuthFailed)
			b = binary.BigEndian.AppendUint16(b, uint16(len(brokerMsg)))
			return append(b, brokerMsg...)
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			client, broker := net.Pipe()
			t.Cleanup(func() { client.Close(); broker.Close() })
			conn := &saslConn{Conn: client, pendingKey: -1, fail: func(detail string) error {
				return &AuthError{Cluster: "east", User: "alice", Mechanism: "SCRAM-SHA-256", Broker: "b:9092", Detail: detail}
			}}
			go func() { // the broker: read the request, answer with the error
				hdr := make([]byte, 4)
				if _, err := io.ReadFull(broker, hdr); err != nil {
					return
				}
				if _, err := io.ReadFull(broker, make([]byte, binary.BigEndian.Uint32(hdr))); err != nil {
					return
				}
				body := tt.body()
				broker.Write(append(binary.BigEndian.AppendUint32(nil, uint32(len(body))), body...))
			}()
			req := binary.BigEndian.AppendUint16(nil, apiSASLAuthenticate)
			req = binary.BigEndian.AppendUint16(req, uint16(tt.version))
			req = append(req, "rest of the request"...)
			if _, err := conn.Write(append(binary.BigEndian.AppendUint32(nil, uint32(len(req))), req...)); err != nil {
				t.Fatal(err)
			}
			_, err := conn.Read(make([]byte, 4))
			var ae *AuthError
			if !errors.As(err, &ae) || ae.Detail != brokerMsg {
				t.Fatalf("read: got %v, want an *AuthError with the broker's message", err)
			}
		})
	}
}
