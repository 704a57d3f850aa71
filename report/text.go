package report

import (
	"fmt"
	"io"
	"strconv"
	"strings"
)

// num writes n with thousands separators (12,345), so counts are read at a glance.
func num(n int64) string {
	s := strconv.FormatInt(n, 10)
	neg := strings.HasPrefix(s, "-")
	if neg {
		s = s[1:]
	}
	var b strings.Builder
	if neg {
		b.WriteByte('-')
	}
	for i, c := range s {
		if i > 0 && (len(s)-i)%3 == 0 {
			b.WriteByte(',')
		}
		b.WriteRune(c)
	}
	return b.String()
}

// plural writes "1 record" or "3 records".
func plural(n int64, one, many string) string {
	if n == 1 {
		return num(n) + " " + one
	}
	return num(n) + " " + many
}

// span writes an inclusive offset range compactly: "7" or "7-9".
func span(from, to int64) string {
	if from == to {
		return strconv.FormatInt(from, 10)
	}
	return strconv.FormatInt(from, 10) + "-" + strconv.FormatInt(to, 10)
}

// window writes the half-open offset window [start, end) that was read as inclusive offsets
// with the count, like every other range in a report: "0-999 (1,000)".
func window(start, end int64) string {
	if end <= start {
		return fmt.Sprintf("none (at %d)", start)
	}
	return fmt.Sprintf("%s (%s)", span(start, end-1), num(end-start))
}

// optOffset writes an offset that may be unknown.
func optOffset(p *int64) string {
	if p == nil {
		return "-"
	}
	return strconv.FormatInt(*p, 10)
}

// list is a bounded list of items: the first Items of a longer list and how many were left
// out, so a table stays readable while JSON keeps everything.
type list struct {
	Items []string
	More  int
}

func bounded(items []string, limit int) list {
	if limit <= 0 || len(items) <= limit {
		return list{Items: items}
	}
	return list{Items: items[:limit], More: len(items) - limit}
}

// String joins the items with ", " and appends "… and N more".
func (l list) String() string {
	s := strings.Join(l.Items, ", ")
	if l.More > 0 {
		s += fmt.Sprintf(" … and %d more", l.More)
	}
	return s
}

// writeNotes writes the first limit notes, each as show draws it, one a line after bullet,
// then a line saying how many more there are and where to see them (where).
func writeNotes(b *strings.Builder, notes []string, limit int, bullet string, show func(string) string, where string) {
	l := bounded(notes, limit)
	for _, n := range l.Items {
		b.WriteString(bullet + show(n) + "\n")
	}
	if l.More > 0 {
		fmt.Fprintf(b, "%s… and %d more (%s)\n", bullet, l.More, where)
	}
}

// mdEscape makes s safe inside a Markdown table cell or paragraph: user-controlled names
// (groups, topics) must not open links, emphasis or HTML, nor end the cell.
func mdEscape(s string) string {
	var b strings.Builder
	for _, r := range s {
		switch r {
		case '\\', '`', '*', '_', '[', ']', '|', '#', '~':
			b.WriteByte('\\')
			b.WriteRune(r)
		case '<':
			b.WriteString("&lt;")
		case '>':
			b.WriteString("&gt;")
		case '&':
			b.WriteString("&amp;")
		case '\n', '\r':
			b.WriteByte(' ')
		default:
			b.WriteRune(r)
		}
	}
	return b.String()
}

// oneLine folds a multi-line message for a table cell.
func oneLine(s string) string {
	return strings.Join(strings.Fields(s), " ")
}

// writeAll writes the text in b.
func writeAll(w io.Writer, b *strings.Builder) error {
	_, err := io.WriteString(w, b.String())
	return err
}

// writeDoc writes the text in b with exactly one newline at its end.
func writeDoc(w io.Writer, b *strings.Builder) error {
	_, err := io.WriteString(w, strings.TrimRight(b.String(), "\n")+"\n")
	return err
}
