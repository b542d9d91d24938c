package parallel

import (
	"math"
	"math/rand/v2"
	"reflect"
	"strings"
	"testing"

	"github.com/simtrain/simtrain/sim/collectives"
	"github.com/simtrain/simtrain/sim/engine"
	"github.com/simtrain/simtrain/sim/pipeline"
	"github.com/simtrain/simtrain/sim/units"
)

// steadyConfig is a two-stage 1F1B pipeline of one layer per stage and m
// micro-batches, every layer block priced at 1 ms (unitPricer), with the
// given host thread.
func steadyConfig(t *testing.T, m int, host HostModel) *StepConfig {
	t.Helper()
	cfg := hostConfig(t, 2, host)
	l, err := NewLayout(1, 1, 1, 1, 2, [5]Dim{DimTP, DimCP, DimEP, DimDP, DimPP})
	if err != nil {
		t.Fatal(err)
	}
	chunks, err := Partition(2, 2, 1, 0, 0)
	if err != nil {
		t.Fatal(err)
	}
	cfg.Layout, cfg.Chunks, cfg.Microbatches = l, chunks, m
	return cfg
}

// playSteady plays cfg whole, then shortened by PlanSteady, and returns
// both executors, both engines' event counts and whether Replicate took
// the shortened play (with its reason when not).
func playSteady(t *testing.T, cfg *StepConfig) (full, short *Executor, fullEvents, shortEvents uint64, why string) {
	t.Helper()
	return playSteadyPriced(t, cfg, unitPricer{unit: engine.Millisecond})
}

// tpUnitPricer is unitPricer with a tensor-parallel collective of a quarter
// of a unit.
type tpUnitPricer struct{ unitPricer }

func (p tpUnitPricer) CommTime(g GroupKind, _ int, _ collectives.Op, _ units.Bytes) engine.Time {
	if g == GroupTP {
		return p.unit / 4
	}
	return 0
}

// stagesConfig is steadyConfig with pp stages of one layer each.
func stagesConfig(t *testing.T, pp, m int, host HostModel) *StepConfig {
	t.Helper()
	cfg := hostConfig(t, pp, host)
	l, err := NewLayout(1, 1, 1, 1, pp, [5]Dim{DimTP, DimCP, DimEP, DimDP, DimPP})
	if err != nil {
		t.Fatal(err)
	}
	chunks, err := Partition(pp, pp, 1, 0, 0)
	if err != nil {
		t.Fatal(err)
	}
	cfg.Layout, cfg.Chunks, cfg.Microbatches = l, chunks, m
	return cfg
}

// playWhole builds c's step priced by pr and plays it whole on its
// representative ranks, counting each task's events when count
// (CountEvents, as Replicate needs), and returns the executor and the
// engine's events.
func playWhole(t *testing.T, c *StepConfig, pr Pricer, count bool) (*Executor, uint64) {
	t.Helper()
	progs, err := Build(c, pr)
	if err != nil {
		t.Fatal(err)
	}
	eng := engine.New()
	x := NewSymmetric(eng, c.Layout, progs)
	if count {
		x.CountEvents()
	}
	if err := x.Run(); err != nil {
		t.Fatal(err)
	}
	return x, eng.Executed()
}

// playSteadyPriced is playSteady with the given pricer.
func playSteadyPriced(t *testing.T, cfg *StepConfig, pr Pricer) (full, short *Executor, fullEvents, shortEvents uint64, why string) {
	t.Helper()
	plan, ok := PlanSteady(cfg, 8)
	if !ok {
		t.Fatalf("PlanSteady refused %d micro-batches on pp %d", cfg.Microbatches, cfg.Layout.PP)
	}
	full, fullEvents = playWhole(t, cfg, pr, false)
	c := *cfg
	c.Microbatches = plan.Played
	short, shortEvents = playWhole(t, &c, pr, true)
	why = short.replicate(plan, false)
	return full, short, fullEvents, shortEvents, why
}

// unitHost returns the host time one 1F1B unit (a forward and a backward)
// of stage s issues at 1 ns per kernel and the GPU's period without a host
// thread.
func unitHost(t *testing.T, m, s int) (host, period engine.Time) {
	t.Helper()
	x := playSymmetric(t, steadyConfig(t, m, HostModel{On: true, KernelFwd: 1, KernelBwd: 1}), unitPricer{unit: engine.Millisecond})
	p := x.inst[s].prog
	e := p.entries
	mid := len(e) / 2 &^ 1 // an entry starting a unit (forward, backward), inside the steady state
	for i := e[mid]; i < e[mid+2]; i++ {
		host += p.Issue(int(i))
	}
	y := playSymmetric(t, steadyConfig(t, m, HostModel{}), unitPricer{unit: engine.Millisecond})
	q, st := y.inst[s].prog, y.inst[s].state
	period = st[q.entries[mid+2]].Start() - st[q.entries[mid]].Start()
	return host, period
}

// A host thread that runs ahead of the GPU: the replicated figures are the
// full play's, to the nanosecond and the event.
func TestSteadyReplicatesHostAhead(t *testing.T) {
	const m = 40
	cfg := steadyConfig(t, m, HostModel{On: true, KernelFwd: 20 * engine.Microsecond, KernelBwd: 20 * engine.Microsecond, Call: 5 * engine.Microsecond})
	full, short, fe, se, why := playSteady(t, cfg)
	if why != "" {
		t.Fatalf("not replicated: %s", why)
	}
	for i := range full.inst {
		if g, w := short.Stats(i), full.Stats(i); g != w {
			t.Errorf("stage %d: replicated %+v, full %+v", i, g, w)
		}
	}
	if g := se + short.ExtraEvents(); g != fe {
		t.Errorf("events: replicated %d + %d = %d, full %d", se, short.ExtraEvents(), g, fe)
	}
}

// The last stage issues more kernels per micro-batch than the first (the
// output layer and loss) and its host thread is slightly slower than the
// pipeline's period, but starts ahead: it issues during the warm-up, while
// its GPU waits for the first activations. Its lead shrinks every
// micro-batch until, past the micro-batches played, the GPU waits for it
// (a kink a replicated step would miss). Replicate must refuse: the issue
// times do not repeat with the GPU's period.
func TestSteadyRefusesHostFallingBehind(t *testing.T) {
	const m = 48
	h0, p := unitHost(t, m, 0)
	h1, _ := unitHost(t, m, 1)
	if h1 <= h0 {
		t.Fatalf("the last stage issues %d kernels per unit, the first %d: want more", h1, h0)
	}
	// k ns per kernel: the last stage's thread is 1/100 slower than the
	// period, the first's faster.
	k := engine.Time(float64(p) * 1.01 / float64(h1))
	if engine.Time(h0)*k >= p {
		t.Fatalf("the first stage's host (%d kernels × %d ns) would be the bottleneck of period %d", h0, k, p)
	}
	// With a launch queue too (issue 16): it never fills on the last
	// stage, whose thread falls behind.
	for _, q := range []int{0, 1024} {
		cfg := steadyConfig(t, m, HostModel{On: true, KernelFwd: k, KernelBwd: k, Queue: q})
		full, short, _, _, why := playSteady(t, cfg)
		if why != "host thread does not repeat" {
			t.Errorf("queue %d: Replicate: %q, want the host thread's refusal", q, why)
		}
		// The kink is real: the full step's last stage waits for its
		// host, the shortened step's does not.
		if fb, sb := full.Stats(1).HostBound, short.Stats(1).HostBound; fb == 0 || sb != 0 {
			t.Errorf("queue %d: host-bound time on the last stage: full %v, shortened %v; want > 0 and 0", q, fb, sb)
		}
	}
}

// A replicated step's Stats measured on one period (statsPeriodic) are
// those of walking every copy of the unit, and those of the full play:
// without a host thread, with one running ahead, and with one that the
// GPU waits for every unit (the host-bound waits repeat with the copies).
func TestStatsPeriodicEqualsWalk(t *testing.T) {
	for _, c := range []struct {
		name string
		host HostModel
	}{
		{"no host thread", HostModel{}},
		{"host ahead", HostModel{On: true, KernelFwd: 20 * engine.Microsecond, KernelBwd: 20 * engine.Microsecond, Call: 5 * engine.Microsecond}},
		{"host-bound", HostModel{On: true, KernelFwd: 2 * engine.Millisecond, KernelBwd: 2 * engine.Millisecond}},
		{"host ahead, launch queue full", HostModel{On: true, KernelFwd: 20 * engine.Microsecond, KernelBwd: 20 * engine.Microsecond, Call: 5 * engine.Microsecond, Queue: 16}},
		{"host-bound, launch queue full", HostModel{On: true, KernelFwd: 2 * engine.Millisecond, KernelBwd: 2 * engine.Millisecond, Queue: 6}},
		{"tensor parallel, host ahead", HostModel{On: true, KernelFwd: 20 * engine.Microsecond, KernelBwd: 20 * engine.Microsecond, Call: 5 * engine.Microsecond}},
	} {
		t.Run(c.name, func(t *testing.T) {
			const m = 64
			cfg := steadyConfig(t, m, c.host)
			if strings.HasPrefix(c.name, "tensor parallel") {
				// TP 2: the window's tensor-parallel exposed time is
				// measured on compute ∪ TP (walker.both)
				l, err := NewLayout(2, 1, 1, 1, 2, [5]Dim{DimTP, DimCP, DimEP, DimDP, DimPP})
				if err != nil {
					t.Fatal(err)
				}
				cfg.Layout, cfg.Shape.TP = l, 2
			}
			var pr Pricer = unitPricer{unit: engine.Millisecond}
			if strings.HasPrefix(c.name, "tensor parallel") {
				pr = tpUnitPricer{unitPricer{unit: engine.Millisecond}}
			}
			full, short, _, _, why := playSteadyPriced(t, cfg, pr)
			if why != "" {
				t.Fatalf("not replicated: %s", why)
			}
			for i := range short.inst {
				got, ok := short.statsPeriodic(i)
				if !ok {
					t.Fatalf("stage %d: not measured on one period", i)
				}
				short.walkCopies = true
				walk := short.Stats(i)
				short.walkCopies = false
				if got != walk || got != full.Stats(i) {
					t.Errorf("stage %d: one period %+v\nevery copy %+v\nfull play %+v", i, got, walk, full.Stats(i))
				}
				if strings.HasPrefix(c.name, "tensor parallel") && got.Exposed[0] == 0 {
					t.Errorf("stage %d: no tensor-parallel exposed time", i)
				}
				if strings.HasPrefix(c.name, "host-bound") && got.HostBound == 0 {
					t.Errorf("stage %d: no host-bound time", i)
				}
				if k := short.rep[i].extra; k < 40 {
					t.Errorf("stage %d: %d copies, want most of the %d micro-batches", i, k, m)
				}
			}
		})
	}
}

// queueBinds returns the micro-batches of instance i's play in which the
// host thread waited for a full launch queue (a task's issue began at the
// end of its QueueAfter, later than the thread was free), -1 for the
// step's suffix tasks.
func queueBinds(x *Executor, i int) map[int32]bool {
	in := &x.inst[i]
	p := in.prog
	bound := map[int32]bool{}
	var free engine.Time
	for t := range p.Tasks {
		if p.Tasks[t].Kind == KindRecv {
			continue
		}
		if w := p.QueueAfter(t); w >= 0 && in.state[w].End() > free {
			bound[p.Tasks[t].Micro] = true
		}
		free = in.state[t].Issued()
	}
	return bound
}

// A bounded launch queue (issue 16): a host thread that runs ahead of the
// GPU gains P − h per micro-batch (the GPU's period less the unit's issue
// time) until the queue holds it back, a kink that may come after the
// micro-batches played. Replicate walks the thread over the unplayed
// copies: the replicated figures and events are the full play's to the
// nanosecond, whether the queue is full from the warm-up on, fills
// mid-step past the played micro-batches, never fills, or the thread is
// the bottleneck. The two-stage pipeline's period is 8 ms; at 97% of it
// per unit for the last stage (k ns per kernel), its lead grows by 0.24 ms
// a micro-batch, a kernel's worth every ~1 micro-batch, so a 64-launch
// queue fills on it past micro-batch 30 (the first stage, 28 kernels a
// unit, fills it from micro-batch 6), and the played step is 11.
func TestSteadyReplicatesLaunchQueue(t *testing.T) {
	const m = 40
	_, p := unitHost(t, m, 0)
	h1, _ := unitHost(t, m, 1)
	k := engine.Time(float64(p) * 0.97 / float64(h1))
	fast := 20 * engine.Microsecond
	for _, c := range []struct {
		name  string
		host  HostModel
		binds func(stage int, first int32, played int) bool // the first micro-batch the queue holds stage's thread in
	}{
		{"queue full from the warm-up", HostModel{On: true, KernelFwd: k, KernelBwd: k, Queue: 16},
			func(_ int, first int32, played int) bool { return first >= 0 && int(first) < 2 }},
		{"queue fills mid-step, past the played micro-batches", HostModel{On: true, KernelFwd: k, KernelBwd: k, Queue: 64},
			func(stage int, first int32, played int) bool {
				return first >= 0 && (stage == 0 || int(first) >= played)
			}},
		{"host far ahead, queue full", HostModel{On: true, KernelFwd: fast, KernelBwd: fast, Call: fast / 4, Queue: 64},
			func(_ int, first int32, played int) bool { return first >= 0 && int(first) < played }},
		{"queue never fills", HostModel{On: true, KernelFwd: k, KernelBwd: k, Queue: 1 << 20},
			func(_ int, first int32, _ int) bool { return first < 0 }},
		{"host-bound", HostModel{On: true, KernelFwd: 2 * engine.Millisecond, KernelBwd: 2 * engine.Millisecond, Queue: 64},
			// the first stage's GPU waits for the second's gradients:
			// its thread gets ahead, past the played micro-batches
			func(stage int, first int32, played int) bool { return (stage == 0) == (int(first) >= played) }},
	} {
		t.Run(c.name, func(t *testing.T) {
			cfg := steadyConfig(t, m, c.host)
			plan, _ := PlanSteady(cfg, 8)
			full, short, fe, se, why := playSteady(t, cfg)
			if why != "" {
				t.Fatalf("not replicated: %s", why)
			}
			for i := range full.inst {
				first := int32(-1)
				for mb := int32(0); mb < m; mb++ {
					if queueBinds(full, i)[mb] {
						first = mb
						break
					}
				}
				if !c.binds(i, first, plan.Played) {
					t.Errorf("stage %d: the queue first holds the thread in micro-batch %d (played %d)", i, first, plan.Played)
				}
				if g, w := short.Stats(i), full.Stats(i); g != w {
					t.Errorf("stage %d: replicated %+v, full %+v", i, g, w)
				}
			}
			if g := se + short.ExtraEvents(); g != fe {
				t.Errorf("events: replicated %d + %d = %d, full %d", se, short.ExtraEvents(), g, fe)
			}
		})
	}
}

// settleEstimate counts the units until the latest change of period falls
// below 1 ns at the slowest ratio seen, in integers (hand-computed).
func TestSettleEstimate(t *testing.T) {
	for _, c := range []struct {
		name  string
		d     []int64
		limit int
		n     int
		ok    bool
	}{
		// The 70B sweep's pp 16 tp 16 point with 64 micro-batches:
		// slowest ratio 591/1033; 338 → 193 → 110 → 62 → 35 → 20 → 11
		// → 6 → 3 → 1 → 0.
		{"geometric 0.57", []int64{338, 591, 1033, 1806}, 100, 10, true},
		// Halving: 100,000 / 2¹⁶ = 1, / 2¹⁷ = 0.
		{"halving", []int64{100000, 200000, 400000, 800000}, 100, 17, true},
		{"capped at the limit", []int64{100000, 200000, 400000, 800000}, 5, 5, true},
		// The slowest ratio counts: 1/2 then 9/10; 10 → 9 → 8 → 7 → 6
		// → 5 → 4 → 3 → 2 → 1 → 0.
		{"slowest ratio", []int64{10, 20, 40, 44}, 100, 10, true},
		{"settled already", []int64{1, 2, 4, 8}, 100, 1, true},
		// Ratios of 2⁴⁰ scaled to 30 bits, v to 2³²: 33 halvings.
		{"huge", []int64{1 << 40, 1 << 41, 1 << 42, 1 << 43}, 100, 33, true},
		{"constant: a drift, not a decay", []int64{49080, 49080, 49080, 49080}, 100, 0, false},
		{"growing", []int64{107785, 99026, 90000, 80000}, 100, 0, false},
		{"repeats already at the last unit", []int64{0, 17, 171, 1888}, 100, 0, false},
		{"not shrinking every unit", []int64{7067, 7067, 5757, 9198}, 100, 0, false},
	} {
		n, ok := settleEstimate(c.d, c.limit)
		if n != c.n || ok != c.ok {
			t.Errorf("%s: settleEstimate(%v, %d) = %d, %v, want %d, %v", c.name, c.d, c.limit, n, ok, c.n, c.ok)
		}
	}
}

// Settle reads the change of period of the last units up to the copied one
// from the played tasks' starts: one stage of two tasks per unit (the
// second 10 ns after the first), units starting at the given times, the
// copied unit the last but one (the last is the suffix).
func TestSettle(t *testing.T) {
	for _, c := range []struct {
		name   string
		starts []engine.Time // of each unit
		limit  int
		reach  int  // the refusing check's (Executor.reach)
		unfit  bool // refused by the programs, not the times (structure)
		more   int
		ok     bool
	}{
		// Periods 1000, 1000, 1064, 1032, 1048, 1040: changes 64, −32,
		// 16, −8 up to the copied unit, ratio 1/2: 8 → 4 → 2 → 1 → 0,
		// 4 units, + settleSlack.
		{"halving oscillation", []engine.Time{0, 1000, 2000, 3064, 4096, 5144, 6184, 7224}, 100, 2, false, 4 + settleSlack, true},
		{"capped", []engine.Time{0, 1000, 2000, 3064, 4096, 5144, 6184, 7224}, 5, 2, false, 5, true},
		// Periods 1000, 1010, 1020, …: a drift, not settling.
		{"drift", []engine.Time{0, 1000, 2010, 3030, 4060, 5100, 6150, 7210}, 100, 2, false, 0, false},
		// The copied unit repeats the one before: nothing to estimate.
		{"settled", []engine.Time{0, 1000, 2000, 3000, 4000, 5000, 6000, 7000}, 100, 2, false, 0, false},
		// Periods 1000, 1000, 1064, 1032, 1048, 1048 up to the copied
		// unit: changes 64, −32, 16, 0: it has settled (z = 1), reach 2
		// needs one more zero change: 1 unit; reach 3 two.
		{"settled at the copied unit", []engine.Time{0, 1000, 2000, 3064, 4096, 5144, 6192, 7232}, 100, 2, false, 1, true},
		{"settled at the copied unit, reach 3", []engine.Time{0, 1000, 2000, 3064, 4096, 5144, 6192, 7232}, 100, 3, false, 2, true},
		{"settled, capped", []engine.Time{0, 1000, 2000, 3064, 4096, 5144, 6192, 7232}, 1, 3, false, 1, true},
		// Periods 1000, 1000, 1064, 1032, 1032, 1032 up to the copied
		// unit: changes 64, −32, 0, 0 (z = 2): reach 2 has its zeros but the check failed
		// (elsewhere): one unit; reach 4 two.
		{"settled two units", []engine.Time{0, 1000, 2000, 3064, 4096, 5128, 6160, 7192}, 100, 2, false, 1, true},
		{"settled two units, reach 4", []engine.Time{0, 1000, 2000, 3064, 4096, 5128, 6160, 7192}, 100, 4, false, 2, true},
		// Times that would give an estimate, after a refusal of the
		// programs: none (the same decision as before the play).
		{"refused by the programs", []engine.Time{0, 1000, 2000, 3064, 4096, 5144, 6184, 7224}, 100, 2, true, 0, false},
	} {
		starts := c.starts
		p := &Program{Tasks: make([]Task, 2*len(starts))}
		st := make([]taskState, len(p.Tasks))
		for k, s := range starts {
			p.entries = append(p.entries, int32(2*k))
			st[2*k].start, st[2*k+1].start = s+1, s+10+1
		}
		p.entries = append(p.entries, int32(len(p.Tasks)))
		x := &Executor{inst: []instance{{prog: p, state: st}}, reach: c.reach, unfit: c.unfit}
		plan := Steady{Played: 8, g: 1, stages: []steadyStage{{end: len(starts) - 1, unit: 1}}}
		more, ok := x.Settle(plan, c.limit)
		if more != c.more || ok != c.ok {
			t.Errorf("%s: Settle = %d, %v, want %d, %v", c.name, more, ok, c.more, c.ok)
		}
	}
}

// RunSteady stops a shortened play once its units show it will not
// replicate, and only then. The last stage's host thread starts ahead of
// its GPU and is slower than the pipeline's period: 1% slower, it falls
// behind only past the played units, so the GPU's units repeat and the
// play runs to its end, to the times Run gives, for Replicate to refuse on
// the host thread; 6% slower, the GPU starts waiting for it inside the
// checked units, which then do not repeat: RunSteady stops before the
// suffix, with Settle's estimate as after the whole play; 15% slower, the
// GPU waits for it from before the checked units on, every unit alike:
// played to the end and replicated.
func TestRunSteadyStopsOnlyFailingPlays(t *testing.T) {
	const m = 48
	h1, _ := unitHost(t, m, 1)
	_, p := unitHost(t, m, 0)
	for _, c := range []struct {
		name   string
		slower float64 // the last stage's host thread against the period
		early  bool
		why    string // whole play's Replicate
	}{
		{"falls behind past the units", 1.01, false, "host thread does not repeat"},
		{"falls behind inside the units", 1.06, true, "units do not repeat"},
		{"host-bound throughout the units", 1.15, false, ""},
	} {
		k := engine.Time(float64(p) * c.slower / float64(h1))
		cfg := steadyConfig(t, m, HostModel{On: true, KernelFwd: k, KernelBwd: k})
		plan, ok := PlanSteady(cfg, 8)
		if !ok {
			t.Fatalf("%s: PlanSteady refused", c.name)
		}
		short := *cfg
		short.Microbatches = plan.Played
		play := func(steady bool) (*Executor, bool) {
			progs, err := Build(&short, unitPricer{unit: engine.Millisecond})
			if err != nil {
				t.Fatal(err)
			}
			x := NewSymmetric(engine.New(), short.Layout, progs)
			x.CountEvents()
			if !steady {
				if err := x.Run(); err != nil {
					t.Fatal(err)
				}
				return x, false
			}
			failed, err := x.RunSteady(plan, nil)
			if err != nil {
				t.Fatal(err)
			}
			return x, failed
		}
		whole, _ := play(false)
		if why := whole.replicate(plan, false); why != c.why {
			t.Fatalf("%s: whole play's Replicate: %q, want %q", c.name, why, c.why)
		}
		x, failed := play(true)
		if failed != c.early {
			t.Errorf("%s: RunSteady failed = %v, want %v", c.name, failed, c.early)
		}
		if done, total := x.Completed(), whole.Completed(); c.early && done >= total || !c.early && done != total {
			t.Errorf("%s: %d of %d tasks played (stopped early: %v)", c.name, done, total, c.early)
		}
		if c.early {
			// Refusal names the early check's reason: the one the whole
			// play's Replicate gives (units that do not repeat).
			if x.Refusal() != c.why || x.Refusal() == "" {
				t.Errorf("%s: Refusal after the stop %q, want %q", c.name, x.Refusal(), c.why)
			}
			m1, ok1 := x.Settle(plan, m)
			m2, ok2 := whole.Settle(plan, m)
			if m1 != m2 || ok1 != ok2 {
				t.Errorf("%s: Settle after the stop %d, %v; after the whole play %d, %v", c.name, m1, ok1, m2, ok2)
			}
			continue
		}
		if ok := x.Replicate(plan); ok != (c.why == "") || x.Refusal() != c.why {
			t.Errorf("%s: Replicate after RunSteady: %v, %q, want %q", c.name, ok, x.Refusal(), c.why)
		}
		for i := range x.inst {
			if !reflect.DeepEqual(x.inst[i].state, whole.inst[i].state) || !reflect.DeepEqual(x.inst[i].events, whole.inst[i].events) {
				t.Errorf("%s: stage %d: RunSteady's times or events differ from Run's", c.name, i)
			}
		}
	}
}

// PlanSteady takes its schedule orders from cfg.Arena when set (the ones
// the builds of the played and the full step use): the same plan as
// without an arena, for steps it replicates and ones it refuses, and the
// arena then holds the played, the played + 1 and the full step's orders
// of every stage.
func TestPlanSteadyOrdersFromArena(t *testing.T) {
	for _, m := range []int{12, 20, 48, 49} {
		cfg := steadyConfig(t, m, HostModel{})
		want, wantOK := PlanSteady(cfg, 8)
		var a Arena
		cfg.Arena = &a
		got, ok := PlanSteady(cfg, 8)
		if ok != wantOK || !reflect.DeepEqual(got, want) {
			t.Errorf("m %d: with an arena %+v %v, without %+v %v", m, got, ok, want, wantOK)
		}
		if !ok {
			continue
		}
		for _, n := range []int{got.Played, got.Played + 1, m} {
			held := 0
			for i := range a.orders {
				if e := &a.orders[i]; e.ok && e.key.shape.Microbatches == n {
					for _, o := range e.orders {
						if o != nil {
							held++
						}
					}
				}
			}
			if held != cfg.Layout.PP {
				t.Errorf("m %d: the arena holds %d stages' orders for %d micro-batches, want %d", m, held, n, cfg.Layout.PP)
			}
		}
	}
}

// RunSteady refuses before playing anything when the programs alone show
// that the step cannot replicate, and decides as Replicate after the whole
// play would (and Settle has no estimate after either): an interleaved two-stage pipeline (two chunks per stage),
// whose units' receives are matched by sends in the peer's suffix at every
// count PlanSteady accepts (Lasting), against the 1F1B pipeline of
// steadyConfig, which plays.
func TestRunSteadyRefusesBeforePlaying(t *testing.T) {
	pr := unitPricer{unit: engine.Millisecond}
	cfg := interleavedSteadyConfig(t, 64)
	play := func(c *StepConfig, plan Steady) (steady, whole *Executor, failed bool) {
		build := func() *Executor {
			progs, err := Build(c, pr)
			if err != nil {
				t.Fatal(err)
			}
			x := NewSymmetric(engine.New(), c.Layout, progs)
			x.CountEvents()
			return x
		}
		steady, whole = build(), build()
		failed, err := steady.RunSteady(plan, nil)
		if err != nil {
			t.Fatal(err)
		}
		if err := whole.Run(); err != nil {
			t.Fatal(err)
		}
		whole.Replicate(plan)
		return steady, whole, failed
	}
	tried := 0
	for margin := 0; margin <= 40; margin++ {
		plan, ok := PlanSteady(cfg, margin)
		if !ok {
			continue
		}
		tried++
		c := *cfg
		c.Microbatches = plan.Played
		steady, whole, failed := play(&c, plan)
		if !failed || steady.Completed() != 0 || steady.Refusal() != refusedReceive || !steady.Lasting() {
			t.Errorf("interleaved, %d played: failed %v after %d tasks (%q, lasting %v), want refused before the play as lasting",
				plan.Played, failed, steady.Completed(), steady.Refusal(), steady.Lasting())
		}
		if whole.Refusal() != steady.Refusal() {
			t.Errorf("interleaved, %d played: refused %q before the play, %q after the whole play", plan.Played, steady.Refusal(), whole.Refusal())
		}
		// No estimate from either: the programs refused, not the times.
		_, ok1 := steady.Settle(plan, c.Microbatches)
		_, ok2 := whole.Settle(plan, c.Microbatches)
		if ok1 || ok2 {
			t.Errorf("interleaved, %d played: Settle estimated before the play %v, after the whole play %v", plan.Played, ok1, ok2)
		}
	}
	if tried < 2 {
		t.Fatalf("PlanSteady accepted the interleaved step at %d counts, want several", tried)
	}
	c := steadyConfig(t, 32, HostModel{})
	plan, ok := PlanSteady(c, 8)
	if !ok {
		t.Fatal("PlanSteady refused 1F1B")
	}
	s := *c
	s.Microbatches = plan.Played
	steady, _, failed := play(&s, plan)
	if failed || steady.Completed() == 0 || steady.Lasting() || !steady.Replicate(plan) {
		t.Errorf("1F1B: failed %v after %d tasks (%q), want played and replicated", failed, steady.Completed(), steady.Refusal())
	}
}

// A last shortened play (Steady.Last: no Settle follows) that fails on the
// first stage's units stops at its saved state. On a 4-stage 1F1B pipeline
// (unitPricer's 1 ms units) whose host threads take 1.02 to 1.20 ms per
// kernel (every play then fails, its units not repeating), for every play
// that fails: the refusal is the one the play without Last gives after
// every stage's units, Settle gives no estimate, and the full step resumed
// from the save is the full play; where the first stage's units already
// differ at the save (some must), only the saved tasks are played, fewer
// than without Last.
func TestRunSteadyLastStopsAtTheSave(t *testing.T) {
	const m, pp = 48, 4
	config := func(host HostModel) *StepConfig { return stagesConfig(t, pp, m, host) }
	build := func(c *StepConfig) *Executor {
		progs, err := Build(c, unitPricer{unit: engine.Millisecond})
		if err != nil {
			t.Fatal(err)
		}
		return NewSymmetric(engine.New(), c.Layout, progs)
	}
	stopped := 0
	for pc := 2; pc <= 20; pc += 2 {
		k := engine.Millisecond * engine.Time(100+pc) / 100 // per kernel
		cfg := config(HostModel{On: true, KernelFwd: k, KernelBwd: k})
		plan, ok := PlanSteady(cfg, 8)
		if !ok {
			t.Fatal("PlanSteady refused")
		}
		short := *cfg
		short.Microbatches = plan.Played
		var played [2]int
		var why [2]string
		var failed [2]bool
		var forks [2]Fork
		for i, last := range []bool{false, true} {
			st := plan
			st.Last = last
			x := build(&short)
			x.CountEvents()
			var err error
			if failed[i], err = x.RunSteady(st, &forks[i]); err != nil {
				t.Fatal(err)
			}
			played[i], why[i] = x.Completed(), x.Refusal()
			if _, known := x.Settle(st, m); last && known {
				t.Errorf("%d%%: Settle after a Last play: an estimate", pc)
			}
		}
		if failed[0] != failed[1] || why[0] != why[1] {
			t.Errorf("%d%%: failed %v (%q) with Last, %v (%q) without", pc, failed[1], why[1], failed[0], why[0])
		}
		if !failed[1] {
			continue
		}
		saved, done, _ := forks[1].Saved()
		if played[1] < played[0] {
			stopped++
			if !saved || played[1] != done {
				t.Errorf("%d%%: stopped with Last after %d tasks, not at the save (%v, %d)", pc, played[1], saved, done)
			}
		}
		if !saved {
			continue
		}
		whole := build(cfg)
		if err := whole.Run(); err != nil {
			t.Fatal(err)
		}
		x := build(cfg)
		if err := x.Resume(&forks[1]); err != nil {
			t.Fatalf("%d%%: %v", pc, err)
		}
		if err := x.RunResumed(); err != nil {
			t.Fatal(err)
		}
		for i := range x.inst {
			if !reflect.DeepEqual(x.inst[i].state, whole.inst[i].state) {
				t.Errorf("%d%%: stage %d: the resumed play's times differ from the full play's", pc, i)
			}
		}
		if x.eng.Executed() != whole.eng.Executed() {
			t.Errorf("%d%%: events: resumed %d, full %d", pc, x.eng.Executed(), whole.eng.Executed())
		}
		t.Logf("%d%%: %q, %d tasks played with Last, %d without", pc, why[1], played[1], played[0])
	}
	if stopped == 0 {
		t.Error("no play stopped at its save with Last")
	}
}

// SteadyPlayed gives PlanSteady's Played wherever PlanSteady plans, and
// refuses every count PlanSteady refuses for it: 1F1B on two stages and
// interleaved on two stages of two chunks (units of pp micro-batches, the
// count rounded up to them), at every step of 0 to 40 micro-batches and
// margins 0 to 12, and a step of two optimizer steps (refused). A count
// off by the tail or the rounding, or taken where the schedule refuses it,
// fails; where SteadyPlayed accepts and PlanSteady refuses (its orders),
// the count must still be the one PlanSteady would have played.
func TestSteadyPlayedIsPlanSteadys(t *testing.T) {
	interleaved := func(m int) *StepConfig { return interleavedSteadyConfig(t, m) }
	planned, refused := 0, 0
	for _, c := range []struct {
		name string
		cfg  func(m int) *StepConfig
	}{
		{"1f1b", func(m int) *StepConfig { return steadyConfig(t, m, HostModel{}) }},
		{"interleaved", interleaved},
		{"two steps", func(m int) *StepConfig { cfg := steadyConfig(t, m, HostModel{}); cfg.Steps = 2; return cfg }},
	} {
		for m := 0; m <= 40; m++ {
			cfg := c.cfg(m)
			for margin := 0; margin <= 12; margin++ {
				plan, ok := PlanSteady(cfg, margin)
				played, gotOK := SteadyPlayed(cfg, margin)
				if ok && (!gotOK || played != plan.Played) {
					t.Errorf("%s m %d margin %d: SteadyPlayed %d %v, PlanSteady plays %d", c.name, m, margin, played, gotOK, plan.Played)
				}
				if !ok && gotOK {
					// accepted for its count, refused for its orders:
					// the count is the one planned without the orders
					want := cfg.Layout.PP + margin + steadyTail
					if cfg.Schedule == pipeline.Interleaved {
						want = (want + cfg.Layout.PP - 1) / cfg.Layout.PP * cfg.Layout.PP
					}
					if played != want {
						t.Errorf("%s m %d margin %d: SteadyPlayed %d, want %d", c.name, m, margin, played, want)
					}
				}
				if ok {
					planned++
				} else if !gotOK {
					refused++
				}
			}
		}
	}
	if planned < 100 || refused < 100 {
		t.Errorf("%d plans, %d refused by both: the cases test too little", planned, refused)
	}
}

// interleavedSteadyConfig is hostConfig's four layers as an interleaved
// two-stage pipeline (two chunks per stage) of m micro-batches.
func interleavedSteadyConfig(t *testing.T, m int) *StepConfig {
	t.Helper()
	cfg := hostConfig(t, 4, HostModel{})
	l, err := NewLayout(1, 1, 1, 1, 2, [5]Dim{DimTP, DimCP, DimEP, DimDP, DimPP})
	if err != nil {
		t.Fatal(err)
	}
	chunks, err := Partition(4, 2, 2, 0, 0)
	if err != nil {
		t.Fatal(err)
	}
	cfg.Layout, cfg.Chunks, cfg.Schedule, cfg.Virtual, cfg.Microbatches = l, chunks, pipeline.Interleaved, 2, m
	return cfg
}

// TestLatestEndAndEndBefore: replicateStages' two checks of the times
// before the window, latestEnd (two maxima a turn) and endBefore (the
// suffix's dependencies as one run), equal their loops task by task
// (End's maximum; each dependency before win ending by first) on random
// times of every length from 1 to 9, with tasks not ended (End −1).
func TestLatestEndAndEndBefore(t *testing.T) {
	rng := rand.New(rand.NewPCG(50, 7))
	for trial := 0; trial < 2000; trial++ {
		state := make([]taskState, 1+rng.IntN(9))
		for k := range state {
			if rng.IntN(5) != 0 {
				state[k].end = 1 + engine.Time(rng.IntN(100))
			}
		}
		want := engine.Time(math.MinInt64)
		for k := range state {
			want = max(want, state[k].End())
		}
		if got := latestEnd(state); got != want {
			t.Fatalf("trial %d: latestEnd %d, End's maximum %d (%v)", trial, got, want, state)
		}
		deps := make([]int32, rng.IntN(6))
		for k := range deps {
			deps[k] = int32(rng.IntN(len(state)))
		}
		win, first := int32(rng.IntN(len(state)+1)), engine.Time(rng.IntN(100))
		ok := true
		for _, d := range deps {
			if d < win && state[d].End() > first {
				ok = false
			}
		}
		if got := endBefore(deps, state, win, first); got != ok {
			t.Fatalf("trial %d: endBefore %v, want %v", trial, got, ok)
		}
	}
}
