package aclsync

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"reflect"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/kmigrate/kmigrate/internal/backupfile"
	"github.com/kmigrate/kmigrate/internal/testkit"
	"github.com/kmigrate/kmigrate/mm2"
)

// env is a source and a target cluster (testkit.NewPair) with a client of each.
type env struct {
	srcK, dstK *kfake.Cluster
	src, dst   *kgo.Client
}

// newEnv starts a source of one broker and a target of targetBrokers.
func newEnv(t *testing.T, targetBrokers int) *env {
	t.Helper()
	p := testkit.NewPair(t, targetBrokers)
	return &env{srcK: p.Source.Cluster, dstK: p.Target.Cluster, src: p.Source.Client, dst: p.Target.Client}
}

func testCtx(t *testing.T) context.Context { return testkit.Context(t, time.Minute) }

func acl(perm, principal, op, rtype, pattern, name string) ACL {
	return ACL{Principal: principal, Host: "*", ResourceType: rtype, ResourceName: name, PatternType: pattern, Operation: op, Permission: perm}
}

func addACLs(t *testing.T, cl *kgo.Client, acls ...ACL) {
	t.Helper()
	for i, err := range createACLs(testCtx(t), cl, acls) {
		if err != nil {
			t.Fatalf("create ACL %s: %v", acls[i], err)
		}
	}
}

func listACLs(t *testing.T, cl *kgo.Client) []string {
	t.Helper()
	as, err := describeAllACLs(testCtx(t), cl, "test")
	if err != nil {
		t.Fatal(err)
	}
	out := []string{}
	for _, a := range as {
		out = append(out, a.String())
	}
	sort.Strings(out)
	return out
}

func strs(acls ...ACL) []string {
	out := []string{}
	for _, a := range acls {
		out = append(out, a.String())
	}
	sort.Strings(out)
	return out
}

const financeRule = `User:CN=(.*),O=Finance=>User:CN=$1-mirror,O=Finance`

func mustRules(t *testing.T, rules ...string) []PrincipalRule {
	t.Helper()
	var out []PrincipalRule
	for _, r := range rules {
		pr, err := ParsePrincipalRule(r)
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, pr)
	}
	return out
}

func TestMapPrincipal(t *testing.T) {
	rules := mustRules(t, financeRule, `User:(svc)-(.*)=>User:${1}_$2`, `User:.*=>User:catch-all`, `User:bob=>User:never`)
	for _, tc := range []struct {
		in, want string
		rule     int
	}{
		{"User:CN=alice,O=Finance", "User:CN=alice-mirror,O=Finance", 0},
		{"User:CN=alice,O=Finance,C=DE", "User:catch-all", 2}, // the whole principal must match rule 0
		{"User:svc-orders", "User:svc_orders", 1},
		{"User:bob", "User:catch-all", 2}, // first match wins
		{"Group:ops", "Group:ops", -1},    // no rule: kept
	} {
		got, rule := MapPrincipal(rules, tc.in)
		if got != tc.want || rule != tc.rule {
			t.Errorf("MapPrincipal(%q) = %q (rule %d), want %q (rule %d)", tc.in, got, rule, tc.want, tc.rule)
		}
	}
	for _, bad := range []string{"User:x", "=>User:y", "User:(x=>User:y"} {
		if _, err := ParsePrincipalRule(bad); err == nil {
			t.Errorf("ParsePrincipalRule(%q): no error", bad)
		}
	}
}

// sourceACLs is the source of the ACL tests: every kind of rule the plan treats differently.
func sourceACLs() []ACL {
	return []ACL{
		acl("ALLOW", "User:CN=alice,O=Finance", "READ", "TOPIC", "LITERAL", "orders"),
		acl("ALLOW", "User:CN=alice,O=Finance", "WRITE", "TOPIC", "LITERAL", "orders"),
		acl("ALLOW", "User:bob", "ALL", "TOPIC", "LITERAL", "payments"),
		acl("ALLOW", "User:bob", "READ", "TOPIC", "PREFIXED", "orders-"),
		acl("DENY", "User:mallory", "READ", "TOPIC", "LITERAL", "orders"),
		acl("ALLOW", "User:CN=alice,O=Finance", "READ", "GROUP", "LITERAL", "orders-app"),
		acl("ALLOW", "User:bob", "WRITE", "TRANSACTIONAL_ID", "PREFIXED", "pay-"),
		acl("ALLOW", "User:bob", "IDEMPOTENT_WRITE", "CLUSTER", "LITERAL", "kafka-cluster"),
		acl("ALLOW", "User:*", "READ", "TOPIC", "LITERAL", "orders"),
		acl("ALLOW", "User:bob", "READ", "TOPIC", "LITERAL", "__consumer_offsets"),
	}
}

func findACLItem(t *testing.T, p *Result, principal, op, rtype, name string) Item {
	t.Helper()
	for _, it := range p.ACLs {
		if it.Principal == principal && it.Operation == op && it.ResourceType == rtype && it.ResourceName == name {
			return it
		}
	}
	t.Fatalf("no plan item for %s %s %s:%s in %+v", principal, op, rtype, name, p.ACLs)
	return Item{}
}

func TestPlanACLs(t *testing.T) {
	for _, tc := range []struct {
		name   string
		policy mm2.ReplicationPolicy
		topic  func(string) string
	}{
		{"identity", mm2.IdentityPolicy{}, func(s string) string { return s }},
		{"default", mm2.DefaultPolicy{Separator: "."}, func(s string) string { return "old." + s }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e := newEnv(t, 1)
			addACLs(t, e.src, sourceACLs()...)
			present := acl("DENY", "User:mallory", "READ", "TOPIC", "LITERAL", tc.topic("orders"))
			extra := acl("ALLOW", "User:mm2", "ALL", "TOPIC", "LITERAL", "heartbeats")
			addACLs(t, e.dst, present, extra)
			flow := mm2.NewFlow("old", "new", tc.policy)
			p, err := Plan(testCtx(t), e.src, e.dst, Config{Flow: flow, Rules: mustRules(t, financeRule)})
			if err != nil {
				t.Fatal(err)
			}
			if p.SourceCluster.ID != "kfake-source" || p.TargetCluster.ID != "kfake-target" || p.SourceACLs != 10 || p.TargetACLs != 2 {
				t.Fatalf("clusters %+v %+v, %d source and %d target ACLs", p.SourceCluster, p.TargetCluster, p.SourceACLs, p.TargetACLs)
			}
			alice := "User:CN=alice,O=Finance"
			check := func(it Item, status Status, tp, tname string, mm2Differs bool, mm2Has string) {
				t.Helper()
				if it.Status != status || it.TargetPrincipal != tp || it.TargetResourceName != tname || it.MM2Differs != mm2Differs || !strings.Contains(it.MM2, mm2Has) {
					t.Errorf("%s %s %s:%s: got %s -> %s %s (mm2 differs %v: %q, reason %q), want %s -> %s %s (mm2 differs %v: %q)",
						it.Principal, it.Operation, it.ResourceType, it.ResourceName, it.Status, it.TargetPrincipal, it.TargetResourceName,
						it.MM2Differs, it.MM2, it.Reason, status, tp, tname, mm2Differs, mm2Has)
				}
			}
			mirror := "User:CN=alice-mirror,O=Finance"
			check(findACLItem(t, p, alice, "READ", "TOPIC", "orders"), Missing, mirror, tc.topic("orders"), true, "MM2 keeps principal "+alice)
			check(findACLItem(t, p, alice, "WRITE", "TOPIC", "orders"), Missing, mirror, tc.topic("orders"), true, "MM2 does not copy ALLOW WRITE")
			check(findACLItem(t, p, "User:bob", "ALL", "TOPIC", "payments"), Missing, "User:bob", tc.topic("payments"), true, "MM2 downgrades ALLOW ALL to ALLOW READ")
			check(findACLItem(t, p, "User:bob", "READ", "TOPIC", "orders-"), Missing, "User:bob", tc.topic("orders-"), true, "LITERAL topic patterns only")
			check(findACLItem(t, p, "User:mallory", "READ", "TOPIC", "orders"), Present, "User:mallory", tc.topic("orders"), false, "same as MM2")
			check(findACLItem(t, p, alice, "READ", "GROUP", "orders-app"), Missing, mirror, "orders-app", true, "topic ACLs only")
			check(findACLItem(t, p, "User:bob", "WRITE", "TRANSACTIONAL_ID", "pay-"), Missing, "User:bob", "pay-", true, "topic ACLs only")
			check(findACLItem(t, p, "User:bob", "IDEMPOTENT_WRITE", "CLUSTER", "kafka-cluster"), Missing, "User:bob", "kafka-cluster", true, "topic ACLs only")
			wild := findACLItem(t, p, "User:*", "READ", "TOPIC", "orders")
			check(wild, Skipped, "User:*", tc.topic("orders"), true, "MM2 copies it as ALLOW User:* READ")
			if !strings.Contains(wild.Reason, "--include-wildcards") {
				t.Errorf("wildcard reason %q does not name --include-wildcards", wild.Reason)
			}
			internal := findACLItem(t, p, "User:bob", "READ", "TOPIC", "__consumer_offsets")
			check(internal, Skipped, "User:bob", "", false, "not mirrored")
			if !strings.Contains(internal.Reason, "topic not mirrored") {
				t.Errorf("internal topic reason %q", internal.Reason)
			}
			var only []Item
			for _, it := range p.ACLs {
				if it.Status == TargetOnly {
					only = append(only, it)
				}
			}
			if len(only) != 1 || only[0].target() != extra || only[0].Principal != "" {
				t.Errorf("target-only items %+v, want only %s", only, extra)
			}
			if p.Changes() != 7 {
				t.Errorf("Changes() = %d, want 7 missing ACLs", p.Changes())
			}
			if p.ACLs[0].Status != Missing || p.ACLs[len(p.ACLs)-1].Status != Present {
				t.Errorf("items not sorted missing first, present last: %+v", p.ACLs)
			}
		})
	}
}

func TestPlanACLsOptions(t *testing.T) {
	e := newEnv(t, 1)
	addACLs(t, e.src, acl("ALLOW", "User:*", "READ", "TOPIC", "LITERAL", "orders"), acl("ALLOW", "User:bob", "READ", "TOPIC", "LITERAL", "*"))
	// --include-wildcards copies User:*; a literal * topic is kept under the identity policy.
	p, err := Plan(testCtx(t), e.src, e.dst, Config{IncludeWildcards: true})
	if err != nil {
		t.Fatal(err)
	}
	if c := p.Counts(); c[Missing] != 2 {
		t.Errorf("include wildcards: counts %v, want 2 missing", c)
	}
	// Under the default policy a literal * has no image.
	p, err = Plan(testCtx(t), e.src, e.dst, Config{Flow: mm2.NewFlow("old", "new", mm2.DefaultPolicy{Separator: "."}), IncludeWildcards: true})
	if err != nil {
		t.Fatal(err)
	}
	if it := findACLItem(t, p, "User:bob", "READ", "TOPIC", "*"); it.Status != Skipped || !strings.Contains(it.Reason, "PREFIXED pattern old.") {
		t.Errorf("literal * under the default policy: %+v", it)
	}
	// A rule whose result is no principal is an error, not a guess.
	if _, err := Plan(testCtx(t), e.src, e.dst, Config{Rules: mustRules(t, `User:(.*)=>$1`)}); err == nil || !strings.Contains(err.Error(), "not a principal") {
		t.Errorf("bad mapping: err = %v", err)
	}
	// sync.topic.acls.enabled=false: MM2 copies nothing, which the plan says.
	f := mm2.NewFlow("source", "target", mm2.IdentityPolicy{})
	f.Settings["sync.topic.acls.enabled"] = "false"
	p, err = Plan(testCtx(t), e.src, e.dst, Config{Flow: f})
	if err != nil {
		t.Fatal(err)
	}
	if it := findACLItem(t, p, "User:bob", "READ", "TOPIC", "*"); !it.MM2Differs || !strings.Contains(it.MM2, "sync.topic.acls.enabled=false") || p.MM2SyncEnabled {
		t.Errorf("sync disabled: %+v (plan says enabled %v)", it, p.MM2SyncEnabled)
	}
}

func TestPlanACLsRefusals(t *testing.T) {
	e := newEnv(t, 1)
	// The same cluster twice.
	if _, err := Plan(testCtx(t), e.src, e.src, Config{}); err == nil || !strings.Contains(err.Error(), "same cluster") {
		t.Errorf("same cluster: err = %v", err)
	}
	// No authorizer: a clear error, not "no ACLs".
	e.srcK.Fault(kfake.Fault{Keys: []kmsg.Key{kmsg.DescribeACLs}, TopLevel: true, Err: kerr.SecurityDisabled, Count: -1})
	_, err := Plan(testCtx(t), e.src, e.dst, Config{})
	if err == nil || !strings.Contains(err.Error(), "source cluster") || !strings.Contains(err.Error(), "authorizer.class.name") {
		t.Errorf("no authorizer: err = %v", err)
	}
}

func TestApplyAndRollbackACLs(t *testing.T) {
	for _, deleteExtra := range []bool{false, true} {
		t.Run(map[bool]string{false: "keep-extra", true: "delete-extra"}[deleteExtra], func(t *testing.T) {
			e := newEnv(t, 1)
			addACLs(t, e.src, sourceACLs()...)
			present := acl("DENY", "User:mallory", "READ", "TOPIC", "LITERAL", "orders")
			extra := acl("ALLOW", "User:mm2", "ALL", "TOPIC", "LITERAL", "heartbeats")
			addACLs(t, e.dst, present, extra)
			before := listACLs(t, e.dst)
			cfg := Config{Rules: mustRules(t, financeRule), DeleteExtra: deleteExtra}
			p, err := Plan(testCtx(t), e.src, e.dst, cfg)
			if err != nil {
				t.Fatal(err)
			}
			backup := filepath.Join(t.TempDir(), "acls.json")
			if err := Apply(testCtx(t), e.dst, p, ApplyConfig{Backup: backup}); err != nil {
				t.Fatalf("apply: %v", err)
			}
			mirror := "User:CN=alice-mirror,O=Finance"
			created := []ACL{
				acl("ALLOW", mirror, "READ", "TOPIC", "LITERAL", "orders"),
				acl("ALLOW", mirror, "WRITE", "TOPIC", "LITERAL", "orders"),
				acl("ALLOW", "User:bob", "ALL", "TOPIC", "LITERAL", "payments"),
				acl("ALLOW", "User:bob", "READ", "TOPIC", "PREFIXED", "orders-"),
				acl("ALLOW", mirror, "READ", "GROUP", "LITERAL", "orders-app"),
				acl("ALLOW", "User:bob", "WRITE", "TRANSACTIONAL_ID", "PREFIXED", "pay-"),
				acl("ALLOW", "User:bob", "IDEMPOTENT_WRITE", "CLUSTER", "LITERAL", "kafka-cluster"),
			}
			want := append([]ACL{present}, created...)
			if !deleteExtra {
				want = append(want, extra)
			}
			if got := listACLs(t, e.dst); !reflect.DeepEqual(got, strs(want...)) {
				t.Errorf("target after apply:\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(strs(want...), "\n"))
			}
			var actions []string
			for _, it := range p.ACLs {
				if it.Action != "" {
					actions = append(actions, it.Action)
				}
				if it.Err != "" {
					t.Errorf("item %+v has an error", it)
				}
			}
			if wantN := len(created) + map[bool]int{true: 1}[deleteExtra]; len(actions) != wantN || !p.Applied || p.Backup != backup {
				t.Errorf("actions %v (want %d), applied %v, backup %q", actions, wantN, p.Applied, p.Backup)
			}
			// The backup says what it holds, on which cluster, and exactly what changed.
			b, err := ReadBackup(backup)
			if err != nil {
				t.Fatal(err)
			}
			wantDeleted := []ACL{}
			if deleteExtra {
				wantDeleted = []ACL{extra}
			}
			if b.Kind != "acls" || !strings.Contains(b.Holds, "ACLs") || b.TargetCluster.ID != "kfake-target" ||
				!reflect.DeepEqual(strs(b.CreatedACLs...), strs(created...)) || !reflect.DeepEqual(b.DeletedACLs, wantDeleted) {
				t.Errorf("backup %+v", b)
			}
			if k, err := backupfile.Kind(backup); k != backupfile.ACLs || err != nil {
				t.Errorf("backupfile.Kind = %q, %v", k, err)
			}
			if fi, err := os.Stat(backup); err != nil || fi.Mode().Perm() != 0o600 {
				t.Errorf("backup mode: %v %v", fi, err)
			}
			// Planning again: nothing to do; applying again writes nothing (no backup).
			p2, err := Plan(testCtx(t), e.src, e.dst, cfg)
			if err != nil {
				t.Fatal(err)
			}
			if p2.Changes() != 0 || p2.Counts()[Missing] != 0 {
				t.Errorf("second plan: %d changes, counts %v", p2.Changes(), p2.Counts())
			}
			again := filepath.Join(t.TempDir(), "again.json")
			if err := Apply(testCtx(t), e.dst, p2, ApplyConfig{Backup: again}); err != nil || p2.Applied {
				t.Errorf("second apply: %v, applied %v", err, p2.Applied)
			}
			if _, err := os.Stat(again); err == nil {
				t.Errorf("a second apply with nothing to do wrote a backup")
			}
			// Someone adds an ACL after the apply: the rollback keeps it.
			later := acl("ALLOW", "User:carol", "READ", "TOPIC", "LITERAL", "orders")
			addACLs(t, e.dst, later)
			// Not on the source cluster.
			if r, err := Rollback(testCtx(t), e.src, backup, RollbackConfig{TargetAlias: "source"}); r != nil || err == nil || !strings.Contains(err.Error(), "source cluster") {
				t.Errorf("rollback on the source: %v, %v", r, err)
			}
			r, err := Rollback(testCtx(t), e.dst, backup, RollbackConfig{})
			if err != nil {
				t.Fatalf("rollback: %v", err)
			}
			if got, want := listACLs(t, e.dst), append(before, later.String()); !reflect.DeepEqual(got, sortStrings(want)) {
				t.Errorf("target after rollback:\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(sortStrings(want), "\n"))
			}
			var did []string
			for _, a := range r.ACLs {
				did = append(did, a.Was+"->"+a.Action)
			}
			if len(r.ACLs) != len(b.CreatedACLs)+len(b.DeletedACLs) || r.Failed() != 0 {
				t.Errorf("rollback result %v", did)
			}
			// A second rollback changes nothing.
			r, err = Rollback(testCtx(t), e.dst, backup, RollbackConfig{})
			if err != nil {
				t.Fatal(err)
			}
			for _, a := range r.ACLs {
				if a.Action != "unchanged" {
					t.Errorf("second rollback: %s %s", a.ACL, a.Action)
				}
			}
		})
	}
}

func sortStrings(s []string) []string { sort.Strings(s); return s }

func TestApplyACLsRefusalsAndFailures(t *testing.T) {
	e := newEnv(t, 1)
	addACLs(t, e.src, acl("ALLOW", "User:bob", "READ", "TOPIC", "LITERAL", "orders"), acl("ALLOW", "User:bob", "READ", "TOPIC", "LITERAL", "payments"))
	p, err := Plan(testCtx(t), e.src, e.dst, Config{})
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	// The wrong cluster: refused, no backup.
	if err := Apply(testCtx(t), e.src, p, ApplyConfig{Backup: filepath.Join(dir, "wrong.json")}); err == nil || !strings.Contains(err.Error(), "refusing") {
		t.Errorf("apply to the source: %v", err)
	}
	// An existing backup file is never replaced, and nothing is written.
	taken := filepath.Join(dir, "taken.json")
	if err := os.WriteFile(taken, []byte("keep"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := Apply(testCtx(t), e.dst, p, ApplyConfig{Backup: taken}); err == nil || !strings.Contains(err.Error(), "exists") {
		t.Errorf("existing backup: %v", err)
	}
	if got := listACLs(t, e.dst); len(got) != 0 {
		t.Errorf("target written without a backup: %v", got)
	}
	// The broker refuses one creation: the error and the item name it, the other is created.
	e.dstK.Fault(kfake.Fault{Keys: []kmsg.Key{kmsg.CreateACLs}, Resource: "payments", Err: kerr.ClusterAuthorizationFailed})
	err = Apply(testCtx(t), e.dst, p, ApplyConfig{Backup: filepath.Join(dir, "b.json")})
	if err == nil || !strings.Contains(err.Error(), "TOPIC:LITERAL:payments") {
		t.Fatalf("apply with a refused creation: %v", err)
	}
	for _, it := range p.ACLs {
		switch it.ResourceName {
		case "payments":
			if it.Err == "" || it.Action != "" {
				t.Errorf("refused item: %+v", it)
			}
		case "orders":
			if it.Action != "created" || it.Err != "" {
				t.Errorf("created item: %+v", it)
			}
		}
	}
}

func TestACLBackupValidation(t *testing.T) {
	dir := t.TempDir()
	good := Backup{Kind: "acls", Version: 1, SourceCluster: ClusterRef{Alias: "a", ID: "A"}, TargetCluster: ClusterRef{Alias: "b", ID: "B"},
		CreatedACLs: []ACL{acl("ALLOW", "User:x", "READ", "TOPIC", "LITERAL", "t")}, DeletedACLs: []ACL{}}
	for _, tc := range []struct {
		name   string
		mutate func(*Backup)
		want   string
	}{
		{"good", func(*Backup) {}, ""},
		{"version", func(b *Backup) { b.Version = 7 }, "version 7"},
		{"no cluster", func(b *Backup) { b.TargetCluster.ID = "" }, "cluster ID"},
		{"bad operation", func(b *Backup) { b.CreatedACLs[0].Operation = "FLY" }, "operation"},
		{"pattern", func(b *Backup) { b.CreatedACLs[0].PatternType = "MATCH" }, "pattern type"},
		{"twice", func(b *Backup) { b.DeletedACLs = append(b.DeletedACLs, b.CreatedACLs[0]) }, "listed twice"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			b := good
			b.CreatedACLs = append([]ACL(nil), good.CreatedACLs...)
			b.DeletedACLs = append([]ACL{}, good.DeletedACLs...)
			tc.mutate(&b)
			path := filepath.Join(dir, tc.name+".json")
			data, _ := json.Marshal(b)
			if err := os.WriteFile(path, data, 0o600); err != nil {
				t.Fatal(err)
			}
			_, err := ReadBackup(path)
			if tc.want == "" && err != nil || tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want)) {
				t.Errorf("ReadBackup: %v, want %q", err, tc.want)
			}
		})
	}
}
