package clikit

import (
	"errors"
	"fmt"
	"os"
	"strings"

	"github.com/urfave/cli/v2"

	"github.com/kmigrate/kmigrate/kconn"
	"github.com/kmigrate/kmigrate/mm2"
)

// Connection flag names. Per-side flags are "--source-<name>" and "--target-<name>".
const (
	FlagMM2Config = "mm2-config"
	FlagFlow      = "flow"
)

// sides are the two clusters a command connects to, with their flag prefixes and the alias
// a flow gets when no MM2 file names them.
var sides = []string{"source", "target"}

// ConnectionFlags are the flags every command uses to reach its two clusters: an MM2 file
// (--mm2-config, --flow) and/or brokers and security per side. Flags override the MM2 file.
// Passwords never go on the command line: they come from a file or a named environment
// variable.
func ConnectionFlags() []cli.Flag {
	flags := []cli.Flag{
		&cli.StringFlag{Name: FlagMM2Config, Usage: "read clusters, security and the flow from the MirrorMaker 2 properties `FILE`", EnvVars: []string{"KMIGRATE_MM2_CONFIG"}, Category: "Connection"},
		&cli.StringFlag{Name: FlagFlow, Usage: "replication flow `SOURCE->TARGET` (aliases of the MM2 file); default: its only enabled flow, or source->target", Category: "Connection"},
	}
	for _, side := range sides {
		env := "KMIGRATE_" + strings.ToUpper(side) + "_BROKERS"
		cat := "Connection (" + side + ")"
		flags = append(flags,
			&cli.StringFlag{Name: side + "-brokers", Usage: "comma-separated `HOST:PORT` list of the " + side + " cluster", EnvVars: []string{env}, Category: cat},
			&cli.StringFlag{Name: side + "-security-protocol", Usage: "`PROTOCOL`: PLAINTEXT, SSL, SASL_PLAINTEXT or SASL_SSL (default: from the MM2 file, else inferred from the TLS/SASL flags)", Category: cat},
			&cli.StringFlag{Name: side + "-sasl-mechanism", Usage: "`MECHANISM`: PLAIN, SCRAM-SHA-256 or SCRAM-SHA-512 (default: PLAIN)", Category: cat},
			&cli.StringFlag{Name: side + "-sasl-user", Usage: "SASL `USER`", Category: cat},
			&cli.StringFlag{Name: side + "-sasl-password-file", Usage: "read the SASL password from `FILE` (one line)", Category: cat},
			&cli.StringFlag{Name: side + "-sasl-password-env", Usage: "read the SASL password from the environment variable `NAME`", Category: cat},
			&cli.StringFlag{Name: side + "-tls-ca", Usage: "trust the CA certificates in the PEM `FILE`", Category: cat},
			&cli.StringFlag{Name: side + "-tls-cert", Usage: "client certificate PEM `FILE`", Category: cat},
			&cli.StringFlag{Name: side + "-tls-key", Usage: "client private key PEM `FILE` (unencrypted)", Category: cat},
			&cli.StringFlag{Name: side + "-tls-truststore", Usage: "trust the certificates of the JKS or PKCS12 `FILE`", Category: cat},
			&cli.StringFlag{Name: side + "-tls-truststore-password-env", Usage: "read the truststore password from the environment variable `NAME`", Category: cat},
			&cli.StringFlag{Name: side + "-tls-server-name", Usage: "expect `NAME` in the broker certificates instead of the host name", Category: cat},
			&cli.BoolFlag{Name: side + "-tls-insecure-skip-verify", Usage: "do not verify the broker certificates (tests only)", Category: cat},
		)
	}
	return flags
}

// ConnectionHelp is a paragraph for a command's --help about the connection flags.
const ConnectionHelp = `Connection: give --mm2-config mm2.properties (and --flow A->B when it enables several flows),
or --source-brokers/--target-brokers (env KMIGRATE_SOURCE_BROKERS, KMIGRATE_TARGET_BROKERS);
flags override the file. Passwords come from --source-sasl-password-file FILE or
--source-sasl-password-env NAME, never from the command line. Without an MM2 file the flow is
source->target with the identity replication policy (topics keep their names). TLS or SASL
flags with a --source/--target-security-protocol that does not use them are refused; the MM2
file is read up to 4 MiB (1 MiB a line).`

// Connect resolves the two clusters and the flow from the MM2 file (when --mm2-config is given)
// and the connection flags, which win over the file. Without a file the flow is
// source->target (or the aliases of --flow) with MM2's IdentityReplicationPolicy and defaults.
// Errors name the flag or key and say what to do; they never contain a password.
func Connect(c *cli.Context) (*Conn, error) {
	return connectSides(c, true, true)
}

// ConnectTarget is Connect for commands that only touch the target cluster (kreconcile
// rollback): the source needs no bootstrap servers.
func ConnectTarget(c *cli.Context) (*Conn, error) {
	return connectSides(c, false, true)
}

// ConnectSides is Connect for commands that read one cluster, or either (kverify digest,
// check-evidence): only the sides needed must have bootstrap servers.
func ConnectSides(c *cli.Context, needSource, needTarget bool) (*Conn, error) {
	return connectSides(c, needSource, needTarget)
}

func connectSides(c *cli.Context, needSource, needTarget bool) (*Conn, error) {
	conn, err := connect(c, [2]bool{needSource, needTarget})
	if err != nil {
		return nil, Fail(err)
	}
	recordPrincipals(conn)
	// MM2 drops unknown keys silently; we say so once, at start, on stderr.
	if conn.Config != nil {
		for _, w := range conn.Config.Warnings {
			msg := fmt.Sprintf("%s:%d: warning: %s: %s", c.String(FlagMM2Config), w.Line, w.Key, w.Message)
			if w.Suggestion != "" {
				msg += " (did you mean " + w.Suggestion + "?)"
			}
			fmt.Fprintln(c.App.ErrWriter, msg)
		}
	}
	return conn, nil
}

func connect(c *cli.Context, need [2]bool) (*Conn, error) {
	conn := &Conn{}
	flowName := strings.TrimSpace(c.String(FlagFlow))
	if path := c.String(FlagMM2Config); path != "" {
		cfg, err := mm2.LoadContext(c.Context, path)
		if err != nil {
			return nil, fmt.Errorf("--%s: %w", FlagMM2Config, err)
		}
		f, err := cfg.Flow(flowName)
		if err != nil {
			return nil, fmt.Errorf("--%s %s: %w", FlagMM2Config, path, err)
		}
		conn.Config, conn.Flow = cfg, f
		conn.Source = copyCluster(cfg.Cluster[f.Source])
		conn.Target = copyCluster(cfg.Cluster[f.Target])
	} else {
		src, tgt := "source", "target"
		if flowName != "" {
			a, b, ok := strings.Cut(flowName, "->")
			a, b = strings.TrimSpace(a), strings.TrimSpace(b)
			if !ok || a == "" || b == "" || a == b {
				return nil, fmt.Errorf("--%s %q: write it as SOURCE->TARGET with two different aliases, e.g. --flow source->target", FlagFlow, flowName)
			}
			src, tgt = a, b
		}
		conn.Flow = mm2.NewFlow(src, tgt, mm2.IdentityPolicy{})
		conn.Source = &mm2.Cluster{Alias: src, Security: kconn.Security{Protocol: "PLAINTEXT"}}
		conn.Target = &mm2.Cluster{Alias: tgt, Security: kconn.Security{Protocol: "PLAINTEXT"}}
	}
	for i, cl := range []*mm2.Cluster{conn.Source, conn.Target} {
		if err := applyFlags(c, sides[i], cl); err != nil {
			return nil, err
		}
		if len(cl.Bootstrap) == 0 && need[i] {
			if conn.Config != nil {
				return nil, fmt.Errorf("cluster %s has no bootstrap servers: set %s.bootstrap.servers in %s or pass --%s-brokers", cl.Alias, cl.Alias, c.String(FlagMM2Config), sides[i])
			}
			return nil, fmt.Errorf("--%s-brokers is required (or --%s FILE): e.g. --%s-brokers host1:9092,host2:9092, or set KMIGRATE_%s_BROKERS", sides[i], FlagMM2Config, sides[i], strings.ToUpper(sides[i]))
		}
	}
	return conn, nil
}

func copyCluster(c *mm2.Cluster) *mm2.Cluster {
	if c == nil {
		return &mm2.Cluster{Security: kconn.Security{Protocol: "PLAINTEXT"}}
	}
	cp := *c
	return &cp
}

// sideFlags reads the connection flags of one side ("source" or "target") of the command line.
type sideFlags struct {
	c    *cli.Context
	side string
}

// flag is the full name of the flag name of the side: "<side>-<name>".
func (f sideFlags) flag(name string) string { return f.side + "-" + name }

// set reports whether the command line sets the flag name of the side.
func (f sideFlags) set(name string) bool { return f.c.IsSet(f.flag(name)) }

// str is the trimmed value of the flag name of the side.
func (f sideFlags) str(name string) string { return strings.TrimSpace(f.c.String(f.flag(name))) }

// applyFlags overrides cl with the flags of one side.
func applyFlags(c *cli.Context, side string, cl *mm2.Cluster) error {
	f := sideFlags{c, side}
	if f.set("brokers") {
		var seeds []string
		for _, b := range strings.Split(f.c.String(f.flag("brokers")), ",") {
			if b = strings.TrimSpace(b); b != "" {
				seeds = append(seeds, b)
			}
		}
		if len(seeds) == 0 {
			return fmt.Errorf("--%s is empty: give HOST:PORT[,HOST:PORT...]", f.flag("brokers"))
		}
		cl.Bootstrap = seeds
	}
	s := &cl.Security
	tlsFlags, err := applyTLSFlags(f, s)
	if err != nil {
		return err
	}
	saslFlags, err := applySASLFlags(f, s)
	if err != nil {
		return err
	}
	if err := applyProtocol(f, cl, tlsFlags, saslFlags); err != nil {
		return err
	}
	if strings.HasPrefix(s.Protocol, "SASL_") && s.SASLUser != "" && s.SASLPassword == "" {
		return fmt.Errorf("cluster %s: SASL user %s has no password: pass --%s FILE or --%s NAME", cl.Alias, s.SASLUser, f.flag("sasl-password-file"), f.flag("sasl-password-env"))
	}
	return nil
}

// applyTLSFlags overrides the TLS settings of s with the side's flags; used reports whether a flag that asks for TLS is set.
func applyTLSFlags(f sideFlags, s *kconn.Security) (used bool, err error) {
	if f.set("tls-ca") {
		s.CAFile, s.CAPEM, s.TruststoreFile, used = f.str("tls-ca"), "", "", true
	}
	if f.set("tls-cert") || f.set("tls-key") {
		s.CertFile, s.KeyFile, s.CertPEM, s.KeyPEM, s.KeystoreFile, used = f.str("tls-cert"), f.str("tls-key"), "", "", "", true
		if s.CertFile == "" || s.KeyFile == "" {
			return false, fmt.Errorf("--%s and --%s go together: give both PEM files", f.flag("tls-cert"), f.flag("tls-key"))
		}
	}
	if f.set("tls-truststore") {
		s.TruststoreFile, s.TruststoreType, s.CAFile, s.CAPEM, used = f.str("tls-truststore"), "", "", "", true
	}
	if f.set("tls-truststore-password-env") {
		v, err := fromEnv(f.flag("tls-truststore-password-env"), f.str("tls-truststore-password-env"))
		if err != nil {
			return false, err
		}
		s.TruststorePassword = v
	}
	if f.set("tls-server-name") {
		s.ServerName, used = f.str("tls-server-name"), true
	}
	if f.set("tls-insecure-skip-verify") {
		s.InsecureSkipVerify, used = f.c.Bool(f.flag("tls-insecure-skip-verify")), true
	}
	return used, nil
}

// applySASLFlags overrides the SASL settings of s with the side's flags; used reports whether one is set.
func applySASLFlags(f sideFlags, s *kconn.Security) (used bool, err error) {
	if f.set("sasl-mechanism") {
		m := strings.ToUpper(f.str("sasl-mechanism"))
		switch m {
		case "PLAIN", "SCRAM-SHA-256", "SCRAM-SHA-512":
		default:
			return false, fmt.Errorf("--%s %q: use PLAIN, SCRAM-SHA-256 or SCRAM-SHA-512", f.flag("sasl-mechanism"), m)
		}
		s.SASLMechanism, used = m, true
	}
	if f.set("sasl-user") {
		s.SASLUser, s.SASLLoginModule, used = f.str("sasl-user"), "", true
	}
	if f.set("sasl-password-file") && f.set("sasl-password-env") {
		return false, fmt.Errorf("--%s and --%s both given: choose one", f.flag("sasl-password-file"), f.flag("sasl-password-env"))
	}
	if f.set("sasl-password-file") {
		data, err := mm2.ReadFile(f.c.Context, f.str("sasl-password-file")) // bounded, stops on SIGTERM
		if err != nil {
			return false, fmt.Errorf("--%s: %w", f.flag("sasl-password-file"), err)
		}
		pw := strings.TrimRight(string(data), "\r\n")
		if pw == "" {
			return false, fmt.Errorf("--%s %s: the file is empty", f.flag("sasl-password-file"), f.str("sasl-password-file"))
		}
		s.SASLPassword, used = kconn.Secret(pw), true
	}
	if f.set("sasl-password-env") {
		v, err := fromEnv(f.flag("sasl-password-env"), f.str("sasl-password-env"))
		if err != nil {
			return false, err
		}
		s.SASLPassword, used = v, true
	}
	return used, nil
}

// applyProtocol sets cl's security protocol from the side's flag, refusing TLS or SASL flags it would ignore, else from the TLS or SASL flags set.
func applyProtocol(f sideFlags, cl *mm2.Cluster, tlsFlags, saslFlags bool) error {
	s := &cl.Security
	if f.set("security-protocol") {
		p := strings.ToUpper(f.str("security-protocol"))
		switch p {
		case "PLAINTEXT", "SSL", "SASL_PLAINTEXT", "SASL_SSL":
		default:
			return fmt.Errorf("--%s %q: use PLAINTEXT, SSL, SASL_PLAINTEXT or SASL_SSL", f.flag("security-protocol"), p)
		}
		// Flags the protocol would ignore are a mistake: refuse them rather than connect
		// without the TLS or SASL they ask for.
		if p == "PLAINTEXT" || p == "SASL_PLAINTEXT" {
			if names := setFlags(f.c, f.side, tlsFlagNames); len(names) > 0 {
				return fmt.Errorf("cluster %s: TLS flags given (%s), but --%s is %s, which does not use TLS: use %s, or drop them",
					cl.Alias, strings.Join(names, ", "), f.flag("security-protocol"), p, strings.Replace(p, "PLAINTEXT", "SSL", 1))
			}
		}
		if p == "PLAINTEXT" || p == "SSL" {
			if names := setFlags(f.c, f.side, saslFlagNames); len(names) > 0 {
				return fmt.Errorf("cluster %s: SASL flags given (%s), but --%s is %s, which does not use SASL: use SASL_%s, or drop them",
					cl.Alias, strings.Join(names, ", "), f.flag("security-protocol"), p, p)
			}
		}
		s.Protocol = p
	} else if tlsFlags || saslFlags {
		// TLS or SASL flags imply the protocol that uses them, unless the file already asks for more.
		useTLS := tlsFlags || s.Protocol == "SSL" || s.Protocol == "SASL_SSL"
		useSASL := saslFlags || strings.HasPrefix(s.Protocol, "SASL_")
		switch {
		case useTLS && useSASL:
			s.Protocol = "SASL_SSL"
		case useSASL:
			s.Protocol = "SASL_PLAINTEXT"
		default:
			s.Protocol = "SSL"
		}
	}
	return nil
}

// The per-side flags (without "--<side>-") that only TLS or only SASL uses.
var (
	tlsFlagNames  = []string{"tls-ca", "tls-cert", "tls-key", "tls-truststore", "tls-truststore-password-env", "tls-server-name", "tls-insecure-skip-verify"}
	saslFlagNames = []string{"sasl-mechanism", "sasl-user", "sasl-password-file", "sasl-password-env"}
)

// setFlags returns "--<side>-<name>" for every name the command line sets.
func setFlags(c *cli.Context, side string, names []string) []string {
	var out []string
	for _, n := range names {
		if c.IsSet(side + "-" + n) {
			out = append(out, "--"+side+"-"+n)
		}
	}
	return out
}

func fromEnv(flagName, name string) (kconn.Secret, error) {
	if name == "" {
		return "", fmt.Errorf("--%s: give the name of an environment variable", flagName)
	}
	if strings.ContainsAny(name, "= ") {
		return "", errors.New("--" + flagName + ": give the NAME of an environment variable that holds the password, not the password")
	}
	v, ok := os.LookupEnv(name)
	if !ok || v == "" {
		return "", fmt.Errorf("--%s %s: the environment variable %s is not set or empty", flagName, name, name)
	}
	return kconn.Secret(v), nil
}
