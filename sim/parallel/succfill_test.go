package parallel

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"

	"github.com/simtrain/simtrain/sim/engine"
	"github.com/simtrain/simtrain/sim/pipeline"
)

// succListsRef is the successor lists, their offsets and the dependency
// counts made the plain way (succLists and fillSucc before fillSucc went
// without bounds checks): every index checked, each task's list appended
// in task order.
func succListsRef(depOff, deps []int32) (succOf, succ, ndeps []int32) {
	n := len(depOff) - 1
	lists := make([][]int32, n)
	ndeps = make([]int32, n)
	for t := range n {
		d := deps[depOff[t]:depOff[t+1]]
		ndeps[t] = int32(len(d))
		for _, j := range d {
			lists[j] = append(lists[j], int32(t))
		}
	}
	succOf = make([]int32, n+1)
	for j, l := range lists {
		succ = append(succ, l...)
		succOf[j+1] = int32(len(succ))
	}
	return succOf, succ, ndeps
}

// sameSucc fails t when p's successor lists, offsets or dependency counts
// (depCount) are not succListsRef's.
func sameSucc(t *testing.T, name string, p *Program) {
	t.Helper()
	n := len(p.Tasks)
	succOf, succ, ndeps := succListsRef(p.depOff[:n+1], p.deps[:p.depOff[n]])
	counts := make([]int32, n)
	for i := range counts {
		counts[i] = p.depCount(i)
	}
	if !slices.Equal(p.succOf, succOf) || !slices.Equal(p.succ, succ) || !slices.Equal(counts, ndeps) {
		t.Errorf("%s: succOf %v succ %v dependency counts %v, want %v %v %v", name, p.succOf, p.succ, counts, succOf, succ, ndeps)
	}
}

// finish's lists equal the plain way's on hand-made and random
// dependency lists: none, tasks without dependencies, one task depending
// on all before it, a dependency listed twice, long chains and wide fans.
func TestFillSuccMatchesPlainLists(t *testing.T) {
	cases := []struct {
		name string
		deps [][]int32
	}{
		{"empty", nil},
		{"one task", [][]int32{{}}},
		{"no dependencies", [][]int32{{}, {}, {}}},
		{"chain", [][]int32{{}, {0}, {1}, {2}}},
		{"fan in", [][]int32{{}, {}, {}, {0, 1, 2}}},
		{"fan out", [][]int32{{}, {0}, {0}, {0}, {0, 3}}},
		{"twice", [][]int32{{}, {0, 0}, {1, 0, 1}}},
		{"unsorted", [][]int32{{}, {}, {1, 0}, {2, 0, 1}}},
		// countSucc's runs of four whose bitwise or reaches the task
		// count (each checked instead), between runs whose or does not
		{"or past the tasks", [][]int32{{}, {}, {}, {}, {0, 1, 0, 1}, {3, 4, 1, 2}, {0, 0, 1, 1, 5, 2, 1, 0}}},
	}
	rng := rand.New(rand.NewPCG(18, 25))
	for _, n := range []int{2, 3, 5, 6, 7, 17, 300, 5000} { // every task count mod 4 (the prefix sums' runs of four)
		for _, most := range []int{1, 3, 9} {
			deps := make([][]int32, n)
			for i := 1; i < n; i++ {
				for range rng.IntN(most + 1) {
					deps[i] = append(deps[i], int32(rng.IntN(i)))
				}
			}
			cases = append(cases, struct {
				name string
				deps [][]int32
			}{fmt.Sprintf("random %d tasks, up to %d dependencies", n, most), deps})
		}
	}
	arena := new(Arena)
	for _, c := range cases {
		p := handProgram(make([]Task, len(c.deps)), c.deps)
		sameSucc(t, c.name, p)
		// again in an arena's storage, carved after what the last case
		// left there (contents unspecified)
		q := &Program{Tasks: p.Tasks, depOff: p.depOff, deps: p.deps, arena: arena}
		q.finish()
		sameSucc(t, c.name+" (arena)", q)
	}
}

// On built steps of several layouts and schedules (hosted, passes and
// layers copied or emitted, into one arena one after another), the lists
// equal the plain way's.
func TestFillSuccOnBuilds(t *testing.T) {
	arena := new(Arena)
	pr := commPricer{unit: engine.Millisecond, comm: 300 * engine.Microsecond}
	n := 0
	for _, l := range []struct{ tp, dp, pp, m int }{{1, 1, 1, 4}, {2, 2, 4, 16}, {4, 1, 8, 24}, {1, 4, 2, 3}} {
		for _, sched := range []pipeline.Schedule{pipeline.OneFOneB, pipeline.GPipe} {
			for _, emit := range []bool{false, true} {
				_, cfg := stepConfig(t, l.tp, l.dp, l.pp, l.m, sched)
				cfg.Steps = 2
				cfg.EmitEveryPass, cfg.EmitEveryLayer = emit, emit
				cfg.Host = HostModel{On: true, KernelFwd: 5 * engine.Microsecond, KernelBwd: 5 * engine.Microsecond,
					Call: 10 * engine.Microsecond, Queue: 64}
				cfg.Arena = arena
				progs, err := Build(cfg, pr)
				if err != nil {
					t.Fatal(err)
				}
				for _, p := range progs {
					sameSucc(t, fmt.Sprintf("%+v %v emit %v stage %d", l, sched, emit, p.Stage), p)
					n += len(p.Tasks)
				}
			}
		}
	}
	t.Logf("%d tasks compared", n)
}

// Dependency lists that are not a program's panic (before fillSucc
// reads or writes outside its slices): a dependency outside the program,
// offsets that go past the dependencies or that decrease to hide one.
func TestFillSuccRefusesMalformed(t *testing.T) {
	for _, c := range []struct {
		name         string
		depOff, deps []int32
		want         string
	}{
		{"dependency past the tasks", []int32{0, 0, 1}, []int32{2}, "index out of range"},
		{"negative dependency", []int32{0, 0, 1}, []int32{-1}, "index out of range"},
		{"offsets past the dependencies", []int32{0, 3, 1}, []int32{0, 0, 0}, "task 0 of 2"},
		// fillSucc checks an end only where it passes k: a later task's,
		// after a task of dependencies filled
		{"offsets past the dependencies, a later task", []int32{0, 1, 4, 2}, []int32{0, 0, 1}, "task 1 of 3"},
		// succLists counts four dependencies an iteration: a bad one in
		// each lane of a run of four, and in the tail after it
		{"bad dependency, lane 0", []int32{0, 0, 5}, []int32{2, 0, 0, 0, 0}, "index out of range"},
		{"bad dependency, lane 1", []int32{0, 0, 5}, []int32{0, -1, 0, 0, 0}, "index out of range"},
		{"bad dependency, lane 2", []int32{0, 0, 5}, []int32{0, 0, 7, 0, 0}, "index out of range"},
		{"bad dependency, lane 3", []int32{0, 0, 5}, []int32{0, 0, 0, -2, 0}, "index out of range"},
		{"bad dependency, tail", []int32{0, 0, 5}, []int32{0, 0, 0, 0, 2}, "index out of range"},
		// countSucc's unchecked runs take four whose or is below the task
		// count: one equal to it (or just past it) is checked
		{"dependency equal to the tasks, run of four", []int32{0, 0, 4}, []int32{0, 0, 0, 2}, "index out of range"},
		{"dependency equal to the tasks after a good run", []int32{0, 4, 8}, []int32{0, 1, 0, 1, 1, 2, 0, 0}, "index out of range"},
	} {
		t.Run(c.name, func(t *testing.T) {
			defer func() {
				r := recover()
				if r == nil || !strings.Contains(fmt.Sprint(r), c.want) {
					t.Errorf("recovered %v, want a panic saying %q", r, c.want)
				}
			}()
			p := &Program{Tasks: make([]Task, len(c.depOff)-1), depOff: c.depOff, deps: c.deps}
			p.finish()
		})
	}
	defer func() {
		if r := recover(); r == nil || !strings.Contains(fmt.Sprint(r), "storage") {
			t.Errorf("recovered %v, want a panic on the storage", r)
		}
	}()
	fillSucc([]int32{0, 1}, []int32{0}, make([]int32, 4), nil)
}

// succLists refuses counts that overlap the dependencies (countSucc's
// unchecked increments read each index again after testing it): the same
// slice, and counts starting inside the dependencies or before them.
func TestSuccListsRefusesOverlap(t *testing.T) {
	buf := make([]int32, 16)
	off := []int32{0, 0, 0, 0, 0, 8} // five tasks, the last of eight dependencies
	for _, c := range []struct {
		name      string
		deps, cnt []int32
	}{
		{"same", buf[:8], buf[:8]},
		{"counts inside", buf[:8], buf[4:11]},
		{"dependencies inside", buf[6:14], buf[:7]},
	} {
		func() {
			defer func() {
				if r := recover(); r == nil || !strings.Contains(fmt.Sprint(r), "overlap") {
					t.Errorf("%s: recovered %v, want a panic on the overlap", c.name, r)
				}
			}()
			succLists(off[1:], c.deps, c.cnt)
		}()
	}
	deps, cnt := buf[:8], buf[8:15] // adjacent, not overlapping
	succLists(off[1:], deps, cnt)
	if cnt[2] != 8 || cnt[len(cnt)-1] != 8 {
		t.Errorf("adjacent: counts %v, want all eight at task 0", cnt)
	}
}
