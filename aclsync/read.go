package aclsync

import (
	"context"
	"fmt"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/kmigrate/kmigrate/internal/agree"
)

// Every read that decides or verifies an ACL write asks every broker of the cluster's metadata
// and waits until they agree (internal/agree): a broker answers DescribeAcls from its own copy
// of the ACLs, which follows the controller's (KRaft's metadata log, ZooKeeper's change
// notifications) a little behind. A single broker's answer can be the set before the last
// write, so it would make an apply create again an ACL that exists (and record it as its own),
// a rollback leave an ACL it created, and a verification call a write that took effect failed.

// readACLs reads every ACL of the cluster connected to as alias, from every broker, and
// returns them once every broker gives the same set; brokers that still differ when the wait
// (timeout, 0: agree.DefaultTimeout) ends are an error naming them and the ACLs they differ on.
func readACLs(ctx context.Context, cl *kgo.Client, alias string, timeout time.Duration) (map[ACL]bool, error) {
	ans, err := agree.Sets(ctx, cl, agree.Config{Timeout: timeout}, brokerACLs(alias), nil)
	if err != nil {
		return nil, fmt.Errorf("%s cluster: describe ACLs: %w", alias, err)
	}
	set, ok := ans.Agreed()
	if !ok {
		return nil, disagreeErr(alias, ans)
	}
	return set, nil
}

// readACLWrites reads the ACLs of the cluster connected to as alias from every broker after
// writes: it waits until every broker shows each ACL of created and none of deleted (or the
// wait ends) and returns the last round of answers, which checkACLWrites and checkRollback
// judge per ACL.
func readACLWrites(ctx context.Context, cl *kgo.Client, alias string, timeout time.Duration, created, deleted []ACL) (agree.Answers[ACL], error) {
	want := func(s map[ACL]bool) bool {
		for _, a := range created {
			if !s[a] {
				return false
			}
		}
		for _, a := range deleted {
			if s[a] {
				return false
			}
		}
		return true
	}
	ans, err := agree.Sets(ctx, cl, agree.Config{Timeout: timeout}, brokerACLs(alias), want)
	if err != nil {
		return ans, fmt.Errorf("%s cluster: describe ACLs: %w", alias, err)
	}
	return ans, nil
}

// brokerACLs reads every ACL one broker shows.
func brokerACLs(alias string) func(context.Context, int32, kmsg.Requestor) ([]ACL, error) {
	return func(ctx context.Context, _ int32, b kmsg.Requestor) ([]ACL, error) {
		return describeAllACLs(ctx, b, alias)
	}
}

// notShown says why the write of a (a creation: present true; a deletion: false) is not seen
// on the cluster in the answers ans: no broker shows it, or the brokers that do not yet, named;
// "" when every broker shows it.
func notShown(ans agree.Answers[ACL], a ACL, present bool, what string) string {
	with, without := ans.Showing(a)
	lagging, done := without, with
	if !present {
		lagging, done = with, without
	}
	switch {
	case len(lagging) == 0:
		return ""
	case len(done) == 0 && present:
		return fmt.Sprintf("the broker accepted the %s but no broker shows the ACL within %s (%s asked)", what, ans.Waited.Round(time.Millisecond), agree.NodeList(lagging))
	case len(done) == 0:
		return fmt.Sprintf("the broker accepted the %s but every broker still shows the ACL after %s (%s asked)", what, ans.Waited.Round(time.Millisecond), agree.NodeList(lagging))
	}
	return fmt.Sprintf("the broker accepted the %s; %s show it, but %s still did not after %s (a broker behind the cluster's metadata: check its health, then run the command again, which finds what is done)",
		what, agree.NodeList(done), agree.NodeList(lagging), ans.Waited.Round(time.Millisecond))
}

// disagreeErr is the error of a read whose brokers still differed when the wait ended.
func disagreeErr(alias string, ans agree.Answers[ACL]) error {
	return fmt.Errorf("%s cluster: describe ACLs: the brokers did not give the same ACLs within %s (%d rounds; a broker that has not applied a recent ACL change answers with the old set): %s; wait for the brokers to catch up (or check the lagging one's health), or raise --read-timeout",
		alias, ans.Waited.Round(time.Millisecond), ans.Rounds, ans.Disagreement(func(a ACL) string { return a.String() }))
}

// accepted returns the ACLs of acls whose write the broker accepted (errs[i] nil).
func accepted(acls []ACL, errs []error) []ACL {
	var out []ACL
	for i, a := range acls {
		if errs[i] == nil {
			out = append(out, a)
		}
	}
	return out
}
