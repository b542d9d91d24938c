package simulation_test

import (
	"encoding/binary"
	"fmt"
	"hash"
	"hash/fnv"
	"math"
	"os"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/simtrain/simtrain/sim/engine"
	"github.com/simtrain/simtrain/sim/parallel"
	"github.com/simtrain/simtrain/sim/simulation"
	"github.com/simtrain/simtrain/sim/sweep"
)

// progHashes are one built program's FNV-64 hashes, each over a fixed
// order of fields (structureHashes): core is the task graph a re-pricing
// build would keep (every Task field but the prices, the dependencies,
// the successors, the host waits, the schedule-entry marks, the p2p list
// and the per-stream counts); queue the launch-queue waits (QueueAfter,
// QueueSelf's task), which setQueueWaits derives from the issue prices;
// copies the bulk-copied ranges (Program.copies: the layer and pass
// copies' marks); the rest the prices, one hash each.
type progHashes struct {
	core, queue, copies                          uint64
	dur, issue, share, bytes, flops, bands, rest uint64
	// pattern hashes each task's price class (its first task of equal
	// Dur, GEMMShare, Bytes and FLOPs, numbered in order): equal patterns
	// mean one price table per point and a class per task re-price it;
	// classes is how many classes there are.
	pattern uint64
	classes int
}

// priceNames name progHashes' price hashes in the order prices lists them.
var priceNames = []string{"dur", "issue", "gemm_share", "bytes", "flops", "bands", "queue_rest", "price_pattern"}

func (h progHashes) prices() []uint64 {
	return []uint64{h.dur, h.issue, h.share, h.bytes, h.flops, h.bands, h.rest, h.pattern}
}

// word writes v to h as 8 little-endian bytes.
func word(h hash.Hash64, v uint64) {
	var b [8]byte
	binary.LittleEndian.PutUint64(b[:], v)
	h.Write(b[:])
}

// hashField writes the value of the named field of p (unexported fields
// included, read through reflect) to h: its length and then every integer,
// bool or float it holds, in order.
func hashField(h hash.Hash64, p *parallel.Program, name string) {
	f := reflect.ValueOf(p).Elem().FieldByName(name)
	if !f.IsValid() {
		panic("parallel.Program has no field " + name)
	}
	hashValue(h, f)
}

func hashValue(h hash.Hash64, v reflect.Value) {
	switch v.Kind() {
	case reflect.Bool:
		if v.Bool() {
			word(h, 1)
		} else {
			word(h, 0)
		}
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		word(h, uint64(v.Int()))
	case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		word(h, v.Uint())
	case reflect.Float32, reflect.Float64:
		word(h, math.Float64bits(v.Float()))
	case reflect.Slice, reflect.Array:
		word(h, uint64(v.Len()))
		for i := 0; i < v.Len(); i++ {
			hashValue(h, v.Index(i))
		}
	case reflect.Struct:
		for i := 0; i < v.NumField(); i++ {
			hashValue(h, v.Field(i))
		}
	default:
		panic("hashValue: " + v.Kind().String())
	}
}

// structureHashes hashes p's structure and prices (progHashes).
func structureHashes(p *parallel.Program) progHashes {
	core, queue, copies := fnv.New64a(), fnv.New64a(), fnv.New64a()
	dur, issue, share, bytes, flops, bands, rest := fnv.New64a(), fnv.New64a(), fnv.New64a(), fnv.New64a(), fnv.New64a(), fnv.New64a(), fnv.New64a()
	word(core, uint64(p.Stage))
	word(core, uint64(len(p.Tasks)))
	hashValue(core, reflect.ValueOf(p.Hosted))
	for _, f := range []string{"entries", "p2p", "streamTasks", "noHostWaits"} {
		hashField(core, p, f)
	}
	hashField(queue, p, "queued")
	hashField(copies, p, "copies")
	hashField(bands, p, "bands")
	type price struct {
		dur          int64
		share        uint16
		bytes, flops float64
	}
	class := map[price]int{}
	pattern := fnv.New64a()
	for i := range p.Tasks {
		t := &p.Tasks[i]
		for _, v := range []uint64{uint64(t.Kind), uint64(t.Stream), uint64(t.Group), uint64(t.Op), b2u(t.CopyEngine), b2u(t.SMSized),
			uint64(int64(t.Step)), uint64(int64(t.Chunk)), uint64(int64(t.Layer)), uint64(int64(t.Micro)),
			uint64(int64(t.Peer())), uint64(int64(t.Match())), uint64(int64(p.HostAfter(i)))} {
			word(core, v)
		}
		core.Write([]byte(t.Name.String()))
		for _, d := range [][]int32{p.Deps(i), p.Succ(i)} {
			word(core, uint64(len(d)))
			for _, x := range d {
				word(core, uint64(x))
			}
		}
		self, r := p.QueueSelf(i)
		word(queue, uint64(int64(p.QueueAfter(i))))
		word(queue, uint64(int64(self)))
		word(rest, uint64(r))
		word(dur, uint64(t.Dur))
		word(issue, uint64(p.Issue(i)))
		word(share, uint64(t.GEMMShare))
		word(bytes, math.Float64bits(t.Bytes))
		word(flops, math.Float64bits(t.FLOPs()))
		k := price{int64(t.Dur), t.GEMMShare, t.Bytes, t.FLOPs()}
		c, ok := class[k]
		if !ok {
			c = len(class)
			class[k] = c
		}
		word(pattern, uint64(c))
	}
	return progHashes{core.Sum64(), queue.Sum64(), copies.Sum64(), dur.Sum64(), issue.Sum64(), share.Sum64(), bytes.Sum64(), flops.Sum64(), bands.Sum64(), rest.Sum64(),
		pattern.Sum64(), len(class)}
}

// repriceEntry is one price class's values, and hotPrice the played
// record's priced fields (parallel's hotTask.dur and share), for the
// re-pricing pass repriceSeconds times.
type repriceEntry struct {
	dur          int64
	share        uint16
	bytes, flops float64
}

type hotPrice struct {
	dur   int64
	share uint16
}

// repriceSeconds times, reps times (the least), the pass a re-pricing
// build would make over p's tasks: each task's Dur, GEMMShare and Bytes
// and its played record's dur and share set from its price class's entry
// (the values p holds, so p is unchanged; FLOPs, in an unexported word,
// is written to a slice of its own instead).
func repriceSeconds(p *parallel.Program, reps int) float64 {
	class := map[repriceEntry]uint8{}
	var tab []repriceEntry
	cls := make([]uint8, len(p.Tasks))
	for i := range p.Tasks {
		t := &p.Tasks[i]
		e := repriceEntry{int64(t.Dur), t.GEMMShare, t.Bytes, t.FLOPs()}
		c, ok := class[e]
		if !ok {
			c = uint8(len(tab))
			class[e] = c
			tab = append(tab, e)
		}
		cls[i] = c
	}
	hot := make([]hotPrice, len(p.Tasks))
	flops := make([]float64, len(p.Tasks))
	best := math.Inf(1)
	for r := 0; r < reps; r++ {
		t0 := time.Now()
		tasks := p.Tasks
		for i, c := range cls[:len(tasks)] {
			e := &tab[c]
			t := &tasks[i]
			t.Dur, t.GEMMShare, t.Bytes = engine.Time(e.dur), e.share, e.bytes
			hot[i] = hotPrice{e.dur, e.share}
			flops[i] = e.flops
		}
		best = min(best, time.Since(t0).Seconds())
	}
	return best
}

func b2u(b bool) uint64 {
	if b {
		return 1
	}
	return 0
}

// combine hashes a list of hashes in order.
func combine(hs ...uint64) uint64 {
	h := fnv.New64a()
	for _, x := range hs {
		word(h, x)
	}
	return h.Sum64()
}

// TestBuildStructureReport measures, for issue 18, how much of the 70B
// layout sweep's build a cache of program structures could serve: for
// every simulated point, run as the sweep runs it (FiguresOnly, one Reuse,
// the points in order), it hashes the programs of the run's last build
// (the shortened step of a replicated run, else the whole step: failed
// shortened plays' builds are not seen) by structureHashes, and writes one
// row per point and the totals to the file SIMTRAIN_STRUCTURE_REPORT
// names (skipped without it): a diagnostic, not a check. A point (a
// program) "repeats" when an earlier point (an earlier program, any
// point's) has the same structure: core and queue waits, or core alone.
// Within each group of points of one structure it counts the groups whose
// points differ in each price, in the price pattern and in the copies'
// marks. With SIMTRAIN_STRUCTURE_TIME=n it also times each point's build
// and, for the repeating points, a re-pricing pass (repriceSeconds): the
// share of the build a reuse could save. Figures: docs/design.md, "Build
// structure shared across a sweep's points measured".
func TestBuildStructureReport(t *testing.T) {
	out := os.Getenv("SIMTRAIN_STRUCTURE_REPORT")
	if out == "" {
		t.Skip("SIMTRAIN_STRUCTURE_REPORT names the report file")
	}
	sw, err := sweep.Load("../../scenarios/sweeps/llama3-70b-1024-h100-layouts.yaml", sweep.Options{})
	if err != nil {
		t.Fatal(err)
	}
	var b strings.Builder
	b.WriteString("point\tvalues\tpp\tm\tplayed_m\tsteady_plays\tfailed_tasks\tstages\ttasks\tcore\tfull\tfirst_core\tfirst_full\tprog_repeats_full\tprog_repeat_tasks_full\tbuild_s\n")
	// SIMTRAIN_STRUCTURE_TIME=n also times each point's last build (the
	// least of n builds after a first, in a Reuse of its own), for the
	// share of the build's time the repeating points take.
	reps, _ := strconv.Atoi(os.Getenv("SIMTRAIN_STRUCTURE_TIME"))
	timer := new(simulation.Reuse)
	var buildAll, buildRep, buildRepWorker, repriceRep float64
	workerSeen := map[[2]uint64]bool{}
	type member struct {
		point int
		progs []progHashes
	}
	firstCore, firstFull := map[uint64]int{}, map[uint64]int{}
	groups := map[uint64][]member{} // by full structure
	progSeenFull, progSeenCore := map[uint64]bool{}, map[uint64]bool{}
	var points, tasks, failedTasks, failedPoints int
	var repFullPoints, repFullTasks, repCorePoints, repCoreTasks int
	var progs, progRepFull, progRepFullTasks, progRepCore, progRepCoreTasks int
	// Tasks with a nonzero issue time, queue wait, self wait or host
	// wait, and bulk-copied ranges: so that an equal hash is not only
	// an empty field.
	var issued, queueWaits, selfWaits, hostWaits, copySegs, copied int
	var classes, maxClasses int
	eachSimulatedPoint(t, sw, func(i int, p *sweep.Point, r *simulation.Result) {
		points++
		if r.FailedTasks > 0 {
			failedPoints++
			failedTasks += r.FailedTasks
		}
		ps := simulation.ProgramsOf(r)
		var hs []progHashes
		var cores, fulls []uint64
		n, pRep, pRepTasks := 0, 0, 0
		for _, pg := range ps {
			h := structureHashes(pg)
			for k := range pg.Tasks {
				if pg.Issue(k) != 0 {
					issued++
				}
				if pg.QueueAfter(k) >= 0 {
					queueWaits++
				}
				if s, _ := pg.QueueSelf(k); s >= 0 {
					selfWaits++
				}
				if pg.HostAfter(k) >= 0 {
					hostWaits++
				}
			}
			classes += h.classes
			maxClasses = max(maxClasses, h.classes)
			cs := reflect.ValueOf(pg).Elem().FieldByName("copies")
			copySegs += cs.Len()
			for k := 0; k < cs.Len(); k++ {
				copied += int(cs.Index(k).FieldByName("n").Int())
			}
			hs = append(hs, h)
			full := combine(h.core, h.queue)
			cores, fulls = append(cores, h.core), append(fulls, full)
			n += len(pg.Tasks)
			progs++
			if progSeenFull[full] {
				progRepFull++
				progRepFullTasks += len(pg.Tasks)
				pRep++
				pRepTasks += len(pg.Tasks)
			}
			if progSeenCore[h.core] {
				progRepCore++
				progRepCoreTasks += len(pg.Tasks)
			}
			progSeenFull[full], progSeenCore[h.core] = true, true
		}
		tasks += n
		core, full := combine(cores...), combine(fulls...)
		fc, ok := firstCore[core]
		if ok {
			repCorePoints++
			repCoreTasks += n
		} else {
			fc = i
			firstCore[core] = i
		}
		ff, ok := firstFull[full]
		if ok {
			repFullPoints++
			repFullTasks += n
		} else {
			ff = i
			firstFull[full] = i
		}
		groups[full] = append(groups[full], member{i, hs})
		m := p.Scenario.StepConfig(r.Layout).Microbatches
		var secs float64
		if reps > 0 {
			secs, err = simulation.BuildSeconds(p.Scenario, m-r.Replicated, timer, reps)
			if err != nil {
				t.Fatalf("point %d: %v", i, err)
			}
			buildAll += secs
			if ff != i {
				buildRep += secs
				for _, pg := range ps {
					repriceRep += repriceSeconds(pg, reps)
				}
			}
			// The sweep's two workers take the first and the second half
			// of the points (sweep.Run's shares, their endgames aside).
			w := [2]uint64{full, uint64(2 * i / sw.Len())}
			if workerSeen[w] {
				buildRepWorker += secs
			}
			workerSeen[w] = true
		}
		fmt.Fprintf(&b, "%d\t%s\t%d\t%d\t%d\t%d\t%d\t%d\t%d\t%016x\t%016x\t%d\t%d\t%d\t%d\t%.6f\n", i, strings.Join(p.Values, ","), r.Layout.PP, m, m-r.Replicated,
			r.SteadyPlays, r.FailedTasks, len(ps), n, core, full, fc, ff, pRep, pRepTasks, secs)
	})
	// Per group of two or more points: which hashes differ among them.
	var multi, multiPoints int
	differ := make([]int, len(priceNames)+1) // prices, then copies
	var allSamePrices int
	var keys []uint64
	for k := range groups {
		keys = append(keys, k)
	}
	slices.SortFunc(keys, func(a, c uint64) int { return groups[a][0].point - groups[c][0].point })
	b.WriteString("\n# group\tpoints\tmembers\tdiffering\n")
	for _, k := range keys {
		g := groups[k]
		if len(g) < 2 {
			continue
		}
		multi++
		multiPoints += len(g)
		var names []string
		same := true
		for f := 0; f <= len(priceNames); f++ {
			d := false
			for _, mb := range g[1:] {
				for s := range mb.progs {
					a, c := mb.progs[s], g[0].progs[s]
					if f < len(priceNames) && a.prices()[f] != c.prices()[f] || f == len(priceNames) && a.copies != c.copies {
						d = true
					}
				}
			}
			if d {
				differ[f]++
				if f < len(priceNames) {
					names = append(names, priceNames[f])
					same = false
				} else {
					names = append(names, "copies")
				}
			}
		}
		if same {
			allSamePrices++
		}
		var ms []string
		for _, mb := range g {
			ms = append(ms, fmt.Sprint(mb.point))
		}
		fmt.Fprintf(&b, "# group %016x\t%d\t%s\t%s\n", k, len(g), strings.Join(ms, ","), strings.Join(names, ","))
	}
	tot := []string{
		fmt.Sprintf("simulated points %d, their last builds' tasks %d, programs %d", points, tasks, progs),
		fmt.Sprintf("tasks with an issue time %d, a queue wait %d, a self wait %d, a host wait %d; copied ranges %d holding %d tasks",
			issued, queueWaits, selfWaits, hostWaits, copySegs, copied),
		fmt.Sprintf("price classes (distinct Dur, GEMMShare, Bytes, FLOPs) per program: %d in all, at most %d", classes, maxClasses),
		fmt.Sprintf("points with failed shortened plays %d (played tasks in them %d, builds not hashed)", failedPoints, failedTasks),
		fmt.Sprintf("distinct point structures: core+queue %d, core %d", len(firstFull), len(firstCore)),
		fmt.Sprintf("points repeating an earlier point: core+queue %d (tasks %d, %.4f), core %d (tasks %d, %.4f)",
			repFullPoints, repFullTasks, float64(repFullTasks)/float64(tasks), repCorePoints, repCoreTasks, float64(repCoreTasks)/float64(tasks)),
		fmt.Sprintf("programs repeating an earlier program: core+queue %d (tasks %d, %.4f), core %d (tasks %d, %.4f)",
			progRepFull, progRepFullTasks, float64(progRepFullTasks)/float64(tasks), progRepCore, progRepCoreTasks, float64(progRepCoreTasks)/float64(tasks)),
		fmt.Sprintf("groups of >= 2 points (core+queue) %d holding %d points; all prices equal in %d", multi, multiPoints, allSamePrices),
	}
	var ds []string
	for f, c := range differ {
		if f < len(priceNames) {
			ds = append(ds, fmt.Sprintf("%s %d", priceNames[f], c))
		} else {
			ds = append(ds, fmt.Sprintf("copies %d", c))
		}
	}
	tot = append(tot, "groups whose points differ in: "+strings.Join(ds, ", "))
	if reps > 0 {
		tot = append(tot, fmt.Sprintf("build seconds (least of %d): all %.4f, repeating points %.4f (%.4f), repeating within a worker's half %.4f (%.4f); a re-pricing pass over the repeating points' tasks %.4f",
			reps, buildAll, buildRep, buildRep/buildAll, buildRepWorker, buildRepWorker/buildAll, repriceRep))
	}
	for _, l := range tot {
		b.WriteString("# " + l + "\n")
		t.Log(l)
	}
	if err := os.WriteFile(out, []byte(b.String()), 0o644); err != nil {
		t.Fatal(err)
	}
}
