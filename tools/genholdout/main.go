// Command genholdout regenerates scenarios/holdout/ from NVIDIA
// Megatron-Bridge's published performance tables, transcribed cell by cell
// into scenarios/holdout/megatron-bridge.csv: one scenario file with an
// expect: block per row that can be simulated, and SKIPPED.md listing the
// other rows with the reason.
//
//	go run ./tools/genholdout            # from the repository root
//	go run ./tools/genholdout -check     # fail if the files on disk differ
//
// The set is a holdout: no simtrain parameter was fitted on it, and the
// translation rules below were written before the set was validated and are
// not to be changed in view of its errors.
// A row becomes a scenario only through what its table states plus a short
// list of assumptions, the same for every row, each written into the
// scenario's header comment and into expect.notes. Nothing here looks at the
// measured figure except to copy it into expect:.
package main

import (
	"bytes"
	"encoding/csv"
	"errors"
	"fmt"
	"io"
	"regexp"
	"slices"
	"strconv"
	"strings"

	"github.com/simtrain/simtrain/sim/hardware"
	"github.com/simtrain/simtrain/sim/workload"
	"github.com/simtrain/simtrain/tools/internal/genfiles"
	"github.com/simtrain/simtrain/tools/internal/scenfile"
)

func main() {
	genfiles.Main("genholdout", "scenarios/holdout/megatron-bridge.csv", "scenarios/holdout", "the transcribed Megatron-Bridge performance tables", generatedName, generateFiles)
}

// generatedName matches the files this program owns in the output directory:
// mb, the release's four digits, then the rest of the name. SKIPPED.md is
// owned too; nothing else there is touched.
var generatedName = regexp.MustCompile(`^mb[0-9]{4}-[a-z0-9.-]+\.yaml$`)

// releaseRE matches a NeMo container release, YY.MM.
var releaseRE = regexp.MustCompile(`^[0-9]{2}\.[0-9]{2}$`)

// run regenerates (or with check verifies) out from the CSV file in.
func run(in, out string, check bool, log io.Writer) error {
	return genfiles.Run("genholdout", in, out, check, log, generatedName, generateFiles)
}

// generateFiles is the genfiles.Generator of this program: every scenario
// and SKIPPED.md.
var generateFiles = genfiles.FromRows(readRows, generate, skippedMarkdown)

// columns is the CSV header, in order.
var columns = []string{"release", "system", "model", "variant", "gpus", "precision", "gbs", "mbs", "seq",
	"fsdp", "tp", "pp", "cp", "vp", "ep", "ga", "tokens_per_s_per_gpu", "model_tflops_per_gpu",
	"routing", "mtp", "source", "notes"}

// row is one table cell of tokens/s/GPU with its row's configuration, as
// transcribed. vp and ep are 0 where the table writes "n/a"; ga is 0 where the
// table has no GA column (26.02).
type row struct {
	line int // line in the CSV; the header is line 1

	release, system, model string
	variant                string // "" for the cell itself, "paren" for its parenthesised value
	precision              string // as the table writes it; "unstated" where it has no precision column

	gpus, gbs, mbs, seq         int
	fsdp, tp, pp, cp, vp, ep    int
	ga                          int
	tokens, tflops              float64
	routing, mtp, source, notes string
}

func readRows(r io.Reader) ([]row, error) {
	recs, err := csv.NewReader(r).ReadAll()
	if err != nil {
		return nil, err
	}
	if len(recs) == 0 {
		return nil, errors.New("empty file")
	}
	if !slices.Equal(recs[0], columns) {
		return nil, fmt.Errorf("unexpected header %v (want %v)", recs[0], columns)
	}
	out := make([]row, 0, len(recs)-1)
	for i, rec := range recs[1:] {
		line := i + 2
		c := func(k string) string { return strings.TrimSpace(rec[slices.Index(columns, k)]) }
		var perr error
		num := func(k string, naOK, emptyOK bool, min int) int {
			v := c(k)
			if (naOK && v == "n/a") || (emptyOK && v == "") {
				return 0
			}
			n, err := strconv.Atoi(v)
			if err != nil || n < min {
				if perr == nil {
					perr = fmt.Errorf("line %d: column %s: %q is not an integer >= %d", line, k, v, min)
				}
			}
			return n
		}
		flt := func(k string) float64 {
			v, err := strconv.ParseFloat(c(k), 64)
			if (err != nil || v <= 0) && perr == nil {
				perr = fmt.Errorf("line %d: column %s: %q is not a positive number", line, k, c(k))
			}
			return v
		}
		rw := row{
			line: line, release: c("release"), system: c("system"), model: c("model"),
			variant: c("variant"), precision: c("precision"),
			gpus: num("gpus", false, false, 1), gbs: num("gbs", false, false, 1), mbs: num("mbs", false, false, 1),
			seq: num("seq", false, false, 1), fsdp: num("fsdp", false, false, 0),
			tp: num("tp", false, false, 1), pp: num("pp", false, false, 1), cp: num("cp", false, false, 1),
			vp: num("vp", true, false, 1), ep: num("ep", true, false, 1), ga: num("ga", false, true, 1),
			tokens: flt("tokens_per_s_per_gpu"), tflops: flt("model_tflops_per_gpu"),
			routing: c("routing"), mtp: c("mtp"), source: c("source"), notes: c("notes"),
		}
		if perr != nil {
			return nil, perr
		}
		if rw.variant != "" && rw.variant != "paren" {
			return nil, fmt.Errorf("line %d: column variant: %q is not one of \"\", paren", line, rw.variant)
		}
		if !releaseRE.MatchString(rw.release) {
			return nil, fmt.Errorf("line %d: column release: %q is not YY.MM", line, rw.release)
		}
		out = append(out, rw)
	}
	return out, nil
}

// skip is a row left out, with the reasons.
type skip struct {
	r      row
	reason string
}

// generate translates every row; a name used twice is an error (the names
// must identify rows).
func generate(rows []row) (map[string][]byte, []skip, error) {
	files := map[string][]byte{}
	var skipped []skip
	for _, r := range rows {
		sc, reasons := translate(r)
		if len(reasons) > 0 {
			skipped = append(skipped, skip{r, strings.Join(reasons, "; ")})
			continue
		}
		n := sc.Name + ".yaml"
		if _, dup := files[n]; dup {
			return nil, nil, fmt.Errorf("line %d: scenario name %s is used by an earlier row", r.line, sc.Name)
		}
		files[n] = sc.YAML()
	}
	return files, skipped, nil
}

func skippedMarkdown(rows, simulated int, sk []skip) []byte {
	var b bytes.Buffer
	b.WriteString("# Megatron-Bridge rows not simulated\n\n")
	b.WriteString("Generated by `go run ./tools/genholdout` from `megatron-bridge.csv`; do not edit.\n")
	fmt.Fprintf(&b, "%d of %d rows are simulated (one scenario file each); the %d below are not, for the reason given.\n",
		simulated, rows, len(sk))
	b.WriteString("Line numbers are those of `megatron-bridge.csv` (the header is line 1).\n\n")
	b.WriteString("| line | release | system | model | precision | GPUs | tokens/s/GPU | reason |\n|---:|---|---|---|---|---:|---:|---|\n")
	for _, s := range sk {
		prec := s.r.precision
		if s.r.variant != "" {
			prec += " (" + s.r.variant + ")"
		}
		fmt.Fprintf(&b, "| %d | %s | %s | %s | %s | %d | %s | %s |\n", s.r.line, s.r.release, s.r.system, s.r.model,
			prec, s.r.gpus, strconv.FormatFloat(s.r.tokens, 'g', -1, 64), s.reason)
	}
	return b.Bytes()
}

// ---------------------------------------------------------------------------
// Translation.

// presets maps the tables' model names to simtrain catalog presets.
var presets = map[string]string{
	"LLAMA3_8B":       "llama3-8b",
	"LLAMA3_70B":      "llama3-70b",
	"LLAMA3.1_405B":   "llama3-405b",
	"Qwen3_30B_a3B":   "qwen3-30b-a3b",
	"Qwen3_235B_a22B": "qwen3-235b-a22b",
	"DeepSeekV3":      "deepseek-v3",
	"GPT OSS 120B":    "gpt-oss-120b",
}

// system is how a table's system is written as a cluster.
type system struct {
	gpu         string
	gpusPerNode int
	nic         string // "" = no network block (the catalog default)
	nicsPerNode int
	network     string // the assumption, in words
}

// systems: DGX H100/B200/B300 are 8-GPU servers; GB200/GB300 NVL72 compute
// trays hold 4 GPUs (18 trays per NVLink rack). The tables do not state the
// scale-out network; each choice is an assumption written into the notes.
var systems = map[string]system{
	"DGX-H100": {"h100-sxm", 8, "ib-ndr-400", 8,
		"scale-out network not stated: 8 x 400G NDR InfiniBand per DGX H100 (one ConnectX-7 per GPU)"},
	"DGX-B200": {"b200", 8, "ib-ndr-400", 8,
		"scale-out network not stated: 8 x 400G NDR InfiniBand per DGX B200 (one ConnectX-7 per GPU)"},
	"DGX-B300": {"b300", 8, "ib-xdr-800", 8,
		"scale-out network not stated: 8 x 800G per DGX B300 (one ConnectX-8 per GPU)"},
	"DGX-GB200": {"gb200", 4, "", 0,
		"scale-out network not stated: the catalog default for gb200 (400G NDR, one NIC per GPU)"},
	"DGX-GB300": {"gb300", 4, "ib-xdr-800", 4,
		"scale-out network not stated: one 800G ConnectX-8 per GB300 (the tray's NICs)"},
}

// Facts shared by every scenario, with their sources.
const (
	// teAttentionFact: Megatron-Core runs Transformer Engine's
	// DotProductAttention, which selects cuDNN fused attention first on
	// Hopper (attention.py since TE v1.4) and Blackwell (TE docs
	// attention.ipynb) — as tools/genvalidation states it.
	teAttentionFact = "Attention: Transformer Engine selects cuDNN fused attention first on sm90/sm100 (attention.py since TE v1.4; TE docs attention.ipynb), written as attention_kernel: cudnn."
	// gradFact: Megatron-Bridge's bf16_mixed() sets grad_reduce_in_fp32
	// and its FP8 configs start from bf16_mixed().
	gradFact = "Gradients reduced in fp32: Megatron-Bridge's bf16_mixed() sets grad_reduce_in_fp32=True and its FP8 configs build on it (src/megatron/bridge/training/mixed_precision.py @ v0.2.0 7af9601, v0.3.0 21b02e0), written as grad_dtype: fp32."
	// csFact: the performance scripts map compute_dtype fp8_cs to
	// bf16_with_fp8_current_scaling_mixed(), whose fp8_recipe is Megatron's
	// "tensorwise", which Megatron-Core runs as Transformer Engine's
	// Float8CurrentScaling: simtrain's "current" recipe. (The first
	// translation wrote simtrain's "tensorwise", which prices torchao's
	// recipe, by name; corrected in round 5, see the README.)
	csFact = "FP8 current scaling: the performance scripts' fp8_cs is bf16_with_fp8_current_scaling_mixed(), fp8_recipe \"tensorwise\" (scripts/performance/utils/helpers.py @ v0.2.0, utils/precision.py @ v0.3.0; training/mixed_precision.py), which Megatron-Core runs as Transformer Engine's Float8CurrentScaling (megatron/core/fp8_utils.py), written as fp8_recipe: current."
	// fp8Is26CS: the 26.02 tables write "FP8" next to MXFP8 and NVFP4;
	// Megatron-Bridge v0.3.0 (the 26.02 release, 2026-02-26) defines only
	// FP8_CS presets (no FP8_SC) for Llama 3, Llama 3.1 and Qwen3 on H100,
	// GB200 and GB300 (scripts/performance/configs/{llama,qwen}/*.py).
	fp8Is26CS = "26.02's \"FP8\" is FP8 current scaling: Megatron-Bridge v0.3.0 (21b02e0, the 26.02 release) defines only FP8_CS presets, no FP8_SC, for Llama 3, Llama 3.1 and Qwen3 on H100, GB200 and GB300 (scripts/performance/configs/{llama,qwen}/*_workload_base_configs.py)."
	// mxFact: fp8_mx is bf16_with_mxfp8_mixed(), fp8_recipe "mxfp8".
	mxFact = "MXFP8: the performance scripts' fp8_mx is bf16_with_mxfp8_mixed(), fp8_recipe \"mxfp8\" (same files), written as fp8_recipe: mxfp8."
	// paramGatherFact: both FP8 mixed-precision configs set
	// fp8_param_gather = True and the performance scripts do not reset it.
	// csBF16Fact: the current-scaling config keeps the first and last
	// transformer layers in BF16.
	csBF16Fact      = "The current-scaling config keeps the first and last transformer layers in BF16 (first_last_layers_bf16 = True, num_layers_at_start_in_bf16 = num_layers_at_end_in_bf16 = 1, training/mixed_precision.py @ v0.2.0 and v0.3.0), written as bf16_layers_at_start/_at_end: 1."
	paramGatherFact = "Both FP8 mixed-precision configs set fp8_param_gather = True (training/mixed_precision.py @ v0.2.0 and v0.3.0; the performance scripts do not override it), written as fp8_param_gather: true."
)

// translate turns one row into a scenario, or returns every reason it cannot
// be simulated (in a fixed order: model, MTP, precision, layout).
func translate(r row) (*scen, []string) {
	var why []string
	preset, known := presets[r.model]
	if !known {
		why = append(why, fmt.Sprintf("model %s has no simtrain preset", r.model))
	}
	s := &scen{Scenario: scenfile.Scenario{Preset: preset, Metric: "tokens_per_s_per_gpu"}}
	if preset == "deepseek-v3" {
		switch r.mtp {
		case "w/o":
		case "w/":
			// DeepSeek-V3's one MTP module (config.json num_nextn_predict_layers: 1)
			s.MTPLayers = 1
		default:
			why = append(why, "MTP not stated")
		}
	}
	switch r.precision {
	case "BF16":
		s.Precision = "bf16"
	case "FP8-CS":
		s.Precision, s.FP8Recipe, s.FP8ParamGather = "fp8", "current", true
		s.BF16AtStart, s.BF16AtEnd = 1, 1
		s.Facts = append(s.Facts, csFact, paramGatherFact, csBF16Fact)
	case "FP8":
		s.Precision, s.FP8Recipe, s.FP8ParamGather = "fp8", "current", true
		s.BF16AtStart, s.BF16AtEnd = 1, 1
		s.Facts = append(s.Facts, fp8Is26CS, csFact, paramGatherFact, csBF16Fact)
	case "FP8-MX", "MXFP8":
		s.Precision, s.FP8Recipe, s.FP8ParamGather = "fp8", "mxfp8", true
		s.Facts = append(s.Facts, mxFact, paramGatherFact)
	case "NVFP4":
		why = append(why, "NVFP4 training is not modelled")
	case "unstated":
		why = append(why, "precision not stated (the 25.09 tables have no precision column and the text does not give it)")
	default:
		why = append(why, fmt.Sprintf("precision %q not recognised", r.precision))
	}
	sys, ok := systems[r.system]
	if !ok {
		why = append(why, fmt.Sprintf("system %s is not in the catalog", r.system))
	}
	var m workload.Model
	if known {
		var err error
		if m, err = workload.Preset(preset); err != nil {
			why = append(why, err.Error())
			known = false
		}
	}
	if r.gpus%(r.tp*r.pp*r.cp) != 0 {
		why = append(why, fmt.Sprintf("%d GPUs do not split into TP %d x PP %d x CP %d", r.gpus, r.tp, r.pp, r.cp))
		return nil, why
	}
	dp := r.gpus / (r.tp * r.pp * r.cp)
	vp := max(r.vp, 1)
	split := evenSplit
	var first int
	if known && r.pp > 1 {
		split, first = pipelineSplit(m.Layers, r.pp, vp)
		if split == noSplit {
			if preset == "deepseek-v3" {
				why = append(why, fmt.Sprintf("pipeline layout not stated: Megatron-Bridge's DeepSeek-V3 recipes use a custom pipeline layout the table does not give, and %d layers + embedding + loss = %d slots do not divide over PP %d x VP %d", m.Layers, m.Layers+2, r.pp, vp))
			} else {
				why = append(why, fmt.Sprintf("pipeline split not stated: %d layers, nor %d layers + embedding + loss, divide over PP %d x VP %d", m.Layers, m.Layers+2, r.pp, vp))
			}
		}
	}
	moe := known && m.MoE != nil
	fold := moe && r.ep > dp*r.cp
	if fold && (r.tp*dp*r.cp)%r.ep != 0 {
		// MoE parallel folding places EP groups over a stage's TP x DP x CP
		// ranks; with TP 1 that is DP x CP, which EP already exceeds.
		why = append(why, fmt.Sprintf("EP %d does not divide the %d GPUs of a pipeline stage (TP %d x DP %d x CP %d)", r.ep, r.tp*dp*r.cp, r.tp, dp, r.cp))
	}
	if ok && r.gpus%sys.gpusPerNode != 0 {
		why = append(why, fmt.Sprintf("%d GPUs is not a whole number of %d-GPU nodes", r.gpus, sys.gpusPerNode))
	}
	if len(why) > 0 {
		return nil, why
	}

	// Identity and provenance.
	s.Name = fmt.Sprintf("mb%s-%s-%s-%s-%d", strings.ReplaceAll(r.release, ".", ""),
		scenfile.Slug(strings.TrimPrefix(r.system, "DGX-")), preset, scenfile.Slug(r.precision), r.gpus)
	if r.variant != "" {
		s.Name += "-" + r.variant
	}
	cell := ""
	if r.variant == "paren" {
		cell = ", parenthesised cell"
	}
	s.Description = fmt.Sprintf("%s on %d %s GPUs, %s%s, as published (Megatron-Bridge %s performance summary)",
		r.model, r.gpus, strings.TrimPrefix(r.system, "DGX-"), r.precision, cell, r.release)
	s.Header = []string{
		fmt.Sprintf("Published run: megatron-bridge.csv line %d (%s NeMo container, %s, %s, %s, %d GPUs%s).",
			r.line, r.release, r.system, r.model, r.precision, r.gpus, cell),
		"Source: " + r.source,
		fmt.Sprintf("Measured: %s tokens/s/GPU (the table's Model TFLOP/s/GPU: %s)",
			strconv.FormatFloat(r.tokens, 'g', -1, 64), strconv.FormatFloat(r.tflops, 'g', -1, 64)),
	}
	if r.notes != "" {
		s.Header = append(s.Header, "Transcription note: "+r.notes)
	}
	s.Header = append(s.Header,
		"Holdout: no simtrain parameter was fitted on these rows (scenarios/holdout/README.md).",
		"Generated by `go run ./tools/genholdout`; edit the generator, not this file.")
	s.Source, s.Group = expectSource(r), "megatron-bridge-"+r.release
	s.Value = r.tokens

	// Configuration the table states.
	stated := fmt.Sprintf("Configuration from the source: %s, %d GPUs, %s, GBS %d, MBS %d, sequence %d, FSDP %d, TP %d, PP %d, CP %d, VP %s, EP %s",
		r.system, r.gpus, r.precision, r.gbs, r.mbs, r.seq, r.fsdp, r.tp, r.pp, r.cp, na(r.vp), na(r.ep))
	if r.ga > 0 {
		stated += fmt.Sprintf(", GA %d", r.ga)
	}
	s.Facts = append([]string{stated + "."}, s.Facts...)
	s.Seq, s.GlobalBatch, s.MicroBatch = r.seq, r.gbs, r.mbs
	s.GradDtype = "fp32"
	s.Facts = append(s.Facts, gradFact)
	s.AttnKernel = "cudnn"
	s.Facts = append(s.Facts, teAttentionFact)
	if r.ga > 0 && r.ga*r.mbs*dp != r.gbs {
		s.Assume("the table's GA %d disagrees with GBS / (MBS x DP) = %d / (%d x %d) = %d: GBS and MBS used as stated",
			r.ga, r.gbs, r.mbs, dp, r.gbs/(r.mbs*dp))
	}

	// Cluster.
	s.GPU, s.Nodes, s.GPUsPerNode = sys.gpu, r.gpus/sys.gpusPerNode, sys.gpusPerNode
	s.NIC, s.NICsPerNode = sys.nic, sys.nicsPerNode
	if g, err := hardware.LookupGPU(sys.gpu); err == nil && g.DomainGPUs > g.DefaultGPUsPerNode {
		// simtrain spreads a rack-scale cluster evenly over the fewest
		// NVL72 racks that hold it (sim/topology: ceil(trays/18) racks of
		// equal tray counts).
		trays := s.Nodes
		rackTrays := g.DomainGPUs / g.DefaultGPUsPerNode
		racks := (trays + rackTrays - 1) / rackTrays
		if racks > 1 {
			s.Facts = append(s.Facts, fmt.Sprintf("NVL72 racks: %d GPUs in %d racks of %d (the cluster builder's even split of partial racks).",
				r.gpus, racks, (trays+racks-1)/racks*g.DefaultGPUsPerNode))
		}
	}
	s.Assume("%s", sys.network)

	// Parallelism.
	s.TP, s.PP, s.CP = r.tp, r.pp, r.cp
	if r.ep > 1 {
		s.EP = r.ep
	}
	if r.tp > 1 {
		s.SP = true
		s.Assume("sequence parallelism not stated: on with TP > 1, as Megatron performance recipes run TP")
	}
	if r.fsdp > 0 {
		s.Zero = 3
		s.Facts = append(s.Facts, fmt.Sprintf("FSDP %d: Megatron-FSDP sharding over GPUs / (TP x PP) (the tables' nomenclature), written as zero: 3.", r.fsdp))
	} else {
		s.Zero = 1
		s.Assume("FSDP 0 (DDP): Megatron's distributed optimizer assumed (zero: 1)")
	}
	if r.pp > 1 {
		if vp > 1 {
			s.Schedule, s.Virtual = "interleaved", vp
			s.Facts = append(s.Facts, fmt.Sprintf("VP %d: Megatron's interleaved 1F1B schedule with %d virtual stages per pipeline rank.", vp, vp))
		} else {
			s.Schedule = "1f1b"
			s.Facts = append(s.Facts, "PP without VP: Megatron's non-interleaved 1F1B schedule.")
		}
		switch split {
		case evenSplit:
			s.Facts = append(s.Facts, fmt.Sprintf("Pipeline: %d layers split evenly over PP %d x VP %d (%d per virtual stage).", m.Layers, r.pp, vp, m.Layers/(r.pp*vp)))
		case embeddingSplit:
			s.First, s.Last = first, first
			per := (m.Layers + 2) / (r.pp * vp)
			s.Assume("pipeline split not stated: Megatron's account-for-embedding-and-loss split, %d layers + embedding + loss = %d slots, %d per virtual stage, so %d layers on the first and last rank",
				m.Layers, m.Layers+2, per, first)
		}
	} else if vp > 1 {
		s.Assume("VP %d without pipeline parallelism has no effect: no virtual stages", vp)
	}
	if fold {
		s.ExpertTP = 1
		s.Assume("expert tensor parallelism not stated: ETP 1 with MoE parallel folding (EP %d x ETP 1 over TP %d x DP %d x CP %d), as the Megatron MoE recipes run", r.ep, r.tp, dp, r.cp)
	}
	s.Overlap = []kv{{K: "grad_reduce", V: true}, {K: "param_gather", V: true}}
	if r.tp > 1 {
		s.Overlap = append(s.Overlap, kv{K: "tp_comm", V: true})
	}
	s.Overlap = append(s.Overlap, kv{K: "p2p", V: true})
	over := "gradient-reduce, parameter-gather and pipeline send/receive overlap not stated: on"
	if r.tp > 1 {
		over = "gradient-reduce, parameter-gather, TP-communication and pipeline send/receive overlap not stated: on"
	}
	s.Assume("%s", over)
	s.Assume("activation recomputation not stated: none")

	// MoE routing.
	if moe {
		switch r.routing {
		case "tokendrop":
			s.Dropless = bp(false)
			s.Facts = append(s.Facts, "Routing: token dropping (the row's \"(tokendrop)\"), written as model.moe.dropless: false.")
			s.Assume("capacity factor and router balance not stated for token dropping: capacity factor 1.0, balanced routing (simtrain's defaults)")
		default:
			s.Facts = append(s.Facts, "Routing: token-dropless with a force-balanced token distribution (the section's footnote): model.moe.dropless true (the default), balanced experts.")
		}
		s.Assume("EP dispatcher, EP overlap and CUDA graphs not stated: defaults (NCCL all-to-all, no overlap, no graphs)")
	} else {
		s.Assume("CUDA graphs not stated: none")
	}
	return s, nil
}

// Pipeline splits.
const (
	evenSplit      = iota // layers % (pp·vp) == 0
	embeddingSplit        // (layers+2) % (pp·vp) == 0: embedding and loss take a layer slot each
	noSplit               // neither
)

// pipelineSplit returns how layers split over pp ranks of vp virtual stages
// and, for the embedding split, the layers on the first (= last) rank.
//
// Megatron-Core's account_for_embedding_in_pipeline_split and
// account_for_loss_in_pipeline_split count the embedding and the loss as one
// layer slot each: with layers+2 = pp·vp·per slots, every virtual stage holds
// per slots, so the first and the last rank hold per·vp − 1 transformer
// layers. Example: 94 layers, pp 8, vp 4: 96 slots, per 3, 11 layers on the
// first and last rank (as the Megatron-LM Qwen3-235B recipe,
// scenarios/validation r024).
func pipelineSplit(layers, pp, vp int) (kind, first int) {
	stages := pp * vp
	switch {
	case layers%stages == 0:
		return evenSplit, 0
	case (layers+2)%stages == 0:
		per := (layers + 2) / stages
		return embeddingSplit, per*vp - 1
	}
	return noSplit, 0
}

// expectSource is "<path> @ <short commit>, <release> NeMo container, <table>"
// from the row's source column ("owner/repo path@commit; ...").
func expectSource(r row) string {
	var docs []string
	for i, part := range strings.Split(r.source, ";") {
		part = strings.TrimSpace(part)
		if j := strings.IndexByte(part, ' '); j >= 0 {
			part = part[j+1:] // drop the repository
		}
		path, commit, _ := strings.Cut(part, "@")
		if len(commit) > 7 {
			commit = commit[:7]
		}
		d := path + " @ " + commit
		if i > 0 {
			d = "also " + d
		}
		docs = append(docs, d)
	}
	src := "NVIDIA-NeMo/Megatron-Bridge " + docs[0]
	if len(docs) > 1 {
		src += " (" + strings.Join(docs[1:], ", ") + ")"
	}
	// The 26.02 section has one table per model with a System column; the
	// earlier sections one table per system.
	table := "System: " + r.system + " table"
	if r.release == "26.02" {
		table = "Model: " + r.model + " table, " + r.system + " row"
	}
	if r.variant == "paren" {
		table += ", parenthesised value"
	}
	return fmt.Sprintf("%s, %s NeMo container, %s", src, r.release, table)
}

// na writes a 0 (the table's "n/a") back as n/a.
func na(v int) string {
	if v == 0 {
		return "n/a"
	}
	return strconv.Itoa(v)
}

// ---------------------------------------------------------------------------
// Scenario rendering.

// scen is a scenario file under construction (scenfile.Scenario).
type scen struct{ scenfile.Scenario }

// kv is one parallel.overlap entry.
type kv = scenfile.KV

func bp(b bool) *bool { return scenfile.BP(b) }
