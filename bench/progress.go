package main

import (
	"io"
	"os"
	"time"

	"github.com/schollz/progressbar/v3"
	"golang.org/x/term"
)

// isTerminal reports whether w is a terminal. Tests replace it.
var isTerminal = func(w io.Writer) bool {
	f, ok := w.(*os.File)
	return ok && term.IsTerminal(int(f.Fd()))
}

// progress is a bar on stderr that fills over the planned run time; a nil
// one (no terminal, or -q) does nothing. Not safe for concurrent use.
type progress struct {
	bar         *progressbar.ProgressBar
	total, done int64 // milliseconds
}

// newProgress returns a bar for total run time on w, or nil.
func newProgress(w io.Writer, quiet bool, total time.Duration) *progress {
	if quiet || !isTerminal(w) || total <= 0 {
		return nil
	}
	bar := progressbar.NewOptions64(total.Milliseconds(), progressbar.OptionSetWriter(w),
		progressbar.OptionSetWidth(30), progressbar.OptionThrottle(100*time.Millisecond),
		progressbar.OptionSetPredictTime(true), progressbar.OptionSetElapsedTime(true),
		progressbar.OptionClearOnFinish(), progressbar.OptionSetDescription("bench"))
	return &progress{bar: bar, total: total.Milliseconds()}
}

// describe names what runs now, for example "zipf/redis_rate".
func (p *progress) describe(what string) {
	if p != nil && p.bar != nil {
		p.bar.Describe(what)
	}
}

// add moves the bar by d of run time; it is full only at finish.
func (p *progress) add(d time.Duration) {
	if p == nil || p.bar == nil {
		return
	}
	if n := min(d.Milliseconds(), p.total-1-p.done); n > 0 {
		p.done += n
		_ = p.bar.Add64(n)
	}
}

// finish fills and clears the bar, leaving the line for what follows.
func (p *progress) finish() {
	if p != nil && p.bar != nil {
		_ = p.bar.Finish()
		_ = p.bar.Clear()
		p.bar = nil
	}
}
