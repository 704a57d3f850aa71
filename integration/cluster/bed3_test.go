package cluster_test

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/kmigrate/kmigrate/integration/cluster"
	"github.com/kmigrate/kmigrate/mm2"
)

// TestSecureBed3Script drives `scripts/cluster.sh up --brokers 3 --secure` (the
// production-shaped bed): 2.3.0 and 3.7.1 with three brokers each; the env file names the admin's client
// properties of each cluster, which Kafka 3.7.1's own kafka-configs accepts as
// --command-config and which shows min.insync.replicas=2 and unclean leader election off on
// every broker; the mm2.properties it names connects kmigrate's client code to both clusters
// (three brokers each), where a topic gets replication factor 3 with three in-sync replicas.
func TestSecureBed3Script(t *testing.T) {
	sh, rundir := clusterScript(t, cluster.V371, 11*time.Minute)
	t.Cleanup(func() { sh("down") })
	if out, err := sh("up", "--brokers", "3", "--secure", "--acls"); err == nil {
		t.Fatalf("up --secure --acls: got success, want a refusal\n%s", out)
	}
	start := time.Now()
	out, err := sh("up", "--brokers", "3", "--secure")
	if err != nil {
		t.Fatalf("cluster.sh up --brokers 3 --secure: %v\n%s", err, out)
	}
	t.Logf("up --brokers 3 --secure: %s\n%s", time.Since(start).Round(time.Second), out)
	env := readEnv(t, filepath.Join(rundir, "env"))
	for _, v := range []string{"2_3_0", "3_7_1"} {
		boot, cfg := env["KMIGRATE_BOOTSTRAP_"+v], env["KMIGRATE_ADMIN_CONFIG_"+v]
		for _, id := range []string{"1", "2", "3"} {
			out := kafkaConfigs(t, cluster.V371, boot, cfg, id)
			for _, w := range []string{"min.insync.replicas=2", "unclean.leader.election.enable=false", "default.replication.factor=3"} {
				if !strings.Contains(out, w) {
					t.Errorf("kafka-configs --command-config %s, broker %s of %s: no %s in\n%s", cfg, id, v, w, out)
				}
			}
		}
	}
	checkMM2File(t, env["KMIGRATE_MM2_CONFIG"])
	if out, err := sh("down"); err != nil {
		t.Fatalf("cluster.sh down: %v\n%s", err, out)
	}
	for _, k := range []string{"KMIGRATE_ADMIN_CONFIG_2_3_0", "KMIGRATE_MM2_CONFIG"} {
		if _, err := os.Stat(env[k]); !os.IsNotExist(err) {
			t.Errorf("%s left after down (stat: %v): it holds a password", env[k], err)
		}
	}
}

// readEnv reads cluster.sh's env file and checks that it names the bootstrap addresses and
// the three files of a secure bed, each readable by its owner only.
func readEnv(t *testing.T, path string) map[string]string {
	t.Helper()
	m := parseEnv(t, path)
	for _, k := range []string{"KMIGRATE_BOOTSTRAP_2_3_0", "KMIGRATE_BOOTSTRAP_3_7_1", "KMIGRATE_ADMIN_CONFIG_2_3_0", "KMIGRATE_ADMIN_CONFIG_3_7_1", "KMIGRATE_MM2_CONFIG"} {
		if m[k] == "" {
			t.Fatalf("env file does not set %s: %v", k, m)
		}
		if strings.Contains(k, "CONFIG") {
			if fi, err := os.Stat(m[k]); err != nil || fi.Mode().Perm() != 0o600 {
				t.Errorf("%s=%s: %v; want a file readable by its owner only", k, m[k], err)
			}
		}
	}
	return m
}

// parseEnv reads the variables cluster.sh's env file exports.
func parseEnv(t *testing.T, path string) map[string]string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	m := map[string]string{}
	for _, line := range strings.Split(string(b), "\n") {
		if k, v, ok := strings.Cut(strings.TrimPrefix(line, "export "), "="); ok {
			m[k] = v
		}
	}
	return m
}

// kafkaConfigs runs Kafka version's own kafka-configs (kafka.admin.ConfigCommand) --describe
// --all on one broker with the admin's --command-config and returns its output; it fails the
// test when the tool fails.
func kafkaConfigs(t *testing.T, version, boot, cfg, broker string) string {
	t.Helper()
	cache := os.Getenv(cluster.EnvCache)
	if cache == "" {
		home, _ := os.UserHomeDir()
		cache = filepath.Join(home, ".cache", "kmigrate")
	}
	java := "/usr/lib/jvm/java-17-openjdk-amd64/bin/java"
	if home := os.Getenv("JAVA_HOME"); home != "" {
		java = filepath.Join(home, "bin", "java")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, java, "-Xmx256m", "-XX:TieredStopAtLevel=1", "-cp", filepath.Join(cache, "kafka-"+version, "lib", "*"),
		"kafka.admin.ConfigCommand", "--bootstrap-server", boot, "--command-config", cfg,
		"--entity-type", "brokers", "--entity-name", broker, "--describe", "--all")
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("kafka-configs %s --command-config %s --describe broker %s: %v\n%s", version, cfg, broker, err, out)
	}
	return string(out)
}

// checkMM2File connects to both clusters of the mm2.properties with kmigrate's own client
// options (mm2.Cluster.Opts: SASL, TLS with the bed's CA and host name check), finds three
// brokers on each and creates a topic there with replication factor 3: three in-sync replicas.
func checkMM2File(t *testing.T, path string) {
	t.Helper()
	cfg, err := mm2.Load(path)
	if err != nil {
		t.Fatalf("load %s: %v", path, err)
	}
	f, err := cfg.Flow("")
	if err != nil {
		t.Fatal(err)
	}
	for _, alias := range []string{f.Source, f.Target} {
		opts, err := cfg.Cluster[alias].Opts()
		if err != nil {
			t.Fatalf("cluster %s: %v", alias, err)
		}
		cl, err := kgo.NewClient(opts...)
		if err != nil {
			t.Fatal(err)
		}
		defer cl.Close()
		adm := kadm.NewClient(cl)
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
		defer cancel()
		md, err := adm.BrokerMetadata(ctx)
		if err != nil || len(md.Brokers) != 3 {
			t.Fatalf("cluster %s from %s: %d brokers, %v; want 3", alias, path, len(md.Brokers), err)
		}
		resp, err := adm.CreateTopic(ctx, 3, 3, nil, "bed3.check")
		if err == nil {
			err = resp.Err
		}
		if err != nil {
			t.Fatalf("cluster %s: create topic with RF 3: %v", alias, err)
		}
		waitISR(ctx, t, adm, alias, "bed3.check", 3)
	}
}

func waitISR(ctx context.Context, t *testing.T, adm *kadm.Client, alias, topic string, want int) {
	t.Helper()
	for {
		td, err := adm.ListTopics(ctx, topic)
		ok := err == nil && td[topic].Err == nil && len(td[topic].Partitions) > 0
		for _, p := range td[topic].Partitions {
			ok = ok && len(p.Replicas) == want && len(p.ISR) == want
		}
		if ok {
			return
		}
		select {
		case <-ctx.Done():
			t.Fatalf("cluster %s: topic %s not at %d in-sync replicas: %v %+v", alias, topic, want, err, td[topic].Partitions)
		case <-time.After(200 * time.Millisecond):
		}
	}
}
