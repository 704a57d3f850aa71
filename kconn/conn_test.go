package kconn

import (
	"bytes"
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"math/big"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	keystore "github.com/pavlo-v-chernykh/keystore-go/v4"
	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"
	"software.sslmate.com/src/go-pkcs12"

	"github.com/kmigrate/kmigrate/internal/testkit"
)

// testPKI is a CA with a server certificate for 127.0.0.1 (or another name) and a client
// certificate, all generated per test.
type testPKI struct {
	caCert     *x509.Certificate
	caKey      *ecdsa.PrivateKey
	caPEM      []byte
	server     tls.Certificate
	clientCert *x509.Certificate
	clientKey  *ecdsa.PrivateKey
	clientPEM  []byte
	clientKPEM []byte
}

func newPKI(t *testing.T, serverNames ...string) *testPKI {
	t.Helper()
	p := &testPKI{}
	var err error
	p.caKey, err = ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	caTmpl := &x509.Certificate{
		SerialNumber:          big.NewInt(1),
		Subject:               pkix.Name{CommonName: "kmigrate test CA"},
		NotBefore:             time.Now().Add(-time.Hour),
		NotAfter:              time.Now().Add(time.Hour),
		IsCA:                  true,
		BasicConstraintsValid: true,
		KeyUsage:              x509.KeyUsageCertSign | x509.KeyUsageDigitalSignature,
	}
	der, err := x509.CreateCertificate(rand.Reader, caTmpl, caTmpl, &p.caKey.PublicKey, p.caKey)
	if err != nil {
		t.Fatal(err)
	}
	p.caCert, _ = x509.ParseCertificate(der)
	p.caPEM = pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der})

	leaf := func(cn string, serial int64, usage x509.ExtKeyUsage, names []string) (*x509.Certificate, *ecdsa.PrivateKey) {
		key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
		if err != nil {
			t.Fatal(err)
		}
		tmpl := &x509.Certificate{
			SerialNumber: big.NewInt(serial),
			Subject:      pkix.Name{CommonName: cn},
			NotBefore:    time.Now().Add(-time.Hour),
			NotAfter:     time.Now().Add(time.Hour),
			KeyUsage:     x509.KeyUsageDigitalSignature,
			ExtKeyUsage:  []x509.ExtKeyUsage{usage},
		}
		for _, n := range names {
			if ip := net.ParseIP(n); ip != nil {
				tmpl.IPAddresses = append(tmpl.IPAddresses, ip)
			} else {
				tmpl.DNSNames = append(tmpl.DNSNames, n)
			}
		}
		der, err := x509.CreateCertificate(rand.Reader, tmpl, p.caCert, &key.PublicKey, p.caKey)
		if err != nil {
			t.Fatal(err)
		}
		c, _ := x509.ParseCertificate(der)
		return c, key
	}
	if len(serverNames) == 0 {
		serverNames = []string{"127.0.0.1"}
	}
	sc, sk := leaf("broker", 2, x509.ExtKeyUsageServerAuth, serverNames)
	p.server = tls.Certificate{Certificate: [][]byte{sc.Raw}, PrivateKey: sk}
	p.clientCert, p.clientKey = leaf("kmigrate-client", 3, x509.ExtKeyUsageClientAuth, nil)
	p.clientPEM = pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: p.clientCert.Raw})
	kd, err := x509.MarshalPKCS8PrivateKey(p.clientKey)
	if err != nil {
		t.Fatal(err)
	}
	p.clientKPEM = pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: kd})
	return p
}

func (p *testPKI) serverConfig() *tls.Config {
	pool := x509.NewCertPool()
	pool.AddCert(p.caCert)
	return &tls.Config{
		Certificates: []tls.Certificate{p.server},
		ClientCAs:    pool,
		ClientAuth:   tls.RequireAndVerifyClientCert,
		MinVersion:   tls.VersionTLS12,
	}
}

// handshake runs one TLS handshake against a listener that demands a client certificate
// signed by the CA, and returns the client's error (or the server's, if the client's is nil).
func handshake(t *testing.T, p *testPKI, client *tls.Config) error {
	t.Helper()
	ln, err := tls.Listen("tcp", "127.0.0.1:0", p.serverConfig())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close() })
	serverErr := make(chan error, 1)
	go func() {
		c, err := ln.Accept()
		if err != nil {
			serverErr <- err
			return
		}
		defer c.Close()
		c.SetDeadline(time.Now().Add(5 * time.Second))
		tc := c.(*tls.Conn)
		err = tc.Handshake()
		if err == nil && (len(tc.ConnectionState().PeerCertificates) == 0 || tc.ConnectionState().PeerCertificates[0].Subject.CommonName != "kmigrate-client") {
			err = errTestNoClientCert
		}
		serverErr <- err
	}()
	d := &net.Dialer{Timeout: 5 * time.Second}
	conn, err := tls.DialWithDialer(d, "tcp", ln.Addr().String(), client)
	if err == nil {
		conn.SetDeadline(time.Now().Add(5 * time.Second))
		// TLS 1.3 reports a rejected client certificate on the first read.
		_, rerr := conn.Read(make([]byte, 1))
		conn.Close()
		if serr := <-serverErr; serr != nil {
			return serr
		}
		if rerr != nil && !strings.Contains(rerr.Error(), "EOF") {
			return rerr
		}
		return nil
	}
	return err
}

var errTestNoClientCert = &net.AddrError{Err: "server saw no client certificate"}

func writeFile(t *testing.T, name string, data []byte) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), name)
	if err := os.WriteFile(path, data, 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

func jksTruststore(t *testing.T, p *testPKI, pass string) []byte {
	t.Helper()
	ks := keystore.New()
	if err := ks.SetTrustedCertificateEntry("ca", keystore.TrustedCertificateEntry{
		CreationTime: time.Now(), Certificate: keystore.Certificate{Type: "X509", Content: p.caCert.Raw},
	}); err != nil {
		t.Fatal(err)
	}
	var b bytes.Buffer
	if err := ks.Store(&b, []byte(pass)); err != nil {
		t.Fatal(err)
	}
	return b.Bytes()
}

func jksKeystore(t *testing.T, p *testPKI, storePass, keyPass string) []byte {
	t.Helper()
	kd, err := x509.MarshalPKCS8PrivateKey(p.clientKey)
	if err != nil {
		t.Fatal(err)
	}
	ks := keystore.New()
	if err := ks.SetPrivateKeyEntry("client", keystore.PrivateKeyEntry{
		CreationTime: time.Now(), PrivateKey: kd,
		CertificateChain: []keystore.Certificate{{Type: "X509", Content: p.clientCert.Raw}},
	}, []byte(keyPass)); err != nil {
		t.Fatal(err)
	}
	var b bytes.Buffer
	if err := ks.Store(&b, []byte(storePass)); err != nil {
		t.Fatal(err)
	}
	return b.Bytes()
}

func TestTLSConfigHandshake(t *testing.T) {
	t.Parallel()
	p := newPKI(t)
	other := newPKI(t) // a CA the server does not use
	p12Trust, err := pkcs12.Modern.EncodeTrustStore([]*x509.Certificate{p.caCert}, "trustpass")
	if err != nil {
		t.Fatal(err)
	}
	p12Key, err := pkcs12.Modern.Encode(p.clientKey, p.clientCert, nil, "storepass")
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name    string
		sec     func(t *testing.T) Security
		wantErr string // "" = handshake succeeds
	}{
		{"CA file and PEM cert/key files", func(t *testing.T) Security {
			return Security{CAFile: writeFile(t, "ca.pem", p.caPEM), CertFile: writeFile(t, "c.pem", p.clientPEM), KeyFile: writeFile(t, "k.pem", p.clientKPEM)}
		}, ""},
		{"inline PEM", func(t *testing.T) Security {
			return Security{CAPEM: string(p.caPEM), CertPEM: string(p.clientPEM), KeyPEM: Secret(p.clientKPEM)}
		}, ""},
		{"PKCS12 truststore and keystore", func(t *testing.T) Security {
			return Security{
				TruststoreFile: writeFile(t, "trust.p12", p12Trust), TruststoreType: "PKCS12", TruststorePassword: "trustpass",
				KeystoreFile: writeFile(t, "key.p12", p12Key), KeystoreType: "PKCS12", KeystorePassword: "storepass",
			}
		}, ""},
		{"JKS truststore and keystore", func(t *testing.T) Security {
			return Security{
				TruststoreFile: writeFile(t, "trust.jks", jksTruststore(t, p, "trustpass")), TruststorePassword: "trustpass",
				KeystoreFile: writeFile(t, "key.jks", jksKeystore(t, p, "storepass", "keypass")), KeystorePassword: "storepass", KeyPassword: "keypass",
			}
		}, ""},
		{"PKCS12 file declared JKS (Kafka's default type)", func(t *testing.T) Security {
			return Security{
				TruststoreFile: writeFile(t, "trust.p12", p12Trust), TruststoreType: "JKS", TruststorePassword: "trustpass",
				KeystoreFile: writeFile(t, "key.p12", p12Key), KeystorePassword: "storepass",
			}
		}, ""},
		{"wrong CA", func(t *testing.T) Security {
			return Security{CAPEM: string(other.caPEM), CertPEM: string(p.clientPEM), KeyPEM: Secret(p.clientKPEM)}
		}, "unknown authority"},
		{"no client certificate", func(t *testing.T) Security {
			return Security{CAPEM: string(p.caPEM)}
		}, "certificate"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			sec := tt.sec(t)
			cfg, err := sec.TLSConfig()
			if err != nil {
				t.Fatalf("TLSConfig: %v", err)
			}
			err = handshake(t, p, cfg)
			switch {
			case tt.wantErr == "" && err != nil:
				t.Fatalf("handshake: got %v, want success", err)
			case tt.wantErr != "" && err == nil:
				t.Fatalf("handshake: got success, want an error containing %q", tt.wantErr)
			case tt.wantErr != "" && !strings.Contains(err.Error(), tt.wantErr):
				t.Fatalf("handshake: got %v, want an error containing %q", err, tt.wantErr)
			}
		})
	}
}

func TestTLSConfigHostname(t *testing.T) {
	t.Parallel()
	p := newPKI(t, "broker.example") // not 127.0.0.1
	base := func() Security {
		return Security{CAPEM: string(p.caPEM), CertPEM: string(p.clientPEM), KeyPEM: Secret(p.clientKPEM)}
	}
	tests := []struct {
		name   string
		mod    func(*Security)
		wantOK bool
	}{
		{"host name checked", func(*Security) {}, false},
		{"empty ssl.endpoint.identification.algorithm", func(s *Security) { s.SkipHostnameCheck = true }, true},
		{"server name override", func(s *Security) { s.ServerName = "broker.example" }, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := base()
			tt.mod(&s)
			cfg, err := s.TLSConfig()
			if err != nil {
				t.Fatal(err)
			}
			err = handshake(t, p, cfg)
			if got := err == nil; got != tt.wantOK {
				t.Fatalf("handshake ok: got %v (%v), want %v", got, err, tt.wantOK)
			}
		})
	}
	// Skipping the host name never skips the chain.
	other := newPKI(t)
	s := Security{CAPEM: string(other.caPEM), CertPEM: string(p.clientPEM), KeyPEM: Secret(p.clientKPEM), SkipHostnameCheck: true}
	cfg, err := s.TLSConfig()
	if err != nil {
		t.Fatal(err)
	}
	if err := handshake(t, p, cfg); err == nil {
		t.Fatalf("handshake with an untrusted CA and SkipHostnameCheck: got success, want an error")
	}
}

func TestTLSConfigErrors(t *testing.T) {
	t.Parallel()
	p := newPKI(t)
	enc := pem.EncodeToMemory(&pem.Block{Type: "ENCRYPTED PRIVATE KEY", Bytes: []byte{1, 2, 3}})
	p12Key, err := pkcs12.Modern.Encode(p.clientKey, p.clientCert, nil, "storepass")
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name string
		sec  Security
		want string
	}{
		{"missing CA file", Security{CAFile: "/nonexistent/ca.pem"}, "read CA file"},
		{"CA file without PEM", Security{CAFile: writeFile(t, "ca.pem", []byte("hello"))}, "no PEM certificate"},
		{"cert without key", Security{CertFile: writeFile(t, "c.pem", p.clientPEM)}, "both a certificate and a key"},
		{"encrypted key", Security{CertPEM: string(p.clientPEM), KeyPEM: Secret(enc)}, "encrypted"},
		{"wrong keystore password", Security{KeystoreFile: writeFile(t, "k.p12", p12Key), KeystoreType: "PKCS12", KeystorePassword: "nope"}, "ssl.keystore.password"},
		{"wrong JKS truststore password", Security{TruststoreFile: writeFile(t, "t.jks", jksTruststore(t, p, "trustpass")), TruststorePassword: "nope"}, "ssl.truststore.password"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := tt.sec.TLSConfig()
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("TLSConfig: got %v, want an error containing %q", err, tt.want)
			}
			if strings.Contains(err.Error(), "storepass") || strings.Contains(err.Error(), "trustpass") {
				t.Fatalf("error reveals a password: %v", err)
			}
		})
	}
}

func TestSASLMechanisms(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name, mechanism, module string
		user                    string
		wantName                string
		wantErr                 string
	}{
		{"plain", "PLAIN", PlainLoginModule, "u", "PLAIN", ""},
		{"plain by default", "", "", "u", "PLAIN", ""},
		{"scram 256", "SCRAM-SHA-256", ScramLoginModule, "u", "SCRAM-SHA-256", ""},
		{"scram 512", "scram-sha-512", ScramLoginModule, "u", "SCRAM-SHA-512", ""},
		{"gssapi", "GSSAPI", "", "u", "", "not supported"},
		{"oauth module", "OAUTHBEARER", "org.apache.kafka.common.security.oauthbearer.OAuthBearerLoginModule", "u", "", "login module"},
		{"no user", "PLAIN", PlainLoginModule, "", "", "needs a user"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := Security{Protocol: "SASL_PLAINTEXT", SASLMechanism: tt.mechanism, SASLLoginModule: tt.module, SASLUser: tt.user, SASLPassword: "pw"}
			m, err := s.SASL()
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("SASL: got %v, want an error containing %q", err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatalf("SASL: %v", err)
			}
			if got := m.Name(); got != tt.wantName {
				t.Fatalf("mechanism: got %q, want %q", got, tt.wantName)
			}
		})
	}
}

// TestOptsAgainstKfake connects through Opts to an in-process cluster that requires TLS with
// client certificates and SASL, proving the options work together in franz-go.
func TestOptsAgainstKfake(t *testing.T) {
	t.Parallel()
	p := newPKI(t)
	tests := []struct {
		name      string
		mechanism string
		pass      string
		wantOK    bool
	}{
		{"SCRAM-SHA-256", "SCRAM-SHA-256", "secret", true},
		{"SCRAM-SHA-512", "SCRAM-SHA-512", "secret", true},
		{"PLAIN", "PLAIN", "secret", true},
		{"wrong password", "SCRAM-SHA-256", "wrong", false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			fake := testkit.StartCluster(t, kfake.TLS(p.serverConfig()), kfake.EnableSASL(),
				kfake.Superuser(tt.mechanism, "alice", "secret"))
			c := &Config{Name: "src", Bootstrap: fake.ListenAddrs(), Security: Security{
				Protocol: "SASL_SSL", SASLMechanism: tt.mechanism, SASLUser: "alice", SASLPassword: Secret(tt.pass),
				CAPEM: string(p.caPEM), CertPEM: string(p.clientPEM), KeyPEM: Secret(p.clientKPEM),
			}}
			opts, err := c.Opts()
			if err != nil {
				t.Fatalf("Opts: %v", err)
			}
			cl, err := kgo.NewClient(append(opts, kgo.RetryTimeout(2*time.Second))...)
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(cl.Close)
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			defer cancel()
			err = cl.Ping(ctx)
			if got := err == nil; got != tt.wantOK {
				t.Fatalf("ping ok: got %v (%v), want %v", got, err, tt.wantOK)
			}
		})
	}
}

func TestOptsErrors(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		c    Config
		want string
	}{
		{"no bootstrap", Config{Name: "source"}, "cluster source has no bootstrap servers"},
		{"bad protocol", Config{Name: "a", Bootstrap: []string{"x:1"}, Security: Security{Protocol: "TLS"}}, "security protocol"},
		{"SASL without user", Config{Name: "a", Bootstrap: []string{"x:1"}, Security: Security{Protocol: "SASL_PLAINTEXT"}}, "needs a user"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := tt.c.Opts()
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("Opts: got %v, want an error containing %q", err, tt.want)
			}
		})
	}
	// PLAINTEXT ignores TLS settings, as Kafka does: a missing CA file is no error.
	c := Config{Name: "a", Bootstrap: []string{"x:1"}, Security: Security{Protocol: "PLAINTEXT", CAFile: "/nonexistent"}}
	if opts, err := c.Opts(); err != nil || len(opts) != 1 {
		t.Fatalf("PLAINTEXT Opts: got %d opts, %v; want 1 opt (seeds), nil", len(opts), err)
	}
}
