package cluster

import (
	"context"
	"embed"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"sync"
	"syscall"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/kmigrate/kmigrate/internal/netfault"
)

// Heaps are small on purpose: the test bed runs up to six JVMs on a 2-core, shared machine.
const (
	heapZK     = "128m"
	heapBroker = "384m"
	heapMM2    = "512m"
	heapTool   = "128m"
	stopGrace  = 60 * time.Second
)

// jvmCluster runs Kafka from the jars in the cache: 2.3.0 with one ZooKeeper 3.5.9 node,
// 3.7.1 on KRaft with every node both broker and controller. Node (broker) ids are index+1.
type jvmCluster struct {
	spec      Spec
	dir       string
	removeDir bool
	java      string
	lib       string

	zk     *proc
	zkPort int
	nodes  []*jvmNode
	sec    *secureState // nil unless Spec.Secure

	once     sync.Once
	closeErr error
}

type jvmNode struct {
	id       int32
	port     int
	ctrlPort int // KRaft controller listener
	dir      string
	proc     *proc
	// With Spec.Proxied: port is the direct (inter-broker) listener, clientPort the client
	// listener, which proxy forwards to and which the broker advertises at proxy's port.
	clientPort int
	proxy      *netfault.Proxy
}

func startJVM(ctx context.Context, s Spec) (_ Cluster, err error) {
	bin, err := java()
	if err != nil {
		return nil, err
	}
	lib, err := libDir(ctx, s.Version)
	if err != nil {
		return nil, err
	}
	dir, removeDir, err := clusterDir(s)
	if err != nil {
		return nil, err
	}
	c := &jvmCluster{spec: s, dir: dir, removeDir: removeDir, java: bin, lib: lib}
	track(c)
	defer func() {
		if err != nil {
			if tails := c.tails(20); tails != "" {
				err = fmt.Errorf("%w\n%s", err, tails)
			}
			c.Close()
		}
	}()
	if err := writeLogConfig(dir); err != nil {
		return nil, fmt.Errorf("cluster %s: %w", s.Name, err)
	}
	if err := c.newNodes(); err != nil {
		return nil, err
	}
	if s.Secure {
		if c.sec, err = newSecureState(dir, s); err != nil {
			return nil, err
		}
	}
	if s.Version == V230 {
		if err := c.startZooKeeper(ctx); err != nil {
			return nil, err
		}
		if c.sec != nil {
			if err := c.zkAddUser(ctx, c.sec.sec.Admin); err != nil {
				return nil, err
			}
		}
	}
	for _, n := range c.nodes {
		cfg := filepath.Join(n.dir, "server.properties")
		if err := os.WriteFile(cfg, props(c.serverProps(n)), 0o644); err != nil {
			return nil, fmt.Errorf("cluster %s: write %s: %w", s.Name, cfg, err)
		}
		n.proc = &proc{
			name:    fmt.Sprintf("%s/broker-%d", s.Name, n.id-1),
			logPath: filepath.Join(n.dir, "broker.log"),
			argv:    c.javaArgs(heapBroker, "kafka.Kafka", cfg),
		}
	}
	if isKRaft(s.Version) {
		if err := c.formatStorage(ctx); err != nil {
			return nil, err
		}
	}
	for _, n := range c.nodes {
		if err := n.proc.start(); err != nil {
			return nil, fmt.Errorf("cluster %s: %w", s.Name, err)
		}
	}
	if err := c.waitReady(ctx); err != nil {
		return nil, err
	}
	shareReady(c.java, c.lib, "kafka.Kafka")
	return c, nil
}

// newNodes draws the ports and creates the directory of every broker.
func (c *jvmCluster) newNodes() error {
	s := c.spec
	for i := range s.Brokers {
		n := &jvmNode{id: int32(i + 1), dir: filepath.Join(c.dir, fmt.Sprintf("broker-%d", i))}
		var err error
		if n.port, err = freePort(); err != nil {
			return err
		}
		if isKRaft(s.Version) {
			if n.ctrlPort, err = freePort(); err != nil {
				return err
			}
		}
		if err := os.MkdirAll(n.dir, 0o755); err != nil {
			return fmt.Errorf("cluster %s: %w", s.Name, err)
		}
		c.nodes = append(c.nodes, n)
		if s.Proxied {
			if err := c.newProxy(n); err != nil {
				return err
			}
		}
	}
	return nil
}

// clusterDir picks the cluster's directory (see Spec.Dir); the bool says Close removes it.
func clusterDir(s Spec) (string, bool, error) {
	if s.Dir != "" {
		if err := os.MkdirAll(s.Dir, 0o755); err != nil {
			return "", false, fmt.Errorf("cluster %s: create dir: %w", s.Name, err)
		}
		if ents, err := os.ReadDir(s.Dir); err == nil && len(ents) > 0 {
			return "", false, fmt.Errorf("cluster %s: dir %s is not empty: give an empty or new directory", s.Name, s.Dir)
		}
		return s.Dir, false, nil
	}
	if root := os.Getenv(EnvLogDir); root != "" {
		if err := os.MkdirAll(root, 0o755); err != nil {
			return "", false, fmt.Errorf("cluster %s: create %s=%s: %w", s.Name, EnvLogDir, root, err)
		}
		d, err := os.MkdirTemp(root, s.Name+"-")
		return d, false, err
	}
	d, err := os.MkdirTemp("", "kmigrate-"+s.Name+"-")
	return d, true, err
}

// javaArgs is the command line of one JVM on this cluster's runtime.
func (c *jvmCluster) javaArgs(heap, main string, args ...string) []string {
	return javaCommand(c.java, c.lib, c.dir, heap, c.spec.JVMFlags, main, args...)
}

// javaCommand builds a JVM command line; extra flags come after ours, so they win (HotSpot
// takes the last of conflicting flags).
func javaCommand(bin, lib, dir, heap string, extra []string, main string, args ...string) []string {
	argv := []string{bin,
		"-Xms32m", "-Xmx" + heap,
		// Serial GC and C1 only: less CPU and a faster start on a small machine; the brokers'
		// behaviour under test does not depend on either.
		"-XX:+UseSerialGC", "-XX:TieredStopAtLevel=1", "-XX:-UsePerfData",
		"-Djava.awt.headless=true", "-Djava.net.preferIPv4Stack=true",
		// log4j 1 (reload4j) reads the first, log4j2 (Kafka 4) the second; each ignores the
		// other's.
		"-Dlog4j.configuration=file:" + filepath.Join(dir, "log4j.properties"),
		"-Dlog4j2.configurationFile=" + filepath.Join(dir, "log4j2.properties"),
		"-Dkafka.logs.dir=" + filepath.Join(dir, "logs"),
	}
	argv = append(argv, shareFlags(bin, lib, main)...)
	argv = append(argv, extra...)
	argv = append(argv, "-cp", filepath.Join(lib, "*"), main)
	return append(argv, args...)
}

// logConfig is the console logging of every JVM, for log4j 1 and for log4j2 (Kafka 4 logs
// through log4j2 and ignores a log4j 1 configuration): every log line goes to the console,
// which proc appends to the process's log file; request and state-change chatter is kept at
// WARN. scripts/images.sh copies the same files into the Kafka images.
//
//go:embed log4j/log4j.properties log4j/log4j2.properties
var logConfig embed.FS

// writeLogConfig writes log4j.properties and log4j2.properties into dir, the files javaCommand
// names: every JVM logs to its console at INFO whichever log4j its version has.
func writeLogConfig(dir string) error {
	for _, name := range []string{"log4j.properties", "log4j2.properties"} {
		data, err := logConfig.ReadFile("log4j/" + name)
		if err != nil {
			return fmt.Errorf("read %s: %w", name, err)
		}
		if err := os.WriteFile(filepath.Join(dir, name), data, 0o644); err != nil {
			return fmt.Errorf("write %s: %w", name, err)
		}
	}
	return nil
}

const zkMain = "org.apache.zookeeper.server.quorum.QuorumPeerMain"

func (c *jvmCluster) startZooKeeper(ctx context.Context) error {
	port, err := freePort()
	if err != nil {
		return err
	}
	c.zkPort = port
	zdir := filepath.Join(c.dir, "zookeeper")
	if err := os.MkdirAll(filepath.Join(zdir, "data"), 0o755); err != nil {
		return fmt.Errorf("cluster %s: %w", c.spec.Name, err)
	}
	cfg := filepath.Join(zdir, "zoo.cfg")
	zoo := map[string]string{
		"tickTime":               "2000",
		"dataDir":                filepath.Join(zdir, "data"),
		"clientPort":             strconv.Itoa(port),
		"clientPortAddress":      "127.0.0.1",
		"maxClientCnxns":         "0",
		"admin.enableServer":     "false", // else its admin server takes port 8080
		"4lw.commands.whitelist": "ruok,srvr,stat",
	}
	if err := os.WriteFile(cfg, props(zoo), 0o644); err != nil {
		return fmt.Errorf("cluster %s: write zoo.cfg: %w", c.spec.Name, err)
	}
	c.zk = &proc{
		name:    c.spec.Name + "/zookeeper",
		logPath: filepath.Join(zdir, "zookeeper.log"),
		argv:    c.javaArgs(heapZK, zkMain, cfg),
	}
	if err := c.zk.start(); err != nil {
		return fmt.Errorf("cluster %s: %w", c.spec.Name, err)
	}
	addr := net.JoinHostPort("127.0.0.1", strconv.Itoa(port))
	if err := poll(ctx, fmt.Sprintf("cluster %s: ZooKeeper %s answering ruok", c.spec.Name, addr), []*proc{c.zk}, func(ctx context.Context) error {
		return zkRuok(ctx, addr)
	}); err != nil {
		return err
	}
	shareReady(c.java, c.lib, zkMain)
	return nil
}

// zkRuok asks ZooKeeper's four-letter "ruok" over TCP and wants "imok".
func zkRuok(ctx context.Context, addr string) error {
	d := net.Dialer{Timeout: time.Second}
	conn, err := d.DialContext(ctx, "tcp", addr)
	if err != nil {
		return err
	}
	defer conn.Close()
	_ = conn.SetDeadline(time.Now().Add(2 * time.Second))
	if _, err := conn.Write([]byte("ruok")); err != nil {
		return err
	}
	buf := make([]byte, 4)
	if _, err := conn.Read(buf); err != nil {
		return err
	}
	if string(buf) != "imok" {
		return fmt.Errorf("ruok answered %q", buf)
	}
	return nil
}

// commonProps are the broker settings shared by every provider and version for a cluster of
// nb brokers (see the package doc).
func commonProps(nb int) map[string]string {
	rf := strconv.Itoa(min(nb, 3))
	return map[string]string{
		"auto.create.topics.enable":  "true", // Kafka's default, as on the clusters users migrate
		"num.partitions":             "1",
		"default.replication.factor": rf,
		// Internal topics sized to the cluster; fewer partitions than the default 50 so that
		// the first group coordinator lookup is quick. The group protocol is unchanged.
		"offsets.topic.replication.factor":         rf,
		"offsets.topic.num.partitions":             "10",
		"transaction.state.log.replication.factor": rf,
		"transaction.state.log.min.isr":            strconv.Itoa(min(nb, 2)),
		"transaction.state.log.num.partitions":     "10",
		"group.initial.rebalance.delay.ms":         "0",
		"num.network.threads":                      "2",
		"num.io.threads":                           "4",
		"background.threads":                       "4",
		"num.recovery.threads.per.data.dir":        "1",
		"log.cleaner.dedupe.buffer.size":           strconv.Itoa(16 << 20), // default 128 MiB would take a third of the heap
		"log.cleaner.backoff.ms":                   "1000",
		// Production-shaped durability from three brokers on: acks=all needs two in-sync
		// replicas, and an out-of-sync replica never becomes leader (both versions' default,
		// written out).
		"min.insync.replicas":            strconv.Itoa(minISR(nb)),
		"unclean.leader.election.enable": "false",
	}
}

// minISR is min.insync.replicas for nb brokers: 2 from three brokers on, else 1.
func minISR(nb int) int {
	if nb >= 3 {
		return 2
	}
	return 1
}

func (c *jvmCluster) serverProps(n *jvmNode) map[string]string {
	m := commonProps(len(c.nodes))
	m["log.dirs"] = filepath.Join(n.dir, "data")
	m["listeners"] = fmt.Sprintf("PLAINTEXT://127.0.0.1:%d", n.port)
	m["advertised.listeners"] = fmt.Sprintf("PLAINTEXT://127.0.0.1:%d", n.port)
	switch c.spec.Version {
	case V230:
		m["broker.id"] = strconv.Itoa(int(n.id))
		m["zookeeper.connect"] = fmt.Sprintf("127.0.0.1:%d", c.zkPort)
		m["zookeeper.connection.timeout.ms"] = "30000"
	case V371, V431:
		voters := ""
		for i, o := range c.nodes {
			if i > 0 {
				voters += ","
			}
			voters += fmt.Sprintf("%d@127.0.0.1:%d", o.id, o.ctrlPort)
		}
		m["process.roles"] = "broker,controller"
		m["node.id"] = strconv.Itoa(int(n.id))
		m["controller.quorum.voters"] = voters
		m["listeners"] = fmt.Sprintf("PLAINTEXT://127.0.0.1:%d,CONTROLLER://127.0.0.1:%d", n.port, n.ctrlPort)
		m["controller.listener.names"] = "CONTROLLER"
		m["inter.broker.listener.name"] = "PLAINTEXT"
		m["listener.security.protocol.map"] = "PLAINTEXT:PLAINTEXT,CONTROLLER:PLAINTEXT"
	}
	if c.sec != nil {
		c.secureProps(m, n)
	}
	if n.proxy != nil {
		c.proxiedListeners(m, n)
	}
	for k, v := range c.spec.Config {
		m[k] = v
	}
	return m
}

// formatStorage runs kafka.tools.StorageTool on every KRaft node with one new cluster id.
func (c *jvmCluster) formatStorage(ctx context.Context) error {
	id, err := newClusterID()
	if err != nil {
		return err
	}
	errs := make([]error, len(c.nodes))
	var wg sync.WaitGroup
	for i, n := range c.nodes {
		wg.Go(func() {
			cfg := filepath.Join(n.dir, "server.properties")
			argv := c.javaArgs(heapTool, "kafka.tools.StorageTool", "format", "-t", id, "-c", cfg, "--ignore-formatted")
			if c.sec != nil {
				// The bootstrap admin's SCRAM credentials, in the first metadata records
				// (StorageTool has --add-scram since Kafka 3.5): the brokers log in to
				// each other with them before any client could create a user.
				a := c.sec.sec.Admin
				argv = append(argv, "--add-scram", fmt.Sprintf("%s=[name=%s,password=%s]", c.sec.sec.Mechanism, a.Name, a.Password))
			}
			cmd := exec.CommandContext(ctx, argv[0], argv[1:]...)
			cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
			out, err := cmd.CombinedOutput()
			_ = appendFile(n.proc.logPath, out)
			if err != nil {
				if c.sec != nil {
					out = []byte(redact(string(out), c.sec.sec.Admin.Password))
				}
				errs[i] = fmt.Errorf("cluster %s: format KRaft storage of broker %d (kafka.tools.StorageTool): %w\n%s", c.spec.Name, i, err, out)
				return
			}
			shareReady(c.java, c.lib, "kafka.tools.StorageTool")
		})
	}
	wg.Wait()
	return errors.Join(errs...)
}

func appendFile(path string, b []byte) error {
	f, err := os.OpenFile(path, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return err
	}
	defer f.Close()
	_, err = f.Write(b)
	return err
}

// waitReady polls until every running broker answers and metadata lists them all.
func (c *jvmCluster) waitReady(ctx context.Context) error {
	var procs []*proc
	var want []int32
	var addrs []string
	if c.zk != nil {
		procs = append(procs, c.zk)
	}
	for _, n := range c.nodes {
		if n.proc.running() {
			procs = append(procs, n.proc)
			want = append(want, n.id)
			addrs = append(addrs, n.clientAddr())
		}
	}
	var opts []kgo.Opt
	if c.sec != nil {
		var err error
		if opts, err = c.sec.sec.Opts(c.sec.sec.Admin); err != nil {
			return err
		}
	}
	return waitBrokersAs(ctx, c.spec.Name, addrs, want, procs, opts)
}

func (n *jvmNode) addr() string { return net.JoinHostPort("127.0.0.1", strconv.Itoa(n.port)) }

// clientAddr is where clients reach the node: its proxy with Spec.Proxied, else addr.
func (n *jvmNode) clientAddr() string {
	if n.proxy != nil {
		return n.proxy.Addr()
	}
	return n.addr()
}

func (c *jvmCluster) Name() string    { return c.spec.Name }
func (c *jvmCluster) Version() string { return c.spec.Version }
func (c *jvmCluster) Brokers() int    { return len(c.nodes) }

func (c *jvmCluster) Bootstrap() []string {
	out := make([]string, len(c.nodes))
	for i, n := range c.nodes {
		out[i] = n.clientAddr()
	}
	return out
}

// Dir is the directory holding the cluster's configuration, data and logs.
func (c *jvmCluster) Dir() string { return c.dir }

func (c *jvmCluster) LogFiles() []string {
	var out []string
	if c.zk != nil {
		out = append(out, c.zk.logPath)
	}
	for _, n := range c.nodes {
		if n.proc != nil {
			out = append(out, n.proc.logPath)
		}
	}
	return out
}

// Pids lists the running JVMs (ZooKeeper first), for scripts that check nothing is left.
func (c *jvmCluster) Pids() []int {
	var out []int
	for _, p := range c.procs() {
		p.mu.Lock()
		if p.cmd != nil && !isClosed(p.done) {
			out = append(out, p.cmd.Process.Pid)
		}
		p.mu.Unlock()
	}
	return out
}

func (c *jvmCluster) procs() []*proc {
	var out []*proc
	if c.zk != nil {
		out = append(out, c.zk)
	}
	for _, n := range c.nodes {
		if n.proc != nil {
			out = append(out, n.proc)
		}
	}
	return out
}

func (c *jvmCluster) tails(n int) string {
	var s string
	for _, f := range c.LogFiles() {
		if _, err := os.Stat(f); err == nil {
			s += fmt.Sprintf("--- tail of %s:\n%s\n", f, Tail(f, n))
		}
	}
	return s
}

func (c *jvmCluster) StopBroker(ctx context.Context, i int) error {
	if err := checkIndex(c, i); err != nil {
		return err
	}
	if err := c.nodes[i].proc.stop(ctx, stopGrace); err != nil {
		return fmt.Errorf("cluster %s: %w", c.spec.Name, err)
	}
	return nil
}

func (c *jvmCluster) KillBroker(i int) error {
	if err := checkIndex(c, i); err != nil {
		return err
	}
	c.nodes[i].proc.kill()
	return nil
}

func (c *jvmCluster) RestartBroker(ctx context.Context, i int) error {
	if err := checkIndex(c, i); err != nil {
		return err
	}
	p := c.nodes[i].proc
	if p.running() {
		if err := p.stop(ctx, stopGrace); err != nil {
			return fmt.Errorf("cluster %s: restart broker %d: %w", c.spec.Name, i, err)
		}
	}
	for attempt := 1; ; attempt++ {
		if err := p.start(); err != nil {
			return fmt.Errorf("cluster %s: restart broker %d: %w", c.spec.Name, i, err)
		}
		err := c.waitReady(ctx)
		if err == nil {
			return nil
		}
		// A ZooKeeper-mode broker killed with SIGKILL leaves its registration (the ephemeral
		// /brokers/ids node) until ZooKeeper expires its session (zookeeper.session.timeout.ms,
		// 6 s in 2.3.0); a start before that exits at once ("node already exists"). Start it
		// again, a bounded number of times, until the old session is gone.
		if c.spec.Version != V230 || p.running() || attempt == zkRestartAttempts || ctx.Err() != nil {
			return fmt.Errorf("restart broker %d: %w\n%s", i, err, c.tails(20))
		}
		select {
		case <-ctx.Done():
		case <-time.After(time.Second):
		}
	}
}

// zkRestartAttempts bounds the starts of a killed ZooKeeper-mode broker (RestartBroker): its
// session outlives it by up to 6 s, and a start exits in about 2 s while it lasts.
const zkRestartAttempts = 6

// Close kills every process at once (the data is thrown away, so a clean shutdown would only
// cost time: a KRaft quorum shutting down together waits for timeouts) and removes the
// temporary directory.
func (c *jvmCluster) Close() error {
	c.once.Do(func() {
		untrack(c)
		var wg sync.WaitGroup
		for _, p := range c.procs() {
			wg.Go(p.kill)
		}
		wg.Wait()
		c.closeProxies()
		if c.removeDir {
			c.closeErr = os.RemoveAll(c.dir)
		}
	})
	return c.closeErr
}

var _ Pauser = (*jvmCluster)(nil)

// PauseBroker freezes broker i (SIGSTOP to its process group).
func (c *jvmCluster) PauseBroker(_ context.Context, i int) error {
	if err := checkIndex(c, i); err != nil {
		return err
	}
	c.nodes[i].proc.signal(syscall.SIGSTOP)
	return nil
}

// UnpauseBroker thaws broker i (SIGCONT to its process group).
func (c *jvmCluster) UnpauseBroker(_ context.Context, i int) error {
	if err := checkIndex(c, i); err != nil {
		return err
	}
	c.nodes[i].proc.signal(syscall.SIGCONT)
	return nil
}
