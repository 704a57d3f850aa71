package clikit

import (
	"os"
	"testing"
)

func TestTerminalWidthFallsBackToCOLUMNS(t *testing.T) {
	f, err := os.CreateTemp(t.TempDir(), "out") // not a terminal: GetSize fails
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	t.Setenv("COLUMNS", "90")
	if got := terminalWidth(f); got != 90 {
		t.Errorf("terminalWidth with COLUMNS=90 = %d, want 90", got)
	}
	t.Setenv("COLUMNS", "")
	if got := terminalWidth(f); got != 0 {
		t.Errorf("terminalWidth without a size or COLUMNS = %d, want 0 (every column)", got)
	}
	if isTerminal(f) {
		t.Error("a regular file counts as a terminal: Render would narrow files")
	}
}
