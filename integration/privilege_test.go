package integration

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"

	"github.com/kmigrate/kmigrate/integration/cluster"
)

// Least privilege, on the secure bed (1 broker per cluster: on a 2-core
// machine the 3+3-broker bed makes this matrix too slow). Each tool runs as its own principal
// with exactly the ACLs of the "Least privilege" table (docs/security.md): it works; with each ACL
// removed in turn it exits 2, its error names the resource, its type and the principal, and
// it writes nothing (target offsets unchanged, no output or backup file).

// privACL is one ACL of a tool's set: an Allow for the tool's principal from any host, on a
// literal resource.
type privACL struct {
	side string // "source" or "target"
	typ  string // "Topic", "Group" or "Cluster"
	name string
	op   kadm.ACLOperation
	// hidden: without this ACL Kafka hides the resource instead of failing (an offset fetch
	// leaves out the topics the principal may not Describe), so the tool's error can name
	// only the resource type and what to grant, not the resource.
	hidden bool
	// prefixed: a prefixed ACL (name is the prefix), else literal.
	prefixed bool
	// unseen says why a run without this ACL cannot be refused (Kafka hides the resource
	// and the tool cannot tell it from one that does not exist): it is granted, not removed
	// in turn.
	unseen string
}

func (a privACL) String() string { return fmt.Sprintf("%s %s:%s %s", a.side, a.typ, a.name, a.op) }

func (a privACL) builder(principal string) *kadm.ACLBuilder {
	pattern := kadm.ACLPatternLiteral
	if a.prefixed {
		pattern = kadm.ACLPatternPrefixed
	}
	b := kadm.NewACLs().Allow(principal).AllowHosts().Operations(a.op).ResourcePatternType(pattern)
	switch a.typ {
	case "Topic":
		b = b.Topics(a.name)
	case "Group":
		b = b.Groups(a.name)
	case "TransactionalId":
		b = b.TransactionalIDs(a.name)
	default:
		b = b.Clusters()
	}
	return b
}

// privBed is the secure pair with the data the tools work on: topic on both clusters with the
// same 100 records (as a mirror left them), group committed at 60 on the source only.
type privBed struct {
	src, dst     cluster.Cluster
	topic, group string
	bin          string
	// stateGroups are the groups whose target offsets a refused run must leave (default: group).
	stateGroups []string
}

func (b *privBed) side(s string) cluster.Cluster {
	if s == "source" {
		return b.src
	}
	return b.dst
}

// grant creates (or with del, deletes) acl for principal as the admin and waits until the
// broker's authorizer lists the principal's ACLs as want.
func (b *privBed) grant(t *testing.T, a privACL, principal string, del bool) {
	t.Helper()
	c := b.side(a.side)
	adm := secAdmin(t, c)
	ctx := bedCtx(t, time.Minute)
	var err error
	if del {
		var res kadm.DeleteACLsResults
		res, err = adm.DeleteACLs(ctx, a.builder(principal))
		for _, r := range res {
			if err == nil && r.Err != nil {
				err = r.Err
			}
		}
	} else {
		var res kadm.CreateACLsResults
		res, err = adm.CreateACLs(ctx, a.builder(principal))
		for _, r := range res {
			if err == nil && r.Err != nil {
				err = r.Err
			}
		}
	}
	if err != nil {
		t.Fatalf("%s (delete %v) for %s: %v", a, del, principal, err)
	}
	bedWaitFor(ctx, t, 100*time.Millisecond, fmt.Sprintf("%s listed=%v for %s", a, !del, principal), func() string {
		res, err := adm.DescribeACLs(ctx, a.builder(principal))
		if err != nil {
			return err.Error()
		}
		n := 0
		for _, r := range res {
			n += len(r.Described)
		}
		if (n > 0) == del {
			return fmt.Sprintf("%d ACLs listed", n)
		}
		return ""
	})
}

// targetState is what a refused run must leave unchanged: the group's offsets on the target
// and the target's topics.
func (b *privBed) targetState(t *testing.T) string {
	t.Helper()
	adm := secAdmin(t, b.dst)
	ctx := bedCtx(t, time.Minute)
	groups := b.stateGroups
	if len(groups) == 0 {
		groups = []string{b.group}
	}
	var lines []string
	for _, g := range groups {
		var offs kadm.OffsetResponses
		bedWaitFor(ctx, t, 200*time.Millisecond, "offsets of "+g+" on the target", func() string {
			var err error
			if offs, err = adm.FetchOffsets(ctx, g); err != nil {
				return err.Error() // COORDINATOR_NOT_AVAILABLE while the offsets topic is created
			}
			return ""
		})
		offs.Each(func(o kadm.OffsetResponse) {
			lines = append(lines, fmt.Sprintf("%s %s/%d=%d", g, o.Topic, o.Partition, o.At))
		})
	}
	topics, err := adm.ListTopics(ctx)
	if err != nil {
		t.Fatalf("list topics of the target: %v", err)
	}
	lines = append(lines, topics.Names()...)
	sort.Strings(lines)
	return strings.Join(lines, " ")
}

// privCase is one tool run: its principal, its ACL set, the run, its exit code with every
// ACL, and the files a refused run must not write.
type privCase struct {
	user  string
	acls  []privACL
	args  func(props, dir string) []string
	files func(dir string) []string
	want  int
	// dir is where the run with every ACL writes (default: a temporary directory of the subtest).
	dir string
	// aliases are the clusters' names in the mm2.properties (default source, target).
	aliases [2]string
	// extra are more lines of the mm2.properties.
	extra []string
	// success, when set, is the run with every ACL (a tool that runs until stopped): it
	// returns like bedOutput.
	success func(t *testing.T, props string) (int, string, string)
}

// check runs c: with each ACL removed in turn (exit 2, named, nothing written), then with all
// of them (exit c.want). It returns the directory of the last run.
func (b *privBed) check(t *testing.T, c privCase) string {
	u := cluster.User{Name: c.user, Password: cluster.NewPassword()}
	principal := "User:" + u.Name
	for _, cl := range []cluster.Cluster{b.src, b.dst} {
		if err := cl.(cluster.Secured).AddUser(bedCtx(t, 2*time.Minute), u); err != nil {
			t.Fatal(err)
		}
	}
	props := filepath.Join(t.TempDir(), "mm2.properties")
	aliases := c.aliases
	if aliases[0] == "" {
		aliases = [2]string{"source", "target"}
	}
	text := cluster.MM2Properties(cluster.Endpoint(aliases[0], b.src, u), cluster.Endpoint(aliases[1], b.dst, u), c.extra...)
	if err := os.WriteFile(props, []byte(text), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, a := range c.acls {
		b.grant(t, a, principal, false)
	}
	for _, a := range c.acls {
		if a.unseen != "" {
			t.Logf("not removed in turn: %s (%s)", a, a.unseen)
			continue
		}
		t.Run("without "+a.String(), func(t *testing.T) {
			b.grant(t, a, principal, true)
			defer b.grant(t, a, principal, false)
			before := b.targetState(t)
			dir := t.TempDir()
			code, out, errs := bedOutput(t, b.bin, c.args(props, dir)...)
			if code != 2 {
				t.Errorf("exit %d, want 2\nstdout %s\nstderr %s", code, out, errs)
			}
			want := []string{principal, a.typ, a.op.String()}
			if !a.hidden {
				want = append(want, a.name)
			}
			// Kafka's operation names (DESCRIBE_CONFIGS) as kafka-acls spells them (DescribeConfigs).
			fold := func(s string) string { return strings.ReplaceAll(strings.ToLower(s), "_", "") }
			for _, w := range want {
				if !strings.Contains(fold(errs), fold(w)) {
					t.Errorf("stderr does not name %q:\n%s", w, errs)
				}
			}
			if after := b.targetState(t); after != before {
				t.Errorf("target changed by a refused run:\nbefore %s\nafter  %s", before, after)
			}
			for _, f := range c.files(dir) {
				if _, err := os.Stat(f); !os.IsNotExist(err) {
					t.Errorf("%s written by a refused run (stat: %v)", f, err)
				}
			}
			t.Logf("exit %d; stderr ends: %s", code, lastLines(errs, 2))
		})
	}
	dir := c.dir
	if dir == "" {
		dir = t.TempDir()
	}
	var code int
	var out, errs string
	if c.success != nil {
		code, out, errs = c.success(t, props)
	} else {
		code, out, errs = bedOutput(t, b.bin, c.args(props, dir)...)
	}
	if code != c.want {
		t.Fatalf("with exactly its ACLs %v: exit %d, want %d\nstdout %s\nstderr %s", c.acls, code, c.want, out, errs)
	}
	t.Logf("with exactly its %d ACLs: exit %d", len(c.acls), code)
	return dir
}

// newPrivBed starts the secure pair and writes the data of privBed.
func newPrivBed(t *testing.T) *privBed {
	src, dst := secStart(t, 1)
	b := &privBed{src: src, dst: dst, topic: "lp.orders", group: "lp.app"}
	for _, c := range []cluster.Cluster{src, dst} {
		secTopic(t, c, b.topic, 1)
		secProduce(t, c, b.topic, 100)
	}
	offs := kadm.Offsets{}
	offs.Add(kadm.Offset{Topic: b.topic, Partition: 0, At: 60, LeaderEpoch: -1})
	if resp, err := secAdmin(t, src).CommitOffsets(bedCtx(t, time.Minute), b.group, offs); err != nil || resp.Error() != nil {
		t.Fatalf("commit %s at 60 on the source: %v %v", b.group, err, resp.Error())
	}
	return b
}

func TestLeastPrivilege(t *testing.T) {
	bedParallel(t)
	b := newPrivBed(t)
	bins := bedBuild(t, "kverify", "kreconcile")
	topicR := func(side string) privACL { return privACL{side: side, typ: "Topic", name: b.topic, op: kadm.OpRead} }
	hiddenTopic := func(side string) privACL { a := topicR(side); a.hidden = true; return a }
	group := func(side string, op kadm.ACLOperation) privACL {
		return privACL{side: side, typ: "Group", name: b.group, op: op}
	}
	none := func(string) []string { return nil }

	t.Run("kverify diff", func(t *testing.T) {
		b.bin = filepath.Join(bins, "kverify")
		b.check(t, privCase{user: "kverify", want: 0,
			acls: []privACL{topicR("source"), topicR("target")},
			args: func(props, dir string) []string {
				return []string{"diff", "--mm2-config", props, "--topic", b.topic, "--out", filepath.Join(dir, "report.txt")}
			},
			files: func(dir string) []string { return []string{filepath.Join(dir, "report.txt")} },
		})
	})
	b.bin = filepath.Join(bins, "kreconcile")
	plan := func(props, _ string) []string {
		return []string{"groups", "--mm2-config", props, "--group", b.group}
	}
	t.Run("kreconcile plan", func(t *testing.T) {
		b.check(t, privCase{user: "kreconcile-plan", want: 1, // behind: the target has no commit yet
			acls: []privACL{group("source", kadm.OpDescribe), hiddenTopic("source"), group("target", kadm.OpDescribe), topicR("target")},
			args: plan, files: none,
		})
	})
	var backup string // the successful apply's, for rollback
	applyDir := t.TempDir()
	t.Run("kreconcile apply", func(t *testing.T) {
		dir := b.check(t, privCase{user: "kreconcile-apply", want: 0, dir: applyDir,
			acls: []privACL{group("source", kadm.OpDescribe), hiddenTopic("source"), group("target", kadm.OpRead), topicR("target")},
			args: func(props, dir string) []string {
				return append(plan(props, dir), "--apply", "--backup", filepath.Join(dir, "backup.json"))
			},
			files: func(dir string) []string { return []string{filepath.Join(dir, "backup.json")} },
		})
		backup = filepath.Join(dir, "backup.json")
	})
	if _, err := os.Stat(backup); backup == "" || err != nil {
		t.Skipf("no backup from the apply (%v): rollback not checked", err)
	}
	t.Run("kreconcile rollback", func(t *testing.T) {
		b.check(t, privCase{user: "kreconcile-rollback", want: 0,
			acls:  []privACL{group("target", kadm.OpDelete), topicR("target")},
			args:  func(props, _ string) []string { return []string{"rollback", "--mm2-config", props, "--backup", backup} },
			files: none,
		})
	})
}

// TestLeastPrivilegeKmirror is TestLeastPrivilege for kmirror run, in the two rows of the
// "Least privilege" table (docs/security.md): the mirror alone (fencing by transactions, topic configs synced, no offset
// syncs, no group sync), then with offset syncs on the target and group offset sync with
// checkpoints. Each runs as its own principal on a flow of its own (its own aliases, topic and
// group), so that each starts from a target without its topics: kmirror must create them, and
// a refused run must create none. Removed in turn, every ACL makes kmirror exit 2 before it
// writes anything (the access check of mirror/access.go); with all of them it mirrors the
// topic (and, in the second row, puts the group on the target at its exact offset) and exits 0
// on SIGTERM.
func TestLeastPrivilegeKmirror(t *testing.T) {
	bedParallel(t)
	b := newPrivBed(t)
	b.bin = filepath.Join(bedBuild(t, "kmirror"), "kmirror")
	acl := func(side, typ, name string, op kadm.ACLOperation) privACL {
		return privACL{side: side, typ: typ, name: name, op: op}
	}
	// mirrorACLs are the first row's: src and dst are the flow's aliases, topic its topic.
	mirrorACLs := func(src, dst, topic string) []privACL {
		mapTopic := "kmirror-offsets." + src + ".internal"
		txn := acl("target", "TransactionalId", "kmirror-"+src+"-"+dst+"-", kadm.OpWrite)
		txn.prefixed = true
		return []privACL{
			acl("source", "Group", "kmirror-"+src+"-"+dst, kadm.OpRead),
			acl("source", "Topic", topic, kadm.OpRead),
			acl("source", "Topic", topic, kadm.OpDescribeConfigs),
			acl("target", "Topic", topic, kadm.OpCreate),
			acl("target", "Topic", topic, kadm.OpWrite),
			acl("target", "Topic", topic, kadm.OpRead),
			// AlterConfigs implies the DescribeConfigs that max.message.bytes is read with.
			acl("target", "Topic", topic, kadm.OpAlterConfigs),
			acl("target", "Topic", mapTopic, kadm.OpCreate),
			acl("target", "Topic", mapTopic, kadm.OpWrite),
			acl("target", "Topic", mapTopic, kadm.OpRead),
			txn,
		}
	}
	// Refused runs log at warn; a run with every ACL logs at info, so that a failing
	// mirrorUntil shows where kmirror was.
	run := func(props, level string) []string {
		return []string{"run", "--mm2-config", props, "--log-level", level}
	}
	none := func(string) []string { return nil }

	t.Run("kmirror run", func(t *testing.T) {
		topic := "lpm.orders"
		secTopic(t, b.src, topic, 1)
		secProduce(t, b.src, topic, 100)
		b.check(t, privCase{user: "kmirror", want: 0, aliases: [2]string{"lpm", "lpmt"},
			extra: []string{"topics=" + topic, "sync.group.offsets.enabled=false", "emit.checkpoints.enabled=false"},
			acls:  mirrorACLs("lpm", "lpmt", topic),
			args:  func(props, _ string) []string { return run(props, "warn") },
			files: none,
			success: func(t *testing.T, props string) (int, string, string) {
				return b.mirrorUntil(t, props, run(props, "info"), func(ctx context.Context, adm *kadm.Client) string {
					return b.committedEnd(ctx, adm, topic, 100)
				})
			},
		})
	})

	t.Run("kmirror run, offset syncs and group sync", func(t *testing.T) {
		topic, group := "lpg.orders", "lpg.app"
		secTopic(t, b.src, topic, 1)
		secProduce(t, b.src, topic, 100)
		offs := kadm.Offsets{}
		offs.Add(kadm.Offset{Topic: topic, Partition: 0, At: 60, LeaderEpoch: -1})
		if resp, err := secAdmin(t, b.src).CommitOffsets(bedCtx(t, time.Minute), group, offs); err != nil || resp.Error() != nil {
			t.Fatalf("commit %s at 60 on the source: %v %v", group, err, resp.Error())
		}
		b.stateGroups = []string{b.group, group}
		defer func() { b.stateGroups = nil }()
		syncs, checkpoints := "mm2-offset-syncs.lpg.internal", "lpg.checkpoints.internal"
		acls := append(mirrorACLs("lpg", "lpgt", topic),
			acl("target", "Topic", syncs, kadm.OpCreate),
			acl("target", "Topic", syncs, kadm.OpWrite),
			privACL{side: "source", typ: "Group", name: group, op: kadm.OpDescribe,
				unseen: "without it the source does not list the group: kmirror cannot tell it from a group that does not exist, and syncs nothing"},
			acl("target", "Group", group, kadm.OpRead),
			acl("target", "Topic", checkpoints, kadm.OpCreate),
			acl("target", "Topic", checkpoints, kadm.OpWrite),
			acl("target", "Topic", checkpoints, kadm.OpRead),
		)
		b.check(t, privCase{user: "kmirror-sync", want: 0, aliases: [2]string{"lpg", "lpgt"},
			extra: []string{"topics=" + topic, "groups=" + group, "offset-syncs.topic.location=target",
				"sync.group.offsets.enabled=true", "sync.group.offsets.interval.seconds=1",
				"emit.checkpoints.enabled=true", "emit.checkpoints.interval.seconds=1"},
			acls:  acls,
			args:  func(props, _ string) []string { return run(props, "warn") },
			files: none,
			success: func(t *testing.T, props string) (int, string, string) {
				return b.mirrorUntil(t, props, run(props, "info"), func(ctx context.Context, adm *kadm.Client) string {
					if msg := b.committedEnd(ctx, adm, topic, 100); msg != "" {
						return msg
					}
					got, err := adm.FetchOffsets(ctx, group)
					if err != nil {
						return err.Error()
					}
					if o, ok := got.Lookup(topic, 0); !ok || o.At != 60 {
						return fmt.Sprintf("group %s on the target: %+v, want 60", group, o)
					}
					for _, internal := range []string{syncs, checkpoints} {
						if msg := b.committedEnd(ctx, adm, internal, 1); msg != "" {
							return msg
						}
					}
					return ""
				})
			},
		})
	})
}

// committedEnd is "" once partition 0 of topic on the target has at least n committed
// records (its last stable offset), else what it has.
func (b *privBed) committedEnd(ctx context.Context, adm *kadm.Client, topic string, n int64) string {
	ends, err := adm.ListCommittedOffsets(ctx, topic)
	if err != nil {
		return err.Error()
	}
	o, ok := ends.Lookup(topic, 0)
	if !ok || o.Err != nil || o.Offset < n {
		return fmt.Sprintf("%s/0 on the target: %+v, want at least %d committed records", topic, o, n)
	}
	return ""
}

// mirrorUntil runs kmirror with args until done (polled as the admin of the target) says
// "", then stops it with SIGTERM; it returns like bedOutput. kmirror exiting first, or done
// not holding within 2 minutes, fails the test.
func (b *privBed) mirrorUntil(t *testing.T, props string, args []string, done func(context.Context, *kadm.Client) string) (int, string, string) {
	t.Helper()
	ctx := bedCtx(t, 3*time.Minute)
	var out, errs bytes.Buffer
	cmd := exec.CommandContext(ctx, b.bin, args...)
	cmd.Stdout, cmd.Stderr = &out, &errs
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	adm := secAdmin(t, b.dst)
	wait, cancel := context.WithTimeout(ctx, 2*time.Minute)
	defer cancel()
	last := ""
	for last = done(wait, adm); last != ""; last = done(wait, adm) {
		select {
		case err := <-exited:
			t.Fatalf("kmirror exited (%v) before it had mirrored: %s\nstderr %s", err, last, errs.String())
		case <-wait.Done():
			_ = cmd.Process.Kill()
			<-exited
			t.Fatalf("kmirror had not mirrored in 2 minutes: %s\nstderr %s", last, errs.String())
		case <-time.After(200 * time.Millisecond):
		}
	}
	_ = cmd.Process.Signal(syscall.SIGTERM)
	err := <-exited
	code := 0
	if ee, ok := errors.AsType[*exec.ExitError](err); ok {
		code = ee.ExitCode()
	} else if err != nil {
		t.Fatalf("kmirror: %v", err)
	}
	return code, out.String(), errs.String()
}

// lastLines are the last n non-empty lines of s (the tool's error and its hint), each cut at
// 400 characters, joined by " | ".
func lastLines(s string, n int) string {
	var lines []string
	for _, l := range strings.Split(strings.TrimSpace(s), "\n") {
		if l = strings.TrimSpace(l); l != "" {
			if len(l) > 400 {
				l = l[:400] + "..."
			}
			lines = append(lines, l)
		}
	}
	return strings.Join(lines[max(0, len(lines)-n):], " | ")
}
