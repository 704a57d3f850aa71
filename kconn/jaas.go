package kconn

import (
	"errors"
	"fmt"
	"strings"
)

// Login modules of sasl.jaas.config that kmigrate understands.
const (
	PlainLoginModule = "org.apache.kafka.common.security.plain.PlainLoginModule"
	ScramLoginModule = "org.apache.kafka.common.security.scram.ScramLoginModule"
)

// JAAS is one parsed sasl.jaas.config: LoginModule flag key=value ... ;
type JAAS struct {
	Module  string
	Flag    string
	Options map[string]string
	Order   []string // option names in the order written
}

// knownJAASModules are the login modules an error may name: any other first word of a
// sasl.jaas.config might be a password written in the wrong place.
var knownJAASModules = map[string]bool{
	PlainLoginModule: true,
	ScramLoginModule: true,
	"org.apache.kafka.common.security.oauthbearer.OAuthBearerLoginModule": true,
	"com.sun.security.auth.module.Krb5LoginModule":                        true,
}

// knownJAASOptions are the option names an error may name: after an unquoted value with a
// blank in it, the next "option name" is the rest of that value.
var knownJAASOptions = map[string]bool{
	"username": true, "password": true, "serviceName": true, "useKeyTab": true, "keyTab": true,
	"principal": true, "storeKey": true, "useTicketCache": true, "debug": true, "tokenauth": true,
	"unsecuredLoginStringClaim_sub": true, "clientId": true, "clientSecret": true, "scope": true,
}

// moduleName is the login module for an error message: its class name when it is one Kafka
// ships, else a description that quotes nothing.
func moduleName(m string) string {
	if knownJAASModules[m] {
		return m
	}
	return "(not shown: sasl.jaas.config holds a password, and this class is not one Kafka ships)"
}

// ParseJAAS parses Kafka's single-module JAAS syntax. Errors never quote the text, which holds
// a password: they name only login modules and option names that Kafka knows, and options by
// their position otherwise.
func ParseJAAS(s string) (JAAS, error) {
	t := jaasTokenizer{s: s}
	var e JAAS
	tok, kind := t.next()
	if kind != tokWord {
		return e, errors.New("expected a login module class name first")
	}
	e.Module = tok
	tok, kind = t.next()
	if kind != tokWord {
		return e, fmt.Errorf("expected a control flag (required, requisite, sufficient or optional) after the login module %s", moduleName(e.Module))
	}
	switch strings.ToLower(tok) {
	case "required", "requisite", "sufficient", "optional":
		e.Flag = strings.ToLower(tok)
	default:
		return e, fmt.Errorf("the control flag after the login module %s must be required, requisite, sufficient or optional", moduleName(e.Module))
	}
	e.Options = map[string]string{}
	prev := ""
	for n := 1; ; n++ {
		tok, kind = t.next()
		switch kind {
		case tokSemicolon:
			if _, k := t.next(); k != tokEOF {
				return e, errors.New("more than one login module, or text after the \";\"; Kafka allows exactly one module in sasl.jaas.config")
			}
			return e, nil
		case tokEOF:
			return e, errors.New(`missing ";" at the end`)
		case tokWord:
		default:
			return e, fmt.Errorf("expected the name of option %d%s", n, after(prev))
		}
		name := tok
		what := fmt.Sprintf("option %d%s", n, after(prev))
		if knownJAASOptions[name] {
			what = "option " + name
		}
		if _, k := t.next(); k != tokEquals {
			return e, fmt.Errorf("%s: expected \"=\"; quote values that contain blanks or any of = ; ' \" (password=\"...\")", what)
		}
		val, k := t.next()
		if k != tokWord && k != tokQuoted {
			if k == tokBadQuote {
				return e, fmt.Errorf("%s: unterminated quoted value", what)
			}
			return e, fmt.Errorf("%s: expected a value", what)
		}
		e.Options[name] = val
		e.Order = append(e.Order, name)
		prev = name
		if !knownJAASOptions[name] {
			prev = ""
		}
	}
}

// after names the previous option for an error, when it is one Kafka knows.
func after(prev string) string {
	if prev == "" {
		return ""
	}
	return " (after " + prev + ")"
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
