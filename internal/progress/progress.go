// Package progress owns the CLI's progress bars: one line on stderr, redrawn in place, shown only
// when stderr is a terminal (never in pipes, CI logs or MCP's stdio).
package progress

import (
	"fmt"
	"io"
	"strings"
	"sync"
	"time"

	"golang.org/x/term"
)

// IsTerminal reports whether w is a terminal: an *os.File, or a writer over one that says so
// (an Fd method, as the resident server's wrapper of a call's stderr has).
func IsTerminal(w io.Writer) bool {
	f, ok := w.(interface{ Fd() uintptr })
	if !ok {
		return false
	}
	return term.IsTerminal(int(f.Fd()))
}

// Bar is a progress bar. A nil *Bar (or one on a writer that is not a terminal) does nothing, so
// callers never branch on it. Safe for concurrent use.
type Bar struct {
	mu    sync.Mutex
	w     io.Writer
	label string
	total int64 // <= 0: unknown, show a count
	done  int64
	last  time.Time
}

// New returns a bar on w, or nil when w is not a terminal.
func New(w io.Writer, label string, total int64) *Bar {
	if !IsTerminal(w) {
		return nil
	}
	return newBar(w, label, total)
}

func newBar(w io.Writer, label string, total int64) *Bar {
	return &Bar{w: w, label: label, total: total}
}

// Add records n more units of work and redraws at most every 100ms.
func (b *Bar) Add(n int64) {
	if b == nil {
		return
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	b.done += n
	if now := time.Now(); now.Sub(b.last) >= 100*time.Millisecond {
		b.last = now
		b.draw()
	}
}

// Done draws the final state and ends the line.
func (b *Bar) Done() {
	if b == nil {
		return
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	b.draw()
	fmt.Fprintln(b.w)
}

const width = 30

func (b *Bar) draw() {
	if b.total <= 0 {
		fmt.Fprintf(b.w, "\r%s %d", b.label, b.done)
		return
	}
	done := min(b.done, b.total)
	fill := int(done * width / b.total)
	fmt.Fprintf(b.w, "\r%s [%s%s] %3d%% (%d/%d)", b.label, strings.Repeat("=", fill),
		strings.Repeat(" ", width-fill), done*100/b.total, done, b.total)
}

// Spinner shows label and the elapsed time, redrawn every 100ms, for work that reports no
// progress of its own (hydrating a store). It returns the function that stops it and ends the
// line; on a writer that is not a terminal it does nothing.
func Spinner(w io.Writer, label string) (stop func()) {
	if !IsTerminal(w) {
		return func() {}
	}
	start := time.Now()
	done := make(chan struct{})
	finished := make(chan struct{})
	go func() {
		defer close(finished)
		t := time.NewTicker(100 * time.Millisecond)
		defer t.Stop()
		frames := `|/-\`
		for i := 0; ; i++ {
			select {
			case <-done:
				fmt.Fprintf(w, "\r%s done in %s\n", label, time.Since(start).Round(time.Millisecond))
				return
			case <-t.C:
				fmt.Fprintf(w, "\r%s %c %s", label, frames[i%len(frames)], time.Since(start).Round(100*time.Millisecond))
			}
		}
	}()
	var once sync.Once
	return func() {
		once.Do(func() {
			close(done)
			<-finished
		})
	}
}

// Status returns a function that shows one status line on w, replacing the previous one, for work
// made of named steps (an image build). Calling it with "" clears the line. On a writer that is not
// a terminal it does nothing.
func Status(w io.Writer) func(msg string) {
	if !IsTerminal(w) {
		return func(string) {}
	}
	var mu sync.Mutex
	return func(msg string) {
		mu.Lock()
		defer mu.Unlock()
		fmt.Fprintf(w, "\r\x1b[K%s", msg)
	}
}
