package sweep

import (
	"context"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"reflect"
	"runtime"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"go.yaml.in/yaml/v3"

	"github.com/simtrain/simtrain/sim/network"
	"github.com/simtrain/simtrain/sim/parallel"
	"github.com/simtrain/simtrain/sim/scenario"
	"github.com/simtrain/simtrain/sim/simulation"
)

// sweepBase is an inline scenario for sweep tests: Llama 3 8B (32 layers,
// 32 heads, 8 KV heads) on 2 × 8 H100, 64 sequences of 4K per step.
const sweepBase = `
scenario:
  name: t
  model:
    preset: llama3-8b
  training:
    seq_len: 4096
    global_batch: 64
  cluster:
    gpu: h100-sxm
    nodes: 2
  parallel:
    tp: 8
`

// parse resolves sweepBase's inline scenario with fields set (dotted path,
// YAML value pairs), as a point sets them.
func parse(kv ...string) (*scenario.Plan, error) {
	var doc yaml.Node
	if err := yaml.Unmarshal([]byte(sweepBase), &doc); err != nil {
		return nil, err
	}
	return scenario.ParseNode(doc.Content[0].Content[1], scenario.Overrides(kv...)...)
}

func parseSweep(t *testing.T, body string) *Sweep {
	t.Helper()
	sw, err := Parse([]byte(sweepBase+body), t.TempDir(), Options{})
	if err != nil {
		t.Fatal(err)
	}
	return sw
}

// TestSweepFileErrors: everything wrong with the file itself is an error
// before any point runs, on one line, naming the key or field.
func TestSweepFileErrors(t *testing.T) {
	for _, tc := range []struct{ body, want string }{
		{"sweep:\n  parallel.tpp: [1, 2]\n", `sweep: parallel.tpp: unknown field; did you mean "tp"? (line`},
		{"sweep:\n  parallel.tp: []\n", "sweep: parallel.tp: empty list"},
		{"sweep:\n  parallel.tp: [1, two]\n", `sweep: parallel.tp[1]: expected an integer, got "two"`},
		{"sweep:\n  parallel.sp: [false, 1]\n", `sweep: parallel.sp[1]: expected true or false, got "1"`},
		{"sweep:\n  cluster.network.nic_gbps: [400, fast]\n", `cluster.network.nic_gbps[1]: expected a number, got "fast"`},
		{"sweep:\n  cluster.gpu: [h100]\n", `sweep: cluster.gpu[0]: unknown value "h100" (valid: a100-40gb`},
		{"sweep:\n  parallel.schedule: [1f1b, zb]\n", `parallel.schedule[1]: unknown value "zb" (valid: gpipe, 1f1b, interleaved, zero-bubble, dualpipe, dualpipe-v)`},
		{"sweep:\n  parallel.tp: [2, 2]\n", `parallel.tp[1]: "2" is listed twice`},
		{"sweep:\n  parallel.tp: 4\n", "parallel.tp: expected a list of values or auto, got \"4\" (for one value write [4])"},
		{"sweep:\n  parallel.tp: [[1]]\n", "parallel.tp[0]: expected a single value, got a list"},
		{"sweep:\n  parallel: [1]\n", "sweep: parallel: is a group of fields, not a single value"},
		{"sweep:\n  name: [a, b]\n", "sweep: name: cannot be swept"},
		{"sweep:\n  expect.mfu: [0.4]\n", "sweep: expect.mfu: cannot be swept"},
		{"sweep:\n  cluster.nodes: auto\n", "sweep: cluster.nodes: auto is not supported for this field (supported: cluster.gpu"},
		{"sweep:\n  parallel.tp: {auto: true, mx: 4}\n", "sweep: parallel.tp.mx: unknown key (valid: auto, min, max)"},
		{"sweep:\n  parallel.tp: {auto: true, min: 8, max: 2}\n", "parallel.tp: min 8 is above max 2"},
		{"sweep:\n  parallel.tp: {min: 2}\n", "parallel.tp: a mapping here must say auto: true"},
		{"sweep:\n  parallel.schedule: {auto: true, max: 2}\n", "parallel.schedule: min and max apply only to integer fields"},
		{"sweep:\n  parallel.tp: [1]\n  parallel.tp: [2]\n", "sweep: parallel.tp: given twice"},
		{"sweep: {}\n", "sweep: expected a mapping of dotted field"},
		{"", "sweep: required"},
		{"swep:\n  parallel.tp: [1]\n", `swep: unknown key (line 14); did you mean "sweep"?`},
		{"base: other.yaml\nsweep:\n  parallel.tp: [1]\n", "base, scenario: give exactly one"},
		{"sweep:\n  parallel.tp: [3, 5]\n", "sweep: every point is invalid; the first: parallel.tp: 3 does not divide model.heads 32"},
	} {
		_, err := Parse([]byte(sweepBase+tc.body), t.TempDir(), Options{})
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%q: got %v, want it to contain %q", tc.body, err, tc.want)
			continue
		}
		if strings.Contains(err.Error(), "\n") {
			t.Errorf("%q: error is not one line: %q", tc.body, err)
		}
	}
	// The base scenario itself is checked against the format up front.
	bad := strings.Replace(sweepBase, "nodes: 2", "nodez: 2", 1)
	_, err := Parse([]byte(bad+"sweep:\n  parallel.tp: [1]\n"), "", Options{})
	if err == nil || !strings.Contains(err.Error(), `scenario: cluster.nodez: unknown field`) {
		t.Errorf("bad base: %v", err)
	}
	// A fidelity override conflicts with a sweep over the fidelity.
	f := network.Flow
	_, err = Parse([]byte(sweepBase+"sweep:\n  sim.fidelity: [analytic, flow]\n"), "", Options{Fidelity: &f})
	if err == nil || !strings.Contains(err.Error(), "sim.fidelity: the sweep varies it") {
		t.Errorf("fidelity conflict: %v", err)
	}
}

// TestSweepBaseFile: base: is resolved against the sweep file's directory,
// and the sweep's name defaults to the base scenario's.
func TestSweepBaseFile(t *testing.T) {
	dir := t.TempDir()
	if err := os.MkdirAll(filepath.Join(dir, "sweeps"), 0o755); err != nil {
		t.Fatal(err)
	}
	base := "name: base8b\nmodel: {preset: llama3-8b}\ntraining: {seq_len: 4096, global_batch: 64}\ncluster: {gpu: h100-sxm, nodes: 1}\n"
	if err := os.WriteFile(filepath.Join(dir, "base.yaml"), []byte(base), 0o644); err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(dir, "sweeps", "s.yaml")
	if err := os.WriteFile(path, []byte("base: ../base.yaml\nsweep:\n  parallel.tp: [1, 2, 4, 8]\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	sw, err := Load(path, Options{})
	if err != nil {
		t.Fatal(err)
	}
	if sw.Name != "base8b" || sw.Len() != 4 || sw.PointName(3) != "base8b-3" {
		t.Errorf("name %q, %d points, point 3 named %q", sw.Name, sw.Len(), sw.PointName(3))
	}
	if err := os.WriteFile(path, []byte("base: ../missing.yaml\nsweep:\n  parallel.tp: [1]\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := Load(path, Options{}); err == nil || !strings.Contains(err.Error(), "base: open") {
		t.Errorf("missing base: %v", err)
	}
}

// TestSweepEnumeration: points are nested loops over the fields in file
// order (first outermost), each point is the base with its values set, and
// its run id is that of the same scenario written out by hand.
func TestSweepEnumeration(t *testing.T) {
	sw := parseSweep(t, "name: grid\nsweep:\n  parallel.tp: [2, 4, 8]\n  training.micro_batch: [1, 2]\n")
	if sw.Len() != 6 {
		t.Fatalf("%d points, want 3 × 2", sw.Len())
	}
	want := [][]string{{"2", "1"}, {"2", "2"}, {"4", "1"}, {"4", "2"}, {"8", "1"}, {"8", "2"}}
	for i, w := range want {
		p := sw.Point(i)
		if !slices.Equal(p.Values, w) || p.Name != "grid-"+string(rune('0'+i)) || p.Err != nil {
			t.Errorf("point %d: values %v name %q err %v, want %v", i, p.Values, p.Name, p.Err, w)
		}
		byHand, err := parse("parallel.tp", w[0], "training.micro_batch", w[1])
		if err != nil {
			t.Fatal(err)
		}
		if p.RunID != byHand.RunID() || p.Scenario.RunID() != p.RunID {
			t.Errorf("point %d: run id %s, by hand %s", i, p.RunID, byHand.RunID())
		}
		if p.Scenario.Parallel.TP != byHand.Parallel.TP || p.Scenario.Parallel.DP != byHand.Parallel.DP {
			t.Errorf("point %d: layout %+v, by hand %+v", i, p.Scenario.Parallel, byHand.Parallel)
		}
	}
	// Shards partition the points by index mod N.
	var all []int
	for i := 0; i < 4; i++ {
		for _, k := range sw.ShardIndices(i, 4) {
			if k%4 != i {
				t.Errorf("shard %d/4 has point %d", i, k)
			}
			all = append(all, k)
		}
	}
	slices.Sort(all)
	if !slices.Equal(all, []int{0, 1, 2, 3, 4, 5}) {
		t.Errorf("shards cover %v", all)
	}
}

// TestSweepInvalidPointsAreKept: a combination that is not a valid layout is
// a point with its reason, its knobs and a stable run id, never dropped.
func TestSweepInvalidPointsAreKept(t *testing.T) {
	const body = "sweep:\n  parallel.tp: [3, 8]\n  parallel.pp: [1, 3]\n"
	sw := parseSweep(t, body)
	if sw.Len() != 4 {
		t.Fatalf("%d points", sw.Len())
	}
	for i, want := range []string{
		"parallel.tp: 3 does not divide model.heads 32",
		"parallel.tp: 3 does not divide model.heads 32",
		"",
		"parallel: tp*pp*cp = ", // validate.go's wording of "24 GPUs do not fit in 16"
	} {
		p := sw.Point(i)
		got := ""
		if p.Err != nil {
			got = p.Err.Error()
		}
		if !strings.HasPrefix(got, want) || (want == "") != (got == "") || sw.Valid(i) != (want == "") {
			t.Errorf("point %d: error %q, want %q", i, got, want)
		}
		if p.Scenario == nil || p.Scenario.Parallel.TP == 0 || p.Scenario.Training.FlashAttention == nil || p.Scenario.Sim.Steps != 1 {
			t.Errorf("point %d: scenario not filled for its row: %+v", i, p.Scenario)
		}
		pr, ok := sw.Evaluate(context.Background(), i)
		if !ok || (want != "") != (pr.Outcome == Invalid) {
			t.Errorf("point %d: outcome %v", i, pr.Outcome)
		}
	}
	// The same file loaded again numbers and names every point the same.
	again := parseSweep(t, body)
	for i := 0; i < sw.Len(); i++ {
		if sw.RunID(i) != again.RunID(i) {
			t.Errorf("point %d: run id not stable", i)
		}
	}
}

// TestSweepAuto: auto enumerates the values that give a valid scenario.
// Llama 3 8B on 16 GPUs with tp 8: pp must divide 16/8 = 2 GPUs' worth of
// tp·pp ≤ 16, so pp ∈ divisors(16) ∩ {tp·pp | 16} = {1, 2}. tp alone
// (pp 1): every divisor of 16 divides 32 heads, and 8 KV heads divide or are
// divided by it (tp 16 replicates K/V, a warning), so {1, 2, 4, 8, 16}.
func TestSweepAuto(t *testing.T) {
	for _, tc := range []struct {
		body string
		want [][]string
	}{
		{"sweep:\n  parallel.pp: auto\n", [][]string{{"1"}, {"2"}}},
		{"sweep:\n  parallel.tp: {auto: true}\n", [][]string{{"1"}, {"2"}, {"4"}, {"8"}, {"16"}}},
		{"sweep:\n  parallel.tp: {auto: true, min: 2, max: 8}\n", [][]string{{"2"}, {"4"}, {"8"}}},
		// Auto inside a listed field: candidates follow each point's cluster.
		{"sweep:\n  cluster.nodes: [1, 2]\n  parallel.tp: {auto: true, min: 8}\n", [][]string{{"1", "8"}, {"2", "8"}, {"2", "16"}}},
		// Two autos, depth first in file order: tp·pp | 16 and tp ≥ 8.
		{"sweep:\n  parallel.tp: {auto: true, min: 8}\n  parallel.pp: auto\n", [][]string{{"8", "1"}, {"8", "2"}, {"16", "1"}}},
		// Choices and booleans.
		{"sweep:\n  training.recompute: auto\n", [][]string{{"none"}, {"selective"}, {"full"}, {"selective-op"}, {"save-dots"}}},
		{"sweep:\n  parallel.sp: auto\n", [][]string{{"false"}, {"true"}}},
		// virtual_stages > 1 needs the interleaved schedule: only v=1 with 1f1b.
		{"sweep:\n  parallel.virtual_stages: auto\n", [][]string{{"1"}}},
	} {
		sw := parseSweep(t, tc.body)
		var got [][]string
		for i := 0; i < sw.Len(); i++ {
			p := sw.Point(i)
			if p.Err != nil {
				t.Errorf("%q: point %d invalid: %v", tc.body, i, p.Err)
			}
			got = append(got, p.Values)
		}
		if !reflect.DeepEqual(got, tc.want) {
			t.Errorf("%q: points %v, want %v", tc.body, got, tc.want)
		}
	}
	// A listed combination for which no auto value is valid is kept once,
	// as an error, with the auto field at the base's value.
	// With pp 3, tp·3 divides no 16-GPU cluster for any tp ∈ {2, 4, 8, 16}.
	sw := parseSweep(t, "sweep:\n  parallel.pp: [1, 3]\n  parallel.tp: {auto: true, min: 2}\n")
	last := sw.Point(sw.Len() - 1)
	if sw.Len() != 5 || last.Err == nil || !strings.Contains(last.Err.Error(), "parallel.tp (auto): no value gives a valid scenario; first error: parallel: tp*pp*cp = ") {
		t.Errorf("%d points, last %v: %v", sw.Len(), last.Values, last.Err)
	}
	if last.Values[0] != "3" || last.Values[1] != "" {
		t.Errorf("last point values %q", last.Values)
	}
	// Bounds that leave no candidate at all say so: one node has no divisor
	// of its 8 GPUs at or above 16.
	sw = parseSweep(t, "sweep:\n  cluster.nodes: [1, 2]\n  parallel.tp: {auto: true, min: 16}\n")
	if p := sw.Point(0); sw.Len() != 2 || p.Err == nil || !strings.HasSuffix(p.Err.Error(), "first error: no candidate value within min and max") {
		t.Errorf("%d points, first: %v", sw.Len(), p.Err)
	}
}

// TestSweepDuplicatesRunOnce: dp 0 derives dp = 16/8 = 2, the same
// configuration as dp 2, so it is one point.
func TestSweepDuplicatesRunOnce(t *testing.T) {
	sw := parseSweep(t, "sweep:\n  parallel.dp: [0, 2]\n  training.micro_batch: [1, 2]\n")
	if sw.Len() != 2 || sw.Duplicates != 2 || !strings.Contains(sw.DuplicateExample, "parallel.dp=2 training.micro_batch=1 is the same configuration as parallel.dp=0 training.micro_batch=1") {
		t.Errorf("%d points, %d duplicates: %s", sw.Len(), sw.Duplicates, sw.DuplicateExample)
	}
	seen := map[string]bool{}
	for i := 0; i < sw.Len(); i++ {
		if seen[sw.RunID(i)] {
			t.Errorf("run id %s twice", sw.RunID(i))
		}
		seen[sw.RunID(i)] = true
	}
}

// Loading resolves the combinations on every CPU in batches (parsePoints)
// and records them in order: the 1,000-point example loads to the same
// points, run ids, validity and duplicates on one CPU as on several, and
// the same structure keys and work estimates (each goroutine keys with a
// scratch it keeps from batch to batch, meeting other points before).
func TestSweepLoadIndependentOfCPUs(t *testing.T) {
	const file = "../../scenarios/sweeps/llama3-70b-1024-h100-layouts.yaml"
	sw, err := Load(file, Options{})
	if err != nil {
		t.Fatal(err)
	}
	procs := runtime.GOMAXPROCS(1)
	one, err := Load(file, Options{})
	runtime.GOMAXPROCS(procs)
	if err != nil {
		t.Fatal(err)
	}
	if sw.Len() != one.Len() || sw.Duplicates != one.Duplicates || sw.DuplicateExample != one.DuplicateExample {
		t.Fatalf("%d points, %d duplicates on %d CPUs; %d, %d on one", sw.Len(), sw.Duplicates, procs, one.Len(), one.Duplicates)
	}
	for i := 0; i < sw.Len(); i++ {
		if sw.RunID(i) != one.RunID(i) || sw.points[i].err != one.points[i].err || sw.describe(sw.points[i].vals) != one.describe(one.points[i].vals) {
			t.Errorf("point %d: %s %q on %d CPUs, %s %q on one", i, sw.RunID(i), sw.points[i].err, procs, one.RunID(i), one.points[i].err)
		}
		a, b := sw.points[i], one.points[i]
		if a.key != b.key || a.keyed != b.keyed || a.work != b.work {
			t.Errorf("point %d: key %x (%v), work %d on %d CPUs; %x (%v), %d on one", i, a.key, a.keyed, a.work, procs, b.key, b.keyed, b.work)
		}
	}
}

// TestSweepPruneWithoutSimulating: Llama 3 70B unsharded on one 80 GB GPU
// per rank (tp 1, 8-way DP, ZeRO-0) needs 70.6e9 × (2 + 2 + 12) bytes of
// weights, gradients and fp32 Adam states: it cannot fit, so it is pruned
// with its memory figures and no simulated events.
func TestSweepPruneWithoutSimulating(t *testing.T) {
	body := strings.Replace(sweepBase, "llama3-8b", "llama3-70b", 1)
	sw, err := Parse([]byte(body+"sweep:\n  parallel.tp: [1, 8]\n  cluster.nodes: [1]\n  parallel.zero: [0]\n"), "", Options{})
	if err != nil {
		t.Fatal(err)
	}
	pr, ok := sw.Evaluate(context.Background(), 0)
	if !ok || pr.Outcome != Pruned || pr.Result == nil || pr.Result.Fits || pr.Result.Events != 0 || pr.Result.StepTimeS != 0 {
		t.Fatalf("tp 1: outcome %v, result %+v", pr.Outcome, pr.Result)
	}
	if r := pr.Result; r.PeakMemBytes < 70.6e9*16 || r.MemCapacityBytes != 79.11*(1<<30) || r.MemMarginBytes != r.MemCapacityBytes-r.PeakMemBytes || r.MinPeakMemBytes > r.PeakMemBytes || len(r.Memory) != 1 {
		t.Errorf("tp 1 memory: peak %.4g, min %.4g, capacity %.4g", r.PeakMemBytes, r.MinPeakMemBytes, r.MemCapacityBytes)
	}
}

// TestSweepRunIndependentOfWorkers: the same points on 1 and 3 workers give
// the same results (everything but the wall-clock time).
func TestSweepRunIndependentOfWorkers(t *testing.T) {
	sw := parseSweep(t, "sweep:\n  parallel.tp: [1, 2, 4, 8]\n  parallel.pp: [1, 2]\n  parallel.zero: [0, 3]\n")
	idx := sw.ShardIndices(0, 1)
	collect := func(workers int) map[int]PointResult {
		out := map[int]PointResult{}
		err := sw.Run(context.Background(), idx, workers, func(pr PointResult) error {
			if _, dup := out[pr.Point.Index]; dup {
				t.Errorf("point %d emitted twice", pr.Point.Index)
			}
			out[pr.Point.Index] = pr
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
		return out
	}
	a, b := collect(1), collect(3)
	if len(a) != len(idx) || len(b) != len(idx) {
		t.Fatalf("%d and %d results for %d points", len(a), len(b), len(idx))
	}
	simulated := 0
	for i, ra := range a {
		rb := b[i]
		if ra.Outcome != rb.Outcome || (ra.Err == nil) != (rb.Err == nil) {
			t.Errorf("point %d: %v/%v", i, ra.Outcome, rb.Outcome)
			continue
		}
		if ra.Outcome == Simulated {
			simulated++
			x, y := *ra.Result, *rb.Result
			if x.StepTimeS != y.StepTimeS || x.Events != y.Events || x.MFU != y.MFU || x.ExposedCommS != y.ExposedCommS ||
				x.PeakMemBytes != y.PeakMemBytes || x.CostUSDPerStep != y.CostUSDPerStep {
				t.Errorf("point %d differs between 1 and 3 workers", i)
			}
		}
	}
	if simulated == 0 {
		t.Error("no point was simulated")
	}
}

// TestSweepRunStops: an emit error stops the sweep and is returned; a
// cancelled context returns its error, and nothing is emitted twice.
func TestSweepRunStops(t *testing.T) {
	sw := parseSweep(t, "sweep:\n  parallel.tp: [1, 2, 4, 8]\n  parallel.zero: [0, 1, 2, 3]\n")
	idx := sw.ShardIndices(0, 1)
	boom := errors.New("disk full")
	n := 0
	err := sw.Run(context.Background(), idx, 2, func(PointResult) error {
		n++
		return boom
	})
	if !errors.Is(err, boom) || n != 1 {
		t.Errorf("emit error: %v after %d emits", err, n)
	}
	// A context cancelled before Run: no point is simulated or emitted.
	// (Cancelling from emit cannot show that Run stops early: the workers
	// never wait for emit, so on a fast machine they may have finished
	// every point before the emitting goroutine first runs; CI saw 256 of
	// 256 emitted.)
	sw = parseSweep(t, "sweep:\n  parallel.tp: [1, 2, 4, 8]\n  parallel.zero: [0, 1, 2, 3]\n  training.micro_batch: [1, 2, 4, 8]\n  training.global_batch: [64, 128, 256, 512]\n")
	idx = sw.ShardIndices(0, 1)
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	n = 0
	err = sw.Run(ctx, idx, 2, func(PointResult) error {
		n++
		return nil
	})
	if !errors.Is(err, context.Canceled) || n != 0 {
		t.Errorf("cancelled before: %v with %d of %d emitted", err, n, len(idx))
	}
	// Cancelled from emit: Run returns the cancellation, and no point is
	// emitted twice.
	ctx, cancel = context.WithCancel(context.Background())
	seen := map[int]bool{}
	err = sw.Run(ctx, idx, 2, func(pr PointResult) error {
		if seen[pr.Point.Index] {
			t.Errorf("point %d twice", pr.Point.Index)
		}
		seen[pr.Point.Index] = true
		cancel()
		return nil
	})
	if !errors.Is(err, context.Canceled) || len(seen) == 0 {
		t.Errorf("cancel: %v with %d of %d emitted", err, len(seen), len(idx))
	}
}

// TestPointYAMLRoundTrip: --print-point's scenario file is the point.
func TestPointYAMLRoundTrip(t *testing.T) {
	f := network.Flow
	sw, err := Parse([]byte(sweepBase+"sweep:\n  parallel.tp: [4, 8]\n"), "", Options{Fidelity: &f})
	if err != nil {
		t.Fatal(err)
	}
	for i := 0; i < sw.Len(); i++ {
		b, err := sw.PointYAML(i)
		if err != nil {
			t.Fatal(err)
		}
		s, err := scenario.Parse(b)
		if err != nil {
			t.Fatalf("point %d: %v\n%s", i, err, b)
		}
		if s.RunID() != sw.RunID(i) || s.Name != sw.PointName(i) || s.Sim.Fidelity != "flow" {
			t.Errorf("point %d: run id %s want %s, name %s, fidelity %s", i, s.RunID(), sw.RunID(i), s.Name, s.Sim.Fidelity)
		}
	}
	// The fidelity override is part of the configuration, so of the run id.
	plain := parseSweep(t, "sweep:\n  parallel.tp: [4, 8]\n")
	if plain.RunID(0) == sw.RunID(0) {
		t.Error("fidelity override did not change the run id")
	}
}

// TestBundledSweepsLoad: the example sweeps under scenarios/sweeps load, and
// the 70B example has the 1,000 points docs/sweeps.md promises.
func TestBundledSweepsLoad(t *testing.T) {
	files, _ := filepath.Glob("../../scenarios/sweeps/*.yaml")
	if len(files) == 0 {
		t.Fatal("no example sweeps")
	}
	for _, f := range files {
		sw, err := Load(f, Options{})
		if err != nil {
			t.Fatal(err)
		}
		if strings.HasSuffix(f, "llama3-70b-1024-h100-layouts.yaml") && sw.Len() != 1000 {
			t.Errorf("%s: %d points, want 1000", f, sw.Len())
		}
	}
}

func BenchmarkLoadSweep1000(b *testing.B) {
	for b.Loop() {
		if _, err := Load("../../scenarios/sweeps/llama3-70b-1024-h100-layouts.yaml", Options{}); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkSweep70B evaluates every 20th point of the 1,000-point example
// (50 points: invalid, pruned and simulated in the sweep's proportions) on
// one goroutine, with one Reuse as a sweep worker has; ns/op / 50 is the
// cost of one point.
func BenchmarkSweep70B(b *testing.B) {
	sw, err := Load("../../scenarios/sweeps/llama3-70b-1024-h100-layouts.yaml", Options{})
	if err != nil {
		b.Fatal(err)
	}
	idx := sw.ShardIndices(0, 20)
	reuse := new(simulation.Reuse)
	var cpu0, cpu1 syscall.Rusage
	_ = syscall.Getrusage(syscall.RUSAGE_SELF, &cpu0)
	for b.Loop() {
		for _, i := range idx {
			if _, ok := sw.evaluate(context.Background(), i, reuse); !ok {
				b.Fatal("cancelled")
			}
		}
	}
	// CPU time per point (this process, garbage collection included): on
	// a shared machine wall time also counts other processes.
	_ = syscall.Getrusage(syscall.RUSAGE_SELF, &cpu1)
	cpu := time.Duration(cpu1.Utime.Nano() + cpu1.Stime.Nano() - cpu0.Utime.Nano() - cpu0.Stime.Nano())
	b.ReportMetric(float64(cpu.Microseconds())/1e3/float64(b.N*len(idx)), "cpu-ms/point")
}

// BenchmarkSweep70BHeavy evaluates 20 fixed simulated points of the
// 1,000-point example on one goroutine with one Reuse: the costliest
// (pp 16 and pp 8 at tp 16 and tp 8 with 32–128 micro-batches, some never
// settling for replication, some replicated) and cheaper ones down to a
// 2-stage pipeline. The points where a sweep's play dominates, without the
// invalid and pruned ones; cpu-ms/point as in BenchmarkSweep70B.
func BenchmarkSweep70BHeavy(b *testing.B) {
	sw, err := Load("../../scenarios/sweeps/llama3-70b-1024-h100-layouts.yaml", Options{})
	if err != nil {
		b.Fatal(err)
	}
	idx := []int{965, 966, 967, 927, 766, 774, 566, 442, 443, 844, 693, 641, 378, 813, 707, 550, 350, 498, 130, 666}
	reuse := new(simulation.Reuse)
	var cpu0, cpu1 syscall.Rusage
	_ = syscall.Getrusage(syscall.RUSAGE_SELF, &cpu0)
	for b.Loop() {
		for _, i := range idx {
			if pr, ok := sw.evaluate(context.Background(), i, reuse); !ok || pr.Outcome != Simulated {
				b.Fatalf("point %d: %v", i, pr.Outcome)
			}
		}
	}
	_ = syscall.Getrusage(syscall.RUSAGE_SELF, &cpu1)
	cpu := time.Duration(cpu1.Utime.Nano() + cpu1.Stime.Nano() - cpu0.Utime.Nano() - cpu0.Stime.Nano())
	b.ReportMetric(float64(cpu.Microseconds())/1e3/float64(b.N*len(idx)), "cpu-ms/point")
}

// BenchmarkSweep70BAll runs all 1,000 points of the example on two
// workers, as `simtrain sweep --workers 2` does (RunLent; no files written): the
// workers' Reuse serves the points that share a layout in runs, which
// every-20th sampling cannot show. cpu-ms/point is this process's CPU
// time (garbage collection included) over the points.
func BenchmarkSweep70BAll(b *testing.B) {
	sw, err := Load("../../scenarios/sweeps/llama3-70b-1024-h100-layouts.yaml", Options{})
	if err != nil {
		b.Fatal(err)
	}
	idx := sw.ShardIndices(0, 1)
	var cpu0, cpu1 syscall.Rusage
	_ = syscall.Getrusage(syscall.RUSAGE_SELF, &cpu0)
	for b.Loop() {
		if err := sw.RunLent(context.Background(), idx, 2, func(PointResult) error { return nil }); err != nil {
			b.Fatal(err)
		}
	}
	_ = syscall.Getrusage(syscall.RUSAGE_SELF, &cpu1)
	cpu := time.Duration(cpu1.Utime.Nano() + cpu1.Stime.Nano() - cpu0.Utime.Nano() - cpu0.Stime.Nano())
	b.ReportMetric(float64(cpu.Microseconds())/1e3/float64(b.N*len(idx)), "cpu-ms/point")
}

// BenchmarkSweep70BLoadRun loads the 1,000-point example and runs every
// point on two workers, as `simtrain sweep --workers 2` does without
// writing files: BenchmarkSweep70BAll with the loading (resolving and
// hashing every point) counted, and with Point taking the plans loading
// resolved. cpu-ms/point is this process's CPU time over the points.
func BenchmarkSweep70BLoadRun(b *testing.B) {
	var cpu0, cpu1 syscall.Rusage
	_ = syscall.Getrusage(syscall.RUSAGE_SELF, &cpu0)
	points := 0
	for b.Loop() {
		sw, err := Load("../../scenarios/sweeps/llama3-70b-1024-h100-layouts.yaml", Options{})
		if err != nil {
			b.Fatal(err)
		}
		if err := sw.RunLent(context.Background(), sw.ShardIndices(0, 1), 2, func(PointResult) error { return nil }); err != nil {
			b.Fatal(err)
		}
		points += sw.Len()
	}
	_ = syscall.Getrusage(syscall.RUSAGE_SELF, &cpu1)
	cpu := time.Duration(cpu1.Utime.Nano() + cpu1.Stime.Nano() - cpu0.Utime.Nano() - cpu0.Stime.Nano())
	b.ReportMetric(float64(cpu.Microseconds())/1e3/float64(points), "cpu-ms/point")
}

// resultFigures lists the figures of a run that an exact reduction of its
// play (replication, layer copying) must leave equal, Events included.
func resultFigures(r *simulation.Result) []any {
	return []any{r.StepTimeS, r.TokensPerS, r.MFU, r.HFU, r.BubbleFraction, r.ComputeS, r.HostSyncS, r.HostBoundS,
		r.HostIssueS, r.ExposedCommS, r.StepP50S, r.StepP99S, r.Fits, r.CostUSDPerStep, r.EnergyKWhPerStep, r.Events}
}

// Steady-state replication is exact on the 70B sweep: every simulated
// point with enough micro-batches to be replicated (simulation.Options
// .FiguresOnly, which a sweep worker sets) has the figures of its full
// play, Events included.
func TestSweepSteadyMatchesFull(t *testing.T) {
	if testing.Short() {
		t.Skip("plays a third of the 70B sweep twice")
	}
	sw, err := Load("../../scenarios/sweeps/llama3-70b-1024-h100-layouts.yaml", Options{})
	if err != nil {
		t.Fatal(err)
	}
	reuse := new(simulation.Reuse)
	// settled: replicated on a second play as long as Settle estimated
	// (not the first play's margin of 6 nor the retry's 14); oneMore: of
	// those, on one micro-batch more (the first play's copied unit had
	// settled, its check's first ones not); whole: played whole after one
	// failed shortened play, the estimate saying the units settle too late
	// for a gain (a retry of 14 was possible).
	// pairs: replicated in units of two micro-batches (a second play after
	// one whose change of period did not shrink: Settle had no estimate).
	replicated, settled, oneMore, whole, failedPoints, resumed, resumedShort, tried, pairs := 0, 0, 0, 0, 0, 0, 0, 0, 0
	for i := 0; i < sw.Len(); i++ {
		got, _ := sw.evaluate(context.Background(), i, reuse)
		if got.Outcome == Simulated {
			r, pp := got.Result, got.Result.Layout.PP
			m := got.Point.Scenario.StepConfig(got.Result.Layout).Microbatches
			if r.ReplicatedUnit == 2 {
				pairs++
			}
			if margin := m - r.Replicated - pp - 1; r.Replicated > 0 && r.ReplicatedUnit == 1 && r.SteadyPlays == 2 && margin != 6 && margin != 14 {
				settled++
				if margin == 7 {
					oneMore++
				}
			}
			if r.Replicated == 0 && r.SteadyPlays == 1 && m >= pp+1+14+2 {
				whole++
			}
		}
		if got.Outcome == Simulated && got.Result.RunID != got.Point.Scenario.RunID() {
			// The worker passes the id computed at load (Options.RunID).
			t.Errorf("point %d: result run id %s, scenario's %s", i, got.Result.RunID, got.Point.Scenario.RunID())
		}
		if got.Outcome == Simulated {
			// ... and the memory estimate the fit was checked with (Options.Memory).
			if mem, fits := got.Point.Scenario.MemoryPerStage(); !fits || !reflect.DeepEqual(mem, got.Result.Memory) {
				t.Errorf("point %d: result memory %v, scenario's %v (fits %v)", i, got.Result.Memory, mem, fits)
			}
		}
		if got.Outcome == Simulated {
			// The failed shortened plays' tasks are counted apart
			// (Result.FailedTasks): a step played whole after them plays
			// the full play's tasks on top; one replicated at the first
			// try threw nothing away.
			r := got.Result
			switch {
			case r.SteadyPlays == 0 || (r.Replicated > 0 && r.SteadyPlays == 1):
				if r.FailedTasks != 0 || r.SteadyRefusal != "" {
					t.Errorf("point %d: %d plays, %d failed tasks (%q), want none", i, r.SteadyPlays, r.FailedTasks, r.SteadyRefusal)
				}
			case r.Replicated == 0:
				// Played whole after failed shortened plays, resumed
				// from the last one's state when it could be
				// (parallel.Fork): the full play's figures and tasks.
				failedPoints++
				if r.ResumedTasks > 0 {
					resumed++
				}
				want, _ := sw.Evaluate(context.Background(), i)
				if r.FailedTasks < 0 || r.FailedTasks+r.ResumedTasks <= 0 || r.SteadyRefusal == "" || r.PlayedTasks-r.FailedTasks != want.Result.PlayedTasks {
					t.Errorf("point %d: %d tasks played, %d in failed plays (%q), %d resumed; the full play %d", i, r.PlayedTasks, r.FailedTasks, r.SteadyRefusal, r.ResumedTasks, want.Result.PlayedTasks)
				}
				if g, w := resultFigures(r), resultFigures(want.Result); !reflect.DeepEqual(g, w) {
					t.Errorf("point %d: played whole after a failed shortened play (%d tasks resumed) %v, full play %v", i, r.ResumedTasks, g, w)
				}
			default:
				// replicated on a second play, resumed from the first
				// when it could be
				if r.FailedTasks < 0 || r.FailedTasks+r.ResumedTasks <= 0 || r.FailedTasks >= r.PlayedTasks || r.SteadyRefusal == "" {
					t.Errorf("point %d: %d tasks played, %d in a failed play (%q), %d resumed", i, r.PlayedTasks, r.FailedTasks, r.SteadyRefusal, r.ResumedTasks)
				}
				if r.ResumedTasks > 0 {
					resumedShort++
				}
			}
		}
		if got.Outcome == Simulated && got.Result.SteadyPlays > 0 {
			tried++
		}
		if got.Outcome != Simulated || got.Result.Replicated == 0 {
			continue
		}
		replicated++
		want, _ := sw.Evaluate(context.Background(), i)
		if want.Result == nil || want.Result.Replicated != 0 {
			t.Fatalf("point %d: played whole: %v", i, want.Outcome)
		}
		if g, w := resultFigures(got.Result), resultFigures(want.Result); !reflect.DeepEqual(g, w) {
			t.Errorf("point %d: replicated %v, full play %v", i, g, w)
		}
	}
	// (worthShortening plays the steps with fewer than about 1.5 times
	// the first play's micro-batches whole at once: 32 of the 92
	// PlanSteady accepts.)
	if replicated < 30 || 3*replicated < 2*tried {
		t.Errorf("%d points replicated of %d that tried a shortened play, want two thirds and at least 30", replicated, tried)
	}
	// Hopper's persistent-GEMM waves make some pipelines settle late
	// (parallel.Executor.Settle): at least one is replicated on the
	// estimate (pp 16, tp 16, 64 micro-batches: after 6 + 15 more), some
	// on one more micro-batch (pp 16 tp 8 with 64: the first play's last
	// units had settled, the check's first not), and several whose units
	// would settle after their step ends are played whole at once.
	if settled == 0 || oneMore == 0 || whole < 3 {
		t.Errorf("%d points replicated on Settle's estimate (%d on one more micro-batch), %d played whole on it; want ≥ 1, ≥ 1 and ≥ 3", settled, oneMore, whole)
	}
	if failedPoints == 0 {
		t.Error("no point played whole after a failed shortened play: the count of their tasks is not tested")
	}
	// Some pipelines alternate between two periods (pp 8 and 16 at tp 16,
	// sp, ZeRO 1, selective recompute: points 924 and 964, played whole
	// before) and replicate in units of two on their second play
	// (parallel.PlanSteadyPairs); so do four whose change of period had
	// not started to shrink at the first play's end (764, 766, 920, 935).
	if pairs < 2 {
		t.Errorf("%d points replicated in units of two micro-batches, want at least 2", pairs)
	}
	if resumed == 0 || resumedShort == 0 {
		t.Errorf("%d full plays and %d second shortened plays resumed from a failed play, want some of each", resumed, resumedShort)
	}
	t.Logf("%d points tried a shortened play, %d replicated, %d of them on Settle's estimate (%d on one more micro-batch; %d on a second play resumed from the first), %d in units of two; %d played whole on it; %d whole after failed plays, %d of them resumed",
		tried, replicated, settled, oneMore, resumedShort, pairs, whole, failedPoints, resumed)
}

// TestSweepReuseSameFigures evaluates sweep points one after another with one
// Reuse, as a sweep worker does (cluster and task-graph storage carried from
// point to point, GPU types changing under it), and checks every figure
// against the point evaluated afresh.
func TestSweepReuseSameFigures(t *testing.T) {
	if testing.Short() {
		t.Skip("simulates dozens of points")
	}
	figures := func(r *simulation.Result) []any {
		return []any{r.StepTimeS, r.TokensPerS, r.MFU, r.HFU, r.BubbleFraction, r.ComputeS, r.HostSyncS,
			r.ExposedCommS, r.PeakMemBytes, r.MinPeakMemBytes, r.Fits, r.CostUSDPerStep, r.EnergyKWhPerStep, r.Events}
	}
	cases := []struct {
		f   string
		opt Options
	}{
		{"../../scenarios/sweeps/llama3-8b-gpu-types.yaml", Options{}},
		{"../../scenarios/sweeps/llama3-70b-1024-h100-layouts.yaml", Options{}},
		// every rank played, a worker keeping no rank's times (keepNoRanks)
		{"../../scenarios/sweeps/llama3-8b-gpu-types.yaml", Options{Overrides: scenario.Overrides("sim.fidelity", "flow")}},
	}
	for _, c := range cases {
		f := c.f
		sw, err := Load(f, c.opt)
		if err != nil {
			t.Fatal(err)
		}
		if c.opt.Overrides != nil && !sw.PlaysEveryRank() {
			t.Fatalf("%s at flow fidelity: no point plays every rank", f)
		}
		idx := sw.ShardIndices(0, max(1, sw.Len()/25))
		// and a run of consecutive points, which share their layout (and
		// so the Reuse's price tables) as a worker's points mostly do
		for i := sw.Len() / 2; i < min(sw.Len(), sw.Len()/2+48); i++ {
			idx = append(idx, i)
		}
		reuse := new(simulation.Reuse)
		for _, i := range idx {
			got, _ := sw.evaluate(context.Background(), i, reuse)
			want, _ := sw.Evaluate(context.Background(), i)
			if got.Outcome != want.Outcome {
				t.Fatalf("%s point %d: %s with a Reuse, %s without", f, i, got.Outcome, want.Outcome)
			}
			if want.Result == nil {
				continue
			}
			if g, w := figures(got.Result), figures(want.Result); !reflect.DeepEqual(g, w) {
				t.Fatalf("%s point %d: figures %v with a Reuse, %v without", f, i, g, w)
			}
		}
	}
}

// TestSweepListValues: a list-valued field takes lists as its values, each
// one point, written flow-style in the point's values; a point equals the
// scenario edited by hand; a list listed twice and a list of lists are
// errors naming the value.
func TestSweepListValues(t *testing.T) {
	sw := parseSweep(t, "sweep:\n  training.recompute: [selective]\n  training.recompute_modules: [[core_attn], [layernorm, moe_act]]\n")
	if sw.Len() != 2 {
		t.Fatalf("%d points, want 2", sw.Len())
	}
	for i, w := range []string{"[core_attn]", "[layernorm, moe_act]"} {
		p := sw.Point(i)
		if p.Err != nil || p.Values[1] != w {
			t.Errorf("point %d: values %v err %v, want %s", i, p.Values, p.Err, w)
			continue
		}
		byHand, err := parse("training.recompute", "selective", "training.recompute_modules", w)
		if err != nil {
			t.Fatal(err)
		}
		if p.RunID != byHand.RunID() {
			t.Errorf("point %d: run id %s, by hand %s", i, p.RunID, byHand.RunID())
		}
	}
	for body, want := range map[string]string{
		"sweep:\n  training.offload_modules: [[expert_fc1], [expert_fc1]]\n": `training.offload_modules[1]: "[expert_fc1]" is listed twice`,
		"sweep:\n  training.offload_modules: [[[expert_fc1]]]\n":             "training.offload_modules[0]: expected a list of single values",
		"sweep:\n  parallel.tp: [[1, 2]]\n":                                  "parallel.tp[0]: expected a single value",
	} {
		_, err := Parse([]byte(sweepBase+body), t.TempDir(), Options{})
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%q: error %v, want %q", body, err, want)
		}
	}
}

// shares deals a run of tied points (one structure key) whole to one
// worker, its points one after another in order, whatever order the
// workers ask in (the endgame's costliest-first dealing included), deals
// every point once, and cuts the parts at run boundaries.
func TestSharesKeepRuns(t *testing.T) {
	for seed := range 40 {
		r := rand.New(rand.NewPCG(uint64(seed), 7))
		n, workers := 20+r.IntN(300), 2+r.IntN(3)
		pts, costs, tied := make([]int, n), make([]uint64, n), make([]bool, n)
		run := make([]int, n) // each point's run: the index of its first point
		for i := range pts {
			pts[i] = i
			tied[i] = i > 0 && r.IntN(3) > 0
			if tied[i] {
				costs[i], run[i] = costs[i-1], run[i-1]
			} else {
				costs[i], run[i] = uint64(r.IntN(5)), i
			}
		}
		s := newShares(pts, costs, tied, workers)
		for w := 1; w < workers; w++ {
			if lo := s.lo[w]; lo < n && tied[lo] {
				t.Fatalf("seed %d: part %d starts within a run", seed, w)
			}
		}
		dealt := make([][]int, workers)
		seen := map[int]bool{}
		done := make([]bool, workers) // as Run's workers: each stops at its own false
		for left := workers; left > 0; {
			w := r.IntN(workers)
			if done[w] {
				continue
			}
			p, ok := s.next(w)
			if !ok {
				done[w] = true
				left--
				continue
			}
			if seen[p] {
				t.Fatalf("seed %d: point %d dealt twice", seed, p)
			}
			seen[p] = true
			dealt[w] = append(dealt[w], p)
		}
		if len(seen) != n {
			t.Fatalf("seed %d: %d of %d points dealt", seed, len(seen), n)
		}
		for w, d := range dealt {
			for k, p := range d {
				// a run's later point follows its predecessor on its worker
				if tied[p] && (k == 0 || d[k-1] != p-1) {
					t.Errorf("seed %d: worker %d took point %d of run %d apart from point %d", seed, w, p, run[p], p-1)
				}
			}
		}
	}
}

// shares deals every point exactly once: each worker its own part front
// to back, then the back of the fullest part, whatever order the workers
// ask in.
func TestSharesDealEveryPointOnce(t *testing.T) {
	for _, tc := range []struct{ points, workers int }{{1, 1}, {7, 2}, {1000, 2}, {5, 4}, {33, 3}, {300, 3}} {
		pts := make([]int, tc.points)
		costs := make([]uint64, tc.points)
		for i := range pts {
			pts[i] = 10 * i
			costs[i] = uint64(i*7919) % 13
		}
		s := newShares(pts, costs, nil, tc.workers)
		seen := map[int]int{}
		for turn := 0; ; turn++ {
			w := turn % tc.workers
			if turn%5 == 0 {
				w = 0 // worker 0 runs faster and steals
			}
			p, ok := s.next(w)
			if !ok {
				break
			}
			seen[p]++
		}
		if len(seen) != tc.points {
			t.Errorf("%d points on %d workers: %d dealt", tc.points, tc.workers, len(seen))
		}
		for p, n := range seen {
			if n != 1 {
				t.Errorf("%d points on %d workers: point %d dealt %d times", tc.points, tc.workers, p, n)
			}
		}
	}
	// Two workers, parts of endgamePoints + 2: the first takes 0, 1 in
	// order, the second its part's first two; then each part has
	// endgamePoints left and gives its costliest first (the earliest of
	// equals), and the second worker, its part empty, takes the first's.
	n := endgamePoints + 2
	pts := make([]int, 2*n)
	costs := make([]uint64, 2*n)
	for i := range pts {
		pts[i] = i
		costs[i] = 1
	}
	costs[5], costs[9], costs[n+7] = 4, 9, 9 // the first part's 5 and 9, the second's n+7
	costs[3] = 0
	s := newShares(pts, costs, nil, 2)
	var got []int
	take := func(w int) {
		p, ok := s.next(w)
		if !ok {
			t.Fatalf("worker %d: nothing left after %v", w, got)
		}
		got = append(got, p)
	}
	take(0)
	take(0)
	take(1)
	take(1)
	take(0) // 9 (cost 9)
	take(0) // 5 (cost 4)
	take(1) // n+7 (cost 9)
	take(0) // 2 (cost 1, earliest)
	if want := []int{0, 1, n, n + 1, 9, 5, n + 7, 2}; !slices.Equal(got, want) {
		t.Errorf("dealt %v, want %v", got, want)
	}
	for range n - 3 {
		take(1) // the rest of the second part: n+2 … 2n-1 but n+7
	}
	take(1) // the first part's endgame, from worker 1: 4 (cost 1; 3 costs 0)
	if p := got[len(got)-1]; p != 4 {
		t.Errorf("worker 1, its part empty, took %d from the first part's endgame, want 4", p)
	}
	for i := n + 2; i < 2*n; i++ {
		if i != n+7 && !slices.Contains(got, i) {
			t.Errorf("point %d of the second part not dealt: %v", i, got)
		}
	}
	last := 0
	for {
		p, ok := s.next(0)
		if !ok {
			break
		}
		last = p
	}
	if last != 3 {
		t.Errorf("last point dealt %d, want 3 (the only one of cost 0)", last)
	}
}

// pointCost is micro-batches × layers from the plan loading kept (32
// layers here; 16 GPUs at tp 8 are dp 2, so micro-batch m gives 64/(2m)
// micro-batches), 0 for an invalid point, unknownCost once Point has
// taken the plan.
func TestPointCost(t *testing.T) {
	sw := parseSweep(t, "sweep:\n  training.micro_batch: [1, 4, 2, 3]\n")
	for i, want := range []uint64{32 * 32, 8 * 32, 16 * 32, 0} { // micro-batch 3: 64 is not a multiple of 2 × 3
		if got := sw.pointCost(i); got != want {
			t.Errorf("point %d: cost %d, want %d", i, got, want)
		}
	}
	sw.Point(1) // takes the plan loading kept
	if got := sw.pointCost(1); got != unknownCost {
		t.Errorf("point 1 after Point: cost %d, want unknownCost", got)
	}
}

// TestTemplateEqualsYAML: a point resolved from the template (typed fields
// set on a copy of the decoded base) is the plan, error and run id the
// YAML path gives (the base document edited and decoded again), on every
// point of every bundled sweep and of sweeps over lists, optional blocks,
// booleans, a framework profile and overrides; the template serves every
// point it can (the ones it cannot go through the YAML).
func TestTemplateEqualsYAML(t *testing.T) {
	type sweepCase struct {
		name  string
		load  func() (*Sweep, error)
		typed bool // every point is expected to go through the template
	}
	inline := func(body string, opt Options) func() (*Sweep, error) {
		return func() (*Sweep, error) { return Parse([]byte(sweepBase+body), t.TempDir(), opt) }
	}
	cases := []sweepCase{
		{"70b", func() (*Sweep, error) {
			return Load("../../scenarios/sweeps/llama3-70b-1024-h100-layouts.yaml", Options{})
		}, true},
		{"8b-auto", func() (*Sweep, error) { return Load("../../scenarios/sweeps/llama3-8b-gpu-types.yaml", Options{}) }, true},
		{"tiny", func() (*Sweep, error) {
			return Load("../../cmd/simtrain/testdata/schema-v2/sweep/v2-tiny.yaml", Options{})
		}, true},
		{"lists", inline("sweep:\n  training.recompute: [selective, full]\n  training.recompute_modules: [[core_attn], [layernorm, moe_act]]\n", Options{}), true},
		{"invalid", inline("sweep:\n  parallel.tp: [3, 8]\n  parallel.pp: [1, 3]\n  parallel.sp: [false, true]\n", Options{}), true},
		{"blocks", inline("sweep:\n  parallel.overlap.tp_comm: [false, true]\n  training.flash_attention: [false, true]\n  cluster.network.nic: [ib-ndr-400]\n", Options{}), true},
		{"moe-block", inline("sweep:\n  model.moe.experts: [8, 16]\n  model.moe.top_k: [2]\n  model.moe.imbalance: [1.2]\n  parallel.ep: [1, 3]\n", Options{}), true},
		{"overrides", inline("sweep:\n  parallel.pp: [1, 2]\n", Options{Overrides: scenario.Overrides("training.micro_batch", "2"),
			Fidelity: func() *network.Fidelity { f := network.Analytic; return &f }()}), true},
		{"framework", inline("sweep:\n  training.framework: [megatron-lm, torchtitan]\n  parallel.tp: [4, 8]\n", Options{}), false},
	}
	for _, tc := range cases {
		sw, err := tc.load()
		if err != nil {
			t.Errorf("%s: %v", tc.name, err)
			continue
		}
		typed := 0
		for i := 0; i < sw.Len(); i++ {
			sp := sw.points[i]
			viaYAML := &Point{}
			want, wantErr := sw.pointYAML(sp, viaYAML)
			if wantErr == nil {
				wantErr = viaYAML.Err
			}
			tv, ok := sw.typedValues(sp.vals)
			if !ok {
				continue
			}
			typed++
			got, gotErr := sw.tmpl.Plan(sw.Name, tv)
			if (gotErr == nil) != (wantErr == nil) || (gotErr != nil && gotErr.Error() != wantErr.Error()) {
				t.Errorf("%s point %d: template error %v, YAML %v", tc.name, i, gotErr, wantErr)
			}
			if got.RunID() != want.RunID() || got.RunID() != sw.RunID(i) {
				t.Errorf("%s point %d: run id %s by template, %s by YAML, %s loaded", tc.name, i, got.RunID(), want.RunID(), sw.RunID(i))
			}
			if !reflect.DeepEqual(got, want) {
				t.Errorf("%s point %d: template plan differs from the YAML's:\n%+v\n%+v", tc.name, i, got.Scenario, want.Scenario)
			}
			if p := sw.Point(i); !reflect.DeepEqual(p.Scenario.Scenario, func() scenario.Scenario { c := want.Scenario; c.Name = p.Name; return c }()) {
				t.Errorf("%s point %d: Point's plan differs", tc.name, i)
			}
		}
		if tc.typed && typed != sw.Len() {
			t.Errorf("%s: %d of %d points through the template, want all", tc.name, typed, sw.Len())
		}
		if !tc.typed && typed == sw.Len() {
			t.Errorf("%s: every point through the template, want the YAML for a framework", tc.name)
		}
	}
}

// Layer and pass copying are exact on the 70B sweep: every simulated
// point, played whole (not replicated), has the same figures, events
// included, with its programs built with layer and pass copies as with
// everything emitted (simulation.Options.EmitEveryLayer), and some points
// copy layers and some whole passes.
func TestSweepLayerCopyEqualsEmit(t *testing.T) {
	if testing.Short() {
		t.Skip("plays the simulated points of the 70B sweep twice")
	}
	sw, err := Load("../../scenarios/sweeps/llama3-70b-1024-h100-layouts.yaml", Options{})
	if err != nil {
		t.Fatal(err)
	}
	c0, p0 := parallel.CopiedTasks(), parallel.CopiedPassTasks()
	simulated := 0
	for i := 0; i < sw.Len(); i++ {
		p := sw.Point(i)
		if p.Err != nil {
			continue
		}
		if _, fits := p.Scenario.MemoryPerStage(); !fits {
			continue
		}
		var got [2][]any
		for k, every := range []bool{false, true} {
			r, err := simulation.Run(context.Background(), p.Scenario, simulation.Options{EmitEveryLayer: every})
			if err != nil {
				t.Fatalf("point %d: %v", i, err)
			}
			got[k] = resultFigures(r)
		}
		if !reflect.DeepEqual(got[0], got[1]) {
			t.Errorf("point %d: with layer copies %v, every layer emitted %v", i, got[0], got[1])
		}
		simulated++
	}
	copied, passes := parallel.CopiedTasks()-c0, parallel.CopiedPassTasks()-p0
	t.Logf("%d points simulated both ways, %d tasks copied in layers, %d in whole passes", simulated, copied, passes)
	if simulated < 300 || copied == 0 || passes == 0 {
		t.Errorf("%d points simulated, %d tasks copied in layers, %d in passes", simulated, copied, passes)
	}
}

// TestPointTakesLoadedPlan: Point hands out the plan loading resolved once
// (the first retainPlans points of a sweep without auto fields), and it is
// the plan, error and run id a second resolution gives, on every point of
// the bundled 70B sweep and of sweeps through the YAML path (a framework),
// with invalid points and past retainPlans; a sweep with an auto field
// keeps no plans.
func TestPointTakesLoadedPlan(t *testing.T) {
	inline := func(body string) func() (*Sweep, error) {
		return func() (*Sweep, error) { return Parse([]byte(sweepBase+body), t.TempDir(), Options{}) }
	}
	cases := []struct {
		name  string
		load  func() (*Sweep, error)
		plans bool
	}{
		{"70b", func() (*Sweep, error) {
			return Load("../../scenarios/sweeps/llama3-70b-1024-h100-layouts.yaml", Options{})
		}, true},
		{"70b-past-retained", func() (*Sweep, error) {
			retainPlans = 300
			return Load("../../scenarios/sweeps/llama3-70b-1024-h100-layouts.yaml", Options{})
		}, true},
		{"invalid", inline("sweep:\n  parallel.tp: [3, 8]\n  parallel.pp: [1, 3]\n  parallel.sp: [false, true]\n"), true},
		{"framework", inline("sweep:\n  training.framework: [megatron-lm, torchtitan]\n  parallel.tp: [4, 8]\n"), true},
		{"auto", func() (*Sweep, error) { return Load("../../scenarios/sweeps/llama3-8b-gpu-types.yaml", Options{}) }, false},
	}
	defer func(n int) { retainPlans = n }(retainPlans)
	for _, tc := range cases {
		sw, err := tc.load()
		if err != nil {
			t.Fatalf("%s: %v", tc.name, err)
		}
		if tc.plans != (len(sw.plans) == min(sw.Len(), retainPlans)) {
			t.Errorf("%s: %d plans kept for %d points, want them kept: %v", tc.name, len(sw.plans), sw.Len(), tc.plans)
		}
		for i := 0; i < sw.Len(); i++ {
			kept := i < len(sw.plans) && sw.plans[i].Load() != nil
			if want := tc.plans && i < retainPlans; kept != want {
				t.Errorf("%s point %d: plan kept %v, want %v", tc.name, i, kept, want)
			}
			first := sw.Point(i)
			if i < len(sw.plans) && sw.plans[i].Load() != nil {
				t.Errorf("%s point %d: Point left the kept plan", tc.name, i)
			}
			again := sw.Point(i) // resolved afresh
			if first.Scenario == again.Scenario {
				t.Errorf("%s point %d: Point handed out one plan twice", tc.name, i)
			}
			if !reflect.DeepEqual(first, again) {
				t.Errorf("%s point %d: the kept plan differs from a second resolution:\n%+v\n%+v", tc.name, i, first.Scenario.Scenario, again.Scenario.Scenario)
			}
			if first.Scenario.RunID() != sw.RunID(i) {
				t.Errorf("%s point %d: run id %s, loaded %s", tc.name, i, first.Scenario.RunID(), sw.RunID(i))
			}
		}
	}
}

// TestPointNameEqualsSprintf: PointName writes what the format it
// replaced writes, for names and widths of every size and indices with
// fewer, as many and more digits than the width (and a negative one).
func TestPointNameEqualsSprintf(t *testing.T) {
	for _, tc := range []struct {
		name  string
		width int
		i     int
	}{
		{"s", 1, 0}, {"s", 1, 7}, {"s", 1, 12}, {"sweep", 3, 0}, {"sweep", 3, 5}, {"sweep", 3, 42},
		{"sweep", 3, 999}, {"sweep", 3, 1000}, {"", 0, 0}, {"", 0, 31}, {"a-b", 7, 1048575},
		{"llama3-70b-1024-h100-layouts", 3, 387}, {"x", 20, math.MaxInt}, {"x", 2, -3}, {"x", 0, math.MinInt},
	} {
		sw := &Sweep{Name: tc.name, width: tc.width}
		if got, want := sw.PointName(tc.i), fmt.Sprintf("%s-%0*d", tc.name, tc.width, tc.i); got != want {
			t.Errorf("name %q width %d point %d: %q, want %q", tc.name, tc.width, tc.i, got, want)
		}
	}
}

// TestPlaysEveryRank: a sweep says whether some valid point plays every
// rank (flow fidelity), from the base, the --fidelity override, a swept
// sim.fidelity, and with an auto field (whose points are keyed one by one
// rather than in batches).
func TestPlaysEveryRank(t *testing.T) {
	flow, analytic := network.Flow, network.Analytic
	for _, tc := range []struct {
		name, body string
		fid        *network.Fidelity
		want       bool
	}{
		{"analytic", "sweep:\n  parallel.tp: [1, 8]\n", nil, false},
		{"flow override", "sweep:\n  parallel.tp: [1, 8]\n", &flow, true},
		{"analytic override", "sweep:\n  parallel.tp: [1, 8]\n", &analytic, false},
		{"swept fidelity", "sweep:\n  sim.fidelity: [analytic, flow]\n", nil, true},
		{"auto field, flow", "sweep:\n  parallel.pp: auto\n", &flow, true},
		{"auto field, analytic", "sweep:\n  parallel.pp: auto\n", nil, false},
	} {
		sw, err := Parse([]byte(sweepBase+tc.body), t.TempDir(), Options{Fidelity: tc.fid})
		if err != nil {
			t.Fatalf("%s: %v", tc.name, err)
		}
		if got := sw.PlaysEveryRank(); got != tc.want {
			t.Errorf("%s: PlaysEveryRank() = %v, want %v", tc.name, got, tc.want)
		}
	}
}
