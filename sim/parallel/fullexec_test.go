package parallel

import (
	"testing"
	"unsafe"

	"github.com/simtrain/simtrain/sim/engine"
)

// TestIssueRing: the ring that keeps the issue times of tasks the host
// thread passed before they asked returns each task's time once, whatever
// order the tasks ask in, growing when a slot is still taken (a task that
// asks late, e.g. a gradient reduction waiting behind a long one, while the
// host runs hundreds of tasks ahead).
func TestIssueRing(t *testing.T) {
	for _, c := range []struct {
		name  string
		tasks int
		late  func(u int) bool // tasks that ask only at the end
		lag   int              // the others ask this many passes after theirs
	}{
		{"in order", 1000, func(int) bool { return false }, 0},
		{"lagging", 1000, func(int) bool { return false }, 63},
		{"one late", 1000, func(u int) bool { return u == 5 }, 10},
		{"many late", 3000, func(u int) bool { return u%7 == 3 }, 100},
	} {
		var r fullRare
		issue := func(u int) engine.Time { return engine.Time(1000*u + 7) }
		got := map[int]engine.Time{}
		take := func(u int) {
			slot := u & (len(r.ring) - 1)
			got[u] = r.ring[slot] - 1
			r.ring[slot] = 0
		}
		for u := 0; u < c.tasks; u++ {
			r.ringPut(u, issue(u))
			if v := u - c.lag; v >= 0 && !c.late(v) {
				take(v)
			}
		}
		for v := c.tasks - c.lag; v < c.tasks; v++ {
			if !c.late(v) {
				take(v)
			}
		}
		for v := 0; v < c.tasks; v++ {
			if c.late(v) {
				take(v)
			}
		}
		for u := 0; u < c.tasks; u++ {
			if got[u] != issue(u) {
				t.Fatalf("%s: task %d: issue %d, want %d (ring of %d)", c.name, u, got[u], issue(u), len(r.ring))
			}
		}
		for s, v := range r.ring {
			if v != 0 {
				t.Fatalf("%s: slot %d still holds %d", c.name, s, v)
			}
		}
	}
}

// TestFullManyInputs: a task waiting for more inputs than a byte counts
// (here 300, and 301 with a host thread's issue) plays in full mode as in
// the representative-rank play: same times, same Stats, on every rank.
func TestFullManyInputs(t *testing.T) {
	const n = 300
	for _, hosted := range []bool{false, true} {
		var tasks []Task
		var deps [][]int32
		var all []int32
		for k := 0; k < n; k++ {
			task := compute(engine.Time(10 + k%7))
			tasks = append(tasks, task)
			deps = append(deps, nil)
			all = append(all, int32(k))
		}
		last := compute(5)
		tasks = append(tasks, last, last)
		deps = append(deps, all, []int32{n})
		build := func() *Program {
			p := handProgram(tasks, deps)
			for i := range p.Tasks {
				setIssue(p, i, 3)
			}
			p.Hosted = hosted
			return p
		}
		l, err := NewLayout(1, 1, 1, 3, 1, [5]Dim{DimTP, DimCP, DimEP, DimDP, DimPP})
		if err != nil {
			t.Fatal(err)
		}
		sym, full := playBoth(t, l, build)
		if full.full.stage[0].big == nil {
			t.Fatalf("hosted %v: no task counted beside the byte counters", hosted)
		}
		ws, we, wi := sym.Times(0, nil, nil, nil)
		for i := 0; i < full.Instances(); i++ {
			s, e, is := full.Times(i, nil, nil, nil)
			for k := range s {
				if s[k] != ws[k] || e[k] != we[k] || (wi != nil && is[k] != wi[k]) {
					t.Fatalf("hosted %v rank %d task %d: %d..%d issued %v, representative %d..%d", hosted, i, k, s[k], e[k], is, ws[k], we[k])
				}
			}
			if got, want := full.Stats(i), sym.Stats(0); got != want {
				t.Errorf("hosted %v rank %d: stats %+v, representative %+v", hosted, i, got, want)
			}
		}
	}
}

// playBoth plays the program build returns on the representative-rank
// executor and on the every-rank one, each with its own copy, and fails
// the test if either play fails.
func playBoth(t *testing.T, l *Layout, build func() *Program) (sym, full *Executor) {
	t.Helper()
	sym = NewSymmetric(engine.New(), l, []*Program{build()})
	if err := sym.Run(); err != nil {
		t.Fatal(err)
	}
	full, err := NewFull(engine.New(), l, []*Program{build()}, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	if err := full.Run(); err != nil {
		t.Fatal(err)
	}
	return sym, full
}

// TestFullInstLayout: what every task's start, end and issue touch of a
// rank's fullInst, the host waits' sum included, lies in its first cache
// line, the per-kind counts and exposed times in the second, and there is
// no third (fullInst's doc).
func TestFullInstLayout(t *testing.T) {
	var fi fullInst
	l := &fi.live
	live := unsafe.Offsetof(fi.live)
	for _, c := range []struct {
		name     string
		off, end uintptr
		line     uintptr
	}{
		{"col", unsafe.Offsetof(fi.col), unsafe.Offsetof(fi.col) + 4, 0},
		{"hostFree", unsafe.Offsetof(fi.hostFree), unsafe.Offsetof(fi.hostFree) + 8, 0},
		{"live.since", live + unsafe.Offsetof(l.since), 0, 0},
		{"live.hostBound", live + unsafe.Offsetof(l.hostBound), live + unsafe.Offsetof(l.hostBound) + 8, 0},
		{"live.open", live + unsafe.Offsetof(l.open), live + unsafe.Offsetof(l.open) + 4, 0},
		{"live.comm", live + unsafe.Offsetof(l.comm), 0, 1},
		{"live.exposed", live + unsafe.Offsetof(l.exposed), live + unsafe.Offsetof(l.exposed) + unsafe.Sizeof(l.exposed), 1},
	} {
		if c.off/64 != c.line || (c.end > 0 && (c.end-1)/64 != c.line) {
			t.Errorf("fullInst.%s at bytes [%d, %d), want in cache line %d", c.name, c.off, c.end, c.line)
		}
	}
	if n := unsafe.Sizeof(fi); n != 128 {
		t.Errorf("fullInst is %d bytes, want 128 (two cache lines)", n)
	}
}

// TestInstanceLayout: what a full-mode engine event reads of a rank's
// instance (Handle: events, cur, end; commBusy: busy, sized, rate, since)
// lies in one cache line, the instance's last.
func TestInstanceLayout(t *testing.T) {
	var in instance
	size := unsafe.Sizeof(in)
	if size%64 != 0 {
		t.Errorf("instance is %d bytes, not whole cache lines", size)
	}
	last := size/64 - 1
	for _, c := range []struct {
		name      string
		off, size uintptr
	}{
		{"events", unsafe.Offsetof(in.events), unsafe.Sizeof(in.events)},
		{"busy", unsafe.Offsetof(in.busy), 4},
		{"cur", unsafe.Offsetof(in.cur), 4},
		{"sized", unsafe.Offsetof(in.sized), 4},
		{"rate", unsafe.Offsetof(in.rate), 8},
		{"since", unsafe.Offsetof(in.since), 8},
		{"end", unsafe.Offsetof(in.end), 8},
	} {
		if c.off/64 != last || (c.off+c.size-1)/64 != last {
			t.Errorf("instance.%s at bytes [%d, %d), want in cache line %d", c.name, c.off, c.off+c.size, last)
		}
	}
}
