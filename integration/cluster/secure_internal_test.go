package cluster

import (
	"crypto/x509"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"software.sslmate.com/src/go-pkcs12"
)

// TestBedCA: a broker keystore holds a key and a certificate that the bed's CA signed, valid
// for 127.0.0.1 and localhost (host name verification passes) and no other name, behind the
// keystore password.
func TestBedCA(t *testing.T) {
	ca, err := newBedCA("t")
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), "tls", "b.p12")
	if err := ca.brokerKeystore(path, "broker 0", "pw"); err != nil {
		t.Fatal(err)
	}
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if _, _, _, err := pkcs12.DecodeChain(data, "wrong"); err == nil {
		t.Fatal("keystore opened with a wrong password")
	}
	key, leaf, cas, err := pkcs12.DecodeChain(data, "pw")
	if err != nil || key == nil || len(cas) != 1 {
		t.Fatalf("decode keystore: key %v, %d CAs, %v", key != nil, len(cas), err)
	}
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM(ca.pem) {
		t.Fatal("CA PEM has no certificate")
	}
	for _, host := range []string{"127.0.0.1", "localhost"} {
		if _, err := leaf.Verify(x509.VerifyOptions{Roots: pool, DNSName: host}); err != nil {
			t.Errorf("verify for %s: %v", host, err)
		}
	}
	if _, err := leaf.Verify(x509.VerifyOptions{Roots: pool, DNSName: "broker.example.com"}); err == nil {
		t.Error("the broker certificate verified for broker.example.com")
	}
	other, _ := newBedCA("other")
	op := x509.NewCertPool()
	op.AppendCertsFromPEM(other.pem)
	if _, err := leaf.Verify(x509.VerifyOptions{Roots: op, DNSName: "127.0.0.1"}); err == nil {
		t.Error("the broker certificate verified against another CA")
	}
}

// TestSecureSpec: Secure is refused on the providers without a secure bed, and the default
// spec stays plaintext (no authorizer, no SASL) for every existing test.
func TestSecureSpec(t *testing.T) {
	for _, p := range []string{ProviderKfake, ProviderTestcontainers} {
		v := V371
		if p == ProviderKfake {
			v = Kfake
		}
		if _, err := (Spec{Version: v, Provider: p, Secure: true}).normalize(); err == nil || !strings.Contains(err.Error(), "jvm provider only") {
			t.Errorf("Secure on %s: %v, want a refusal", p, err)
		}
	}
	c := &jvmCluster{spec: Spec{Version: V371, Name: "x"}, nodes: []*jvmNode{{id: 1, port: 1, ctrlPort: 2}}}
	m := c.serverProps(c.nodes[0])
	if m["listeners"] != "PLAINTEXT://127.0.0.1:1,CONTROLLER://127.0.0.1:2" || m["authorizer.class.name"] != "" || m["min.insync.replicas"] != "1" {
		t.Errorf("default 1-broker props changed: listeners %q, authorizer %q, min.insync.replicas %q", m["listeners"], m["authorizer.class.name"], m["min.insync.replicas"])
	}
	if got := commonProps(3); got["min.insync.replicas"] != "2" || got["unclean.leader.election.enable"] != "false" || got["default.replication.factor"] != "3" {
		t.Errorf("3 brokers: min.insync.replicas %q, unclean %q, RF %q", got["min.insync.replicas"], got["unclean.leader.election.enable"], got["default.replication.factor"])
	}
	c.sec = &secureState{sec: Security{Protocol: "SASL_SSL", Mechanism: "SCRAM-SHA-512", Admin: User{Name: AdminUser, Password: "p"}, CAFile: "/ca.pem"}, storePass: "s"}
	m = c.serverProps(c.nodes[0])
	if m["super.users"] != "User:admin" || m["authorizer.class.name"] != authorizerKRaft || !strings.HasPrefix(m["listeners"], "SASL_SSL://") {
		t.Errorf("secure 3.7.1 props: super.users %q, authorizer %q, listeners %q", m["super.users"], m["authorizer.class.name"], m["listeners"])
	}
}
