package parallel

import (
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/simtrain/simtrain/sim/engine"
)

// statsOf measures tasks played at the given times as one instance.
func statsOf(tasks []Task, start, end []engine.Time) Stats {
	state := make([]taskState, len(tasks))
	for t := range state {
		state[t].start, state[t].end = start[t]+1, end[t]+1
	}
	x := &Executor{inst: []instance{{prog: &Program{Tasks: tasks}, state: state}}}
	return x.Stats(0)
}

// TestStatsByHand: a step small enough to account for on paper.
func TestStatsByHand(t *testing.T) {
	tasks := []Task{
		{Kind: KindForward, Stream: StreamCompute},                   // [0, 10)
		{Kind: KindAllReduce, Stream: StreamTP, Group: GroupTP},      // [5, 15): under compute
		{Kind: KindForward, Stream: StreamCompute},                   // [10, 20)
		{Kind: KindRecv, Stream: StreamPPRecvAct, Group: GroupPP},    // [25, 35)
		{Kind: KindSend, Stream: StreamPPSend, Group: GroupPP},       // [22, 24): listed after the later receive
		{Kind: KindReduceScatter, Stream: StreamDP, Group: GroupEDP}, // [20, 30): expert DP counts as DP
		{Kind: KindHostSync, Stream: StreamCompute},                  // [40, 45)
		{Kind: KindHostCopy, Stream: StreamD2H},                      // [50, 60): nobody waits, not in End
		{Kind: KindAllGather, Stream: StreamTP, Group: GroupETP},     // [45, 45): empty
		{Kind: KindAllToAll, Stream: StreamEP, Group: GroupEP},       // [42, 44): under the host stall
		{Kind: KindReduceScatter, Stream: StreamDP, Group: GroupDP},  // [30, 31)
		{Kind: KindBackward, Stream: StreamCompute},                  // [36, 38)
		{Kind: KindAllGather, Stream: StreamCP, Group: GroupCP},      // [35, 37): 1 exposed
		{Kind: KindRecv, Stream: StreamPPRecvGrd, Group: GroupPP},    // [33, 34): inside [25, 35)
	}
	start := []engine.Time{0, 5, 10, 25, 22, 20, 40, 50, 45, 42, 30, 36, 35, 33}
	end := []engine.Time{10, 15, 20, 35, 24, 30, 45, 60, 45, 44, 31, 38, 37, 34}
	got := statsOf(tasks, start, end)
	want := Stats{End: 45, Compute: 22, Host: 5,
		// tp 0, cp [35,36), ep 0, dp [20,31) less nothing = 11, pp [22,24) and [25,35) = 12
		Exposed: [NumExposed]engine.Time{0, 1, 0, 11, 12},
		// busy: [0,38) and [40,45), so idle [38,40)
		Idle: 2}
	if got != want {
		t.Fatalf("stats %+v, want %+v", got, want)
	}
}

// TestStatsAgainstNanoseconds checks the interval arithmetic against
// counting every nanosecond of random steps (the dumb reference).
func TestStatsAgainstNanoseconds(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	kinds := []Task{
		{Kind: KindForward, Stream: StreamCompute}, {Kind: KindHostSync, Stream: StreamCompute},
		{Kind: KindHostCopy, Stream: StreamH2D}, {Kind: KindAllReduce, Group: GroupTP},
		{Kind: KindAllGather, Group: GroupCP}, {Kind: KindAllToAll, Group: GroupEP},
		{Kind: KindReduceScatter, Group: GroupDP}, {Kind: KindReduceScatter, Group: GroupEDP},
		{Kind: KindSend, Group: GroupPP}, {Kind: KindRecv, Group: GroupPP}, {Kind: KindAllGather, Group: GroupETP},
	}
	for trial := 0; trial < 200; trial++ {
		n := 1 + rng.IntN(40)
		tasks := make([]Task, n)
		start, end := make([]engine.Time, n), make([]engine.Time, n)
		for i := range tasks {
			tasks[i] = kinds[rng.IntN(len(kinds))]
			start[i] = engine.Time(rng.IntN(200))
			end[i] = start[i] + engine.Time(rng.IntN(30))
		}
		if trial%2 == 1 {
			// in time order, as a stream's tasks mostly are: compute's
			// and tensor parallelism's list comes out merged (walker.both)
			for i := 1; i < n; i++ {
				at := start[i-1] + engine.Time(rng.IntN(8))
				end[i] += at - start[i]
				start[i] = at
			}
		}
		got := statsOf(tasks, start, end)
		var want Stats
		for i := range tasks {
			if tasks[i].Kind != KindHostCopy {
				want.End = max(want.End, end[i])
			}
		}
		for ns := engine.Time(0); ns < 600; ns++ {
			var comp, busy bool
			var comm [NumExposed]bool
			for i, tk := range tasks {
				if start[i] > ns || ns >= end[i] {
					continue
				}
				switch {
				case tk.Kind.IsComm():
					comm[ExposedOf[tk.Group]], busy = true, true
				case tk.Kind.IsCompute():
					comp, busy = true, true
				case tk.Kind == KindHostSync:
					comp, busy = true, true
				}
			}
			for k := range comm {
				if comm[k] && !comp {
					want.Exposed[k]++
				}
			}
			if !busy && ns < want.End {
				want.Idle++
			}
		}
		for i, tk := range tasks {
			switch {
			case tk.Kind.IsCompute():
				want.Compute += end[i] - start[i]
			case tk.Kind == KindHostSync:
				want.Host += end[i] - start[i]
			}
		}
		if got != want {
			t.Fatalf("trial %d: stats %+v, counting nanoseconds %+v", trial, got, want)
		}
	}
}

// Widening the last interval while appending (appendInterval) leaves the
// merged union as plain appending gives it: random lists, mostly in order
// as a stream's tasks are, some out of order as pipeline receives are.
// putInterval appends the same, and a list it does not flag unsorted is
// merged already; mergeIntervals (one pass while in order) equals sorting
// and merging.
func TestAppendIntervalSameUnion(t *testing.T) {
	rng := rand.New(rand.NewPCG(18, 3000))
	ordered := 0
	for trial := 0; trial < 2000; trial++ {
		var plain, widened, added []interval
		unsorted := false
		var at engine.Time
		for n := rng.IntN(40); n > 0; n-- {
			switch rng.IntN(4) {
			case 0:
				at -= engine.Time(rng.IntN(20)) // out of order
			case 1:
				at += engine.Time(rng.IntN(5)) // a gap
			}
			x := interval{at, at + 1 + engine.Time(rng.IntN(10))}
			if rng.IntN(3) == 0 {
				at = x.b
			} else {
				at += engine.Time(rng.IntN(int(x.b-x.a) + 1))
			}
			plain = append(plain, x)
			appendInterval(&widened, x)
			added = slices.Grow(added, 1) // walker.walk's room
			putInterval(&added, x, &unsorted)
		}
		want := refMerge(plain)
		if got := mergeIntervals(slices.Clone(widened)); !slices.Equal(got, want) {
			t.Fatalf("trial %d: %v gives %v, want %v", trial, plain, got, want)
		}
		if !slices.Equal(added, widened) {
			t.Fatalf("trial %d: putInterval %v, appendInterval %v", trial, added, widened)
		}
		if !unsorted {
			ordered++
			if !slices.Equal(added, want) {
				t.Fatalf("trial %d: %v, not flagged unsorted, is not merged: %v, want %v", trial, plain, added, want)
			}
		}
		if got := mergeIntervals(slices.Clone(plain)); !slices.Equal(got, want) {
			t.Fatalf("trial %d: mergeIntervals(%v) = %v, want %v", trial, plain, got, want)
		}
	}
	if ordered < 100 || ordered > 1900 {
		t.Errorf("%d of 2000 lists in order: both cases should be common", ordered)
	}
}

// refMerge is mergeIntervals' plain reference: sorted, then merged, on a
// copy.
func refMerge(v []interval) []interval {
	v = slices.Clone(v)
	slices.SortFunc(v, compareIntervals)
	var out []interval
	for _, x := range v {
		if n := len(out); n > 0 && x.a <= out[n-1].b {
			out[n-1].b = max(out[n-1].b, x.b)
			continue
		}
		out = append(out, x)
	}
	return out
}

// unionLength measures the union of merged lists, and its part in a
// window, as counting every nanosecond does: random lists, one to
// 1 + NumExposed of them, some empty, windows inside, across and outside.
func TestUnionLength(t *testing.T) {
	rng := rand.New(rand.NewPCG(21, 6))
	var buf [2][]interval
	for trial := 0; trial < 3000; trial++ {
		lists := make([][]interval, 1+rng.IntN(1+NumExposed))
		for l := range lists {
			var v []interval
			for n := rng.IntN(12); n > 0; n-- {
				a := engine.Time(rng.IntN(150))
				v = append(v, interval{a, a + engine.Time(rng.IntN(20))})
			}
			lists[l] = refMerge(v)
		}
		lo := engine.Time(rng.IntN(200)) - 20
		hi := lo + engine.Time(rng.IntN(80))
		var want, wantIn engine.Time
		for ns := engine.Time(-30); ns < 200; ns++ {
			for _, v := range lists {
				if slices.ContainsFunc(v, func(x interval) bool { return x.a <= ns && ns < x.b }) {
					want++
					if lo <= ns && ns < hi {
						wantIn++
					}
					break
				}
			}
		}
		got, gotIn := unionLength(slices.Clone(lists), &buf, lo, hi)
		if got != want || gotIn != wantIn {
			t.Fatalf("trial %d: %v in [%d, %d): %d and %d inside, counting %d and %d", trial, lists, lo, hi, got, gotIn, want, wantIn)
		}
	}
}

// lengthMinus measures a \ b (both merged) as counting every nanosecond
// does, with b long and a short (a data-parallel list against compute,
// many compute intervals between two of a's) and both alike.
func TestLengthMinus(t *testing.T) {
	rng := rand.New(rand.NewPCG(21, 7))
	for trial := 0; trial < 3000; trial++ {
		list := func(n, gap int) []interval {
			var v []interval
			for at := engine.Time(rng.IntN(gap + 1)); n > 0; n-- {
				x := interval{at, at + engine.Time(rng.IntN(6))}
				v, at = append(v, x), x.b+engine.Time(rng.IntN(gap+1))
			}
			return refMerge(v)
		}
		var a, b []interval
		if trial%2 == 0 {
			a, b = list(rng.IntN(8), 120), list(rng.IntN(200), 4)
		} else {
			a, b = list(rng.IntN(40), 10), list(rng.IntN(40), 10)
		}
		var want engine.Time
		for ns := engine.Time(0); ns < 1200; ns++ {
			in := func(v []interval) bool {
				return slices.ContainsFunc(v, func(x interval) bool { return x.a <= ns && ns < x.b })
			}
			if in(a) && !in(b) {
				want++
			}
		}
		if got := lengthMinus(a, b); got != want {
			t.Fatalf("trial %d: |%v \\ %v| = %d, counting %d", trial, a, b, got, want)
		}
	}
}

// TestWalkClasses: what the walk does with a task, by hand, against the
// walkClasses entry of its kind, group, stream and walk.
func TestWalkClasses(t *testing.T) {
	for _, c := range []struct {
		kind                 Kind
		group                GroupKind
		stream               Stream
		hosted, read, joint  bool
		act                  uint8
		host, readDeps, end_ bool
	}{
		{KindForward, GroupTP, StreamCompute, false, false, false, walkActCompute, false, false, true},
		{KindRecompute, GroupTP, StreamCompute, true, false, true, walkActCompute, true, false, true},
		{KindOptimizer, GroupTP, StreamCompute, true, true, true, walkActCompute, true, true, true},
		{KindHostSync, GroupTP, StreamCompute, true, false, false, walkActHostSync, true, false, true},
		{KindAllReduce, GroupTP, StreamTP, false, false, true, walkActTP, false, false, true},
		{KindAllReduce, GroupTP, StreamTP, true, true, true, walkActTP, false, false, true}, // not on the compute stream
		{KindAllReduce, GroupTP, StreamCompute, true, true, true, walkActTP, true, true, true},
		{KindAllGather, GroupETP, StreamTP, false, false, true, walkActTP, false, false, true},
		{KindReduceScatter, GroupTP, StreamCompute, true, false, false, walkActTPOwn, true, false, true},
		{KindAllGather, GroupCP, StreamCP, false, false, true, listComm + 1, false, false, true},
		{KindAllToAll, GroupEP, StreamCompute, true, true, false, listComm + 2, true, true, true},
		{KindReduceScatter, GroupEDP, StreamDP, false, false, false, listComm + 3, false, false, true},
		{KindAllReduce, GroupDP, StreamDP, true, false, false, listComm + 3, false, false, true},
		{KindSend, GroupPP, StreamPPSend, true, false, true, listComm + 4, false, false, true},
		{KindRecv, GroupPP, StreamPPRecvAct, true, true, true, walkActRecv, false, false, true}, // no host issues a receive
		{KindRecv, GroupPP, StreamCompute, true, true, true, walkActRecv, false, false, true},
		{KindRecv, GroupPP, StreamPPRecvGrd, false, false, true, walkActRecvGrd, false, false, true},
		{KindRecv, GroupDP, StreamPPRecvGrd, false, false, true, listComm + 3, false, false, true},
		{KindHostCopy, GroupTP, StreamCompute, true, false, true, walkActNone, true, false, false},
		{KindHostCopy, GroupTP, StreamD2H, true, false, true, walkActNone, false, false, false},
		{KindHostCopy, GroupDP, StreamH2D, false, false, false, walkActNone, false, false, false},
	} {
		got := walkClasses[walkMode(c.hosted, c.read, c.joint)][walkKey(c.kind, c.group, c.stream)]
		act := got &^ (walkHost | walkRead | walkEnd)
		if act != c.act || (got&walkHost != 0) != c.host || (got&walkRead != 0) != c.readDeps || (got&walkEnd != 0) != c.end_ {
			t.Errorf("%v %v %v hosted %v read %v joint %v: class %#x (action %d), want action %d host %v read %v end %v",
				c.kind, c.group, c.stream, c.hosted, c.read, c.joint, got, act, c.act, c.host, c.readDeps, c.end_)
		}
	}
}

// TestStatsLongSteps measures steps of thousands of tasks, some hosted
// with waits for the host thread, as counting every nanosecond does: the
// walk's chunks of 1,024 tasks, its lists growing between them from empty
// (in time order with gaps, so that thousands of intervals are appended,
// and compute's and tensor parallelism's list, walker.both, is used), and
// steps with a few tasks out of order (lists merged, tensor parallelism's
// walked again).
func TestStatsLongSteps(t *testing.T) {
	rng := rand.New(rand.NewPCG(22, 1024))
	kinds := []Task{
		{Kind: KindForward, Stream: StreamCompute}, {Kind: KindBackward, Stream: StreamCompute},
		{Kind: KindHostSync, Stream: StreamCompute}, {Kind: KindHostCopy, Stream: StreamD2H},
		{Kind: KindAllReduce, Stream: StreamTP, Group: GroupTP}, {Kind: KindAllGather, Stream: StreamTP, Group: GroupTP},
		{Kind: KindAllGather, Stream: StreamCP, Group: GroupCP}, {Kind: KindAllToAll, Stream: StreamEP, Group: GroupEP},
		{Kind: KindReduceScatter, Stream: StreamDP, Group: GroupDP}, {Kind: KindSend, Stream: StreamPPSend, Group: GroupPP},
		{Kind: KindRecv, Stream: StreamPPRecvAct, Group: GroupPP}, {Kind: KindRecv, Stream: StreamPPRecvGrd, Group: GroupPP},
	}
	waits := 0
	for trial := 0; trial < 16; trial++ {
		hosted, ordered := trial%2 == 1, trial%4 < 2
		n := 2500 + rng.IntN(2000)
		tasks := make([]Task, n)
		state := make([]taskState, n)
		p := &Program{Tasks: tasks, Hosted: hosted, depOff: make([]int32, n+1), hot: make([]hotTask, n)} // (hot: the issue times)
		var want Stats
		start, end := make([]engine.Time, n), make([]engine.Time, n)
		waitFrom, waitTo := make([]engine.Time, n), make([]engine.Time, n)
		at, lastComp := engine.Time(0), -1
		for i := range tasks {
			tasks[i] = kinds[rng.IntN(len(kinds))]
			p.hot[i].issue = engine.Time(rng.IntN(4))
			if !ordered && rng.IntN(60) == 0 {
				at = max(0, at-engine.Time(rng.IntN(40))) // out of order
			}
			start[i] = at + engine.Time(rng.IntN(3))
			dur := 1 + engine.Time(rng.IntN(8))
			issued := engine.Time(-1) // not issued: a receive, or no host thread
			if hosted && tasks[i].Kind != KindRecv {
				issued = max(0, start[i]-engine.Time(rng.IntN(12)))
				want.HostIssue += p.hot[i].issue
			}
			if hosted && tasks[i].Stream == StreamCompute {
				// the play starts it at max(ready, issued), its ready
				// the last compute-stream task's end
				var ready engine.Time
				if lastComp >= 0 {
					p.deps = append(p.deps, int32(lastComp))
					ready = end[lastComp]
				}
				// (issued from its start drawn on: not before the tasks
				// before it, as in order as they are)
				issued = start[i] + engine.Time(rng.IntN(8))
				start[i] = max(ready, issued)
				if issued > ready {
					waitFrom[i], waitTo[i] = ready, issued
					want.HostBound += issued - ready
					waits++
				}
				lastComp = i
			}
			p.depOff[i+1] = int32(len(p.deps))
			end[i] = start[i] + dur
			at = start[i] + engine.Time(rng.IntN(int(dur)+4))
			state[i] = taskState{start: start[i] + 1, end: end[i] + 1, issued: issued + 1}
			if tasks[i].Kind != KindHostCopy {
				want.End = max(want.End, end[i])
			}
		}
		// the references: per nanosecond, what is in flight
		horizon := want.End + 20
		comp, comm := make([]int, horizon+1), make([][]int, NumExposed)
		for k := range comm {
			comm[k] = make([]int, horizon+1)
		}
		for i, tk := range tasks {
			if waitTo[i] > waitFrom[i] {
				comp[waitFrom[i]]++
				comp[waitTo[i]]--
			}
			switch {
			case tk.Kind.IsComm():
				comm[ExposedOf[tk.Group]][start[i]]++
				comm[ExposedOf[tk.Group]][end[i]]--
			case tk.Kind.IsCompute():
				want.Compute += end[i] - start[i]
				comp[start[i]]++
				comp[end[i]]--
			case tk.Kind == KindHostSync:
				want.Host += end[i] - start[i]
				comp[start[i]]++
				comp[end[i]]--
			}
		}
		var c int
		var k [NumExposed]int
		for ns := engine.Time(0); ns < horizon; ns++ {
			c += comp[ns]
			busy := c > 0
			for j := range k {
				k[j] += comm[j][ns]
				if k[j] > 0 {
					busy = true
					if c == 0 {
						want.Exposed[j]++
					}
				}
			}
			if !busy && ns < want.End {
				want.Idle++
			}
		}
		x := &Executor{inst: []instance{{prog: p, state: state}}}
		if got := x.Stats(0); got != want {
			t.Fatalf("trial %d (%d tasks, hosted %v, in order %v): stats %+v, counting nanoseconds %+v", trial, n, hosted, ordered, got, want)
		}
		if got := x.StatsEveryWait(0); got != want {
			t.Fatalf("trial %d (%d tasks, hosted %v, in order %v): every wait read %+v, counting nanoseconds %+v", trial, n, hosted, ordered, got, want)
		}
	}
	if waits < 100 {
		t.Errorf("%d waits for the host thread: the hosted steps should have many", waits)
	}
}

// putInterval is walker.put as it was (the walk's lists until stats34,
// the last interval widened in place), kept as put's reference:
// appendInterval on a list with room for x that also sets *unsorted when
// x starts before v's last interval.
func putInterval(v *[]interval, x interval, unsorted *bool) {
	n := len(*v)
	if n > 0 && x.a <= (*v)[n-1].b {
		if x.a >= (*v)[n-1].a {
			(*v)[n-1].b = max((*v)[n-1].b, x.b)
			return
		}
		*unsorted = true
	}
	*v = (*v)[:n+1] // only the length is stored
	(*v)[n] = x
}

// putCompInterval is putInterval for compute's list as putComp fills it:
// an interval that starts inside the last one, not where it ends, is
// appended and the list marked unsorted, as one that starts before it.
func putCompInterval(v *[]interval, x interval, unsorted *bool) {
	n := len(*v)
	if n > 0 && x.a <= (*v)[n-1].b {
		if x.a == (*v)[n-1].b {
			(*v)[n-1].b = x.b
			return
		}
		*unsorted = true
	}
	*v = (*v)[:n+1]
	(*v)[n] = x
}

// TestPutEqualsPutInterval: walker.put with its open intervals, then
// closeLists, gives every list and unsorted flag that putInterval gives
// on the same intervals: random lists (appendInterval's test's: mostly
// in order, some out of order, gaps, touching), several lists filled at
// once, times from −1 (a task not started, shifted by 0), lists left
// empty, storage with exactly the room put needs (closeLists then grows
// it for the last open interval) or more, and the storage closeLists
// leaves: noInterval first, the list after it. Compute's list is filled
// by putComp (its open interval in the storage, room for it given as
// walk gives it), against putCompInterval.
func TestPutEqualsPutInterval(t *testing.T) {
	rng := rand.New(rand.NewPCG(34, 1))
	grown := 0
	for trial := 0; trial < 3000; trial++ {
		var want [numLists][]interval
		var wantUnsorted [numLists]bool
		var xs []struct {
			l int
			x interval
		}
		at := [numLists]engine.Time{}
		for l := range at {
			at[l] = -1
		}
		for n := rng.IntN(80); n > 0; n-- {
			l := rng.IntN(numLists)
			switch rng.IntN(5) {
			case 0:
				at[l] = max(-1, at[l]-engine.Time(rng.IntN(20))) // out of order
			case 1:
				at[l] += engine.Time(rng.IntN(5)) // a gap
			}
			x := interval{at[l], at[l] + 1 + engine.Time(rng.IntN(10))}
			if rng.IntN(3) == 0 {
				at[l] = x.b
			} else {
				at[l] += engine.Time(rng.IntN(int(x.b-x.a) + 1))
			}
			want[l] = slices.Grow(want[l], 1)
			if l == listComp {
				putCompInterval(&want[l], x, &wantUnsorted[l])
			} else {
				putInterval(&want[l], x, &wantUnsorted[l])
			}
			xs = append(xs, struct {
				l int
				x interval
			}{l, x})
		}
		var w walker
		exact := trial%2 == 0
		for l := range w.lists {
			w.open[l] = noInterval
			// put closes noInterval and every interval but the last
			room := len(want[l])
			if !exact {
				room += rng.IntN(4)
			}
			if l == listComp {
				room++ // its open interval, in the storage (walk's room)
			}
			w.lists[l] = make([]interval, room)
		}
		w.lists[listComp][0] = noInterval // (newWalker)
		for _, p := range xs {
			if p.l == listComp {
				w.putComp(p.x)
			} else {
				w.put(p.l, p.x)
			}
		}
		got := w.closeLists()
		for l := range got {
			if !slices.Equal(got[l], want[l]) || w.unsorted[l] != wantUnsorted[l] {
				t.Fatalf("trial %d list %d: put %v (unsorted %v), putInterval %v (unsorted %v)", trial, l, got[l], w.unsorted[l], want[l], wantUnsorted[l])
			}
			if len(want[l]) == 0 {
				continue
			}
			if exact {
				grown++
			}
			if w.count(l) != len(want[l])+1 || w.lists[l][0] != noInterval || !slices.Equal(w.lists[l][1:w.count(l)], want[l]) {
				t.Fatalf("trial %d list %d: storage %v, count %d, want noInterval and %v", trial, l, w.lists[l][:w.count(l)], w.count(l), want[l])
			}
		}
	}
	if grown < 1000 {
		t.Errorf("%d lists grown by closeLists: the exact-room case should be common", grown)
	}
}

// walkRule is what run did with a task before its records carried
// walkKey (walker.run with the kind and group masked into a table's
// index, the stream tested in the loop), written out: its action (the
// receive's list by its stream) and whether its dependencies were read
// for the host (walkHost, and walkRead), and whether its end counted.
func walkRule(kind Kind, group GroupKind, stream Stream, hosted, read, joint bool) (act uint8, host, readDeps, end bool) {
	k, g := kind&15, int(group&7)
	act = walkActHostSync
	switch {
	case k == KindHostCopy:
		act = walkActNone
	case k.IsCompute():
		act = walkActCompute
	case k.IsComm() && g >= int(NumGroupKinds):
		act = walkActEnd
	case k.IsComm() && ExposedOf[g] == 0 && joint:
		act = walkActTP
	case k.IsComm() && ExposedOf[g] == 0:
		act = walkActTPOwn
	case k == KindRecv && ExposedOf[g] == ExposedOf[GroupPP]:
		act = walkActRecv
		if stream == StreamPPRecvGrd {
			act = walkActRecvGrd
		}
	case k.IsComm():
		act = uint8(listComm + ExposedOf[g])
	}
	host = hosted && k != KindRecv && stream == StreamCompute
	return act, host, host && read, k != KindHostCopy
}

// TestWalkKey: for every kind and group byte and every stream, the class
// walkKey gives in every walk mode is the rule run followed when it read
// the kind, group and stream itself (walkRule), so no bit outside the
// masks changes a task's class (the stream's above its low 4 bits, for
// every byte, neither); and every record hotOf makes carries its key.
func TestWalkKey(t *testing.T) {
	if NumStreams > 16 {
		t.Fatalf("%d streams: walkKey reads 4 bits of a stream", NumStreams)
	}
	for k := range 256 {
		for g := range 256 {
			for st := range 256 {
				key := walkKey(Kind(k), GroupKind(g), Stream(st))
				if low := walkKey(Kind(k), GroupKind(g), Stream(st&15)); key != low {
					t.Fatalf("kind %d group %d stream %d: key %#x, stream %d's %#x", k, g, st, key, st&15, low)
				}
				if st >= 16 {
					continue
				}
				for mode := range walkClasses {
					hosted, read, joint := mode&4 != 0, mode&2 != 0, mode&1 != 0
					c := walkClasses[mode][key]
					act, host, readDeps, end := walkRule(Kind(k), GroupKind(g), Stream(st), hosted, read, joint)
					if c&^(walkHost|walkRead|walkEnd) != act || (c&walkHost != 0) != host ||
						(c&walkRead != 0) != readDeps || (c&walkEnd != 0) != end {
						t.Fatalf("kind %d group %d stream %d mode %d: class %#x, want action %d host %v read %v end %v",
							k, g, st, mode, c, act, host, readDeps, end)
					}
				}
			}
		}
	}
	for k := range NumKinds {
		for g := range NumGroupKinds {
			for st := range NumStreams {
				task := Task{Kind: k, Group: g, Stream: st}
				if h := hotOf(&task); h.walk != walkKey(k, g, st) {
					t.Fatalf("%v %v %v: hotOf's walk %#x, want %#x", k, g, st, h.walk, walkKey(k, g, st))
				}
			}
		}
	}
}

// TestHostWaitRead: a hosted compute task that started after its issue
// (here later than the issue and its dependency's end, which no play
// makes but a copy's unshifted dependencies can) has its wait for the
// host read with scan (StatsEveryWait, every wait read) and not without
// (Stats' shortcut): walker.run's one-comparison test (issued − start
// against walker.issueLead, MinInt64 with walkRead) gives both, at times
// small and near 2⁴⁸ ns, a start from 1 ns to 2⁴⁰ ns after the issue;
// with tasks after it (trail), the wait's task is not the chunk's last,
// whose offset hostWait's index counts back from (a wrong index reads
// another task's dependencies: no wait, or the trailing task's).
func TestHostWaitRead(t *testing.T) {
	for _, base := range []engine.Time{0, 1 << 20, 1 << 48} {
		for _, late := range []engine.Time{1, 33, 1 << 20, 1 << 40} {
			for _, trail := range []int{0, 1, 3} {
				tasks := []Task{
					{Kind: KindForward, Stream: StreamCompute},
					{Kind: KindForward, Stream: StreamCompute},
				}
				issued := base + 50
				state := []taskState{
					{start: base + 1, end: base + 10 + 1}, // not issued: no wait
					{start: issued + late + 1, end: issued + late + 10 + 1, issued: issued + 1},
				}
				deps, depOff := []int32{0}, []int32{0, 0, 1}
				for k := range trail {
					// task 2 + k, after task 1 + k (its dependency) ends at
					// d, issued and started at d + 5 (a wait of 5 ns, read
					// as it started by its issue), 5 ns long
					d := issued + late + 10 + 10*engine.Time(k)
					tasks = append(tasks, Task{Kind: KindForward, Stream: StreamCompute})
					state = append(state, taskState{start: d + 5 + 1, end: d + 10 + 1, issued: d + 5 + 1})
					deps = append(deps, int32(1+k))
					depOff = append(depOff, int32(len(deps)))
				}
				p := &Program{Tasks: tasks, Hosted: true, deps: deps, depOff: depOff}
				x := &Executor{inst: []instance{{prog: p, state: state}}}
				want := 40 + 5*engine.Time(trail)
				if got := x.StatsEveryWait(0).HostBound; got != want {
					t.Errorf("base %d, start %d after the issue, %d after: every wait read, HostBound %d, want %d", base, late, trail, got, want)
				}
				if got, want := x.Stats(0).HostBound, 5*engine.Time(trail); got != want {
					t.Errorf("base %d, start %d after the issue, %d after: shortcut, HostBound %d, want %d", base, late, trail, got, want)
				}
			}
		}
	}
}

// TestStatsPlainAgain: Stats measures the last end and Compute from its
// lists (walker.plain unset) only where they equal the per-task sums, and
// else walks again plain: a wait for the host that overlaps the task
// before it on compute's list (its dependency ended before that task did),
// and one that ends after its own task's end (not a play's times, but
// Stats' to report as the reference does). Each case checks that the
// first walk is refused (measure, walker.again) and that Stats equals the
// figures by hand and StatsEveryWait, which walks plain; without the
// refusal Compute would be the list's length less HostBound (20, not 40)
// and End the wait's end (20, not 15).
func TestStatsPlainAgain(t *testing.T) {
	cases := []struct {
		name                    string
		state                   []taskState
		deps, depOff            []int32
		end, compute, hostBound engine.Time
	}{{
		// 0 [0,10); 1 [10,30); 2 waits for its issue over [10,30),
		// under task 1, and runs [30,40)
		name:   "overlap",
		state:  []taskState{{start: 1, end: 11}, {start: 11, end: 31}, {start: 31, end: 41, issued: 31}},
		deps:   []int32{0, 0},
		depOff: []int32{0, 0, 1, 2},
		end:    40, compute: 40, hostBound: 20,
	}, {
		// 0 [0,5); 1 runs [10,15) but its issue ends at 20: the wait
		// [5,20) ends after it
		name:   "late",
		state:  []taskState{{start: 1, end: 6}, {start: 11, end: 16, issued: 21}},
		deps:   []int32{0},
		depOff: []int32{0, 0, 1},
		end:    15, compute: 10, hostBound: 15,
	}}
	for _, c := range cases {
		tasks := make([]Task, len(c.state))
		for j := range tasks {
			tasks[j] = Task{Kind: KindForward, Stream: StreamCompute}
		}
		p := &Program{Tasks: tasks, Hosted: true, deps: c.deps, depOff: c.depOff}
		x := &Executor{inst: []instance{{prog: p, state: c.state}}}
		wk := x.newWalker(0, false, true)
		x.walkFrom(&wk, 0, 0, 0)
		if _, ok := x.measure(&wk, nil); ok || !wk.again {
			t.Errorf("%s: measured from the lists (ok %v, again %v), want a plain walk", c.name, ok, wk.again)
		}
		st := x.Stats(0)
		if st.End != c.end || st.Compute != c.compute || st.HostBound != c.hostBound {
			t.Errorf("%s: End %d Compute %d HostBound %d, want %d %d %d", c.name, st.End, st.Compute, st.HostBound, c.end, c.compute, c.hostBound)
		}
		if ref := x.StatsEveryWait(0); st != ref {
			t.Errorf("%s: Stats %+v, StatsEveryWait %+v", c.name, st, ref)
		}
	}
}

// TestStatsEmptyTasks: run's two fast paths (a tensor-parallel collective
// of the joint list, a hosted compute task that started after its issue)
// put an interval without testing its length, so an empty one enters the
// lists (emptyPut); Stats equals StatsEveryWait, which walks plain (its
// tasks through the switch, the empty ones' ends kept per task), on hosted
// programs of compute tasks in a chain (each waiting for the one before
// and its issue, as the symmetric play starts them), tensor-parallel
// collectives beside them (some not started) and host stalls, a third of
// each of no length.
func TestStatsEmptyTasks(t *testing.T) {
	rng := rand.New(rand.NewPCG(50, 18))
	empties := 0
	for trial := 0; trial < 3000; trial++ {
		n := 2 + rng.IntN(30)
		tasks := make([]Task, n)
		state := make([]taskState, n)
		var deps, depOff []int32
		depOff = append(depOff, 0)
		var free engine.Time // the compute stream's last end
		prev := -1           // and task
		for i := range tasks {
			switch r := rng.IntN(6); {
			case r < 3:
				tasks[i] = Task{Kind: KindForward, Stream: StreamCompute}
			case r < 5:
				tasks[i] = Task{Kind: KindAllReduce, Stream: StreamTP, Group: GroupTP}
			default:
				tasks[i] = Task{Kind: KindHostSync, Stream: StreamCompute}
			}
			length := engine.Time(1 + rng.IntN(20))
			if rng.IntN(3) == 0 {
				length = 0
				empties++
			}
			switch {
			case tasks[i].Stream == StreamCompute:
				// after the compute stream's last task (its dependency),
				// at its issue when later
				issued := max(0, free+engine.Time(rng.IntN(10))-5)
				s := max(free, issued)
				state[i] = taskState{start: s + 1, end: s + length + 1, issued: issued + 1}
				if prev >= 0 {
					deps = append(deps, int32(prev))
				}
				free, prev = s+length, i
			case rng.IntN(10) == 0:
				state[i] = taskState{} // not started
			default:
				s := engine.Time(rng.IntN(int(free) + 5))
				state[i] = taskState{start: s + 1, end: s + length + 1}
			}
			depOff = append(depOff, int32(len(deps)))
		}
		p := &Program{Tasks: tasks, Hosted: true, deps: deps, depOff: depOff}
		x := &Executor{inst: []instance{{prog: p, state: state}}}
		got, want := x.Stats(0), x.StatsEveryWait(0)
		if got != want {
			t.Fatalf("trial %d: Stats %+v, StatsEveryWait %+v", trial, got, want)
		}
	}
	if empties == 0 {
		t.Fatal("no task of no length")
	}
}
