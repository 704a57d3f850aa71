package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/kmigrate/kmigrate/integration/cluster"
)

func main() { os.Exit(run(os.Args[1:])) }

func run(args []string) int {
	fs := flag.NewFlagSet("kcluster", flag.ContinueOnError)
	dir := fs.String("dir", "", "run directory for state, data and logs (required)")
	brokers := fs.Int("brokers", 1, "brokers per cluster (1 or 3)")
	timeout := fs.Duration("timeout", 5*time.Minute, "deadline for all clusters to be ready")
	acls := fs.Bool("acls", false, "turn ACLs on: each broker's authorizer (2.3.0: the ZooKeeper one, 3.7.1: StandardAuthorizer), PLAINTEXT clients (User:ANONYMOUS) super users")
	fs.Usage = func() {
		fmt.Fprintf(fs.Output(), `usage: kcluster -dir RUNDIR [-brokers N] [-acls] VERSION...

Starts Kafka clusters (2.3.0 on ZooKeeper, 3.7.1 on KRaft, or kfake) and keeps them until
SIGTERM/SIGINT. Normally run by scripts/cluster.sh up; stop it with scripts/cluster.sh down.

Example:
  kcluster -dir /tmp/kmigrate-clusters 2.3.0 3.7.1

Exit codes: 0 stopped by a signal, 1 a cluster failed to start, 2 bad arguments.

Flags:
`)
		fs.PrintDefaults()
	}
	if err := fs.Parse(args); err != nil {
		return 2
	}
	if *dir == "" || fs.NArg() == 0 {
		fs.Usage()
		return 2
	}
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGINT, syscall.SIGTERM)
	defer stop()
	if err := serve(ctx, *dir, *brokers, *acls, *timeout, fs.Args()); err != nil {
		fmt.Fprintf(os.Stderr, "kcluster: %v\n", err)
		return 1
	}
	return 0
}

func serve(ctx context.Context, dir string, brokers int, acls bool, timeout time.Duration, versions []string) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	defer cluster.CloseAll()
	startCtx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	var lines []string
	for _, v := range versions {
		name := "kafka-" + v
		start := time.Now()
		spec := cluster.Spec{Version: v, Brokers: brokers, Name: name, Dir: filepath.Join(dir, name)}
		if acls {
			spec.Config = authorizer(v)
		}
		c, err := cluster.Start(startCtx, spec)
		if err != nil {
			return fmt.Errorf("start %s: %w", name, err)
		}
		fmt.Printf("kcluster: %s ready in %s at %s\n", name, time.Since(start).Round(time.Millisecond), strings.Join(c.Bootstrap(), ","))
		lines = append(lines, stateLine(c, filepath.Join(dir, name)))
	}
	state := filepath.Join(dir, "clusters")
	ready := filepath.Join(dir, "ready")
	if err := os.WriteFile(state, []byte(strings.Join(lines, "\n")+"\n"), 0o644); err != nil {
		return err
	}
	if err := os.WriteFile(ready, []byte(strconv.Itoa(os.Getpid())+"\n"), 0o644); err != nil {
		return err
	}
	defer os.Remove(state)
	defer os.Remove(ready)
	<-ctx.Done()
	fmt.Println("kcluster: signal received, stopping every cluster")
	return nil
}

// stateLine is "name version brokers bootstrap dir pids" with comma-separated lists ("-" for
// none), for cluster.sh to read with `read`.
func stateLine(c cluster.Cluster, dir string) string {
	pids := "-"
	if p, ok := c.(interface{ Pids() []int }); ok {
		var s []string
		for _, pid := range p.Pids() {
			s = append(s, strconv.Itoa(pid))
		}
		if len(s) > 0 {
			pids = strings.Join(s, ",")
		}
	}
	return fmt.Sprintf("%s %s %d %s %s %s", c.Name(), c.Version(), c.Brokers(), strings.Join(c.Bootstrap(), ","), dir, pids)
}

// authorizer are the broker properties that turn ACLs on for version v: the ZooKeeper-based
// authorizer on 2.3.0, the StandardAuthorizer on KRaft, and PLAINTEXT clients (User:ANONYMOUS,
// the brokers themselves included) super users, so that every tool keeps working while ACLs are
// written and read.
func authorizer(v string) map[string]string {
	class := "org.apache.kafka.metadata.authorizer.StandardAuthorizer"
	if v == cluster.V230 {
		class = "kafka.security.auth.SimpleAclAuthorizer"
	}
	return map[string]string{"authorizer.class.name": class, "super.users": "User:ANONYMOUS"}
}
