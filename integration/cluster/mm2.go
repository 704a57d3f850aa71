package cluster

import (
	"bufio"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// MM2Spec describes a MirrorMaker 2 process in dedicated mode, 3.7.1 unless Version says.
type MM2Spec struct {
	// Version is the Kafka release whose MirrorMaker 2 runs: V371 (the default) or V431
	// (Kafka 4's, from the 4.3.1 jars, which include connect-mirror). The testcontainers
	// provider runs its image's MirrorMaker and takes only the default.
	Version string
	// Properties is the full mm2.properties text, written as is. Against a 2.3.0 cluster set
	// every internal topic replication factor (replication.factor, checkpoints.topic...,
	// heartbeats.topic..., offset-syncs.topic..., offset/status/config.storage...): MM2's
	// default -1 needs brokers 2.4+.
	Properties string
	// Target is the alias given to --clusters: this MM2 runs the flows into it.
	Target string
	// Name labels the process in errors and its directory. Default: "mm2-<target>".
	Name string
	// Dir holds mm2.properties and mm2.log. Default as for Spec.Dir.
	Dir string
	// JVMFlags are added after the defaults (-Xmx512m, serial GC, C1 only) and win over
	// them, e.g. {"-XX:TieredStopAtLevel=4", "-Xmx1g"} for a throughput benchmark.
	JVMFlags []string
	// Provider is "jvm" (a JVM process on the jars of Version) or "testcontainers" (the image
	// $KMIGRATE_IMAGE_MM2 names, on the host network). Default: $KMIGRATE_MM2_PROVIDER, else
	// testcontainers when $KMIGRATE_PROVIDER says so, else jvm.
	Provider string
	// TargetOpts are the client options (SASL, TLS) of the readiness check on the target,
	// e.g. from Security.Opts for a secure bed.
	TargetOpts []kgo.Opt
}

// MM2ScriptJVMFlags are the JVM options Kafka 3.7.1's own bin/connect-mirror-maker.sh starts
// MirrorMaker 2 with: its heap (KAFKA_HEAP_OPTS "-Xms256M -Xmx2G") and kafka-run-class.sh's
// performance options (G1 with a 20 ms pause goal, full JIT). Give them as MM2Spec.JVMFlags
// to measure MM2 as operators run it; they undo the test defaults (serial GC, C1 only), which
// HotSpot would otherwise combine with them ("-XX:-UseSerialGC" lets G1 be the only collector).
var MM2ScriptJVMFlags = []string{
	"-Xms256M", "-Xmx2G",
	"-server", "-XX:-UseSerialGC", "-XX:+UseG1GC", "-XX:MaxGCPauseMillis=20",
	"-XX:InitiatingHeapOccupancyPercent=35", "-XX:+ExplicitGCInvokesConcurrent", "-XX:MaxInlineLevel=15",
	"-XX:TieredStopAtLevel=4", "-Djava.awt.headless=true",
}

// MM2 is a running MirrorMaker 2. Its log stays in LogPath until Close removes a temporary
// directory; StartMM2T prints its tail when the test fails.
type MM2 struct {
	spec      MM2Spec
	dir       string
	removeDir bool
	props     string
	logPath   string
	proc      *proc   // the JVM, for the jvm provider
	ready     func()  // the JVM's shareReady, for the jvm provider
	ctr       *mm2Ctr // the container, for the testcontainers provider
	once      sync.Once
	closeErr  error
}

// StartMM2 writes the properties and starts org.apache.kafka.connect.mirror.MirrorMaker on the
// classpath of the spec's version (3.7.1 by default). When the properties name the target's bootstrap.servers and an enabled flow
// into it, it returns once the flow's Connect status topic (mm2-status.<source>.internal)
// exists on the target, i.e. the worker has joined its cluster; else once the process runs.
func StartMM2(ctx context.Context, spec MM2Spec) (_ *MM2, err error) {
	if spec.Target == "" {
		return nil, fmt.Errorf("mm2: empty Target: give the alias for --clusters")
	}
	if spec.Name == "" {
		spec.Name = "mm2-" + spec.Target
	}
	switch spec.Version {
	case "":
		spec.Version = V371
	case V371, V431:
	default:
		return nil, fmt.Errorf("mm2 %s: version %q: want %s or %s", spec.Name, spec.Version, V371, V431)
	}
	if spec.Version != V371 && mm2Provider(spec) == ProviderTestcontainers {
		return nil, fmt.Errorf("mm2 %s: version %s: the testcontainers provider runs its image's MirrorMaker 2; use the jvm provider", spec.Name, spec.Version)
	}
	reapOnce()
	dir, removeDir, err := clusterDir(Spec{Name: spec.Name, Dir: spec.Dir})
	if err != nil {
		return nil, err
	}
	m := &MM2{spec: spec, dir: dir, removeDir: removeDir, props: filepath.Join(dir, "mm2.properties"), logPath: filepath.Join(dir, "mm2.log")}
	defer func() {
		if err != nil {
			err = fmt.Errorf("%w\n--- tail of %s:\n%s", err, m.LogPath(), Tail(m.LogPath(), 30))
			m.Close()
		}
	}()
	if err := os.WriteFile(m.props, []byte(spec.Properties), 0o644); err != nil {
		return nil, fmt.Errorf("mm2 %s: write mm2.properties: %w", spec.Name, err)
	}
	var procs []*proc
	if mm2Provider(spec) == ProviderTestcontainers {
		if err := m.startMM2Container(ctx); err != nil {
			return nil, err
		}
	} else {
		if err := m.startMM2Process(ctx); err != nil {
			return nil, err
		}
		procs = []*proc{m.proc}
	}
	track(m)
	kv := parseProps(spec.Properties)
	boot := kv[spec.Target+".bootstrap.servers"]
	var topics []string
	for _, src := range strings.Split(kv["clusters"], ",") {
		src = strings.TrimSpace(src)
		if src != "" && src != spec.Target && strings.EqualFold(kv[src+"->"+spec.Target+".enabled"], "true") {
			topics = append(topics, "mm2-status."+src+".internal")
		}
	}
	if boot == "" || len(topics) == 0 {
		return m, nil
	}
	cl, err := kgo.NewClient(append([]kgo.Opt{kgo.SeedBrokers(strings.Split(boot, ",")...), kgo.DialTimeout(time.Second)}, spec.TargetOpts...)...)
	if err != nil {
		return nil, fmt.Errorf("mm2 %s: client for target %s: %w", spec.Name, boot, err)
	}
	defer cl.Close()
	what := fmt.Sprintf("mm2 %s: status topics %v on target %s", spec.Name, topics, boot)
	if err := poll(ctx, what, procs, func(ctx context.Context) error {
		return topicsExist(ctx, cl, topics)
	}); err != nil {
		return nil, err
	}
	if m.ready != nil {
		m.ready()
	}
	return m, nil
}

const mm2Main = "org.apache.kafka.connect.mirror.MirrorMaker"

// startMM2Process runs MirrorMaker as a JVM on the jars of the spec's version.
func (m *MM2) startMM2Process(ctx context.Context) error {
	bin, err := java()
	if err != nil {
		return err
	}
	lib, err := libDir(ctx, m.spec.Version)
	if err != nil {
		return err
	}
	if err := writeLogConfig(m.dir); err != nil {
		return fmt.Errorf("mm2 %s: %w", m.spec.Name, err)
	}
	m.proc = &proc{
		name:    m.spec.Name,
		logPath: m.logPath,
		argv: javaCommand(bin, lib, m.dir, heapMM2, m.spec.JVMFlags, mm2Main,
			m.props, "--clusters", m.spec.Target),
	}
	m.ready = func() { shareReady(bin, lib, mm2Main) }
	if err := m.proc.start(); err != nil {
		return fmt.Errorf("mm2 %s: %w", m.spec.Name, err)
	}
	return nil
}

// StartMM2T starts MirrorMaker 2 for a test, skipping as StartT does, and closes it in
// t.Cleanup, printing the tail of its log when the test failed.
func StartMM2T(t testing.TB, spec MM2Spec) *MM2 {
	t.Helper()
	if testing.Short() {
		t.Skip("skip: -short: no MirrorMaker 2")
	}
	if spec.Dir == "" && os.Getenv(EnvLogDir) == "" {
		spec.Dir = t.TempDir()
	}
	ctx, cancel := context.WithTimeout(context.Background(), startTimeout)
	defer cancel()
	m, err := StartMM2(ctx, spec)
	if err != nil {
		skipOrFail(t, err)
		return nil
	}
	t.Logf("mm2 %s: running, log %s", m.spec.Name, m.LogPath())
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("tail of %s:\n%s", m.LogPath(), Tail(m.LogPath(), tailLines))
		}
		if err := m.Close(); err != nil {
			t.Errorf("close mm2 %s: %v", m.spec.Name, err)
		}
	})
	return m
}

func topicsExist(ctx context.Context, cl *kgo.Client, topics []string) error {
	req := kmsg.NewPtrMetadataRequest()
	req.AllowAutoTopicCreation = false // the brokers auto-create; Connect needs its own compacted topics
	for _, t := range topics {
		rt := kmsg.NewMetadataRequestTopic()
		rt.Topic = kmsg.StringPtr(t)
		req.Topics = append(req.Topics, rt)
	}
	resp, err := req.RequestWith(ctx, cl)
	if err != nil {
		return err
	}
	for _, t := range resp.Topics {
		if t.ErrorCode != 0 {
			return fmt.Errorf("topic %s: %w", *t.Topic, kerr.ErrorForCode(t.ErrorCode))
		}
	}
	return nil
}

// parseProps is a minimal Java properties reader (key=value or key:value, # and ! comments),
// enough to find the target's address in the tests' own mm2.properties.
func parseProps(text string) map[string]string {
	m := map[string]string{}
	sc := bufio.NewScanner(strings.NewReader(text))
	for sc.Scan() {
		line := strings.TrimSpace(sc.Text())
		if line == "" || line[0] == '#' || line[0] == '!' {
			continue
		}
		i := strings.IndexAny(line, "=:")
		if i < 0 {
			continue
		}
		m[strings.TrimSpace(line[:i])] = strings.TrimSpace(line[i+1:])
	}
	return m
}

// LogPath is MirrorMaker's log file (its console output, log4j at INFO).
func (m *MM2) LogPath() string { return m.logPath }

// PropertiesPath is the mm2.properties file it runs with.
func (m *MM2) PropertiesPath() string { return m.props }

// Dir holds mm2.properties and the log.
func (m *MM2) Dir() string { return m.dir }

// Pid is the JVM's process id (in a container: its host pid), 0 when it is not running.
func (m *MM2) Pid() int {
	if m.ctr != nil {
		return m.ctr.pid()
	}
	m.proc.mu.Lock()
	defer m.proc.mu.Unlock()
	if m.proc.cmd == nil || isClosed(m.proc.done) {
		return 0
	}
	return m.proc.cmd.Process.Pid
}

// Stop shuts MirrorMaker down cleanly (SIGTERM: tasks commit their offsets and flush their
// offset syncs) and waits; it is killed when ctx ends first. Restart runs it again.
func (m *MM2) Stop(ctx context.Context) error {
	if m.ctr != nil {
		return m.ctr.stop(ctx, stopGrace)
	}
	return m.proc.stop(ctx, stopGrace)
}

// Kill kills MirrorMaker at once (SIGKILL), as a crash would.
func (m *MM2) Kill() {
	if m.ctr != nil {
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		_ = killContainer(ctx, m.ctr.ctr)
		return
	}
	m.proc.kill()
}

// Restart starts a stopped or killed MirrorMaker again with the same properties and log.
func (m *MM2) Restart() error {
	if m.ctr != nil {
		if err := m.ctr.start(); err != nil {
			return fmt.Errorf("mm2 %s: restart: %w", m.spec.Name, err)
		}
		return nil
	}
	if m.proc.running() {
		return fmt.Errorf("mm2 %s: restart: still running, Stop or Kill it first", m.spec.Name)
	}
	return m.proc.start()
}

// Close kills MirrorMaker and removes its temporary directory.
func (m *MM2) Close() error {
	m.once.Do(func() {
		untrack(m)
		if m.proc != nil {
			m.proc.kill()
		}
		if m.ctr != nil {
			m.ctr.close()
		}
		if m.removeDir {
			m.closeErr = os.RemoveAll(m.dir)
		}
	})
	return m.closeErr
}
