package aclsync

import (
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// A target of three brokers, one of which answers DescribeAcls from an older copy of the ACLs
// for a while, as a broker does that has not yet applied the latest ACL change from the
// metadata log (KRaft) or ZooKeeper's change notification. The lagging broker is the one that
// receives the first DescribeAcls after the fault is armed, so that a tool reading one broker
// once reads it, whichever broker its client picks.

// laggingBroker stages the stale answers on a kfake cluster.
type laggingBroker struct {
	c        *kfake.Cluster
	mu       sync.Mutex
	armed    bool  // the next DescribeAcls picks the lagging broker
	node     int32 // the lagging broker, -1 until picked
	snapshot []ACL // what the lagging broker shows
	left     int   // stale answers still to give; < 0: for ever
	served   int   // stale answers given
	armOn    int16 // a request key that arms the fault when it arrives (-1: none)
}

// newLaggingBroker installs the control functions on c; nothing is stale until arm or armOnKey.
func newLaggingBroker(c *kfake.Cluster) *laggingBroker {
	l := &laggingBroker{c: c, node: -1, armOn: -1}
	c.ControlKey(int16(kmsg.DescribeACLs), l.describe)
	c.Control(l.watch)
	return l
}

// arm makes the broker that receives the next DescribeAcls show snapshot for its next n
// answers (n < 0: for ever).
func (l *laggingBroker) arm(snapshot []ACL, n int) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.armed, l.node, l.snapshot, l.left, l.armOn, l.served = true, -1, snapshot, n, -1, 0
}

// armOnKey is arm, done when the first request of key (CreateAcls, DeleteAcls) arrives: the
// broker lags behind that write.
func (l *laggingBroker) armOnKey(key kmsg.Key, snapshot []ACL, n int) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.armed, l.node, l.snapshot, l.left, l.armOn, l.served = false, -1, snapshot, n, int16(key), 0
}

// stale reports how many stale answers were given and by which broker.
func (l *laggingBroker) stale() (int, int32) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.served, l.node
}

func (l *laggingBroker) watch(req kmsg.Request) (kmsg.Response, error, bool) {
	l.c.KeepControl()
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.armOn >= 0 && req.Key() == l.armOn {
		l.armed, l.armOn = true, -1
	}
	return nil, nil, false
}

func (l *laggingBroker) describe(req kmsg.Request) (kmsg.Response, error, bool) {
	l.c.KeepControl()
	l.mu.Lock()
	defer l.mu.Unlock()
	if !l.armed || l.left == 0 {
		return nil, nil, false
	}
	if l.node < 0 {
		l.node = l.c.CurrentNode()
	}
	if l.c.CurrentNode() != l.node {
		return nil, nil, false
	}
	if l.left > 0 {
		l.left--
	}
	l.served++
	resp := req.(*kmsg.DescribeACLsRequest).ResponseKind().(*kmsg.DescribeACLsResponse)
	for _, a := range l.snapshot {
		k, err := a.enums()
		if err != nil {
			panic(err)
		}
		r := kmsg.NewDescribeACLsResponseResource()
		r.ResourceType, r.ResourceName, r.ResourcePatternType = k.rt, a.ResourceName, k.pt
		e := kmsg.NewDescribeACLsResponseResourceACL()
		e.Principal, e.Host, e.Operation, e.PermissionType = a.Principal, a.Host, k.op, k.perm
		r.ACLs = append(r.ACLs, e)
		resp.Resources = append(resp.Resources, r)
	}
	return resp, nil, true
}

// targetACLs reads the target's ACLs as they are (every broker of kfake shares one set; the
// lagging broker is not armed when this is called).
func targetACLs(t *testing.T, e *env) []ACL {
	t.Helper()
	as, err := describeAllACLs(testCtx(t), e.dst, "target")
	if err != nil {
		t.Fatal(err)
	}
	return as
}

func itemErrors(p *Result) []string {
	var out []string
	for _, it := range p.ACLs {
		if it.Err != "" {
			out = append(out, it.target().String()+": "+it.Err)
		}
	}
	return out
}

func itemActions(p *Result) map[string]string {
	out := map[string]string{}
	for _, it := range p.ACLs {
		if it.Action != "" {
			out[it.target().String()] = it.Action
		}
	}
	return out
}

// TestACLsLaggingBroker: apply, rollback and apply again on a target one of whose brokers
// answers DescribeAcls with the ACLs from before the last write for its next three answers.
// Each gives the report and the backup of what happened on the cluster.
func TestACLsLaggingBroker(t *testing.T) {
	e := newEnv(t, 3)
	addACLs(t, e.src, sourceACLs()...)
	lag := newLaggingBroker(e.dstK)
	cfg := Config{Rules: mustRules(t, financeRule)}
	before := targetACLs(t, e)

	apply := func(t *testing.T, backup string) *Result {
		t.Helper()
		p, err := Plan(testCtx(t), e.src, e.dst, cfg)
		if err != nil {
			t.Fatal(err)
		}
		// The broker that answers the first read after the creations lags behind them.
		lag.armOnKey(kmsg.CreateACLs, targetACLs(t, e), 3)
		if err := Apply(testCtx(t), e.dst, p, ApplyConfig{Backup: backup, ReadTimeout: 20 * time.Second}); err != nil {
			t.Errorf("apply over a lagging broker: %v", err) // the steps after it still judge the rollback
		}
		if n, _ := lag.stale(); n == 0 {
			t.Fatal("no stale answer: the fault was not staged")
		}
		if errs := itemErrors(p); len(errs) > 0 {
			t.Errorf("apply reports failures over ACLs the brokers accepted:\n%s", strings.Join(errs, "\n"))
		}
		return p
	}

	backup1 := filepath.Join(t.TempDir(), "acls-1.json")
	p := apply(t, backup1)
	after := targetACLs(t, e)
	b, err := ReadBackup(backup1)
	if err != nil {
		t.Fatal(err)
	}
	created := len(after) - len(before)
	if acts := itemActions(p); len(acts) != created || len(b.CreatedACLs) != created || created == 0 {
		t.Errorf("apply: %d ACLs created on the target, %d reported created (%v), %d in the backup", created, len(acts), acts, len(b.CreatedACLs))
	}

	// Rollback: the lagging broker answers the first read with the ACLs from before the apply.
	lag.arm(before, 3)
	res, err := Rollback(testCtx(t), e.dst, backup1, RollbackConfig{TargetAlias: "target", ReadTimeout: 20 * time.Second})
	if err != nil {
		t.Errorf("rollback over a lagging broker: %v", err)
	}
	if n, _ := lag.stale(); n == 0 {
		t.Fatal("no stale answer: the fault was not staged")
	}
	if got := targetACLs(t, e); !reflect.DeepEqual(strs(got...), strs(before...)) {
		t.Errorf("target after rollback:\n%s\nwant what it held before the apply:\n%s", strings.Join(strs(got...), "\n"), strings.Join(strs(before...), "\n"))
	}
	for _, r := range res.ACLs {
		if r.Action != "deleted" || r.Err != "" {
			t.Errorf("rollback of %s: action %q, error %q; want deleted", r.ACL, r.Action, r.Err)
		}
	}

	// Apply again: the same ACLs are created again, reported and recorded.
	backup2 := filepath.Join(t.TempDir(), "acls-2.json")
	p = apply(t, backup2)
	b2, err := ReadBackup(backup2)
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(strs(b2.CreatedACLs...), strs(b.CreatedACLs...)) || len(itemActions(p)) != created {
		t.Errorf("second apply: backup %v, actions %v; want the first apply's %v", strs(b2.CreatedACLs...), itemActions(p), strs(b.CreatedACLs...))
	}
	if got := targetACLs(t, e); !reflect.DeepEqual(strs(got...), strs(after...)) {
		t.Errorf("target after the second apply:\n%s\nwant\n%s", strings.Join(strs(got...), "\n"), strings.Join(strs(after...), "\n"))
	}
}

// TestACLsLaggingBrokerPreRead: what a lagging broker does not show yet decides nothing. An
// ACL an operator created after the plan, which the lagging broker does not show, is not
// created again nor recorded as the apply's (a rollback would delete it); a target-only ACL it
// does not show is still found by --delete-extra.
func TestACLsLaggingBrokerPreRead(t *testing.T) {
	t.Run("existing ACL not recorded", func(t *testing.T) {
		e := newEnv(t, 3)
		addACLs(t, e.src, sourceACLs()...)
		lag := newLaggingBroker(e.dstK)
		p, err := Plan(testCtx(t), e.src, e.dst, Config{Rules: mustRules(t, financeRule)})
		if err != nil {
			t.Fatal(err)
		}
		before := targetACLs(t, e)
		operators := acl("ALLOW", "User:bob", "ALL", "TOPIC", "LITERAL", "payments")
		addACLs(t, e.dst, operators)
		lag.arm(before, 3)
		backup := filepath.Join(t.TempDir(), "acls.json")
		if err := Apply(testCtx(t), e.dst, p, ApplyConfig{Backup: backup, ReadTimeout: 20 * time.Second}); err != nil {
			t.Fatal(err)
		}
		if n, _ := lag.stale(); n == 0 {
			t.Fatal("no stale answer: the fault was not staged")
		}
		b, err := ReadBackup(backup)
		if err != nil {
			t.Fatal(err)
		}
		for _, a := range b.CreatedACLs {
			if a == operators {
				t.Errorf("the backup records %s as created by the apply; an operator created it before", a)
			}
		}
		if _, err := Rollback(testCtx(t), e.dst, backup, RollbackConfig{TargetAlias: "target"}); err != nil {
			t.Fatal(err)
		}
		if got := targetACLs(t, e); !reflect.DeepEqual(strs(got...), strs(operators)) {
			t.Errorf("target after rollback: %v, want the operator's ACL alone", strs(got...))
		}
	})
	t.Run("delete-extra sees a target-only ACL", func(t *testing.T) {
		e := newEnv(t, 3)
		lag := newLaggingBroker(e.dstK)
		extra := acl("ALLOW", "User:old-app", "READ", "TOPIC", "LITERAL", "legacy")
		addACLs(t, e.dst, extra)
		lag.arm(nil, 3)
		p, err := Plan(testCtx(t), e.src, e.dst, Config{DeleteExtra: true, ReadTimeout: 20 * time.Second})
		if err != nil {
			t.Fatal(err)
		}
		if n, _ := lag.stale(); n == 0 {
			t.Fatal("no stale answer: the fault was not staged")
		}
		if n := p.Counts()[TargetOnly]; n != 1 {
			t.Fatalf("plan: %d target-only ACLs, want 1 (%s): %+v", n, extra, p.ACLs)
		}
		if err := Apply(testCtx(t), e.dst, p, ApplyConfig{Backup: filepath.Join(t.TempDir(), "b.json")}); err != nil {
			t.Fatal(err)
		}
		if got := targetACLs(t, e); len(got) != 0 {
			t.Errorf("target after apply --delete-extra: %v, want none", strs(got...))
		}
	})
}

// TestACLsLaggingBrokerBound: a broker that never catches up stops the tools at the bound,
// naming it: before the writes with nothing written and no backup; after them with the backup
// complete and each ACL the broker does not show named.
func TestACLsLaggingBrokerBound(t *testing.T) {
	e := newEnv(t, 3)
	addACLs(t, e.src, sourceACLs()...)
	lag := newLaggingBroker(e.dstK)
	p, err := Plan(testCtx(t), e.src, e.dst, Config{})
	if err != nil {
		t.Fatal(err)
	}
	// Before the writes: a broker behind someone else's write never catches up.
	before := targetACLs(t, e)
	addACLs(t, e.dst, acl("ALLOW", "User:carol", "READ", "TOPIC", "LITERAL", "orders"))
	lag.arm(before, -1)
	backup := filepath.Join(t.TempDir(), "acls.json")
	err = Apply(testCtx(t), e.dst, p, ApplyConfig{Backup: backup, ReadTimeout: time.Second})
	_, node := lag.stale()
	if err == nil || !strings.Contains(err.Error(), "did not give the same ACLs") || !strings.Contains(err.Error(), "not by broker "+itoa(node)) ||
		!strings.Contains(err.Error(), "Nothing was written") {
		t.Fatalf("apply with broker %d stale for ever: %v; want the brokers named and nothing written", node, err)
	}
	if _, serr := os.Stat(backup); !errors.Is(serr, os.ErrNotExist) || p.Applied {
		t.Errorf("a backup was written (%v) or the plan says applied (%v) though nothing was", serr, p.Applied)
	}

	// After the writes: the broker never shows them.
	lag.armOnKey(kmsg.CreateACLs, targetACLs(t, e), -1)
	err = Apply(testCtx(t), e.dst, p, ApplyConfig{Backup: backup, ReadTimeout: time.Second})
	_, node = lag.stale()
	if err == nil || !strings.Contains(err.Error(), "still did not") || !strings.Contains(err.Error(), "broker "+itoa(node)) {
		t.Fatalf("apply, broker %d never showing the creations: %v; want each ACL with the broker named", node, err)
	}
	b, rerr := ReadBackup(backup)
	if rerr != nil {
		t.Fatalf("the backup is not complete: %v", rerr)
	}
	if len(b.CreatedACLs) == 0 || len(itemErrors(p)) != len(b.CreatedACLs) {
		t.Errorf("backup lists %d creations, %d items report an error: want every creation named", len(b.CreatedACLs), len(itemErrors(p)))
	}
}

func itoa(n int32) string { return strconv.Itoa(int(n)) }
