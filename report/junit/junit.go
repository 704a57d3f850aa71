package junit

import (
	"encoding/xml"
	"fmt"
	"io"
	"strconv"
	"strings"
	"unicode/utf8"
)

// Suites is the document root, <testsuites>. Its counts are the sums over its suites; call
// Total (Write does) to fill them in.
type Suites struct {
	XMLName  xml.Name `xml:"testsuites"`
	Name     string   `xml:"name,attr,omitempty"`
	Tests    int      `xml:"tests,attr"`
	Failures int      `xml:"failures,attr"`
	Errors   int      `xml:"errors,attr"`
	// Skipped is not written: the Jenkins schema (junit-10.xsd) that CI systems validate
	// against has no skipped attribute on <testsuites>; each suite carries its own.
	Skipped int     `xml:"-"`
	Time    Seconds `xml:"time,attr"`
	Suites  []Suite `xml:"testsuite"`
}

// Suite is one <testsuite>. The element order follows the Jenkins/Ant schema: properties,
// testcases, system-out, system-err.
type Suite struct {
	Name       string      `xml:"name,attr"`
	Tests      int         `xml:"tests,attr"`
	Failures   int         `xml:"failures,attr"`
	Errors     int         `xml:"errors,attr"`
	Skipped    int         `xml:"skipped,attr"`
	Time       Seconds     `xml:"time,attr"`
	Timestamp  string      `xml:"timestamp,attr,omitempty"`
	Properties *Properties `xml:"properties"`
	Cases      []Case      `xml:"testcase"`
	SystemOut  *Output     `xml:"system-out"`
	SystemErr  *Output     `xml:"system-err"`
}

// Output is the text of a <system-out> or <system-err>, written as CDATA so it stays readable
// in the file.
type Output struct {
	Text string `xml:",cdata"`
}

// Text returns an Output for s, or nil when s is empty, so the element is left out.
func Text(s string) *Output {
	if s == "" {
		return nil
	}
	return &Output{Text: s}
}

// Properties is the <properties> element of a suite.
type Properties struct {
	Property []Property `xml:"property"`
}

// Props returns the properties ps, or nil for none, so the element is left out.
func Props(ps ...Property) *Properties {
	if len(ps) == 0 {
		return nil
	}
	return &Properties{Property: ps}
}

// Property is a name/value pair of a suite, e.g. the topics a verification compared.
type Property struct {
	Name  string `xml:"name,attr"`
	Value string `xml:"value,attr"`
}

// Case is one <testcase>. At most one of Failure, Error and Skipped is set; a case with none
// passed.
type Case struct {
	Name      string   `xml:"name,attr"`
	Classname string   `xml:"classname,attr"`
	Time      Seconds  `xml:"time,attr"`
	Skipped   *Skipped `xml:"skipped"`
	Error     *Problem `xml:"error"`
	Failure   *Problem `xml:"failure"`
	SystemOut *Output  `xml:"system-out"`
}

// Problem is a <failure> (the check ran and found something wrong) or an <error> (the check
// could not run). Message is the one-line summary CI systems show; Body carries the detail.
type Problem struct {
	Message string `xml:"message,attr"`
	Type    string `xml:"type,attr,omitempty"`
	Body    string `xml:",cdata"`
}

// Skipped marks a case that did not run, with the reason.
type Skipped struct {
	Message string `xml:"message,attr,omitempty"`
}

// Seconds is a duration in seconds, written with millisecond precision ("0.000").
type Seconds float64

// MarshalXMLAttr implements xml.MarshalerAttr.
func (s Seconds) MarshalXMLAttr(name xml.Name) (xml.Attr, error) {
	return xml.Attr{Name: name, Value: strconv.FormatFloat(float64(s), 'f', 3, 64)}, nil
}

// UnmarshalXMLAttr implements xml.UnmarshalerAttr.
func (s *Seconds) UnmarshalXMLAttr(a xml.Attr) error {
	if a.Value == "" {
		*s = 0
		return nil
	}
	f, err := strconv.ParseFloat(a.Value, 64)
	if err != nil {
		return fmt.Errorf("time attribute %q: %w", a.Value, err)
	}
	*s = Seconds(f)
	return nil
}

// Total recomputes every count from the cases, so the numbers always agree with the content.
func (ss *Suites) Total() {
	ss.Tests, ss.Failures, ss.Errors, ss.Skipped, ss.Time = 0, 0, 0, 0, 0
	for i := range ss.Suites {
		s := &ss.Suites[i]
		s.Tests, s.Failures, s.Errors, s.Skipped = len(s.Cases), 0, 0, 0
		var t Seconds
		for _, c := range s.Cases {
			switch {
			case c.Failure != nil:
				s.Failures++
			case c.Error != nil:
				s.Errors++
			case c.Skipped != nil:
				s.Skipped++
			}
			t += c.Time
		}
		if s.Time < t {
			s.Time = t
		}
		ss.Tests += s.Tests
		ss.Failures += s.Failures
		ss.Errors += s.Errors
		ss.Skipped += s.Skipped
		ss.Time += s.Time
	}
}

// Write fills in the counts and writes ss as an indented XML document with its declaration.
// Characters XML cannot carry (most control characters, which test output may hold) become
// U+FFFD, so the document always parses.
func Write(w io.Writer, ss *Suites) error {
	ss.Total()
	ss.sanitize()
	if _, err := io.WriteString(w, xml.Header); err != nil {
		return err
	}
	enc := xml.NewEncoder(w)
	enc.Indent("", "  ")
	if err := enc.Encode(ss); err != nil {
		return fmt.Errorf("encode junit xml: %w", err)
	}
	_, err := io.WriteString(w, "\n")
	return err
}

func (ss *Suites) sanitize() {
	ss.Name = clean(ss.Name)
	for i := range ss.Suites {
		s := &ss.Suites[i]
		s.Name = clean(s.Name)
		if s.Properties != nil {
			for j := range s.Properties.Property {
				p := &s.Properties.Property[j]
				p.Name, p.Value = clean(p.Name), clean(p.Value)
			}
		}
		cleanOut(s.SystemOut)
		cleanOut(s.SystemErr)
		for j := range s.Cases {
			c := &s.Cases[j]
			c.Name, c.Classname = clean(c.Name), clean(c.Classname)
			for _, p := range []*Problem{c.Failure, c.Error} {
				if p != nil {
					p.Message, p.Type, p.Body = clean(p.Message), clean(p.Type), clean(p.Body)
				}
			}
			if c.Skipped != nil {
				c.Skipped.Message = clean(c.Skipped.Message)
			}
			cleanOut(c.SystemOut)
		}
	}
}

func cleanOut(o *Output) {
	if o != nil {
		o.Text = clean(o.Text)
	}
}

// clean replaces what XML 1.0 cannot carry: control characters other than tab, newline and
// carriage return, invalid UTF-8, and U+FFFE/U+FFFF.
func clean(s string) string {
	ok := true
	for _, r := range s {
		if !isXMLChar(r) {
			ok = false
			break
		}
	}
	if ok {
		return s
	}
	return strings.Map(func(r rune) rune {
		if isXMLChar(r) {
			return r
		}
		return '\uFFFD'
	}, strings.ToValidUTF8(s, "\uFFFD"))
}

func isXMLChar(r rune) bool {
	switch {
	case r == '\t' || r == '\n' || r == '\r':
		return true
	case r < 0x20:
		return false
	case r == utf8.RuneError:
		return true // already a replacement (or invalid UTF-8, fixed by ToValidUTF8)
	case r >= 0xD800 && r <= 0xDFFF, r == 0xFFFE, r == 0xFFFF:
		return false
	}
	return r <= 0x10FFFF
}
