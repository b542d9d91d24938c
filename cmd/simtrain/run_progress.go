package main

import (
	"fmt"
	"io"
	"os"
	"time"

	"golang.org/x/term"
)

// runProgress draws one self-erasing status line on a terminal while a long
// simulation plays ("flow fidelity on 16K GPUs: 46% of 47,571,463 tasks,
// 48 s"). Off a terminal, or with --quiet, it draws nothing, so logs and
// pipes stay clean.
type runProgress struct {
	w     io.Writer
	on    bool
	name  string
	start time.Time
	last  time.Time
	drawn bool
}

func newRunProgress(w io.Writer, quiet bool, name string) *runProgress {
	p := &runProgress{w: w, name: name, start: time.Now()}
	if f, ok := w.(*os.File); ok && !quiet && term.IsTerminal(int(f.Fd())) {
		p.on = true
	}
	p.last = p.start
	return p
}

// update is simulation.Options.Progress: it redraws at most five times a second,
// and only once the run has taken a second.
func (p *runProgress) update(done, total int) {
	if !p.on {
		return
	}
	now := time.Now()
	if now.Sub(p.start) < time.Second || now.Sub(p.last) < 200*time.Millisecond {
		return
	}
	p.last = now
	pct := 0
	if total > 0 {
		pct = 100 * done / total
	}
	fmt.Fprintf(p.w, "\r\x1b[K%s: simulating, %d%% of %d rank-tasks, %s", p.name, pct, total, now.Sub(p.start).Round(time.Second))
	p.drawn = true
}

// finish erases the status line.
func (p *runProgress) finish() {
	if p.drawn {
		fmt.Fprint(p.w, "\r\x1b[K")
		p.drawn = false
	}
}
