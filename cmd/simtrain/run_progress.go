package main

import (
	"fmt"
	"io"
	"os"
	"time"

	"golang.org/x/term"

	"github.com/simtrain/simtrain/sim/output/numfmt"
)

// runProgress draws one self-erasing status line on a terminal while a long
// simulation plays ("llama3-405b-16k-h100: simulating, 46% of 43,810,816
// rank-tasks, 48s"). Off a terminal, or with --quiet, it draws nothing, so logs and
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
	fmt.Fprintf(p.w, "\r\x1b[K%s", progressLine(p.name, done, total, now.Sub(p.start)))
	p.drawn = true
}

// progressLine is the status line's text: the share of the rank-tasks
// played, their number with thousands separators, and the time so far.
func progressLine(name string, done, total int, elapsed time.Duration) string {
	pct := 0
	if total > 0 {
		pct = 100 * done / total
	}
	return fmt.Sprintf("%s: simulating, %d%% of %s rank-tasks, %s", name, pct, numfmt.Grouped(float64(total)), elapsed.Round(time.Second))
}

// finish erases the status line.
func (p *runProgress) finish() {
	if p.drawn {
		fmt.Fprint(p.w, "\r\x1b[K")
		p.drawn = false
	}
}
