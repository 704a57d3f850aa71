package integration

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"

	"github.com/kmigrate/kmigrate/aclsync"
	"github.com/kmigrate/kmigrate/integration/cluster"
	"github.com/kmigrate/kmigrate/internal/backupfile"
)

// kreconcile acls on real brokers: a Kafka 2.3.0 source with the ZooKeeper
// authorizer, a 3.7.1 KRaft target with the StandardAuthorizer, checked with Kafka's own ACL
// tool (kafka.admin.AclCommand of 3.7.1) as well as DescribeACLs; then the reverse direction,
// writing to the 2.3.0 cluster. $KMIGRATE_PAIR (pair_test.go) picks other versions: a KRaft
// cluster of any version has the StandardAuthorizer.

// aclAuthorizer are the broker properties that turn ACLs on. PLAINTEXT clients (and the
// brokers themselves) are User:ANONYMOUS, made a super user so that the test bed keeps working
// while the ACLs under test are written and read. In KRaft combined mode the controller reads
// the same server.properties.
func aclAuthorizer(version string) map[string]string {
	class := "org.apache.kafka.metadata.authorizer.StandardAuthorizer"
	if version == cluster.V230 {
		class = "kafka.security.auth.SimpleAclAuthorizer"
	}
	return map[string]string{"authorizer.class.name": class, "super.users": "User:ANONYMOUS"}
}

// aclLine is one ACL as "PERMISSION principal OPERATION TYPE:PATTERN:name host", the form both
// listings below produce.
func aclLine(perm, principal, op, rtype, pattern, name, host string) string {
	return strings.Join([]string{perm, principal, op, rtype + ":" + pattern + ":" + name, host}, " ")
}

// aclDescribe lists c's ACLs with DescribeACLs.
func aclDescribe(t *testing.T, c cluster.Cluster) []string {
	t.Helper()
	b := kadm.NewACLs().AnyResource().ResourcePatternType(kadm.ACLPatternAny).Allow().Deny().AllowHosts().DenyHosts().Operations(kadm.OpAny)
	res, err := bedAdmin(t, c).DescribeACLs(bedCtx(t, time.Minute), b)
	if err != nil {
		t.Fatalf("describe ACLs of %s: %v", c.Name(), err)
	}
	out := []string{}
	for _, r := range res {
		if r.Err != nil {
			t.Fatalf("describe ACLs of %s: %v", c.Name(), r.Err)
		}
		for _, d := range r.Described {
			out = append(out, aclLine(d.Permission.String(), d.Principal, d.Operation.String(), d.Type.String(), d.Pattern.String(), d.Name, d.Host))
		}
	}
	sort.Strings(out)
	return out
}

// aclCreate creates one ACL on c (an operator's or another tool's write, not kreconcile's).
func aclCreate(t *testing.T, c cluster.Cluster, b *kadm.ACLBuilder) {
	t.Helper()
	res, err := bedAdmin(t, c).CreateACLs(bedCtx(t, time.Minute), b) // no hosts: "*"
	if err != nil {
		t.Fatalf("create ACL on %s: %v", c.Name(), err)
	}
	for _, r := range res {
		if r.Err != nil {
			t.Fatalf("create ACL %s %s on %s: %v", r.Principal, r.Name, c.Name(), r.Err)
		}
	}
}

// aclJava is the Java 17 binary the test bed runs on (integration/cluster's rule).
func aclJava(t *testing.T) string {
	t.Helper()
	candidates := []string{"/usr/lib/jvm/java-17-openjdk-amd64/bin/java"}
	if home := os.Getenv("JAVA_HOME"); home != "" {
		candidates = []string{filepath.Join(home, "bin", "java")}
	}
	for _, p := range candidates {
		if _, err := os.Stat(p); err == nil {
			return p
		}
	}
	p, err := exec.LookPath("java")
	if err != nil {
		t.Fatalf("no java for kafka.admin.AclCommand: %v", err)
	}
	return p
}

var (
	aclCmdResource = regexp.MustCompile(`^Current ACLs for resource .ResourcePattern\(resourceType=(\w+), name=(.*), patternType=(\w+)\).:`)
	aclCmdEntry    = regexp.MustCompile(`^\s*\(principal=(.*), host=(.*), operation=(\w+), permissionType=(\w+)\)`)
)

// aclTool lists c's ACLs with Kafka 3.7.1's own tool, kafka.admin.AclCommand --list (what
// kafka-acls.sh runs; on a secure bed as its admin), and parses its output.
func aclTool(t *testing.T, c cluster.Cluster) []string {
	t.Helper()
	cache := os.Getenv(cluster.EnvCache)
	if cache == "" {
		home, _ := os.UserHomeDir()
		cache = filepath.Join(home, ".cache", "kmigrate")
	}
	lib := filepath.Join(cache, "kafka-3.7.1", "lib")
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	args := []string{"-Xmx256m", "-XX:TieredStopAtLevel=1", "-cp", lib + "/*",
		"kafka.admin.AclCommand", "--bootstrap-server", strings.Join(c.Bootstrap(), ","), "--list"}
	if sec, ok := cluster.SecurityOf(c); ok { // a secure bed: as its admin, with --command-config
		cfg := filepath.Join(t.TempDir(), "admin.properties")
		if err := sec.WriteClientProperties(cfg, sec.Admin); err != nil {
			t.Fatal(err)
		}
		args = append(args, "--command-config", cfg)
	}
	cmd := exec.CommandContext(ctx, aclJava(t), args...)
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("kafka.admin.AclCommand --list on %s: %v\n%s", c.Name(), err, out)
	}
	var res []string
	var rtype, name, pattern string
	for _, line := range strings.Split(string(out), "\n") {
		if m := aclCmdResource.FindStringSubmatch(line); m != nil {
			rtype, name, pattern = m[1], m[2], m[3]
			continue
		}
		if m := aclCmdEntry.FindStringSubmatch(line); m != nil {
			if rtype == "" {
				t.Fatalf("AclCommand: an entry before any resource: %q\n%s", line, out)
			}
			res = append(res, aclLine(m[4], m[1], m[3], rtype, pattern, name, m[2]))
		}
	}
	sort.Strings(res)
	t.Logf("kafka.admin.AclCommand --list on %s: %d ACLs", c.Name(), len(res))
	return res
}

func aclSame(t *testing.T, what string, got, want []string) {
	t.Helper()
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Fatalf("%s:\n  %s\nwant\n  %s", what, strings.Join(got, "\n  "), strings.Join(want, "\n  "))
	}
}

func TestACLs(t *testing.T) {
	bedParallel(t)
	srcV, dstV := bedPair(t)
	srcName, dstName := bedPairNames("acls", srcV, dstV)
	src := cluster.StartT(t, cluster.Spec{Version: srcV, Name: srcName, Config: aclAuthorizer(srcV)})
	dst := cluster.StartT(t, cluster.Spec{Version: dstV, Name: dstName, Config: aclAuthorizer(dstV)})
	bin := bedBuild(t, "kreconcile")
	kreconcile := filepath.Join(bin, "kreconcile")
	dir := t.TempDir()

	alice, mirror := "User:CN=alice,O=Finance", "User:CN=alice-mirror,O=Finance"
	lit, pre := kadm.ACLPatternLiteral, kadm.ACLPatternPrefixed
	aclCreate(t, src, kadm.NewACLs().Topics("orders").Allow(alice).Operations(kadm.OpRead, kadm.OpWrite).ResourcePatternType(lit))
	aclCreate(t, src, kadm.NewACLs().Topics("payments").Allow("User:bob").Operations(kadm.OpAll).ResourcePatternType(lit))
	aclCreate(t, src, kadm.NewACLs().Topics("orders-").Allow("User:bob").Operations(kadm.OpRead).ResourcePatternType(pre))
	aclCreate(t, src, kadm.NewACLs().Topics("orders").Deny("User:mallory").Operations(kadm.OpRead).ResourcePatternType(lit))
	aclCreate(t, src, kadm.NewACLs().Groups("orders-app").Allow(alice).Operations(kadm.OpRead).ResourcePatternType(lit))
	aclCreate(t, src, kadm.NewACLs().TransactionalIDs("pay-tx").Allow("User:bob").Operations(kadm.OpWrite).ResourcePatternType(lit))
	aclCreate(t, src, kadm.NewACLs().Clusters().Allow("User:bob").Operations(kadm.OpIdempotentWrite).ResourcePatternType(lit))
	aclCreate(t, src, kadm.NewACLs().Topics("orders").Allow("User:*").Operations(kadm.OpDescribe).ResourcePatternType(lit))
	aclCreate(t, dst, kadm.NewACLs().Topics("heartbeats").Allow("User:mm2").Operations(kadm.OpAll).ResourcePatternType(lit))
	srcBefore := aclDescribe(t, src)
	if len(srcBefore) != 9 {
		t.Fatalf("source ACLs: %v, want 9", srcBefore)
	}
	dstBefore := aclTool(t, dst)
	aclSame(t, "target before, AclCommand vs DescribeACLs", dstBefore, aclDescribe(t, dst))

	// The flow renames topics (DefaultReplicationPolicy, source alias "old").
	props := strings.Replace(bedProperties(src, dst, "old", "new", "orders|payments|orders-.*"),
		"org.apache.kafka.connect.mirror.IdentityReplicationPolicy", "org.apache.kafka.connect.mirror.DefaultReplicationPolicy", 1)
	propsFile := filepath.Join(dir, "mm2.properties")
	if err := os.WriteFile(propsFile, []byte(props), 0o644); err != nil {
		t.Fatal(err)
	}
	args := []string{"acls", "--mm2-config", propsFile, "--map-principal", `User:CN=(.*),O=Finance=>User:CN=$1-mirror,O=Finance`}

	// Plan: exit 1; 8 missing, User:* skipped, MM2's heartbeats ACL target-only.
	code, out, errOut := bedOutput(t, kreconcile, append(args, "--format", "json")...)
	if code != 1 {
		t.Fatalf("plan: exit %d, want 1\n%s\n%s", code, out, errOut)
	}
	var plan aclsync.Result
	if err := json.Unmarshal([]byte(out), &plan); err != nil {
		t.Fatalf("plan JSON: %v\n%s", err, out)
	}
	counts := plan.Counts()
	t.Logf("plan: %d source ACLs, %d target ACLs: %v; MM2 would differ on:", plan.SourceACLs, plan.TargetACLs, counts)
	mm2Differs := 0
	for _, it := range plan.ACLs {
		if it.MM2Differs {
			mm2Differs++
			t.Logf("  %s %s %s %s:%s:%s -> %s: %s", it.Status, it.Permission, it.Operation, it.ResourceType, it.PatternType, it.ResourceName, it.TargetResourceName, it.MM2)
		}
	}
	if counts[aclsync.Missing] != 8 || counts[aclsync.Skipped] != 1 || counts[aclsync.TargetOnly] != 1 || counts[aclsync.Present] != 0 {
		t.Fatalf("plan counts %v, want 8 missing, 1 skipped, 1 target-only", counts)
	}
	// Every copied ACL but DENY mallory READ (which MM2 copies as we do) differs from MM2's
	// sync, and MM2 would copy the User:* rule we leave out: 8 rows.
	if mm2Differs != 8 {
		t.Errorf("MM2 differs on %d ACLs, want 8", mm2Differs)
	}
	if plan.SourceCluster.ID == "" || plan.TargetCluster.ID == "" || plan.SourceCluster.ID == plan.TargetCluster.ID {
		t.Errorf("cluster IDs %+v %+v", plan.SourceCluster, plan.TargetCluster)
	}

	// Apply: exit 0; the target (read with Kafka's tool and with DescribeACLs) has the images.
	backup := filepath.Join(dir, "acls-backup.json")
	code, out, errOut = bedOutput(t, kreconcile, append(args, "--apply", "--backup", backup)...)
	if code != 0 {
		t.Fatalf("apply: exit %d\n%s\n%s", code, out, errOut)
	}
	t.Logf("apply:\n%s", out)
	want := append([]string{}, dstBefore...)
	want = append(want,
		aclLine("ALLOW", mirror, "READ", "TOPIC", "LITERAL", "old.orders", "*"),
		aclLine("ALLOW", mirror, "WRITE", "TOPIC", "LITERAL", "old.orders", "*"),
		aclLine("ALLOW", "User:bob", "ALL", "TOPIC", "LITERAL", "old.payments", "*"),
		aclLine("ALLOW", "User:bob", "READ", "TOPIC", "PREFIXED", "old.orders-", "*"),
		aclLine("DENY", "User:mallory", "READ", "TOPIC", "LITERAL", "old.orders", "*"),
		aclLine("ALLOW", mirror, "READ", "GROUP", "LITERAL", "orders-app", "*"),
		aclLine("ALLOW", "User:bob", "WRITE", "TRANSACTIONAL_ID", "LITERAL", "pay-tx", "*"),
		aclLine("ALLOW", "User:bob", "IDEMPOTENT_WRITE", "CLUSTER", "LITERAL", "kafka-cluster", "*"),
	)
	sort.Strings(want)
	aclSame(t, "target after apply (kafka.admin.AclCommand --list)", aclTool(t, dst), want)
	aclSame(t, "target after apply (DescribeACLs)", aclDescribe(t, dst), want)
	b, err := aclsync.ReadBackup(backup)
	if err != nil {
		t.Fatal(err)
	}
	if len(b.CreatedACLs) != 8 || len(b.DeletedACLs) != 0 || b.TargetCluster.ID != plan.TargetCluster.ID || b.Kind != backupfile.ACLs {
		t.Errorf("backup: kind %q, target %+v, %d created, %d deleted", b.Kind, b.TargetCluster, len(b.CreatedACLs), len(b.DeletedACLs))
	}

	// Plan again: nothing to do.
	if code, out, errOut := bedOutput(t, kreconcile, args...); code != 0 || !strings.Contains(out, "IN SYNC") {
		t.Fatalf("second plan: exit %d, want 0\n%s\n%s", code, out, errOut)
	}
	// The source was never written.
	aclSame(t, "source after apply", aclDescribe(t, src), srcBefore)

	// Rollback: refused on the source; on the target it removes what the apply created and
	// keeps an ACL added since.
	if code, _, errOut := bedOutput(t, kreconcile, "rollback", "--target-brokers", strings.Join(src.Bootstrap(), ","), "--backup", backup); code != 2 || !strings.Contains(errOut, "refusing") {
		t.Errorf("rollback on the source: exit %d, %s", code, errOut)
	}
	aclCreate(t, dst, kadm.NewACLs().Topics("old.orders").Allow("User:carol").Operations(kadm.OpRead).ResourcePatternType(lit))
	code, out, errOut = bedOutput(t, kreconcile, "rollback", "--mm2-config", propsFile, "--backup", backup)
	if code != 0 {
		t.Fatalf("rollback: exit %d\n%s\n%s", code, out, errOut)
	}
	t.Logf("rollback:\n%s", out)
	want = append(append([]string{}, dstBefore...), aclLine("ALLOW", "User:carol", "READ", "TOPIC", "LITERAL", "old.orders", "*"))
	sort.Strings(want)
	aclSame(t, "target after rollback (kafka.admin.AclCommand --list)", aclTool(t, dst), want)

	// The reverse direction writes to the source cluster, 2.3.0 by default (failback): the
	// target as the source, identity policy, --delete-extra off; then its rollback.
	rev := []string{"acls", "--source-brokers", strings.Join(dst.Bootstrap(), ","), "--target-brokers", strings.Join(src.Bootstrap(), ",")}
	revBackup := filepath.Join(dir, "acls-reverse.json")
	code, out, errOut = bedOutput(t, kreconcile, append(rev, "--apply", "--backup", revBackup)...)
	if code != 0 {
		t.Fatalf("reverse apply: exit %d\n%s\n%s", code, out, errOut)
	}
	t.Logf("reverse apply:\n%s", out)
	wantSrc := append(append([]string{}, srcBefore...),
		aclLine("ALLOW", "User:mm2", "ALL", "TOPIC", "LITERAL", "source.heartbeats", "*"), // IdentityReplicationPolicy renames heartbeats
		aclLine("ALLOW", "User:carol", "READ", "TOPIC", "LITERAL", "old.orders", "*"))
	sort.Strings(wantSrc)
	aclSame(t, srcV+" cluster after the reverse apply (DescribeACLs)", aclDescribe(t, src), wantSrc)
	aclSame(t, srcV+" cluster after the reverse apply (kafka.admin.AclCommand --list)", aclTool(t, src), wantSrc)
	if code, out, errOut := bedOutput(t, kreconcile, "rollback", "--target-brokers", strings.Join(src.Bootstrap(), ","), "--backup", revBackup); code != 0 {
		t.Fatalf("reverse rollback: exit %d\n%s\n%s", code, out, errOut)
	}
	aclSame(t, srcV+" cluster after the reverse rollback", aclDescribe(t, src), srcBefore)
}

// TestACLsSecure3: kreconcile acls --apply, rollback and --apply again on the production-shaped
// bed (3 brokers a side, SASL source, SASL_SSL target, authorizers on; the versions of
// $KMIGRATE_PAIR, pair_test.go), three rounds, each judged by Kafka's own kafka-acls --list. A target broker applies an ACL change a moment after
// the controller took it, so a tool that reads one broker once can read the set from before its
// own write: the apply then reported ACLs it had created as failed, and a rollback left them.
func TestACLsSecure3(t *testing.T) {
	bedParallel(t)
	srcV, dstV := bedPair(t)
	src, dst := secStartOn(t, 3, srcV, dstV)
	alice := "User:CN=alice"
	lit := kadm.ACLPatternLiteral
	asAdmin := func(c cluster.Cluster, b *kadm.ACLBuilder) {
		t.Helper()
		res, err := secAdmin(t, c).CreateACLs(bedCtx(t, time.Minute), b)
		if err == nil {
			for _, r := range res {
				err = errors.Join(err, r.Err)
			}
		}
		if err != nil {
			t.Fatalf("create ACL on %s: %v", c.Name(), err)
		}
	}
	asAdmin(src, kadm.NewACLs().Topics("orders").Allow(alice).Operations(kadm.OpRead).ResourcePatternType(lit))
	asAdmin(src, kadm.NewACLs().Topics("orders").Deny("User:mallory").Operations(kadm.OpWrite).ResourcePatternType(lit))
	asAdmin(src, kadm.NewACLs().Groups("orders-app").Allow(alice).Operations(kadm.OpRead).ResourcePatternType(lit))
	dstBefore := aclTool(t, dst)
	mirror := "User:CN=alice-mirror"
	afterApply := append(append([]string{}, dstBefore...),
		aclLine("ALLOW", mirror, "READ", "TOPIC", "LITERAL", "orders", "*"),
		aclLine("DENY", "User:mallory", "WRITE", "TOPIC", "LITERAL", "orders", "*"),
		aclLine("ALLOW", mirror, "READ", "GROUP", "LITERAL", "orders-app", "*"))
	sort.Strings(afterApply)

	dir := t.TempDir()
	props := filepath.Join(dir, "mm2.properties")
	text := cluster.MM2Properties(cluster.Endpoint("source", src, cluster.User{}), cluster.Endpoint("target", dst, cluster.User{}))
	if err := os.WriteFile(props, []byte(text), 0o600); err != nil {
		t.Fatal(err)
	}
	kreconcile := filepath.Join(bedBuild(t, "kreconcile"), "kreconcile")
	args := []string{"acls", "--mm2-config", props, "--map-principal", `User:CN=(.*)=>User:CN=$1-mirror`}
	for round := 1; round <= 3; round++ {
		backup := filepath.Join(dir, fmt.Sprintf("acls-%d.json", round))
		code, out, errOut := bedOutput(t, kreconcile, append(args, "--apply", "--backup", backup)...)
		if code != 0 {
			t.Fatalf("round %d: apply: exit %d\n%s\n%s", round, code, out, errOut)
		}
		b, err := aclsync.ReadBackup(backup)
		if err != nil {
			t.Fatal(err)
		}
		if len(b.CreatedACLs) != 3 || len(b.DeletedACLs) != 0 {
			t.Fatalf("round %d: the backup holds %d created, %d deleted ACLs, want 3 and 0: %+v", round, len(b.CreatedACLs), len(b.DeletedACLs), b)
		}
		aclSame(t, fmt.Sprintf("round %d: target after apply (kafka-acls --list)", round), aclTool(t, dst), afterApply)
		t.Logf("round %d: apply exit 0, backup %d created; %s", round, len(b.CreatedACLs), lineWith(out, "read back from every broker"))

		code, out, errOut = bedOutput(t, kreconcile, "rollback", "--mm2-config", props, "--backup", backup, "--format", "json")
		if code != 0 {
			t.Fatalf("round %d: rollback: exit %d\n%s\n%s", round, code, out, errOut)
		}
		var res aclsync.RollbackResult
		if err := json.Unmarshal([]byte(out), &res); err != nil {
			t.Fatalf("rollback JSON: %v\n%s", err, out)
		}
		for _, r := range res.ACLs {
			if r.Action != "deleted" {
				t.Errorf("round %d: rollback of %s: %q, want deleted", round, r.ACL, r.Action)
			}
		}
		aclSame(t, fmt.Sprintf("round %d: target after rollback (kafka-acls --list)", round), aclTool(t, dst), dstBefore)
		if res.ReadBack == nil || len(res.ReadBack.Brokers) != 3 {
			t.Errorf("round %d: rollback read back from %+v, want the 3 brokers", round, res.ReadBack)
		} else {
			t.Logf("round %d: rollback exit 0, %d deleted; read back from brokers %v: %d rounds, %d ms", round, len(res.ACLs), res.ReadBack.Brokers, res.ReadBack.Rounds, res.ReadBack.WaitedMS)
		}
	}
	backup := filepath.Join(dir, "acls-final.json")
	if code, out, errOut := bedOutput(t, kreconcile, append(args, "--apply", "--backup", backup)...); code != 0 {
		t.Fatalf("final apply: exit %d\n%s\n%s", code, out, errOut)
	}
	aclSame(t, "target after the final apply (kafka-acls --list)", aclTool(t, dst), afterApply)
	if code, out, errOut := bedOutput(t, kreconcile, args...); code != 0 || !strings.Contains(out, "IN SYNC") {
		t.Fatalf("plan after the final apply: exit %d, want 0 (IN SYNC)\n%s\n%s", code, out, errOut)
	}
}

// lineWith is the first line of s that holds sub, trimmed ("" when none does).
func lineWith(s, sub string) string {
	for _, l := range strings.Split(s, "\n") {
		if strings.Contains(l, sub) {
			return strings.TrimSpace(l)
		}
	}
	return ""
}
