package main

import (
	"bytes"
	"context"
	"sync"
)

// syncBuffer is a bytes.Buffer safe for the logger goroutines and the test.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// startRun starts `kmirror run --config props --flow A->B` in the background until ctx ends;
// done gets its error, errOut collects its log.
func startRun(ctx context.Context, props string) (done <-chan error, errOut *syncBuffer) {
	app := newApp()
	errOut = &syncBuffer{}
	app.Writer, app.ErrWriter = &syncBuffer{}, errOut
	d := make(chan error, 1)
	go func() { d <- app.RunContext(ctx, []string{"kmirror", "run", "--config", props, "--flow", "A->B"}) }()
	return d, errOut
}
