package cluster

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/moby/moby/api/types/container"
	"github.com/moby/moby/api/types/network"
	"github.com/testcontainers/testcontainers-go"
	tcnetwork "github.com/testcontainers/testcontainers-go/network"
)

// Images of the testcontainers provider. The defaults are the ones scripts/images.sh builds on
// this machine (no registry needed); each KMIGRATE_IMAGE_* variable names another, e.g. the
// public confluentinc/cp-zookeeper:5.3.0 and confluentinc/cp-kafka:5.3.0 (Confluent Platform
// 5.3.0 ships Kafka 2.3.0), apache/kafka:3.7.1 and apache/kafka:4.3.1, which read the same
// environment.
var images = []imageVar{
	{EnvImageZooKeeper, "kmigrate-local/kafka:2.3.0"},
	{EnvImageKafka230, "kmigrate-local/kafka:2.3.0"},
	{EnvImageKafka371, "kmigrate-local/kafka:3.7.1"},
	{EnvImageKafka431, "kmigrate-local/kafka:4.3.1"},
	{EnvImageMM2, "kmigrate-local/mirrormaker2:3.7.1"},
	{EnvImageKmigrate, "kmigrate-local/kmigrate:dev"},
}

// The variables that name the images.
const (
	EnvImageZooKeeper = "KMIGRATE_IMAGE_ZOOKEEPER"
	EnvImageKafka230  = "KMIGRATE_IMAGE_KAFKA_2_3_0"
	EnvImageKafka371  = "KMIGRATE_IMAGE_KAFKA_3_7_1"
	EnvImageKafka431  = "KMIGRATE_IMAGE_KAFKA_4_3_1"
	EnvImageMM2       = "KMIGRATE_IMAGE_MM2"
	EnvImageKmigrate  = "KMIGRATE_IMAGE_KMIGRATE"
)

type imageVar struct{ env, def string }

// Image is the image the testcontainers provider runs for one of the EnvImage* variables:
// the variable's value, else the local default.
func Image(env string) string {
	for _, i := range images {
		if i.env == env {
			if v := os.Getenv(env); v != "" {
				return v
			}
			return i.def
		}
	}
	panic("cluster: unknown image variable " + env)
}

// imagePresent reports an UnavailableError unless the engine has image locally: nothing is
// ever pulled (no registry is reachable from the test machines; the nightly job pulls public
// images itself before it runs the tests).
func imagePresent(ctx context.Context, image string) error {
	cli, err := testcontainers.NewDockerClientWithOpts(ctx)
	if err != nil {
		return &UnavailableError{Provider: ProviderTestcontainers, Reason: fmt.Sprintf("docker client: %v", err)}
	}
	defer cli.Close()
	if _, err := cli.ImageInspect(ctx, image); err != nil {
		return &UnavailableError{Provider: ProviderTestcontainers, Reason: fmt.Sprintf(
			"image %s is not on this Docker engine (%v): run scripts/images.sh to build the local images, or docker pull it", image, err)}
	}
	return nil
}

// dockerAvailable answers within about a second whether a Docker engine answers /_ping, so
// that a machine without one skips instead of hanging in testcontainers' retries.
func dockerAvailable() error {
	host := os.Getenv("DOCKER_HOST")
	var sockets []string
	switch {
	case strings.HasPrefix(host, "unix://"):
		sockets = []string{strings.TrimPrefix(host, "unix://")}
	case strings.HasPrefix(host, "tcp://"):
		addr := strings.TrimPrefix(host, "tcp://")
		return ping("tcp", addr, "DOCKER_HOST="+host)
	case host != "":
		return &UnavailableError{Provider: ProviderTestcontainers, Reason: fmt.Sprintf("DOCKER_HOST=%s: only unix:// and tcp:// are probed", host)}
	default:
		sockets = []string{"/var/run/docker.sock"}
		if home, err := os.UserHomeDir(); err == nil {
			sockets = append(sockets, filepath.Join(home, ".docker", "run", "docker.sock"))
		}
		if xdg := os.Getenv("XDG_RUNTIME_DIR"); xdg != "" {
			sockets = append(sockets, filepath.Join(xdg, "docker.sock"))
		}
	}
	var errs []string
	for _, s := range sockets {
		err := ping("unix", s, s)
		if err == nil {
			return nil
		}
		errs = append(errs, err.Error())
	}
	return &UnavailableError{Provider: ProviderTestcontainers, Reason: "no Docker engine: " + strings.Join(errs, "; ") +
		" (set DOCKER_HOST, or run the jvm provider: unset KMIGRATE_PROVIDER)"}
}

func ping(netw, addr, label string) error {
	if netw == "unix" {
		if _, err := os.Stat(addr); err != nil {
			return fmt.Errorf("%s: no socket", label)
		}
	}
	tr := &http.Transport{DialContext: func(ctx context.Context, _, _ string) (net.Conn, error) {
		d := net.Dialer{Timeout: time.Second}
		return d.DialContext(ctx, netw, addr)
	}}
	defer tr.CloseIdleConnections()
	cl := http.Client{Transport: tr, Timeout: 2 * time.Second}
	resp, err := cl.Get("http://docker/_ping")
	if err != nil {
		return fmt.Errorf("%s: %v", label, err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("%s: /_ping answered %s", label, resp.Status)
	}
	return nil
}

// tcCluster runs the same clusters as jvmCluster in containers on one Docker network. Each
// broker's client listener is published on the same port number on the host, so that the
// address it advertises (127.0.0.1:port) works from the tests; brokers talk to each other on
// the network (kafka-<id>:9092).
type tcCluster struct {
	spec    Spec
	dir     string
	rmDir   bool
	files   []*os.File
	net     *testcontainers.DockerNetwork
	zk      testcontainers.Container
	nodes   []*tcNode
	logs    []string
	once    sync.Once
	closeEr error
}

type tcNode struct {
	id   int32
	port int
	ctr  testcontainers.Container
}

type fileLog struct{ f *os.File }

func (l fileLog) Accept(g testcontainers.Log) { _, _ = l.f.Write(g.Content) }

func startContainers(ctx context.Context, s Spec) (_ Cluster, err error) {
	if err := dockerAvailable(); err != nil {
		return nil, err
	}
	setupTestcontainers()
	image := kafkaImage(s.Version)
	need := []string{image}
	if s.Version == V230 {
		need = []string{Image(EnvImageZooKeeper), image}
	}
	for _, img := range need {
		if err := imagePresent(ctx, img); err != nil {
			return nil, err
		}
	}
	dir, removeDir, err := clusterDir(s)
	if err != nil {
		return nil, err
	}
	c := &tcCluster{spec: s, dir: dir, rmDir: removeDir}
	defer func() {
		if err != nil {
			c.Close()
		}
	}()
	if c.net, err = tcnetwork.New(ctx, tcnetwork.WithLabels(map[string]string{ownerLabel: ownerValue()})); err != nil {
		return nil, fmt.Errorf("cluster %s: create docker network: %w", s.Name, err)
	}
	track(c)
	if s.Version == V230 {
		c.zk, err = c.run(ctx, "zookeeper", Image(EnvImageZooKeeper), []string{"zookeeper"}, nil, map[string]string{
			"ZOOKEEPER_CLIENT_PORT": "2181",
			"ZOOKEEPER_TICK_TIME":   "2000",
		})
		if err != nil {
			return nil, err
		}
	}
	clusterID, err := newClusterID()
	if err != nil {
		return nil, err
	}
	var voters []string
	for i := range s.Brokers {
		n := &tcNode{id: int32(i + 1)}
		if n.port, err = freePort(); err != nil {
			return nil, err
		}
		c.nodes = append(c.nodes, n)
		voters = append(voters, fmt.Sprintf("%d@kafka-%d:9093", n.id, n.id))
	}
	for _, n := range c.nodes {
		m := commonProps(len(c.nodes))
		m["listeners"] = fmt.Sprintf("PLAINTEXT://0.0.0.0:%d,BROKER://0.0.0.0:9092", n.port)
		m["advertised.listeners"] = fmt.Sprintf("PLAINTEXT://127.0.0.1:%d,BROKER://kafka-%d:9092", n.port, n.id)
		m["listener.security.protocol.map"] = "PLAINTEXT:PLAINTEXT,BROKER:PLAINTEXT"
		m["inter.broker.listener.name"] = "BROKER"
		env := map[string]string{}
		switch s.Version {
		case V230:
			m["broker.id"] = strconv.Itoa(int(n.id))
			m["zookeeper.connect"] = "zookeeper:2181"
		case V371, V431:
			m["node.id"] = strconv.Itoa(int(n.id))
			m["process.roles"] = "broker,controller"
			m["controller.quorum.voters"] = strings.Join(voters, ",")
			m["controller.listener.names"] = "CONTROLLER"
			m["listeners"] += ",CONTROLLER://0.0.0.0:9093"
			m["listener.security.protocol.map"] += ",CONTROLLER:PLAINTEXT"
			env["CLUSTER_ID"] = clusterID
		}
		for k, v := range s.Config {
			m[k] = v
		}
		for k, v := range m {
			env[envName(k)] = v
		}
		port := network.MustParsePort(strconv.Itoa(n.port) + "/tcp")
		n.ctr, err = c.run(ctx, fmt.Sprintf("broker-%d", n.id-1), image, []string{fmt.Sprintf("kafka-%d", n.id)},
			&port, env)
		if err != nil {
			return nil, err
		}
	}
	if err := c.waitReady(ctx); err != nil {
		return nil, err
	}
	return c, nil
}

// kafkaImage is the broker image of version v.
func kafkaImage(v string) string {
	switch v {
	case V230:
		return Image(EnvImageKafka230)
	case V431:
		return Image(EnvImageKafka431)
	}
	return Image(EnvImageKafka371)
}

// envName maps a broker property to the variable both image families read:
// "log.dirs" -> KAFKA_LOG_DIRS (a '-' becomes "___", a '_' "__").
func envName(k string) string {
	k = strings.ReplaceAll(k, "_", "__")
	k = strings.ReplaceAll(k, "-", "___")
	return "KAFKA_" + strings.ToUpper(strings.ReplaceAll(k, ".", "_"))
}

// run starts one container; publish, when set, binds that container port to the same host
// port on 127.0.0.1.
func (c *tcCluster) run(ctx context.Context, name, image string, aliases []string, publish *network.Port, env map[string]string) (testcontainers.Container, error) {
	logPath := filepath.Join(c.dir, name+".log")
	f, err := os.OpenFile(logPath, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return nil, fmt.Errorf("cluster %s: %w", c.spec.Name, err)
	}
	c.logs = append(c.logs, logPath)
	c.files = append(c.files, f)
	opts := []testcontainers.ContainerCustomizer{
		withOwner(),
		testcontainers.WithEnv(env),
		tcnetwork.WithNetwork(aliases, c.net),
		testcontainers.WithLogConsumers(fileLog{f}),
	}
	if publish != nil {
		p := *publish
		opts = append(opts,
			testcontainers.WithExposedPorts(p.String()),
			testcontainers.WithHostConfigModifier(func(hc *container.HostConfig) {
				hc.PortBindings = network.PortMap{p: {{HostPort: strconv.Itoa(int(p.Num()))}}}
			}))
	}
	ctr, err := testcontainers.Run(ctx, image, opts...)
	if err != nil {
		if ctr != nil {
			_ = ctr.Terminate(context.Background())
		}
		return nil, fmt.Errorf("cluster %s: start container %s (%s): %w", c.spec.Name, name, image, err)
	}
	return ctr, nil
}

func (c *tcCluster) waitReady(ctx context.Context) error {
	var want []int32
	var addrs []string
	for _, n := range c.nodes {
		if st, err := n.ctr.State(ctx); err == nil && st.Running {
			want = append(want, n.id)
			addrs = append(addrs, net.JoinHostPort("127.0.0.1", strconv.Itoa(n.port)))
		}
	}
	return waitBrokers(ctx, c.spec.Name, addrs, want, nil)
}

func (c *tcCluster) Name() string       { return c.spec.Name }
func (c *tcCluster) Version() string    { return c.spec.Version }
func (c *tcCluster) Brokers() int       { return len(c.nodes) }
func (c *tcCluster) LogFiles() []string { return c.logs }

func (c *tcCluster) Bootstrap() []string {
	out := make([]string, len(c.nodes))
	for i, n := range c.nodes {
		out[i] = net.JoinHostPort("127.0.0.1", strconv.Itoa(n.port))
	}
	return out
}

func (c *tcCluster) StopBroker(ctx context.Context, i int) error {
	if err := checkIndex(c, i); err != nil {
		return err
	}
	grace := stopGrace
	if err := c.nodes[i].ctr.Stop(ctx, &grace); err != nil {
		return fmt.Errorf("cluster %s: stop broker %d: %w", c.spec.Name, i, err)
	}
	return nil
}

// KillBroker sends the broker's container SIGKILL, as a crash would, and waits until it has
// stopped.
func (c *tcCluster) KillBroker(i int) error {
	if err := checkIndex(c, i); err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if err := killContainer(ctx, c.nodes[i].ctr); err != nil {
		return fmt.Errorf("cluster %s: kill broker %d: %w", c.spec.Name, i, err)
	}
	return nil
}

func (c *tcCluster) RestartBroker(ctx context.Context, i int) error {
	if err := checkIndex(c, i); err != nil {
		return err
	}
	n := c.nodes[i]
	if st, err := n.ctr.State(ctx); err == nil && st.Running {
		if err := c.StopBroker(ctx, i); err != nil {
			return err
		}
	}
	if err := n.ctr.Start(ctx); err != nil {
		return fmt.Errorf("cluster %s: restart broker %d: %w", c.spec.Name, i, err)
	}
	return c.waitReady(ctx)
}

func (c *tcCluster) Close() error {
	c.once.Do(func() {
		untrack(c)
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
		defer cancel()
		var errs []error
		for _, n := range c.nodes {
			if n.ctr != nil {
				errs = append(errs, n.ctr.Terminate(ctx))
			}
		}
		if c.zk != nil {
			errs = append(errs, c.zk.Terminate(ctx))
		}
		if c.net != nil {
			errs = append(errs, c.net.Remove(ctx))
		}
		for _, f := range c.files {
			f.Close()
		}
		if c.rmDir {
			errs = append(errs, os.RemoveAll(c.dir))
		}
		c.closeEr = errors.Join(errs...)
	})
	return c.closeEr
}
