package testkit

import (
	"fmt"
	"os/exec"
	"strings"
	"testing"
)

// BuildCommands builds kmigrate's commands named (kverify, kreconcile, kmirror) into dir with
// go build and flags (given before -o); the error carries go's output. It needs no test, for
// a TestMain.
func BuildCommands(dir string, flags []string, names ...string) error {
	args := append(append([]string{"build"}, flags...), "-o", dir+"/")
	for _, n := range names {
		args = append(args, "github.com/kmigrate/kmigrate/cmd/"+n)
	}
	if out, err := exec.Command("go", args...).CombinedOutput(); err != nil {
		return fmt.Errorf("go build %s: %v\n%s", strings.Join(names, " "), err, out)
	}
	return nil
}

// Commands builds the commands named into a temporary directory of the test and returns it;
// an error fails the test.
func Commands(t testing.TB, names ...string) string {
	t.Helper()
	dir := t.TempDir()
	if err := BuildCommands(dir, nil, names...); err != nil {
		t.Fatal(err)
	}
	return dir
}
