package parallel

import (
	"reflect"
	"testing"

	"github.com/simtrain/simtrain/sim/engine"
)

// A full step built from a failed shortened play's kept prefixes holds
// the Fork's copies of the prefixes' records and lists (resumeKept), so
// Resume and the launch-queue walk (resumeQueues) take them without
// comparing them with the copies (Fork.builtPrefix): on a two-stage 1F1B
// step of 48 micro-batches played as 11, without a host thread, with
// one, and with one whose launch queue holds two launches (queue waits
// in the prefixes), every stage of the resumed build is its Fork's; the
// queue walks after the prefixes equal walks from the first task
// (SetQueuePrefixChecks); the resumed play equals the full play from the
// start, as does the play resumed into the same step built from the
// start, which Resume compares with the copies. The walk over a prefix
// with a queue bound tests its waits' bounds for Resume (below); a
// record waiting past its prefix is refused where it has not. After the Fork's copies
// are dropped (Reserve) or another build, no stage is the Fork's; and
// a program's record of its source that differs from the Fork's in any
// field (another Detach, another build, another place or length) is
// not.
func TestResumeTakesBuiltPrefixes(t *testing.T) {
	const m = 48
	pr := unitPricer{unit: engine.Millisecond}
	hosted := prefixTestHost
	queued := hosted
	queued.Queue = 2
	for _, tc := range []struct {
		name string
		host HostModel
	}{
		{name: "plain"},
		{name: "hosted", host: hosted},
		{name: "queue bound", host: queued},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cfg := steadyConfig(t, m, tc.host)
			want := playedWhole(t, cfg, pr)
			a, f := detachedShortPlay(t, cfg, pr)
			p0, r0, _, _, _ := SetQueuePrefixChecks(true)
			got, err := BuildAfter(cfg, pr, f)
			p1, r1, _, _, qerr := SetQueuePrefixChecks(false)
			if err != nil {
				t.Fatal(err)
			}
			if qerr != nil {
				t.Errorf("the launch-queue walks after the prefixes: %v", qerr)
			}
			if tc.host.Queue > 0 && (p1-p0 != int64(len(got)) || r1-r0 != int64(len(got))) {
				t.Errorf("%d of %d programs walked after their prefixes, %d given one", r1-r0, len(got), p1-p0)
			}
			if a.keep.resumed != len(got) {
				t.Fatalf("%d of %d stages resumed", a.keep.resumed, len(got))
			}
			for s, p := range got {
				if !f.builtPrefix(p, s) {
					t.Errorf("stage %d: resumed, but its prefix not the Fork's", s)
				}
				if p.prefix.below != (tc.host.Queue > 0) {
					t.Errorf("stage %d: the queue walk found the prefix's waits inside it: %v, walked: %v", s, p.prefix.below, tc.host.Queue > 0)
				}
			}
			// Resume still tests the bounds of the Fork's records the
			// walk did not read: a host wait past the prefix refused
			{
				p := got[0]
				c := f.inst[0].common
				keep, below := p.hot[1].hostAfter, p.prefix.below
				p.hot[1].hostAfter, p.prefix.below = c+2, false
				x := NewSymmetric(engine.New(), cfg.Layout, got)
				if err := x.Resume(f); err != ErrNoResume {
					t.Errorf("a prefix task waiting past the prefix: Resume %v, want ErrNoResume", err)
				}
				p.hot[1].hostAfter, p.prefix.below = keep, below
			}
			// a program's record of its source, each field changed
			for i, change := range []func(*prefixSource){
				func(ps *prefixSource) { ps.cp = new(forkCopy) },
				func(ps *prefixSource) { ps.gen++ },
				func(ps *prefixSource) { ps.build-- },
				func(ps *prefixSource) { ps.c-- },
				func(ps *prefixSource) { ps.at++ },
				func(ps *prefixSource) { ps.offAt++ },
				func(ps *prefixSource) { ps.depAt++ },
			} {
				p := got[1]
				keep := p.prefix
				change(&p.prefix)
				if f.builtPrefix(p, 1) {
					t.Errorf("change %d of the program's source: still the Fork's", i)
				}
				p.prefix = keep
			}
			play := func(progs []*Program, what string) {
				t.Helper()
				x := NewSymmetric(engine.New(), cfg.Layout, progs)
				if err := x.Resume(f); err != nil {
					t.Fatalf("%s: %v", what, err)
				}
				if err := x.RunResumed(); err != nil {
					t.Fatal(err)
				}
				for i := range x.inst {
					if !reflect.DeepEqual(x.inst[i].state, want.inst[i].state) {
						t.Errorf("%s: stage %d's times differ from the full play's", what, i)
					}
				}
			}
			play(got, "resumed build")
			// the same step built from the start (the kept states are the
			// shortened build's, not the last one's): Resume compares
			again, err := BuildAfter(cfg, pr, f)
			if err != nil {
				t.Fatal(err)
			}
			for s, p := range again {
				if f.builtPrefix(p, s) {
					t.Errorf("stage %d: built from the start, its prefix the Fork's", s)
				}
			}
			play(again, "built from the start")
			f.Reserve(1 << 10)
			for s, p := range again {
				if f.builtPrefix(p, s) {
					t.Errorf("stage %d: the Fork's copies dropped, its prefix the Fork's", s)
				}
			}
		})
	}
}
