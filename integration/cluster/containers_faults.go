package cluster

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/moby/moby/api/types/network"
	"github.com/moby/moby/client"
	"github.com/testcontainers/testcontainers-go"
)

// Pauser is implemented by the jvm and testcontainers providers: a broker that hangs (its
// processes frozen, its connections open and silent) until it is thawed. The jvm provider
// sends SIGSTOP and SIGCONT to the broker's process group, testcontainers pauses the container.
// A frozen broker neither answers clients nor fetches as a follower; the kernel keeps its
// sockets, so nothing sees it die. Close kills frozen brokers as well.
type Pauser interface {
	// PauseBroker freezes every process of broker i: clients' requests to it time out, it
	// stops replicating, its ZooKeeper session or KRaft lease lapses.
	PauseBroker(ctx context.Context, i int) error
	// UnpauseBroker thaws it (nothing when it is not frozen or not running).
	UnpauseBroker(ctx context.Context, i int) error
}

// Faulter is what the testcontainers provider adds to Cluster for fault tests: a broker that
// hangs (Pauser, with docker pause) and a broker cut off the network (its connections fail at
// once), each undone by its pair. Other providers do not implement it; a test asserts the
// interface and skips without it.
type Faulter interface {
	Pauser
	// DisconnectBroker takes broker i off the cluster's network: the other brokers, ZooKeeper
	// and the clients (through its published port) lose it.
	DisconnectBroker(ctx context.Context, i int) error
	// ReconnectBroker puts it back on the network under its old name.
	ReconnectBroker(ctx context.Context, i int) error
}

var _ Faulter = (*tcCluster)(nil)

func (c *tcCluster) docker(ctx context.Context, i int, what string, f func(*testcontainers.DockerClient, string) error) error {
	if err := checkIndex(c, i); err != nil {
		return err
	}
	cli, err := testcontainers.NewDockerClientWithOpts(ctx)
	if err != nil {
		return fmt.Errorf("cluster %s: %s broker %d: %w", c.spec.Name, what, i, err)
	}
	defer cli.Close()
	if err := f(cli, c.nodes[i].ctr.GetContainerID()); err != nil {
		return fmt.Errorf("cluster %s: %s broker %d: %w", c.spec.Name, what, i, err)
	}
	return nil
}

func (c *tcCluster) PauseBroker(ctx context.Context, i int) error {
	return c.docker(ctx, i, "pause", func(cli *testcontainers.DockerClient, id string) error {
		return retryFreeze(ctx, freezeAttempts, freezeWait, func() error {
			_, err := cli.ContainerPause(ctx, id, client.ContainerPauseOptions{})
			return err
		})
	})
}

// How often, and how far apart at first, PauseBroker asks Docker again after the cgroup
// freezer gave up. The waits double: 0.25+0.5+1+2 s in all before the last attempt.
const (
	freezeAttempts = 5
	freezeWait     = 250 * time.Millisecond
)

// retryFreeze runs pause until it succeeds, fails for another reason, or has failed attempts
// times because the kernel's cgroup freezer did not freeze every process in time. runc gives
// the freezer a short while (on cgroup v1 about a thousand short polls, on v2 a timeout), and a
// broker whose threads sit in uninterruptible disk waits on a busy machine can outlast it: runc
// then thaws the container, leaves it running and reports "unable to freeze" (v1) or "timeout
// of ... reached" (v2). runc's maintainers leave the retry to the caller; a later attempt
// usually finds the threads runnable. Any other error, or the context's end, stops at once.
func retryFreeze(ctx context.Context, attempts int, wait time.Duration, pause func() error) error {
	var err error
	for n := 1; ; n++ {
		if err = pause(); err == nil || !freezeFailed(err) {
			return err
		}
		if n == attempts {
			return fmt.Errorf("the cgroup freezer failed %d times, %s apart at first: %w", n, wait, err)
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("%w (after %d attempts the freezer failed: %v)", ctx.Err(), n, err)
		case <-time.After(wait << (n - 1)):
		}
	}
}

// freezeFailed reports whether a pause error is runc's freezer giving up, the one pause
// failure that a later attempt can cure.
func freezeFailed(err error) bool {
	s := err.Error()
	return strings.Contains(s, "unable to freeze") || (strings.Contains(s, "pause failed") && strings.Contains(s, "timeout of"))
}

func (c *tcCluster) UnpauseBroker(ctx context.Context, i int) error {
	return c.docker(ctx, i, "unpause", func(cli *testcontainers.DockerClient, id string) error {
		_, err := cli.ContainerUnpause(ctx, id, client.ContainerUnpauseOptions{})
		return err
	})
}

func (c *tcCluster) DisconnectBroker(ctx context.Context, i int) error {
	return c.docker(ctx, i, "disconnect", func(cli *testcontainers.DockerClient, id string) error {
		_, err := cli.NetworkDisconnect(ctx, c.net.ID, client.NetworkDisconnectOptions{Container: id, Force: true})
		return err
	})
}

func (c *tcCluster) ReconnectBroker(ctx context.Context, i int) error {
	if err := c.docker(ctx, i, "reconnect", func(cli *testcontainers.DockerClient, id string) error {
		_, err := cli.NetworkConnect(ctx, c.net.ID, client.NetworkConnectOptions{Container: id,
			EndpointConfig: &network.EndpointSettings{Aliases: []string{fmt.Sprintf("kafka-%d", c.nodes[i].id)}}})
		return err
	}); err != nil {
		return err
	}
	return c.waitReady(ctx)
}
