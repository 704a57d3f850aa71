package docs_test

import (
	"bufio"
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// tools are the binaries whose command lines the documents show.
var tools = []string{"kverify", "kreconcile", "kmirror"}

// shown is one command line of a document: where it is and its words, the tool first.
type shown struct {
	where string
	words []string
}

// TestDocCommands checks every kverify, kreconcile and kmirror command line that README.md and
// docs/*.md show: its subcommand exists and every flag it passes is one that subcommand's
// --help lists. Command lines are read from fenced code blocks (in a block that has "$ "
// lines, those lines only, the rest being output; in other blocks, every line that starts
// with a tool's name; blocks marked ```text are output and skipped) and from inline code
// spans that start with a tool's name. A doc that shows a flag or subcommand the binary does
// not have fails here.
func TestDocCommands(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the three binaries")
	}
	bin := t.TempDir()
	build := exec.Command("go", "build", "-o", bin+string(filepath.Separator), "./cmd/kverify", "./cmd/kreconcile", "./cmd/kmirror")
	build.Dir = ".."
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	files, err := filepath.Glob("*.md")
	if err != nil {
		t.Fatal(err)
	}
	files = append([]string{"../README.md"}, files...)
	helps := map[string]*help{}
	checked := 0
	for _, f := range files {
		for _, c := range commandsIn(t, f) {
			checked++
			checkCommand(t, bin, helps, c)
		}
	}
	if checked < 40 {
		t.Fatalf("checked %d command lines; the documents show many more: is the extraction broken?", checked)
	}
	t.Logf("%d command lines checked in %d files", checked, len(files))
}

// help is what "tool sub... --help" lists: its subcommands and its flags (without dashes).
type help struct {
	commands map[string]bool
	flags    map[string]bool
}

var (
	helpCommandRE = regexp.MustCompile(`^ {3}([a-z][a-z0-9-]*(?:, [a-z][a-z0-9-]*)*)(?:\s{2,}|$)`)
	helpFlagRE    = regexp.MustCompile(`(?:^|[\s,])--?([a-zA-Z0-9][a-zA-Z0-9-]*)`)
)

// helpOf runs bin/tool sub... --help once per command and parses it; nil when the command
// does not exist.
func helpOf(bin string, cache map[string]*help, path []string) *help {
	key := strings.Join(path, " ")
	if h, ok := cache[key]; ok {
		return h
	}
	out, err := exec.Command(filepath.Join(bin, path[0]), append(path[1:], "--help")...).CombinedOutput()
	if err != nil || bytes.Contains(out, []byte("No help topic")) {
		cache[key] = nil
		return nil
	}
	h := &help{commands: map[string]bool{}, flags: map[string]bool{"help": true, "h": true}}
	section := ""
	for _, line := range strings.Split(string(out), "\n") {
		if strings.HasSuffix(line, ":") && !strings.HasPrefix(line, " ") {
			section = line
			continue
		}
		switch {
		case section == "COMMANDS:":
			if m := helpCommandRE.FindStringSubmatch(line); m != nil {
				for _, name := range strings.Split(m[1], ", ") {
					h.commands[name] = true
				}
			}
		case strings.HasSuffix(section, "OPTIONS:"):
			spec := strings.TrimSpace(line)
			if !strings.HasPrefix(spec, "-") {
				continue // a group title such as "Connection (source)"
			}
			spec, _, _ = strings.Cut(spec, "  ") // the flag names, before the usage
			for _, m := range helpFlagRE.FindAllStringSubmatch(spec, -1) {
				h.flags[m[1]] = true
			}
		}
	}
	cache[key] = h
	return h
}

// checkCommand walks the subcommands of c, then checks each flag against the help of the
// command it reached.
func checkCommand(t *testing.T, bin string, helps map[string]*help, c shown) {
	t.Helper()
	path := []string{c.words[0]}
	h := helpOf(bin, helps, path)
	if h == nil {
		t.Fatalf("%s --help failed", c.words[0])
	}
	args := c.words[1:]
	for len(args) > 0 && !strings.HasPrefix(args[0], "-") && args[0] != "..." {
		if !h.commands[args[0]] {
			if len(path) == 1 {
				t.Errorf("%s: %s has no command %q (shown: %s)", c.where, path[0], args[0], strings.Join(c.words, " "))
				return
			}
			break // an operand, such as a file name
		}
		path = append(path, args[0])
		args = args[1:]
		if h = helpOf(bin, helps, path); h == nil {
			t.Errorf("%s: %s --help failed (shown: %s)", c.where, strings.Join(path, " "), strings.Join(c.words, " "))
			return
		}
	}
	for _, a := range args {
		name, ok := strings.CutPrefix(a, "--")
		if !ok {
			if name, ok = strings.CutPrefix(a, "-"); !ok || name == "" {
				continue // an operand or a flag's value
			}
		}
		name, _, _ = strings.Cut(name, "=")
		if name == "" || strings.ContainsAny(name, "*[]") {
			continue // "--" alone, or a placeholder such as --source-sasl-*
		}
		if !h.flags[name] {
			t.Errorf("%s: %s has no flag %s (shown: %s)", c.where, strings.Join(path, " "), a, strings.Join(c.words, " "))
		}
	}
}

var inlineRE = regexp.MustCompile("`([^`]+)`")

// commandsIn returns the command lines of one Markdown file.
func commandsIn(t *testing.T, file string) []shown {
	t.Helper()
	b, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	var (
		out     []shown
		prose   strings.Builder // the text outside fenced blocks, for inline spans
		block   []string
		blockAt int
		info    string
		inBlock bool
	)
	lines := []string{}
	sc := bufio.NewScanner(bytes.NewReader(b))
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		lines = append(lines, sc.Text())
	}
	for i, line := range lines {
		trimmed := strings.TrimSpace(line)
		if strings.HasPrefix(trimmed, "```") {
			if !inBlock {
				inBlock, info, block, blockAt = true, strings.TrimPrefix(trimmed, "```"), nil, i+2
			} else {
				inBlock = false
				if info != "text" {
					out = append(out, blockCommands(file, blockAt, block)...)
				}
			}
			prose.WriteString("\n")
			continue
		}
		if inBlock {
			block = append(block, line)
			prose.WriteString("\n")
			continue
		}
		prose.WriteString(line + "\n")
	}
	text := prose.String()
	for _, m := range inlineRE.FindAllStringSubmatchIndex(text, -1) {
		span := strings.Join(strings.Fields(text[m[2]:m[3]]), " ")
		if words := commandWords(span); len(words) > 1 {
			at := strings.Count(text[:m[0]], "\n") + 1
			out = append(out, shown{where: fmt.Sprintf("%s:%d", file, at), words: words})
		}
	}
	return out
}

// blockCommands returns the command lines of a fenced block whose first line is line first
// of file.
func blockCommands(file string, first int, block []string) []shown {
	transcript := false
	for _, l := range block {
		if strings.HasPrefix(l, "$ ") {
			transcript = true
		}
	}
	var out []shown
	for i := 0; i < len(block); i++ {
		at := first + i
		l := block[i]
		if transcript {
			var ok bool
			if l, ok = strings.CutPrefix(l, "$ "); !ok {
				continue
			}
		}
		for strings.HasSuffix(l, `\`) && i+1 < len(block) {
			i++
			l = strings.TrimSuffix(l, `\`) + " " + strings.TrimSpace(block[i])
		}
		if words := commandWords(strings.TrimSpace(l)); words != nil {
			out = append(out, shown{where: fmt.Sprintf("%s:%d", file, at), words: words})
		}
	}
	return out
}

// commandWords splits a command line into words as a shell would (quotes; the line ends at an
// unquoted |, ;, &&, # or a redirection), when its first word is one of the tools; else nil.
// A tool followed by a colon ("kverify: round 1") is output, not a command.
func commandWords(line string) []string {
	first, _, _ := strings.Cut(line, " ")
	isTool := false
	for _, tool := range tools {
		isTool = isTool || first == tool
	}
	if !isTool {
		return nil
	}
	var (
		words []string
		cur   strings.Builder
		quote rune
		inTok bool
	)
	flush := func() {
		if inTok {
			words = append(words, cur.String())
		}
		cur.Reset()
		inTok = false
	}
	for _, r := range line {
		switch {
		case quote != 0:
			if r == quote {
				quote = 0
			} else {
				cur.WriteRune(r)
			}
		case r == '\'' || r == '"':
			quote, inTok = r, true
		case r == ' ' || r == '\t':
			flush()
		case !inTok && strings.ContainsRune("|;&#<>", r):
			flush()
			return words
		case r == '>' && isDigits(cur.String()):
			return words // 2>&1, 2>file
		default:
			cur.WriteRune(r)
			inTok = true
		}
	}
	flush()
	return words
}

func isDigits(s string) bool {
	return s != "" && strings.Trim(s, "0123456789") == ""
}
