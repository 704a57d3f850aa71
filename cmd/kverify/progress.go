package main

import (
	"io"
	"sync"
	"time"
)

// progressLine is the one-line progress display of kverify's long runs: print redraws the
// line once a second on w (standard error, a terminal) until stop clears it.
type progressLine struct {
	w     io.Writer
	mu    sync.Mutex // held by print while it reads what the workers update
	start time.Time
	done  chan struct{}
	once  sync.Once
	wg    sync.WaitGroup
}

func (l *progressLine) run(w io.Writer, print func()) {
	l.w, l.start, l.done = w, time.Now(), make(chan struct{})
	l.wg.Go(func() {
		t := time.NewTicker(time.Second)
		defer t.Stop()
		for {
			select {
			case <-l.done:
				return
			case <-t.C:
				print()
			}
		}
	})
}

// stop ends the line and clears it; it may be called more than once.
func (l *progressLine) stop() {
	l.once.Do(func() {
		close(l.done)
		l.wg.Wait()
		io.WriteString(l.w, "\r\x1b[K")
	})
}
