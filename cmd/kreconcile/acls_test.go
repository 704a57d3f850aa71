package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/kmigrate/kmigrate/aclsync"
	"github.com/kmigrate/kmigrate/cmd/internal/clitest"
	"github.com/kmigrate/kmigrate/internal/testkit"
)

// targetACLs lists the ACLs of cl as "PERM principal OP TYPE:PATTERN:name".
func targetACLs(t *testing.T, cl *kgo.Client) []string {
	t.Helper()
	res, err := kadm.NewClient(cl).DescribeACLs(clitest.Context(t), kadm.NewACLs().AnyResource().ResourcePatternType(kadm.ACLPatternAny).Allow().Deny().AllowHosts().DenyHosts().Operations(kadm.OpAny))
	if err != nil {
		t.Fatalf("describe ACLs: %v", err)
	}
	var out []string
	for _, r := range res {
		if r.Err != nil {
			t.Fatalf("describe ACLs: %v", r.Err)
		}
		for _, d := range r.Described {
			out = append(out, strings.Join([]string{d.Permission.String(), d.Principal, d.Operation.String(), d.Type.String() + ":" + d.Pattern.String() + ":" + d.Name}, " "))
		}
	}
	sort.Strings(out)
	return out
}

func createACL(t *testing.T, cl *kgo.Client, b *kadm.ACLBuilder) {
	t.Helper()
	res, err := kadm.NewClient(cl).CreateACLs(clitest.Context(t), b)
	if err != nil {
		t.Fatalf("create ACLs: %v", err)
	}
	for _, r := range res {
		if r.Err != nil {
			t.Fatalf("create ACL: %v", r.Err)
		}
	}
}

func TestACLsPlanApplyRollback(t *testing.T) {
	p := testkit.NewPair(t, 1)
	src, srcSeeds := p.Source.Client, p.Source.Seeds
	dst, dstSeeds := p.Target.Client, p.Target.Seeds
	alice := "User:CN=alice,O=Finance"
	createACL(t, src, kadm.NewACLs().Topics("orders").Allow(alice).AllowHosts("*").Operations(kadm.OpRead, kadm.OpWrite).ResourcePatternType(kadm.ACLPatternLiteral))
	createACL(t, src, kadm.NewACLs().Groups("orders-app").Allow(alice).AllowHosts("*").Operations(kadm.OpRead).ResourcePatternType(kadm.ACLPatternLiteral))
	createACL(t, src, kadm.NewACLs().Topics("orders").Allow("User:*").AllowHosts("*").Operations(kadm.OpRead).ResourcePatternType(kadm.ACLPatternLiteral))
	createACL(t, dst, kadm.NewACLs().Topics("heartbeats").Allow("User:mm2").AllowHosts("*").Operations(kadm.OpAll).ResourcePatternType(kadm.ACLPatternLiteral))
	before := targetACLs(t, dst)
	conn := []string{"--source-brokers", srcSeeds, "--target-brokers", dstSeeds}
	// A principal with commas survives the flag as one rule.
	mapping := []string{"--map-principal", `User:CN=(.*),O=Finance=>User:CN=$1-mirror,O=Finance`}
	args := append(append([]string{"acls"}, conn...), mapping...)

	// Plan: exit 1, the documented JSON fields, nothing written.
	code, out, errOut := run(t, append(args, "--format", "json")...)
	if code != 1 {
		t.Fatalf("plan exit %d, want 1 (stderr %q)", code, errOut)
	}
	var raw struct {
		ACLs []map[string]any `json:"acls"`
	}
	if err := json.Unmarshal([]byte(out), &raw); err != nil || len(raw.ACLs) != 5 {
		t.Fatalf("plan JSON (%v): %s", err, out)
	}
	statuses := map[string]int{}
	for _, a := range raw.ACLs {
		for _, k := range []string{"principal", "target_principal", "resource_type", "resource_name", "pattern_type", "operation", "permission", "host", "status"} {
			if _, ok := a[k]; !ok {
				t.Errorf("plan JSON: field %q missing in %v", k, a)
			}
		}
		statuses[a["status"].(string)]++
		if a["principal"] == alice && a["target_principal"] != "User:CN=alice-mirror,O=Finance" {
			t.Errorf("principal not mapped: %v", a)
		}
	}
	if statuses["missing"] != 3 || statuses["skipped"] != 1 || statuses["target-only"] != 1 {
		t.Errorf("statuses %v, want 3 missing, 1 skipped (User:*), 1 target-only", statuses)
	}
	if got := targetACLs(t, dst); strings.Join(got, "\n") != strings.Join(before, "\n") {
		t.Fatalf("the plan wrote to the target: %v", got)
	}

	// Refusals before any write: exit 2.
	for _, bad := range [][]string{
		append(append([]string{}, args...), "--backup", "x.json"),
		append(append([]string{"acls"}, conn...), "--map-principal", "no-arrow"),
		append(append([]string{"acls"}, conn...), "--map-principal", "User:(=>x"),
	} {
		if code, _, errOut := run(t, bad...); code != 2 || errOut == "" {
			t.Errorf("%v: exit %d, stderr %q, want 2 with a message", bad, code, errOut)
		}
	}

	// Apply: exit 0, the backup named on stderr, the target has the images.
	backup := filepath.Join(t.TempDir(), "acls.json")
	code, out, errOut = run(t, append(args, "--apply", "--backup", backup)...)
	if code != 0 || !strings.Contains(errOut, backup) || !strings.Contains(out, "APPLIED: 3 created, 0 deleted") {
		t.Fatalf("apply exit %d\nstdout %s\nstderr %s", code, out, errOut)
	}
	after := targetACLs(t, dst)
	for _, want := range []string{"ALLOW User:CN=alice-mirror,O=Finance WRITE TOPIC:LITERAL:orders", "ALLOW User:CN=alice-mirror,O=Finance READ GROUP:LITERAL:orders-app", "ALLOW User:mm2 ALL TOPIC:LITERAL:heartbeats"} {
		if !strings.Contains(strings.Join(after, "\n"), want) {
			t.Errorf("target after apply lacks %q: %v", want, after)
		}
	}
	if len(after) != 4 {
		t.Errorf("target after apply: %v, want 4 ACLs (User:* left out)", after)
	}
	// Plan again: nothing to do, exit 0.
	if code, out, _ := run(t, args...); code != 0 || !strings.Contains(out, "IN SYNC") {
		t.Errorf("second plan exit %d:\n%s", code, out)
	}
	// The source is untouched.
	if got := targetACLs(t, src); len(got) != 4 {
		t.Errorf("source ACLs changed: %v", got)
	}

	// Rollback pointed at the source: refused, exit 2.
	if code, _, errOut := run(t, "rollback", "--target-brokers", srcSeeds, "--backup", backup); code != 2 || !strings.Contains(errOut, "refusing") {
		t.Errorf("rollback on the source: exit %d, %q", code, errOut)
	}
	if code, _, errOut := run(t, "rollback", "--target-brokers", dstSeeds, "--backup", backup, "--force"); code != 2 || !strings.Contains(errOut, "ACL backup") {
		t.Errorf("rollback --force of an ACL backup: exit %d, %q", code, errOut)
	}
	// An ACL added after the apply is kept by the rollback.
	createACL(t, dst, kadm.NewACLs().Topics("orders").Allow("User:carol").AllowHosts("*").Operations(kadm.OpRead).ResourcePatternType(kadm.ACLPatternLiteral))
	code, out, errOut = run(t, "rollback", "--target-brokers", dstSeeds, "--backup", backup, "--format", "json")
	if code != 0 {
		t.Fatalf("rollback exit %d: %s %s", code, out, errOut)
	}
	var rb aclsync.RollbackResult
	if err := json.Unmarshal([]byte(out), &rb); err != nil || len(rb.ACLs) != 3 || rb.TargetCluster.ID != "kfake-target" {
		t.Fatalf("rollback JSON (%v): %s", err, out)
	}
	want := append(append([]string{}, before...), "ALLOW User:carol READ TOPIC:LITERAL:orders")
	sort.Strings(want)
	if got := targetACLs(t, dst); strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("target after rollback:\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	if _, err := os.Stat(backup); err != nil {
		t.Errorf("backup gone: %v", err)
	}
}

func TestACLsDeleteExtra(t *testing.T) {
	p := testkit.NewPair(t, 1)
	srcSeeds, dst, dstSeeds := p.Source.Seeds, p.Target.Client, p.Target.Seeds
	createACL(t, dst, kadm.NewACLs().Topics("old").Allow("User:gone").AllowHosts("*").Operations(kadm.OpRead).ResourcePatternType(kadm.ACLPatternLiteral))
	args := []string{"acls", "--source-brokers", srcSeeds, "--target-brokers", dstSeeds}
	// Target-only ACLs alone are nothing to do; with --delete-extra they are a planned change.
	if code, _, _ := run(t, args...); code != 0 {
		t.Errorf("plan with a target-only ACL: exit %d, want 0", code)
	}
	if code, _, _ := run(t, append(args, "--delete-extra")...); code != 1 {
		t.Errorf("plan --delete-extra: exit %d, want 1", code)
	}
	backup := filepath.Join(t.TempDir(), "b.json")
	if code, out, errOut := run(t, append(args, "--delete-extra", "--apply", "--backup", backup)...); code != 0 || len(targetACLs(t, dst)) != 0 {
		t.Fatalf("apply --delete-extra: exit %d, target %v\n%s%s", code, targetACLs(t, dst), out, errOut)
	}
	if code, out, errOut := run(t, "rollback", "--target-brokers", dstSeeds, "--backup", backup); code != 0 || len(targetACLs(t, dst)) != 1 {
		t.Fatalf("rollback: exit %d, target %v\n%s%s", code, targetACLs(t, dst), out, errOut)
	}
}
