package parallel

import (
	"runtime"
	"slices"
	"testing"

	"github.com/simtrain/simtrain/sim/engine"
	"github.com/simtrain/simtrain/sim/pipeline"
)

// A pool carves stages one after another from one array, caps each sealed
// stage at its length, grows into a new array it keeps (sized for what the
// build carved so far) and sizes the next build's array from what the
// last one needed (hand-counted cases).
func TestPool(t *testing.T) {
	var p pool[int32]
	var m mappings
	p.reserve(&m, 10)
	buf := p.buf
	// stage 0: three elements appended in place
	s := append(p.next(), 1, 2, 3)
	if cap(s) != 10 || &s[0] != &buf[0] {
		t.Fatalf("stage 0: cap %d, in the array %v; want 10, true", cap(s), &s[0] == &buf[0])
	}
	s = p.seal(s)
	if p.used != 3 || cap(s) != 3 || p.need != 3 {
		t.Fatalf("sealed: used %d cap %d need %d, want 3 3 3", p.used, cap(s), p.need)
	}
	if s = append(s, 4); &s[0] == &buf[0] {
		t.Fatal("an append to a sealed stage reached the next stage's storage")
	}
	// stage 1: starts after stage 0; 5 in place, then room for 4 more
	// than the 7 left: a new array of 2 × (3 + 5) = 16 with stage 1 at 0
	u := append(p.next(), 5, 6, 7, 8, 9)
	if &u[0] != &buf[3] || cap(u) != 7 {
		t.Fatalf("stage 1 starts at %v with cap %d, want buf[3], 7", &u[0] == &buf[3], cap(u))
	}
	u = p.grow(u, 4)
	if len(p.buf) != 16 || p.used != 0 || cap(u) != 16 || !slices.Equal(u, []int32{5, 6, 7, 8, 9}) || &u[0] != &p.buf[0] {
		t.Fatalf("grown: buf %d used %d cap %d %v, want 16 0 16 [5 6 7 8 9] at the new array's start", len(p.buf), p.used, cap(u), u)
	}
	u = p.seal(u)
	// finish's carving: 4 fit, then 20 do not: a new array of
	// max(2 × 16, (9 + 20) × 5/4) = 36
	c := p.carve(4)
	if len(c) != 4 || cap(c) != 4 || &c[0] != &p.buf[5] {
		t.Fatalf("carve(4): len %d cap %d at buf[5] %v", len(c), cap(c), &c[0] == &p.buf[5])
	}
	c = p.carve(20)
	if len(p.buf) != 36 || p.used != 20 || &c[0] != &p.buf[0] {
		t.Fatalf("carve(20): buf %d used %d", len(p.buf), p.used)
	}
	if p.need != 3+5+4+20 {
		t.Fatalf("need %d, want 32", p.need)
	}
	// the next build: 36 hold the 32 needed, kept
	p.reset()
	if len(p.buf) != 36 || p.used != 0 || p.need != 0 {
		t.Fatalf("reset: buf %d used %d need %d, want 36 0 0", len(p.buf), p.used, p.need)
	}
	// a stage that left the array (appended past its room) counts in need:
	// 40 > 36, the next build's array is 40 + 10 = 50
	v := append(p.next()[:0:2], make([]int32, 40)...)
	p.seal(v)
	if p.used != 0 {
		t.Fatalf("a stage outside the array moved the tail to %d", p.used)
	}
	p.reset()
	if len(p.buf) != 50 {
		t.Fatalf("reset after a stage of 40 outside: buf %d, want 50", len(p.buf))
	}
	// in-place growth: the stage's capacity was cut short, the array has room
	w := p.next()[:0:2]
	w = p.grow(w, 30)
	if &w[:1][0] != &p.buf[0] || cap(w) != 50 {
		t.Fatalf("grow within the array: cap %d", cap(w))
	}
	// reserve keeps a larger array, replaces a smaller one by one of the
	// size asked or twice the old one's, the larger
	p.reserve(&m, 20)
	if len(p.buf) != 50 {
		t.Fatalf("reserve(20) replaced a 50: %d", len(p.buf))
	}
	p.reserve(&m, 80)
	if len(p.buf) != 100 || p.used != 0 {
		t.Fatalf("reserve(80) of a 50: %d, used %d", len(p.buf), p.used)
	}
	p.reserve(&m, 300)
	if len(p.buf) != 300 || p.used != 0 {
		t.Fatalf("reserve(300) of a 100: %d, used %d", len(p.buf), p.used)
	}
	runtime.KeepAlive(&m) // (the holder of p's storage: mappings)
}

// Builds within an arena's reservation leave its arrays where they are
// (no growth, no copy), whatever their pipeline depth, and equal a build
// without an arena.
func TestArenaReserveHolds(t *testing.T) {
	pr := commPricer{unit: engine.Millisecond, comm: 300 * engine.Microsecond}
	cases := []struct{ tp, dp, pp, m int }{{2, 2, 4, 8}, {2, 1, 8, 32}, {4, 1, 1, 16}, {2, 2, 2, 8}}
	most := 0
	for _, c := range cases {
		_, cfg := stepConfig(t, c.tp, c.dp, c.pp, c.m, pipeline.OneFOneB)
		progs, err := Build(cfg, pr)
		if err != nil {
			t.Fatal(err)
		}
		n := 0
		for _, p := range progs {
			n += len(p.Tasks)
		}
		most = max(most, n)
	}
	a := new(Arena)
	a.Reserve(most)
	tasks, hot, deps, succ := &a.tasks.buf[0], &a.hot.buf[0], &a.deps.buf[0], &a.succList.buf[0]
	for _, c := range cases {
		_, cfg := stepConfig(t, c.tp, c.dp, c.pp, c.m, pipeline.OneFOneB)
		fresh := *cfg
		want, err := Build(&fresh, pr)
		if err != nil {
			t.Fatal(err)
		}
		cfg.Arena = a
		got, err := Build(cfg, pr)
		if err != nil {
			t.Fatal(err)
		}
		if &a.tasks.buf[0] != tasks || &a.hot.buf[0] != hot || &a.deps.buf[0] != deps || &a.succList.buf[0] != succ {
			t.Fatalf("%+v: a build within the reservation (%d tasks) replaced the arena's arrays", c, most)
		}
		for s := range want {
			if !slices.Equal(got[s].Tasks, want[s].Tasks) || len(got[s].hot) != len(want[s].Tasks) {
				t.Fatalf("%+v stage %d: tasks differ", c, s)
			}
			for i := range want[s].Tasks {
				if !slices.Equal(got[s].Deps(i), want[s].Deps(i)) || !slices.Equal(got[s].Succ(i), want[s].Succ(i)) {
					t.Fatalf("%+v stage %d task %d: deps or successors differ", c, s, i)
				}
			}
			if s > 0 && cap(got[s-1].Tasks) != len(got[s-1].Tasks) {
				t.Fatalf("%+v stage %d: not capped at its length", c, s-1)
			}
		}
	}
}

// roomy keeps an array that holds n (emptied) and otherwise returns an
// empty one with room for n and half as many again (hand-counted cases).
func TestRoomy(t *testing.T) {
	s := make([]int32, 3, 8)
	if r := roomy(s, 8); len(r) != 0 || cap(r) != 8 || &r[:1][0] != &s[0] {
		t.Fatalf("roomy(cap 8, 8): len %d cap %d, want 0 8 on the same array", len(r), cap(r))
	}
	if r := roomy(s, 9); len(r) != 0 || cap(r) != 13 || &r[:1][0] == &s[0] {
		t.Fatalf("roomy(cap 8, 9): len %d cap %d, want 0 13 on a new array", len(r), cap(r))
	}
	if r := roomy[int32](nil, 0); len(r) != 0 {
		t.Fatalf("roomy(nil, 0): len %d", len(r))
	}
}

// pool.untouched (and pool.above, which Fork's parked copies use) on a
// build's first array of 100 elements with a park at [80, 90)
// (keptPrefixes' place, above every stage): intact while the build has
// written below it; not once a stage has appended over it in
// place, and still not after that stage grew into a new array (the case
// parkedIntact took as intact: issue 18, round 63); intact in the old
// array when the stage that grew had stopped below it; a slice of the new
// array past its used part is untouched, one of an unrelated array never
// is (above: always is). Dropping the old array's record (left), from
// untouched or from above, or the stage's own length from leave fails it.
func TestPoolUntouchedAcrossGrowth(t *testing.T) {
	fresh := func() (*pool[int32], []int32) {
		p := &pool[int32]{buf: make([]int32, 100)}
		return p, p.buf[80:90]
	}
	p, park := fresh()
	s := append(p.next(), make([]int32, 30)...) // stage 0: 30 in place
	if !p.untouched(park) {
		t.Fatal("a park above the stage being built is not untouched")
	}
	p.seal(s)
	s = append(p.next(), make([]int32, 65)...) // stage 1: to 95, over the park, in place
	s = p.grow(s, 20)                          // then into a new array
	if len(p.left) != 100 || p.leftWritten != 95 {
		t.Fatalf("left %d written %d, want 100 and 95", len(p.left), p.leftWritten)
	}
	if p.untouched(park) || p.above(park) {
		t.Error("a park written over in place, then left for a new array: untouched or above")
	}
	p.seal(s)
	if !p.untouched(p.buf[len(s):]) || p.untouched(p.buf[:1]) {
		t.Error("the new array: its tail not untouched, or its used part untouched")
	}
	if other := make([]int32, 4); p.untouched(other) || p.untouched(park[:0]) || !p.above(other) || !p.above(park[:0]) {
		t.Error("another array or an empty slice: untouched, or not above")
	}

	// the stage that grows stopped at 70, below the park: intact
	p, park = fresh()
	s = append(p.next(), make([]int32, 70)...)
	p.seal(p.grow(s, 40))
	if !p.untouched(park) || !p.above(park) {
		t.Error("a park above what the build wrote before it grew: not untouched, or not above")
	}
	// a carve that leaves the array: written up to the tail
	p, park = fresh()
	p.seal(append(p.next(), make([]int32, 85)...))
	p.carve(30)
	if p.untouched(park) || p.leftWritten != 85 {
		t.Errorf("carve past the array: untouched %v, written %d, want false, 85", p.untouched(park), p.leftWritten)
	}
	// the next build starts afresh
	p.reset()
	if p.left != nil || p.leftWritten != 0 {
		t.Error("reset kept the last build's old array")
	}
}
