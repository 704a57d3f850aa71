package mm2

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// TestInputLimits: ParseProperties, Parse and Lint refuse input beyond MaxFileSize or a line
// beyond MaxLineSize with a *LimitError in a *LineError naming the line; input at the limits
// is read.
func TestInputLimits(t *testing.T) {
	t.Parallel()
	comments := func(n int) string { return strings.Repeat("#2345678901\n", n/12) } // 12 bytes a line
	atFile := comments(MaxFileSize)
	atFile += strings.Repeat("#", MaxFileSize-len(atFile)) // exactly MaxFileSize
	tests := []struct {
		name     string
		in       string
		wantLine int // 0: no error
		what     string
	}{
		{"file at the limit", atFile, 0, ""},
		{"file one byte beyond", atFile + "x", MaxFileSize/12 + 1, "file"},
		{"file far beyond", comments(3 * MaxFileSize), MaxFileSize/12 + 1, "file"},
		{"line at the limit", "a=" + strings.Repeat("b", MaxLineSize-2) + "\n", 0, ""},
		{"line beyond", "c=d\na=" + strings.Repeat("b", MaxLineSize) + "\n", 2, "line"},
		{"last line beyond, no newline", "c=d\na=" + strings.Repeat("b", MaxLineSize), 2, "line"},
		{"logical line beyond", "c=d\na=" + strings.Repeat("b,\\\n ", MaxLineSize/2) + "b\n", 2, "line"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			check := func(what string, err error) {
				t.Helper()
				if tt.wantLine == 0 {
					if err != nil {
						t.Errorf("%s: %v", what, err)
					}
					return
				}
				var le *LineError
				var lim *LimitError
				if !errors.As(err, &le) || !errors.As(err, &lim) || le.Line != tt.wantLine || lim.What != tt.what {
					t.Fatalf("%s: got %v, want a %s *LimitError on line %d", what, err, tt.what, tt.wantLine)
				}
				if !strings.Contains(err.Error(), "MiB") {
					t.Errorf("%s: %q does not give the limit", what, err)
				}
			}
			_, err := ParseProperties(strings.NewReader(tt.in))
			check("ParseProperties", err)
			_, err = Lint(strings.NewReader(tt.in))
			check("Lint", err)
		})
	}
}

// TestReadFileStopsWhenContextEnds: a named pipe without a writer (open blocks) or with a
// writer that stopped mid-file (read blocks) does not hold ReadFile or LoadContext past the
// end of their context.
func TestReadFileStopsWhenContextEnds(t *testing.T) {
	t.Parallel()
	for _, partial := range []string{"", "clusters=A,B\nA.boot"} {
		name := map[bool]string{true: "no writer", false: "writer stopped"}[partial == ""]
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			path := filepath.Join(t.TempDir(), "mm2.fifo")
			if err := syscall.Mkfifo(path, 0o600); err != nil {
				t.Skipf("mkfifo: %v", err)
			}
			t.Cleanup(func() { // release an open(2) still blocked
				if f, err := os.OpenFile(path, os.O_WRONLY|syscall.O_NONBLOCK, 0); err == nil {
					f.Close()
				}
			})
			if partial != "" {
				w, err := os.OpenFile(path, os.O_RDWR, 0)
				if err != nil {
					t.Fatal(err)
				}
				t.Cleanup(func() { w.Close() })
				if _, err := w.WriteString(partial); err != nil {
					t.Fatal(err)
				}
			}
			ctx, cancel := context.WithCancel(context.Background())
			done := make(chan error, 1)
			go func() {
				_, err := LoadContext(ctx, path)
				done <- err
			}()
			cancel()
			select {
			case err := <-done:
				if !errors.Is(err, context.Canceled) || !strings.Contains(err.Error(), path) {
					t.Errorf("LoadContext: got %v, want context.Canceled naming %s", err, path)
				}
			case <-time.After(20 * time.Second):
				t.Fatal("LoadContext still reads 20 s after its context ended")
			}
		})
	}
}
