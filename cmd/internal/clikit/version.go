package clikit

import (
	"fmt"
	"runtime"
	"runtime/debug"
)

// Version and Commit override what the build records, for release builds:
//
//	go build -ldflags "-X github.com/kmigrate/kmigrate/cmd/internal/clikit.Version=$(git describe --always --dirty)" ./cmd/...
//
// (make build does this). Empty, the version is the module version of the build (a tagged
// `go install ...@v1.2.3`, or "(devel)" in a work tree) and the commit is vcs.revision, with
// "-dirty" when vcs.modified, as `go build` records them in a git work tree.
var (
	Version string
	Commit  string
)

// VersionString is what --version prints after "<name> version ": the version, the commit and
// the Go toolchain, e.g. "v1.2.0, commit 0de615b5c1d2, go1.26.8 linux/amd64".
func VersionString() string {
	bi, _ := debug.ReadBuildInfo()
	return versionString(bi, Version, Commit)
}

func versionString(bi *debug.BuildInfo, version, commit string) string {
	goVersion := runtime.Version()
	if bi != nil {
		if version == "" {
			version = bi.Main.Version
		}
		if bi.GoVersion != "" {
			goVersion = bi.GoVersion
		}
		if commit == "" {
			var modified bool
			for _, s := range bi.Settings {
				switch s.Key {
				case "vcs.revision":
					commit = s.Value
				case "vcs.modified":
					modified = s.Value == "true"
				}
			}
			if len(commit) > 12 {
				commit = commit[:12]
			}
			if commit != "" && modified {
				commit += "-dirty"
			}
		}
	}
	if version == "" {
		version = "(devel)"
	}
	if commit == "" {
		commit = "unknown"
	}
	return fmt.Sprintf("%s, commit %s, %s %s/%s", version, commit, goVersion, runtime.GOOS, runtime.GOARCH)
}
