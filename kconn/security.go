package kconn

// Secret is a password or JAAS configuration. It prints as "[redacted]" so it can never reach a
// log or a report by accident; use Reveal to read it.
type Secret string

// String implements fmt.Stringer.
func (s Secret) String() string {
	if s == "" {
		return ""
	}
	return "[redacted]"
}

// GoString implements fmt.GoStringer, so %#v redacts too.
func (s Secret) GoString() string { return s.String() }

// MarshalText redacts the secret in JSON, YAML and text encodings.
func (s Secret) MarshalText() ([]byte, error) { return []byte(s.String()), nil }

// Reveal returns the secret itself.
func (s Secret) Reveal() string { return string(s) }

// Security holds the connection security settings of one cluster, as Kafka's client keys name
// them (security.protocol, sasl.*, ssl.*).
type Security struct {
	// Protocol is PLAINTEXT, SSL, SASL_PLAINTEXT or SASL_SSL. Default: PLAINTEXT.
	Protocol string
	// SASLMechanism is PLAIN, SCRAM-SHA-256 or SCRAM-SHA-512. Default: PLAIN when SASL is on.
	// (Kafka's own default is GSSAPI, which kmigrate does not speak.)
	SASLMechanism string
	SASLUser      string
	SASLPassword  Secret
	// SASLLoginModule is the login module class of sasl.jaas.config, when one is given.
	SASLLoginModule string

	// PEM files.
	CAFile   string
	CertFile string
	KeyFile  string
	// PEM text given inline (ssl.truststore.certificates, ssl.keystore.certificate.chain,
	// ssl.keystore.key with type PEM).
	CAPEM   string
	CertPEM string
	KeyPEM  Secret
	// Truststore and keystore files (JKS or PKCS12), with their passwords.
	TruststoreFile     string
	TruststoreType     string
	TruststorePassword Secret
	KeystoreFile       string
	KeystoreType       string
	KeystorePassword   Secret
	KeyPassword        Secret
	// ServerName overrides the TLS server name; InsecureSkipVerify disables verification
	// (ssl.endpoint.identification.algorithm= with an empty value only skips host names).
	ServerName         string
	InsecureSkipVerify bool
	SkipHostnameCheck  bool
}
