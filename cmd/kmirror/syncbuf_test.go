package main

import (
	"context"

	"github.com/kmigrate/kmigrate/internal/testkit"
)

// startRun starts `kmirror run --config props --flow A->B` in the background until ctx ends;
// done gets its error, errOut collects its log.
func startRun(ctx context.Context, props string) (done <-chan error, errOut *testkit.SyncBuffer) {
	app := newApp()
	errOut = &testkit.SyncBuffer{}
	app.Writer, app.ErrWriter = &testkit.SyncBuffer{}, errOut
	d := make(chan error, 1)
	go func() { d <- app.RunContext(ctx, []string{"kmirror", "run", "--config", props, "--flow", "A->B"}) }()
	return d, errOut
}
