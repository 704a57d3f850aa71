package mm2

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"strings"
	"unicode/utf16"
	"unicode/utf8"
)

// Property is one key of a Java properties file with its unescaped value and the line on which
// its logical line starts.
type Property struct {
	Key   string
	Value string
	Line  int
	// Raw is the value as written (continuations joined), before unescaping.
	Raw string
}

// Properties is a parsed Java properties file. When a key appears twice the last one wins, as
// with java.util.Properties, and the earlier one is reported in Warnings.
type Properties struct {
	list     []Property // in file order, one entry per key (the winning one, at its first position)
	index    map[string]int
	Warnings []Warning
}

// Get returns the value of key and whether the file sets it.
func (p *Properties) Get(key string) (string, bool) {
	i, ok := p.index[key]
	if !ok {
		return "", false
	}
	return p.list[i].Value, true
}

// Line returns the line of key, or 0 when the file does not set it.
func (p *Properties) Line(key string) int {
	if i, ok := p.index[key]; ok {
		return p.list[i].Line
	}
	return 0
}

// All returns every property in file order (the winning occurrence of a duplicated key).
func (p *Properties) All() []Property { return append([]Property(nil), p.list...) }

// Len is the number of distinct keys.
func (p *Properties) Len() int { return len(p.list) }

// Input limits. A real mm2.properties is a few KiB, with inline PEM certificates a few tens of
// KiB; these bounds keep a wrong file (a log, a device, a pipe that never ends) from
// exhausting memory, and are an error naming the line where they were crossed.
const (
	// MaxFileSize bounds a whole properties file: 4 MiB.
	MaxFileSize = 4 << 20
	// MaxLineSize bounds one line, also a logical line joined from continuations: 1 MiB.
	MaxLineSize = 1 << 20
)

// LimitError is input beyond MaxFileSize or MaxLineSize. It comes wrapped in a *LineError
// that names the line.
type LimitError struct {
	What  string // "file" or "line"
	Limit int    // bytes
}

func (e *LimitError) Error() string {
	if e.What == "file" {
		return fmt.Sprintf("the file is larger than %d MiB, the limit for an MM2 properties file (real ones are a few KiB): is this the right file?", e.Limit>>20)
	}
	return fmt.Sprintf("the line is longer than %d MiB, the limit for one line of an MM2 properties file: is this the right file?", e.Limit>>20)
}

// readBounded reads r up to MaxFileSize. Beyond, the error names the line that crosses it.
func readBounded(r io.Reader) ([]byte, error) {
	data, err := io.ReadAll(io.LimitReader(r, MaxFileSize+1))
	if err != nil {
		return nil, err
	}
	if len(data) > MaxFileSize {
		return nil, &LineError{Line: bytes.Count(data[:MaxFileSize], []byte("\n")) + 1, Err: &LimitError{What: "file", Limit: MaxFileSize}}
	}
	return data, nil
}

// ParseProperties reads r with the rules of java.util.Properties.load: "=", ":" or whitespace
// separate key and value; a line ending in an odd number of backslashes continues on the next
// line, whose leading whitespace is dropped; "#" and "!" start a comment only as the first
// non-blank character of a line; \t \n \r \f \uXXXX and backslash before any other character
// are escapes. The input is read as UTF-8 (MM2 reads ISO-8859-1; Lint flags non-ASCII bytes).
// A malformed \u escape is an error naming the line and the key, never quoting the value.
// Input beyond MaxFileSize or a line beyond MaxLineSize is an error too (a *LimitError in a
// *LineError).
func ParseProperties(r io.Reader) (*Properties, error) {
	data, err := readBounded(r)
	if err != nil {
		var le *LineError
		if errors.As(err, &le) {
			return nil, err
		}
		return nil, fmt.Errorf("read properties: %w", err)
	}
	return parseProperties(data)
}

func parseProperties(data []byte) (*Properties, error) {
	p := &Properties{index: map[string]int{}}
	sc := bufio.NewScanner(bytes.NewReader(data))
	sc.Buffer(make([]byte, 64<<10), MaxLineSize+2)
	sc.Split(scanLines)
	lineNo := 0
	var (
		logical   strings.Builder
		startLine int
		continued bool
	)
	tooLong := func(line int) error {
		return &LineError{Line: line, Err: &LimitError{What: "line", Limit: MaxLineSize}}
	}
	for sc.Scan() {
		lineNo++
		raw := sc.Text()
		if len(raw) > MaxLineSize {
			return nil, tooLong(lineNo)
		}
		line := strings.TrimLeft(raw, " \t\f")
		if !continued {
			if line == "" || line[0] == '#' || line[0] == '!' {
				continue
			}
			startLine = lineNo
		}
		if continuesLine(line) {
			logical.WriteString(line[:len(line)-1])
			continued = true
			if logical.Len() > MaxLineSize {
				return nil, tooLong(startLine)
			}
			continue
		}
		logical.WriteString(line)
		continued = false
		if logical.Len() > MaxLineSize {
			return nil, tooLong(startLine)
		}
		if err := p.addLine(logical.String(), startLine); err != nil {
			return nil, err
		}
		logical.Reset()
	}
	if err := sc.Err(); err != nil {
		if errors.Is(err, bufio.ErrTooLong) {
			return nil, tooLong(lineNo + 1)
		}
		return nil, fmt.Errorf("read properties: %w", err)
	}
	if continued { // a backslash on the last line: Java keeps what it has
		if err := p.addLine(logical.String(), startLine); err != nil {
			return nil, err
		}
	}
	return p, nil
}

// scanLines splits on \n, \r\n and a lone \r, as Java's LineReader does.
func scanLines(data []byte, atEOF bool) (int, []byte, error) {
	for i, c := range data {
		switch c {
		case '\n':
			return i + 1, data[:i], nil
		case '\r':
			if i+1 < len(data) {
				if data[i+1] == '\n' {
					return i + 2, data[:i], nil
				}
				return i + 1, data[:i], nil
			}
			if atEOF {
				return i + 1, data[:i], nil
			}
			return 0, nil, nil // need one more byte to tell \r from \r\n
		}
	}
	if atEOF && len(data) > 0 {
		return len(data), data, nil
	}
	return 0, nil, nil
}

// continuesLine reports whether line ends with an odd number of backslashes.
func continuesLine(line string) bool {
	n := 0
	for i := len(line) - 1; i >= 0 && line[i] == '\\'; i-- {
		n++
	}
	return n%2 == 1
}

func (p *Properties) addLine(s string, line int) error {
	// The key ends at the first unescaped '=', ':' or whitespace.
	keyEnd := len(s)
	valStart := len(s)
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c == '\\' {
			i++
			continue
		}
		if c == '=' || c == ':' {
			keyEnd, valStart = i, i+1
			break
		}
		if c == ' ' || c == '\t' || c == '\f' {
			keyEnd = i
			j := i
			for j < len(s) && (s[j] == ' ' || s[j] == '\t' || s[j] == '\f') {
				j++
			}
			if j < len(s) && (s[j] == '=' || s[j] == ':') {
				j++
			}
			valStart = j
			break
		}
	}
	for valStart < len(s) && (s[valStart] == ' ' || s[valStart] == '\t' || s[valStart] == '\f') {
		valStart++
	}
	key, err := unescape(s[:keyEnd])
	if err != nil {
		return &LineError{Line: line, Err: fmt.Errorf("in the key: %w (the line is not shown: it may hold a secret)", err)}
	}
	value, err := unescape(s[valStart:])
	if err != nil {
		return &LineError{Line: line, Key: key, Err: fmt.Errorf("in the value of %s: %w (the value is not shown: it may hold a secret)", key, err)}
	}
	if i, ok := p.index[key]; ok {
		prev := p.list[i]
		p.Warnings = append(p.Warnings, Warning{
			Line:    prev.Line,
			Key:     key,
			Message: fmt.Sprintf("duplicate key: line %d sets it again and wins", line),
			sev:     SeverityWarning,
		})
		p.list[i] = Property{Key: key, Value: value, Line: line, Raw: s[valStart:]}
		return nil
	}
	p.index[key] = len(p.list)
	p.list = append(p.list, Property{Key: key, Value: value, Line: line, Raw: s[valStart:]})
	return nil
}

func unescape(s string) (string, error) {
	if !strings.Contains(s, `\`) {
		return s, nil
	}
	var b strings.Builder
	b.Grow(len(s))
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c != '\\' {
			b.WriteByte(c)
			continue
		}
		i++
		if i >= len(s) {
			break // a trailing lone backslash is dropped, as Java does
		}
		switch c = s[i]; c {
		case 't':
			b.WriteByte('\t')
		case 'n':
			b.WriteByte('\n')
		case 'r':
			b.WriteByte('\r')
		case 'f':
			b.WriteByte('\f')
		case 'u':
			r, err := hex4(s, i+1)
			if err != nil {
				return "", err
			}
			i += 4
			// A UTF-16 surrogate pair written as two escapes is one character, as in Java.
			if utf16.IsSurrogate(r) && strings.HasPrefix(s[i+1:], `\u`) {
				if lo, err := hex4(s, i+3); err == nil {
					if c := utf16.DecodeRune(r, lo); c != utf8.RuneError {
						r = c
						i += 6
					}
				}
			}
			if !utf8.ValidRune(r) {
				r = utf8.RuneError // a lone surrogate half
			}
			b.WriteRune(r)
		default:
			if c < utf8.RuneSelf {
				b.WriteByte(c)
				continue
			}
			_, size := utf8.DecodeRuneInString(s[i:])
			b.WriteString(s[i : i+size])
			i += size - 1
		}
	}
	return b.String(), nil
}

// hex4 reads the four hex digits of a \uXXXX escape starting at s[at]. Its error gives the
// position of the escape only: the text may be a secret.
func hex4(s string, at int) (rune, error) {
	if at+4 > len(s) {
		return 0, fmt.Errorf(`malformed \uXXXX escape at character %d: \u needs four hex digits, the text ends first`, utf8.RuneCountInString(s[:at-2])+1)
	}
	var r rune
	for _, h := range []byte(s[at : at+4]) {
		d, ok := hexDigit(h)
		if !ok {
			return 0, fmt.Errorf(`malformed \uXXXX escape at character %d: \u needs four hex digits (0-9, a-f); write a literal backslash as \\`, utf8.RuneCountInString(s[:at-2])+1)
		}
		r = r<<4 | d
	}
	return r, nil
}

func hexDigit(c byte) (rune, bool) {
	switch {
	case c >= '0' && c <= '9':
		return rune(c - '0'), true
	case c >= 'a' && c <= 'f':
		return rune(c-'a') + 10, true
	case c >= 'A' && c <= 'F':
		return rune(c-'A') + 10, true
	}
	return 0, false
}

// LineError is a syntax error of a properties file at Line (and Key, when it is known).
type LineError struct {
	Line int
	Key  string
	Err  error
}

func (e *LineError) Error() string { return fmt.Sprintf("line %d: %v", e.Line, e.Err) }
func (e *LineError) Unwrap() error { return e.Err }
