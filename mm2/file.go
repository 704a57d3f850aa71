package mm2

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"time"
)

// ReadFile reads the properties file at path, at most MaxFileSize bytes, and stops when ctx
// ends: also while opening a named pipe that has no writer yet, or reading one whose writer
// never finishes (pipes, FIFOs and terminals take read deadlines; a regular file is read at
// disk speed). The error names neither content nor secret: a *LineError for a file beyond the
// limit, else the path and what went wrong.
func ReadFile(ctx context.Context, path string) ([]byte, error) {
	if err := ctx.Err(); err != nil {
		return nil, stopped(path, err)
	}
	type opened struct {
		f   *os.File
		err error
	}
	ch := make(chan opened, 1)
	go func() { // open(2) of a FIFO blocks until a writer comes
		f, err := os.Open(path)
		ch <- opened{f, err}
	}()
	var f *os.File
	select {
	case o := <-ch:
		if o.err != nil {
			return nil, o.err
		}
		f = o.f
	case <-ctx.Done():
		go func() { // the open may still return: close what it opened
			if o := <-ch; o.f != nil {
				o.f.Close()
			}
		}()
		return nil, stopped(path, ctx.Err())
	}
	defer f.Close()
	stop := context.AfterFunc(ctx, func() {
		if f.SetReadDeadline(time.Now()) != nil {
			f.Close() // not pollable: closing is all that can end a read
		}
	})
	defer stop()
	data, err := readBounded(f)
	if cerr := ctx.Err(); cerr != nil {
		return nil, stopped(path, cerr)
	}
	if err != nil {
		var le *LineError
		if errors.As(err, &le) {
			return nil, err
		}
		return nil, fmt.Errorf("read %s: %w", path, err)
	}
	return data, nil
}

func stopped(path string, err error) error {
	return fmt.Errorf("reading %s stopped: %w (interrupted by a signal or a deadline)", path, err)
}

// Load reads and parses the mm2.properties file at path.
func Load(path string) (*Config, error) { return LoadContext(context.Background(), path) }

// LoadContext is Load that stops when ctx ends (see ReadFile). Errors name the file.
func LoadContext(ctx context.Context, path string) (*Config, error) {
	data, err := ReadFile(ctx, path)
	if err != nil {
		var pe *os.PathError
		if errors.As(err, &pe) {
			return nil, fmt.Errorf("open MM2 config: %w", err)
		}
		return nil, fmt.Errorf("MM2 config %s: %w", path, err)
	}
	cfg, err := Parse(bytes.NewReader(data))
	if err != nil {
		return nil, fmt.Errorf("MM2 config %s: %w", path, err)
	}
	return cfg, nil
}
