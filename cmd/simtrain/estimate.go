package main

import (
	"fmt"
	"io"
	"math"
	"strconv"
	"strings"

	"github.com/spf13/cobra"

	"github.com/simtrain/simtrain/sim/hardware"
	"github.com/simtrain/simtrain/sim/output/numfmt"
	"github.com/simtrain/simtrain/sim/scenario"
	"github.com/simtrain/simtrain/sim/workload"
)

// newEstimateCmd is the napkin-math toolbox: closed-form estimates from
// sim/workload, no simulation.
func newEstimateCmd() *cobra.Command {
	var format string
	cmd := &cobra.Command{
		Use:   "estimate",
		Short: "Napkin math: training time, what fits, memory, rooflines, MFU, KV cache",
		Long: `estimate answers the back-of-the-envelope questions before a simulation:
how long training takes at a given MFU, the largest model whose states fit,
the model-state memory of a model, whether a kernel is compute- or
memory-bound, the MFU of a measured throughput and the size of a KV cache.
Every figure comes from sim/workload, the same model the simulator uses.
Units: FLOPs, bytes, seconds; GB = 1e9 bytes.`,
		Example: `  simtrain estimate train --params 70e9 --tokens 15e12 --gpu h100-sxm --gpus 1024 --mfu 0.5
  simtrain estimate fit --gpu h100-sxm --gpus 8
  simtrain estimate memory --model llama3-8b
  simtrain estimate op --kind matmul --n 1024 --dtype bf16 --gpu h100-sxm
  simtrain estimate throughput --params 65.2e9 --tokens-per-s-per-gpu 380 --gpu a100-80gb --gpus 2048 --tokens 1.4e12
  simtrain estimate kv --model llama3-70b --seq 8192 --decode --gpu h100-sxm`,
		Args: cobra.ArbitraryArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			if len(args) > 0 {
				var names []string
				for _, c := range cmd.Commands() {
					names = append(names, c.Name())
				}
				return usageErrorf("estimate: unknown sub-command %q (valid: %s)", args[0], strings.Join(names, ", "))
			}
			return cmd.Help()
		},
	}
	cmd.PersistentFlags().StringVar(&format, "format", "table", "table | json")
	for _, c := range []*cobra.Command{
		newEstimateTrainCmd(&format), newEstimateFitCmd(&format), newEstimateMemoryCmd(&format),
		newEstimateOpCmd(&format), newEstimateThroughputCmd(&format), newEstimateKVCmd(&format),
	} {
		cmd.AddCommand(c)
	}
	return cmd
}

// estimateOut is what each sub-command prints: a JSON object, or a table of
// quantity/value rows followed by explanatory notes.
type estimateOut interface {
	table() (rows [][2]string, notes []string)
}

// printEstimate writes v as one JSON line or as a two-column table.
func printEstimate(w io.Writer, format string, v estimateOut) error {
	if err := checkFinite(v); err != nil {
		return err
	}
	if format == "json" {
		return writeJSONLine(w, v)
	}
	rows, notes := v.table()
	width := 0
	for _, r := range rows {
		width = max(width, len(r[0]))
	}
	for _, r := range rows {
		if _, err := fmt.Fprintf(w, "%-*s  %s\n", width, r[0], r[1]); err != nil {
			return err
		}
	}
	for _, n := range notes {
		if _, err := fmt.Fprintln(w, n); err != nil {
			return err
		}
	}
	return nil
}

func checkFormat(format string) error { return checkChoice("format", format, "table", "json") }

// gpuDevice looks a --gpu value up in the catalog.
func gpuDevice(name string) (workload.Device, error) {
	if name == "" {
		return workload.Device{}, usageErrorf("--gpu: required (valid: %s)", strings.Join(hardware.GPUNames(), ", "))
	}
	if err := checkChoice("gpu", name, hardware.GPUNames()...); err != nil {
		return workload.Device{}, err
	}
	g, err := hardware.LookupGPU(name)
	if err != nil {
		return workload.Device{}, usageErrorf("--gpu: %v", err)
	}
	return workload.DeviceOf(g), nil
}

// dtypeFlag parses a dtype flag value.
func dtypeFlag(flag, v string) (workload.Dtype, error) {
	d, err := workload.ParseDtype(v)
	if err != nil {
		return 0, usageErrorf("--%s: %v", flag, err)
	}
	return d, nil
}

// peakFor is d's dense peak at dt, a usage error when the GPU lacks it.
func peakFor(d workload.Device, dt workload.Dtype, flag string) (float64, error) {
	if p := d.Peak[dt]; p > 0 {
		return float64(p), nil
	}
	var have []string
	for i, p := range d.Peak {
		if p > 0 {
			have = append(have, workload.Dtype(i).String())
		}
	}
	return 0, usageErrorf("--%s: %s has no %s support (valid here: %s)", flag, d.Name, dt, strings.Join(have, ", "))
}

// positive checks that a float flag is a positive finite number.
func positive(flag string, v float64) error {
	if !(v > 0) || math.IsInf(v, 0) {
		return usageErrorf("--%s: %v must be a positive number", flag, v)
	}
	return nil
}

func positiveInt(flag string, v int) error {
	if v <= 0 {
		return usageErrorf("--%s: %d must be positive", flag, v)
	}
	return nil
}

// presetFlag loads a --model preset.
func presetFlag(name string) (workload.Model, error) {
	m, err := workload.Preset(name)
	if err != nil {
		return m, usageErrorf("--model: %v", err)
	}
	return m, nil
}

// fmtBytes prints bytes in decimal units with three significant digits.
func fmtBytes(b float64) string { return numfmt.Bytes(b) }

// fmtSci prints a number with three significant digits and a plain
// exponent: 6.3e24. Only for FLOP counts and rates, which have no unit
// that keeps them short.
func fmtSci(v float64) string {
	s := strconv.FormatFloat(v, 'g', 3, 64)
	mant, exp, ok := strings.Cut(s, "e")
	if !ok {
		return s
	}
	sign := ""
	if exp[0] == '-' {
		sign = "-"
	}
	return mant + "e" + sign + strings.TrimLeft(exp[1:], "0")
}

// fmtDays prints a duration in days with three significant digits.
func fmtDays(s float64) string { return numfmt.Compact(s/86400, 3) + " days" }

// fmtCount prints a parameter count as 70.6B / 125M.
func fmtCount(n float64) string { return numfmt.Count(n) }

// paramsFlags resolves --params / --model into a parameter count (active
// parameters for MoE) and, with --seq, the FLOPs per token.
type paramsFlags struct {
	params float64
	model  string
	seq    int
}

func (p *paramsFlags) add(cmd *cobra.Command) {
	f := cmd.Flags()
	countVar(f, &p.params, "params", "parameter count N (e.g. 70B, 70e9); or use --model")
	f.StringVar(&p.model, "model", "", "model preset instead of --params (its active parameters): "+strings.Join(workload.PresetNames(), ", "))
	f.IntVar(&p.seq, "seq", 0, "with --model: add the attention FLOPs at this sequence length (0: 6·N only)")
}

// flopsPerToken returns N and the training FLOPs per token: 6·N, or with a
// model and --seq the model-FLOPs convention 6·N_matmul + attention.
func (p *paramsFlags) flopsPerToken() (n, perToken float64, err error) {
	switch {
	case p.model != "" && p.params != 0:
		return 0, 0, usageErrorf("--params and --model: give one, not both")
	case p.model != "":
		m, err := presetFlag(p.model)
		if err != nil {
			return 0, 0, err
		}
		if p.seq < 0 {
			return 0, 0, usageErrorf("--seq: %d must not be negative", p.seq)
		}
		n = m.Params().Active
		if p.seq > 0 {
			return n, m.ModelFLOPsPerToken(p.seq), nil
		}
		return n, 6 * n, nil
	case p.seq != 0:
		return 0, 0, usageErrorf("--seq: needs --model (the attention term needs the architecture)")
	}
	if err := positive("params", p.params); err != nil {
		return 0, 0, err
	}
	return p.params, 6 * p.params, nil
}

// ---- train ----

type trainEstimate struct {
	Params               float64 `json:"params"`
	Tokens               float64 `json:"tokens"`
	FLOPsPerToken        float64 `json:"flops_per_token"`
	FLOPs                float64 `json:"flops"`
	GPU                  string  `json:"gpu"`
	GPUs                 int     `json:"gpus"`
	Dtype                string  `json:"dtype"`
	PeakFLOPsPerSPerGPU  float64 `json:"peak_flops_per_s_per_gpu"`
	MFU                  float64 `json:"mfu"`
	FLOPsPerS            float64 `json:"flops_per_s"`
	TimeS                float64 `json:"time_s"`
	Days                 float64 `json:"days"`
	GPUHours             float64 `json:"gpu_hours"`
	FLOPsPerTokenFormula string  `json:"flops_per_token_formula"`
}

func (t trainEstimate) table() ([][2]string, []string) {
	return [][2]string{
			{"FLOPs", fmtSci(t.FLOPs)},
			{"peak per GPU", numfmt.Compact(t.PeakFLOPsPerSPerGPU/1e12, 4) + " TFLOP/s"},
			{"FLOP/s", fmtSci(t.FLOPsPerS)},
			{"time", fmtDays(t.TimeS)},
			{"GPU-hours", numfmt.Grouped(t.GPUHours)},
		}, []string{
			fmt.Sprintf("FLOPs = %s per token × %s tokens; FLOP/s = %s GPUs × %s dense peak × MFU %s",
				t.FLOPsPerTokenFormula, fmtCount(t.Tokens), groupedInt(t.GPUs), t.Dtype, numfmt.Plain(t.MFU)),
		}
}

func newEstimateTrainCmd(format *string) *cobra.Command {
	var (
		pf     paramsFlags
		tokens float64
		gpu    string
		gpus   int
		mfu    float64
		dtype  string
	)
	cmd := &cobra.Command{
		Use:   "train",
		Short: "Training time: FLOPs = 6·N·D over GPUs × peak × MFU",
		Long: `train estimates how long training takes: total FLOPs 6·N·D (N parameters, D
tokens; with --model and --seq the attention term is added), divided by the
FLOP/s the cluster delivers: GPUs × dense peak at --dtype × MFU.`,
		Example: `  simtrain estimate train --params 70e9 --tokens 15e12 --gpu h100-sxm --gpus 1024 --mfu 0.5
  simtrain estimate train --model llama3-405b --seq 8192 --tokens 15.6e12 --gpu h100-sxm --gpus 16384 --mfu 0.4 --format json`,
		Args: noArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if err := checkFormat(*format); err != nil {
				return err
			}
			n, perTok, err := pf.flopsPerToken()
			if err != nil {
				return err
			}
			if err := positive("tokens", tokens); err != nil {
				return err
			}
			if err := positiveInt("gpus", gpus); err != nil {
				return err
			}
			if !(mfu > 0 && mfu <= 1) {
				return usageErrorf("--mfu: %v must be a fraction in (0, 1]", mfu)
			}
			dt, err := dtypeFlag("dtype", dtype)
			if err != nil {
				return err
			}
			dev, err := gpuDevice(gpu)
			if err != nil {
				return err
			}
			peak, err := peakFor(dev, dt, "dtype")
			if err != nil {
				return err
			}
			e := trainEstimate{Params: n, Tokens: tokens, FLOPsPerToken: perTok, FLOPs: perTok * tokens,
				GPU: gpu, GPUs: gpus, Dtype: dt.String(), PeakFLOPsPerSPerGPU: peak, MFU: mfu,
				FLOPsPerTokenFormula: "6·N"}
			if perTok != 6*n {
				e.FLOPsPerTokenFormula = "6·N + attention"
			}
			e.FLOPsPerS = float64(gpus) * peak * mfu
			e.TimeS = e.FLOPs / e.FLOPsPerS
			e.Days = e.TimeS / 86400
			e.GPUHours = e.TimeS * float64(gpus) / 3600
			return printEstimate(cmd.OutOrStdout(), *format, e)
		},
	}
	pf.add(cmd)
	f := cmd.Flags()
	countVar(f, &tokens, "tokens", "training tokens D (e.g. 15T, 15e12)")
	f.StringVar(&gpu, "gpu", "", "GPU catalog name: "+catalogGPUsMark)
	f.IntVar(&gpus, "gpus", 0, "number of GPUs")
	f.Float64Var(&mfu, "mfu", 0, "model FLOPs utilisation, a fraction (e.g. 0.4)")
	f.StringVar(&dtype, "dtype", "bf16", "peak used: "+strings.Join(workload.DtypeNames(), ", "))
	return cmd
}

// ---- model-state flags shared by fit and memory ----

type stateFlags struct {
	bytesPerParam                   float64
	optimizer, precision, master, g string
}

func (s *stateFlags) add(cmd *cobra.Command) {
	f := cmd.Flags()
	f.Float64Var(&s.bytesPerParam, "bytes-per-param", 0, "model-state bytes per parameter (e.g. 12 or 16); 0: from --optimizer/--precision/--master-dtype/--grad-dtype")
	f.StringVar(&s.optimizer, "optimizer", "adamw", strings.Join(workload.OptimizerNames(), " | "))
	f.StringVar(&s.precision, "precision", "bf16", "compute precision (weight copy)")
	f.StringVar(&s.master, "master-dtype", "fp32", "master weights and optimizer states")
	f.StringVar(&s.g, "grad-dtype", "", "gradients (default: --precision; bf16 for fp8)")
}

// resolve returns the bytes per parameter and, when derived, the breakdown.
func (s *stateFlags) resolve(cmd *cobra.Command) (float64, *workload.StateBytes, error) {
	if cmd.Flags().Changed("bytes-per-param") {
		if err := positive("bytes-per-param", s.bytesPerParam); err != nil {
			return 0, nil, err
		}
		return s.bytesPerParam, nil, nil
	}
	if err := checkChoice("optimizer", s.optimizer, workload.OptimizerNames()...); err != nil {
		return 0, nil, err
	}
	prec, err := dtypeFlag("precision", s.precision)
	if err != nil {
		return 0, nil, err
	}
	master, err := dtypeFlag("master-dtype", s.master)
	if err != nil {
		return 0, nil, err
	}
	grad := scenario.DefaultGradDtype(prec)
	if s.g != "" {
		if grad, err = dtypeFlag("grad-dtype", s.g); err != nil {
			return 0, nil, err
		}
	}
	b, err := workload.ModelStateBytes(prec, master, grad, s.optimizer)
	if err != nil {
		return 0, nil, usageErrorf("--optimizer: %v", err)
	}
	return b.Total(), &b, nil
}

// stateBreakdown describes a StateBytes in words.
func stateBreakdown(b *workload.StateBytes, optimizer string) string {
	s := numfmt.Plain(b.Weights) + " weights + " + numfmt.Plain(b.Gradients) + " gradients"
	if b.Master > 0 {
		s += " + " + numfmt.Plain(b.Master) + " master"
	}
	return s + " + " + numfmt.Plain(b.Optimizer) + " " + optimizer + " states"
}

// ---- fit ----

type fitEstimate struct {
	GPU           string  `json:"gpu"`
	GPUs          int     `json:"gpus"`
	HBMBytes      float64 `json:"hbm_bytes"`
	BytesPerParam float64 `json:"bytes_per_param"`
	MaxParams     float64 `json:"max_params"`
	Breakdown     string  `json:"bytes_per_param_breakdown,omitempty"`
	Note          string  `json:"note"`
}

const fitNote = "weights, gradients and optimizer states only, fully sharded over all GPUs (ZeRO-3); activations, buffers and framework overhead excluded"

func (f fitEstimate) table() ([][2]string, []string) {
	var notes []string
	if f.Breakdown != "" {
		notes = append(notes, "bytes per parameter: "+f.Breakdown)
	}
	return [][2]string{
		{"GPUs", fmt.Sprintf("%d × %s", f.GPUs, f.GPU)},
		{"HBM", fmtBytes(f.HBMBytes)},
		{"bytes per parameter", numfmt.Plain(f.BytesPerParam)},
		{"largest model", fmtCount(f.MaxParams) + " parameters"},
	}, append(notes, "note: "+f.Note)
}

func newEstimateFitCmd(format *string) *cobra.Command {
	var (
		sf   stateFlags
		gpu  string
		gpus int
	)
	cmd := &cobra.Command{
		Use:   "fit",
		Short: "Largest model whose weights, gradients and optimizer states fit",
		Long: `fit divides the HBM of --gpus GPUs by the model-state bytes per parameter:
--bytes-per-param, or derived from the optimizer and dtypes (mixed-precision
AdamW: 2 bf16 weights + 2 bf16 gradients + 4 fp32 master + 8 fp32 moments =
16). Activations, communication buffers and framework overhead are excluded,
and the states are assumed fully sharded (ZeRO-3), so this is an upper bound.`,
		Example: `  simtrain estimate fit --gpu h100-sxm --gpus 8
  simtrain estimate fit --gpu h100-sxm --gpus 8 --bytes-per-param 12
  simtrain estimate fit --gpu a100-80gb --gpus 64 --optimizer sgd --format json`,
		Args: noArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if err := checkFormat(*format); err != nil {
				return err
			}
			if err := positiveInt("gpus", gpus); err != nil {
				return err
			}
			bpp, b, err := sf.resolve(cmd)
			if err != nil {
				return err
			}
			dev, err := gpuDevice(gpu)
			if err != nil {
				return err
			}
			e := fitEstimate{GPU: gpu, GPUs: gpus, HBMBytes: float64(gpus) * float64(dev.HBMBytes), BytesPerParam: bpp, Note: fitNote}
			e.MaxParams = e.HBMBytes / bpp
			if b != nil {
				e.Breakdown = stateBreakdown(b, sf.optimizer)
			}
			return printEstimate(cmd.OutOrStdout(), *format, e)
		},
	}
	sf.add(cmd)
	cmd.Flags().StringVar(&gpu, "gpu", "", "GPU catalog name: "+catalogGPUsMark)
	cmd.Flags().IntVar(&gpus, "gpus", 1, "number of GPUs")
	return cmd
}

// ---- memory ----

type memoryEstimate struct {
	Model           string  `json:"model,omitempty"`
	Params          float64 `json:"params"`
	ActiveParams    float64 `json:"active_params"`
	BytesPerParam   float64 `json:"bytes_per_param"`
	ModelStateBytes float64 `json:"model_state_bytes"`
	WeightsBytes    float64 `json:"weights_bytes,omitempty"`
	GradientsBytes  float64 `json:"gradients_bytes,omitempty"`
	OptimizerBytes  float64 `json:"optimizer_bytes,omitempty"`
	Breakdown       string  `json:"bytes_per_param_breakdown,omitempty"`
	Note            string  `json:"note"`
}

func (m memoryEstimate) table() ([][2]string, []string) {
	var r [][2]string
	if m.Model != "" {
		r = append(r, [2]string{"model", m.Model})
	}
	r = append(r, [2]string{"parameters", fmtCount(m.Params)})
	if m.ActiveParams != m.Params {
		r = append(r, [2]string{"active per token", fmtCount(m.ActiveParams)})
	}
	r = append(r, [2]string{"bytes per parameter", numfmt.Plain(m.BytesPerParam)})
	var notes []string
	if m.Breakdown != "" {
		r = append(r,
			[2]string{"weights", fmtBytes(m.WeightsBytes)},
			[2]string{"gradients", fmtBytes(m.GradientsBytes)},
			[2]string{"optimizer", fmtBytes(m.OptimizerBytes)})
		notes = append(notes, "bytes per parameter: "+m.Breakdown)
	}
	return append(r, [2]string{"model states", fmtBytes(m.ModelStateBytes)}), append(notes, "note: "+m.Note)
}

func newEstimateMemoryCmd(format *string) *cobra.Command {
	var (
		sf     stateFlags
		model  string
		params float64
		sets   []string
	)
	cmd := &cobra.Command{
		Use:   "memory (SCENARIO.yaml | --model PRESET | --params N)",
		Short: "Memory per GPU: a scenario's whole peak, or a model's weights, gradients and optimizer states",
		Long: `memory prints the memory per GPU.

With a SCENARIO.yaml it is the whole peak per pipeline stage for the
scenario's layout: weights, gradients, optimizer states, activations (for the
schedule's micro-batches in flight), communication buffers and framework
overhead, against the GPU's capacity.

With --model or --params it is the model-state memory only: parameters ×
bytes per parameter (--bytes-per-param, or derived from the optimizer and
dtypes; mixed-precision AdamW is 16); activations depend on a layout, which
these flags do not give. A preset reports its exact total and active
parameter counts.`,
		Example: `  simtrain estimate memory --params 6.7e9 --bytes-per-param 16
  simtrain estimate memory --model mixtral-8x7b
  simtrain estimate memory --model llama3-70b --optimizer sgd --format json
  simtrain estimate memory scenarios/llama3-70b-1024-h100-3d.yaml   # with activations`,
		Args: cobra.MaximumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := checkFormat(*format); err != nil {
				return err
			}
			if len(args) == 1 {
				if model != "" || cmd.Flags().Changed("params") {
					return usageErrorf("estimate memory: give a SCENARIO.yaml or --model/--params, not both")
				}
				overrides, err := parseSets(sets)
				if err != nil {
					return err
				}
				return scenarioMemory(cmd.OutOrStdout(), *format, args[0], overrides)
			}
			if len(sets) > 0 {
				return usageErrorf("--set: applies to a SCENARIO.yaml; with --model/--params use their own flags")
			}
			e := memoryEstimate{Note: "model states only; activations depend on the layout (simtrain run reports them per rank)"}
			switch {
			case model != "" && cmd.Flags().Changed("params"):
				return usageErrorf("--params and --model: give one, not both")
			case model != "":
				m, err := presetFlag(model)
				if err != nil {
					return err
				}
				p := m.Params()
				e.Model, e.Params, e.ActiveParams = m.Name, p.Total, p.Active
			case cmd.Flags().Changed("params"):
				if err := positive("params", params); err != nil {
					return err
				}
				e.Params, e.ActiveParams = params, params
			default:
				return usageErrorf("--model or --params: one is required (or a SCENARIO.yaml)")
			}
			bpp, b, err := sf.resolve(cmd)
			if err != nil {
				return err
			}
			e.BytesPerParam = bpp
			e.ModelStateBytes = e.Params * bpp
			if b != nil {
				e.Breakdown = stateBreakdown(b, sf.optimizer)
				e.WeightsBytes = e.Params * b.Weights
				e.GradientsBytes = e.Params * b.Gradients
				e.OptimizerBytes = e.Params * (b.Master + b.Optimizer)
			}
			return printEstimate(cmd.OutOrStdout(), *format, e)
		},
	}
	sf.add(cmd)
	cmd.Flags().StringVar(&model, "model", "", "model preset: "+strings.Join(workload.PresetNames(), ", "))
	countVar(cmd.Flags(), &params, "params", "parameter count (e.g. 6.7B, 6.7e9)")
	cmd.Flags().StringArrayVar(&sets, "set", nil, "with a SCENARIO.yaml: "+setHelp)
	return cmd
}

// scenarioMemoryEstimate is the per-rank memory of a scenario's layout.
type scenarioMemoryEstimate struct {
	Scenario        string            `json:"scenario"`
	Params          float64           `json:"params"`
	ActiveParams    float64           `json:"active_params"`
	ModelStateBytes float64           `json:"model_state_bytes"`
	PeakMemBytes    float64           `json:"peak_mem_bytes"`
	CapacityBytes   float64           `json:"capacity_bytes"`
	Fits            bool              `json:"fits"`
	Stages          []stageMemoryJSON `json:"stages"`
	Note            string            `json:"note"`
}

type stageMemoryJSON struct {
	Stage            int     `json:"stage"`
	WeightsBytes     float64 `json:"weights_bytes"`
	GradientsBytes   float64 `json:"gradients_bytes"`
	OptimizerBytes   float64 `json:"optimizer_bytes"`
	ActivationsBytes float64 `json:"activations_bytes"`
	BuffersBytes     float64 `json:"buffers_bytes"`
	OverheadBytes    float64 `json:"overhead_bytes"`
	TotalBytes       float64 `json:"total_bytes"`
	Fits             bool    `json:"fits"`
	// CapacityBytes is the stage's own GPUs' capacity on a heterogeneous
	// cluster (cluster.node_groups), absent otherwise.
	CapacityBytes float64 `json:"capacity_bytes,omitempty"`
}

func (m scenarioMemoryEstimate) table() ([][2]string, []string) {
	r := [][2]string{{"scenario", m.Scenario}, {"parameters", fmtCount(m.Params)}}
	if m.ActiveParams != m.Params {
		r = append(r, [2]string{"active per token", fmtCount(m.ActiveParams)})
	}
	for _, st := range m.Stages {
		fit := "fits"
		if !st.Fits {
			fit = "DOES NOT FIT"
		}
		if st.CapacityBytes > 0 {
			fit += " in " + fmtBytes(st.CapacityBytes)
		}
		r = append(r, [2]string{fmt.Sprintf("stage %d per rank", st.Stage), fmt.Sprintf(
			"%s total (weights %s, grads %s, optimizer %s, activations %s, buffers %s, overhead %s) %s",
			fmtBytes(st.TotalBytes), fmtBytes(st.WeightsBytes), fmtBytes(st.GradientsBytes), fmtBytes(st.OptimizerBytes),
			fmtBytes(st.ActivationsBytes), fmtBytes(st.BuffersBytes), fmtBytes(st.OverheadBytes), fit)})
	}
	peak := fmt.Sprintf("%s of %s", fmtBytes(m.PeakMemBytes), fmtBytes(m.CapacityBytes))
	if len(m.Stages) > 0 && m.Stages[0].CapacityBytes > 0 {
		peak += " (the smallest GPU's; each stage is checked against its own GPUs above)"
	}
	r = append(r, [2]string{"peak per rank", peak})
	return r, []string{"note: " + m.Note}
}

// scenarioMemory prints the accounting model's per-rank memory for a
// scenario's layout (every rank of a pipeline stage holds the same).
func scenarioMemory(w io.Writer, format, path string, overrides []scenario.Override) error {
	s, err := scenario.Load(path, overrides...)
	if err != nil {
		return usageErrorf("%v", err)
	}
	stages, fits := s.MemoryPerStage()
	p := s.Arch().Params()
	e := scenarioMemoryEstimate{Scenario: s.Name, Params: p.Total, ActiveParams: p.Active,
		CapacityBytes: s.MemCapacityBytes(), Fits: fits,
		Note: "model_state_bytes sums weights, gradients and optimizer states over one rank of every pipeline stage; activations follow Korthikanti et al. for the schedule's micro-batches in flight"}
	for _, st := range stages {
		e.ModelStateBytes += st.Weights + st.Gradients + st.Optimizer
		e.PeakMemBytes = max(e.PeakMemBytes, st.Total)
		e.Stages = append(e.Stages, stageMemoryJSON{Stage: st.Stage, WeightsBytes: st.Weights, GradientsBytes: st.Gradients,
			OptimizerBytes: st.Optimizer, ActivationsBytes: st.Activations, BuffersBytes: st.Buffers,
			OverheadBytes: st.Overhead, TotalBytes: st.Total, Fits: st.Fits})
		if s.Heterogeneous() {
			e.Stages[len(e.Stages)-1].CapacityBytes = s.StageCapacityBytes(st.Stage)
		}
	}
	return printEstimate(w, format, e)
}

// ---- op ----

type opEstimate struct {
	Kind                 string  `json:"kind"`
	M                    int     `json:"m,omitempty"`
	N                    int     `json:"n"`
	K                    int     `json:"k,omitempty"`
	Dtype                string  `json:"dtype"`
	GPU                  string  `json:"gpu"`
	FLOPs                float64 `json:"flops"`
	Bytes                float64 `json:"bytes"`
	ArithmeticIntensity  float64 `json:"arithmetic_intensity"`
	AcceleratorIntensity float64 `json:"accelerator_intensity"`
	Bound                string  `json:"bound"`
	TimeS                float64 `json:"time_s"`
	ModeledTimeS         float64 `json:"modeled_time_s"`
}

func (o opEstimate) table() ([][2]string, []string) {
	shape := fmt.Sprintf("n=%d", o.N)
	if o.M > 0 {
		shape = fmt.Sprintf("m=%d n=%d k=%d", o.M, o.N, o.K)
	}
	return [][2]string{
			{"kernel", fmt.Sprintf("%s %s %s", o.Kind, shape, o.Dtype)},
			{"FLOPs", fmtSci(o.FLOPs)},
			{"bytes", fmtBytes(o.Bytes)},
			{"arithmetic intensity", numfmt.Compact(o.ArithmeticIntensity, 4) + " FLOP/byte"},
			{"accelerator intensity", numfmt.Compact(o.AcceleratorIntensity, 4) + " FLOP/byte"},
			{"bound", o.Bound},
			{"roofline time", numfmt.Seconds4(o.TimeS)},
			{"modeled time", numfmt.Seconds4(o.ModeledTimeS)},
		}, []string{
			fmt.Sprintf("accelerator intensity = %s %s dense peak / HBM bandwidth; roofline time = max(FLOPs/peak, bytes/bandwidth);", o.GPU, o.Dtype),
			"modeled time = what the simulator charges (measured GEMM/STREAM efficiencies + per-kernel overhead)",
		}
}

func newEstimateOpCmd(format *string) *cobra.Command {
	var (
		kind, dtype, gpu string
		m, n, k          int
	)
	cmd := &cobra.Command{
		Use:   "op",
		Short: "Roofline of one kernel: FLOPs, bytes, intensity, bound, time",
		Long: `op prices one textbook kernel on a GPU's roofline. Arithmetic intensity is
FLOPs / HBM bytes (every operand read and every result written once); the
accelerator intensity is the dense peak at --dtype over the HBM bandwidth. A
kernel below it is memory-bound. The roofline time is max(FLOPs/peak,
bytes/bandwidth); the modeled time is what the simulator charges (measured
GEMM, attention and STREAM efficiencies plus the per-kernel overhead).
relu, gelu, layernorm, softmax: --n elements; dot: two --n vectors; matvec:
an --m×--k matrix times a vector; matmul: --m×--k times --k×--n (--m, --k
default to --n).`,
		Example: `  simtrain estimate op --kind relu --n 1048576 --dtype bf16 --gpu h100-sxm
  simtrain estimate op --kind matmul --n 1024 --dtype bf16 --gpu h100-sxm
  simtrain estimate op --kind matmul --m 8192 --n 28672 --k 8192 --dtype fp8 --gpu h100-sxm --format json`,
		Args: noArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if err := checkFormat(*format); err != nil {
				return err
			}
			if kind == "" {
				return usageErrorf("--kind: required (valid: %s)", strings.Join(workload.KernelKinds(), ", "))
			}
			if err := checkChoice("kind", kind, workload.KernelKinds()...); err != nil {
				return err
			}
			if err := positiveInt("n", n); err != nil {
				return err
			}
			for _, c := range []struct {
				flag string
				v    int
			}{{"m", m}, {"k", k}} {
				if cmd.Flags().Changed(c.flag) {
					if err := positiveInt(c.flag, c.v); err != nil {
						return err
					}
				}
			}
			dt, err := dtypeFlag("dtype", dtype)
			if err != nil {
				return err
			}
			dev, err := gpuDevice(gpu)
			if err != nil {
				return err
			}
			peak, err := peakFor(dev, dt, "dtype")
			if err != nil {
				return err
			}
			op, err := workload.KernelOp(kind, m, n, k, dt)
			if err != nil {
				return usageErrorf("--%v", err)
			}
			e := opEstimate{Kind: kind, N: n, Dtype: dt.String(), GPU: gpu, FLOPs: op.FLOPs, Bytes: op.Bytes()}
			if kind == "matmul" || kind == "matvec" {
				e.M, e.K = max(m, 0), max(k, 0)
				if e.M == 0 {
					e.M = n
				}
				if e.K == 0 {
					e.K = n
				}
			}
			e.ArithmeticIntensity = op.FLOPs / op.Bytes()
			e.AcceleratorIntensity = peak / float64(dev.HBMBandwidth)
			e.Bound = "compute"
			if e.ArithmeticIntensity < e.AcceleratorIntensity {
				e.Bound = "memory"
			}
			e.TimeS = max(op.FLOPs/peak, op.Bytes()/float64(dev.HBMBandwidth))
			e.ModeledTimeS = dev.OpTime(op, dt)
			return printEstimate(cmd.OutOrStdout(), *format, e)
		},
	}
	f := cmd.Flags()
	f.StringVar(&kind, "kind", "", strings.Join(workload.KernelKinds(), " | "))
	f.IntVar(&n, "n", 0, "elements, vector length, or the matmul's N")
	f.IntVar(&m, "m", 0, "matvec/matmul rows (default --n)")
	f.IntVar(&k, "k", 0, "matvec/matmul inner dimension (default --n)")
	f.StringVar(&dtype, "dtype", "bf16", strings.Join(workload.DtypeNames(), ", "))
	f.StringVar(&gpu, "gpu", "", "GPU catalog name: "+catalogGPUsMark)
	return cmd
}

// ---- throughput ----

type throughputEstimate struct {
	Params              float64 `json:"params"`
	FLOPsPerToken       float64 `json:"flops_per_token"`
	TokensPerSPerGPU    float64 `json:"tokens_per_s_per_gpu"`
	GPU                 string  `json:"gpu"`
	GPUs                int     `json:"gpus"`
	Dtype               string  `json:"dtype"`
	PeakFLOPsPerSPerGPU float64 `json:"peak_flops_per_s_per_gpu"`
	TFLOPsPerGPU        float64 `json:"tflops_per_gpu"`
	MFU                 float64 `json:"mfu"`
	TokensPerS          float64 `json:"tokens_per_s"`
	Tokens              float64 `json:"tokens,omitempty"`
	TimeS               float64 `json:"time_s,omitempty"`
	Days                float64 `json:"days,omitempty"`
}

func (t throughputEstimate) table() ([][2]string, []string) {
	r := [][2]string{
		{"FLOPs per token", fmtSci(t.FLOPsPerToken)},
		{"model TFLOP/s per GPU", numfmt.Compact(t.TFLOPsPerGPU, 4)},
		{"MFU", numfmt.Pct(t.MFU)},
		{"cluster tokens/s", numfmt.Grouped(t.TokensPerS)},
	}
	if t.Tokens > 0 {
		r = append(r, [2]string{"time", fmtDays(t.TimeS)})
	}
	return r, []string{fmt.Sprintf("MFU = FLOPs per token × %s tokens/s / %s TFLOP/s (%s %s dense peak); %s GPUs",
		numfmt.Compact(t.TokensPerSPerGPU, 6), numfmt.Compact(t.PeakFLOPsPerSPerGPU/1e12, 4), t.GPU, t.Dtype, groupedInt(t.GPUs))}
}

func newEstimateThroughputCmd(format *string) *cobra.Command {
	var (
		pf         paramsFlags
		tps, tok   float64
		gpu, dtype string
		gpus       int
	)
	cmd := &cobra.Command{
		Use:   "throughput",
		Short: "MFU and training time from a measured tokens/s per GPU",
		Long: `throughput turns a measured training throughput into MFU: 6·N FLOPs per token
(with --model and --seq, plus attention) × tokens/s per GPU over the GPU's
dense peak at --dtype. With --tokens and --gpus it also gives the days the
run takes.`,
		Example: `  simtrain estimate throughput --params 65.2e9 --tokens-per-s-per-gpu 380 --gpu a100-80gb --gpus 2048 --tokens 1.4e12
  simtrain estimate throughput --model llama3-8b --seq 8192 --tokens-per-s-per-gpu 5000 --gpu h100-sxm --format json`,
		Args: noArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if err := checkFormat(*format); err != nil {
				return err
			}
			n, perTok, err := pf.flopsPerToken()
			if err != nil {
				return err
			}
			if err := positive("tokens-per-s-per-gpu", tps); err != nil {
				return err
			}
			if err := positiveInt("gpus", gpus); err != nil {
				return err
			}
			if cmd.Flags().Changed("tokens") {
				if err := positive("tokens", tok); err != nil {
					return err
				}
			}
			dt, err := dtypeFlag("dtype", dtype)
			if err != nil {
				return err
			}
			dev, err := gpuDevice(gpu)
			if err != nil {
				return err
			}
			peak, err := peakFor(dev, dt, "dtype")
			if err != nil {
				return err
			}
			e := throughputEstimate{Params: n, FLOPsPerToken: perTok, TokensPerSPerGPU: tps, GPU: gpu, GPUs: gpus,
				Dtype: dt.String(), PeakFLOPsPerSPerGPU: peak, Tokens: tok}
			e.TFLOPsPerGPU = perTok * tps / 1e12
			e.MFU = perTok * tps / peak
			e.TokensPerS = tps * float64(gpus)
			if tok > 0 {
				e.TimeS = tok / e.TokensPerS
				e.Days = e.TimeS / 86400
			}
			return printEstimate(cmd.OutOrStdout(), *format, e)
		},
	}
	pf.add(cmd)
	f := cmd.Flags()
	f.Float64Var(&tps, "tokens-per-s-per-gpu", 0, "measured training tokens per second per GPU")
	f.StringVar(&gpu, "gpu", "", "GPU catalog name: "+catalogGPUsMark)
	f.IntVar(&gpus, "gpus", 1, "number of GPUs")
	countVar(f, &tok, "tokens", "training tokens, for the run time (optional; e.g. 2T)")
	f.StringVar(&dtype, "dtype", "bf16", "peak used: "+strings.Join(workload.DtypeNames(), ", "))
	return cmd
}

// ---- kv ----

type kvEstimate struct {
	Model                 string  `json:"model"`
	Seq                   int     `json:"seq"`
	Batch                 int     `json:"batch"`
	Dtype                 string  `json:"dtype"`
	KVBytesPerToken       float64 `json:"kv_bytes_per_token"`
	KVCacheBytes          float64 `json:"kv_cache_bytes"`
	WeightBytes           float64 `json:"weight_bytes"`
	GPU                   string  `json:"gpu,omitempty"`
	HBMBytes              float64 `json:"hbm_bytes,omitempty"`
	Fits                  *bool   `json:"fits,omitempty"`
	DecodeBytesPerStep    float64 `json:"decode_bytes_per_step,omitempty"`
	TokensPerS            float64 `json:"tokens_per_s,omitempty"`
	TokensPerSWeightsOnly float64 `json:"tokens_per_s_weights_only,omitempty"`
}

func (k kvEstimate) table() ([][2]string, []string) {
	r := [][2]string{
		{"KV per token", fmtBytes(k.KVBytesPerToken)},
		{"KV cache", fmtBytes(k.KVCacheBytes)},
		{"weights", fmtBytes(k.WeightBytes)},
	}
	notes := []string{fmt.Sprintf("%s at %s, %d tokens × %d sequences", k.Model, k.Dtype, k.Seq, k.Batch)}
	if k.GPU != "" {
		fit := "yes"
		if !*k.Fits {
			fit = "no"
		}
		r = append(r, [2]string{"HBM (" + k.GPU + ")", fmtBytes(k.HBMBytes)}, [2]string{"weights + KV fit", fit})
	}
	if k.TokensPerS > 0 {
		r = append(r,
			[2]string{"read per decode step", fmtBytes(k.DecodeBytesPerStep)},
			[2]string{"decode tokens/s", numfmt.Compact(k.TokensPerS, 3)},
			[2]string{"weights only", numfmt.Compact(k.TokensPerSWeightsOnly, 3)})
		notes = append(notes, "decode tokens/s: upper bound, every step reads the weights and KV cache at the spec HBM bandwidth")
	}
	return r, notes
}

func newEstimateKVCmd(format *string) *cobra.Command {
	var (
		model, dtype, gpu string
		seq, batch        int
		decode            bool
	)
	cmd := &cobra.Command{
		Use:   "kv",
		Short: "KV-cache size, and the memory-bound decode speed",
		Long: `kv sizes the inference key/value cache: 2 × layers × kv_heads × head_dim
values per token (MLA: the compressed latent and rope key) × --seq × --batch.
With --gpu it says whether weights and cache fit one GPU; with --decode the
upper bound on decode speed when every step reads the weights (the input
embedding table aside; for MoE the experts the batch reaches) and the KV
cache from HBM at the spec bandwidth and compute is free.`,
		Example: `  simtrain estimate kv --model llama3-70b --seq 8192 --batch 1 --dtype bf16
  simtrain estimate kv --model llama3-70b --seq 8192 --dtype fp16 --decode --gpu h100-sxm
  simtrain estimate kv --model deepseek-v3 --seq 32768 --batch 8 --format json`,
		Args: noArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if err := checkFormat(*format); err != nil {
				return err
			}
			if model == "" {
				return usageErrorf("--model: required (valid: %s)", strings.Join(workload.PresetNames(), ", "))
			}
			m, err := presetFlag(model)
			if err != nil {
				return err
			}
			if err := positiveInt("seq", seq); err != nil {
				return err
			}
			if err := positiveInt("batch", batch); err != nil {
				return err
			}
			dt, err := dtypeFlag("dtype", dtype)
			if err != nil {
				return err
			}
			if decode && gpu == "" {
				return usageErrorf("--decode: needs --gpu (the bound is the GPU's HBM bandwidth)")
			}
			e := kvEstimate{Model: m.Name, Seq: seq, Batch: batch, Dtype: dt.String(),
				KVBytesPerToken: m.KVCacheBytesPerToken(dt), WeightBytes: m.Params().Total * dt.Bytes()}
			e.KVCacheBytes = e.KVBytesPerToken * float64(seq) * float64(batch)
			if gpu != "" {
				dev, err := gpuDevice(gpu)
				if err != nil {
					return err
				}
				fits := e.WeightBytes+e.KVCacheBytes <= float64(dev.HBMBytes)
				e.GPU, e.HBMBytes, e.Fits = gpu, float64(dev.HBMBytes), &fits
				if decode {
					d := m.DecodeBound(seq, batch, dt, float64(dev.HBMBandwidth))
					e.DecodeBytesPerStep = d.WeightBytes + d.KVBytes
					e.TokensPerS, e.TokensPerSWeightsOnly = d.TokensPerS, d.WeightsOnlyTokensPerS
				}
			}
			return printEstimate(cmd.OutOrStdout(), *format, e)
		},
	}
	f := cmd.Flags()
	f.StringVar(&model, "model", "", "model preset: "+strings.Join(workload.PresetNames(), ", "))
	f.IntVar(&seq, "seq", 0, "context length in tokens")
	f.IntVar(&batch, "batch", 1, "sequences")
	f.StringVar(&dtype, "dtype", "bf16", "weights and cache: "+strings.Join(workload.DtypeNames(), ", "))
	f.StringVar(&gpu, "gpu", "", "GPU catalog name (optional): "+catalogGPUsMark)
	f.BoolVar(&decode, "decode", false, "also give the HBM-bandwidth bound on decode tokens/s (needs --gpu)")
	return cmd
}
