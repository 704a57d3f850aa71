package logread

import (
	"context"
	"errors"
	"fmt"
	"net"
	"syscall"
	"testing"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
)

func TestRetriable(t *testing.T) {
	dial := &net.OpError{Op: "dial", Net: "tcp", Err: fmt.Errorf("connect: %w", syscall.ECONNREFUSED)}
	shards := func(errs ...error) error {
		se := &kadm.ShardErrors{Name: "ListOffsets"}
		for _, e := range errs {
			se.Errs = append(se.Errs, kadm.ShardError{Err: e})
		}
		return se
	}
	for _, c := range []struct {
		name string
		err  error
		want bool
	}{
		{"nil", nil, false},
		{"a refused dial (a broker that went away)", dial, true},
		{"a refused dial, wrapped", fmt.Errorf("unable to dial: %w", dial), true},
		{"a leader moving", kerr.NotLeaderForPartition, true},
		{"a coordinator loading", kerr.CoordinatorLoadInProgress, true},
		{"authorization", kerr.TopicAuthorizationFailed, false},
		{"every shard retriable", shards(dial, kerr.NotLeaderForPartition), true},
		{"one shard refused authorization", shards(dial, kerr.TopicAuthorizationFailed), false},
		{"the context's end", context.Canceled, false},
		{"the context's deadline", fmt.Errorf("list: %w", context.DeadlineExceeded), false},
		{"anything else", errors.New("boom"), false},
	} {
		if got := Retriable(c.err); got != c.want {
			t.Errorf("%s: Retriable(%v) = %v, want %v", c.name, c.err, got, c.want)
		}
	}
}

func TestDenied(t *testing.T) {
	for _, c := range []struct {
		name string
		err  error
		want bool
	}{
		{"nil", nil, false},
		{"topic", kerr.TopicAuthorizationFailed, true},
		{"group, wrapped", fmt.Errorf("join: %w", kerr.GroupAuthorizationFailed), true},
		{"cluster, as kadm's AuthError", &kadm.AuthError{Err: kerr.ClusterAuthorizationFailed}, true},
		{"transactional id", kerr.TransactionalIDAuthorizationFailed, true},
		{"a shard refused (kadm ShardErrors unwrap to theirs)", &kadm.ShardErrors{Name: "DescribeGroups", Errs: []kadm.ShardError{{Err: kerr.GroupAuthorizationFailed}}}, true},
		{"authentication is not authorization", kerr.SaslAuthenticationFailed, false},
		{"a leader moving", kerr.NotLeaderForPartition, false},
	} {
		if got := Denied(c.err); got != c.want {
			t.Errorf("%s: Denied(%v) = %v, want %v", c.name, c.err, got, c.want)
		}
	}
}
