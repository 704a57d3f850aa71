package integration

import (
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"

	"github.com/kmigrate/kmigrate/integration/cluster"
)

// Least privilege (issue 11, item 3), on the secure bed (1 broker per cluster: on a 2-core
// machine the 3+3-broker bed makes this matrix too slow). Each tool runs as its own principal
// with exactly the ACLs of the README's "Least privilege" table: it works; with each ACL
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
}

func (a privACL) String() string { return fmt.Sprintf("%s %s:%s %s", a.side, a.typ, a.name, a.op) }

func (a privACL) builder(principal string) *kadm.ACLBuilder {
	b := kadm.NewACLs().Allow(principal).AllowHosts().Operations(a.op).ResourcePatternType(kadm.ACLPatternLiteral)
	switch a.typ {
	case "Topic":
		b = b.Topics(a.name)
	case "Group":
		b = b.Groups(a.name)
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
	var offs kadm.OffsetResponses
	bedWaitFor(ctx, t, 200*time.Millisecond, "offsets of "+b.group+" on the target", func() string {
		var err error
		if offs, err = adm.FetchOffsets(ctx, b.group); err != nil {
			return err.Error() // COORDINATOR_NOT_AVAILABLE while the offsets topic is created
		}
		return ""
	})
	var lines []string
	offs.Each(func(o kadm.OffsetResponse) {
		lines = append(lines, fmt.Sprintf("%s/%d=%d", o.Topic, o.Partition, o.At))
	})
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
	text := cluster.MM2Properties(cluster.Endpoint("source", b.src, u), cluster.Endpoint("target", b.dst, u))
	if err := os.WriteFile(props, []byte(text), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, a := range c.acls {
		b.grant(t, a, principal, false)
	}
	for _, a := range c.acls {
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
			for _, w := range want {
				if !strings.Contains(strings.ToLower(errs), strings.ToLower(w)) {
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
			t.Logf("exit %d; stderr: %s", code, firstLine(errs))
		})
	}
	dir := c.dir
	if dir == "" {
		dir = t.TempDir()
	}
	code, out, errs := bedOutput(t, b.bin, c.args(props, dir)...)
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
