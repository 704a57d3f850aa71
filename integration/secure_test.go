package integration

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
	"github.com/twmb/franz-go/pkg/sasl/scram"

	"github.com/kmigrate/kmigrate/integration/cluster"
)

// The production-shaped bed: Spec.Secure puts 2.3.0 on SASL_PLAINTEXT with
// SCRAM-SHA-256 and 3.7.1 (and 4.3.1) on SASL_SSL with SCRAM-SHA-512 and the bed's own CA,
// the authorizer on, the admin the only super user.

// secClient is a franz-go client on the secure cluster c logged in as u, closed in t.Cleanup.
func secClient(t testing.TB, c cluster.Cluster, u cluster.User, opts ...kgo.Opt) *kgo.Client {
	t.Helper()
	sec, ok := cluster.SecurityOf(c)
	if !ok {
		t.Fatalf("cluster %s is not secure", c.Name())
	}
	so, err := sec.Opts(u)
	if err != nil {
		t.Fatal(err)
	}
	return bedClient(t, c.Bootstrap(), append(so, opts...)...)
}

// secAdmin is a kadm client on c as the bed's admin.
func secAdmin(t testing.TB, c cluster.Cluster) *kadm.Client {
	t.Helper()
	sec, _ := cluster.SecurityOf(c)
	return kadm.NewClient(secClient(t, c, sec.Admin))
}

// secTopic creates topic on c as the admin, RF min(brokers, 3), and waits for its leaders.
// secProduce's records are from 2023: without retention.ms=-1 the brokers' first retention
// check deletes them (secRetention).
func secTopic(t testing.TB, c cluster.Cluster, topic string, partitions int32) {
	t.Helper()
	secCreate(t, c, topic, partitions, map[string]*string{"retention.ms": kadm.StringPtr("-1")})
}

// secCreate is secTopic with the topic configs given (nil: the brokers' defaults).
func secCreate(t testing.TB, c cluster.Cluster, topic string, partitions int32, configs map[string]*string) {
	t.Helper()
	adm := secAdmin(t, c)
	ctx := bedCtx(t, time.Minute)
	resp, err := adm.CreateTopic(ctx, partitions, int16(min(c.Brokers(), 3)), configs, topic)
	if err == nil {
		err = resp.Err
	}
	if err != nil {
		t.Fatalf("create topic %s on %s: %v", topic, c.Name(), err)
	}
	sec, _ := cluster.SecurityOf(c)
	bedServed(ctx, t, secClient(t, c, sec.Admin), c.Name(), topic, partitions)
}

// secProduce writes n records to partition 0 of topic on c as the admin (acks=all).
func secProduce(t testing.TB, c cluster.Cluster, topic string, n int) {
	t.Helper()
	sec, _ := cluster.SecurityOf(c)
	cl := secClient(t, c, sec.Admin, kgo.RecordPartitioner(kgo.ManualPartitioner()))
	var recs []*kgo.Record
	for i := range n {
		recs = append(recs, &kgo.Record{Topic: topic, Key: fmt.Appendf(nil, "k%d", i), Value: fmt.Appendf(nil, "v%d", i),
			Timestamp: time.UnixMilli(1_700_000_000_000 + int64(i))})
	}
	if err := cl.ProduceSync(bedCtx(t, time.Minute), recs...).FirstErr(); err != nil {
		t.Fatalf("produce to %s on %s: %v", topic, c.Name(), err)
	}
}

// secStart starts the secure 2.3.0 source and 3.7.1 target with nb brokers each.
func secStart(t *testing.T, nb int) (src, dst cluster.Cluster) {
	t.Helper()
	return secStartOn(t, nb, cluster.V230, cluster.V371)
}

// secStartOn is secStart with the source and target of versions srcV and dstV.
func secStartOn(t *testing.T, nb int, srcV, dstV string) (src, dst cluster.Cluster) {
	t.Helper()
	// The brokers check retention every second (the default is every 5 minutes, the first
	// check 30 s after the start): records a test leaves to time retention go at once, not
	// at a moment that races the test (secRetention).
	cfg := map[string]string{"log.retention.check.interval.ms": "1000"}
	srcName, dstName := bedPairNames(fmt.Sprintf("sec%d", nb), srcV, dstV)
	src = cluster.StartT(t, cluster.Spec{Version: srcV, Brokers: nb, Secure: true, Name: srcName, Config: cfg})
	dst = cluster.StartT(t, cluster.Spec{Version: dstV, Brokers: nb, Secure: true, Name: dstName, Config: cfg})
	return src, dst
}

// TestSecureBed checks the secure bed of the versions of $KMIGRATE_PAIR (pair_test.go; 2.3.0
// and 3.7.1 when unset).
func TestSecureBed(t *testing.T) {
	bedParallel(t)
	srcV, dstV := bedPair(t)
	src, dst := secStartOn(t, 1, srcV, dstV)
	const topic = "sec.orders"
	for _, c := range []cluster.Cluster{src, dst} {
		secTopic(t, c, topic, 2)
		secProduce(t, c, topic, 50)
	}
	t.Run("refused", func(t *testing.T) { secRefused(t, src, dst) })
	t.Run("authorizer", func(t *testing.T) { secAuthorizer(t, src, dst, topic) })
	t.Run("kafka-cli", func(t *testing.T) { secKafkaCLI(t, src, dst) })
	t.Run("kverify", func(t *testing.T) {
		props := filepath.Join(t.TempDir(), "mm2.properties")
		text := cluster.MM2Properties(cluster.Endpoint("source", src, cluster.User{}), cluster.Endpoint("target", dst, cluster.User{}))
		if err := os.WriteFile(props, []byte(text), 0o600); err != nil {
			t.Fatal(err)
		}
		bin := filepath.Join(bedBuild(t, "kverify"), "kverify")
		code, out, errs := bedOutput(t, bin, "diff", "--mm2-config", props, "--topic", topic, "--format", "json")
		if code != 0 {
			t.Fatalf("kverify diff over SASL_PLAINTEXT and SASL_SSL: exit %d\n%s\n%s", code, out, errs)
		}
		t.Logf("kverify diff: exit 0: %s", firstLine(out))
	})
	t.Run("mirrormaker2", func(t *testing.T) { secMM2(t, src, dst) })
	t.Run("retention", func(t *testing.T) { secRetention(t, []cluster.Cluster{src, dst}, topic) })
}

// secRetention: the bed's records outlive the brokers' retention checks. On each cluster a
// canary topic with the default retention (7 days) gets one of secProduce's records, which
// are from 2023; once its log start has moved (a retention check ran and deleted it), topic,
// which secTopic created, must still start at offset 0. A bed whose topics left their
// records to time retention lost them at the first check, 30 s after the broker started,
// in the middle of whatever test ran then.
func secRetention(t *testing.T, cls []cluster.Cluster, topic string) {
	const canary = "sec.canary"
	ctx := bedCtx(t, 2*time.Minute)
	for _, c := range cls {
		secCreate(t, c, canary, 1, nil) // the default retention
		secProduce(t, c, canary, 1)
	}
	for _, c := range cls {
		adm := secAdmin(t, c)
		bedWaitFor(ctx, t, 200*time.Millisecond, "a retention check on "+c.Name()+" (the log start of "+canary+" moves)", func() string {
			starts, err := adm.ListStartOffsets(ctx, canary)
			if err != nil {
				return err.Error()
			}
			if o, _ := starts.Lookup(canary, 0); o.Err != nil || o.Offset < 1 {
				return fmt.Sprintf("%s/0 starts at %d (%v)", canary, o.Offset, o.Err)
			}
			return ""
		})
		starts, err := adm.ListStartOffsets(ctx, topic)
		if err != nil {
			t.Fatalf("list start offsets of %s on %s: %v", topic, c.Name(), err)
		}
		starts.Each(func(o kadm.ListedOffset) {
			if o.Err != nil || o.Offset != 0 {
				t.Errorf("%s/%d on %s starts at %d (%v) after a retention check, want 0: the bed's records were deleted", o.Topic, o.Partition, c.Name(), o.Offset, o.Err)
			}
		})
		if !t.Failed() {
			t.Logf("%s: retention deleted the canary; %s keeps its records", c.Name(), topic)
		}
	}
}

// secMM2: MirrorMaker 2 3.7.1 runs the bed's mm2.properties (SASL_PLAINTEXT SCRAM-SHA-256 to
// the source, SASL_SSL SCRAM-SHA-512 to the target, as admin) and mirrors a topic, which
// kverify then proves complete with the same file.
func secMM2(t *testing.T, src, dst cluster.Cluster) {
	const topic = "sec.mm2"
	secTopic(t, src, topic, 1)
	secProduce(t, src, topic, 40)
	text := cluster.MM2Properties(cluster.Endpoint("source", src, cluster.User{}), cluster.Endpoint("target", dst, cluster.User{}),
		"source->target.topics="+topic, "sync.group.offsets.enabled=false", "emit.checkpoints.enabled=false", "emit.heartbeats.enabled=false")
	sec, _ := cluster.SecurityOf(dst)
	opts, err := sec.Opts(sec.Admin)
	if err != nil {
		t.Fatal(err)
	}
	cluster.StartMM2T(t, cluster.MM2Spec{Properties: text, Target: "target", Name: "sec-mm2", TargetOpts: opts})
	adm := secAdmin(t, dst)
	ctx := bedCtx(t, 3*time.Minute)
	bedWaitFor(ctx, t, 500*time.Millisecond, "40 records of "+topic+" on the target", func() string {
		ends, err := adm.ListEndOffsets(ctx, topic)
		if err != nil {
			return err.Error()
		}
		o, ok := ends.Lookup(topic, 0)
		if !ok || o.Err != nil || o.Offset < 40 {
			return fmt.Sprintf("end offset %d (%v)", o.Offset, o.Err)
		}
		return ""
	})
	props := filepath.Join(t.TempDir(), "mm2.properties")
	if err := os.WriteFile(props, []byte(text), 0o600); err != nil {
		t.Fatal(err)
	}
	bin := filepath.Join(bedBuild(t, "kverify"), "kverify")
	if code, out, errs := bedOutput(t, bin, "diff", "--mm2-config", props, "--topic", topic); code != 0 {
		t.Fatalf("kverify diff of what MM2 mirrored: exit %d\n%s\n%s", code, out, errs)
	}
	t.Logf("MirrorMaker 2 mirrored %s over SASL and TLS; kverify diff: exit 0", topic)
}

func firstLine(s string) string {
	s, _, _ = strings.Cut(s, "\n")
	if len(s) > 200 {
		s = s[:200] + "..."
	}
	return s
}

// pingErr is the error of one metadata request with opts on c's brokers.
func pingErr(c cluster.Cluster, opts ...kgo.Opt) error {
	cl, err := kgo.NewClient(append([]kgo.Opt{kgo.SeedBrokers(c.Bootstrap()...), kgo.RequestRetries(0), kgo.DialTimeout(3 * time.Second)}, opts...)...)
	if err != nil {
		return err
	}
	defer cl.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 15*time.Second)
	defer cancel()
	_, err = kadm.NewClient(cl).BrokerMetadata(ctx)
	return err
}

// secRefused: no login, a wrong password, an untrusted CA and a wrong host name are refused;
// the admin with the right settings is not.
func secRefused(t *testing.T, src, dst cluster.Cluster) {
	for _, c := range []cluster.Cluster{src, dst} {
		sec, _ := cluster.SecurityOf(c)
		good, err := sec.Opts(sec.Admin)
		if err != nil {
			t.Fatal(err)
		}
		if err := pingErr(c, good...); err != nil {
			t.Fatalf("%s: admin with the bed's settings: %v", c.Name(), err)
		}
		var plain []kgo.Opt
		if sec.Protocol == "SASL_SSL" {
			plain = good[1:] // TLS without SASL
		}
		if err := pingErr(c, plain...); err == nil {
			t.Errorf("%s: a client without SASL got metadata", c.Name())
		}
		bad, _ := sec.Opts(cluster.User{Name: sec.Admin.Name, Password: "wrong"})
		if err := pingErr(c, bad...); err == nil {
			t.Errorf("%s: a wrong admin password got metadata", c.Name())
		}
		if sec.Protocol != "SASL_SSL" {
			continue
		}
		m := scram.Auth{User: sec.Admin.Name, Pass: sec.Admin.Password}.AsSha512Mechanism()
		err = pingErr(c, kgo.SASL(m), kgo.DialTLSConfig(&tls.Config{MinVersion: tls.VersionTLS12}))
		var ua x509.UnknownAuthorityError
		if !errors.As(err, &ua) && (err == nil || !strings.Contains(err.Error(), "unknown authority")) {
			t.Errorf("%s: TLS with the system roots: %v, want an unknown-authority error", c.Name(), err)
		}
		uaErr := err
		pem, _ := os.ReadFile(sec.CAFile)
		pool := x509.NewCertPool()
		pool.AppendCertsFromPEM(pem)
		err = pingErr(c, kgo.SASL(m), kgo.DialTLSConfig(&tls.Config{MinVersion: tls.VersionTLS12, RootCAs: pool, ServerName: "broker.example.com"}))
		var he x509.HostnameError
		if !errors.As(err, &he) && (err == nil || !strings.Contains(err.Error(), "not broker.example.com")) {
			t.Errorf("%s: TLS expecting host broker.example.com: %v, want a host name error", c.Name(), err)
		}
		t.Logf("%s: refused: no SASL, wrong password, untrusted CA (%v), wrong host name (%v)", c.Name(), uaErr, err)
	}
}

// secAuthorizer: a user with no ACL logs in and is denied the topic, the topic creation and
// the cluster's ACL listing: the authorizer is on and only the admin is a super user.
func secAuthorizer(t *testing.T, src, dst cluster.Cluster, topic string) {
	for _, c := range []cluster.Cluster{src, dst} {
		u := cluster.User{Name: "nobody", Password: cluster.NewPassword()}
		if err := c.(cluster.Secured).AddUser(bedCtx(t, 2*time.Minute), u); err != nil {
			t.Fatal(err)
		}
		adm := kadm.NewClient(secClient(t, c, u))
		ctx := bedCtx(t, time.Minute)
		td, err := adm.ListTopics(ctx, topic)
		if err == nil { // kadm answers either way: a request error or the topic's own
			err = td[topic].Err
		}
		if !errors.Is(err, kerr.TopicAuthorizationFailed) {
			t.Errorf("%s: topic %s as nobody: %v, want TOPIC_AUTHORIZATION_FAILED", c.Name(), topic, err)
		}
		resp, err := adm.CreateTopic(ctx, 1, 1, nil, "sec.nobody")
		if err == nil {
			err = resp.Err
		}
		if !errors.Is(err, kerr.TopicAuthorizationFailed) && !errors.Is(err, kerr.ClusterAuthorizationFailed) {
			t.Errorf("%s: create topic as nobody: %v, want an authorization error", c.Name(), err)
		}
		// The raw request: the broker's answer is an error code in the response.
		req := kmsg.NewPtrDescribeACLsRequest()
		req.ResourceType, req.ResourcePatternType = kmsg.ACLResourceTypeAny, kmsg.ACLResourcePatternTypeAny
		req.Operation, req.PermissionType = kmsg.ACLOperationAny, kmsg.ACLPermissionTypeAny
		dresp, err := req.RequestWith(ctx, secClient(t, c, u))
		if err == nil {
			err = kerr.ErrorForCode(dresp.ErrorCode)
		}
		if !errors.Is(err, kerr.ClusterAuthorizationFailed) {
			t.Errorf("%s: describe ACLs as nobody: %v, want CLUSTER_AUTHORIZATION_FAILED", c.Name(), err)
		}
	}
}

// secKafkaCLI: Kafka 3.7.1's own kafka-acls (kafka.admin.AclCommand) with --command-config
// the bed's admin file lists the ACLs of both clusters.
func secKafkaCLI(t *testing.T, src, dst cluster.Cluster) {
	lib := filepath.Join(kafkaCache(), "kafka-3.7.1", "lib")
	for _, c := range []cluster.Cluster{src, dst} {
		sec, _ := cluster.SecurityOf(c)
		cfg := filepath.Join(t.TempDir(), "admin.properties")
		if err := sec.WriteClientProperties(cfg, sec.Admin); err != nil {
			t.Fatal(err)
		}
		run := func(extra ...string) (string, error) {
			ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
			defer cancel()
			args := append([]string{"-Xmx256m", "-XX:TieredStopAtLevel=1", "-cp", lib + "/*", "kafka.admin.AclCommand",
				"--bootstrap-server", strings.Join(c.Bootstrap(), ","), "--list"}, extra...)
			out, err := exec.CommandContext(ctx, aclJava(t), args...).CombinedOutput()
			return string(out), err
		}
		if out, err := run("--command-config", cfg); err != nil {
			t.Fatalf("%s: kafka-acls --list --command-config %s: %v\n%s", c.Name(), cfg, err, out)
		}
		t.Logf("%s: kafka-acls --list --command-config: exit 0", c.Name())
	}
}

func kafkaCache() string {
	if d := os.Getenv(cluster.EnvCache); d != "" {
		return d
	}
	home, _ := os.UserHomeDir()
	return filepath.Join(home, ".cache", "kmigrate")
}
