package cluster

import (
	"context"
	"fmt"
	"os"
	"strings"
	"time"

	"github.com/moby/moby/api/types/container"
	"github.com/testcontainers/testcontainers-go"
)

// mm2Ctr is MirrorMaker 2 in its image (EnvImageMM2) on the host's network, so that it reaches
// the brokers at the 127.0.0.1 addresses they advertise, as the JVM process does.
type mm2Ctr struct {
	ctr  testcontainers.Container
	logf *os.File
}

// EnvMM2Provider, when set (jvm or testcontainers), picks MirrorMaker's provider apart from
// the brokers': the nightly job runs public broker images and MirrorMaker as a JVM.
const EnvMM2Provider = "KMIGRATE_MM2_PROVIDER"

func mm2Provider(spec MM2Spec) string {
	if spec.Provider != "" {
		return spec.Provider
	}
	if p := os.Getenv(EnvMM2Provider); p != "" {
		return p
	}
	if os.Getenv(EnvProvider) == ProviderTestcontainers {
		return ProviderTestcontainers
	}
	return ProviderJVM
}

// startMM2Container runs MirrorMaker in a container with m's properties copied in and its
// console appended to m's log file.
func (m *MM2) startMM2Container(ctx context.Context) error {
	if err := dockerAvailable(); err != nil {
		return err
	}
	setupTestcontainers()
	image := Image(EnvImageMM2)
	if err := imagePresent(ctx, image); err != nil {
		return err
	}
	logf, err := os.OpenFile(m.logPath, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return fmt.Errorf("mm2 %s: %w", m.spec.Name, err)
	}
	fmt.Fprintf(logf, "=== kmigrate: starting %s (%s) at %s\n", m.spec.Name, image, time.Now().UTC().Format(time.RFC3339))
	env := map[string]string{"KAFKA_HEAP_OPTS": "-Xms32m -Xmx" + heapMM2}
	if len(m.spec.JVMFlags) > 0 {
		env["KAFKA_JVM_OPTS"] = "-XX:+UseSerialGC -XX:TieredStopAtLevel=1 -XX:-UsePerfData " + strings.Join(m.spec.JVMFlags, " ")
	}
	const props = "/etc/mm2/mm2.properties"
	ctr, err := testcontainers.Run(ctx, image,
		withOwner(),
		testcontainers.WithEnv(env),
		testcontainers.WithCmd(props, "--clusters", m.spec.Target),
		testcontainers.WithFiles(testcontainers.ContainerFile{HostFilePath: m.props, ContainerFilePath: props, FileMode: 0o644}),
		testcontainers.WithLogConsumers(fileLog{logf}),
		testcontainers.WithHostConfigModifier(func(hc *container.HostConfig) { hc.NetworkMode = "host" }),
	)
	if err != nil {
		logf.Close()
		if ctr != nil {
			_ = ctr.Terminate(context.Background())
		}
		return fmt.Errorf("mm2 %s: start container (%s): %w", m.spec.Name, image, err)
	}
	m.ctr = &mm2Ctr{ctr: ctr, logf: logf}
	return nil
}

func (c *mm2Ctr) pid() int {
	st, err := c.ctr.State(context.Background())
	if err != nil || !st.Running {
		return 0
	}
	return st.Pid
}

func (c *mm2Ctr) stop(ctx context.Context, grace time.Duration) error {
	return c.ctr.Stop(ctx, &grace)
}

func (c *mm2Ctr) start() error {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if c.pid() != 0 {
		return fmt.Errorf("still running, Stop or Kill it first")
	}
	return c.ctr.Start(ctx)
}

func (c *mm2Ctr) close() {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	_ = c.ctr.Terminate(ctx)
	c.logf.Close()
}
