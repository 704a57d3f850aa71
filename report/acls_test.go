package report_test

import (
	"strings"
	"testing"

	"github.com/kmigrate/kmigrate/aclsync"
	"github.com/kmigrate/kmigrate/report"
)

// aclPlan is a plan with every status: a mapped principal, a renamed topic, a prefix, a
// group, a wildcard left out, a topic not mirrored, a present and a target-only ACL.
func aclPlan() *aclsync.Result {
	alice, mirror := "User:CN=alice,O=Finance", "User:CN=alice-mirror,O=Finance"
	item := func(p, tp, rt, name, tname, pat, op, perm string, st aclsync.Status, reason, mm string, differs bool) aclsync.Item {
		return aclsync.Item{Principal: p, TargetPrincipal: tp, ResourceType: rt, ResourceName: name, TargetResourceName: tname,
			PatternType: pat, Operation: op, Permission: perm, Host: "*", Status: st, Reason: reason, MM2: mm, MM2Differs: differs}
	}
	return &aclsync.Result{
		SourceCluster: aclsync.ClusterRef{Alias: "old", ID: "src-cluster-id"},
		TargetCluster: aclsync.ClusterRef{Alias: "new", ID: "dst-cluster-id"},
		Flow:          "old->new", Policy: "org.apache.kafka.connect.mirror.DefaultReplicationPolicy",
		PrincipalMappings: []string{`User:CN=(.*),O=Finance=>User:CN=$1-mirror,O=Finance`},
		MM2SyncEnabled:    true, SourceACLs: 7, TargetACLs: 2,
		ACLs: []aclsync.Item{
			item(alice, mirror, "TOPIC", "orders", "old.orders", "LITERAL", "WRITE", "ALLOW", aclsync.Missing,
				"resource orders becomes old.orders (DefaultReplicationPolicy)", "MM2 does not copy ALLOW WRITE", true),
			item("User:bob", "User:bob", "TOPIC", "payments", "old.payments", "LITERAL", "ALL", "ALLOW", aclsync.Missing,
				"", "MM2 downgrades ALLOW ALL to ALLOW READ", true),
			item("User:bob", "User:bob", "TOPIC", "orders-", "old.orders-", "PREFIXED", "READ", "ALLOW", aclsync.Missing,
				"", "MM2 copies LITERAL topic patterns only", true),
			item(alice, mirror, "GROUP", "orders|app", "orders|app", "LITERAL", "READ", "ALLOW", aclsync.Missing,
				"principal mapped", "MM2 copies topic ACLs only", true),
			item("", "User:mm2", "TOPIC", "", "heartbeats", "LITERAL", "ALL", "ALLOW", aclsync.TargetOnly,
				"no source ACL maps to it", "MM2 never deletes target ACLs", false),
			item("User:*", "User:*", "TOPIC", "orders", "old.orders", "LITERAL", "READ", "ALLOW", aclsync.Skipped,
				"wildcard principal User:* (every user): left out; --include-wildcards copies it", "MM2 copies it as ALLOW User:* READ TOPIC:LITERAL:old.orders from *", true),
			item("User:bob", "User:bob", "TOPIC", "__consumer_offsets", "", "LITERAL", "READ", "ALLOW", aclsync.Skipped,
				"topic not mirrored", "MM2 does not copy it either (topic not mirrored)", false),
			item("User:mallory", "User:mallory", "TOPIC", "orders", "old.orders", "LITERAL", "READ", "DENY", aclsync.Present,
				"", "same as MM2", false),
		},
	}
}

// aclApplied is the plan after an apply that created two ACLs and failed one.
func aclApplied() *aclsync.Result {
	p := aclPlan()
	p.Applied, p.Backup, p.DeleteExtra = true, "kreconcile-acls-backup-20261201T081500Z.json", true
	p.ACLs[0].Action = "created"
	p.ACLs[1].Action = "created"
	p.ACLs[2].Err = "create: CLUSTER_AUTHORIZATION_FAILED: Cluster authorization failed."
	p.ACLs[3].Action = "created"
	p.ACLs[4].Action = "deleted"
	return p
}

func aclRollback() *aclsync.RollbackResult {
	a := func(p, op, name string) aclsync.ACL {
		return aclsync.ACL{Principal: p, Host: "*", ResourceType: "TOPIC", ResourceName: name, PatternType: "LITERAL", Operation: op, Permission: "ALLOW"}
	}
	return &aclsync.RollbackResult{Backup: "kreconcile-acls-backup-20261201T081500Z.json",
		TargetCluster: aclsync.ClusterRef{Alias: "new", ID: "dst-cluster-id"},
		ACLs: []aclsync.RolledBack{
			{ACL: a("User:bob", "ALL", "old.payments"), Was: "created", Action: "deleted"},
			{ACL: a("User:bob", "READ", "old.orders"), Was: "created", Action: "unchanged"},
			{ACL: a("User:mm2", "ALL", "heartbeats"), Was: "deleted", Action: "recreated"},
			{ACL: a("User:x", "READ", "t"), Was: "created", Action: "deleted", Err: "delete: REQUEST_TIMED_OUT"},
		}}
}

func TestACLsGolden(t *testing.T) {
	for _, fx := range []fixture{{"acls-plan", aclPlan()}, {"acls-applied", aclApplied()}, {"acls-rollback", aclRollback()}} {
		for _, gf := range goldenFormats {
			name := fx.name + "." + gf.suffix + ".golden"
			t.Run(name, func(t *testing.T) {
				golden(t, name, render(t, gf.format, fx.v, gf.opt))
			})
		}
	}
}

func TestACLsSummaryFirst(t *testing.T) {
	for _, tc := range []struct {
		name     string
		v        any
		headline string
	}{
		{"plan", aclPlan(), "4 missing on the target, 0 to delete, 1 present, 2 skipped, 1 target-only"},
		{"applied", aclApplied(), "1 failed, 3 created, 1 deleted"},
		{"in sync", &aclsync.Result{MM2SyncEnabled: true}, "nothing to do: 0 present, 0 skipped, 0 target-only"},
		{"rollback", aclRollback(), "1 failed, 1 deleted, 1 created again, 1 unchanged"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			for _, f := range []report.Format{report.Table, report.Markdown, report.HTML} {
				out := render(t, f, tc.v, report.Options{})
				i := strings.Index(out, tc.headline)
				if i < 0 {
					t.Fatalf("%s: headline %q not in output:\n%s", f, tc.headline, out)
				}
				for _, marker := range []string{"┌", "| ---", "<table"} {
					if j := strings.Index(out, marker); j >= 0 && j < i {
						t.Errorf("%s: headline at %d after a table at %d", f, i, j)
					}
				}
			}
		})
	}
	// Markdown escapes names: a group called "orders|app" does not split a cell.
	if md := render(t, report.Markdown, aclPlan(), report.Options{}); !strings.Contains(md, `orders\|app`) {
		t.Errorf("markdown does not escape |:\n%s", md)
	}
}
