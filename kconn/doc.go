// Package kconn connects a franz-go client to a Kafka cluster: it turns bootstrap servers and
// Kafka's client security settings (security.protocol, sasl.*, ssl.*) into kgo options. It
// knows nothing of MirrorMaker 2 or of command-line flags; mm2 fills a Config from a cluster
// of an mm2.properties file, and the commands' flags fill the same fields.
//
// The types to know:
//
//   - Config: a cluster's Name (used only in errors), Bootstrap servers and Security.
//     Config.Opts returns the seed brokers, TLS and SASL options to pass to kgo.NewClient.
//   - Security: the settings, one field per Kafka client key. TLSConfig builds the
//     *tls.Config and SASL the franz-go mechanism; Opts calls them as the protocol asks.
//   - Secret: a password or key. It prints and marshals (%v, %#v, JSON, YAML, text) as
//     "[redacted]"; only Reveal returns it.
//   - AuthError: a SASL login the broker refused.
//   - JAAS and ParseJAAS: one sasl.jaas.config entry (login module, flag, options in order);
//     PlainLoginModule and ScramLoginModule are the modules Opts logs in with.
//
// Guarantees.
//
//   - The protocol is PLAINTEXT (the default), SSL, SASL_PLAINTEXT or SASL_SSL, in any case.
//     As in Kafka, TLS settings count only for SSL and SASL_SSL, SASL settings only for the
//     SASL_ protocols: a missing CA file under PLAINTEXT is no error.
//   - Every file (CA, certificate, key, truststore, keystore) is read when Opts or TLSConfig
//     is called, so a wrong path or password fails there, naming the Kafka key or flag.
//   - Trust comes from a PEM CA file, inline PEM and a JKS or PKCS12 truststore together;
//     with none of them, from the system pool. A store's format is told by its content (a
//     PKCS12 file declared JKS, Kafka's default type, reads as PKCS12); a PKCS12 keystore
//     given as truststore contributes its certificates.
//   - The client certificate is the first of: PEM certificate and key files, inline PEM, a
//     JKS or PKCS12 keystore (a JKS key's password defaults to the store's).
//   - TLS is 1.2 or later and checks the host name, unless SkipHostnameCheck (Kafka's empty
//     ssl.endpoint.identification.algorithm: the chain is still verified), ServerName (the
//     name checked instead) or InsecureSkipVerify (nothing is checked).
//   - SASL is PLAIN (the default), SCRAM-SHA-256 or SCRAM-SHA-512, in any case. A login the
//     broker refuses, by answering SASL_AUTHENTICATION_FAILED or by closing the connection
//     during the exchange (franz-go alone says "EOF"), fails the client's requests with an
//     *AuthError naming the cluster, user, mechanism and broker, with the broker's message
//     cut to one printable line of at most 300 bytes. The password never appears: a broker
//     message that contains it is replaced.
//   - Only the answers to SASLHandshake and SASLAuthenticate are read ahead; every other byte
//     passes through unchanged.
//   - ParseJAAS reads Kafka's one-module syntax (class, control flag, key=value options, ";"),
//     with quotes, escapes and Java comments. Its errors quote nothing of the text, which
//     holds a password: they name login modules and options Kafka ships, others by position.
//
// Refusals, as errors from Opts, TLSConfig or SASL, each naming the setting:
//
//   - no bootstrap servers; a protocol other than the four above;
//   - a login module other than PlainLoginModule and ScramLoginModule, a mechanism other
//     than the three above (GSSAPI, OAUTHBEARER), SASL without a user;
//   - an encrypted PEM private key, a certificate without its key or a key without its
//     certificate, a CA file without a PEM certificate;
//   - a JKS truststore without trusted certificates, a keystore without a private key, a
//     PKCS12 key that cannot sign, a wrong store or key password, an unknown store type,
//     PEM as a truststore type (PEM CAs go in CAFile or CAPEM).
//
// Limits. No Kerberos, no OAuth, no encrypted PEM keys, no certificate revocation checks.
// With SASL, kconn dials brokers itself (10 s timeout, TLS as kgo.DialTLSConfig sets it up), so
// a kgo.Dialer given after Opts' options replaces the AuthError watch. SASLHandshake v0 (raw
// tokens) and answers over 1 MiB are passed through unwatched.
//
// kconn imports franz-go and the keystore libraries, no kmigrate package. go test ./kconn/
// runs TLS handshakes against a listener with a CA generated in the test, every store format,
// and kfake clusters with TLS and each SASL mechanism.
package kconn
