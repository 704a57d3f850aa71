package cluster

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strings"
	"testing"
)

// Versions the jvm and testcontainers providers can run, besides "kfake".
const (
	V230  = "2.3.0" // Kafka 2.3.0 on ZooKeeper 3.5.9
	V371  = "3.7.1" // Kafka 3.7.1 on KRaft (combined broker+controller nodes)
	V431  = "4.3.1" // Kafka 4.3.1 on KRaft (combined nodes; Kafka 4 has no ZooKeeper mode)
	Kfake = "kfake" // franz-go's in-process fake broker
)

// isKRaft reports whether version v runs on KRaft (every node both broker and controller).
func isKRaft(v string) bool { return v == V371 || v == V431 }

// Providers.
const (
	ProviderKfake          = "kfake"
	ProviderJVM            = "jvm"
	ProviderTestcontainers = "testcontainers"
)

// Environment variables read by Start and StartT.
const (
	// EnvProvider overrides the default provider of versioned specs: kfake, jvm or
	// testcontainers. Spec.Provider wins over it; Version "kfake" always uses kfake.
	EnvProvider = "KMIGRATE_PROVIDER"
	// EnvRequireReal set to 1 turns StartT's skips for a missing Java 17 or Maven into failures
	// (CI sets it so that a real-broker test can never silently not run).
	EnvRequireReal = "KMIGRATE_REQUIRE_REAL"
	// EnvRequireContainers set to 1 turns StartT's skips for a missing Docker engine or a
	// missing image into failures (CI sets it with KMIGRATE_PROVIDER=testcontainers, so that
	// the container suite can never silently not run).
	EnvRequireContainers = "KMIGRATE_REQUIRE_CONTAINERS"
	// EnvCache is the cache of Kafka runtimes (default ~/.cache/kmigrate) that
	// scripts/fetch-kafka.sh fills; the pid registry of running JVMs lives in it too.
	EnvCache = "KMIGRATE_CACHE"
	// EnvLogDir, when set, keeps every cluster's data and logs under it (one sub-directory per
	// cluster) instead of in a temporary directory removed at Close.
	EnvLogDir = "KMIGRATE_LOGDIR"
)

// Spec describes the cluster to start.
type Spec struct {
	// Version is "kfake", "2.3.0", "3.7.1" or "4.3.1".
	Version string
	// Brokers is the number of brokers: 1 or 3 (up to 5 work). Default: 1.
	Brokers int
	// Provider is "", "kfake", "jvm" or "testcontainers". Default: $KMIGRATE_PROVIDER, else
	// "kfake" for Version "kfake" and "jvm" for the others.
	Provider string
	// Name labels the cluster in logs, errors and its directory. Default: "kafka-<version>".
	Name string
	// Dir holds the cluster's data and logs. Default: $KMIGRATE_LOGDIR/<name>-<random> when
	// that is set (kept), else a temporary directory removed by Close.
	Dir string
	// Config adds or overrides broker properties (jvm and testcontainers providers), e.g.
	// "log.message.timestamp.type": "LogAppendTime".
	Config map[string]string
	// JVMFlags are added after the jvm provider's defaults (small heap, serial GC, C1 only:
	// quick starts on a small machine) and win over them, e.g. {"-XX:TieredStopAtLevel=4",
	// "-Xmx1g"} for a throughput benchmark.
	JVMFlags []string
	// Secure starts the production-shaped security of the jvm provider (see the package doc):
	// 2.3.0 SASL_PLAINTEXT with SCRAM-SHA-256, 3.7.1 and 4.3.1 SASL_SSL with SCRAM-SHA-512 and
	// a CA of the bed's own, the authorizer on, the bed's admin the only super user. The cluster then
	// implements [Secured]. Default: plaintext, no authorizer.
	Secure bool
	// Proxied puts a loopback fault proxy ([netfault.Proxy]) in front of every broker's client
	// listener (jvm provider, plaintext only): each broker advertises its proxy's port to
	// clients, so Bootstrap and every address a client learns from metadata go through the
	// proxies, while brokers (and KRaft controllers) talk to each other on a direct listener.
	// The cluster then implements [Proxied]. Default: no proxy.
	Proxied bool
}

// Cluster is a running Kafka cluster. Broker indexes run from 0 to Brokers()-1. Every method
// is safe for concurrent use; Close is idempotent.
type Cluster interface {
	// Name is the label given in Spec.Name.
	Name() string
	// Version is "kfake", "2.3.0", "3.7.1" or "4.3.1".
	Version() string
	// Bootstrap lists every broker's host:port, stopped ones included (with Spec.Proxied, the
	// proxies' addresses).
	Bootstrap() []string
	// Brokers is the number of brokers the cluster was started with.
	Brokers() int
	// StopBroker shuts broker i down cleanly (SIGTERM, controlled shutdown) and waits for it;
	// it is killed when ctx ends first.
	StopBroker(ctx context.Context, i int) error
	// KillBroker kills broker i at once (SIGKILL), as a crash would.
	KillBroker(i int) error
	// RestartBroker starts a stopped or killed broker i again on the same port and data, or
	// stops and starts a running one, and waits until the whole cluster serves again.
	RestartBroker(ctx context.Context, i int) error
	// Close stops every process and removes the data unless it is kept (see Spec.Dir).
	Close() error
}

// Logger is implemented by clusters whose processes write log files (jvm): LogFiles lists
// them, ZooKeeper first, then brokers in order.
type Logger interface {
	LogFiles() []string
}

// ErrNotSupported is returned (wrapped) by providers that cannot do an operation, e.g. kfake
// cannot kill a broker.
var ErrNotSupported = errors.New("not supported")

// UnavailableError says that a provider cannot run on this machine (no Java 17, no Maven to
// fetch the jars, no Docker engine). StartT skips on it, or fails under KMIGRATE_REQUIRE_REAL=1.
type UnavailableError struct {
	Provider string
	Reason   string
}

func (e *UnavailableError) Error() string {
	return fmt.Sprintf("%s provider unavailable: %s", e.Provider, e.Reason)
}

// IsUnavailable reports whether err says the provider cannot run here.
func IsUnavailable(err error) bool {
	var u *UnavailableError
	return errors.As(err, &u)
}

// normalize fills the defaults of s and validates it.
func (s Spec) normalize() (Spec, error) {
	if s.Brokers == 0 {
		s.Brokers = 1
	}
	if s.Brokers < 1 || s.Brokers > 5 {
		return s, fmt.Errorf("spec: brokers %d: want 1 to 5 (1 or 3 are tested)", s.Brokers)
	}
	switch s.Version {
	case Kfake, V230, V371, V431:
	case "":
		return s, errors.New("spec: empty version: want kfake, 2.3.0, 3.7.1 or 4.3.1")
	default:
		return s, fmt.Errorf("spec: unknown version %q: want kfake, 2.3.0, 3.7.1 or 4.3.1", s.Version)
	}
	if s.Provider == "" {
		if s.Version == Kfake {
			s.Provider = ProviderKfake
		} else if env := os.Getenv(EnvProvider); env != "" {
			s.Provider = env
		} else {
			s.Provider = ProviderJVM
		}
	}
	switch s.Provider {
	case ProviderKfake:
	case ProviderJVM, ProviderTestcontainers:
		if s.Version == Kfake {
			return s, fmt.Errorf("spec: version kfake runs only on the kfake provider, not %q", s.Provider)
		}
	default:
		return s, fmt.Errorf("spec: unknown provider %q (from Spec.Provider or $%s): want kfake, jvm or testcontainers", s.Provider, EnvProvider)
	}
	if s.Secure && s.Provider != ProviderJVM {
		return s, fmt.Errorf("spec: provider %s: %w", s.Provider, errSecureProvider)
	}
	if s.Proxied && (s.Provider != ProviderJVM || s.Secure) {
		return s, fmt.Errorf("spec: provider %s, secure %v: %w", s.Provider, s.Secure, errProxiedSpec)
	}
	if s.Name == "" {
		s.Name = "kafka-" + s.Version
	}
	s.Name = strings.Map(func(r rune) rune {
		if r == '/' || r == ' ' || r == os.PathSeparator {
			return '-'
		}
		return r
	}, s.Name)
	return s, nil
}

// Start starts the cluster described by spec and returns when every broker answers a metadata
// request listing all brokers, or fails when ctx ends first. The caller must Close it.
func Start(ctx context.Context, spec Spec) (Cluster, error) {
	s, err := spec.normalize()
	if err != nil {
		return nil, err
	}
	reapOnce()
	switch s.Provider {
	case ProviderKfake:
		return startKfake(s)
	case ProviderJVM:
		return startJVMRetry(ctx, s)
	default:
		return startContainers(ctx, s)
	}
}

// StartT starts the cluster for a test and closes it in t.Cleanup. It skips the test, saying
// why, when the provider cannot run here (no Java 17, no Maven to fetch missing jars, no
// Docker engine); with KMIGRATE_REQUIRE_REAL=1 a missing Java 17 or Maven fails it instead.
// When the test fails, the tail of every log file is printed. Under go test -short it skips
// every cluster that is not kfake.
func StartT(t testing.TB, spec Spec) Cluster {
	t.Helper()
	if testing.Short() && spec.Version != Kfake && spec.Provider != ProviderKfake {
		t.Skipf("skip: -short: no real %s brokers", spec.Version)
	}
	if spec.Dir == "" && os.Getenv(EnvLogDir) == "" {
		spec.Dir = t.TempDir()
	}
	ctx, cancel := context.WithTimeout(context.Background(), startTimeout)
	defer cancel()
	c, err := Start(ctx, spec)
	if err != nil {
		skipOrFail(t, err)
		return nil
	}
	t.Logf("cluster %s: %s on %s, bootstrap %s", c.Name(), c.Version(), providerOf(c), strings.Join(c.Bootstrap(), ","))
	t.Cleanup(func() {
		if t.Failed() {
			if l, ok := c.(Logger); ok {
				for _, f := range l.LogFiles() {
					t.Logf("tail of %s:\n%s", f, Tail(f, tailLines))
				}
			}
		}
		if err := c.Close(); err != nil {
			t.Errorf("close cluster %s: %v", c.Name(), err)
		}
	})
	return c
}

// skipOrFail ends the test for a start error: a skip for an unavailable provider, unless
// KMIGRATE_REQUIRE_REAL=1 makes a missing Java or Maven a failure, or
// KMIGRATE_REQUIRE_CONTAINERS=1 a missing Docker engine or image.
func skipOrFail(t testing.TB, err error) {
	t.Helper()
	var u *UnavailableError
	if errors.As(err, &u) {
		require := EnvRequireReal
		if u.Provider == ProviderTestcontainers {
			require = EnvRequireContainers
		}
		if os.Getenv(require) == "1" {
			t.Fatalf("%v (%s=1 makes this a failure)", err, require)
		}
		t.Skipf("skip: %v", err)
	}
	t.Fatalf("start: %v", err)
}

func providerOf(c Cluster) string {
	switch c.(type) {
	case *kfakeCluster:
		return ProviderKfake
	case *jvmCluster:
		return ProviderJVM
	default:
		return ProviderTestcontainers
	}
}

func checkIndex(c Cluster, i int) error {
	if i < 0 || i >= c.Brokers() {
		return fmt.Errorf("cluster %s: broker index %d out of range 0..%d", c.Name(), i, c.Brokers()-1)
	}
	return nil
}

// startJVMRetry starts a jvm cluster, and once more on new ports when a process died while
// starting (ports are checked free, but another process may bind one before the JVM does).
// The failed attempt's directory is kept beside the new one as <dir>.failed.
func startJVMRetry(ctx context.Context, s Spec) (Cluster, error) {
	c, err := startJVM(ctx, s)
	if err == nil || !errors.Is(err, errExited) || ctx.Err() != nil {
		return c, err
	}
	if s.Dir != "" {
		failed := strings.TrimRight(s.Dir, "/") + ".failed"
		_ = os.RemoveAll(failed)
		if rerr := os.Rename(s.Dir, failed); rerr != nil {
			return nil, err
		}
	}
	c, err2 := startJVM(ctx, s)
	if err2 != nil {
		return nil, fmt.Errorf("%w\n(second attempt after: %v)", err2, err)
	}
	return c, nil
}
