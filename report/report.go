package report

import (
	"encoding/json"
	"fmt"
	"io"
	"strings"
)

// Format is an output format.
type Format string

// Formats every tool accepts with --format.
const (
	Table    Format = "table"
	JSON     Format = "json"
	Markdown Format = "markdown"
	HTML     Format = "html"
	JUnit    Format = "junit"
)

// Formats lists the formats in the order --help shows them.
var Formats = []Format{Table, JSON, Markdown, HTML, JUnit}

// ParseFormat checks a --format value.
func ParseFormat(s string) (Format, error) {
	for _, f := range Formats {
		if strings.EqualFold(s, string(f)) {
			return f, nil
		}
	}
	return "", fmt.Errorf("unknown format %q: use one of table, json, markdown, html, junit", s)
}

// Options tune rendering.
type Options struct {
	// Color enables ANSI colours in tables; the commands set it only when writing to a TTY.
	Color bool
	// Title heads the Markdown and HTML documents and names the JUnit suite.
	Title string
}

// Write renders v (a *verify.Result, *reconcile.Result or another result type of this
// project) in format f. It is a pure function of its arguments.
func Write(w io.Writer, f Format, v any, opt Options) error {
	switch f {
	case JSON:
		enc := json.NewEncoder(w)
		enc.SetIndent("", "  ")
		return enc.Encode(v)
	default:
		return fmt.Errorf("format %s is not implemented yet", f)
	}
}
