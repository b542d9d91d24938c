package parallel

import (
	"slices"

	"github.com/simtrain/simtrain/sim/engine"
)

// Per-layer repetition (issue 18, plan item 2 of docs/design.md "Speed"):
// inside one pass of one micro-batch through a stage's layers, does layer
// k+1 play layer k's tasks one constant period later? This file measures it
// on finished plays; nothing in a simulation reads it.
//
// A pass is one schedule entry's tasks (Program.entries). Its layers are
// cut where a layer number first appears in the entry, in issue order: layer
// k's segment runs from its first task to the next layer's first task (the
// last layer's to as many tasks as the segment before it held). A task of
// segment k+1 corresponds to the task at the same offset in segment k: the
// builder's own correspondence (copyLayers appends layer k+1 as a bulk copy
// of layer k, task i onto task i), checked as copyLayers checks it
// (sameTasks: the same record, the layer one further, host waits aside).
// Where the first appearance is not the builder's boundary (a ZeRO-3
// prefetch of the next layer's parameters issued inside a layer), the cut is
// the builder's rotated by a fixed offset, which pairs the same tasks.
//
// A pair of consecutive layers repeats exactly when its segments correspond
// task for task and every task of k+1 starts and ends one period after its
// partner, with as many engine events (Executor.CountEvents) and the same
// host issue (both issued or neither). The pair's period is its tasks'
// most frequent start shift; where the pair does not repeat, the first task
// of layer k+1 (in issue order) off that period is its break. A run is a
// maximal sequence of consecutive layers whose every consecutive pair
// repeats exactly with one period. A fast-forward that, like
// Executor.Replicate, keeps reach+2 layers of a run (reach: how many layers
// back the run's last layer's tasks depend, at least 1; Replicate checks
// reach+1 unit pairs, reach+2 units) and derives the rest would skip the
// others. Only the first step's passes are measured (Program.entries).

// LayerReport is what MeasureLayers found in one play or more (Add).
type LayerReport struct {
	// Tasks is the tasks of the programs measured (every one played).
	Tasks int
	// Passes is the passes (schedule entries) with two layers or more.
	Passes int
	// LayerTasks is the tasks in those passes' layer segments.
	LayerTasks int
	// Pairs is the consecutive layer pairs; Same those whose segments
	// correspond task for task (the builder's check); Exact those that
	// also repeat exactly (times, events, issue).
	Pairs, Same, Exact int
	// Runs is the runs of two layers or more (one exact pair or more) and
	// RunLayers their layers.
	Runs, RunLayers int
	// Skip is the tasks a fast-forward keeping reach+2 layers of every run
	// (reach+1 checked pairs, as Replicate checks units) would not play;
	// SkipMin keeps only two layers (the fewest that show a period), an
	// upper bound. SkipAlone is the part of Skip whose skipped layers
	// play with no other task in flight (layersBeside): none of the
	// program's tasks outside the run starts before their last end and
	// ends after their first start; SkipBeside counts the rest by the
	// stream of the first task in flight beside them.
	Skip, SkipMin, SkipAlone int
	SkipBeside               map[string]int
	// Reach counts the runs by their reach (index: reach; the last entry
	// holds reach ≥ len−1); External is the runs whose last layer waits
	// for a task before the pass that its partner does not wait for
	// (layerReach).
	Reach    [4]int
	External int
	// BreakAt counts the pairs that correspond but do not repeat by where
	// they are in the pass: the first pair, the second, the last (when not
	// the first), or one between.
	BreakAt [4]int
	// Breaks counts the same pairs by the first task of layer k+1, in
	// issue order, off the pair's period (layerBreak's labels), and by
	// where they are, as BreakAt.
	Breaks map[string][4]int
}

// Add adds r's counts to s.
func (s *LayerReport) Add(r LayerReport) {
	s.Tasks += r.Tasks
	s.Passes += r.Passes
	s.LayerTasks += r.LayerTasks
	s.Pairs += r.Pairs
	s.Same += r.Same
	s.Exact += r.Exact
	s.Runs += r.Runs
	s.RunLayers += r.RunLayers
	s.Skip += r.Skip
	s.SkipAlone += r.SkipAlone
	if len(r.SkipBeside) > 0 && s.SkipBeside == nil {
		s.SkipBeside = map[string]int{}
	}
	for k, n := range r.SkipBeside {
		s.SkipBeside[k] += n
	}
	s.External += r.External
	s.SkipMin += r.SkipMin
	for i, n := range r.Reach {
		s.Reach[i] += n
	}
	for i, n := range r.BreakAt {
		s.BreakAt[i] += n
	}
	if len(r.Breaks) > 0 && s.Breaks == nil {
		s.Breaks = map[string][4]int{}
	}
	for k, n := range r.Breaks {
		c := s.Breaks[k]
		for i := range c {
			c[i] += n[i]
		}
		s.Breaks[k] = c
	}
}

// LayerRepeats measures every played instance of x after Run (CountEvents
// called before it; without it the events are not compared).
func (x *Executor) LayerRepeats() LayerReport {
	var rep LayerReport
	for i := range x.inst {
		in := &x.inst[i]
		if in.state == nil {
			continue
		}
		start, end, issued := x.Times(i, nil, nil, nil)
		rep.Add(MeasureLayers(in.prog, start, end, issued, in.events))
	}
	return rep
}

// MeasureLayers measures one program's play: each task's start and end,
// its host issue's end (nil without a host thread; -1 for a task not
// issued) and its engine events (nil: not compared), in program order.
func MeasureLayers(p *Program, start, end, issued []engine.Time, events []int32) LayerReport {
	rep := LayerReport{Tasks: len(p.Tasks)}
	for e := 0; e+1 < len(p.entries); e++ {
		measurePass(p, p.entries[e], p.entries[e+1], start, end, issued, events, &rep)
	}
	return rep
}

// layerSegments returns the starts of the layer segments of tasks [a, b)
// and the end of the last.
func layerSegments(p *Program, a, b int32) (starts []int32, last int32) {
	var seen []int32
	for t := a; t < b; t++ {
		if l := p.Tasks[t].Layer; l >= 0 && !slices.Contains(seen, l) {
			seen = append(seen, l)
			starts = append(starts, t)
		}
	}
	if len(starts) < 2 {
		return nil, 0
	}
	k := len(starts)
	last = min(b, starts[k-1]+starts[k-1]-starts[k-2])
	return starts, last
}

// measurePass adds pass [a, b)'s pairs, runs and breaks to rep.
func measurePass(p *Program, a, b int32, start, end, issued []engine.Time, events []int32, rep *LayerReport) {
	starts, last := layerSegments(p, a, b)
	if starts == nil {
		return
	}
	rep.Passes++
	rep.LayerTasks += int(last - starts[0])
	seg := func(k int) (int32, int32) {
		if k+1 < len(starts) {
			return starts[k], starts[k+1]
		}
		return starts[k], last
	}
	// period[k] is pair (k, k+1)'s period when it repeats exactly (exact[k]).
	np := len(starts) - 1
	period := make([]engine.Time, np)
	exact := make([]bool, np)
	var shifts []engine.Time
	for k := range np {
		x0, x1 := seg(k)
		y0, y1 := seg(k + 1)
		n := x1 - x0
		rep.Pairs++
		dl := p.Tasks[y0].Layer - p.Tasks[x0].Layer
		if y1-y0 != n || (dl != 1 && dl != -1) || !layerSame(p, x0, y0, n, dl) {
			continue
		}
		rep.Same++
		d := modeShift(start[x0:x0+n], start[y0:y0+n], &shifts)
		off := int32(-1)
		for i := range n {
			if !layerRepeats(p, x0+i, y0+i, d, start, end, issued, events) {
				off = y0 + i
				break
			}
		}
		if off >= 0 {
			if rep.Breaks == nil {
				rep.Breaks = map[string][4]int{}
			}
			lb := layerBreak(p, off, off-n, x0, d, start, end, issued, events)
			at := 3
			switch k {
			case 0:
				at = 0
			case np - 1:
				at = 2
			case 1:
				at = 1
			}
			rep.BreakAt[at]++
			c := rep.Breaks[lb]
			c[at]++
			rep.Breaks[lb] = c
			continue
		}
		rep.Exact++
		period[k], exact[k] = d, true
	}
	// Runs: maximal sequences of exact pairs of one period.
	for k := 0; k < np; {
		if !exact[k] {
			k++
			continue
		}
		j := k
		for j+1 < np && exact[j+1] && period[j+1] == period[k] {
			j++
		}
		layers := j - k + 2 // pairs k..j: layers k..j+1
		x0, x1 := seg(j)
		y0, y1 := seg(j + 1)
		reach, ext := layerReach(p, a, x0, y0, y1-y0)
		if ext {
			rep.External++
		}
		rep.Runs++
		rep.RunLayers += layers
		rep.Reach[min(reach, len(rep.Reach)-1)]++
		n := int(x1 - x0)
		if skip := layers - (reach + 2); skip > 0 {
			rep.Skip += skip * n
			r0, _ := seg(k)
			s0, _ := seg(k + reach + 2)
			if st := layersBeside(p, r0, s0, y1, start, end); st == "" {
				rep.SkipAlone += skip * n
			} else {
				if rep.SkipBeside == nil {
					rep.SkipBeside = map[string]int{}
				}
				rep.SkipBeside[st] += skip * n
			}
		}
		rep.SkipMin += max(0, layers-2) * n
		k = j + 1
	}
}

// layersBeside returns "" when no task outside a run's tasks [r0, r1) is
// in flight while its tasks from s0 on play (from the first start among
// them to the last end): nothing else would then need shifting when they
// are skipped. Else it names the stream of the first such task in program
// order.
func layersBeside(p *Program, r0, s0, r1 int32, start, end []engine.Time) string {
	ws, we := start[s0], end[s0]
	for t := s0; t < r1; t++ {
		ws, we = min(ws, start[t]), max(we, end[t])
	}
	for t := range int32(len(p.Tasks)) {
		if (t < r0 || t >= r1) && start[t] >= 0 && start[t] < we && end[t] > ws {
			return p.Tasks[t].Stream.String()
		}
	}
	return ""
}

// modeShift returns the most frequent of b[i] − a[i] (the smallest of
// equally frequent ones), using *buf as scratch space.
func modeShift(a, b []engine.Time, buf *[]engine.Time) engine.Time {
	s := (*buf)[:0]
	for i := range a {
		s = append(s, b[i]-a[i])
	}
	slices.Sort(s)
	*buf = s
	mode, best := s[0], 0
	for i := 0; i < len(s); {
		j := i
		for j < len(s) && s[j] == s[i] {
			j++
		}
		if j-i > best {
			mode, best = s[i], j-i
		}
		i = j
	}
	return mode
}

// layerSame is copyLayers' sameTasks on p: the n tasks from y are those
// from x with their layers dl further (the host waits aside).
func layerSame(p *Program, x, y, n, dl int32) bool {
	for i := range n {
		ta, tb := p.Tasks[x+i], p.Tasks[y+i]
		if ta.Layer >= 0 {
			ta.Layer += dl
		} else if tb.Layer >= 0 {
			return false
		}
		if ta != tb || p.Issue(int(x+i)) != p.Issue(int(y+i)) { // (the issue times and waits are the records', Program.hot)
			return false
		}
	}
	return true
}

// layerRepeats reports whether task y is task x played d later: start, end,
// engine events and whether the host issued it.
func layerRepeats(p *Program, x, y int32, d engine.Time, start, end, issued []engine.Time, events []int32) bool {
	if start[y] != start[x]+d || end[y] != end[x]+d {
		return false
	}
	if events != nil && events[y] != events[x] {
		return false
	}
	return issued == nil || (issued[x] < 0) == (issued[y] < 0)
}

// layerReach is how many layers back the tasks of the layer at y (n tasks,
// its partner layer at x) depend inside the pass (from a), at least 1: a
// dependency or host wait equal to the partner's is absolute (the same for
// every layer) and not counted, as Replicate's checkStructure counts units.
// A dependency before the pass that is not the partner's is the layer's
// own input from outside (a ZeRO-1/2 parameter gather issued at step start,
// one per layer): not counted either, but reported (external), as a
// fast-forward would have to check that it ended before the copy needs it.
func layerReach(p *Program, a, x, y, n int32) (reach int, external bool) {
	reach = 1
	back := func(d int32) int {
		if d >= y {
			return 0
		}
		if d < a {
			external = true
			return 0
		}
		return int((y - d + n - 1) / n)
	}
	for i := range n {
		da, db := p.Deps(int(x+i)), p.Deps(int(y+i))
		for k, d := range db {
			if k < len(da) && da[k] == d {
				continue
			}
			reach = max(reach, back(d))
		}
		if w := p.HostAfter(int(y + i)); w >= 0 && p.HostAfter(int(x+i)) != w {
			reach = max(reach, back(int32(w)))
		}
	}
	return reach, external
}

// layerBeside returns the name of the stream, other than y's, whose tasks
// overlap task y for a time most different from the time they overlap task
// x ("none" when every stream overlaps both alike).
func layerBeside(p *Program, y, x int32, start, end []engine.Time) string {
	var diff [NumStreams]engine.Time
	overlap := func(t, i int32) engine.Time {
		return max(0, min(end[t], end[i])-max(start[t], start[i]))
	}
	for i := range int32(len(p.Tasks)) {
		st := p.Tasks[i].Stream
		if st == p.Tasks[y].Stream || st >= NumStreams || start[i] < 0 {
			continue
		}
		diff[st] += overlap(y, i) - overlap(x, i)
	}
	best, name := engine.Time(0), "none"
	for st, v := range diff {
		if v < 0 {
			v = -v
		}
		if v > best {
			best, name = v, Stream(st).String()
		}
	}
	return name
}

// layerClass names the kind of work of a task for the break labels:
// "compute", a collective's process group ("tp", "dp", …), "send",
// "recv", "host_sync" or "host_copy".
func layerClass(t *Task) string {
	switch {
	case t.Kind.IsCompute():
		return "compute"
	case t.Kind == KindSend || t.Kind == KindRecv:
		return t.Kind.String()
	case t.Kind.IsComm():
		return t.Group.String()
	}
	return t.Kind.String()
}

// layerBreak labels why task y (its partner x) is off the period d: "<class>
// slower beside <stream>" when it starts on the period but ends off it (its
// rate differed: interference from what ran beside it; stream: the other
// stream whose tasks overlapped y for a time most different from their
// overlap with x, layerBeside), "<class> events" when only its engine
// events differ, "<class> host" when it starts at the end of its host
// issue (the host thread set its start), "<class> queue" when it waited
// for a full launch queue, "<class> after <class'>[ outside]" when the
// dependency whose end set its start is of class' (outside: before lo, the
// first task of the layer pair's segments), "<class> issue" when only
// whether the host issued it differs, "<class> other" when no input's end
// is its start.
func layerBreak(p *Program, y, x, lo int32, d engine.Time, start, end, issued []engine.Time, events []int32) string {
	c := layerClass(&p.Tasks[y])
	switch {
	case start[y] == start[x]+d && end[y] != end[x]+d:
		return c + " slower beside " + layerBeside(p, y, x, start, end)
	case start[y] == start[x]+d && events != nil && events[y] != events[x]:
		return c + " events"
	case start[y] == start[x]+d:
		return c + " issue"
	}
	if issued != nil && issued[y] >= 0 && issued[y] == start[y] {
		return c + " host"
	}
	if w := p.QueueAfter(int(y)); w >= 0 && end[w] == start[y] {
		return c + " queue"
	}
	for _, dep := range p.Deps(int(y)) {
		if end[dep] == start[y] {
			s := c + " after " + layerClass(&p.Tasks[dep])
			if dep < lo {
				s += " outside"
			}
			return s
		}
	}
	return c + " other"
}
