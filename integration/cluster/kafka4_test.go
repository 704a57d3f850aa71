package cluster_test

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/kmigrate/kmigrate/integration/cluster"
	"github.com/kmigrate/kmigrate/mm2"
)

// TestKafka4Bed starts the Kafka 4 bed of the jvm provider: one 4.3.1 broker in plaintext,
// which round-trips records, and three secure ones (SASL_SSL with SCRAM-SHA-512, the
// StandardAuthorizer on, the admin the only super user), where a topic gets three in-sync
// replicas, a new user is refused until the admin grants it ACLs, and then produces and
// consumes.
func TestKafka4Bed(t *testing.T) {
	t.Run("1-plain", func(t *testing.T) {
		start := time.Now()
		c := cluster.StartT(t, cluster.Spec{Version: cluster.V431})
		t.Logf("4.3.1, 1 broker: ready in %s", time.Since(start).Round(time.Millisecond))
		if got, want := c.Version(), cluster.V431; got != want {
			t.Errorf("got version %s, want %s", got, want)
		}
		roundTrip(t, c, "k4-single", 3, 100)
	})
	t.Run("3-secure", func(t *testing.T) {
		start := time.Now()
		c := cluster.StartT(t, cluster.Spec{Version: cluster.V431, Brokers: 3, Secure: true})
		t.Logf("4.3.1, 3 brokers, secure: ready in %s", time.Since(start).Round(time.Millisecond))
		secureACLs(t, c)
	})
}

// secureACLs checks a secure bed of three brokers: the admin creates a topic with
// replication factor 3 and sees three in-sync replicas; a new user is denied the topic
// until the admin allows it to write, read and use its group, then round-trips records.
func secureACLs(t *testing.T, c cluster.Cluster) {
	t.Helper()
	sec, ok := cluster.SecurityOf(c)
	if !ok {
		t.Fatalf("cluster %s: not secure", c.Name())
	}
	if sec.Protocol != "SASL_SSL" || sec.Mechanism != "SCRAM-SHA-512" {
		t.Errorf("security %s/%s, want SASL_SSL/SCRAM-SHA-512", sec.Protocol, sec.Mechanism)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	adminOpts, err := sec.Opts(sec.Admin)
	if err != nil {
		t.Fatal(err)
	}
	adm := kadm.NewClient(client(t, c.Bootstrap(), adminOpts...))
	const topic, group = "k4-secure", "k4-group"
	resp, err := adm.CreateTopic(ctx, 3, 3, nil, topic)
	if err == nil {
		err = resp.Err
	}
	if err != nil {
		t.Fatalf("create topic %s as admin: %v", topic, err)
	}
	waitISR(ctx, t, adm, c.Name(), topic, 3)

	u := cluster.User{Name: "app", Password: cluster.NewPassword()}
	if err := c.(cluster.Secured).AddUser(ctx, u); err != nil {
		t.Fatalf("add user %s: %v", u.Name, err)
	}
	userOpts, err := sec.Opts(u)
	if err != nil {
		t.Fatal(err)
	}
	// No ACL yet: the user may log in but not write.
	denied := client(t, c.Bootstrap(), append(userOpts, kgo.DefaultProduceTopic(topic), kgo.RequiredAcks(kgo.AllISRAcks()),
		kgo.RecordDeliveryTimeout(20*time.Second))...)
	err = denied.ProduceSync(ctx, &kgo.Record{Value: []byte("denied")}).FirstErr()
	if !errors.Is(err, kerr.TopicAuthorizationFailed) {
		t.Errorf("produce as %s without ACLs: got %v, want TOPIC_AUTHORIZATION_FAILED", u.Name, err)
	}

	acls := kadm.NewACLs().Allow("User:"+u.Name).AllowHosts().
		Topics(topic).Groups(group).
		Operations(kadm.OpWrite, kadm.OpRead, kadm.OpDescribe).ResourcePatternType(kadm.ACLPatternLiteral)
	res, err := adm.CreateACLs(ctx, acls)
	if err != nil {
		t.Fatalf("create ACLs: %v", err)
	}
	for _, r := range res {
		if r.Err != nil {
			t.Fatalf("create ACL %+v: %v", r, r.Err)
		}
	}
	described, err := adm.DescribeACLs(ctx, kadm.NewACLs().Allow("User:"+u.Name).AllowHosts().
		AnyResource().Operations(kadm.OpAny).ResourcePatternType(kadm.ACLPatternAny))
	if err != nil {
		t.Fatalf("describe ACLs: %v", err)
	}
	n := 0
	for _, d := range described {
		if d.Err != nil {
			t.Fatalf("describe ACLs: %v", d.Err)
		}
		n += len(d.Described)
	}
	// Three operations on the topic and three on the group.
	if n != 6 {
		t.Errorf("described %d ACLs of %s, want 6: %+v", n, u.Name, described)
	}

	// StandardAuthorizer learns the ACLs from the metadata log, broker by broker: wait until
	// every broker itself lets the user describe the topic, then produce once. Retrying the
	// produce instead could write a batch twice: a produce to three partitions succeeds on the
	// leaders that know the ACLs and fails on the others.
	waitAuthorized(ctx, t, c, userOpts, u.Name, topic)
	const records = 30
	if err := produceAs(ctx, c.Bootstrap(), userOpts, topic, records); err != nil {
		t.Fatalf("produce as %s with ACLs on every broker: %v", u.Name, err)
	}
	cl := client(t, c.Bootstrap(), append(userOpts, kgo.ConsumeTopics(topic), kgo.ConsumerGroup(group),
		kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))...)
	got := 0
	for got < records && ctx.Err() == nil {
		fs := cl.PollFetches(ctx)
		fs.EachError(func(topic string, p int32, err error) { t.Logf("fetch %s/%d as %s: %v", topic, p, u.Name, err) })
		got += fs.NumRecords()
	}
	if got != records {
		t.Errorf("consumed %d records as %s in group %s, want %d", got, u.Name, group, records)
	}
	if err := cl.CommitUncommittedOffsets(ctx); err != nil {
		t.Errorf("commit as %s in group %s: %v", u.Name, group, err)
	}
}

// waitAuthorized asks every broker of c, as the user logged in with opts, for topic's
// metadata until each one answers without TOPIC_AUTHORIZATION_FAILED.
func waitAuthorized(ctx context.Context, t *testing.T, c cluster.Cluster, opts []kgo.Opt, user, topic string) {
	t.Helper()
	cl := client(t, c.Bootstrap(), opts...)
	var last string
	for {
		last = authorizedEverywhere(ctx, cl, topic)
		if last == "" {
			return
		}
		select {
		case <-ctx.Done():
			t.Fatalf("cluster %s: %s not allowed to describe %s on every broker: %s", c.Name(), user, topic, last)
		case <-time.After(200 * time.Millisecond):
		}
	}
}

// authorizedEverywhere returns "" when every broker cl knows lets it describe topic, else
// what the first broker that does not said.
func authorizedEverywhere(ctx context.Context, cl *kgo.Client, topic string) string {
	brokers, err := kadm.NewClient(cl).BrokerMetadata(ctx)
	if err != nil {
		return fmt.Sprintf("broker metadata: %v", err)
	}
	for _, b := range brokers.Brokers {
		req := kmsg.NewPtrMetadataRequest()
		rt := kmsg.NewMetadataRequestTopic()
		rt.Topic = kmsg.StringPtr(topic)
		req.Topics = append(req.Topics, rt)
		resp, err := req.RequestWith(ctx, cl.Broker(int(b.NodeID)))
		if err != nil {
			return fmt.Sprintf("broker %d: metadata: %v", b.NodeID, err)
		}
		for _, rt := range resp.Topics {
			if err := kerr.ErrorForCode(rt.ErrorCode); err != nil {
				return fmt.Sprintf("broker %d: %v", b.NodeID, err)
			}
		}
	}
	return ""
}

// produceAs produces n records to topic with acks=all, logged in with opts.
func produceAs(ctx context.Context, seeds []string, opts []kgo.Opt, topic string, n int) error {
	cl, err := kgo.NewClient(append(opts, kgo.SeedBrokers(seeds...), kgo.DefaultProduceTopic(topic),
		kgo.RequiredAcks(kgo.AllISRAcks()), kgo.RecordDeliveryTimeout(20*time.Second))...)
	if err != nil {
		return err
	}
	defer cl.Close()
	recs := make([]*kgo.Record, n)
	for i := range recs {
		recs[i] = &kgo.Record{Value: []byte("secure-" + string(rune('a'+i%26)))}
	}
	return cl.ProduceSync(ctx, recs...).FirstErr()
}

// TestKafka4Script drives `scripts/cluster.sh up --secure 2.3.0 4.3.1`, the bed of the
// migration off ZooKeeper: the env file names KMIGRATE_BOOTSTRAP_4_3_1 and the admin's client
// properties of 4.3.1, which Kafka 4.3.1's own kafka-configs accepts as --command-config; the
// mm2.properties it names is the flow 2.3.0 -> 4.3.1, and kmigrate's client code reaches both
// clusters with it.
func TestKafka4Script(t *testing.T) {
	sh, rundir := clusterScript(t, cluster.V431, 8*time.Minute)
	t.Cleanup(func() { sh("down") })
	start := time.Now()
	out, err := sh("up", "--secure", "2.3.0", "4.3.1")
	if err != nil {
		t.Fatalf("cluster.sh up --secure 2.3.0 4.3.1: %v\n%s", err, out)
	}
	t.Logf("up --secure 2.3.0 4.3.1: %s\n%s", time.Since(start).Round(time.Second), out)
	env := parseEnv(t, filepath.Join(rundir, "env"))
	for _, k := range []string{"KMIGRATE_BOOTSTRAP_2_3_0", "KMIGRATE_BOOTSTRAP_4_3_1", "KMIGRATE_ADMIN_CONFIG_2_3_0", "KMIGRATE_ADMIN_CONFIG_4_3_1", "KMIGRATE_MM2_CONFIG"} {
		if env[k] == "" {
			t.Fatalf("env file does not set %s: %v", k, env)
		}
	}
	if _, ok := env["KMIGRATE_BOOTSTRAP_3_7_1"]; ok {
		t.Errorf("env file names a 3.7.1 cluster that was not asked for: %v", env)
	}
	cfgOut := kafkaConfigs(t, cluster.V431, env["KMIGRATE_BOOTSTRAP_4_3_1"], env["KMIGRATE_ADMIN_CONFIG_4_3_1"], "1")
	if !strings.Contains(cfgOut, "authorizer.class.name=org.apache.kafka.metadata.authorizer.StandardAuthorizer") {
		t.Errorf("kafka-configs 4.3.1 --describe broker 1: no StandardAuthorizer in\n%s", cfgOut)
	}
	cfg, err := mm2.Load(env["KMIGRATE_MM2_CONFIG"])
	if err != nil {
		t.Fatalf("load %s: %v", env["KMIGRATE_MM2_CONFIG"], err)
	}
	f, err := cfg.Flow("")
	if err != nil {
		t.Fatal(err)
	}
	for alias, boot := range map[string]string{f.Source: env["KMIGRATE_BOOTSTRAP_2_3_0"], f.Target: env["KMIGRATE_BOOTSTRAP_4_3_1"]} {
		opts, err := cfg.Cluster[alias].Opts()
		if err != nil {
			t.Fatalf("cluster %s: %v", alias, err)
		}
		cl := client(t, nil, opts...)
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		md, err := kadm.NewClient(cl).BrokerMetadata(ctx)
		cancel()
		if err != nil || len(md.Brokers) != 1 {
			t.Fatalf("cluster %s of the mm2.properties: %d brokers, %v; want 1", alias, len(md.Brokers), err)
		}
		if addr := fmt.Sprintf("%s:%d", md.Brokers[0].Host, md.Brokers[0].Port); addr != boot {
			t.Errorf("cluster %s of the mm2.properties is at %s, want %s", alias, addr, boot)
		}
	}
	if out, err := sh("down"); err != nil {
		t.Fatalf("cluster.sh down: %v\n%s", err, out)
	}
}
