package sweep

import (
	"bytes"
	"cmp"
	"context"
	"errors"
	"fmt"
	"math"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"

	"go.yaml.in/yaml/v3"

	"github.com/simtrain/simtrain/sim/hugepages"
	"github.com/simtrain/simtrain/sim/scenario"
	"github.com/simtrain/simtrain/sim/simulation"
)

// Len is the number of points.
func (sw *Sweep) Len() int { return len(sw.points) }

// RunID is point i's run id (UUIDv5 of its canonical configuration).
func (sw *Sweep) RunID(i int) string { return sw.points[i].runID }

// PointName is point i's name: the sweep's name and the zero-padded point
// number, so names sort in point order. It writes what
// fmt.Sprintf("%s-%0*d", Name, width, i) writes (TestPointNameEqualsSprintf)
// in one allocation: the workers name every point they take, and Sprintf,
// with its three arguments boxed, was 0.13% of the 1,000-point 70B sweep's
// CPU samples.
func (sw *Sweep) PointName(i int) string {
	if i < 0 {
		return fmt.Sprintf("%s-%0*d", sw.Name, sw.width, i) // the sign goes before the zeros
	}
	var digits [20]byte
	d := strconv.AppendUint(digits[:0], uint64(i), 10)
	var b strings.Builder
	b.Grow(len(sw.Name) + 1 + max(sw.width, len(d)))
	b.WriteString(sw.Name)
	b.WriteByte('-')
	for n := len(d); n < sw.width; n++ {
		b.WriteByte('0')
	}
	b.Write(d)
	return b.String()
}

// Valid reports whether point i is a valid scenario.
func (sw *Sweep) Valid(i int) bool { return sw.points[i].err == "" }

// Value is point i's value of Fields[f] as written (Point's Values[f]),
// without building the point: "" for an auto field of a combination that
// had no valid value.
func (sw *Sweep) Value(i, f int) string {
	if v := sw.points[i].vals[f]; v != nil {
		return nodeValue(v)
	}
	return ""
}

// Point is one enumerated point of a sweep.
type Point struct {
	Index int
	Name  string
	RunID string
	// Values are the point's value of each of Sweep.Fields, as written;
	// "" for an auto field of a combination that had no valid value.
	Values []string
	// Scenario is the validated scenario, or when Err is set the scenario
	// as far as validation got (for the error row's knobs).
	Scenario *scenario.Plan
	// Err says why the point is not a valid scenario.
	Err error
}

// Point builds point i (0 ≤ i < Len) afresh, so callers may change it.
// The first call for one of the first retainPlans points takes the plan
// loading resolved (no one else holds it); later calls resolve it again.
//
// The plan is resolved from a copy of the base with the point's values set
// as typed fields (scenario.Template) where they allow it, else from the
// base document with the values set and decoded again: the same plan
// either way (TestTemplateEqualsYAML).
func (sw *Sweep) Point(i int) *Point {
	p := new(Point)
	sw.pointInto(i, p)
	return p
}

// pointInto is Point writing point i into p, overwriting all of it but
// reusing its Values' storage (RunLent's points).
func (sw *Sweep) pointInto(i int, p *Point) {
	sp := sw.points[i]
	values := p.Values[:0]
	if cap(values) < len(sw.Fields) {
		values = make([]string, len(sw.Fields))
	}
	values = values[:len(sw.Fields)]
	clear(values)
	*p = Point{Index: i, Name: sw.PointName(i), RunID: sp.runID, Values: values}
	for fi, v := range sp.vals {
		if v != nil {
			p.Values[fi] = nodeValue(v)
		}
	}
	var s *scenario.Plan
	var err error
	if i < len(sw.plans) {
		s = sw.plans[i].Swap(nil) // the plan loading resolved; its error is sp.err
	}
	if s == nil {
		if tv, ok := sw.typedValues(sp.vals); ok {
			s, err = sw.tmpl.Plan(sw.Name, tv)
		} else {
			s, err = sw.pointYAML(sp, p)
		}
	}
	s.Name = p.Name
	p.Scenario = s
	if p.Err == nil && sp.err != "" {
		p.Err = errors.New(sp.err)
	}
	if p.Err == nil && err != nil {
		p.Err = err // cannot happen: the same document validated when loading
	}
}

// pointYAML resolves point sp from the base document with its values set
// (a value that cannot be set is p's error).
func (sw *Sweep) pointYAML(sp sweepPoint, p *Point) (*scenario.Plan, error) {
	doc := scenario.CloneNode(sw.base)
	for fi, v := range sp.vals {
		if v == nil {
			continue
		}
		if err := sw.Fields[fi].knob.Set(doc, scenario.CloneNode(v)); err != nil {
			p.Err = err
		}
	}
	return sw.parsePoint(doc)
}

// PointYAML is point i as a scenario file (named after the point), ready
// for `simtrain run`.
func (sw *Sweep) PointYAML(i int) ([]byte, error) {
	sp := sw.points[i]
	doc := scenario.CloneNode(sw.base)
	for fi, v := range sp.vals {
		if v != nil {
			if err := sw.Fields[fi].knob.Set(doc, scenario.CloneNode(v)); err != nil {
				return nil, err
			}
		}
	}
	if err := scenario.SetFieldPath(doc, "name", &yaml.Node{Kind: yaml.ScalarNode, Tag: "!!str", Value: sw.PointName(i)}); err != nil {
		return nil, err
	}
	// The base's comments describe the base, not this point.
	stripComments(doc)
	doc.HeadComment = fmt.Sprintf("Point %d of sweep %s (run id %s):\n%s", i, sw.Name, sp.runID, sw.describe(sp.vals))
	var buf bytes.Buffer
	enc := yaml.NewEncoder(&buf)
	enc.SetIndent(2)
	if err := enc.Encode(doc); err != nil {
		return nil, err
	}
	return buf.Bytes(), enc.Close()
}

// ShardIndices are the point numbers of shard i of n (index ≡ i mod n).
func (sw *Sweep) ShardIndices(i, n int) []int {
	var out []int
	for k := i; k < len(sw.points); k += n {
		out = append(out, k)
	}
	return out
}

// Pool keeps what a sweep's workers build up (each one's simulation.Reuse:
// storage, cluster, price tables; the prices they share) from one Run to
// the next of the sweeps given it (Sweep.SetPool), so that a caller that
// runs points in several Runs (simtrain plan's phases) does not make and
// first-touch it again for each. One Run at a time; the zero value is
// ready.
type Pool struct {
	reuses []*simulation.Reuse
	prices *simulation.PriceShare
}

// take returns the pool's Reuses for workers workers and their share of
// prices: fresh ones for a nil pool.
func (p *Pool) take(workers int) ([]*simulation.Reuse, *simulation.PriceShare) {
	if p == nil {
		p = new(Pool)
	}
	for len(p.reuses) < workers {
		p.reuses = append(p.reuses, new(simulation.Reuse))
	}
	if p.prices == nil {
		p.prices = new(simulation.PriceShare)
	}
	return p.reuses[:workers], p.prices
}

// Split returns n pools for n Runs at once with one worker each (Runs of
// different sweeps: a caller playing a few points of each): the i-th holds
// the i-th of p's workers' storage (made where p holds fewer) and p's
// prices, shared by all, so what one Run prices or plays (twin plays)
// the others may take. p is not to be used until their Runs are done.
func (p *Pool) Split(n int) []*Pool {
	p.take(n)
	out := make([]*Pool, n)
	for i := range out {
		out[i] = &Pool{reuses: p.reuses[i : i+1 : i+1], prices: p.prices}
	}
	return out
}

// Outcome says what became of an evaluated point.
type Outcome uint8

const (
	// Simulated: the engine played the point; Result holds its figures
	// (or, with a cutoff set, Result.RuledOut: not played to its end, its
	// step shown to be longer than the cutoff: Sweep.SetCutoff).
	Simulated Outcome = iota
	// Pruned: the accounting model says it does not fit in memory, so it
	// was not simulated; Result holds the memory figures, Fits is false.
	Pruned
	// Invalid: the point is not a valid scenario (Err says why).
	Invalid
	// Failed: the scenario is valid but the simulation failed (Err).
	Failed
)

func (o Outcome) String() string {
	return [...]string{"simulated", "pruned", "invalid", "failed"}[o]
}

// PointResult is one evaluated point.
type PointResult struct {
	Point   *Point
	Outcome Outcome
	// Result is nil for Invalid and Failed; from Sweep.Run it holds the
	// figures only (Result.KeepFiguresOnly: no Tasks, Links or Check).
	Result *simulation.Result
	Err    error // set for Invalid and Failed
	// store is the storage Point and Result live in when RunLent lent
	// them (nil: they are the caller's), handed back after emit.
	store *pointStore
}

// pointStore is the storage of one point RunLent evaluates: its Point,
// Result and memory list. The emitting goroutine hands it back once emit
// has returned, to the worker that made it, which fills it again for a
// later point. A store stays with its worker because the worker's Reuse
// keeps the last Result its pricer lent rank lists to (Reuse.pricer
// clears them at the next run): written by another worker's Run, one
// Result would be written by two goroutines.
type pointStore struct {
	point  Point
	result simulation.Result
	mem    []scenario.StageMemory
	worker int
}

// newResult is the Result storage of the point st holds: st's, or a new
// one for a nil st.
func (st *pointStore) newResult() *simulation.Result {
	if st == nil {
		return new(simulation.Result)
	}
	return &st.result
}

// runResult is Options.Result for the point st holds: nil (a new Result)
// for a nil st.
func (st *pointStore) runResult() *simulation.Result {
	if st == nil {
		return nil
	}
	return &st.result
}

// Evaluate runs point i: an invalid point is returned as is, one that does
// not fit in memory is pruned without simulating, the rest are simulated
// with Run. ok is false only when ctx was cancelled before the point
// finished, in which case it must be run again (it is not a result).
func (sw *Sweep) Evaluate(ctx context.Context, i int) (pr PointResult, ok bool) {
	return sw.evaluate(ctx, i, nil)
}

// evaluate is Evaluate reusing what reuse holds (nil: nothing). A result
// simulated with a Reuse keeps its figures only: the next run with it
// overwrites its tasks and times.
func (sw *Sweep) evaluate(ctx context.Context, i int, reuse *simulation.Reuse) (pr PointResult, ok bool) {
	return sw.evaluateIn(ctx, i, reuse, nil)
}

// evaluateIn is evaluate writing the point, its memory list and its
// Result into st (nil: new ones), which pr then carries.
func (sw *Sweep) evaluateIn(ctx context.Context, i int, reuse *simulation.Reuse, st *pointStore) (pr PointResult, ok bool) {
	var p *Point
	if st != nil {
		p = &st.point
		sw.pointInto(i, p)
		pr.store = st
	} else {
		p = sw.Point(i)
	}
	pr.Point = p
	if p.Err != nil {
		pr.Outcome, pr.Err = Invalid, p.Err
		return pr, true
	}
	if err := ctx.Err(); err != nil {
		return pr, false
	}
	s := p.Scenario
	var mem []scenario.StageMemory
	var fits bool
	if st != nil {
		// Room for every stage first: appended from empty, a store's
		// first list was a chain of arrays (≈ 30–45 fresh pages of the
		// 70B sweep command's stores).
		mem, fits = s.AppendMemoryPerStage(slices.Grow(st.mem[:0], s.Parallel.PP))
		st.mem = mem
	} else {
		mem, fits = s.MemoryPerStage()
	}
	if !fits {
		r := st.newResult()
		*r = simulation.Result{Scenario: s, RunID: p.RunID, Memory: mem, MemCapacityBytes: s.MemCapacityBytes()}
		r.MinPeakMemBytes = mem[0].Total
		for _, m := range mem {
			r.PeakMemBytes = max(r.PeakMemBytes, m.Total)
			r.MinPeakMemBytes = min(r.MinPeakMemBytes, m.Total)
		}
		r.MemMarginBytes = r.MemCapacityBytes - r.PeakMemBytes
		pr.Outcome, pr.Result = Pruned, r
		return pr, true
	}
	var cutoff float64
	if sw.cutoff != nil {
		cutoff = sw.cutoff(s)
	}
	res, err := runRecovered(ctx, s, simulation.Options{Budget: sw.budget, RunID: p.RunID, Memory: mem, Result: st.runResult(), StepCutoffS: cutoff}, reuse)
	if err != nil {
		if ctx.Err() != nil && (errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded)) {
			return pr, false
		}
		pr.Outcome, pr.Err = Failed, err
		return pr, true
	}
	if reuse != nil {
		res.KeepFiguresOnly()
	}
	pr.Outcome, pr.Result = Simulated, res
	return pr, true
}

// workerOptions is what of runRecovered's options decides which step a
// sweep worker's Run builds first (FiguresOnly: shortened where the
// steady-state rule says so): loading keys each point by that step's
// structure key (simulation.FirstBuildKey) for byStructure.
var workerOptions = simulation.Options{FiguresOnly: true}

// runRecovered is Run with a panic turned into an error, so one bad point
// cannot take a long sweep down with it.
func runRecovered(ctx context.Context, s *scenario.Plan, opt simulation.Options, reuse *simulation.Reuse) (res *simulation.Result, err error) {
	defer func() {
		if p := recover(); p != nil {
			res, err = nil, fmt.Errorf("internal error while simulating (please report): %v", p)
		}
	}()
	// A sweep worker (reuse set) keeps only the figures (KeepFiguresOnly),
	// so long steps may be replicated rather than played whole. opt
	// carries the run id computed when the sweep was loaded and the
	// memory estimate the point was checked with.
	opt.Reuse, opt.FiguresOnly = reuse, reuse != nil
	if reuse != nil {
		opt.KeepRanks = keepNoRanks
	}
	return simulation.Run(ctx, s, opt)
}

// keepNoRanks is a sweep worker's Options.KeepRanks: a point's play of
// every rank (flow fidelity) keeps no rank's task times, which only
// Result.Tasks, Links and Check read, and a worker keeps the figures alone
// (the figures are the same: simulation's TestEveryRankCompactPlay). Why: a play kept
// every rank's start, end and issue times, three per task of each rank,
// and two workers' plays of Llama 3 405B on 2,048 H100 held ≈ 1 GB of
// them at once (plan at flow fidelity, issue 18, round 68).
func keepNoRanks(*simulation.Result) []int { return nil }

// Run evaluates the given points on workers goroutines (≤ 0: one per
// available CPU) and calls emit once per finished point, from the calling
// goroutine, in completion order. Results do not depend on workers: every
// point is simulated independently and deterministically. It stops early
// when emit returns an error (returned) or ctx is cancelled (ctx.Err() is
// returned after the points in flight finish; those are still emitted).
//
// Each worker walks its own contiguous share of indices and, when done,
// takes points from the end of the share with most left: neighbouring
// points mostly share a layout (a sweep's last fields turn fastest), and a
// worker's Reuse keeps that layout's cluster, collective groups and prices,
// which points dealt out one by one would make every worker build (the
// workers share the cluster and each layout's first tables through one
// simulation.PriceShare, so a layout both meet is priced once). The
// last endgamePoints of a share are dealt longest predicted first
// (pointCost): the command's wall clock ends with its last point, and
// dealt that way the last points are short, so no worker idles long while
// another plays a long point alone (longest processing time first).
// Before the list is cut into shares, the runs of its largest points move
// to its front (largestFirst), so that one worker builds them and the
// others' storage stays as large as the largest point left to them.
func (sw *Sweep) Run(ctx context.Context, indices []int, workers int, emit func(PointResult) error) error {
	return sw.run(ctx, indices, workers, emit, false)
}

// RunLent is Run lending each point's storage to emit: pr's Point (its
// Values included) and Result (its Memory and Steps included) are valid
// only until emit returns, after which the worker that evaluated the point
// writes a later point into them. emit copies what it keeps; strings it
// may keep as they are (none is written again), and the Point's Scenario
// is not reused. Why: a point's Point, Result and memory list were ≈ 1 KB
// of fresh memory each, ≈ 240 first-touched pages of the 1,000-point 70B
// sweep, at ≈ 12 µs each after the machine idled (docs/design.md "Speed",
// emit52); lent, a worker's points cycle through the few stores that are
// queued or being emitted at once.
func (sw *Sweep) RunLent(ctx context.Context, indices []int, workers int, emit func(PointResult) error) error {
	return sw.run(ctx, indices, workers, emit, true)
}

// run is Run, lending the points' storage (RunLent) when lend is set.
func (sw *Sweep) run(ctx context.Context, indices []int, workers int, emit func(PointResult) error, lend bool) error {
	if workers <= 0 {
		workers = runtime.GOMAXPROCS(0)
	}
	workers = max(1, min(workers, len(indices)))
	cctx, cancel := context.WithCancel(ctx)
	defer cancel()
	costs := make([]uint64, len(indices))
	for k, i := range indices {
		costs[k] = sw.pointCost(i)
	}
	indices, costs, tied := sw.byStructure(indices, costs)
	indices, costs, tied = sw.largestFirst(indices, costs, tied, workers)
	shares := newShares(indices, costs, tied, workers)
	var q results
	q.ready = make(chan struct{}, 1)
	if lend {
		q.free = make([][]*pointStore, workers)
	}
	var wg sync.WaitGroup
	most := newLargest(workers)
	reuses, prices := sw.pool.take(workers) // each layout priced once between the workers
	for w := range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			reuse := reuses[w] // this worker's storage and cluster, reused point after point
			reuse.SharePrices(prices)
			reuse.Reserve(most.of(w, sw.largestWork(shares.part(w))))
			for cctx.Err() == nil {
				i, ok := shares.next(w)
				if !ok {
					return
				}
				// The heap's growth since the last point on 2 MiB
				// pages (hugepages.AdviseHeap): ≈ 1,500 fewer page
				// faults on the 70B sweep.
				hugepages.AdviseHeap(reuse)
				var st *pointStore
				if lend {
					st = q.store(w)
				}
				pr, ok := sw.evaluateIn(cctx, i, reuse, st)
				if ok {
					q.put(pr)
				} else if st != nil {
					q.handBack(st)
				}
				if lend {
					// The put woke the emitting goroutine onto this
					// CPU's queue; yielding lets it emit and hand the
					// store back now. Without it, with a worker on
					// every CPU, it ran only when the scheduler
					// preempted a worker (≈ 10 ms, tens of points), and
					// the 1,000-point 70B sweep made 494 stores on two
					// workers instead of 4–6; yielding after every
					// fourth point, 45–103 stores on a third of it (the
					// emitting goroutine may wait on the other CPU's
					// queue). A yield and the emit it lets run cost
					// ≈ 1,600 instructions a point (cachegrind).
					runtime.Gosched()
				}
			}
		}()
	}
	go func() {
		wg.Wait()
		q.close()
	}()
	var emitErr error
	var batch []PointResult
	for {
		var open bool
		batch, open = q.take(batch[:0])
		for _, pr := range batch {
			if emitErr == nil {
				if err := emit(pr); err != nil {
					emitErr = err
					cancel()
				}
			}
			if pr.store != nil {
				q.handBack(pr.store) // emitted (or not to be): its worker may fill it again
			}
		}
		clear(batch) // the results are the caller's now (RunLent: their workers'); do not hold them
		if !open {
			break
		}
	}
	if emitErr != nil {
		return emitErr
	}
	return ctx.Err()
}

// byStructure returns indices and their costs reordered so that the
// points of one structure key (parallel.StepConfig.StructureKey of the
// first step a worker's Run builds for the point, the shortened one where
// simulation shortens it, computed while loading: structureKey,
// simulation.FirstBuildKey) follow each other, in the order of each key's first
// point, the others keeping theirs (a stable sort on the key's first
// position; a point without a key, not valid, keeps its own position).
// A worker's point whose key is its last build's re-prices that build's
// programs instead of building again (parallel's reprice.go): on the 70B
// layout sweep the points of one key differ in tp and micro-batch size,
// so in index order no two of a worker's points in a row share one. The
// keys are grouped over the whole list, before newShares cuts it into the
// workers' parts (at run boundaries), not within each part: a key's
// points spread over the parts would each build afresh in every part. On
// two workers, of the 70B sweep's 200 repeats, 120–124 re-priced grouped
// per part, 189–191 grouped over the whole, and 197–198 with each run
// dealt whole to one worker (shares; docs/design.md, key38). Points with
// an auto field are ordered alike (their keys too come from loading's
// plans). Keyed by the full step, as before sk39, a shortened point
// whose full step's key differed from its neighbours' built afresh
// although their shortened steps shared a key (docs/design.md, sk39).
// Which worker takes a point, and so the rows, do not matter: every
// point is simulated alike wherever it runs; a point ordered beside
// others of another key only builds afresh, as does one after a point
// whose shortened play failed (its last build is its full step). tied[k] says that point k has point k-1's key and the two are
// of one run (at most maxRun points), which newShares keeps in one part
// and shares.next deals to one worker.
func (sw *Sweep) byStructure(indices []int, costs []uint64) ([]int, []uint64, []bool) {
	type point struct {
		i    int
		cost uint64
		lead int
	}
	pts := make([]point, len(indices))
	first := map[uint64]int{}
	for k, i := range indices {
		pts[k] = point{i: i, cost: costs[k], lead: k}
		key, ok := sw.structureKey(i)
		if !ok {
			continue
		}
		if f, seen := first[key]; seen {
			pts[k].lead = f
		} else {
			first[key] = k
		}
	}
	slices.SortStableFunc(pts, func(a, b point) int { return a.lead - b.lead })
	out, oc, tied := make([]int, len(pts)), make([]uint64, len(pts)), make([]bool, len(pts))
	inRun := 0 // points of the current run before k
	for k, p := range pts {
		out[k], oc[k] = p.i, p.cost
		if k > 0 && p.lead == pts[k-1].lead {
			inRun++
		} else {
			inRun = 0
		}
		tied[k] = inRun%maxRun != 0
	}
	return out, oc, tied
}

// largestFirst returns the runs of points (byStructure's: tied points
// follow the first of their run) with the largest moved to the front of
// the list, largest first, where newShares puts them at the start of the
// first worker's part, which it takes from the front: one worker meets the
// largest builds, and the others' largest build is the largest point left
// behind. A run's size is its largest point's program-size estimate
// (sweepPoint.work, what largestWork reserves for); runs are moved by
// decreasing size while the predicted cost (pointCost) of their points
// that will be simulated (playedCost: a point pruned for memory costs
// nothing) stays within 4/5 of a worker's share of the whole (the largest
// run always), and the others keep their order. Runs move whole, so every
// key's points still follow each other (byStructure, re-pricing). With
// one worker, or a cost not predicted (unknownCost), the order is
// unchanged.
//
// Why: after an idle spell every page a worker first touches costs
// ≈ 6–12 µs, and a worker's pools and play state stay as large as its
// largest build and play (≈ 142 bytes a task; docs/design.md, pool47):
// on the 1,000-point 70B sweep one worker always builds the largest
// point (182,836 tasks), and the other's largest was 75k–163k tasks from
// run to run, depending on which costly points the endgame (shares.next)
// dealt it, as these were the sweep's last points. Moved first, they are
// played by the first worker before the other reaches its part. The
// budget keeps them out of the endgame, which deals a part's costliest
// points to whoever asks: the points' one-worker times replayed on two
// workers (200 replays, ±30% noise) left the other worker 89,452 tasks
// every time with a mean idle tail of 0.20 ms against 0.48 ms before (at
// 9/10 of a share 53,552 tasks but a tail of 1.7 ms, at a whole share
// 1.3 ms; moved in their own order rather than largest first, the
// largest reached the endgame), docs/design.md, deal49.
//
// Why a pruned point costs nothing here: evaluateIn returns it without a
// simulation, so it takes none of the first worker's time, while a run
// holds it beside the points of its structure key. On the 70B sweep four
// pruned points of the moved runs (968, 969, 928, 929) had taken 15,360
// of the budget's 232,192 cost units, leaving behind the runs of 924 and
// 926 (shortened plays that fail and play whole: 63,852 and 89,452 tasks),
// the other worker's largest builds in 25 of 28 runs; charged nothing,
// those runs move too and the other worker's largest was 53,552 tasks in
// 24 of 28 runs, the command's minor faults with THP off 14,306–14,333 →
// 12,884–13,413 (medians of three sets of ten). The share's total keeps
// pruned points at their predicted cost, as the budget's 4/5 was
// measured with it; the moved runs then take ≈ 0.95 of a share of the
// points' one-worker times, so a late first worker leaves a longer idle
// tail more often (docs/design.md, deal53).
func (sw *Sweep) largestFirst(indices []int, costs []uint64, tied []bool, workers int) ([]int, []uint64, []bool) {
	if workers < 2 || len(indices) == 0 {
		return indices, costs, tied
	}
	type run struct {
		from, to int
		work     int64
	}
	var runs []run
	var total uint64
	for k, i := range indices {
		if costs[k] == unknownCost {
			return indices, costs, tied
		}
		if k == 0 || !tied[k] {
			runs = append(runs, run{from: k})
		}
		r := &runs[len(runs)-1]
		r.to = k + 1
		total += costs[k]
		if sw.points[i].err == "" {
			r.work = max(r.work, sw.points[i].work)
		}
	}
	bySize := make([]int, len(runs))
	for ri := range bySize {
		bySize[ri] = ri
	}
	slices.SortStableFunc(bySize, func(a, b int) int { return cmp.Compare(runs[b].work, runs[a].work) })
	budget := total / uint64(workers) * 4 / 5
	moved, used := 0, uint64(0)
	var mem []scenario.StageMemory
	for _, ri := range bySize {
		r := runs[ri]
		if r.work == 0 {
			break
		}
		var c uint64
		c, mem = sw.playedCost(indices[r.from:r.to], costs[r.from:r.to], mem)
		if moved > 0 && used+c > budget {
			break
		}
		used += c
		moved++
	}
	if moved == 0 {
		return indices, costs, tied
	}
	out, oc, ot := make([]int, 0, len(indices)), make([]uint64, 0, len(indices)), make([]bool, 0, len(indices))
	take := func(r run) {
		out = append(out, indices[r.from:r.to]...)
		oc = append(oc, costs[r.from:r.to]...)
		ot = append(ot, tied[r.from:r.to]...)
	}
	front := make([]bool, len(runs))
	for _, ri := range bySize[:moved] {
		take(runs[ri])
		front[ri] = true
	}
	for ri, r := range runs {
		if !front[ri] {
			take(r)
		}
	}
	return out, oc, ot
}

// playedCost returns the predicted cost (costs[k] for points[k],
// pointCost's) of the points that will be simulated: a point whose stages
// do not fit the GPU's memory (Pruned, as evaluateIn decides it from the
// plan loading resolved) costs nothing, as evaluateIn returns it without
// a simulation. mem is scratch for the stages' memory, returned grown.
func (sw *Sweep) playedCost(points []int, costs []uint64, mem []scenario.StageMemory) (uint64, []scenario.StageMemory) {
	var c uint64
	for k, i := range points {
		if sw.points[i].err == "" && i < len(sw.plans) {
			if s := sw.plans[i].Load(); s != nil {
				var fits bool
				mem, fits = s.AppendMemoryPerStage(mem[:0])
				if !fits {
					continue
				}
			}
		}
		c += costs[k]
	}
	return c, mem
}

// maxRun is the most points byStructure ties into one run (a longer run
// of one key is tied in pieces of maxRun): shares deals a run whole to one
// worker, so a sweep whose points mostly share a key (a price-only sweep:
// GPU types at one layout) would otherwise run on one worker, and a
// long run dealt last would lengthen the tail. A piece's first point that
// follows the last piece on the same worker still re-prices. The bundled
// sweeps' runs are at most 4 (70B) and 3 (8B) points long.
const maxRun = 4

// structureKey returns point i's structure key for byStructure, the one
// loading computed (sweepPoint.key: its first build's); ok is false for an invalid point or
// a step without a key.
func (sw *Sweep) structureKey(i int) (key uint64, ok bool) {
	p := &sw.points[i]
	return p.key, p.err == "" && p.keyed
}

// shares deals a list of points out to workers: worker w owns the w-th
// contiguous part and takes from its front; a worker whose part is empty
// takes from the back of the part with the most points left. A part with
// endgamePoints or fewer left gives its costliest point instead (the
// earliest of equals), whoever asks. A run of tied points (byStructure:
// one structure key) goes whole to the worker that takes one of it, which
// gets the rest from its next calls, in order: a key's points re-price
// one build only on one worker, and the endgame, two workers asking in
// turn, dealt a run's points to both.
type shares struct {
	mu      sync.Mutex
	points  []int
	costs   []uint64 // costs[k] is points[k]'s predicted cost; moved with it
	tied    []bool   // tied[k]: points[k] is of points[k-1]'s run; moved with it
	lo, hi  []int    // part w is points[lo[w]:hi[w]]
	pending [][]int  // per worker, the rest of the run it took last, to take next
}

// endgamePoints is how many points a share keeps for longest-first
// dealing. On the 1,000-point 70B sweep, with its points' one-worker times
// replayed on two workers (tail = time one worker idles at the end): 24
// leaves part of the tail, 48–64 remove it (≈ 2.4 ms of ≈ 383 shorter),
// and 128 mixes layouts enough that a worker prices two more of them
// (parallel.Layout's tables, ≈ 7.5 M instructions each); a whole sweep dealt
// longest first prices 20 more and cost 1.8% more instructions
// (cachegrind, -bench Sweep70BAll) than it saved in the tail.
const endgamePoints = 64

// newShares cuts points (with their costs and, nil for none, tied: see
// shares) into workers contiguous parts of as many points each as can be
// without cutting a run: each cut moves forward to the next run's start.
func newShares(points []int, costs []uint64, tied []bool, workers int) *shares {
	if tied == nil {
		tied = make([]bool, len(points))
	}
	s := &shares{points: slices.Clone(points), costs: slices.Clone(costs), tied: slices.Clone(tied),
		lo: make([]int, workers), hi: make([]int, workers), pending: make([][]int, workers)}
	cut := 0
	for w := range workers {
		s.lo[w] = cut
		cut = max(cut, len(points)*(w+1)/workers)
		for cut < len(points) && s.tied[cut] {
			cut++
		}
		s.hi[w] = cut
	}
	return s
}

// part returns a copy of worker w's part as it stands (before any is
// taken: the points it takes first).
func (s *shares) part(w int) []int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Clone(s.points[s.lo[w]:s.hi[w]])
}

// next returns worker w's next point, false when none is left anywhere.
func (s *shares) next(w int) (int, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if q := s.pending[w]; len(q) > 0 {
		s.pending[w] = q[1:]
		return q[0], true
	}
	v := w
	if s.lo[w] == s.hi[w] {
		v = -1
		for u := range s.lo {
			if n := s.hi[u] - s.lo[u]; n > 0 && (v < 0 || n > s.hi[v]-s.lo[v]) {
				v = u
			}
		}
		if v < 0 {
			return 0, false
		}
	}
	lo, hi := s.lo[v], s.hi[v]
	var from, to int // the run taken: points[from:to]
	switch {
	case hi-lo <= endgamePoints:
		// The costliest left and its run, moved to the front of the
		// part and taken.
		best := lo
		for k := lo + 1; k < hi; k++ {
			if s.costs[k] > s.costs[best] {
				best = k
			}
		}
		from, to = s.run(best, lo, hi)
		s.rotate(lo, from, to)
		from, to = lo, lo+to-from
		s.lo[v] = to
	case v == w:
		from, to = s.run(lo, lo, hi)
		s.lo[v] = to
	default:
		from, to = s.run(hi-1, lo, hi)
		s.hi[v] = from
	}
	s.pending[w] = append(s.pending[w][:0], s.points[from+1:to]...)
	return s.points[from], true
}

// run returns the run of tied points holding points[k], within [lo, hi).
func (s *shares) run(k, lo, hi int) (from, to int) {
	from, to = k, k+1
	for from > lo && s.tied[from] {
		from--
	}
	for to < hi && s.tied[to] {
		to++
	}
	return from, to
}

// rotate moves points[from:to] (with their costs and ties) to lo, the
// points of [lo, from) after them in their order.
func (s *shares) rotate(lo, from, to int) {
	slices.Reverse(s.points[lo:from])
	slices.Reverse(s.points[from:to])
	slices.Reverse(s.points[lo:to])
	slices.Reverse(s.costs[lo:from])
	slices.Reverse(s.costs[from:to])
	slices.Reverse(s.costs[lo:to])
	slices.Reverse(s.tied[lo:from])
	slices.Reverse(s.tied[from:to])
	slices.Reverse(s.tied[lo:to])
}

// largest is the largest of the workers' estimates (largestWork of each
// share), each made by its own worker in parallel: every worker reserves
// its storage for the largest point of all shares, not of its own.
//
// Why: a worker's share is a contiguous part of the sweep, and in the
// endgame it takes the costliest points left in the others' (shares.next),
// so a worker whose share held small points met larger ones late and
// replaced its storage at each (the 70B sweep's first worker reserved
// 38,464 tasks, then 76,096, 151,360 and 301,888 as it met them), leaving
// the written part of each array before to the collector, which the
// reserved storage lets run seldom: new pages every time. Reserved storage
// costs no page until a build writes it (parallel.Arena.Reserve), so a
// worker that never meets the largest point loses nothing but address
// space. Measured on the 1,000-point 70B sweep: ≈ 4,000 of ≈ 32,500 page
// faults (docs/design.md "Speed", mem34).
type largest struct {
	wg   sync.WaitGroup
	each []int64
}

func newLargest(workers int) *largest {
	l := &largest{each: make([]int64, workers)}
	l.wg.Add(workers)
	return l
}

// of records worker w's estimate and returns the largest of all workers'
// once every worker has given its own (each worker calls it once).
func (l *largest) of(w int, est int64) int64 {
	l.each[w] = est
	l.wg.Done()
	l.wg.Wait()
	return slices.Max(l.each)
}

// largestWork returns the largest program size (simulation.EstimateWork's
// ProgramTasks, an upper bound, computed while loading: sweepPoint.work)
// of the given points, so that a worker reserves its storage once for the
// largest point of all shares (largest: each worker estimates its own
// share) instead of growing it point after point as it meets larger ones
// (simulation.Reuse.Reserve). The estimate is kept for every valid point,
// also where loading kept no plan (a sweep with an auto field, or the
// points past retainPlans): without it such a sweep's workers reserved
// nothing and grew their storage at every larger point, and ordered by
// structure key (byStructure) they met larger points more often
// (docs/design.md "Speed", the coordinator's round-39 entry).
func (sw *Sweep) largestWork(points []int) int64 {
	var most int64
	for _, i := range points {
		if sw.points[i].err == "" {
			most = max(most, sw.points[i].work)
		}
	}
	return most
}

// unknownCost is pointCost's figure for a point whose plan is not at hand:
// above every estimate, so a share's endgame deals such points first, in
// their order.
const unknownCost = math.MaxUint64

// pointCost predicts how long point i takes to evaluate, read from the
// plan loading resolved (without resolving anything): 0 for an invalid
// point, else its micro-batches times its layers, the number of layer
// passes a step plays (each micro-batch runs every layer forward and
// backward; a point's tasks, events and time grow with it). On the
// 1,000-point 70B sweep it ranks the simulated points' one-worker times
// with a correlation of 0.82. A point whose plan Point has taken already
// (a second Run over the same points) costs unknownCost. A point pruned
// for memory costs next to nothing but is predicted like one that runs:
// dealt early, it cannot lengthen the tail.
func (sw *Sweep) pointCost(i int) uint64 {
	if sw.points[i].err != "" {
		return 0
	}
	if i >= len(sw.plans) {
		return unknownCost
	}
	s := sw.plans[i].Load()
	if s == nil {
		return unknownCost
	}
	return uint64(max(1, s.Microbatches())) * uint64(max(1, s.Arch().Layers))
}

// results is the queue from Run's workers to its emitting goroutine. It
// never blocks a worker: while the caller's emit is slow (a sweep rewrites
// its summary file there, ≈ 3–8 ms at a time), the workers go on with
// their next points instead of waiting for room, so neither CPU idles. It
// holds only the results not yet emitted (during a rewrite of t seconds,
// about t × points/s of them). With a worker on every CPU the emitting
// goroutine runs when the Go scheduler preempts one (≈ 10 ms) and takes
// all that is queued at once.
type results struct {
	mu     sync.Mutex
	queue  []PointResult
	closed bool
	ready  chan struct{} // capacity 1: a token once something was put or the queue closed
	// free holds, by worker, the point stores handed back (RunLent; nil
	// for Run).
	free [][]*pointStore
}

// store returns a point store of worker w's that no one holds: one handed
// back, or a new one.
func (q *results) store(w int) *pointStore {
	q.mu.Lock()
	defer q.mu.Unlock()
	if f := q.free[w]; len(f) > 0 {
		st := f[len(f)-1]
		q.free[w] = f[:len(f)-1]
		return st
	}
	return &pointStore{worker: w}
}

// handBack returns st to its worker's free stores.
func (q *results) handBack(st *pointStore) {
	q.mu.Lock()
	q.free[st.worker] = append(q.free[st.worker], st)
	q.mu.Unlock()
}

// put adds a finished point.
func (q *results) put(pr PointResult) {
	q.mu.Lock()
	q.queue = append(q.queue, pr)
	q.mu.Unlock()
	q.signal()
}

// close says no more results will come.
func (q *results) close() {
	q.mu.Lock()
	q.closed = true
	q.mu.Unlock()
	q.signal()
}

func (q *results) signal() {
	select {
	case q.ready <- struct{}{}:
	default: // a token is already waiting
	}
}

// take waits until some result is queued or the queue is closed, appends
// the queued results (in the order they were put) to dst and empties the
// queue. open is false once the queue is closed and everything was taken.
func (q *results) take(dst []PointResult) (out []PointResult, open bool) {
	for {
		q.mu.Lock()
		out, closed := append(dst, q.queue...), q.closed
		clear(q.queue)
		q.queue = q.queue[:0]
		q.mu.Unlock()
		if len(out) > len(dst) || closed {
			return out, !closed
		}
		<-q.ready
	}
}
