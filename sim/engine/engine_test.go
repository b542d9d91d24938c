package engine

import (
	"math/rand/v2"
	"slices"
	"sort"
	"syscall"
	"testing"
	"time"
)

type recorder struct {
	e   *Engine
	got []int64
	at  []Time
}

func (r *recorder) Handle(now Time, arg int64) {
	r.got = append(r.got, arg)
	r.at = append(r.at, now)
}

func TestOrderTimeThenSequence(t *testing.T) {
	e := New()
	r := &recorder{e: e}
	h := e.Register(r)
	e.At(30, h, 1)
	e.At(10, h, 2)
	e.At(10, h, 3)
	e.At(20, h, 4)
	e.At(0, h, 5) // zero-delay at now=0
	e.Run()
	want := []int64{5, 2, 3, 4, 1}
	for i := range want {
		if r.got[i] != want[i] {
			t.Fatalf("order = %v, want %v", r.got, want)
		}
	}
	if e.Now() != 30 {
		t.Fatalf("now = %v, want 30", e.Now())
	}
}

// chain schedules a zero-delay event from inside a handler; it must run
// before any later-time event and after events already queued at now.
type chain struct {
	e   *Engine
	h   HandlerID
	log *[]int64
}

func (c *chain) Handle(now Time, arg int64) {
	*c.log = append(*c.log, arg)
	if arg == 1 {
		c.e.After(0, c.h, 10)
	}
}

func TestZeroDelayFIFO(t *testing.T) {
	e := New()
	var log []int64
	c := &chain{e: e, log: &log}
	c.h = e.Register(c)
	e.At(5, c.h, 1)
	e.At(5, c.h, 2)
	e.At(6, c.h, 3)
	e.Run()
	want := []int64{1, 2, 10, 3}
	for i := range want {
		if log[i] != want[i] {
			t.Fatalf("log = %v, want %v", log, want)
		}
	}
}

// TestAgainstSortedReference checks the heap against a stable sort of the
// same events (the "dumb reference" check): equal times keep schedule order.
func TestAgainstSortedReference(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	e := New()
	r := &recorder{e: e}
	h := e.Register(r)
	type ev struct {
		at  Time
		arg int64
	}
	var ref []ev
	for i := 0; i < 5000; i++ {
		at := Time(rng.IntN(200)) // many ties
		e.At(at, h, int64(i))
		ref = append(ref, ev{at, int64(i)})
	}
	sort.SliceStable(ref, func(i, j int) bool { return ref[i].at < ref[j].at })
	e.Run()
	if len(r.got) != len(ref) {
		t.Fatalf("ran %d events, want %d", len(r.got), len(ref))
	}
	for i := range ref {
		if r.got[i] != ref[i].arg || r.at[i] != ref[i].at {
			t.Fatalf("event %d: got (%v,%d), want (%v,%d)", i, r.at[i], r.got[i], ref[i].at, ref[i].arg)
		}
	}
}

func TestRunUntilAndStop(t *testing.T) {
	e := New()
	r := &recorder{e: e}
	h := e.Register(r)
	for i := 1; i <= 10; i++ {
		e.At(Time(i)*Microsecond, h, int64(i))
	}
	if n := e.RunUntil(5 * Microsecond); n != 5 {
		t.Fatalf("RunUntil ran %d events, want 5", n)
	}
	if e.Pending() != 5 {
		t.Fatalf("pending = %d, want 5", e.Pending())
	}
	e.Run()
	if e.Executed() != 10 {
		t.Fatalf("executed = %d", e.Executed())
	}
}

// TestRunUntilBoundary: RunUntil(limit) runs the events at limit and
// leaves those one nanosecond later, whichever structure holds them: a
// few events (early, sorted), more than sortedMax (early, a heap), more
// than heapMax (bucketed).
func TestRunUntilBoundary(t *testing.T) {
	for _, n := range []int{3, sortedMax + 5, heapMax + 5} {
		e := New()
		r := &recorder{e: e}
		h := e.Register(r)
		const limit = 1000
		// n events: half at limit, half one nanosecond after, interleaved.
		for i := range n {
			e.At(limit+Time(i%2), h, int64(i))
		}
		if got, want := e.RunUntil(limit), uint64((n+1)/2); got != want {
			t.Errorf("%d pending: RunUntil(limit) ran %d events, want %d (those at limit)", n, got, want)
		}
		if e.Now() != limit || e.Pending() != n/2 {
			t.Errorf("%d pending: now %v with %d pending, want %v with %d", n, e.Now(), e.Pending(), Time(limit), n/2)
		}
	}
}

func TestPastEventPanics(t *testing.T) {
	e := New()
	r := &recorder{e: e}
	h := e.Register(r)
	e.At(10, h, 0)
	e.Run()
	defer func() {
		if recover() == nil {
			t.Fatal("scheduling in the past did not panic")
		}
	}()
	e.At(5, h, 0)
}

func TestSeconds(t *testing.T) {
	cases := []struct {
		in   float64
		want Time
	}{
		{0, 0}, {-1, 0}, {1e-9, 1}, {1.5e-9, 2}, {1, Second}, {2.5e-6, 2500},
	}
	for _, c := range cases {
		if got := Seconds(c.in); got != c.want {
			t.Errorf("Seconds(%g) = %d, want %d", c.in, got, c.want)
		}
	}
}

// hold implements the classic hold model: every event schedules one more at
// now + an exponential delay, so the queue size stays constant.
type hold struct {
	e         *Engine
	h         HandlerID
	delays    []Time
	i         int
	remaining int
}

func (h *hold) Handle(now Time, arg int64) {
	d := h.delays[h.i&(len(h.delays)-1)]
	h.i++
	h.e.After(d, h.h, arg)
	h.remaining--
	if h.remaining == 0 {
		h.e.Stop()
	}
}

func benchHold(b *testing.B, pending int) {
	e := New()
	rng := rand.New(rand.NewPCG(7, 9))
	hd := &hold{e: e, delays: make([]Time, 1<<16)}
	for i := range hd.delays {
		hd.delays[i] = 1 + Time(rng.ExpFloat64()*1000) // mean 1 µs
	}
	hd.h = e.Register(hd)
	for i := 0; i < pending; i++ {
		e.At(Time(rng.IntN(1000)), hd.h, int64(i))
	}
	// Warm up so the heap has grown to its steady size.
	e.RunUntil(e.Now() + 2000)
	b.ReportAllocs()
	b.ResetTimer()
	cpu0 := cpuTime()
	hd.remaining = b.N
	e.Run()
	cpu := cpuTime() - cpu0
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds()/1e6, "Mevents/s")
	// Per second of this process's CPU time: on a shared machine the wall
	// clock also counts the time other processes held the core.
	if cpu > 0 {
		b.ReportMetric(float64(b.N)/cpu.Seconds()/1e6, "Mevents/cpu-s")
	}
}

// cpuTime is the CPU time (user + system) this process has used so far.
func cpuTime() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// A sweep point's ranks hold a dozen events or so (8 on average at a push
// on the 70B sweep, 32 at most), which early keeps as a sorted array.
func BenchmarkHold8(b *testing.B)  { benchHold(b, 8) }
func BenchmarkHold16(b *testing.B) { benchHold(b, 16) }
func BenchmarkHold32(b *testing.B) { benchHold(b, 32) }

// Between the sorted array's few and the buckets' thousands: the ranks of
// a small cluster played every one (64 GPUs at flow fidelity hold 60–250).
func BenchmarkHold64(b *testing.B)  { benchHold(b, 64) }
func BenchmarkHold128(b *testing.B) { benchHold(b, 128) }
func BenchmarkHold256(b *testing.B) { benchHold(b, 256) }

func BenchmarkHold1k(b *testing.B)   { benchHold(b, 1_000) }
func BenchmarkHold100k(b *testing.B) { benchHold(b, 100_000) }
func BenchmarkHold1M(b *testing.B)   { benchHold(b, 1_000_000) }

// runDriver schedules, on each event, a few events with delays of 0 (the
// FIFO), a few nanoseconds (ties) or more, keeping about target pending,
// and stops the engine every stopEvery events (0: never).
type runDriver struct {
	e         *Engine
	h         HandlerID
	rng       *rand.Rand
	target    int
	zero      int // in 10: the chance of a zero delay
	stopEvery int
	limit     int
	log       []event
	held      int // events after which room was set with the FIFO holding events or the engine stopped
}

func (d *runDriver) Handle(now Time, arg int64) {
	d.log = append(d.log, event{at: now, arg: arg})
	if len(d.log) >= d.limit {
		return
	}
	if d.stopEvery > 0 && len(d.log)%d.stopEvery == 0 {
		d.e.Stop()
	}
	n := d.rng.IntN(2)
	if d.e.Pending() < d.target {
		n += 1 + d.rng.IntN(2)
	}
	for range n {
		var dt Time
		if d.rng.IntN(10) >= d.zero {
			dt = 1 + Time(d.rng.IntN(4))
			if d.rng.IntN(4) == 0 {
				dt += Time(d.rng.IntN(1000))
			}
		}
		d.e.After(dt, d.h, int64(len(d.log))<<8|int64(n))
	}
	// room != 0 says the FIFO is empty and the engine not stopped (hold):
	// runAll's in-place path tests room alone.
	if d.e.q.early.room != 0 && (len(d.e.fifo) != 0 || d.e.stopped) {
		d.held++
	}
}

// TestRunEqualsRunUntilForever: Run (runAll: the in-place path in a loop
// without a limit, run up to the next time elsewhere, run(Forever) once
// bucketing) runs the same events at the same times in the same order as
// RunUntil(Forever), the loop it replaced, with the AfterEvent hook on and
// off, across zero-delay events, early's storage wrapping and heap, the
// buckets, and Stop with Run called again: each call returns after the
// same events (it fails if Stop does not hold room at 0, or a zero-delay
// event does not), and room is never set with the FIFO holding events or
// the engine stopped.
func TestRunEqualsRunUntilForever(t *testing.T) {
	for _, c := range []struct {
		name         string
		target, zero int
		stopEvery    int
		afterEvent   bool
	}{
		{"few", 6, 0, 0, false},
		{"few, zero delays", 6, 3, 0, false},
		{"few, after-event hook", 6, 2, 0, true},
		{"heap", 48, 1, 0, false},
		{"buckets", 400, 1, 0, false},
		{"buckets, after-event hook", 400, 2, 0, true},
		{"stops", 12, 2, 997, false},
		{"stops, buckets", 400, 2, 997, true},
	} {
		play := func(run func(e *Engine) uint64) ([]event, []Time, Time, []uint64) {
			e := New()
			d := &runDriver{e: e, rng: rand.New(rand.NewPCG(11, 12)), target: c.target, zero: c.zero, stopEvery: c.stopEvery, limit: 30_000}
			d.h = e.Register(d)
			var hook []Time
			if c.afterEvent {
				e.SetAfterEvent(func(now Time) { hook = append(hook, now) })
			}
			for i := range 4 {
				e.At(Time(i), d.h, int64(i))
			}
			var calls []uint64 // the events of each call
			for e.Pending() > 0 {
				calls = append(calls, run(e))
			}
			if d.held != 0 {
				t.Fatalf("%s: room set after %d events with the FIFO holding events or the engine stopped", c.name, d.held)
			}
			return d.log, hook, e.Now(), calls
		}
		log, hook, now, n := play(func(e *Engine) uint64 { return e.Run() })
		wlog, whook, wnow, wn := play(func(e *Engine) uint64 { return e.RunUntil(Forever) })
		if len(wlog) < 30_000 || !slices.Equal(n, wn) || now != wnow || !slices.Equal(log, wlog) || !slices.Equal(hook, whook) {
			t.Fatalf("%s: Run's calls ran %v events to %v (hook %d), RunUntil(Forever)'s %v to %v (hook %d), logs equal %v", c.name, n, now, len(hook), wn, wnow, len(whook), slices.Equal(log, wlog))
		}
	}
}

// hookSetter schedules the next event 1 ns on (and a second one 3 ns on,
// so that a few are pending) until limit, and at the event at setAt sets
// the engine's AfterEvent hook, which records each time it runs at and
// clears itself at clearAt.
type hookSetter struct {
	e                     *Engine
	h                     HandlerID
	setAt, clearAt, limit Time
	hooked                []Time
}

func (s *hookSetter) Handle(now Time, arg int64) {
	if arg == 0 && now < s.limit {
		s.e.At(now+1, s.h, 0)
		s.e.At(now+3, s.h, 1)
	}
	if now == s.setAt && arg == 0 {
		s.e.SetAfterEvent(func(now Time) {
			s.hooked = append(s.hooked, now)
			if now == s.clearAt {
				s.e.SetAfterEvent(nil)
			}
		})
	}
}

// TestAfterEventSetByHandler: a hook set by a handler in the middle of a
// Run (as the layer skip sets its moment's) runs after that event and
// every one after it until it clears itself, on runAll's in-place path
// too (SetAfterEvent holds room at 0; it fails if it does not).
func TestAfterEventSetByHandler(t *testing.T) {
	for _, c := range []struct{ setAt, clearAt Time }{{10, 20}, {1, 2}, {30, 30}, {5, 45}} {
		e := New()
		s := &hookSetter{e: e, setAt: c.setAt, clearAt: c.clearAt, limit: 40}
		s.h = e.Register(s)
		e.At(1, s.h, 0)
		e.Run()
		// events: arg 0 at 1..40 and arg 1 at 4..42; the hook runs after
		// each from the arg-0 event at setAt until the first event at clearAt
		// (none after 42: the hook is left set)
		var want []Time
		for now := Time(1); now <= 42; now++ {
			if now >= 4 && now > c.setAt && now <= c.clearAt {
				want = append(want, now) // arg 1's, scheduled before arg 0's at now: runs first
			}
			if now <= 40 && now >= c.setAt && now <= c.clearAt && !(now == c.clearAt && now >= 4 && now > c.setAt) {
				want = append(want, now)
			}
		}
		if left := c.clearAt > 42; !slices.Equal(s.hooked, want) || (e.AfterEvent() != nil) != left {
			t.Fatalf("set at %v, cleared at %v: hook ran at %v (left set %v), want %v (left set %v)", c.setAt, c.clearAt, s.hooked, e.AfterEvent() != nil, want, left)
		}
	}
}
