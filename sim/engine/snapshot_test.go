package engine

import (
	"math/rand/v2"
	"slices"
	"testing"
)

// forker schedules, for each event it handles, a few more at random
// delays (ties included) until a count runs out, and stops the engine
// after stopAt events.
type forker struct {
	e      *Engine
	h      HandlerID
	pcg    *rand.PCG
	left   int
	stopAt uint64
	got    []int64
}

func (s *forker) Handle(now Time, arg int64) {
	s.got = append(s.got, arg)
	if s.left > 0 {
		s.left--
		rng := rand.New(s.pcg)
		s.e.After(Time(rng.IntN(4)*rng.IntN(1000)), s.h, int64(s.left))
	}
	if s.e.Executed() == s.stopAt {
		s.e.Stop()
	}
}

// Restore continues from a Save exactly: the events after the snapshot
// run in the same order at the same times whether the engine ran on or was
// restored (into itself after more events, and into a fresh engine), with
// few events pending (the heap) and many (the buckets), and with zero-delay
// events waiting in the FIFO.
func TestSnapshotRestoreContinuesExactly(t *testing.T) {
	for _, c := range []struct {
		name          string
		start, events int
	}{{"heap", 40, 3000}, {"buckets", 600, 6000}} {
		run := func(stopAt uint64) (*Engine, *forker) {
			e := New()
			s := &forker{e: e, pcg: rand.NewPCG(1, 2), left: c.events, stopAt: stopAt}
			s.h = e.Register(s)
			for i := 0; i < c.start; i++ {
				e.At(Time(i%7*100), s.h, int64(-i-1))
			}
			e.Run()
			return e, s
		}
		_, whole := run(0)
		e, s := run(uint64(c.events / 3))
		var snap Snapshot
		e.Save(&snap)
		cut := len(s.got)
		t.Logf("%s: snapshot after %d events, %d pending (%d early), %d in all", c.name, cut, e.Pending(), snap.q.early.len(), len(whole.got))
		pcg := *s.pcg // the handler's state at the snapshot
		left := s.left
		e.Run() // on to the end
		if !slices.Equal(s.got, whole.got) {
			t.Fatalf("%s: a stopped and resumed run differs from a whole one", c.name)
		}
		// Into itself, then into a fresh engine.
		for _, into := range []*Engine{e, New()} {
			p := pcg
			r := &forker{e: into, pcg: &p, left: left, got: slices.Clone(s.got[:cut])}
			if into != e {
				into.Register(r)
			} else {
				into.handlers[s.h] = r
			}
			r.h = s.h
			into.Restore(&snap)
			if into.Now() != snap.now || into.Executed() != uint64(cut) {
				t.Fatalf("%s: restored at %v after %d events, want %v after %d", c.name, into.Now(), into.Executed(), snap.now, cut)
			}
			into.Run()
			if !slices.Equal(r.got, whole.got) {
				t.Fatalf("%s: the run restored from the snapshot differs from the whole run", c.name)
			}
		}
	}
}
