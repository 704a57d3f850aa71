package cluster

import (
	"context"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/sasl"
	"github.com/twmb/franz-go/pkg/sasl/scram"
)

// AdminUser is the SASL user of a secure bed's administrator: the brokers' own principal
// between themselves and the only super user.
const AdminUser = "admin"

// Security says how to reach a cluster started with Spec.Secure: 2.3.0 listens
// SASL_PLAINTEXT with SCRAM-SHA-256, 3.7.1 SASL_SSL with SCRAM-SHA-512 and a certificate
// signed by the bed's own CA (CAFile), valid for 127.0.0.1 and localhost; 4.3.1 as 3.7.1.
type Security struct {
	Protocol  string // SASL_PLAINTEXT or SASL_SSL
	Mechanism string // SCRAM-SHA-256 or SCRAM-SHA-512
	// Admin is the bed's super user and its password.
	Admin User
	// CAFile is the PEM certificate of the bed's CA (SASL_SSL only, else "").
	CAFile string
}

// User is a SASL user and its password.
type User struct {
	Name     string
	Password string
}

// Secured is implemented by jvm clusters; those not started with Spec.Secure return a zero
// Security and refuse AddUser (use SecurityOf).
type Secured interface {
	// Security says how to connect.
	Security() Security
	// AddUser creates (or resets) a SCRAM user for the cluster's mechanism and returns once
	// it can log in to every running broker. The user has no ACL: grant them as admin.
	AddUser(ctx context.Context, u User) error
}

// SecurityOf returns c's security when it was started with Spec.Secure.
func SecurityOf(c Cluster) (Security, bool) {
	s, ok := c.(Secured)
	if !ok || s.Security().Protocol == "" {
		return Security{}, false
	}
	return s.Security(), true
}

// NewPassword is a random password (hex, so that it needs no quoting in JAAS or a shell).
func NewPassword() string {
	b := make([]byte, 16)
	if _, err := rand.Read(b); err != nil {
		panic(err) // crypto/rand does not fail on Linux
	}
	return hex.EncodeToString(b)
}

// Opts are the franz-go options that log in to the cluster as u (SASL, and TLS trusting
// the bed's CA with host name verification). Seed brokers are not included.
func (s Security) Opts(u User) ([]kgo.Opt, error) {
	var m sasl.Mechanism
	switch s.Mechanism {
	case "SCRAM-SHA-256":
		m = scram.Auth{User: u.Name, Pass: u.Password}.AsSha256Mechanism()
	case "SCRAM-SHA-512":
		m = scram.Auth{User: u.Name, Pass: u.Password}.AsSha512Mechanism()
	default:
		return nil, fmt.Errorf("security: mechanism %q: want SCRAM-SHA-256 or SCRAM-SHA-512", s.Mechanism)
	}
	opts := []kgo.Opt{kgo.SASL(m)}
	if s.Protocol == "SASL_SSL" {
		pem, err := os.ReadFile(s.CAFile)
		if err != nil {
			return nil, fmt.Errorf("security: read CA: %w", err)
		}
		pool := x509.NewCertPool()
		if !pool.AppendCertsFromPEM(pem) {
			return nil, fmt.Errorf("security: no certificate in %s", s.CAFile)
		}
		// kgo sets ServerName from the broker's host: the host name is verified.
		opts = append(opts, kgo.DialTLSConfig(&tls.Config{MinVersion: tls.VersionTLS12, RootCAs: pool}))
	}
	return opts, nil
}

// jaas is the sasl.jaas.config of a SCRAM login as u.
func jaas(u User) string {
	return fmt.Sprintf(`org.apache.kafka.common.security.scram.ScramLoginModule required username="%s" password="%s";`, u.Name, u.Password)
}

// ClientProperties are the Kafka client properties that log in as u: what Kafka's CLI tools
// take with --command-config (and Java clients in general).
func (s Security) ClientProperties(u User) map[string]string {
	m := map[string]string{
		"security.protocol": s.Protocol,
		"sasl.mechanism":    s.Mechanism,
		"sasl.jaas.config":  jaas(u),
	}
	if s.Protocol == "SASL_SSL" {
		m["ssl.truststore.type"] = "PEM"
		m["ssl.truststore.location"] = s.CAFile
	}
	return m
}

// WriteClientProperties writes ClientProperties(u) to path, readable by its owner only (it
// holds a password, as Kafka's client files do).
func (s Security) WriteClientProperties(path string, u User) error {
	return os.WriteFile(path, props(s.ClientProperties(u)), 0o600)
}

// MM2Endpoint is one cluster of an mm2.properties: its bootstrap, security and the user the
// tools log in as (a zero Security means PLAINTEXT).
type MM2Endpoint struct {
	Alias     string
	Bootstrap []string
	Security  Security
	User      User
	Brokers   int // for the replication factors of MirrorMaker 2's own topics
}

// MM2Properties is an mm2.properties for the flow src->dst that kmigrate's tools and
// MirrorMaker 2 3.7.1 read: both clusters with their security, the flow enabled with the
// identity replication policy (topics keep their names), and replication factors sized to
// each cluster (MM2's default -1 needs brokers 2.4+). extra lines are appended as they are.
func MM2Properties(src, dst MM2Endpoint, extra ...string) string {
	lines := []string{"clusters=" + src.Alias + "," + dst.Alias}
	for _, e := range []MM2Endpoint{src, dst} {
		lines = append(lines, e.Alias+".bootstrap.servers="+strings.Join(e.Bootstrap, ","))
		if e.Security.Protocol == "" {
			continue
		}
		cp := e.Security.ClientProperties(e.User)
		for _, k := range sortedKeys(cp) {
			lines = append(lines, e.Alias+"."+k+"="+cp[k])
		}
	}
	rfDst := fmt.Sprint(min(max(dst.Brokers, 1), 3))
	rfSrc := fmt.Sprint(min(max(src.Brokers, 1), 3))
	lines = append(lines,
		src.Alias+"->"+dst.Alias+".enabled=true",
		"replication.policy.class=org.apache.kafka.connect.mirror.IdentityReplicationPolicy",
		"replication.factor="+rfDst,
		"checkpoints.topic.replication.factor="+rfDst,
		"heartbeats.topic.replication.factor="+rfDst,
		"offset-syncs.topic.replication.factor="+rfSrc,
		"offset.storage.replication.factor="+rfDst,
		"status.storage.replication.factor="+rfDst,
		"config.storage.replication.factor="+rfDst,
	)
	return strings.Join(append(lines, extra...), "\n") + "\n"
}

// Endpoint describes c for MM2Properties as user u (the admin when u is zero).
func Endpoint(alias string, c Cluster, u User) MM2Endpoint {
	e := MM2Endpoint{Alias: alias, Bootstrap: c.Bootstrap(), Brokers: c.Brokers()}
	if s, ok := SecurityOf(c); ok {
		e.Security = s
		e.User = u
		if u.Name == "" {
			e.User = s.Admin
		}
	}
	return e
}

// secureState is what a secure jvm cluster keeps: its admin password and TLS files.
type secureState struct {
	sec       Security
	storePass string // PKCS12 keystore password (KRaft versions)
}

// newSecureState creates the admin's password and, on KRaft (3.7.1, 4.3.1), the CA and broker
// keystores.
func newSecureState(dir string, s Spec) (*secureState, error) {
	st := &secureState{sec: Security{Admin: User{Name: AdminUser, Password: NewPassword()}}}
	switch s.Version {
	case V230:
		st.sec.Protocol, st.sec.Mechanism = "SASL_PLAINTEXT", "SCRAM-SHA-256"
		return st, nil
	case V371, V431:
		st.sec.Protocol, st.sec.Mechanism = "SASL_SSL", "SCRAM-SHA-512"
	default:
		return nil, fmt.Errorf("cluster %s: Secure needs version %s, %s or %s", s.Name, V230, V371, V431)
	}
	ca, err := newBedCA(s.Name)
	if err != nil {
		return nil, fmt.Errorf("cluster %s: generate CA: %w", s.Name, err)
	}
	st.sec.CAFile = filepath.Join(dir, "tls", "ca.pem")
	if err := os.MkdirAll(filepath.Dir(st.sec.CAFile), 0o755); err != nil {
		return nil, err
	}
	if err := os.WriteFile(st.sec.CAFile, ca.pem, 0o644); err != nil {
		return nil, err
	}
	st.storePass = NewPassword()
	for i := range s.Brokers {
		path := filepath.Join(dir, "tls", fmt.Sprintf("broker-%d.p12", i))
		if err := ca.brokerKeystore(path, fmt.Sprintf("%s broker %d", s.Name, i), st.storePass); err != nil {
			return nil, fmt.Errorf("cluster %s: broker %d keystore: %w", s.Name, i, err)
		}
	}
	return st, nil
}

// errSecureProvider is returned for Spec.Secure on a provider that has no secure bed.
var errSecureProvider = errors.New("Spec.Secure runs on the jvm provider only")
