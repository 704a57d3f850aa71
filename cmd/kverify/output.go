package main

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"

	"github.com/urfave/cli/v2"

	"github.com/kmigrate/kmigrate/cmd/internal/clikit"
	"github.com/kmigrate/kmigrate/internal/atomicfile"
	"github.com/kmigrate/kmigrate/report"
)

// output is a file the run writes (--out, --offset-map). Every output is checked before a
// cluster is contacted or a file written, and all are written at the end, each to a temporary
// file beside it then renamed over it, so that a failure leaves no output half written and an
// existing file untouched.
type output struct {
	flag string // "--out"
	path string // as given
	real string // absolute, symbolic links resolved: what is compared and replaced
	data []byte // rendered before writeResults, which writes it as is (--evidence)
}

// inputFlags name the files a run reads: an output must never be one of them.
var inputFlags = []string{"mm2-config",
	"source-sasl-password-file", "source-tls-ca", "source-tls-cert", "source-tls-key", "source-tls-truststore",
	"target-sasl-password-file", "target-tls-ca", "target-tls-cert", "target-tls-key", "target-tls-truststore"}

// checkOutputs checks the files named by flags: each can be created or replaced, is not a
// directory, and no two outputs, and no output and input, are the same file.
func checkOutputs(c *cli.Context, flags ...string) ([]output, error) {
	var outs []output
	for _, flag := range flags {
		path := c.String(flag)
		if path == "" {
			continue
		}
		real, err := checkOutput(path)
		if err != nil {
			return nil, clikit.Failf("--%s %s: %v", flag, path, err)
		}
		o := output{flag: "--" + flag, path: path, real: real}
		for _, prev := range outs {
			if sameFile(prev.real, o.real) {
				return nil, clikit.Failf("%s %s and %s %s are the same file: give each output its own file", prev.flag, prev.path, o.flag, o.path)
			}
		}
		for _, in := range inputFlags {
			if p := c.String(in); p != "" && sameFile(resolve(p), o.real) {
				return nil, clikit.Failf("%s %s is the file given to --%s: writing it would destroy an input; give another file", o.flag, o.path, in)
			}
		}
		outs = append(outs, o)
	}
	return outs, nil
}

func checkOutput(path string) (string, error) {
	if strings.HasSuffix(path, string(filepath.Separator)) || strings.HasSuffix(path, "/") {
		return "", errors.New("is a directory: give a file name")
	}
	real := resolve(path)
	dir := filepath.Dir(real)
	st, err := os.Stat(dir)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return "", fmt.Errorf("directory %s does not exist: create it first", filepath.Dir(path))
	case err != nil:
		return "", fmt.Errorf("directory %s: %v", filepath.Dir(path), err)
	case !st.IsDir():
		return "", fmt.Errorf("%s is not a directory", filepath.Dir(path))
	}
	if err := accessible(dir, true); err != nil {
		return "", fmt.Errorf("directory %s is not writable (%v): give a file in a directory you may write", filepath.Dir(path), err)
	}
	st, err = os.Stat(real)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return real, nil
	case err != nil:
		return "", err
	case st.IsDir():
		return "", errors.New("is a directory: give a file name")
	case !st.Mode().IsRegular():
		return "", fmt.Errorf("is not a regular file (%s): give a file name", st.Mode().Type())
	}
	if err := accessible(real, false); err != nil {
		return "", fmt.Errorf("the file is not writable (%v)", err)
	}
	return real, nil
}

// resolve makes path absolute and resolves the symbolic links of it (when it exists) or of its
// directory.
func resolve(path string) string {
	abs, err := filepath.Abs(path)
	if err != nil {
		return filepath.Clean(path)
	}
	if r, err := filepath.EvalSymlinks(abs); err == nil {
		return r
	}
	if d, err := filepath.EvalSymlinks(filepath.Dir(abs)); err == nil {
		return filepath.Join(d, filepath.Base(abs))
	}
	return abs
}

// sameFile reports whether a and b (resolved) name one file: the same path, or hard links.
func sameFile(a, b string) bool {
	if a == b {
		return true
	}
	sa, errA := os.Stat(a)
	sb, errB := os.Stat(b)
	return errA == nil && errB == nil && os.SameFile(sa, sb)
}

// writeOutputs writes data[i] to outs[i]: all to temporary files first, then renamed, so an
// error leaves every output as it was. An output keeps the permissions of the file it replaces
// (0644 for a new one).
func writeOutputs(outs []output, data [][]byte) error {
	files := make([]*atomicfile.File, 0, len(outs))
	defer func() {
		for _, f := range files {
			f.Discard()
		}
	}()
	for i, o := range outs {
		mode := fs.FileMode(0o644)
		if st, err := os.Stat(o.real); err == nil {
			mode = st.Mode().Perm()
		}
		f, err := atomicfile.Create(o.real, mode)
		if err != nil {
			return clikit.Failf("%s %s: %v (nothing written)", o.flag, o.path, err)
		}
		files = append(files, f)
		if _, err = f.Write(data[i]); err == nil {
			err = f.Finish()
		}
		if err != nil {
			return clikit.Failf("%s %s: write: %v (nothing written)", o.flag, o.path, err)
		}
	}
	for i, o := range outs {
		if err := files[i].Replace(); err != nil {
			return clikit.Failf("%s %s: %v", o.flag, o.path, err)
		}
	}
	return nil
}

// openReport is the start of a command that writes one report (--format, --out) from both
// clusters: the format and the output are checked before any cluster is contacted.
func openReport(c *cli.Context) (report.Format, []output, *clikit.Session, error) {
	format, err := report.ParseFormat(c.String("format"))
	if err != nil {
		return format, nil, nil, clikit.Failf("--format: %w", err)
	}
	outs, err := checkOutputs(c, "out")
	if err != nil {
		return format, nil, nil, err
	}
	conn, err := clikit.Open(c)
	return format, outs, conn, err
}
