package parallel

import (
	"reflect"
	"testing"
	"unsafe"

	"github.com/simtrain/simtrain/sim/engine"
)

// pool.above, parkCopy and reaches on a pool of 100 elements whose last
// build used 40 and whose first 80 are populated: a slice from used on
// is above, one reaching below it or in the used part is not, one of
// another array always is; a copy of n parks at [80−n, 80) when that
// lies above used, else goes to the own array (no warmth of the pool's
// own array, no pool: own); n more past used reach a slice's element at
// or below used+n−1. Dropping above's used test, parkCopy's room test or
// its warmth test fails it.
func TestParkCopyAndAbove(t *testing.T) {
	buf := make([]int32, 100)
	p := &pool[int32]{buf: buf, used: 40}
	p.warm = warmth{base: uintptr(unsafe.Pointer(&buf[0])), ready: 80 * 4}
	other := make([]int32, 10)
	for _, c := range []struct {
		name string
		s    []int32
		want bool
	}{
		{"empty", buf[10:10], true},
		{"at used", buf[40:50], true},
		{"past used", buf[70:80], true},
		{"one below used", buf[39:50], false},
		{"used part", buf[0:10], false},
		{"another array", other, true},
	} {
		if got := p.above(c.s); got != c.want {
			t.Errorf("above(%s) = %v, want %v", c.name, got, c.want)
		}
	}
	for _, c := range []struct {
		name   string
		p      *pool[int32]
		n      int
		parked bool
		at     int // where a parked copy starts
	}{
		{"fits", p, 40, true, 40},
		{"small", p, 5, true, 75},
		{"too large", p, 41, false, 0},
		{"nothing", p, 0, false, 0},
		{"no pool", nil, 5, false, 0},
		{"unwarmed", &pool[int32]{buf: buf, used: 40, warm: warmth{base: 1, ready: 80 * 4}}, 5, false, 0},
	} {
		var own []int32
		var w warmth
		s, parked := parkCopy(c.p, &own, &w, c.n+3, c.n)
		if parked != c.parked {
			t.Errorf("%s: parked %v, want %v", c.name, parked, c.parked)
			continue
		}
		if len(s) != 0 || cap(s) < c.n {
			t.Errorf("%s: %d elements, room %d, want empty with room for %d", c.name, len(s), cap(s), c.n)
		}
		if parked {
			if &s[:1][0] != &buf[c.at] || cap(s) != 80-c.at {
				t.Errorf("%s: parked at %d, room %d, want at %d, to the populated top", c.name,
					(uintptr(unsafe.Pointer(&s[:1][0]))-uintptr(unsafe.Pointer(&buf[0])))/4, cap(s), c.at)
			}
		} else if cap(own) < c.n+3 || cap(s) > 0 && &s[:1][0] != &own[:1][0] {
			t.Errorf("%s: not the own array with room for %d (%d)", c.name, c.n+3, cap(own))
		}
	}
	for _, c := range []struct {
		name string
		s    []int32
		at   int
		n    int
		want bool
	}{
		{"short of it", buf[60:80], 5, 25, false},
		{"up to it", buf[60:80], 5, 26, true},
		{"past its end", buf[60:80], 20, 100, false},
		{"another array", other, 0, 100, false},
	} {
		if got := reaches(p, c.s, c.at, c.n); got != c.want {
			t.Errorf("reaches(%s) = %v, want %v", c.name, got, c.want)
		}
	}
}

// Detach parks its copies of a failed shortened play's prefixes in the
// arena's populated room (a two-stage 1F1B step of 48 micro-batches
// played as 11, a launch queue of two, in an arena that built a larger
// step before): every copy lies in its pool above the build's extent.
// Then, for each thing that can come between: the full build resumes
// both stages from them and Resume takes them; a stage whose kept state
// is dropped is built from its start and its copies rescued into the
// Fork's own arrays, which Resume compares, as it does after another
// build of the step from the start; a larger build in between writes
// over them: the Fork's copies are no longer intact and Resume refuses
// the full build (ErrNoResume), as after two smaller builds (two
// steps: the same one twice is re-priced, which writes no pool). Every
// accepted Resume plays the full play's times. Fails without the
// rescue at a stage built from its start, without prefixIntact's test
// of the builds since Detach or of the pools' extents.
func TestDetachParksCopies(t *testing.T) {
	skipWithoutPopulate(t)
	const m = 48
	pr := unitPricer{unit: engine.Millisecond}
	host := prefixTestHost
	host.Queue = 2
	for _, tc := range []struct {
		name    string
		between func(t *testing.T, cfg *StepConfig, a *Arena)
		drop    int  // the stage whose kept state is dropped (-1: none)
		again   bool // the full step built once more, from the start
		resumed int  // stages the full build resumes
		rescued int  // Fork.cp.rescued after the full build (-1: still parked)
		resumes bool // Resume accepts the full build
	}{
		{name: "resumed", drop: -1, resumed: 2, rescued: -1, resumes: true},
		{name: "stage built from its start", drop: 1, resumed: 1, rescued: 1, resumes: true},
		{name: "built again from the start", drop: -1, again: true, resumed: 0, rescued: 0, resumes: true},
		{name: "larger build between", drop: -1, resumed: 0, rescued: -1,
			between: func(t *testing.T, cfg *StepConfig, a *Arena) { buildLarger(t, cfg, pr) }},
		{name: "two builds between", drop: -1, resumed: 0, rescued: -1,
			between: func(t *testing.T, cfg *StepConfig, a *Arena) {
				for i := range 2 {
					small := *cfg
					small.Microbatches = 4 + 2*i // (not the same step twice: re-priced, not written)
					if _, err := BuildAfter(&small, pr, nil); err != nil {
						t.Fatal(err)
					}
				}
			}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cfg := steadyConfig(t, m, host)
			want := playedWhole(t, cfg, pr)
			a, f := detachedShortPlay(t, cfg, pr)
			cp := f.cp
			if cp.parkA != a {
				t.Fatal("nothing parked")
			}
			for _, c := range []struct {
				name          string
				in, above, ok bool
			}{
				{"hot", inPool(&a.hot, cp.hot), a.hot.above(cp.hot), len(cp.hot) > 0},
				{"depOff", inPool(&a.depOff, cp.depOff), a.depOff.above(cp.depOff), len(cp.depOff) > 0},
				{"deps", inPool(&a.deps, cp.deps), a.deps.above(cp.deps), len(cp.deps) > 0},
				{"queue", inPool(&a.queue, cp.queue), a.queue.above(cp.queue), len(cp.queue) > 0},
			} {
				if !c.in || !c.above || !c.ok {
					t.Errorf("%s: in the pool %v, above its extent %v, copied %v", c.name, c.in, c.above, c.ok)
				}
			}
			if tc.between != nil {
				tc.between(t, cfg, a)
			}
			if tc.drop >= 0 {
				a.keep.stages[tc.drop].ok = false
			}
			got, err := BuildAfter(cfg, pr, f)
			if err != nil {
				t.Fatal(err)
			}
			if tc.again {
				if got, err = BuildAfter(cfg, pr, f); err != nil {
					t.Fatal(err)
				}
			}
			if a.keep.resumed != tc.resumed {
				t.Errorf("%d stages resumed, want %d", a.keep.resumed, tc.resumed)
			}
			rescued := -1
			if cp.parkA == nil {
				rescued = cp.rescued
			}
			if rescued != tc.rescued {
				t.Errorf("rescued from stage %d, want %d (-1: parked)", rescued, tc.rescued)
			}
			if !tc.resumes {
				for s := range f.inst {
					if f.prefixIntact(s) {
						t.Errorf("stage %d's copies intact after the builds", s)
					}
				}
			}
			x := NewSymmetric(engine.New(), cfg.Layout, got)
			err = x.Resume(f)
			if !tc.resumes {
				if err != ErrNoResume {
					t.Fatalf("Resume %v, want ErrNoResume", err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if err := x.RunResumed(); err != nil {
				t.Fatal(err)
			}
			for i := range x.inst {
				if !reflect.DeepEqual(x.inst[i].state, want.inst[i].state) {
					t.Errorf("stage %d's times differ from the full play's", i)
				}
			}
		})
	}
}

// rescueAhead at stage 1's start of a three-stage Fork whose copies
// (10 records, 10 dependencies, 11 offsets a stage) are parked from
// element 60 of their pools: when stage 0's program, as large as stage
// 1's would be, reaches stage 2's copies from the pools' extent (at 80,
// offsets at 82), they move to the Fork's own arrays at the same offsets,
// their contents kept (rescue; unpark), and stay intact; short of them,
// nothing moves; past them already, nothing can (stage 2 not intact).
// Fails with rescueAhead doing nothing, or unpark not copying.
func TestRescueAheadMovesNextStages(t *testing.T) {
	for _, c := range []struct {
		name       string
		used, prev int
		moved      bool
		intact     bool
	}{
		{"short of them", 50, 30, false, true},
		{"reaching them", 50, 31, true, true},
		{"past them already", 85, 10, false, false},
	} {
		a := new(Arena)
		a.hot.buf, a.depOff.buf, a.deps.buf = make([]hotTask, 100), make([]int32, 100), make([]int32, 100)
		a.queue.buf = make([]queueEntry, 100)
		f := &Fork{cp: new(forkCopy)}
		cp := f.cp
		cp.owner = f
		cp.hot, cp.depOff, cp.deps, cp.queue = a.hot.buf[60:90], a.depOff.buf[60:93], a.deps.buf[60:90], a.queue.buf[60:60]
		for s := range 3 {
			f.inst = append(f.inst, forkInst{common: 10, at: 10 * s, offAt: 11 * s, depAt: 10 * s})
			for i := range 10 {
				cp.hot[10*s+i].issue = engine.Time(100*s + i + 1)
				cp.deps[10*s+i] = int32(100*s + i)
				cp.depOff[11*s+i] = int32(i)
			}
			cp.depOff[11*s+10] = 10
		}
		cp.parkA, cp.parkBuild = a, a.builds
		a.hot.used, a.depOff.used, a.deps.used = c.used, c.used, c.used
		prev := &Program{hot: make([]hotTask, c.prev), depOff: make([]int32, c.prev), deps: make([]int32, c.prev)}
		f.rescueAhead(1, prev)
		if moved := cp.parkA == nil; moved != c.moved {
			t.Errorf("%s: moved %v, want %v", c.name, moved, c.moved)
		}
		if moved := cp.parkA == nil; moved && (cp.rescued != 2 || inPool(&a.hot, cp.hot) || inPool(&a.deps, cp.deps) || inPool(&a.depOff, cp.depOff)) {
			t.Errorf("%s: rescued from %d, still in the pools: %v %v %v", c.name, cp.rescued, inPool(&a.hot, cp.hot), inPool(&a.deps, cp.deps), inPool(&a.depOff, cp.depOff))
		}
		if got := f.prefixIntact(2); got != c.intact {
			t.Errorf("%s: stage 2 intact %v, want %v", c.name, got, c.intact)
		}
		if c.intact {
			for i := range 10 {
				if cp.hot[20+i].issue != engine.Time(200+i+1) || cp.deps[20+i] != int32(200+i) || cp.depOff[22+i] != int32(i) {
					t.Fatalf("%s: stage 2's copy %d changed", c.name, i)
				}
			}
		}
		if c.moved && f.prefixIntact(1) {
			t.Errorf("%s: stage 1 intact after the stages from 2 moved", c.name)
		}
	}
}
