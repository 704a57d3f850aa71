package clikit

import (
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
)

// complete runs the bash script of bin with the words typed so far (the last one being
// completed) and returns the candidates bash would offer.
func complete(t *testing.T, dir, bin string, words ...string) []string {
	t.Helper()
	script, err := exec.Command(filepath.Join(dir, bin), "completion", "bash").Output()
	if err != nil {
		t.Fatalf("%s completion bash: %v", bin, err)
	}
	quoted := make([]string, len(words))
	for i, w := range words {
		quoted[i] = "'" + w + "'"
	}
	prog := string(script) + "\nCOMP_WORDS=(" + bin + " " + strings.Join(quoted, " ") + ")\nCOMP_CWORD=" +
		strconv.Itoa(len(words)) + "\n_" + bin + "_complete\nprintf '%s\\n' \"${COMPREPLY[@]}\"\n"
	cmd := exec.Command("bash", "--norc", "--noprofile", "-c", prog)
	cmd.Env = append(os.Environ(), "PATH="+dir+string(os.PathListSeparator)+os.Getenv("PATH"))
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("bash completion of %s %v: %v\n%s", bin, words, err, out)
	}
	return strings.Fields(string(out))
}

func TestBashCompletion(t *testing.T) {
	if _, err := exec.LookPath("bash"); err != nil {
		t.Skip("no bash on PATH")
	}
	dir := built(t)
	for _, tc := range []struct {
		bin   string
		words []string
		want  []string
	}{
		{"kverify", []string{""}, []string{"check-evidence", "compare", "completion", "diff", "digest", "merge", "topics"}},
		{"kverify", []string{"d"}, []string{"diff", "digest"}},
		{"kverify", []string{"dig"}, []string{"digest"}},
		{"kverify", []string{"diff", "--to"}, []string{"--topic", "--topics"}},
		{"kreconcile", []string{"gr"}, []string{"groups"}},
		{"kreconcile", []string{"groups", "--app"}, []string{"--apply"}},
		{"kmirror", []string{""}, []string{"completion", "lint", "run"}},
		{"kmirror", []string{"run", "--metr"}, []string{"--metrics-addr"}},
	} {
		got := complete(t, dir, tc.bin, tc.words...)
		slices.Sort(got)
		if !slices.Equal(got, tc.want) {
			t.Errorf("%s %s<TAB>: %v, want %v", tc.bin, strings.Join(tc.words, " "), got, tc.want)
		}
	}
}

func TestCompletionScripts(t *testing.T) {
	dir := built(t)
	for _, b := range binaries {
		for sh, want := range map[string]string{
			"bash": "complete -o bashdefault -o default -F _" + b + "_complete " + b,
			"zsh":  "#compdef " + b,
			"fish": "complete -c " + b,
		} {
			out, err := exec.Command(filepath.Join(dir, b), "completion", sh).Output()
			if err != nil {
				t.Fatalf("%s completion %s: %v", b, sh, err)
			}
			if !strings.Contains(string(out), want) {
				t.Errorf("%s completion %s lacks %q:\n%s", b, sh, want, out)
			}
			if sh == "zsh" {
				if _, err := exec.LookPath("zsh"); err == nil {
					if out, err := exec.Command("zsh", "-n", "-c", string(out)).CombinedOutput(); err != nil {
						t.Errorf("zsh -n on %s's script: %v\n%s", b, err, out)
					}
				}
			}
		}
		if err := exec.Command(filepath.Join(dir, b), "completion", "tcsh").Run(); err == nil {
			t.Errorf("%s completion tcsh: exit 0, want an error for an unknown shell", b)
		}
	}
}
