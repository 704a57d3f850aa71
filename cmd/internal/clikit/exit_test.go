package clikit

import (
	"bytes"
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/urfave/cli/v2"
)

// Each way a command ends maps to its documented exit code, and its message is printed once
// (or not at all for Differs, whose report says it).
func TestMainExitCodes(t *testing.T) {
	base := errors.New("cluster target: topic orders partition 3: boom")
	for _, tc := range []struct {
		name    string
		err     error
		code    int
		printed string // "" when nothing may be printed
	}{
		{"success", nil, ExitOK, ""},
		{"Fail", Fail(base), ExitError, base.Error()},
		{"Failf", Failf("--window %d: give at least 1", 0), ExitError, "--window 0: give at least 1"},
		{"Fail wrapped", fmt.Errorf("run: %w", Fail(base)), ExitError, "run: " + base.Error()},
		{"Differs", Differs("3 differences"), ExitDiffers, ""},
		{"DiffersErr", DiffersErr(base), ExitDiffers, base.Error()},
		{"plain error", base, ExitError, base.Error()},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var out, errb bytes.Buffer
			app := NewApp("kx", "test", "test", &cli.Command{Name: "do", Action: func(*cli.Context) error { return tc.err }})
			app.Writer, app.ErrWriter = &out, &errb
			if code := Main(app, []string{"kx", "do"}); code != tc.code {
				t.Errorf("exit code: got %d, want %d", code, tc.code)
			}
			got := errb.String()
			if tc.printed == "" {
				if got != "" {
					t.Errorf("stderr: got %q, want nothing", got)
				}
				return
			}
			if want := "kx: " + tc.printed + "\n"; got != want {
				t.Errorf("stderr: got %q, want %q", got, want)
			}
			if n := strings.Count(got, tc.printed); n != 1 {
				t.Errorf("message printed %d times, want once", n)
			}
		})
	}
	if Fail(nil) != nil {
		t.Error("Fail(nil) is not nil")
	}
}

// A report command has its own flags first, then --format and --out, and leaves the caller's
// slice alone.
func TestReportCommandFlags(t *testing.T) {
	own := make([]cli.Flag, 1, 4)
	own[0] = &cli.StringFlag{Name: "topic"}
	cmd := ReportCommand("diff", func(*cli.Context) error { return nil }, own, "u", "ut", "d")
	var names []string
	for _, f := range cmd.Flags {
		names = append(names, f.Names()[0])
	}
	if got, want := strings.Join(names, ","), "topic,format,out,wide"; got != want {
		t.Errorf("flags: got %s, want %s", got, want)
	}
	if len(own) != 1 || own[:2][1] != nil {
		t.Errorf("ReportCommand changed the caller's flags: %v", own[:cap(own)])
	}
	if cmd.Name != "diff" || cmd.Usage != "u" || cmd.UsageText != "ut" || cmd.Description != "d" {
		t.Errorf("texts: got %q %q %q %q", cmd.Name, cmd.Usage, cmd.UsageText, cmd.Description)
	}
}
