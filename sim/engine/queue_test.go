package engine

import (
	"cmp"
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"
)

// spawner schedules zero to two events from each event it handles, at
// delays drawn from a small range (many ties, many zero delays), and logs
// what it handled.
type spawner struct {
	e   *Engine
	h   HandlerID
	rng *rand.Rand
	log [][2]int64
	n   int64
}

func (s *spawner) Handle(now Time, arg int64) {
	s.log = append(s.log, [2]int64{int64(now), arg})
	for k := s.rng.IntN(3); k > 0 && s.n < 20_000; k-- {
		s.n++
		s.e.After(Time(s.rng.IntN(4)*s.rng.IntN(3000)), s.h, s.n)
	}
}

// refEvent is an event of the reference: a list kept in (time, sequence)
// order, the total order the engine promises.
type refEvent struct {
	at       Time
	seq, arg int64
}

// TestQueueAgainstReference plays random event cascades, stopped at random
// limits (RunUntil) with events scheduled from outside in between (which
// can fall before the queue's last bucketed key), and checks every handled
// event's time and argument against a sorted-list reference; then the same
// after Reset, against a fresh engine's log.
//
// It runs twice: from 50 events scheduled first, and from 600, more than
// the queue keeps in its heap alone (heapMax), so that it buckets with
// events at or after last left in the heap.
func TestQueueAgainstReference(t *testing.T) {
	for _, initial := range []int{50, 600} {
		t.Run(fmt.Sprint(initial), func(t *testing.T) { queueAgainstReference(t, initial) })
	}
}

func queueAgainstReference(t *testing.T, initial int) {
	play := func(e *Engine, seed uint64) [][2]int64 {
		s := &spawner{e: e, rng: rand.New(rand.NewPCG(seed, 1))}
		s.h = e.Register(s)
		out := rand.New(rand.NewPCG(seed, 2))
		for i := 0; i < initial; i++ {
			s.n++
			e.At(Time(out.IntN(5000)), s.h, s.n)
		}
		if b := initial > heapMax; e.q.bucketing != b {
			t.Fatalf("%d events scheduled: bucketing %v, want %v", initial, e.q.bucketing, b)
		}
		for e.Pending() > 0 {
			e.RunUntil(e.Now() + Time(out.IntN(20000)))
			for k := out.IntN(4); k > 0; k-- {
				s.n++
				e.After(Time(out.IntN(3)*out.IntN(2000)), s.h, s.n)
			}
		}
		return s.log
	}
	reference := func(seed uint64) [][2]int64 {
		rng := rand.New(rand.NewPCG(seed, 1))
		out := rand.New(rand.NewPCG(seed, 2))
		var q []refEvent
		var now Time
		var seq, n int64
		add := func(at Time, arg int64) {
			seq++
			ev := refEvent{at, seq, arg}
			i, _ := slices.BinarySearchFunc(q, ev, func(a, b refEvent) int {
				if a.at != b.at {
					return int(a.at - b.at)
				}
				return int(a.seq - b.seq)
			})
			q = slices.Insert(q, i, ev)
		}
		var log [][2]int64
		for i := 0; i < initial; i++ {
			n++
			add(Time(out.IntN(5000)), n)
		}
		for len(q) > 0 {
			limit := now + Time(out.IntN(20000))
			for len(q) > 0 && q[0].at <= limit {
				ev := q[0]
				q = q[1:]
				now = ev.at
				log = append(log, [2]int64{int64(now), ev.arg})
				for k := rng.IntN(3); k > 0 && n < 20_000; k-- {
					n++
					add(now+Time(rng.IntN(4)*rng.IntN(3000)), n)
				}
			}
			for k := out.IntN(4); k > 0; k-- {
				n++
				add(now+Time(out.IntN(3)*out.IntN(2000)), n)
			}
		}
		return log
	}
	e := New()
	for seed := uint64(1); seed <= 5; seed++ {
		e.Reset()
		got, want := play(e, seed), reference(seed)
		if len(got) != len(want) {
			t.Fatalf("seed %d: handled %d events, want %d", seed, len(got), len(want))
		}
		for i := range want {
			if got[i] != want[i] {
				t.Fatalf("seed %d: event %d = (time %d, arg %d), want (%d, %d)", seed, i, got[i][0], got[i][1], want[i][0], want[i][1])
			}
		}
	}
}

// holdQueue is the hold model on a bare priority queue (no engine loop, no
// handler call): pop the earliest event and push one at its time plus an
// exponential delay, with pending events kept constant. One benchmark per
// queue the engine has had, so the choice can be measured again.
type holdQueue interface {
	push(event)
	pop() event
}

// radixHold is the radix queue alone: bucketing from the first event, not
// after heapMax as the engine's queue does.
type radixHold struct{ q queue }

func (r *radixHold) push(x event) {
	r.q.bucketing = true
	r.q.push(x)
}
func (r *radixHold) pop() event {
	x, _ := r.q.popUntil(Forever)
	return x
}

// earlyHold is early alone: a sorted array up to sortedMax events, a heap
// beyond.
type earlyHold struct{ q earlyQueue }

func (r *earlyHold) push(x event) { r.q.push(x) }
func (r *earlyHold) pop() event   { return r.q.pop() }

type binaryHold struct{ h binHeap }

func (b *binaryHold) push(x event) { b.h.push(x) }
func (b *binaryHold) pop() event   { return b.h.pop() }

func benchQueueHold(b *testing.B, q holdQueue, pending int) {
	rng := rand.New(rand.NewPCG(7, 9))
	delays := make([]Time, 1<<16)
	for i := range delays {
		delays[i] = 1 + Time(rng.ExpFloat64()*1000) // mean 1 µs
	}
	var seq uint64
	for i := 0; i < pending; i++ {
		seq++
		q.push(event{at: Time(rng.IntN(1000)), key: seq << handlerBits})
	}
	b.ReportAllocs()
	b.ResetTimer()
	cpu0 := cpuTime()
	for i := 0; i < b.N; i++ {
		x := q.pop()
		seq++
		q.push(event{at: x.at + delays[i&(len(delays)-1)], key: seq << handlerBits, arg: x.arg})
	}
	if cpu := cpuTime() - cpu0; cpu > 0 {
		b.ReportMetric(float64(b.N)/cpu.Seconds()/1e6, "Mevents/cpu-s")
	}
}

func BenchmarkQueueHold(b *testing.B) {
	for _, n := range []int{8, 16, 32, 64, 128, 256, 1_000, 100_000, 1_000_000} {
		b.Run(fmt.Sprintf("radix/%d", n), func(b *testing.B) { benchQueueHold(b, &radixHold{}, n) })
		b.Run(fmt.Sprintf("binary/%d", n), func(b *testing.B) { benchQueueHold(b, &binaryHold{}, n) })
		if n <= 256 {
			b.Run(fmt.Sprintf("early/%d", n), func(b *testing.B) { benchQueueHold(b, &earlyHold{}, n) })
		}
	}
}

// tieSpawner logs the arguments it handles; on argument 1 it schedules a
// zero-delay event (3) and then enough events later on to make the queue
// start bucketing while event 2, at the same time as the handled one and
// scheduled before the zero-delay one, is still in the heap.
type tieSpawner struct {
	e   *Engine
	h   HandlerID
	log []int64
}

func (r *tieSpawner) Handle(now Time, arg int64) {
	r.log = append(r.log, arg)
	if arg != 1 {
		return
	}
	r.e.After(0, r.h, 3)
	for i := 0; i < 10; i++ {
		r.e.After(20, r.h, int64(1000+i))
	}
}

// TestQueueStartsBucketingWithTies: the queue starts bucketing (heapMax)
// inside a handler while an event at now is still queued; that event,
// scheduled before the handler's zero-delay event, must run first, and the
// events of one time keep their schedule order across the move.
func TestQueueStartsBucketingWithTies(t *testing.T) {
	e := New()
	r := &tieSpawner{e: e}
	r.h = e.Register(r)
	e.At(10, r.h, 1)
	e.At(10, r.h, 2)
	for i := 0; i < heapMax-2; i++ {
		e.At(20, r.h, int64(100+i))
	}
	e.Run()
	if !e.q.bucketing {
		t.Fatal("the queue never started bucketing")
	}
	want := []int64{1, 2, 3}
	for i := 0; i < heapMax-2; i++ {
		want = append(want, int64(100+i))
	}
	for i := 0; i < 10; i++ {
		want = append(want, int64(1000+i))
	}
	if !slices.Equal(r.log, want) {
		t.Errorf("handled %v … (%d events), want %v … (%d)", r.log[:min(6, len(r.log))], len(r.log), want[:6], len(want))
	}
}

// burster plays the every-rank pattern settle moves run by run: each event
// it handles may schedule a burst of events at one time (a collective's
// ranks), at a delay that spreads the bursts over several digits, some
// bursts landing on a time another burst already holds, and single events
// between them. next is the handling order's decisions, shared with the
// reference so both schedule the same events.
type burster struct {
	e   *Engine
	h   HandlerID
	rng *rand.Rand
	log [][2]int64
	n   int64
}

// bursts returns the delays at which the handler of an event schedules
// its new events, drawing from rng: a burst of up to 300 events at one
// delay, or up to three single events, while fewer than max were made.
func bursts(rng *rand.Rand, n *int64, max int64) []Time {
	var d []Time
	switch rng.IntN(4) {
	case 0:
		at := Time(rng.IntN(8)) * Time(1+rng.IntN(1<<12)) // ties with other bursts
		for k := 1 + rng.IntN(300); k > 0 && *n < max; k-- {
			*n++
			d = append(d, at)
		}
	default:
		for k := rng.IntN(3); k > 0 && *n < max; k-- {
			*n++
			d = append(d, Time(rng.IntN(1<<20)))
		}
	}
	return d
}

func (r *burster) Handle(now Time, arg int64) {
	r.log = append(r.log, [2]int64{int64(now), arg})
	first := r.n
	for i, d := range bursts(r.rng, &r.n, 60_000) {
		r.e.After(d, r.h, first+int64(i)+1)
	}
}

// TestQueueBurstsAgainstReference plays bursts of events at one time
// (settle's runs, and buckets of one time that become bucket 0 whole)
// mixed with single events, bucketing from the start, and checks every
// handled event's time and argument against a list kept in (time,
// sequence) order.
func TestQueueBurstsAgainstReference(t *testing.T) {
	e := New()
	for seed := uint64(1); seed <= 4; seed++ {
		e.Reset()
		r := &burster{e: e, rng: rand.New(rand.NewPCG(seed, 3))}
		r.h = e.Register(r)
		init := rand.New(rand.NewPCG(seed, 4))
		var ref []refEvent
		var seq int64
		add := func(at Time, arg int64) {
			seq++
			ev := refEvent{at, seq, arg}
			i, _ := slices.BinarySearchFunc(ref, ev, func(a, b refEvent) int {
				if a.at != b.at {
					return cmp.Compare(a.at, b.at)
				}
				return cmp.Compare(a.seq, b.seq)
			})
			ref = slices.Insert(ref, i, ev)
		}
		for i := 0; i < 400; i++ { // past heapMax: the queue buckets
			r.n++
			at := Time(init.IntN(50)) * 1000
			e.At(at, r.h, r.n)
			add(at, r.n)
		}
		if !e.q.bucketing {
			t.Fatal("the queue is not bucketing")
		}
		e.Run()
		// The reference, with its own generator in the same state.
		rng := rand.New(rand.NewPCG(seed, 3))
		var n int64 = 400
		var want [][2]int64
		for len(ref) > 0 {
			ev := ref[0]
			ref = ref[1:]
			want = append(want, [2]int64{int64(ev.at), ev.arg})
			first := n
			for i, d := range bursts(rng, &n, 60_000) {
				add(ev.at+d, first+int64(i)+1)
			}
		}
		if len(r.log) != len(want) {
			t.Fatalf("seed %d: handled %d events, want %d", seed, len(r.log), len(want))
		}
		for i := range want {
			if r.log[i] != want[i] {
				t.Fatalf("seed %d: event %d = (time %d, arg %d), want (%d, %d)", seed, i, r.log[i][0], r.log[i][1], want[i][0], want[i][1])
			}
		}
	}
}

// TestSettleRandomHead fills one bucket of a high digit with times whose
// run starts fall before, at and after settle's switch to a random bucket
// (randomRuns run starts within the first 2·randomRuns events: the rest
// read for its minimum only, the bucket moved one event at a time), with
// the minimum before, at and after the switch, and checks that the queue
// pops them in (time, sequence) order.
func TestSettleRandomHead(t *testing.T) {
	run := func(n int, at Time) []Time { return slices.Repeat([]Time{at}, n) }
	desc := func(n int, from Time) []Time {
		var ts []Time
		for i := range n {
			ts = append(ts, from-Time(i))
		}
		return ts
	}
	pairs := func(n int, from Time) []Time { // runs of two: a run start every second event
		var ts []Time
		for i := range n {
			ts = append(ts, from-Time(i/2))
		}
		return ts
	}
	cases := map[string][]Time{
		"descending":             desc(40, 0x1ff),
		"random head, min last":  append(desc(2*randomRuns, 0x1f0), 0x1f3, 0x1f3, 0x100),
		"random head, runs tail": slices.Concat(desc(randomRuns+1, 0x1e0), run(20, 0x150), run(7, 0x120), run(3, 0x1ff)),
		"runs head, random tail": slices.Concat(run(20, 0x150), desc(30, 0x1c0), run(3, 0x101)),
		"pairs, switch at last":  slices.Concat([]Time{0x1f8}, pairs(2*randomRuns, 0x1f0), run(5, 0x140), []Time{0x110}),
		"pairs, one too late":    slices.Concat(run(2, 0x1f8), pairs(2*randomRuns, 0x1f0), run(5, 0x140), []Time{0x110}),
		"min first":              slices.Concat([]Time{0x100}, desc(30, 0x1ff), run(4, 0x100)),
		"one time":               run(30, 0x123),
		"alternating head":       slices.Concat(slices.Repeat([]Time{0x1a0, 0x180}, 20), run(9, 0x1c0), []Time{0x150}),
	}
	for name, ts := range cases {
		var q queue
		q.bucketing = true
		var want []event
		for i, at := range ts {
			x := event{at: at, key: uint64(i+1) << handlerBits, arg: int64(i)}
			q.push(x)
			want = append(want, x)
		}
		slices.SortStableFunc(want, func(a, b event) int { return cmp.Compare(a.at, b.at) })
		var got []event
		for {
			ev, ok := q.popUntil(Forever)
			if !ok {
				break
			}
			got = append(got, ev)
		}
		if !slices.Equal(got, want) {
			t.Errorf("%s: popped %v, want %v", name, got, want)
		}
	}
}
