package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"path/filepath"
	"slices"
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
	acls := fs.Bool("acls", false, "turn ACLs on: each broker's authorizer (2.3.0: the ZooKeeper one, 3.7.1 and 4.3.1: StandardAuthorizer), PLAINTEXT clients (User:ANONYMOUS) super users")
	secure := fs.Bool("secure", false, "production-shaped security: 2.3.0 SASL_PLAINTEXT SCRAM-SHA-256, 3.7.1 and 4.3.1 SASL_SSL SCRAM-SHA-512 with a CA of the bed's own, the authorizer on, user admin the only super user; writes admin-<version>.properties, mm2.properties and env-secure in RUNDIR")
	fs.Usage = func() {
		fmt.Fprintf(fs.Output(), `usage: kcluster -dir RUNDIR [-brokers N] [-acls | -secure] VERSION...

Starts Kafka clusters (2.3.0 on ZooKeeper, 3.7.1 and 4.3.1 on KRaft, or kfake) and keeps them
until SIGTERM/SIGINT. Normally run by scripts/cluster.sh up; stop it with scripts/cluster.sh
down. With -secure (jvm versions only) it writes, in RUNDIR, a Kafka client properties file
for each cluster's admin (admin-2.3.0.properties, admin-3.7.1.properties, ...: --command-config
of Kafka's CLI tools), mm2.properties for the flow from the oldest version to the newest (e.g.
2.3.0->3.7.1, 2.3.0->4.3.1) as the admin of each (kmigrate's --mm2-config, MirrorMaker 2), and
env-secure exporting KMIGRATE_ADMIN_CONFIG_<version with underscores> and
KMIGRATE_MM2_CONFIG. They hold passwords: mode 0600.

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
	if *acls && *secure {
		fmt.Fprintln(os.Stderr, "kcluster: -acls and -secure: give one (-secure turns the authorizer on with the admin as the only super user)")
		return 2
	}
	if *secure && slices.Contains(fs.Args(), cluster.Kfake) {
		fmt.Fprintln(os.Stderr, "kcluster: -secure runs 2.3.0, 3.7.1 and 4.3.1 only, not kfake")
		return 2
	}
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGINT, syscall.SIGTERM)
	defer stop()
	if err := serve(ctx, *dir, *brokers, mode{acls: *acls, secure: *secure}, *timeout, fs.Args()); err != nil {
		fmt.Fprintf(os.Stderr, "kcluster: %v\n", err)
		return 1
	}
	return 0
}

// mode is how the clusters are secured: -acls or -secure (or neither).
type mode struct{ acls, secure bool }

func serve(ctx context.Context, dir string, brokers int, md mode, timeout time.Duration, versions []string) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	defer cluster.CloseAll()
	startCtx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	var lines []string
	started := map[string]cluster.Cluster{}
	for _, v := range versions {
		name := "kafka-" + v
		start := time.Now()
		spec := cluster.Spec{Version: v, Brokers: brokers, Name: name, Dir: filepath.Join(dir, name), Secure: md.secure}
		if md.acls {
			spec.Config = authorizer(v)
		}
		c, err := cluster.Start(startCtx, spec)
		if err != nil {
			return fmt.Errorf("start %s: %w", name, err)
		}
		fmt.Printf("kcluster: %s ready in %s at %s\n", name, time.Since(start).Round(time.Millisecond), strings.Join(c.Bootstrap(), ","))
		lines = append(lines, stateLine(c, filepath.Join(dir, name)))
		started[v] = c
	}
	if md.secure {
		if err := writeSecure(dir, started); err != nil {
			return err
		}
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

// writeSecure writes the admin client properties of each secure cluster, the mm2.properties
// of the flow from the oldest version running to the newest when two or more run, and
// env-secure naming them (see the usage).
func writeSecure(dir string, started map[string]cluster.Cluster) error {
	var env []string
	var running []cluster.Cluster
	for _, v := range []string{cluster.V230, cluster.V371, cluster.V431} {
		c, ok := started[v]
		if !ok {
			continue
		}
		running = append(running, c)
		sec, ok := cluster.SecurityOf(c)
		if !ok {
			return fmt.Errorf("cluster %s is not secure", c.Name())
		}
		path := filepath.Join(dir, "admin-"+v+".properties")
		if err := sec.WriteClientProperties(path, sec.Admin); err != nil {
			return err
		}
		env = append(env, fmt.Sprintf("export KMIGRATE_ADMIN_CONFIG_%s=%s", strings.ReplaceAll(v, ".", "_"), path))
	}
	if len(running) >= 2 {
		src, dst := running[0], running[len(running)-1]
		path := filepath.Join(dir, "mm2.properties")
		text := cluster.MM2Properties(cluster.Endpoint("source", src, cluster.User{}), cluster.Endpoint("target", dst, cluster.User{}))
		if err := os.WriteFile(path, []byte(text), 0o600); err != nil {
			return err
		}
		env = append(env, "export KMIGRATE_MM2_CONFIG="+path)
	}
	return os.WriteFile(filepath.Join(dir, "env-secure"), []byte(strings.Join(env, "\n")+"\n"), 0o644)
}
