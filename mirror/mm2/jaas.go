package mm2

import (
	"errors"
	"fmt"
	"strings"
)

// Login modules of sasl.jaas.config that kmigrate understands.
const (
	plainLoginModule = "org.apache.kafka.common.security.plain.PlainLoginModule"
	scramLoginModule = "org.apache.kafka.common.security.scram.ScramLoginModule"
)

// jaasEntry is one parsed sasl.jaas.config: LoginModule flag key=value ... ;
type jaasEntry struct {
	Module  string
	Flag    string
	Options map[string]string
}

// parseJAAS parses Kafka's single-module JAAS syntax. Errors never quote the text: it holds a
// password.
func parseJAAS(s string) (jaasEntry, error) {
	t := jaasTokenizer{s: s}
	var e jaasEntry
	tok, kind := t.next()
	if kind != tokWord {
		return e, errors.New("expected a login module class name first")
	}
	e.Module = tok
	tok, kind = t.next()
	if kind != tokWord {
		return e, fmt.Errorf("expected a control flag (required, requisite, sufficient or optional) after %s", e.Module)
	}
	switch strings.ToLower(tok) {
	case "required", "requisite", "sufficient", "optional":
		e.Flag = strings.ToLower(tok)
	default:
		return e, fmt.Errorf("control flag after %s must be required, requisite, sufficient or optional", e.Module)
	}
	e.Options = map[string]string{}
	for {
		tok, kind = t.next()
		switch kind {
		case tokSemicolon:
			if rest, k := t.next(); k != tokEOF {
				_ = rest
				return e, errors.New("more than one login module; Kafka allows exactly one in sasl.jaas.config")
			}
			return e, nil
		case tokEOF:
			return e, errors.New(`missing ";" at the end`)
		case tokWord:
		default:
			return e, errors.New("expected an option name")
		}
		name := tok
		if _, k := t.next(); k != tokEquals {
			return e, fmt.Errorf("option %s: expected \"=\"", name)
		}
		val, k := t.next()
		if k != tokWord && k != tokQuoted {
			if k == tokBadQuote {
				return e, fmt.Errorf("option %s: unterminated quoted value", name)
			}
			return e, fmt.Errorf("option %s: expected a value", name)
		}
		e.Options[name] = val
	}
}

type tokKind int

const (
	tokEOF tokKind = iota
	tokWord
	tokQuoted
	tokEquals
	tokSemicolon
	tokBadQuote
	tokOther
)

type jaasTokenizer struct {
	s string
	i int
}

func (t *jaasTokenizer) next() (string, tokKind) {
	for t.i < len(t.s) {
		c := t.s[t.i]
		if c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\f' {
			t.i++
			continue
		}
		if strings.HasPrefix(t.s[t.i:], "//") { // StreamTokenizer comments
			if j := strings.IndexByte(t.s[t.i:], '\n'); j >= 0 {
				t.i += j
			} else {
				t.i = len(t.s)
			}
			continue
		}
		if strings.HasPrefix(t.s[t.i:], "/*") {
			if j := strings.Index(t.s[t.i+2:], "*/"); j >= 0 {
				t.i += j + 4
			} else {
				t.i = len(t.s)
			}
			continue
		}
		break
	}
	if t.i >= len(t.s) {
		return "", tokEOF
	}
	switch c := t.s[t.i]; c {
	case '=':
		t.i++
		return "=", tokEquals
	case ';':
		t.i++
		return ";", tokSemicolon
	case '"', '\'':
		return t.quoted(c)
	}
	start := t.i
	for t.i < len(t.s) {
		c := t.s[t.i]
		if c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\f' || c == '=' || c == ';' || c == '"' || c == '\'' {
			break
		}
		t.i++
	}
	if t.i == start {
		t.i++
		return t.s[start:t.i], tokOther
	}
	return t.s[start:t.i], tokWord
}

func (t *jaasTokenizer) quoted(q byte) (string, tokKind) {
	t.i++
	var b strings.Builder
	for t.i < len(t.s) {
		c := t.s[t.i]
		t.i++
		switch c {
		case q:
			return b.String(), tokQuoted
		case '\\':
			if t.i >= len(t.s) {
				return "", tokBadQuote
			}
			e := t.s[t.i]
			t.i++
			switch e {
			case 'n':
				b.WriteByte('\n')
			case 't':
				b.WriteByte('\t')
			case 'r':
				b.WriteByte('\r')
			default:
				b.WriteByte(e)
			}
		case '\n':
			return "", tokBadQuote // StreamTokenizer ends a quote at a newline
		default:
			b.WriteByte(c)
		}
	}
	return "", tokBadQuote
}
