package kconn

import (
	"bytes"
	"crypto"
	"crypto/tls"
	"crypto/x509"
	"encoding/pem"
	"errors"
	"fmt"
	"os"
	"strings"

	keystore "github.com/pavlo-v-chernykh/keystore-go/v4"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/sasl"
	"github.com/twmb/franz-go/pkg/sasl/plain"
	"github.com/twmb/franz-go/pkg/sasl/scram"
	"software.sslmate.com/src/go-pkcs12"
)

// Config is what it takes to connect to one cluster.
type Config struct {
	// Name names the cluster in errors (kmigrate passes the MM2 cluster alias).
	Name      string
	Bootstrap []string
	Security  Security
}

// Opts returns the franz-go options that connect to c: seed brokers, TLS (security.protocol
// SSL or SASL_SSL) and SASL (SASL_PLAINTEXT or SASL_SSL; PLAIN, SCRAM-SHA-256, SCRAM-SHA-512).
// As in Kafka, TLS and SASL settings are ignored when the protocol does not call for them.
// Files are read now, so a wrong path or password fails here, naming the setting. With SASL, a
// login the broker refuses fails the client's requests with an *AuthError naming the cluster,
// user and mechanism.
func (c Config) Opts() ([]kgo.Opt, error) {
	if len(c.Bootstrap) == 0 {
		return nil, fmt.Errorf("cluster %s has no bootstrap servers", c.Name)
	}
	opts := []kgo.Opt{kgo.SeedBrokers(c.Bootstrap...)}
	s := &c.Security
	proto := strings.ToUpper(s.Protocol)
	switch proto {
	case "", "PLAINTEXT", "SSL", "SASL_PLAINTEXT", "SASL_SSL":
	default:
		return nil, fmt.Errorf("cluster %s: security protocol %q: use PLAINTEXT, SSL, SASL_PLAINTEXT or SASL_SSL", c.Name, s.Protocol)
	}
	var tlsCfg *tls.Config
	if proto == "SSL" || proto == "SASL_SSL" {
		cfg, err := s.TLSConfig()
		if err != nil {
			return nil, fmt.Errorf("cluster %s: %w", c.Name, err)
		}
		tlsCfg = cfg
	}
	if !strings.HasPrefix(proto, "SASL_") {
		if tlsCfg != nil {
			opts = append(opts, kgo.DialTLSConfig(tlsCfg))
		}
		return opts, nil
	}
	m, err := s.SASL()
	if err != nil {
		return nil, fmt.Errorf("cluster %s: %w", c.Name, err)
	}
	name, user, mech, pass := c.Name, s.SASLUser, m.Name(), s.SASLPassword.Reveal()
	opts = append(opts, kgo.SASL(m), saslDialer(tlsCfg, func(broker, detail string) error {
		if pass != "" && strings.Contains(detail, pass) {
			detail = "the broker's message is not shown: it contains the password"
		}
		return &AuthError{Cluster: name, User: user, Mechanism: mech, Broker: broker, Detail: detail}
	}))
	return opts, nil
}

// SASL returns the franz-go SASL mechanism of s.
func (s *Security) SASL() (sasl.Mechanism, error) {
	switch s.SASLLoginModule {
	case "", PlainLoginModule, ScramLoginModule:
	default:
		return nil, fmt.Errorf("sasl.jaas.config: login module %s is not supported: use %s or %s", moduleName(s.SASLLoginModule), PlainLoginModule, ScramLoginModule)
	}
	if s.SASLUser == "" {
		return nil, errors.New("SASL needs a user: set username=\"...\" in sasl.jaas.config or pass --source-sasl-user/--target-sasl-user")
	}
	user, pass := s.SASLUser, s.SASLPassword.Reveal()
	switch strings.ToUpper(s.SASLMechanism) {
	case "PLAIN", "":
		return plain.Auth{User: user, Pass: pass}.AsMechanism(), nil
	case "SCRAM-SHA-256":
		return scram.Auth{User: user, Pass: pass}.AsSha256Mechanism(), nil
	case "SCRAM-SHA-512":
		return scram.Auth{User: user, Pass: pass}.AsSha512Mechanism(), nil
	}
	return nil, fmt.Errorf("SASL mechanism %s is not supported: use PLAIN, SCRAM-SHA-256 or SCRAM-SHA-512", s.SASLMechanism)
}

// TLSConfig builds the TLS client configuration of s: trusted CAs from a PEM file, inline PEM
// or a JKS/PKCS12 truststore (else the system pool), a client certificate from PEM files,
// inline PEM or a JKS/PKCS12 keystore, and the host name checks.
func (s *Security) TLSConfig() (*tls.Config, error) {
	cfg := &tls.Config{MinVersion: tls.VersionTLS12, ServerName: s.ServerName}
	pool, err := s.rootCAs()
	if err != nil {
		return nil, err
	}
	cfg.RootCAs = pool
	if cfg.Certificates, err = s.clientCertificates(); err != nil {
		return nil, err
	}
	switch {
	case s.InsecureSkipVerify:
		cfg.InsecureSkipVerify = true
	case s.SkipHostnameCheck:
		// Verify the chain but not the host name, as Kafka does with an empty
		// ssl.endpoint.identification.algorithm.
		cfg.InsecureSkipVerify = true
		cfg.VerifyConnection = verifyChain(pool)
	}
	return cfg, nil
}

// rootCAs is the pool of the CAs s trusts (CA file, inline PEM, truststore), or nil for the system pool.
func (s *Security) rootCAs() (*x509.CertPool, error) {
	var pool *x509.CertPool
	addPEM := func(what string, data []byte) error {
		if pool == nil {
			pool = x509.NewCertPool()
		}
		if !pool.AppendCertsFromPEM(data) {
			return fmt.Errorf("%s: no PEM certificate found", what)
		}
		return nil
	}
	if s.CAFile != "" {
		data, err := os.ReadFile(s.CAFile)
		if err != nil {
			return nil, fmt.Errorf("read CA file (ssl.truststore.location / --tls-ca): %w", err)
		}
		if err := addPEM("CA file "+s.CAFile, data); err != nil {
			return nil, err
		}
	}
	if s.CAPEM != "" {
		if err := addPEM("ssl.truststore.certificates", []byte(s.CAPEM)); err != nil {
			return nil, err
		}
	}
	if s.TruststoreFile != "" {
		certs, err := loadTruststore(s.TruststoreFile, s.TruststoreType, s.TruststorePassword.Reveal())
		if err != nil {
			return nil, fmt.Errorf("truststore %s (ssl.truststore.location): %w", s.TruststoreFile, err)
		}
		if pool == nil {
			pool = x509.NewCertPool()
		}
		for _, c := range certs {
			pool.AddCert(c)
		}
	}
	return pool, nil
}

// clientCertificates is the client certificate of s (PEM files, inline PEM or keystore), or nil without one.
func (s *Security) clientCertificates() ([]tls.Certificate, error) {
	switch {
	case s.CertFile != "" || s.KeyFile != "":
		if s.CertFile == "" || s.KeyFile == "" {
			return nil, errors.New("a client certificate needs both a certificate and a key file (--tls-cert and --tls-key)")
		}
		certPEM, err := os.ReadFile(s.CertFile)
		if err != nil {
			return nil, fmt.Errorf("read client certificate: %w", err)
		}
		keyPEM, err := os.ReadFile(s.KeyFile)
		if err != nil {
			return nil, fmt.Errorf("read client key: %w", err)
		}
		cert, err := pemKeyPair(certPEM, keyPEM)
		if err != nil {
			return nil, fmt.Errorf("client certificate %s / key %s: %w", s.CertFile, s.KeyFile, err)
		}
		return []tls.Certificate{cert}, nil
	case s.CertPEM != "" || s.KeyPEM != "":
		cert, err := pemKeyPair([]byte(s.CertPEM), []byte(s.KeyPEM.Reveal()))
		if err != nil {
			return nil, fmt.Errorf("ssl.keystore.certificate.chain / ssl.keystore.key: %w", err)
		}
		return []tls.Certificate{cert}, nil
	case s.KeystoreFile != "":
		keyPass := s.KeyPassword.Reveal()
		if keyPass == "" {
			keyPass = s.KeystorePassword.Reveal()
		}
		cert, err := loadKeystore(s.KeystoreFile, s.KeystoreType, s.KeystorePassword.Reveal(), keyPass)
		if err != nil {
			return nil, fmt.Errorf("keystore %s (ssl.keystore.location): %w", s.KeystoreFile, err)
		}
		return []tls.Certificate{cert}, nil
	}

	return nil, nil
}

// verifyChain checks a server's certificate chain against roots (nil: the system pool) without its host name.
func verifyChain(roots *x509.CertPool) func(tls.ConnectionState) error {
	return func(cs tls.ConnectionState) error {
		if len(cs.PeerCertificates) == 0 {
			return errors.New("server sent no certificate")
		}
		opts := x509.VerifyOptions{Roots: roots, Intermediates: x509.NewCertPool()}
		for _, c := range cs.PeerCertificates[1:] {
			opts.Intermediates.AddCert(c)
		}
		_, err := cs.PeerCertificates[0].Verify(opts)
		return err
	}
}

// pemKeyPair parses a certificate chain and an unencrypted private key in PEM.
func pemKeyPair(certPEM, keyPEM []byte) (tls.Certificate, error) {
	for rest := keyPEM; ; {
		var b *pem.Block
		b, rest = pem.Decode(rest)
		if b == nil {
			break
		}
		if b.Type == "ENCRYPTED PRIVATE KEY" || b.Headers["Proc-Type"] != "" {
			return tls.Certificate{}, errors.New("the private key is encrypted, which kmigrate cannot read: decrypt it (openssl pkcs8 -in key.pem -out key-plain.pem) or use a PKCS12 keystore")
		}
	}
	return tls.X509KeyPair(certPEM, keyPEM)
}

// storeFormat tells JKS from PKCS12 by content: Kafka's default type is JKS, but Java reads
// PKCS12 files under that type too, and many installations name them either way.
func storeFormat(data []byte, declared string) string {
	if len(data) >= 4 && bytes.Equal(data[:4], []byte{0xfe, 0xed, 0xfe, 0xed}) {
		return "JKS"
	}
	if len(data) > 0 && data[0] == 0x30 { // DER SEQUENCE: PKCS12
		return "PKCS12"
	}
	return strings.ToUpper(declared)
}

func loadTruststore(path, typ, password string) ([]*x509.Certificate, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	switch storeFormat(data, typ) {
	case "JKS":
		ks := keystore.New()
		if err := ks.Load(bytes.NewReader(data), []byte(password)); err != nil {
			return nil, fmt.Errorf("read JKS (check ssl.truststore.password): %w", err)
		}
		var certs []*x509.Certificate
		for _, a := range ks.Aliases() {
			if !ks.IsTrustedCertificateEntry(a) {
				continue
			}
			e, err := ks.GetTrustedCertificateEntry(a)
			if err != nil {
				return nil, fmt.Errorf("entry %s: %w", a, err)
			}
			c, err := x509.ParseCertificate(e.Certificate.Content)
			if err != nil {
				return nil, fmt.Errorf("entry %s: %w", a, err)
			}
			certs = append(certs, c)
		}
		if len(certs) == 0 {
			return nil, errors.New("no trusted certificate entries in the JKS truststore")
		}
		return certs, nil
	case "PKCS12":
		certs, err := pkcs12.DecodeTrustStore(data, password)
		if err != nil {
			// A keystore used as truststore: take its certificates.
			_, cert, cas, err2 := pkcs12.DecodeChain(data, password)
			if err2 != nil {
				return nil, fmt.Errorf("read PKCS12 (check ssl.truststore.password): %w", err)
			}
			return append([]*x509.Certificate{cert}, cas...), nil
		}
		return certs, nil
	case "PEM":
		return nil, errors.New("PEM truststores go in --tls-ca (ssl.truststore.type=PEM)")
	}
	return nil, fmt.Errorf("unknown truststore type %q: use JKS, PKCS12 or PEM", typ)
}

func loadKeystore(path, typ, storePass, keyPass string) (tls.Certificate, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return tls.Certificate{}, err
	}
	switch storeFormat(data, typ) {
	case "JKS":
		ks := keystore.New()
		if err := ks.Load(bytes.NewReader(data), []byte(storePass)); err != nil {
			return tls.Certificate{}, fmt.Errorf("read JKS (check ssl.keystore.password): %w", err)
		}
		for _, a := range ks.Aliases() {
			if !ks.IsPrivateKeyEntry(a) {
				continue
			}
			e, err := ks.GetPrivateKeyEntry(a, []byte(keyPass))
			if err != nil {
				return tls.Certificate{}, fmt.Errorf("key %s (check ssl.key.password): %w", a, err)
			}
			key, err := x509.ParsePKCS8PrivateKey(e.PrivateKey)
			if err != nil {
				return tls.Certificate{}, fmt.Errorf("key %s: %w", a, err)
			}
			cert := tls.Certificate{PrivateKey: key}
			for _, c := range e.CertificateChain {
				cert.Certificate = append(cert.Certificate, c.Content)
			}
			if len(cert.Certificate) == 0 {
				return tls.Certificate{}, fmt.Errorf("key %s has no certificate chain", a)
			}
			return cert, nil
		}
		return tls.Certificate{}, errors.New("no private key entry in the JKS keystore")
	case "PKCS12":
		key, leaf, cas, err := pkcs12.DecodeChain(data, storePass)
		if err != nil {
			return tls.Certificate{}, fmt.Errorf("read PKCS12 (check ssl.keystore.password): %w", err)
		}
		signer, ok := key.(crypto.Signer)
		if !ok {
			return tls.Certificate{}, errors.New("the PKCS12 private key cannot sign")
		}
		cert := tls.Certificate{PrivateKey: signer, Leaf: leaf, Certificate: [][]byte{leaf.Raw}}
		for _, c := range cas {
			cert.Certificate = append(cert.Certificate, c.Raw)
		}
		return cert, nil
	}
	return tls.Certificate{}, fmt.Errorf("unknown keystore type %q: use JKS, PKCS12 or PEM", typ)
}
