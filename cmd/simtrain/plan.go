package main

import (
	"cmp"
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"

	"github.com/spf13/cobra"

	"github.com/simtrain/simtrain/sim/hardware"
	"github.com/simtrain/simtrain/sim/output"
	"github.com/simtrain/simtrain/sim/output/numfmt"
	"github.com/simtrain/simtrain/sim/report"
	"github.com/simtrain/simtrain/sim/scenario"
	"github.com/simtrain/simtrain/sim/sweep"
	"github.com/simtrain/simtrain/sim/workload"
)

// planBatchTokens is the default tokens per optimizer step: Llama 2 trained
// every size with a global batch of 4M tokens (Touvron et al. 2023,
// arXiv:2307.09288 §2.2), and Llama 3 405B started from the same 4M before
// growing it (arXiv:2407.21783 §3.4.1).
const planBatchTokens = 4 << 20

// planDefaultSeq is the default sequence length: Llama 2's pre-training
// context (arXiv:2307.09288 §2.2).
const planDefaultSeq = 4096

type planOptions struct {
	model       string
	gpus        []string
	numGPUs     int
	gpusPerNode int
	tokens      string
	seq         int
	globalBatch int
	budgetUSD   float64
	days        float64
	by          string
	top         int
	format      string
	out         string
	sets        []string
	workers     int
	quiet       bool
	printSweep  bool
	budget      budgetFlags
}

func newPlanCmd() *cobra.Command {
	var o planOptions
	cmd := &cobra.Command{
		Use:   "plan --model PRESET --gpu GPU[,GPU...] --gpus N --tokens N",
		Short: "Find the best layouts for a model on N GPUs, with days and cost to train — no file to write",
		Long: `plan answers "how should I train this model on these GPUs, and how long and how
much will it take?" from the command line. It writes the sweep a user would
write by hand — tensor × pipeline parallel size (1F1B, and the interleaved
schedule with 2, 4 or 8 virtual stages where the layers split over them; a
depth the layers do not split evenly over gets lighter first and last
stages), sequence parallelism, micro-batch, activation recompute and ZeRO
stage (plus expert parallelism for MoE models and context parallelism from
32k tokens) on the model, the GPUs and a batch of about 4M tokens (more
where the deepest pipeline would get fewer micro-batches than stages; it
says so) — prunes the layouts that do not fit in memory, simulates the
rest (the likely best first; one that cannot beat the best found so far
only until that shows), and prints the best few with step time, MFU,
memory, days and cost to train on --tokens, and why the next ones lose.

--gpu may list several GPU types (h100-sxm,b200) to compare hardware in one
answer. --budget-usd and --days drop layouts that cost or take more. Any
scenario field can be pinned with --set (e.g. --set parallel.tp=8 removes tp
from the search; --set training.precision=fp8). --print-sweep prints the
sweep file instead of running it; --out DIR keeps the sweep files and every
point's row (DIR/summary.arrow) for simtrain best and notebooks.

--set sim.fidelity=flow plays every rank and every transfer as a flow on the
fabric, which sees contention the closed forms do not: seconds to minutes
instead of a second. It first runs the search at analytic fidelity to play
the likely best first; only the flow figures decide the answer. Layouts that
build the same step (recompute none and selective beside FlashAttention)
share one play.`,
		Example: `  simtrain plan --model llama3-70b --gpu h100-sxm --gpus 512 --tokens 2T
  simtrain plan --model llama3-8b --gpu h100-sxm,b200 --gpus 64 --tokens 1T --seq 8192 --format json
  simtrain plan --model mixtral-8x7b --gpu a100-80gb --gpus 64 --tokens 500B --budget-usd 2e6 --out results/plan
  simtrain plan --model llama3-70b --gpu h100-sxm --gpus 512 --tokens 2T --set training.precision=fp8 --print-sweep
  simtrain plan --model llama3-8b --gpu h100-sxm --gpus 64 --tokens 300B --set sim.fidelity=flow --top 2`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error { return runPlan(cmd, o) },
	}
	f := cmd.Flags()
	f.StringVar(&o.model, "model", "", "model preset (required): "+strings.Join(workload.PresetNames(), ", "))
	f.StringSliceVar(&o.gpus, "gpu", nil, "GPU type(s), comma-separated (required): "+catalogGPUsMark)
	f.IntVar(&o.numGPUs, "gpus", 0, "number of GPUs (required)")
	f.IntVar(&o.gpusPerNode, "gpus-per-node", 0, "GPUs per node (default: the GPU's usual server)")
	f.StringVar(&o.tokens, "tokens", "", "tokens to train on (required; e.g. 2T, 300B, 1.5e12)")
	f.IntVar(&o.seq, "seq", planDefaultSeq, "sequence length")
	f.IntVar(&o.globalBatch, "global-batch", 0, "sequences per optimizer step (default: about 4M tokens / --seq, made a batch every data-parallel size divides, raised so the deepest pipeline gets as many micro-batches as stages)")
	f.Float64Var(&o.budgetUSD, "budget-usd", 0, "drop layouts whose training costs more (USD; 0 = no limit)")
	f.Float64Var(&o.days, "days", 0, "drop layouts that take longer to train (days; 0 = no limit)")
	f.StringVar(&o.by, "by", "days", "ranking: days (fastest to train) or cost (cheapest)")
	f.IntVar(&o.top, "top", 5, "layouts to propose")
	f.StringVar(&o.format, "format", "table", "output: table or json (one object)")
	f.StringVar(&o.out, "out", "", "directory for the sweep files and summary.arrow of every point (default: keep nothing)")
	f.IntVar(&o.workers, "workers", 0, "points simulated at once (0 = one per CPU); results do not depend on it")
	f.BoolVar(&o.quiet, "quiet", false, "no progress line on stderr")
	f.BoolVar(&o.printSweep, "print-sweep", false, "print the sweep file(s) plan would run, and exit")
	addSetFlag(cmd, &o.sets)
	o.budget.add(cmd)
	return cmd
}

// planSearch is one swept field of plan's search and its values.
type planSearch struct {
	path   string
	values []string
}

// planSweepFile is the sweep document plan runs for one GPU type and one
// part of its pipeline search, as text a user can save and run with
// simtrain sweep. A pipeline with uneven end stages has its depth and end
// layers in the scenario, and -ppN after the sweep's name; an interleaved
// one has the schedule and its virtual stages in the scenario, and -vV
// after the name (plan-llama3-405b-h100-sxm-16384-pp16-v8), so that every
// document of a plan has a name of its own.
func planSweepFile(o planOptions, gpu string, nodes, gpn int, m workload.Model, pipe planPipeline, pins planPins) (name, doc string) {
	pinned := func(path string) bool { _, ok := pins[path]; return ok }
	name = fmt.Sprintf("plan-%s-%s-%d", o.model, planGPUName(gpu), o.numGPUs)
	pp := 1
	if pipe.first > 0 || pipe.virtual > 1 && pipe.depths != nil {
		pp = pipe.depths[0]
	}
	par := fmt.Sprintf("tp: 1, pp: %d, zero: 1", pp)
	if pipe.virtual > 1 {
		par += fmt.Sprintf(", schedule: interleaved, virtual_stages: %d", pipe.virtual)
	} else {
		par += ", schedule: 1f1b"
	}
	if pipe.first > 0 {
		name += fmt.Sprintf("-pp%d", pp)
		par += fmt.Sprintf(", first_stage_layers: %d, last_stage_layers: %d", pipe.first, pipe.last)
	}
	if pipe.virtual > 1 {
		name += fmt.Sprintf("-v%d", pipe.virtual)
	}
	var b strings.Builder
	fmt.Fprintf(&b, "# Written by simtrain plan: %s on %d× %s, %s tokens.\n", o.model, o.numGPUs, gpu, o.tokens)
	if pipe.first > 0 {
		fmt.Fprintf(&b, "# pp %d does not divide the %d layers: the first and last stages (with the embedding and the output layer) hold %d and %d", pp, pipe.layers, pipe.first, pipe.last)
		if pp > 2 {
			fmt.Fprintf(&b, ", the %d others %d each", pp-2, (pipe.layers-pipe.first-pipe.last)/(pp-2))
		}
		b.WriteString(".\n")
	}
	if pipe.virtual > 1 {
		fmt.Fprintf(&b, "# The interleaved schedule, %d model chunks per pipeline rank: a bubble of (p-1)/(%d·m) instead of 1F1B's (p-1)/m\n", pipe.virtual, pipe.virtual)
		b.WriteString("# (arXiv:2104.04473 §2.2); it needs micro-batches per pipeline (global_batch/(dp·micro_batch)) a multiple of pp.\n")
	}
	fmt.Fprintf(&b, "#   simtrain sweep THIS_FILE --out DIR && simtrain best DIR --by time_to_train --tokens %s\n", o.tokens)
	fmt.Fprintf(&b, "name: %s\n", name)
	b.WriteString("scenario:\n")
	fmt.Fprintf(&b, "  name: %s\n", name)
	fmt.Fprintf(&b, "  model: {preset: %s}\n", o.model)
	fmt.Fprintf(&b, "  training: {seq_len: %d, global_batch: %d, micro_batch: 1}\n", o.seq, o.globalBatch)
	network := ""
	if o.numGPUs > planFabricGPUs && !pinned("cluster.network.pod_gpus") && !pinned("cluster.network.kind") {
		network = fmt.Sprintf(", network: {pod_gpus: %d}", (planPodGPUs+gpn-1)/gpn*gpn)
	}
	fmt.Fprintf(&b, "  cluster: {gpu: %s, nodes: %d, gpus_per_node: %d%s}\n", strconv.Quote(gpu), nodes, gpn, network)
	fmt.Fprintf(&b, "  parallel: {%s}\n", par)
	b.WriteString("sweep:\n")
	space := planSpace(m, gpn, o.seq)
	for _, f := range space {
		if pinned(f.path) || f.path == "parallel.pp" && (pipe.first > 0 || pipe.depths == nil) {
			continue
		}
		if f.path == "parallel.pp" {
			f.values = nil
			for _, pp := range pipe.depths {
				f.values = append(f.values, strconv.Itoa(pp))
			}
		}
		if f.path == "parallel.tp" && pipe.virtual > 1 {
			if tps := planInterleavedTPs(o, pipe.depths, f.values, space, pins); tps != nil {
				f.values = tps
			}
		}
		fmt.Fprintf(&b, "  %s: [%s]\n", f.path, strings.Join(f.values, ", "))
	}
	return name, b.String()
}

// planFabricGPUs is the most GPUs the default network joins, at one NIC
// per GPU: a three-tier fat tree of radix-64 switches, 64 spine-leaf groups
// of 32 leaves under 32 GPUs each (sim/topology: switchRadix, podLeaves,
// maxPods; k³/4 = 65,536 hosts for k = 64, Al-Fares et al., SIGCOMM 2008).
// A larger cluster needs cluster.network.pod_gpus, which plan sets to
// planPodGPUs: the same groups, as many as the cluster needs.
const planFabricGPUs = 65536

// planPodGPUs is one spine-leaf group of the default network: 32 leaves of
// 32 GPUs (k²/4 = 1,024 hosts for k = 64).
const planPodGPUs = 1024

// planMaxPP is the deepest pipeline plan searches.
const planMaxPP = 16

// planPipelineDepths are the pipeline depths plan searches for a model of
// layers layers: the powers of two up to planMaxPP, none above layers.
func planPipelineDepths(layers int) []int {
	var out []int
	for pp := 1; pp <= planMaxPP && pp <= layers; pp *= 2 {
		out = append(out, pp)
	}
	return out
}

// planUnevenEnds splits layers over pp pipeline stages that pp does not
// divide, as Megatron-LM does with its first/last pipeline stage layer
// counts: every middle stage holds c = ⌈layers/pp⌉ layers, and the first
// and last stages, which also hold the embedding and the output layer,
// share the r = layers − (pp−2)·c left: first = ⌊r/2⌋, last = r − first.
// Since pp·c ≥ layers, r ≤ 2c: no end stage holds more than a middle one.
// ok is false where the even split applies (pp divides layers), where pp
// < 2, and where an end stage would be empty (first < 1).
func planUnevenEnds(layers, pp int) (first, last int, ok bool) {
	if pp < 2 || layers < 1 || layers%pp == 0 {
		return 0, 0, false
	}
	c := (layers + pp - 1) / pp
	r := layers - (pp-2)*c
	first = r / 2
	last = r - first
	if first < 1 {
		return 0, 0, false
	}
	return first, last, true
}

// planPipeline is the pipeline part of one of plan's sweep documents: the
// depths it sweeps (nil: parallel.pp is pinned with --set), or one depth
// that does not divide the layers with the end stages' layers (first > 0);
// with the 1F1B schedule (virtual 0) or the interleaved one with virtual
// model chunks per rank (virtual ≥ 2).
type planPipeline struct {
	depths              []int
	layers, first, last int
	virtual             int
}

// planVirtualStages are the virtual-stage counts plan tries with the
// interleaved schedule, where the layers allow them (planVirtualFits).
// The schedule's bubble is (p−1)/(v·m) of the work for p stages, m
// micro-batches and v chunks per rank, against 1F1B's (p−1)/m (Narayanan et
// al. 2021, arXiv:2104.04473 §2.2), while each rank sends v times as many
// activations between stages. Llama 3 405B was trained interleaved at
// pp 16 (arXiv:2407.21783 §3.3); scenarios/llama3-405b-16k-h100.yaml runs
// it with 8, one layer slot a chunk.
var planVirtualStages = []int{2, 4, 8}

// planVirtualFits says whether the scenario rules accept the interleaved
// schedule with v virtual stages on pp pipeline stages over layers layers,
// the first and last stage holding first and last layers (0: the even
// split): pp ≥ 2 (pipeline.Interleaved); without end stages v divides
// each stage's layers/pp, pp·v dividing layers; with them the rest splits
// evenly over the middle stages and their v chunks, each chunk holding a
// layer, and the first and last stage, whose embedding or output layer
// takes a chunk slot, have at least v slots (layers + 1; sim/parallel
// partitionStages). It does not judge the batch: the interleaved schedule
// also needs micro-batches per pipeline a multiple of pp, which the sweep
// point's rules check.
func planVirtualFits(layers, pp, first, last, v int) bool {
	if pp < 2 || v < 2 || layers < 1 || first < 0 || last < 0 {
		return false
	}
	if first == 0 && last == 0 {
		return layers%(pp*v) == 0
	}
	middle, rest := pp, layers-first-last
	if first > 0 {
		middle--
		if first+1 < v {
			return false
		}
	}
	if last > 0 {
		middle--
		if last+1 < v {
			return false
		}
	}
	if middle == 0 {
		return rest == 0
	}
	return rest > 0 && rest%(middle*v) == 0
}

// planPipelines splits plan's search over pipeline depths and schedules
// into sweep documents. A sweep's cross product cannot tie
// first/last_stage_layers to pp, so the depths that divide the layers
// share one document and each other depth with valid uneven end stages
// (planUnevenEnds) gets its own. The first document is always the even
// one. A --set of parallel.pp, or of the stage layers, is kept: pp pinned
// to a depth that does not divide the layers gets that depth's end stages
// and nothing else; pinned stage layers leave every depth in one document,
// as before, for the scenario's rules to judge. Each 1F1B document is
// followed by its interleaved ones (planInterleaved).
func planPipelines(layers int, pins planPins) []planPipeline {
	return planInterleaved(planPipelines1F1B(layers, pins), pins)
}

// planPipelines1F1B is planPipelines' search with the 1F1B schedule only.
func planPipelines1F1B(layers int, pins planPins) []planPipeline {
	depths := planPipelineDepths(layers)
	if pins.stageLayers() {
		return []planPipeline{{depths: depths, layers: layers}}
	}
	if _, ok := pins["parallel.pp"]; ok {
		if pp, ok := pins.int("parallel.pp"); ok {
			if first, last, ok := planUnevenEnds(layers, pp); ok {
				return []planPipeline{{depths: []int{pp}, layers: layers, first: first, last: last}}
			}
		}
		return []planPipeline{{layers: layers}}
	}
	out := []planPipeline{{layers: layers}}
	for _, pp := range depths {
		if layers%pp == 0 {
			out[0].depths = append(out[0].depths, pp)
		} else if first, last, ok := planUnevenEnds(layers, pp); ok {
			out = append(out, planPipeline{depths: []int{pp}, layers: layers, first: first, last: last})
		}
	}
	return out
}

// planInterleaved adds to the 1F1B documents pipes the interleaved
// schedule: after each, one document per virtual-stage count v of
// planVirtualStages with the depths of it (pp ≥ 2) that v fits
// (planVirtualFits), and none where v fits no depth, so that the search
// holds no schedule and virtual-stage combination that is invalid by
// construction. It respects the pins: a parallel.schedule other than
// interleaved, DeepSpeed's pipeline engine (1F1B only), or pinned stage
// layers (which plan cannot check against v) add nothing; a pinned
// parallel.virtual_stages of 1 adds nothing, and one above 1 is the only
// count tried and replaces the 1F1B documents, which it would make
// invalid (if it fits no depth, pipes are returned for the scenario rules
// to reject, saying why).
func planInterleaved(pipes []planPipeline, pins planPins) []planPipeline {
	if s, ok := pins["parallel.schedule"]; ok && strings.TrimSpace(s) != "interleaved" {
		return pipes
	}
	if e, ok := pins["parallel.pipe_engine"]; ok && strings.TrimSpace(e) != "megatron" {
		return pipes
	}
	if pins.stageLayers() {
		return pipes
	}
	counts := planVirtualStages
	vPinned := false
	if _, ok := pins["parallel.virtual_stages"]; ok {
		v, ok := pins.int("parallel.virtual_stages")
		if !ok || v < 2 {
			return pipes
		}
		counts, vPinned = []int{v}, true
	}
	var out, added []planPipeline
	for _, p := range pipes {
		if !vPinned {
			out = append(out, p)
		}
		depths := p.depths
		if depths == nil {
			pp, ok := pins.int("parallel.pp")
			if !ok {
				continue
			}
			depths = []int{pp}
		}
		for _, v := range counts {
			q := planPipeline{layers: p.layers, first: p.first, last: p.last, virtual: v}
			for _, pp := range depths {
				if planVirtualFits(p.layers, pp, p.first, p.last, v) {
					q.depths = append(q.depths, pp)
				}
			}
			if q.depths == nil {
				continue
			}
			if p.depths == nil {
				q.depths = nil // pinned: the pin sets pp
			}
			out = append(out, q)
			added = append(added, q)
		}
	}
	if vPinned && len(added) == 0 {
		return pipes
	}
	return out
}

// depth is the pipeline depth of a document of one depth: its own, or the
// pinned parallel.pp (ok false: neither).
func (p planPipeline) depth(pins planPins) (pp int, ok bool) {
	if len(p.depths) == 1 {
		return p.depths[0], true
	}
	if p.depths == nil {
		return pins.int("parallel.pp")
	}
	return 0, false
}

// planPins are the --set values by field (the last one of a field wins, as
// the overrides apply in order).
type planPins map[string]string

// int is a pinned field's value as an integer; ok is false if the field is
// not pinned or its value is not a plain integer.
func (p planPins) int(path string) (int, bool) {
	v, set := p[path]
	if !set {
		return 0, false
	}
	n, err := strconv.Atoi(strings.TrimSpace(v))
	return n, err == nil
}

// stageLayers reports whether the user pinned how layers split over the
// pipeline stages (first/last_stage_layers or stage_layers), which plan
// then leaves to the scenario rules.
func (p planPins) stageLayers() bool {
	for _, f := range []string{"parallel.first_stage_layers", "parallel.last_stage_layers", "parallel.stage_layers"} {
		if _, ok := p[f]; ok {
			return true
		}
	}
	return false
}

// planValues are the values plan's search tries for an integer field: the
// pinned one, those in space, or 1 (every field plan sweeps defaults to 1).
func planValues(space []planSearch, path string, pins planPins) []int {
	if v, ok := pins.int(path); ok {
		return []int{v}
	}
	for _, f := range space {
		if f.path != path {
			continue
		}
		var out []int
		for _, s := range f.values {
			if v, err := strconv.Atoi(s); err == nil {
				out = append(out, v)
			}
		}
		if len(out) > 0 {
			return out
		}
	}
	return []int{1}
}

// planPipelineRuns says whether a sweep document of pipeline depth pp has
// a layout the scenario rules can accept (planLayoutRuns for some tp of
// the search). plan leaves out an extra document without one, since
// simtrain sweep rejects a sweep whose every point is invalid.
func planPipelineRuns(o planOptions, pp int, interleaved bool, space []planSearch, pins planPins) bool {
	for _, tp := range planValues(space, "parallel.tp", pins) {
		if planLayoutRuns(o, tp, pp, interleaved, space, pins) {
			return true
		}
	}
	return false
}

// planLayoutRuns says whether tp and pp make a layout the scenario rules
// can accept with some micro-batch of the search (cp at its smallest):
// tp·pp·cp divides the GPUs and dp·micro_batch the global batch, and, with
// the interleaved schedule (interleaved true), the micro-batches per
// pipeline, global batch / (dp·micro_batch), are a multiple of pp
// (pipeline.Interleaved, as Megatron-LM requires).
func planLayoutRuns(o planOptions, tp, pp int, interleaved bool, space []planSearch, pins planPins) bool {
	cp := slices.Min(planValues(space, "parallel.cp", pins))
	model := tp * pp * cp
	if model < 1 || o.numGPUs%model != 0 {
		return false
	}
	for _, mb := range planValues(space, "training.micro_batch", pins) {
		if mb < 1 {
			continue
		}
		perStep := o.numGPUs / model * mb
		if o.globalBatch%perStep == 0 && (!interleaved || o.globalBatch/perStep%pp == 0) {
			return true
		}
	}
	return false
}

// planInterleavedTPs are the tensor-parallel sizes of the search (values)
// that an interleaved document of depths (nil: the pinned parallel.pp)
// keeps: those with a valid layout at one of its depths (planLayoutRuns)
// where interleaving can pay (planInterleavePays; not applied when the
// user pinned parallel.virtual_stages). A cross product cannot tie the
// micro-batch to tp, and the interleaved rule that micro-batches per
// pipeline be a multiple of pp leaves, for Llama 3 405B on 16,384 GPUs
// (batch 2,048), only tp 8 at pp 4, 8 and 16: without this cut 3 of 4
// points of those documents would be invalid. nil where none is kept (or
// a value is not an integer).
func planInterleavedTPs(o planOptions, depths []int, values []string, space []planSearch, pins planPins) []string {
	if depths == nil {
		pp, ok := pins.int("parallel.pp")
		if !ok {
			return nil
		}
		depths = []int{pp}
	}
	_, vPinned := pins["parallel.virtual_stages"]
	var out []string
	for _, v := range values {
		tp, err := strconv.Atoi(v)
		if err != nil {
			return nil
		}
		for _, pp := range depths {
			if planLayoutRuns(o, tp, pp, true, space, pins) && (vPinned || planInterleavePays(o, tp, pp, space, pins)) {
				out = append(out, v)
				break
			}
		}
	}
	return out
}

// planInterleaveSkipped says whether plan leaves out the interleaved
// document pipe: no tp of the search both runs and pays at its depths
// (planInterleavedTPs). A pinned parallel.virtual_stages keeps it.
func planInterleaveSkipped(o planOptions, pipe planPipeline, space []planSearch, pins planPins) bool {
	if pipe.virtual < 2 {
		return false
	}
	if _, ok := pins["parallel.virtual_stages"]; ok {
		return false
	}
	var tps []string
	for _, tp := range planValues(space, "parallel.tp", pins) {
		tps = append(tps, strconv.Itoa(tp))
	}
	return planInterleavedTPs(o, pipe.depths, tps, space, pins) == nil
}

// planInterleaveMinBubble is the smallest 1F1B bubble, as a share of the
// compute time, at which plan searches the interleaved schedule for a
// layout. Interleaving wins back at most the bubble ((p−1)/m less
// (p−1)/(v·m), arXiv:2104.04473 §2.2) and adds v times the sends between
// stages; and its steps play whole, since steady-state replication
// refuses them (sim/parallel steadyCount), at a cost that grows with m:
// with short sequences (4M tokens of 512 are 8,192 sequences) the search
// took Llama 3 8B on 64 GPUs from 9.7 to 126–137 s of user time (two
// runs) for points where 1F1B's bubble was under 3%. A search-cost cut,
// not a measured constant.
const planInterleaveMinBubble = 0.05

// planInterleavePays says whether 1F1B's bubble for tp and pp, (p−1)/m
// with the fewest micro-batches per pipeline the search makes (m = global
// batch / (dp × the largest micro-batch), cp at its smallest), is at least
// planInterleaveMinBubble.
func planInterleavePays(o planOptions, tp, pp int, space []planSearch, pins planPins) bool {
	cp := slices.Min(planValues(space, "parallel.cp", pins))
	mb := slices.Max(planValues(space, "training.micro_batch", pins))
	model := tp * pp * cp
	if model < 1 || mb < 1 || o.numGPUs%model != 0 {
		return false
	}
	m := float64(o.globalBatch) / float64(o.numGPUs/model*mb)
	return m > 0 && float64(pp-1)/m >= planInterleaveMinBubble
}

// planBatchRaise is a global batch above the default of about 4M tokens
// (from), and the layout that needs it.
type planBatchRaise struct {
	from, batch, tp, pp, cp, dp int
}

// planBatchFloor is the smallest global batch with which the most
// model-parallel layout of the search, tp·pp·cp at their largest, gives
// each of its dp = numGPUs / (tp·pp·cp) pipelines (at least one) pp
// micro-batches of one sequence: batch = dp·pp. 1F1B idles (p−1)/m of the
// compute time in the pipeline bubble for p stages and m micro-batches
// (Narayanan et al. 2021, arXiv:2104.04473 §2.2), so m ≥ p keeps the bubble
// shorter than the work. The 4M-token batch (1,024 sequences of 4,096)
// leaves Llama 3 405B's tp8 × pp16 layout 8 micro-batches per pipeline on
// 16,384 GPUs (dp 128) and less than one on 131,072 (dp 1,024), where no
// layout plan builds was valid.
func planBatchFloor(numGPUs, tp, pp, cp int) planBatchRaise {
	dp := max(1, numGPUs/max(1, tp*pp*cp))
	return planBatchRaise{batch: dp * pp, tp: tp, pp: pp, cp: cp, dp: dp}
}

// layout names the layout the batch was raised for: tp8 × pp16 × dp1024.
func (r planBatchRaise) layout() string {
	s := fmt.Sprintf("tp%d × pp%d", r.tp, r.pp)
	if r.cp > 1 {
		s += fmt.Sprintf(" × cp%d", r.cp)
	}
	return s + fmt.Sprintf(" × dp%d", r.dp)
}

// planDefaultBatch is the global batch plan runs without --global-batch:
// about 4M tokens (planBatchTokens / seq) made a batch the search's
// data-parallel sizes divide (planBatchDivisible), or planBatchFloor's
// batch for the deepest pipeline of the search (pipes, or a pinned
// parallel.pp) with the largest tp and cp of any GPU type's search (gpns:
// GPUs per node of each), whichever is larger. One batch for every GPU
// type, so that their rows compare. rounded is the 4M-token batch where
// planBatchDivisible changed it (0: it did not); raised is nil when no
// floor raised the batch. Neither applies when training.global_batch is
// pinned with --set (the user's choice). Llama 3 405B itself grew its
// batch from 4M to 16M tokens during pre-training (arXiv:2407.21783
// §3.4.1).
func planDefaultBatch(m workload.Model, seq, numGPUs int, gpns []int, pipes []planPipeline, pins planPins) (batch, rounded int, raised *planBatchRaise) {
	batch = max(1, int(math.Round(planBatchTokens/float64(seq))))
	if _, ok := pins["training.global_batch"]; ok {
		return batch, 0, nil
	}
	if b := planBatchDivisible(batch, numGPUs); b != batch {
		batch, rounded = b, batch
	}
	ppMax := 1
	for _, p := range pipes {
		for _, pp := range p.depths {
			ppMax = max(ppMax, pp)
		}
	}
	if pp, ok := pins.int("parallel.pp"); ok {
		ppMax = pp
	}
	from := batch
	for _, gpn := range gpns {
		space := planSpace(m, gpn, seq)
		f := planBatchFloor(numGPUs, slices.Max(planValues(space, "parallel.tp", pins)), ppMax, slices.Max(planValues(space, "parallel.cp", pins)))
		if f.batch > batch {
			f.from = from
			batch, raised = f.batch, &f
		}
	}
	return batch, rounded, raised
}

// planBatchDivisible is the batch nearest want sequences (on a log scale)
// that every data-parallel size plan can make on numGPUs GPUs divides at a
// micro-batch of 1: the odd part of numGPUs times a power of two. plan's
// tp, pp and cp are powers of two, so each dp is the odd part times a
// power of two, and a batch of 1,024 sequences, which no dp of 24 GPUs
// (3 × 2^k) divides, made every point of a 3-node cluster invalid.
func planBatchDivisible(want, numGPUs int) int {
	odd := max(1, numGPUs)
	for odd%2 == 0 {
		odd /= 2
	}
	k := max(0, int(math.Round(math.Log2(float64(want)/float64(odd)))))
	return odd << k
}

// planSpace is the search: the layouts Megatron-style trainers are run
// with. Tensor parallelism stays inside a node's NVLink domain (at most 8
// ways); pipeline parallelism goes up to 16 stages, no more than the
// model's layers (planPipelines splits these over documents, with uneven
// end stages where a depth does not divide the layers, and with the
// interleaved schedule where its virtual stages fit); expert
// parallelism up to 8 for MoE models (at most their experts); context
// parallelism only from 32k-token sequences, where attention memory needs
// it.
func planSpace(m workload.Model, gpn, seq int) []planSearch {
	pow2 := func(limit int, top int) []string {
		var out []string
		for v := 1; v <= top && v <= limit; v *= 2 {
			out = append(out, strconv.Itoa(v))
		}
		return out
	}
	space := []planSearch{
		{"parallel.tp", pow2(max(gpn, 1), 8)},
		{"parallel.pp", pow2(m.Layers, planMaxPP)},
		{"parallel.sp", []string{"false", "true"}},
		{"training.micro_batch", []string{"1", "2", "4"}},
		{"training.recompute", []string{"none", "selective", "full"}},
		{"parallel.zero", []string{"1", "3"}},
	}
	if m.MoE != nil {
		space = append(space, planSearch{"parallel.ep", pow2(m.MoE.Experts, 8)})
	}
	if seq >= 32768 {
		space = append(space, planSearch{"parallel.cp", pow2(8, 8)})
	}
	return space
}

// planGPUName is a GPU's name as it may appear in a sweep name: a catalog
// name as is, a GPU file by its base name.
func planGPUName(gpu string) string {
	if scenario.IsGPUFile(gpu) {
		gpu = strings.TrimSuffix(filepath.Base(gpu), filepath.Ext(gpu))
	}
	return strings.Map(func(r rune) rune {
		if r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '.' || r == '-' || r == '_' {
			return r
		}
		return '-'
	}, gpu)
}

// planRow is a simulated point with what training on --tokens takes.
type planRow struct {
	output.SummaryRow
	Days, CostUSD float64
}

// layout names a point's layout compactly; the virtual stages (v8 after
// pp) say the schedule is the interleaved one, which plan's other
// schedule, 1F1B, is not.
func (r planRow) layout() string {
	s := fmt.Sprintf("tp%d pp%d", r.TP, r.PP)
	if r.Schedule == "interleaved" {
		s += fmt.Sprintf(" v%d", r.VirtualStages)
	}
	s += fmt.Sprintf(" dp%d", r.DP)
	if r.CP > 1 {
		s += fmt.Sprintf(" cp%d", r.CP)
	}
	if r.EP > 1 {
		s += fmt.Sprintf(" ep%d", r.EP)
	}
	if r.SP {
		s += " sp"
	}
	return s + fmt.Sprintf(" mb%d zero%d %s", r.MicroBatch, r.Zero, r.Recompute)
}

func runPlan(cmd *cobra.Command, o planOptions) error {
	if err := o.check(cmd); err != nil {
		return err
	}
	tokens, _ := parseCount(o.tokens) // checked
	m, err := workload.Preset(o.model)
	if err != nil {
		return usageErrorf("--model: %v", err)
	}
	overrides, err := parseSets(o.sets)
	if err != nil {
		return err
	}
	pins := planPins{}
	for _, ov := range overrides {
		pins[ov.Path] = ov.Value
	}
	layers := m.Layers
	if l, ok := pins.int("model.layers"); ok {
		layers = l
	}
	pipes := planPipelines(layers, pins)
	type planCluster struct {
		gpu        string
		nodes, gpn int
	}
	var clusters []planCluster
	var gpns []int
	for _, gpu := range o.gpus {
		gpn := o.gpusPerNode
		if gpn == 0 {
			g, err := planGPU(gpu)
			if err != nil {
				return err
			}
			gpn = g.DefaultGPUsPerNode
		}
		nodes := o.numGPUs / gpn
		if o.numGPUs < gpn {
			nodes, gpn = 1, o.numGPUs
		} else if o.numGPUs%gpn != 0 {
			return usageErrorf("--gpus: %d is not a whole number of %s nodes of %d GPUs (pass --gpus-per-node, or a multiple of %d)", o.numGPUs, gpu, gpn, gpn)
		}
		clusters = append(clusters, planCluster{gpu, nodes, gpn})
		gpns = append(gpns, gpn)
	}
	var raised *planBatchRaise
	rounded := 0
	if b, ok := pins.int("training.global_batch"); ok {
		// The pin overrides the sweep file's batch, so the header, the
		// JSON and planLayoutRuns' choice of documents take it too.
		o.globalBatch = b
	}
	if o.globalBatch == 0 {
		o.globalBatch, rounded, raised = planDefaultBatch(m, o.seq, o.numGPUs, gpns, pipes, pins)
	}
	// extra: a document of one more pipeline depth with uneven end
	// stages, or of the interleaved schedule, which plan added to the
	// user's search.
	type planned struct {
		name, doc string
		extra     bool
	}
	var sweeps []planned
	for _, c := range clusters {
		space := planSpace(m, c.gpn, o.seq)
		for i, p := range pipes {
			if pp, ok := p.depth(pins); i > 0 && ok && !planPipelineRuns(o, pp, p.virtual > 1, space, pins) {
				continue
			}
			if planInterleaveSkipped(o, p, space, pins) {
				continue
			}
			name, doc := planSweepFile(o, c.gpu, c.nodes, c.gpn, m, p, pins)
			sweeps = append(sweeps, planned{name, doc, i > 0})
		}
	}
	w := cmd.OutOrStdout()
	if o.printSweep {
		for i, s := range sweeps {
			if i > 0 {
				fmt.Fprintln(w, "---")
			}
			fmt.Fprint(w, s.doc)
		}
		return nil
	}
	var dropped []string
	loaded := map[string]*sweep.Sweep{}
	tally := planTally{failed: map[string]bool{}}
	pool := new(sweep.Pool) // the workers' storage, kept from sweep to sweep and phase to phase
	// The memory set for a sweep's points as `simtrain sweep` sets it
	// (startSweepLoad), from the first sweep's load on. After 6 s idle,
	// the plan of Llama 3 70B on 512 H100 took 0.879 s of CPU against
	// 0.993 s without (6 alternating pairs, −115 ± 45 ms; back to back
	// −39 ± 77 ms, 8 pairs), and it runs no collection instead of four
	// (issue 18, round 58).
	firstLoaded := startSweepLoad()
	var runs []*sweep.Sweep  // the sweeps loaded, in order
	var docs, names []string // their documents and file names
	everyRank := false
	for i, s := range sweeps {
		sw, err := sweep.Parse([]byte(s.doc), ".", sweep.Options{Budget: o.budget.budget(), Context: cmd.Context(), Overrides: overrides})
		if i == 0 {
			firstLoaded(sw != nil && sw.PlaysEveryRank())
		}
		if err != nil {
			if cmd.Context().Err() != nil {
				return err
			}
			if s.extra {
				// An added depth that no layout of the search can use
				// (e.g. with a pinned schedule) is left out, and said.
				dropped = append(dropped, fmt.Sprintf("%s has no valid layout: %v", s.name, err))
				continue
			}
			return inputError(err)
		}
		loaded[sw.Name] = sw
		sw.SetPool(pool)
		runs, docs, names = append(runs, sw), append(docs, s.doc), append(names, s.name)
		everyRank = everyRank || sw.PlaysEveryRank()
	}
	var order []planRef
	if everyRank && o.out == "" {
		if order, err = planAnalyticPrior(cmd, runs, docs, overrides, o, tokens, pool); err != nil {
			return err
		}
	}
	if order != nil {
		if err := planRunPrior(cmd, runs, order, o, &tally, tokens, pool); err != nil {
			return err
		}
	} else {
		for k, sw := range runs {
			if err := planRun(cmd, sw, o, &tally, tokens); err != nil {
				return err
			}
			if o.out != "" {
				if err := writePlanSweep(o.out, names[k], docs[k], overrides); err != nil {
					return err
				}
			}
		}
	}
	rows := tally.rows
	slices.SortFunc(rows, compareRows)
	if o.out != "" {
		meta := map[string]string{"sweep": "plan", "points": strconv.Itoa(len(rows))}
		if err := output.WriteTable(filepath.Join(o.out, "summary.arrow"), rows, meta); err != nil {
			return err
		}
	}
	res := rankPlan(rows, tally.failed, tally.ruled, tokens, o)
	res.raised, res.rounded = raised, rounded
	res.excluded = append(res.excluded, dropped...)
	if o.out != "" && len(res.proposals) > 0 {
		if err := writeBestScenario(o.out, res.proposals[0], loaded); err != nil {
			return err
		}
	}
	if o.format == "json" {
		return writeJSONLine(w, res.json(o, tokens))
	}
	res.print(w, o, tokens)
	if o.out != "" {
		fmt.Fprintf(w, "\nwrote %s (every point: simtrain best %s --by time_to_train --tokens %s), the sweep files and best.yaml (the best layout as a scenario: simtrain run %s)\n",
			filepath.Join(o.out, "summary.arrow"), o.out, o.tokens, filepath.Join(o.out, "best.yaml"))
	}
	return nil
}

// workerCount is the points a plan simulates at once: --workers, or one
// per CPU.
func (o planOptions) workerCount() int {
	if o.workers == 0 {
		return runtime.GOMAXPROCS(0)
	}
	return o.workers
}

// check validates the flags before anything runs.
func (o *planOptions) check(cmd *cobra.Command) error {
	if err := checkChoice("format", o.format, "table", "json"); err != nil {
		return err
	}
	if err := checkChoice("by", o.by, "days", "cost"); err != nil {
		return err
	}
	switch {
	case o.model == "":
		return usageErrorf("--model: required (one of %s)", strings.Join(workload.PresetNames(), ", "))
	case len(o.gpus) == 0:
		return usageErrorf("--gpu: required (one or more of %s, comma-separated)", strings.Join(hardware.GPUNames(), ", "))
	case o.numGPUs < 1:
		return usageErrorf("--gpus: required, a positive number of GPUs")
	case o.tokens == "":
		return usageErrorf("--tokens: required (e.g. 2T)")
	case o.seq < 1:
		return usageErrorf("--seq: must be >= 1, got %d", o.seq)
	case o.globalBatch < 0:
		return usageErrorf("--global-batch: must be >= 1, got %d", o.globalBatch)
	case o.gpusPerNode < 0:
		return usageErrorf("--gpus-per-node: must be >= 1, got %d", o.gpusPerNode)
	case o.top < 1:
		return usageErrorf("--top: must be >= 1, got %d", o.top)
	case o.budgetUSD < 0 || math.IsNaN(o.budgetUSD) || math.IsInf(o.budgetUSD, 0):
		return usageErrorf("--budget-usd: must be a positive number of dollars, got %v", o.budgetUSD)
	case o.days < 0 || math.IsNaN(o.days) || math.IsInf(o.days, 0):
		return usageErrorf("--days: must be a positive number of days, got %v", o.days)
	}
	if _, err := parseCount(o.tokens); err != nil {
		return usageErrorf("--tokens: %v", err)
	}
	if err := checkWorkers(o.workers); err != nil {
		return err
	}
	for _, g := range o.gpus {
		if _, err := planGPU(g); err != nil {
			return err
		}
	}
	return o.budget.check()
}

// planGPU resolves a --gpu value: a catalog name or a GPU file.
func planGPU(name string) (hardware.GPU, error) {
	if scenario.IsGPUFile(name) {
		g, _, err := gpuArg(name)
		return g, err
	}
	g, err := hardware.LookupGPU(name)
	if err != nil {
		return hardware.GPU{}, usageErrorf("--gpu: %v", err)
	}
	return g, nil
}

// planTally is what plan's sweeps produced so far: every point's row but
// those ruled out by their computation (counted in ruled), and the names of
// the points that failed to simulate (over the work budget, or an internal
// error).
type planTally struct {
	mu     sync.Mutex // held while a result is recorded (run: Runs of several sweeps at once)
	rows   []output.SummaryRow
	failed map[string]bool
	ruled  int
	guide  planGuide // the points played so far, to order the next ones
	// prior, where set, records each point's figure (planAnalyticPrior).
	prior *planPrior
}

// planRun simulates every point of one sweep into t, with the cutoff
// (planCutoff) made from all that t holds before each of its phases
// (planPhase.next); unless --out keeps every row, when every point is
// played to its end in one run.
func planRun(cmd *cobra.Command, sw *sweep.Sweep, o planOptions, t *planTally, tokens float64) error {
	indices := sw.ShardIndices(0, 1)
	workers := o.workerCount()
	prog := newProgress(cmd.ErrOrStderr(), o.quiet, len(indices), 0)
	t.rows = slices.Grow(t.rows, len(indices))
	cut := o.out == ""
	t.guide.sweep++
	var at planPhase
	for rest := indices; len(rest) > 0; {
		phase := rest // (with --out: one run, in the sweep's order)
		if cut {
			phase, rest = at.next(&t.guide, sw, rest)
			sw.SetCutoff(planCutoff(t, tokens, o))
		} else {
			rest = nil
		}
		if err := t.run(cmd, sw, phase, workers, prog, tokens, o); err != nil {
			prog.finish()
			return err
		}
	}
	prog.finish()
	return nil
}

// run plays the points indices of sw into t on workers (the cutoff set
// before), each row counted on prog: a point ruled out is counted in
// t.ruled, one played to its figure is observed by the guide; where t
// records a prior (planPrior.note), each point's figure, or its bound
// (boundFigure) when ruled out, is noted too.
func (t *planTally) run(cmd *cobra.Command, sw *sweep.Sweep, indices []int, workers int, prog *progress, tokens float64, o planOptions) error {
	// RunLent: the rows are copies; pr is not kept past the call.
	err := sw.RunLent(cmd.Context(), indices, workers, func(pr sweep.PointResult) error {
		t.mu.Lock()
		defer t.mu.Unlock()
		if pr.Result != nil && pr.Result.RuledOut {
			t.ruled++
			if t.prior != nil && pr.Point != nil && pr.Point.Scenario != nil {
				t.prior.note(pr.Point.Index, boundFigure(pr.Point.Scenario, pr.Result.StepBoundS, tokens, o), false)
			}
			prog.update(pr.Outcome, output.SummaryRow{})
			return nil
		}
		row := report.Point(pr)
		t.rows = append(t.rows, row)
		if pr.Outcome == sweep.Failed {
			t.failed[row.Name] = true
		}
		if r := row; r.Error == "" && r.StepTimeS > 0 && r.Fits && pr.Point != nil {
			f := planFigure(r, tokens, o)
			t.guide.observe(sw, pr.Point.Index, f)
			t.prior.note(pr.Point.Index, f, true)
		}
		prog.update(pr.Outcome, row)
		return nil
	})
	if err != nil && cmd.Context().Err() != nil {
		return &exitError{exitInterrupted, fmt.Errorf("plan interrupted; nothing written")}
	}
	return err
}

// planPhase is where a sweep's run stands in plan's phases (next).
type planPhase struct {
	sampled, led bool
}

// next cuts the next phase off rest, the sweep's points not run yet (in
// the sweep's order). In plan's first sweep, while the guide holds
// nothing, a sample of every sampleStride-th point, spread over the whole
// search; then the points the guide scores best (planLead), whose figures
// set the cutoff for the others; then the others, in one run. Each phase
// runs whole before the next one's cutoff is made, so what is cut, and
// every count, is the same on any number of workers.
//
// Why phases and not one run: the cutoff changes only between runs, and
// cutting a sweep into runs costs what its points share inside one (a
// worker's points of one structure re-price one build: sweep.Sweep.Run).
// Measured (3 alternating runs each, 2026-12-06): the first sweep sampled
// (at a stride of 16) against none sampled, plan on 512 H100 of
// mixtral-8x7b −0.25 ± 0.79 s of CPU, qwen3-235b-a22b −0.60 ± 1.24 s,
// llama3-70b −0.46 ± 0.30 s; every sweep in a sample and two more runs:
// −1.67 ± 0.88 s, +0.82 ± 0.26 s and −0.17 ± 0.07 s.
func (at *planPhase) next(g *planGuide, sw *sweep.Sweep, rest []int) (phase, left []int) {
	if !at.sampled && !at.led && len(g.obs) == 0 {
		at.sampled = true
		if stride := sampleStride(sw); len(rest) >= 4*stride {
			return planSample(rest, stride)
		}
	}
	if !at.led {
		at.led = true
		if lead, left := planLead(g, sw, rest); len(lead) > 0 {
			return lead, left
		}
	}
	return rest, nil
}

// boundFigure is the figure (planFigure's) of a point of plan s ruled out
// with step bound boundS seconds: its days, or its cost with --by cost,
// at that step time; summarise's cost per step is the step's seconds at
// the GPUs' hourly price (planCutoff).
func boundFigure(s *scenario.Plan, boundS, tokens float64, o planOptions) float64 {
	steps, usdPerS := planRates(s, tokens)
	if !(steps > 0) || math.IsInf(steps, 1) || !(boundS > 0) {
		return 0 // (not observed)
	}
	if o.by == "cost" {
		return steps * boundS * usdPerS
	}
	return steps * boundS / 86400
}

// planRates is what plan s takes to train on tokens: its steps, and its
// GPUs' price per second of a step (summarise's cost per step is the
// step's seconds at that price). planCutoff turns a figure into a step
// time with them, boundFigure a step time into a figure.
func planRates(s *scenario.Plan, tokens float64) (steps, usdPerS float64) {
	steps = tokens / (float64(s.Training.GlobalBatch) * float64(s.Training.SeqLen))
	return steps, s.GPUHourUSD() * float64(s.GPUs()) / 3600
}

// planFigure is the figure plan ranks row by (rankPlan): its days to train
// on tokens, or its cost with --by cost.
func planFigure(r output.SummaryRow, tokens float64, o planOptions) float64 {
	days, cost := planToTrain(r, tokens)
	if o.by == "cost" {
		return cost
	}
	return days
}

// planToTrain is row r's days and cost to train on tokens (0 and 0 for a
// row without a step time).
func planToTrain(r output.SummaryRow, tokens float64) (days, cost float64) {
	if tps := float64(r.GlobalBatch) * float64(r.SeqLen); tps > 0 && r.StepTimeS > 0 {
		steps := tokens / tps
		return steps * r.StepTimeS / 86400, steps * r.CostUSDPerStep
	}
	return 0, 0
}

// writePlanSweep saves the sweep file plan ran, with the --set overrides
// written into its base scenario's comment so the file reproduces the run.
func writePlanSweep(dir, name, doc string, overrides []scenario.Override) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	if len(overrides) > 0 {
		var b strings.Builder
		b.WriteString("# Run with the same overrides:")
		for _, ov := range overrides {
			fmt.Fprintf(&b, " --set %s=%s", ov.Path, ov.Value)
		}
		doc = b.String() + "\n" + doc
	}
	return output.WriteFileAtomic(filepath.Join(dir, name+".yaml"), func(w io.Writer) error {
		_, err := io.WriteString(w, doc)
		return err
	})
}

// writeBestScenario saves the best proposal as a scenario file, DIR/best.yaml.
func writeBestScenario(dir string, best planRow, sweeps map[string]*sweep.Sweep) error {
	i := strings.LastIndexByte(best.Name, '-')
	sw := sweeps[best.Name[:max(i, 0)]]
	n, err := strconv.Atoi(best.Name[i+1:])
	if sw == nil || err != nil {
		return fmt.Errorf("plan: cannot find the sweep point %s", best.Name)
	}
	doc, err := sw.PointYAML(n)
	if err != nil {
		return err
	}
	return output.WriteFileAtomic(filepath.Join(dir, "best.yaml"), func(w io.Writer) error {
		_, err := w.Write(doc)
		return err
	})
}

// planResult is plan's answer: the proposals, and why others lost.
type planResult struct {
	proposals                           []planRow
	why                                 []string // one per proposal
	excluded                            []string // layouts better on the ranking that were dropped, and why
	points, simulated, fitting, invalid int
	// ruled is the fitting points not played to the end (planCutoff):
	// slower than the --top-th proposal before them
	ruled int
	// failed is the points that failed to simulate (planRun), and
	// firstFailed the first of them by name with its error
	failed      int
	firstFailed string
	raised      *planBatchRaise // nil: the global batch is --global-batch or about 4M tokens
	rounded     int             // the 4M-token batch planBatchDivisible changed (0: none)
}

// rankPlan ranks the fitting layouts by days (or cost) to train on tokens
// and explains what lost; failed names the rows that failed to simulate
// (planRun), which are counted apart from the invalid combinations, and
// ruled counts the fitting points not played to the end, which have no
// row (planCutoff says why none of them can be proposed).
func rankPlan(rows []output.SummaryRow, failed map[string]bool, ruled int, tokens float64, o planOptions) planResult {
	var res planResult
	res.points = len(rows) + ruled
	res.ruled = ruled
	var fit, tooBig, over []planRow
	for _, r := range rows {
		switch {
		case r.Error == "":
		case failed[r.Name]:
			if res.failed++; res.firstFailed == "" {
				res.firstFailed = r.GPU + " " + (planRow{SummaryRow: r}).layout() + ": " + r.Error
			}
		case !strings.Contains(r.Error, "does not fit"):
			res.invalid++
		}
		pr := planRow{SummaryRow: r}
		pr.Days, pr.CostUSD = planToTrain(r, tokens)
		switch {
		case r.Error == "" && r.StepTimeS > 0 && r.Fits:
			res.simulated++
			if (o.budgetUSD > 0 && pr.CostUSD > o.budgetUSD) || (o.days > 0 && pr.Days > o.days) {
				over = append(over, pr)
				continue
			}
			fit = append(fit, pr)
		case r.Error == "" && !r.Fits && r.PeakMemBytes > 0:
			tooBig = append(tooBig, pr)
		}
	}
	res.fitting = len(fit)
	better := func(a, b planRow) int {
		if o.by == "cost" {
			return cmp.Or(cmp.Compare(a.CostUSD, b.CostUSD), cmp.Compare(a.Days, b.Days), compareRows(a.SummaryRow, b.SummaryRow))
		}
		return cmp.Or(cmp.Compare(a.Days, b.Days), cmp.Compare(a.CostUSD, b.CostUSD), compareRows(a.SummaryRow, b.SummaryRow))
	}
	slices.SortFunc(fit, better)
	slices.SortFunc(over, better)
	// Layouts that differ only in the recompute policy and simulate to the
	// same step and memory (selective recompute of flash attention costs
	// nothing) are one proposal: the first, which sorts by name.
	type same struct {
		gpu, schedule                   string
		tp, pp, v, dp, cp, ep, mb, zero int64
		sp                              bool
		step                            float64
		mem                             int64
	}
	seen := map[same]bool{}
	for _, p := range fit {
		k := same{p.GPU, p.Schedule, p.TP, p.PP, p.VirtualStages, p.DP, p.CP, p.EP, p.MicroBatch, p.Zero, p.SP, p.StepTimeS, p.PeakMemBytes}
		if seen[k] {
			continue
		}
		seen[k] = true
		res.proposals = append(res.proposals, p)
		if len(res.proposals) == o.top {
			break
		}
	}
	for i, p := range res.proposals {
		res.why = append(res.why, planWhy(i, p, res.proposals, o.by))
	}
	if len(over) > 0 && (len(fit) == 0 || better(over[0], fit[0]) < 0) {
		limit := []string{}
		if o.days > 0 {
			limit = append(limit, fmt.Sprintf("%s days", numfmt.Sig(o.days)))
		}
		if o.budgetUSD > 0 {
			limit = append(limit, numfmt.USD(o.budgetUSD))
		}
		// (A point not played to the end is slower than the --top-th
		// proposal, so it may or may not be over a limit, but it is
		// never the best of them: over[0] is better than fit[0].)
		some := ""
		if ruled > 0 {
			some = fmt.Sprintf(" (and perhaps some of the %d not played to the end)", ruled)
		}
		res.excluded = append(res.excluded, fmt.Sprintf("%d layouts exceed %s%s; the best of them, %s %s, takes %s days and %s",
			len(over), strings.Join(limit, " / "), some, over[0].GPU, over[0].layout(), numfmt.Sig(over[0].Days), numfmt.USD(over[0].CostUSD)))
	}
	if len(tooBig) > 0 {
		slices.SortFunc(tooBig, func(a, b planRow) int {
			return cmp.Or(cmp.Compare(float64(a.PeakMemBytes)/float64(a.MemCapacityBytes), float64(b.PeakMemBytes)/float64(b.MemCapacityBytes)), compareRows(a.SummaryRow, b.SummaryRow))
		})
		t := tooBig[0]
		res.excluded = append(res.excluded, fmt.Sprintf("%d layouts do not fit in memory; the closest, %s %s, needs %s per GPU of %s",
			len(tooBig), t.GPU, t.layout(), numfmt.GiB(t.PeakMemBytes), numfmt.GiB(t.MemCapacityBytes)))
	}
	if res.failed > 0 {
		// (first: the rows are sorted by name)
		res.excluded = append(res.excluded, fmt.Sprintf("%d layouts were not simulated, so a better one may be among them; the first, %s", res.failed, res.firstFailed))
	}
	if res.invalid > 0 {
		res.excluded = append(res.excluded, fmt.Sprintf("%d combinations are not valid layouts (e.g. dp × micro-batch does not divide the global batch, sp without tp)", res.invalid))
	}
	return res
}

// planWhy says why proposal i ranks where it does against the first.
func planWhy(i int, p planRow, all []planRow, by string) string {
	best := all[0]
	if i == 0 {
		if by == "cost" {
			return "cheapest layout that fits"
		}
		return "fastest layout that fits"
	}
	dDays := p.Days/best.Days - 1
	dCost := p.CostUSD - best.CostUSD
	var parts []string
	if p.GPU != best.GPU {
		parts = append(parts, "on "+p.GPU)
	}
	parts = append(parts, fmt.Sprintf("%s longer to train (+%s days)", numfmt.Pct(dDays), numfmt.Sig(p.Days-best.Days)))
	switch {
	case dCost < 0:
		parts = append(parts, fmt.Sprintf("but %s cheaper", numfmt.USD(-dCost)))
	case dCost > 0:
		parts = append(parts, fmt.Sprintf("and %s dearer", numfmt.USD(dCost)))
	}
	if float64(p.PeakMemBytes) < float64(best.PeakMemBytes)*0.9 {
		parts = append(parts, fmt.Sprintf("with more memory headroom (%s vs %s)", numfmt.GiB(p.PeakMemBytes), numfmt.GiB(best.PeakMemBytes)))
	}
	return strings.Join(parts, ", ")
}

func (res planResult) print(w io.Writer, o planOptions, tokens float64) {
	fmt.Fprintf(w, "%s on %s GPUs (%s), %s tokens, seq %s, global batch %s: %s points, %s simulated and fitting",
		o.model, numfmt.Grouped(float64(o.numGPUs)), strings.Join(o.gpus, ", "), o.tokens, numfmt.Grouped(float64(o.seq)),
		numfmt.Grouped(float64(o.globalBatch)), numfmt.Grouped(float64(res.points)), numfmt.Grouped(float64(res.simulated)))
	if res.ruled > 0 {
		fmt.Fprintf(w, ", %s more fitting but not played to the end: slower than the best %d found before them", numfmt.Grouped(float64(res.ruled)), o.top)
	}
	fmt.Fprintln(w)
	if res.rounded > 0 {
		batch := o.globalBatch
		if res.raised != nil {
			batch = res.raised.from
		}
		fmt.Fprintf(w, "global batch %s sequences (%s tokens), not %s: the nearest to 4M tokens that every data-parallel size on %s GPUs divides; pass --global-batch to choose\n",
			numfmt.Grouped(float64(batch)), numfmt.Count(float64(batch)*float64(o.seq)), numfmt.Grouped(float64(res.rounded)), numfmt.Grouped(float64(o.numGPUs)))
	}
	if r := res.raised; r != nil {
		fmt.Fprintf(w, "global batch raised from %s to %s sequences (%s tokens) so that %s has %d micro-batches per pipeline; pass --global-batch to choose\n",
			numfmt.Grouped(float64(r.from)), numfmt.Grouped(float64(r.batch)), numfmt.Count(float64(r.batch)*float64(o.seq)), r.layout(), r.pp)
	}
	if len(res.proposals) == 0 {
		fmt.Fprintln(w, "no layout fits the constraints")
	} else {
		tw := newTable(w)
		fmt.Fprintln(tw, "#\tgpu\tlayout\tstep time\ttokens/s\tMFU\tmemory/GPU\tdays\tcost\twhy\t")
		for i, p := range res.proposals {
			fmt.Fprintf(tw, "%d\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t\n", i+1, p.GPU, p.layout(), numfmt.Seconds(p.StepTimeS),
				numfmt.Grouped(p.TokensPerS), numfmt.Pct(p.MFU), numfmt.GiB(p.PeakMemBytes), numfmt.Sig(p.Days), numfmt.USD(p.CostUSD), res.why[i])
		}
		tw.Flush()
		p := res.proposals[0]
		fmt.Fprintf(w, "\nbest: %s %s — %s days and %s at %s per GPU-hour", p.GPU, p.layout(), numfmt.Sig(p.Days),
			numfmt.USD(p.CostUSD), numfmt.USD(p.CostUSDPerStep/(float64(p.NumGPUs)*p.StepTimeS/3600)))
		if o.out == "" {
			fmt.Fprint(w, " (--out DIR keeps it as a scenario file)")
		}
		fmt.Fprintln(w)
	}
	for _, e := range res.excluded {
		fmt.Fprintln(w, "not proposed: "+e)
	}
}

func (res planResult) json(o planOptions, tokens float64) map[string]any {
	props := make([]map[string]any, 0, len(res.proposals))
	for i, p := range res.proposals {
		props = append(props, map[string]any{
			"rank": i + 1, "name": p.Name, "run_id": p.RunID, "gpu": p.GPU, "num_gpus": p.NumGPUs,
			"layout": p.layout(), "tp": p.TP, "pp": p.PP, "dp": p.DP, "cp": p.CP, "ep": p.EP, "sp": p.SP,
			"zero": p.Zero, "micro_batch": p.MicroBatch, "recompute": p.Recompute, "schedule": p.Schedule, "virtual_stages": p.VirtualStages,
			"step_time_s": p.StepTimeS, "tokens_per_s": p.TokensPerS, "mfu": p.MFU,
			"peak_memory_gib": gibOf(p.PeakMemBytes), "memory_capacity_gib": gibOf(p.MemCapacityBytes),
			"days": p.Days, "cost_usd": p.CostUSD, "why": res.why[i],
		})
	}
	out := map[string]any{
		"model": o.model, "gpus": o.gpus, "num_gpus": o.numGPUs, "tokens": tokens, "seq_len": o.seq,
		"global_batch": o.globalBatch, "by": o.by, "points": res.points, "simulated": res.simulated, "ruled_out": res.ruled, "failed": res.failed,
		"proposals": props, "not_proposed": res.excluded,
	}
	// Only when raised, so that the answer for a batch of about 4M tokens
	// reads as it did before the rule.
	if r := res.raised; r != nil {
		out["global_batch_raised"] = true
		out["global_batch_raised_from"] = r.from
	}
	if res.rounded > 0 {
		out["global_batch_rounded_from"] = res.rounded
	}
	return out
}

// gibOf is a byte count of summary.arrow in GiB, rounded to 10⁻⁹ GiB (about
// one byte, the precision of the column) so that 79.11 GiB prints as 79.11.
func gibOf(b int64) float64 { return math.Round(float64(b)/(1<<30)*1e9) / 1e9 }

// planCutoff is the step-time cutoff (sweep.Sweep.SetCutoff) for the
// points plan runs after those t holds (planRun's phases): the step
// time above which a point would rank below the --top-th proposal so far
// (days, or cost with --by cost, to train on tokens), so that it cannot be
// proposed (later points only push that proposal down), with a margin of
// 10⁻⁹ so no tie is cut. (With --days or --budget-usd the proposals are
// the layouts within the limits, and a point cut may or may not be over
// them: rankPlan says so where it counts those that are.) Nil (no
// cutoff) until --top proposals are known. The phases run one after
// another, so each one's cutoff, and so which points it rules out, does
// not depend on the workers' timing: the answer and the counts are the
// same on any number of workers.
func planCutoff(t *planTally, tokens float64, o planOptions) func(*scenario.Plan) float64 {
	res := rankPlan(t.rows, t.failed, t.ruled, tokens, o)
	if len(res.proposals) < o.top {
		return nil
	}
	last := res.proposals[o.top-1]
	return func(s *scenario.Plan) float64 {
		steps, usdPerS := planRates(s, tokens)
		step := last.Days * 86400 / steps
		if o.by == "cost" {
			step = last.CostUSD / (steps * usdPerS)
		}
		if !(step > 0) || math.IsInf(step, 1) {
			return 0 // (no cutoff)
		}
		return step * (1 + 1e-9)
	}
}
