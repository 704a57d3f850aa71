package main

import (
	"bytes"
	"strings"
	"testing"
)

// TestStepEscapes: headings carry ANSI codes on a terminal only.
func TestStepEscapes(t *testing.T) {
	var plain, styled bytes.Buffer
	writeStep(&plain, false, "the group switches to the target (%d records)", 30)
	writeStep(&styled, true, "the group switches to the target (%d records)", 30)
	if strings.Contains(plain.String(), "\x1b[") || !strings.Contains(plain.String(), "== the group switches to the target (30 records)") {
		t.Fatalf("heading for a pipe: %q, want the text without escape codes", plain.String())
	}
	if !strings.Contains(styled.String(), "\x1b[1m== the group") {
		t.Fatalf("heading for a terminal: %q, want it bold", styled.String())
	}
}
