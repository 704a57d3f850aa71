package docs_test

import (
	"fmt"
	"os"
	"os/exec"
	"slices"
	"strings"
	"testing"
)

const module = "github.com/kmigrate/kmigrate/"

// importGraph is architecture.md's import graph as `go list` gives it now: every package of
// the module with non-test Go files, except the test beds (integration/, deploy/, docs/) and
// the programs under scripts/, each with the module's packages it imports, sorted.
func importGraph(t *testing.T) string {
	t.Helper()
	cmd := exec.Command("go", "list", "-f", `{{.ImportPath}}|{{join .Imports " "}}|{{len .GoFiles}}`, "./...")
	cmd.Dir = ".."
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("go list: %v", err)
	}
	type pkg struct {
		name    string
		imports []string
	}
	var pkgs []pkg
	width := 0
	for _, line := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		f := strings.Split(line, "|")
		name := strings.TrimPrefix(f[0], module)
		if f[2] == "0" || name == "deploy" || name == "docs" || name == "integration" ||
			strings.HasPrefix(name, "integration/") || strings.HasPrefix(name, "scripts/") {
			continue
		}
		var imps []string
		for _, imp := range strings.Fields(f[1]) {
			if rest, ok := strings.CutPrefix(imp, module); ok {
				imps = append(imps, rest)
			}
		}
		slices.Sort(imps)
		pkgs = append(pkgs, pkg{name, imps})
		width = max(width, len(name))
	}
	slices.SortFunc(pkgs, func(a, b pkg) int { return strings.Compare(a.name, b.name) })
	var b strings.Builder
	for _, p := range pkgs {
		to := strings.Join(p.imports, ", ")
		if to == "" {
			to = "(no kmigrate package)"
		}
		fmt.Fprintf(&b, "%-*s -> %s\n", width, p.name, to)
	}
	return b.String()
}

// TestImportGraph: the import graph architecture.md shows is the one the code has.
func TestImportGraph(t *testing.T) {
	doc, err := os.ReadFile("architecture.md")
	if err != nil {
		t.Fatal(err)
	}
	text := string(doc)
	const open = "<!-- import graph: go test ./docs -run TestImportGraph -->\n```text\n"
	i := strings.Index(text, open)
	if i < 0 {
		t.Fatalf("architecture.md has no %q block", strings.TrimSpace(open))
	}
	block := text[i+len(open):]
	block = block[:strings.Index(block, "```")]
	if want := importGraph(t); block != want {
		t.Errorf("architecture.md's import graph is not the code's; replace the block with:\n%s", want)
	}
}
