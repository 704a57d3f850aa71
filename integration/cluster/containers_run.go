package cluster

import (
	"context"
	"fmt"
	"os"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/moby/moby/client"
	"github.com/testcontainers/testcontainers-go"
	tclog "github.com/testcontainers/testcontainers-go/log"
)

// ownerLabel marks every container and network this package starts with "<pid>:<start>" of
// the process that started it, the same identity the JVM pid registry keeps: Reap removes
// the containers of owners that have ended, as it kills their JVMs. testcontainers' own reaper
// (Ryuk) would do that too, but it is an image pulled from a registry, which the machines this
// suite runs on cannot reach; it is off unless TESTCONTAINERS_RYUK_DISABLED says otherwise.
const ownerLabel = "org.kmigrate.owner"

var tcSetup sync.Once

// setupTestcontainers runs before this process's first container: Ryuk off (see ownerLabel),
// testcontainers' own progress lines off (every container's console goes to its log file).
// It must run before testcontainers reads its configuration, which it does once, at its first
// client: reapContainers calls it too.
func setupTestcontainers() {
	tcSetup.Do(func() {
		if _, set := os.LookupEnv("TESTCONTAINERS_RYUK_DISABLED"); !set {
			_ = os.Setenv("TESTCONTAINERS_RYUK_DISABLED", "true")
		}
		tclog.SetDefault(tclog.NewNoopLogger())
	})
}

func ownerValue() string {
	pid := os.Getpid()
	return strconv.Itoa(pid) + ":" + procStart(pid)
}

func withOwner() testcontainers.CustomizeRequestOption {
	return testcontainers.WithLabels(map[string]string{ownerLabel: ownerValue()})
}

// reapContainers removes every container labelled by an owner process that has ended, and
// returns a line per container. A machine without a Docker engine returns nothing at once.
func reapContainers() []string {
	if dockerAvailable() != nil {
		return nil
	}
	setupTestcontainers()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	cli, err := testcontainers.NewDockerClientWithOpts(ctx)
	if err != nil {
		return nil
	}
	defer cli.Close()
	list, err := cli.ContainerList(ctx, client.ContainerListOptions{All: true, Filters: client.Filters{}.Add("label", ownerLabel)})
	if err != nil {
		return nil
	}
	var reaped []string
	for _, c := range list.Items {
		if pid, ended := ownerEnded(c.Labels); ended {
			if _, err := cli.ContainerRemove(ctx, c.ID, client.ContainerRemoveOptions{Force: true, RemoveVolumes: true}); err == nil {
				reaped = append(reaped, fmt.Sprintf("container %.12s (%s) of ended process %s", c.ID, c.Image, pid))
			}
		}
	}
	nets, err := cli.NetworkList(ctx, client.NetworkListOptions{Filters: client.Filters{}.Add("label", ownerLabel)})
	if err != nil {
		return reaped
	}
	for _, n := range nets.Items {
		if pid, ended := ownerEnded(n.Labels); ended {
			if _, err := cli.NetworkRemove(ctx, n.ID, client.NetworkRemoveOptions{}); err == nil {
				reaped = append(reaped, fmt.Sprintf("network %s of ended process %s", n.Name, pid))
			}
		}
	}
	return reaped
}

// ownerEnded reads ownerLabel and reports whether that process has ended.
func ownerEnded(labels map[string]string) (pid string, ended bool) {
	pid, start, _ := strings.Cut(labels[ownerLabel], ":")
	n, _ := strconv.Atoi(pid)
	return pid, !(n > 0 && alive(n, start))
}

// killContainer sends SIGKILL to the container's processes, as a crash would (docker stop with
// no grace period sends SIGTERM first, which a JVM answers with its shutdown hooks), and waits
// until the engine reports it stopped.
func killContainer(ctx context.Context, ctr testcontainers.Container) error {
	cli, err := testcontainers.NewDockerClientWithOpts(ctx)
	if err != nil {
		return err
	}
	defer cli.Close()
	if _, err := cli.ContainerKill(ctx, ctr.GetContainerID(), client.ContainerKillOptions{Signal: "KILL"}); err != nil {
		return err
	}
	for {
		st, err := ctr.State(ctx)
		if err != nil {
			return err
		}
		if !st.Running {
			return nil
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(pollEvery):
		}
	}
}
