package cluster

import (
	"context"
	"fmt"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"syscall"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
)

func sortedKeys(m map[string]string) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}

// Authorizer classes of the secure bed (and of kcluster -acls).
const (
	authorizerZK    = "kafka.security.auth.SimpleAclAuthorizer"
	authorizerKRaft = "org.apache.kafka.metadata.authorizer.StandardAuthorizer"
)

// secureProps are the listener, SASL, TLS and authorizer settings of a secure node. The
// admin is the only super user; a principal with no ACL is denied everything
// (allow.everyone.if.no.acl.found=false, the default, written out).
//
// 2.3.0: one SASL_PLAINTEXT listener (SCRAM-SHA-256) for clients and brokers, the admin
// logging in between brokers; ZooKeeper itself has no authentication on the loopback.
// 3.7.1 and 4.3.1: one SASL_SSL listener (SCRAM-SHA-512, the broker's PKCS12 keystore, the CA as PEM
// truststore) for clients and brokers; the KRaft controller listener is SASL_PLAINTEXT with
// PLAIN on the loopback (KRaft controllers cannot check SCRAM, whose credentials live in the
// metadata they serve), also as the admin, so no unauthenticated principal needs to be a
// super user.
func (c *jvmCluster) secureProps(m map[string]string, n *jvmNode) {
	sec := c.sec.sec
	admin := sec.Admin
	m["super.users"] = "User:" + admin.Name
	m["allow.everyone.if.no.acl.found"] = "false"
	switch c.spec.Version {
	case V230:
		l := fmt.Sprintf("SASL_PLAINTEXT://127.0.0.1:%d", n.port)
		m["listeners"], m["advertised.listeners"] = l, l
		m["security.inter.broker.protocol"] = "SASL_PLAINTEXT"
		m["sasl.enabled.mechanisms"] = "SCRAM-SHA-256"
		m["sasl.mechanism.inter.broker.protocol"] = "SCRAM-SHA-256"
		m["listener.name.sasl_plaintext.scram-sha-256.sasl.jaas.config"] = jaas(admin)
		m["authorizer.class.name"] = authorizerZK
	case V371, V431:
		m["listeners"] = fmt.Sprintf("SASL_SSL://127.0.0.1:%d,CONTROLLER://127.0.0.1:%d", n.port, n.ctrlPort)
		m["advertised.listeners"] = fmt.Sprintf("SASL_SSL://127.0.0.1:%d", n.port)
		m["listener.security.protocol.map"] = "SASL_SSL:SASL_SSL,CONTROLLER:SASL_PLAINTEXT"
		m["inter.broker.listener.name"] = "SASL_SSL"
		m["sasl.enabled.mechanisms"] = "SCRAM-SHA-512,PLAIN"
		m["sasl.mechanism.inter.broker.protocol"] = "SCRAM-SHA-512"
		m["sasl.mechanism.controller.protocol"] = "PLAIN"
		m["listener.name.sasl_ssl.sasl.enabled.mechanisms"] = "SCRAM-SHA-512"
		m["listener.name.sasl_ssl.scram-sha-512.sasl.jaas.config"] = jaas(admin)
		m["listener.name.controller.sasl.enabled.mechanisms"] = "PLAIN"
		m["listener.name.controller.plain.sasl.jaas.config"] = fmt.Sprintf(
			`org.apache.kafka.common.security.plain.PlainLoginModule required username="%s" password="%s" user_%s="%s";`,
			admin.Name, admin.Password, admin.Name, admin.Password)
		m["ssl.keystore.type"] = "PKCS12"
		m["ssl.keystore.location"] = filepath.Join(c.dir, "tls", fmt.Sprintf("broker-%d.p12", n.id-1))
		m["ssl.keystore.password"] = c.sec.storePass
		m["ssl.key.password"] = c.sec.storePass
		m["ssl.truststore.type"] = "PEM"
		m["ssl.truststore.location"] = sec.CAFile
		m["ssl.endpoint.identification.algorithm"] = "https"
		m["ssl.client.auth"] = "none"
		m["authorizer.class.name"] = authorizerKRaft
	}
}

// Security implements Secured.
func (c *jvmCluster) Security() Security {
	if c.sec == nil {
		return Security{}
	}
	return c.sec.sec
}

// scramConfig is ConfigCommand's --add-config value for a 2.3.0 SCRAM user.
func scramConfig(mech, password string) string {
	return fmt.Sprintf("%s=[iterations=4096,password=%s]", mech, password)
}

// zkAddUser writes u's SCRAM-SHA-256 credentials into ZooKeeper with Kafka 2.3.0's own
// kafka.admin.ConfigCommand --zookeeper: the only way on 2.3.0 (AlterUserScramCredentials
// came with 2.7), and what lets the brokers' admin log in before any broker runs.
func (c *jvmCluster) zkAddUser(ctx context.Context, u User) error {
	argv := c.javaArgs(heapTool, "kafka.admin.ConfigCommand", "--zookeeper", fmt.Sprintf("127.0.0.1:%d", c.zkPort),
		"--alter", "--add-config", scramConfig(c.sec.sec.Mechanism, u.Password), "--entity-type", "users", "--entity-name", u.Name)
	cmd := exec.CommandContext(ctx, argv[0], argv[1:]...)
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	out, err := cmd.CombinedOutput()
	if err != nil {
		return fmt.Errorf("cluster %s: add SCRAM user %s (kafka.admin.ConfigCommand --zookeeper): %w\n%s", c.spec.Name, u.Name, err, redact(string(out), u.Password))
	}
	shareReady(c.java, c.lib, "kafka.admin.ConfigCommand")
	return nil
}

func redact(s, secret string) string {
	if secret == "" {
		return s
	}
	return strings.ReplaceAll(s, secret, "<password>")
}

// AddUser implements Secured: ConfigCommand into ZooKeeper on 2.3.0, AlterUserScramCredentials
// as the admin on 3.7.1; then it waits until u logs in to every running broker.
func (c *jvmCluster) AddUser(ctx context.Context, u User) error {
	if c.sec == nil {
		return fmt.Errorf("cluster %s: AddUser: %w: the cluster was not started with Spec.Secure", c.spec.Name, ErrNotSupported)
	}
	if c.spec.Version == V230 {
		if err := c.zkAddUser(ctx, u); err != nil {
			return err
		}
	} else if err := c.kraftAddUser(ctx, u); err != nil {
		return err
	}
	return c.waitLogin(ctx, u)
}

func (c *jvmCluster) kraftAddUser(ctx context.Context, u User) error {
	opts, err := c.sec.sec.Opts(c.sec.sec.Admin)
	if err != nil {
		return err
	}
	cl, err := kgo.NewClient(append(opts, kgo.SeedBrokers(c.Bootstrap()...))...)
	if err != nil {
		return err
	}
	defer cl.Close()
	res, err := kadm.NewClient(cl).AlterUserSCRAMs(ctx, nil, []kadm.UpsertSCRAM{{
		User: u.Name, Mechanism: kadm.ScramSha512, Iterations: 4096, Password: u.Password,
	}})
	if err == nil {
		err = res.Error()
	}
	if err != nil {
		return fmt.Errorf("cluster %s: add SCRAM user %s (AlterUserScramCredentials): %w", c.spec.Name, u.Name, err)
	}
	return nil
}

// waitLogin polls until u can log in to each running broker (credentials reach the brokers
// asynchronously: a ZooKeeper watch, or the KRaft metadata log).
func (c *jvmCluster) waitLogin(ctx context.Context, u User) error {
	opts, err := c.sec.sec.Opts(u)
	if err != nil {
		return err
	}
	var procs []*proc
	var want []int32
	var addrs []string
	for _, n := range c.nodes {
		if n.proc.running() {
			procs = append(procs, n.proc)
			want = append(want, n.id)
			addrs = append(addrs, n.addr())
		}
	}
	ctx, cancel := context.WithTimeout(ctx, time.Minute)
	defer cancel()
	return waitBrokersAs(ctx, c.spec.Name+" as user "+u.Name, addrs, want, procs, opts)
}
