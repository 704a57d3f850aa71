package cluster

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
)

// Describe says, in one line, which provider versioned specs use by default here and whether
// it can run: the Java binary, the cached runtimes, or why not. TestMain prints it.
func Describe() string {
	provider := os.Getenv(EnvProvider)
	src := "$" + EnvProvider
	if provider == "" {
		provider, src = ProviderJVM, "default"
	}
	var b strings.Builder
	if provider == ProviderKfake {
		fmt.Fprintf(&b, "provider kfake (%s): specs for 2.3.0, 3.7.1 and 4.3.1 run in-process on kfake, no real brokers", src)
	} else {
		fmt.Fprintf(&b, "provider %s (%s) for 2.3.0 (ZooKeeper 3.5.9), 3.7.1 and 4.3.1 (KRaft), MirrorMaker 2 3.7.1", provider, src)
	}
	switch provider {
	case ProviderJVM:
		bin, err := java()
		if err != nil {
			fmt.Fprintf(&b, "; %v", err)
			break
		}
		fmt.Fprintf(&b, "; java %s", bin)
		for _, v := range []string{V230, V371, V431} {
			lib := filepath.Join(cacheDir(), "kafka-"+v, "lib")
			if _, err := os.Stat(filepath.Join(lib, ".complete")); err == nil {
				fmt.Fprintf(&b, "; %s jars in %s", v, lib)
			} else {
				fmt.Fprintf(&b, "; %s jars not cached yet (fetched with Maven on first use)", v)
			}
		}
	case ProviderTestcontainers:
		if err := dockerAvailable(); err != nil {
			fmt.Fprintf(&b, "; %v", err)
		} else {
			b.WriteString("; Docker engine reachable")
		}
	}
	if os.Getenv(EnvRequireReal) == "1" {
		fmt.Fprintf(&b, "; %s=1: a missing Java 17 or Maven fails the tests", EnvRequireReal)
	}
	return b.String()
}

// Check says whether spec can start here without starting it: nil, an *UnavailableError
// (no Java 17; jars missing and no Maven; no Docker engine), or a spec error.
func Check(spec Spec) error {
	s, err := spec.normalize()
	if err != nil {
		return err
	}
	switch s.Provider {
	case ProviderJVM:
		if _, err := java(); err != nil {
			return err
		}
		lib := filepath.Join(cacheDir(), "kafka-"+s.Version, "lib")
		if _, err := os.Stat(filepath.Join(lib, ".complete")); err == nil {
			return nil
		}
		if _, err := exec.LookPath("mvn"); err != nil {
			return &UnavailableError{Provider: ProviderJVM, Reason: fmt.Sprintf("Kafka %s jars are not in %s and Maven is not installed to fetch them: install Maven (apt-get install maven)", s.Version, lib)}
		}
	case ProviderTestcontainers:
		return dockerAvailable()
	}
	return nil
}
