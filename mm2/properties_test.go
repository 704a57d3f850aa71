package mm2

import (
	"errors"
	"strings"
	"testing"
)

func TestParseProperties(t *testing.T) {
	t.Parallel()
	type kv struct {
		key, value string
		line       int
	}
	tests := []struct {
		name string
		in   string
		want []kv
	}{
		{"equals", "a=b", []kv{{"a", "b", 1}}},
		{"colon", "a:b", []kv{{"a", "b", 1}}},
		{"whitespace separator", "a   b c", []kv{{"a", "b c", 1}}},
		{"blanks around the separator", "  a  =  b  ", []kv{{"a", "b  ", 1}}},
		{"separator after blanks", "a \t: b", []kv{{"a", "b", 1}}},
		{"only the first separator counts", "a=b=c:d", []kv{{"a", "b=c:d", 1}}},
		{"empty value", "a=\nb\n", []kv{{"a", "", 1}, {"b", "", 2}}},
		{"comments at line start", "# c\n  ! c\na=1\n", []kv{{"a", "1", 3}}},
		{"a # in a value is part of it", "a=true # on", []kv{{"a", "true # on", 1}}},
		{"continuation drops leading blanks", "a=x,\\\n    y,\\\n\tz\nb=2", []kv{{"a", "x,y,z", 1}, {"b", "2", 4}}},
		{"a comment sign on a continued line is data", "a=x\\\n#y", []kv{{"a", "x#y", 1}}},
		{"even backslashes do not continue", "a=x\\\\\nb=y", []kv{{"a", `x\`, 1}, {"b", "y", 2}}},
		{"a comment line does not continue", "# x\\\na=1", []kv{{"a", "1", 2}}},
		{"backslash at end of file", "a=x\\", []kv{{"a", "x", 1}}},
		{"escapes", `a=\t\n\r\f\:\=\\\q`, []kv{{"a", "\t\n\r\f:=\\q", 1}}},
		{"unicode escape", `a=caf\u00e9 \u20AC`, []kv{{"a", "café €", 1}}},
		{"surrogate pair", `a=\ud83d\ude00`, []kv{{"a", "😀", 1}}},
		{"escaped separators in the key", `a\=b\:c\ d=e`, []kv{{"a=b:c d", "e", 1}}},
		{"CRLF and CR", "a=1\r\nb=2\rc=3", []kv{{"a", "1", 1}, {"b", "2", 2}, {"c", "3", 3}}},
		{"duplicate: last wins", "a=1\nb=2\na=3", []kv{{"a", "3", 3}, {"b", "2", 2}}},
		{"blank continuation ends the line", "a=x\\\n   \nb=y", []kv{{"a", "x", 1}, {"b", "y", 3}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p, err := ParseProperties(strings.NewReader(tt.in))
			if err != nil {
				t.Fatalf("ParseProperties: %v", err)
			}
			if got, want := p.Len(), len(tt.want); got != want {
				t.Fatalf("keys: got %d %+v, want %d", got, p.All(), want)
			}
			for _, w := range tt.want {
				v, ok := p.Get(w.key)
				if !ok || v != w.value || p.Line(w.key) != w.line {
					t.Errorf("%q: got %q (set %v) on line %d, want %q on line %d", w.key, v, ok, p.Line(w.key), w.value, w.line)
				}
			}
		})
	}
}

func TestParsePropertiesDuplicateWarning(t *testing.T) {
	t.Parallel()
	p, err := ParseProperties(strings.NewReader("a=1\n\na=2\n"))
	if err != nil {
		t.Fatal(err)
	}
	if len(p.Warnings) != 1 || p.Warnings[0].Line != 1 || p.Warnings[0].Key != "a" || !strings.Contains(p.Warnings[0].Message, "line 3") {
		t.Fatalf("warnings: got %+v, want one for a on line 1 naming line 3", p.Warnings)
	}
}

func TestParsePropertiesErrors(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name     string
		in       string
		wantLine int
	}{
		{"short unicode escape", "a=1\nb=\\u12", 2},
		{"bad hex", "x\\u00zz=1", 1},
		{"continued bad escape", "a=1\nb=x\\\n  \\u00G0", 2},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := ParseProperties(strings.NewReader(tt.in))
			var le *LineError
			if !errors.As(err, &le) || le.Line != tt.wantLine {
				t.Fatalf("got %v, want a LineError on line %d", err, tt.wantLine)
			}
		})
	}
}

func FuzzParseProperties(f *testing.F) {
	for _, s := range []string{"a=b", "a\\\n b", `\u00e9=\uD83D\uDE00`, "#x\n!y\n a : b \\\r\n c", "a=\\u", "\\", "=", ":x", "a b\\\\\n"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, in string) {
		p, err := ParseProperties(strings.NewReader(in))
		if err != nil {
			var le *LineError
			if !errors.As(err, &le) || le.Line < 1 {
				t.Fatalf("error without a line: %v", err)
			}
			return
		}
		for _, pr := range p.All() {
			if pr.Line < 1 {
				t.Fatalf("key %q on line %d", pr.Key, pr.Line)
			}
		}
		// Parse and Lint never panic either.
		_, _ = Parse(strings.NewReader(in))
		_, _ = Lint(strings.NewReader(in))
	})
}
