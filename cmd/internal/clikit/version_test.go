package clikit

import (
	"bytes"
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"runtime/debug"
	"strings"
	"sync"
	"testing"

	"github.com/kmigrate/kmigrate/internal/testkit"
)

func TestVersionStringFromBuildInfo(t *testing.T) {
	bi := &debug.BuildInfo{GoVersion: "go1.26.8", Main: debug.Module{Path: "github.com/kmigrate/kmigrate", Version: "v1.4.0"},
		Settings: []debug.BuildSetting{{Key: "vcs.revision", Value: "0123456789abcdef0123"}, {Key: "vcs.modified", Value: "true"}}}
	for _, tc := range []struct {
		name, version, commit, want string
	}{
		{"build info", "", "", "v1.4.0, commit 0123456789ab-dirty, go1.26.8 "},
		{"ldflags override", "v1.5.0-rc1", "abc1234", "v1.5.0-rc1, commit abc1234, go1.26.8 "},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := versionString(bi, tc.version, tc.commit); !strings.HasPrefix(got, tc.want) {
				t.Errorf("versionString = %q, want prefix %q", got, tc.want)
			}
		})
	}
	if got, want := versionString(nil, "", ""), "(devel), commit unknown, "+runtime.Version(); !strings.HasPrefix(got, want) {
		t.Errorf("without build info: %q, want prefix %q", got, want)
	}
}

func TestVersionFlag(t *testing.T) {
	app := NewApp("kx", "test app", "")
	var out bytes.Buffer
	app.Writer, app.ErrWriter = &out, &out
	if code := MainContext(context.Background(), app, []string{"kx", "--version"}); code != ExitOK {
		t.Fatalf("kx --version: exit %d: %s", code, out.String())
	}
	if got, want := out.String(), "kx version "+VersionString()+"\n"; got != want {
		t.Errorf("kx --version printed %q, want %q", got, want)
	}
}

var binaries = []string{"kverify", "kreconcile", "kmirror"}

var (
	buildOnce sync.Once
	buildDir  string
	buildErr  error
)

// built builds the three commands once, with -buildvcs so the commit is recorded, and the
// -ldflags -X version override of release builds.
func built(t *testing.T) string {
	t.Helper()
	buildOnce.Do(func() {
		buildDir, buildErr = os.MkdirTemp("", "kmigrate-clikit-bin-")
		if buildErr == nil {
			buildErr = testkit.BuildCommands(buildDir, []string{"-buildvcs=auto", "-ldflags", "-X github.com/kmigrate/kmigrate/cmd/internal/clikit.Version=v9.9.9-test"}, binaries...)
		}
	})
	if buildErr != nil {
		t.Fatal(buildErr)
	}
	return buildDir
}

func TestMain(m *testing.M) {
	code := m.Run()
	if buildDir != "" && buildErr == nil {
		os.RemoveAll(buildDir)
	}
	os.Exit(code)
}

func TestBinariesVersion(t *testing.T) {
	dir := built(t)
	for _, b := range binaries {
		// The commit is what the build recorded (go build records none outside a git work tree,
		// with -buildvcs=false, or in a linked git worktree, which cmd/go does not detect).
		commit := "unknown"
		meta, err := exec.Command("go", "version", "-m", filepath.Join(dir, b)).Output()
		if err != nil {
			t.Fatalf("go version -m %s: %v", b, err)
		}
		for _, line := range strings.Split(string(meta), "\n") {
			if f := strings.Fields(line); len(f) == 2 && f[0] == "build" && strings.HasPrefix(f[1], "vcs.revision=") {
				commit = strings.TrimPrefix(f[1], "vcs.revision=")[:12]
			}
		}
		out, err := exec.Command(filepath.Join(dir, b), "--version").CombinedOutput()
		if err != nil {
			t.Fatalf("%s --version: %v\n%s", b, err, out)
		}
		got := string(out)
		for _, want := range []string{b + " version v9.9.9-test, ", "commit " + commit, runtime.Version()} {
			if !strings.Contains(got, want) {
				t.Errorf("%s --version printed %q, want it to contain %q", b, got, want)
			}
		}
	}
}
