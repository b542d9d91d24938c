package main

// A small progress renderer for sweeps, written here rather than taken from
// schollz/progressbar or vbauerster/mpb: it needs one line (points done of
// total, rate, ETA, best point so far), a plain-line mode for logs, and
// nothing else, which is about a hundred lines with golang.org/x/term (in
// go.mod already) against a new dependency and its own TTY heuristics
// (go-notes.md §1c: progressbar writes \r frames into CI logs, mpb draws
// nothing off a terminal).

import (
	"fmt"
	"io"
	"os"
	"strings"
	"time"

	"golang.org/x/term"

	"github.com/simtrain/simtrain/sim/output"
	"github.com/simtrain/simtrain/sim/output/numfmt"
	"github.com/simtrain/simtrain/sim/sweep"
)

type progressMode uint8

const (
	progressOff   progressMode = iota
	progressBar                // redrawn in place on a terminal
	progressLines              // one plain line per interval (logs, pipes)
)

// progress reports a sweep's advance on stderr.
type progress struct {
	w        io.Writer
	mode     progressMode
	total    int // points of this shard
	done     int // finished, including those done before a resume
	ran      int // finished by this process
	start    time.Time
	last     time.Time // last draw
	interval time.Duration
	width    int // terminal columns (bar mode)
	best     *output.SummaryRow
	now      func() time.Time
	drawn    bool // bar: something is on the line
}

const (
	barInterval  = 100 * time.Millisecond
	lineInterval = 10 * time.Second
)

// newProgress picks the mode: off with quiet, a bar when w is a terminal,
// plain periodic lines otherwise.
func newProgress(w io.Writer, quiet bool, total, already int) *progress {
	p := &progress{w: w, total: total, done: already, now: time.Now, mode: progressLines, interval: lineInterval, width: 100}
	if quiet {
		p.mode = progressOff
	} else if f, ok := w.(*os.File); ok && term.IsTerminal(int(f.Fd())) {
		p.mode, p.interval = progressBar, barInterval
		if cols, _, err := term.GetSize(int(f.Fd())); err == nil && cols > 20 {
			p.width = cols
		}
	}
	p.start = p.now()
	p.last = p.start
	return p
}

// update records one finished point and redraws when the interval is up.
func (p *progress) update(o sweep.Outcome, row output.SummaryRow) {
	p.done++
	p.ran++
	if o == sweep.Simulated && row.Fits && (p.best == nil || better(row, *p.best)) {
		r := row
		p.best = &r
	}
	if p.mode == progressOff {
		return
	}
	if now := p.now(); now.Sub(p.last) >= p.interval {
		p.last = now
		p.draw()
	}
}

// finish draws the final state (and ends the bar's line).
func (p *progress) finish() {
	switch p.mode {
	case progressBar:
		p.draw()
		fmt.Fprintln(p.w)
	case progressLines:
		if p.ran > 0 {
			p.draw()
		}
	}
}

func (p *progress) draw() {
	status := p.status()
	switch p.mode {
	case progressBar:
		const barWidth = 24
		fill := 0
		if p.total > 0 {
			fill = barWidth * p.done / p.total
		}
		bar := "[" + strings.Repeat("=", fill)
		if fill < barWidth {
			bar += ">" + strings.Repeat(" ", barWidth-fill-1)
		}
		line := bar + "] " + status
		if r := []rune(line); len(r) > p.width-1 {
			line = string(r[:p.width-1])
		}
		fmt.Fprint(p.w, "\r\x1b[K"+line)
		p.drawn = true
	case progressLines:
		fmt.Fprintln(p.w, "sweep: "+status)
	}
}

// status is "412/1000 points (41%), 37.2/s, ETA 16s, best 1.07e+06 tok/s
// tp8 pp1 dp128 mb1 z1": points done of total, points per second, time
// left at that rate, and the fastest fitting layout so far.
func (p *progress) status() string {
	pct := 100
	if p.total > 0 {
		pct = 100 * p.done / p.total
	}
	el := p.now().Sub(p.start).Seconds()
	rate := 0.0
	if el > 0 {
		rate = float64(p.ran) / el
	}
	eta := "?"
	if rate > 0 {
		eta = (time.Duration(float64(p.total-p.done) / rate * float64(time.Second))).Round(time.Second).String()
	}
	s := fmt.Sprintf("%s/%s points (%d%%), %s/s, ETA %s", groupedInt(p.done), groupedInt(p.total), pct, numfmt.Sig(rate), eta)
	if b := p.best; b != nil {
		s += fmt.Sprintf(", best %s tok/s tp%d pp%d dp%d", numfmt.Grouped(b.TokensPerS), b.TP, b.PP, b.DP)
		for _, kv := range []struct {
			k string
			v int64
		}{{"cp", b.CP}, {"ep", b.EP}, {"v", b.VirtualStages}} {
			if kv.v > 1 {
				s += fmt.Sprintf(" %s%d", kv.k, kv.v)
			}
		}
		s += fmt.Sprintf(" mb%d z%d", b.MicroBatch, b.Zero)
	}
	return s
}
