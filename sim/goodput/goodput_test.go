package goodput

import (
	"math"
	"reflect"
	"strings"
	"testing"
)

func f(v float64) *float64 { return &v }
func i(v int) *int         { return &v }

// testPlan builds a one-GPU job whose failures (software, per GPU-hour) run
// at perHour, restarting in restartS, with a checkpoint of writeS seconds
// (1 GB/s storage) every intervalS of training (1 s steps).
func testPlan(t *testing.T, perHour, restartS, writeS float64, interval string, mod func(*Config)) *Plan {
	t.Helper()
	c := &Config{
		FailuresPerHour: &ClassRates{GPU: f(0), HBM: f(0), Software: f(perHour), Network: f(0), NIC: f(0), Host: f(0)},
		PlannedPerDay:   f(0), DetectS: f(0), RelaunchS: f(restartS), CommInitMsPerGPU: f(0),
		Checkpoint: CheckpointConfig{Interval: interval, NodeGBs: f(1e12), StorageWriteGBs: f(1), StorageReadGBs: f(1e12)},
	}
	if mod != nil {
		mod(c)
	}
	if err := c.Resolve(); err != nil {
		t.Fatal(err)
	}
	p, err := NewPlan(c, Job{GPUs: 1, Nodes: 1, NICsPerNode: 1, StepTimeS: 1, TokensPerStep: 1,
		GPUHourUSD: 2, CheckpointBytes: writeS * 1e9, HeldBytesPerGPU: writeS * 1e9, D2HBytesPerS: 100e9})
	if err != nil {
		t.Fatal(err)
	}
	return p
}

func near(t *testing.T, what string, got, want, rel float64) {
	t.Helper()
	if math.Abs(got-want) > rel*math.Abs(want) {
		t.Errorf("%s = %.9g, want %.9g (±%.1g)", what, got, want, rel)
	}
}

// Hand computations (python3 -c with math.sqrt/math.exp; values in the
// comments).
func TestYoungDalyHand(t *testing.T) {
	// δ = 60 s, M = 3600 s: √(2·60·3600) = √432000 = 657.2670690
	near(t, "Young", YoungInterval(60, 3600), 657.2670690061993, 1e-12)
	// x = δ/2M = 1/120: 657.2670690·(1 + √x/3 + x/9) − 60 = 617.8756496
	near(t, "Daly", DalyInterval(60, 3600), 617.8756496256495, 1e-12)
	// δ ≥ 2M: the interval is M
	if got := DalyInterval(8000, 3600); got != 3600 {
		t.Errorf("Daly(δ ≥ 2M) = %v, want M = 3600", got)
	}
}

func TestExpectedLossHand(t *testing.T) {
	// λ = 1/3600, a = 3600: 3600 − 3600·e⁻¹/(1 − e⁻¹) = 1504.8838553 s
	near(t, "E[X|X<a]", ExpectedLossS(1.0/3600, 3600), 1504.8838552704246, 1e-12)
	// rare failures: half the segment
	near(t, "E[X|X<a], λa→0", ExpectedLossS(1e-12, 600), 300, 1e-9)
	near(t, "E[X|X<a], λ=0", ExpectedLossS(0, 600), 300, 0)
}

func TestPoissonTailHand(t *testing.T) {
	// m = 2: P(N ≥ 3) = 1 − e⁻²(1 + 2 + 2) = 0.3233235838
	near(t, "P(N>=3)", PoissonTail(2, 3), 0.3233235838169365, 1e-12)
	if PoissonTail(2, 0) != 1 || PoissonTail(0, 1) != 0 {
		t.Error("PoissonTail edge cases")
	}
}

// With deterministic restarts and no planned stops the model is Daly's:
// a segment of a = τ + δ costs E[T] = e^(λR)(e^(λa) − 1)/λ of wall time.
func TestSegmentIsDalyHand(t *testing.T) {
	p := testPlan(t, 1, 600, 60, "600", nil)
	if p.IntervalS != 600 || p.BlockingS != 60 || math.Abs(p.RestartS-600) > 1e-9 {
		t.Fatalf("plan: interval %v blocking %v restart %v", p.IntervalS, p.BlockingS, p.RestartS)
	}
	// (e^(1/6) − 1)·3600 = 652.8974863 s
	near(t, "restart phase", p.RestartPhase(), 652.8974863163251, 1e-12)
	// E[T] = e^(1/6)(e^(660/3600) − 1)·3600 = 855.7456886 s; rate 600/855.7456886
	c := p.segment(600) // one attempt per cycle: a segment takes 1/P(success) attempts
	near(t, "segment time", c.time/(c.progress/600), 855.7456886194007, 1e-12)
	near(t, "fraction", c.progress/c.time, 0.7011428838957955, 1e-12)
	e := p.Expect(600 * 1000)
	near(t, "time to train", e.TimeToTrainS, 600*1000/0.7011428838957955, 1e-12)
	near(t, "interruptions", e.Interruptions, e.TimeToTrainS/3600, 1e-12)
}

func TestIntervalRules(t *testing.T) {
	// MTBF 3600 s, δ = 60 s, 1 s steps
	if p := testPlan(t, 1, 600, 60, "young", nil); p.IntervalSteps != 657 || p.IntervalRule != "young" {
		t.Errorf("young: %d steps (%s), want 657", p.IntervalSteps, p.IntervalRule)
	}
	if p := testPlan(t, 1, 600, 60, "daly", nil); p.IntervalSteps != 618 {
		t.Errorf("daly: %d steps, want 618", p.IntervalSteps)
	}
	// async: the interval covers the background write
	p := testPlan(t, 1, 600, 60, "10", func(c *Config) { c.Checkpoint.Mode = "async" })
	if p.IntervalSteps != 60 || p.BlockingS != 0.6 || p.BackgroundS != 60 {
		t.Errorf("async: %d steps, blocking %v, background %v; want 60, 0.6 (60 GB at 100 GB/s), 60", p.IntervalSteps, p.BlockingS, p.BackgroundS)
	}
	// nothing fails: no interval but the run
	p = testPlan(t, 0, 600, 60, "daly", nil)
	if !math.IsInf(p.IntervalS, 1) {
		t.Errorf("no failures: interval %v, want +Inf", p.IntervalS)
	}
	if e := p.Expect(1000); e.TimeToTrainS != 1060 || e.Interruptions != 0 {
		t.Errorf("no failures: %v s, %v interruptions; want 1060 (one checkpoint), 0", e.TimeToTrainS, e.Interruptions)
	}
}

// The Monte Carlo plays the model Expect solves: its mean converges to the
// closed form (to within a few standard errors and one cycle at the ends).
func TestMonteCarloConvergesToClosedForm(t *testing.T) {
	for _, tc := range []struct {
		name string
		mod  func(*Config)
	}{
		{"sync", nil},
		{"sync, planned stops, no spares", func(c *Config) {
			c.PlannedPerDay = f(6)
			c.FailuresPerHour.Set("host", 0.3)
			c.SpareNodes = i(0)
			c.NodeRepairH = f(0.5)
		}},
		{"async, planned stops, spares", func(c *Config) {
			c.Checkpoint.Mode = "async"
			c.PlannedPerDay = f(6)
			c.FailuresPerHour.Set("gpu", 0.4)
			c.SpareNodes = i(1)
			c.NodeRepairH = f(2)
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := testPlan(t, 0.5, 600, 60, "daly", tc.mod)
			tokens := 400 * 3600.0 // 400 h of training, ~hundreds of segments
			e := p.Expect(tokens)
			const trials = 3000
			d := p.Simulate(tokens, trials, 42, nil)
			se := d.StdDays / math.Sqrt(trials)
			cycleDays := (p.IntervalS + p.BlockingS + p.BackgroundS + p.RestartS) / 86400
			if diff := math.Abs(d.MeanDays - e.Days()); diff > 4*se+2*cycleDays {
				t.Errorf("MC mean %.5f days, closed form %.5f (diff %.2g, 4 s.e. %.2g, cycle %.2g)", d.MeanDays, e.Days(), diff, 4*se, cycleDays)
			}
			// failures are Poisson over wall time: E[N(T)] = λ·E[T] (Wald)
			wantN := p.FailuresPerHour * d.MeanDays * 24
			if diff := math.Abs(d.MeanInterruptions - wantN); diff > 4*math.Sqrt(wantN/trials)+0.5 {
				t.Errorf("MC interruptions %.3f, λ·E[T] = %.3f", d.MeanInterruptions, wantN)
			}
			if p.PlannedPerHour > 0 {
				near(t, "planned stops", d.MeanPlanned, e.PlannedInterruptions, 0.05)
			}
			if !(d.P10Days <= d.P50Days && d.P50Days <= d.P90Days) {
				t.Errorf("percentiles out of order: %v %v %v", d.P10Days, d.P50Days, d.P90Days)
			}
		})
	}
}

func TestSimulateDeterministic(t *testing.T) {
	p := testPlan(t, 0.5, 600, 60, "daly", func(c *Config) { c.PlannedPerDay = f(3) })
	var a, b []Interruption
	da := p.Simulate(100*3600, 20, 7, func(iv Interruption) { a = append(a, iv) })
	db := p.Simulate(100*3600, 20, 7, func(iv Interruption) { b = append(b, iv) })
	if !reflect.DeepEqual(da, db) || !reflect.DeepEqual(a, b) || len(a) == 0 {
		t.Fatalf("same seed, different results (%d vs %d interruptions)", len(a), len(b))
	}
	dc := p.Simulate(100*3600, 20, 8, nil)
	if dc.MeanDays == da.MeanDays {
		t.Error("a different seed gave the same mean")
	}
	for k, iv := range a {
		if k > 0 && iv.Trial == a[k-1].Trial && iv.AtNs < a[k-1].AtNs {
			t.Fatalf("interruptions out of time order at %d", k)
		}
	}
}

// The spare pool: auto-sized to the 99th percentile of nodes in repair;
// none means every node-out failure waits for a repair.
func TestSpares(t *testing.T) {
	p := testPlan(t, 0, 600, 60, "daly", func(c *Config) {
		c.FailuresPerHour.Set("host", 1) // one node-out failure an hour
		c.NodeRepairH = f(2)             // m = 2 nodes in repair
	})
	// P(N ≥ 6) = 0.0166, P(N ≥ 7) = 0.00453 for N ~ Poisson(2)
	if !p.SpareAuto || p.SpareNodes != 7 {
		t.Errorf("auto spares = %d, want 7", p.SpareNodes)
	}
	near(t, "P(no spare)", p.PNoSpare, PoissonTail(2, 7), 0)
	near(t, "spare wait", p.SpareWaitS, 2*3600.0/8, 1e-12)
	none := testPlan(t, 0, 600, 60, "daly", func(c *Config) {
		c.FailuresPerHour.Set("host", 1)
		c.NodeRepairH = f(2)
		c.SpareNodes = i(0)
	})
	if none.PNoSpare != 1 || none.SpareWaitS != 7200 {
		t.Errorf("no spares: P %v, wait %v; want 1, 7200", none.PNoSpare, none.SpareWaitS)
	}
	if a, b := p.Expect(1e6), none.Expect(1e6); !(b.TimeToTrainS > a.TimeToTrainS) {
		t.Errorf("no spares (%v s) should be slower than spares (%v s)", b.TimeToTrainS, a.TimeToTrainS)
	}
}

// Llama 3's 405B job: 16,384 H100, 2,048 nodes, 8 NICs per node. Table 5's
// rates give back its 419 unexpected interruptions over 54 days (in sample:
// a consistency check); the independent RSC rates predict 489.
func TestRateSetsOnLlama3(t *testing.T) {
	job := Job{GPUs: Llama3GPUs, Nodes: Llama3Nodes, NICsPerNode: 8, StepTimeS: 7, TokensPerStep: 16 << 20, CheckpointBytes: 1e12}
	for _, tc := range []struct {
		set  string
		want float64
	}{{"llama3-table5", 419}, {"meta-rsc", 419 * (6.50e-3 + 2.34e-3) / 2 / 24 / (419.0 / (2048 * 1296))}} {
		c := &Config{FailureRates: tc.set}
		if err := c.Resolve(); err != nil {
			t.Fatal(err)
		}
		p, err := NewPlan(c, job)
		if err != nil {
			t.Fatal(err)
		}
		near(t, tc.set+" failures in 54 days", p.FailuresPerHour*54*24, tc.want, 1e-12)
	}
	total := 0
	for _, c := range Classes {
		total += c.Table5Count
	}
	if total != Llama3Unexpected {
		t.Errorf("Table 5 classes sum to %d, want %d", total, Llama3Unexpected)
	}
}

func TestResolveErrors(t *testing.T) {
	for _, tc := range []struct {
		c    Config
		want string
	}{
		{Config{FailureRates: "bogus"}, "goodput.failure_rates: unknown set \"bogus\" (valid: meta-rsc, llama3-table5)"},
		{Config{FailuresPerHour: &ClassRates{GPU: f(-1)}}, "goodput.failures_per_hour.gpu: must be a finite number >= 0"},
		{Config{DetectS: f(-1)}, "goodput.detect_s: must be a finite number >= 0"},
		{Config{NodeRepairH: f(0)}, "goodput.node_repair_h: must be > 0"},
		{Config{SpareNodes: i(-2)}, "goodput.spare_nodes: must be >= 0"},
		{Config{Checkpoint: CheckpointConfig{Format: "zip"}}, "goodput.checkpoint.format: unknown value \"zip\" (valid: sharded, full)"},
		{Config{Checkpoint: CheckpointConfig{Mode: "lazy"}}, "goodput.checkpoint.mode: unknown value \"lazy\" (valid: sync, async)"},
		{Config{Checkpoint: CheckpointConfig{Interval: "hourly"}}, "goodput.checkpoint.interval: \"hourly\" is neither a rule (daly, young) nor a number of seconds in (0, 1e9]"},
		{Config{Checkpoint: CheckpointConfig{Interval: "-5"}}, "goodput.checkpoint.interval"},
	} {
		err := tc.c.Resolve()
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("got %v, want %q", err, tc.want)
		}
	}
	d := Defaults()
	if d.FailureRates != DefaultRateSet || *d.DetectS != DefaultDetectS || d.Checkpoint.Format != "sharded" || d.Checkpoint.Interval != "daly" {
		t.Errorf("defaults: %+v", d)
	}
}

// A full (consolidated) checkpoint goes through one node; a sharded one
// through all of them.
func TestCheckpointFormats(t *testing.T) {
	job := Job{GPUs: 64, Nodes: 8, NICsPerNode: 8, StepTimeS: 1, TokensPerStep: 1, CheckpointBytes: 800e9, HeldBytesPerGPU: 50e9, D2HBytesPerS: 50e9}
	for _, tc := range []struct {
		format, mode          string
		write, load, blocking float64
	}{
		// sharded: max(800 GB / 2000 GB/s, 100 GB / 100 GB/s) = 1 s
		{"sharded", "sync", 1, 1, 1},
		// full: 800 GB / min(100, 2000) GB/s = 8 s
		{"full", "sync", 8, 8, 8},
		// async: the step waits for 50 GB at 50 GB/s to host memory
		{"sharded", "async", 1, 1, 1},
	} {
		c := &Config{Checkpoint: CheckpointConfig{Format: tc.format, Mode: tc.mode}}
		if err := c.Resolve(); err != nil {
			t.Fatal(err)
		}
		p, err := NewPlan(c, job)
		if err != nil {
			t.Fatal(err)
		}
		if p.WriteS != tc.write || p.LoadS != tc.load || p.BlockingS != tc.blocking {
			t.Errorf("%s/%s: write %v load %v blocking %v; want %v %v %v", tc.format, tc.mode, p.WriteS, p.LoadS, p.BlockingS, tc.write, tc.load, tc.blocking)
		}
	}
}

// BenchmarkSimulateLlama3 plays Llama 3 405B's 15.6T tokens (7.4 s steps,
// 31-step segments, ~9 failures a day) once per iteration.
func BenchmarkSimulateLlama3(b *testing.B) {
	c := Defaults()
	p, err := NewPlan(c, Job{GPUs: Llama3GPUs, Nodes: Llama3Nodes, NICsPerNode: 8, StepTimeS: 7.381, TokensPerStep: 16 << 20,
		CheckpointBytes: 5.68e12, HeldBytesPerGPU: 6.7e9, D2HBytesPerS: 52e9})
	if err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	for n := 0; b.Loop(); n++ {
		p.Simulate(15.6e12, 1, uint64(n), nil)
	}
}

// Failures that outpace restarts: the closed form says the run never
// finishes and the Monte Carlo stops instead of spinning.
func TestRunawayFailures(t *testing.T) {
	p := testPlan(t, 1e6, 600, 60, "daly", nil)
	if e := p.Expect(3600); e.EffectiveTrainingFraction > 1e-6 {
		t.Errorf("fraction %v with a failure every 3.6 ms", e.EffectiveTrainingFraction)
	}
	if d := p.Simulate(3600, 1, 1, nil); !math.IsInf(d.MeanDays, 1) {
		t.Errorf("Monte Carlo days %v, want +Inf", d.MeanDays)
	}
	q := testPlan(t, 1, 600, 60, "1e9", nil)
	if q.IntervalSteps != 1e9 {
		t.Errorf("a 1e9 s interval: %d steps", q.IntervalSteps)
	}
}
