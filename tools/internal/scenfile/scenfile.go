// Package scenfile renders the scenario files the generators under tools/
// write (scenarios/validation, scenarios/holdout): one struct for the part of
// a scenario a generator sets, and one YAML layout, so that every generated
// file reads the same way.
package scenfile

import (
	"bytes"
	"fmt"
	"strconv"
	"strings"
)

// Scenario is the part of a scenario file a generator writes. Zero values
// are left out of the YAML so that the simulator's documented defaults
// apply.
type Scenario struct {
	Name, Description string
	Header            []string // comment lines: provenance
	Facts             []string // comment lines: configuration taken from the source

	Preset                                     string
	Layers, Hidden, Heads, KVHeads, FFN, Vocab int
	Activation, Norm                           string
	Tied                                       *bool // model.tied_embeddings; nil = the preset's
	Dropless                                   *bool // model.moe.dropless; nil = default (true)
	MTPLayers                                  int   // model.mtp_layers; 0 = none (not written)

	Seq, GlobalBatch, MicroBatch int
	Precision, GradDtype         string
	StateDtype                   string // training.optimizer_state_dtype; empty = master_dtype
	Recompute                    string
	RecomputeModules             []string // training.recompute_modules; nil = default (core_attn)
	RecomputeEvery               int      // training.recompute_every; 0 = every layer
	OffloadModules               []string // training.offload_modules; nil = none
	OffloadOptimizer             bool     // training.offload_optimizer
	Flash                        *bool    // training.flash_attention; nil = default (true)
	FusedLoss                    *bool    // training.fused_loss; nil = default (true)
	CrossEntropy                 string   // training.cross_entropy; empty = default (fused, or fused_loss)
	Compile                      *bool    // training.compile; nil = default (true)
	FusedNorm                    *bool    // training.fused_norm; nil = default (compile)
	AttnKernel                   string   // training.attention_kernel; empty = default (auto)
	AttnUnpad                    bool     // training.attention_unpad
	AttnRepeatKV                 bool     // training.attention_repeat_kv
	FP8Recipe                    string   // training.fp8_recipe; empty = default (tensorwise with fp8)
	FP8ParamGather               bool     // training.fp8_param_gather
	BF16AtStart, BF16AtEnd       int      // training.bf16_layers_at_start/_at_end; 0 = none
	CUDAGraphs                   string   // training.cuda_graphs; empty = default (none)

	GPU                string
	Nodes, GPUsPerNode int
	NetKind, NIC       string
	NICsPerNode        int

	TP, PP, DP, CP, EP int
	ExpertTP           int // parallel.expert_tp; 0 = tp (not written)
	SP                 bool
	Zero               int
	Schedule           string
	Virtual            int
	First, Last        int
	TPImpl             string // parallel.tp_impl; empty = default (megatron)
	CPImpl             string // parallel.cp_impl; empty = default (allgather)
	EPBackend          string // parallel.ep_backend; empty = default (nccl)
	EPSMs              int    // parallel.ep_sms; 0 = the backend's default
	Overlap            []KV   // parallel.overlap entries, in order

	Metric string // expect key: step_time_s | tokens_per_s_per_gpu | mfu | tflops_per_gpu
	Value  float64
	// PeakMemGiB is the source's peak memory per GPU in GiB (2^30 bytes),
	// written as expect.peak_memory_gib; 0 = not published.
	PeakMemGiB float64
	Source     string
	Convention string // flops_convention; empty = default (model)
	Attention  string // attention_flops; empty = default (full)
	Group      string
	Notes      []string // assumptions, joined into expect.notes
}

// KV is one parallel.overlap entry.
type KV struct {
	K string
	V bool
}

// BP returns a pointer to b, for the optional boolean fields.
func BP(b bool) *bool { return &b }

// Assume records an assumption: it is listed in the header and joined into
// expect.notes.
func (s *Scenario) Assume(format string, args ...any) {
	s.Notes = append(s.Notes, fmt.Sprintf(format, args...))
}

// YAML renders the scenario: the header, facts and assumptions as comment
// lines, then the model, training, cluster, parallel and expect sections.
// Strings that may hold YAML syntax are double-quoted with Go escaping,
// which is valid YAML for the printable ASCII and UTF-8 text used here.
func (s *Scenario) YAML() []byte {
	var b bytes.Buffer
	lines := append([]string(nil), s.Header...)
	if len(s.Facts) > 0 {
		lines = append(lines, "")
		lines = append(lines, s.Facts...)
	}
	if len(s.Notes) > 0 {
		lines = append(lines, "", "Assumptions (not stated by the source):")
		for _, n := range s.Notes {
			lines = append(lines, "- "+n)
		}
	}
	for _, h := range lines {
		if h == "" {
			b.WriteString("#\n")
			continue
		}
		fmt.Fprintf(&b, "# %s\n", h)
	}
	fmt.Fprintf(&b, "name: %s\n", s.Name)
	if s.Description != "" {
		fmt.Fprintf(&b, "description: %s\n", Quote(s.Description))
	}
	str := func(k, v string) {
		if v != "" {
			fmt.Fprintf(&b, "  %s: %s\n", k, v)
		}
	}
	num := func(k string, v int) {
		if v != 0 {
			fmt.Fprintf(&b, "  %s: %d\n", k, v)
		}
	}
	flag := func(k string, v *bool) {
		if v != nil {
			fmt.Fprintf(&b, "  %s: %t\n", k, *v)
		}
	}

	b.WriteString("\nmodel:\n")
	str("preset", s.Preset)
	num("layers", s.Layers)
	num("hidden", s.Hidden)
	num("heads", s.Heads)
	num("kv_heads", s.KVHeads)
	num("ffn", s.FFN)
	num("vocab", s.Vocab)
	str("activation", s.Activation)
	str("norm", s.Norm)
	flag("tied_embeddings", s.Tied)
	num("mtp_layers", s.MTPLayers)
	if s.Dropless != nil {
		fmt.Fprintf(&b, "  moe:\n    dropless: %t\n", *s.Dropless)
	}

	b.WriteString("\ntraining:\n")
	num("seq_len", s.Seq)
	num("global_batch", s.GlobalBatch)
	num("micro_batch", s.MicroBatch)
	str("precision", s.Precision)
	str("fp8_recipe", s.FP8Recipe)
	if s.FP8ParamGather {
		b.WriteString("  fp8_param_gather: true\n")
	}
	num("bf16_layers_at_start", s.BF16AtStart)
	num("bf16_layers_at_end", s.BF16AtEnd)
	str("grad_dtype", s.GradDtype)
	str("optimizer_state_dtype", s.StateDtype)
	str("recompute", s.Recompute)
	if len(s.RecomputeModules) > 0 {
		fmt.Fprintf(&b, "  recompute_modules: [%s]\n", strings.Join(s.RecomputeModules, ", "))
	}
	if s.RecomputeEvery > 0 {
		fmt.Fprintf(&b, "  recompute_every: %d\n", s.RecomputeEvery)
	}
	if len(s.OffloadModules) > 0 {
		fmt.Fprintf(&b, "  offload_modules: [%s]\n", strings.Join(s.OffloadModules, ", "))
	}
	if s.OffloadOptimizer {
		b.WriteString("  offload_optimizer: true\n")
	}
	flag("flash_attention", s.Flash)
	flag("fused_loss", s.FusedLoss)
	str("cross_entropy", s.CrossEntropy)
	flag("compile", s.Compile)
	flag("fused_norm", s.FusedNorm)
	str("attention_kernel", s.AttnKernel)
	if s.AttnUnpad {
		b.WriteString("  attention_unpad: true\n")
	}
	if s.AttnRepeatKV {
		b.WriteString("  attention_repeat_kv: true\n")
	}
	str("cuda_graphs", s.CUDAGraphs)

	b.WriteString("\ncluster:\n")
	str("gpu", s.GPU)
	num("nodes", s.Nodes)
	num("gpus_per_node", s.GPUsPerNode)
	if s.NetKind != "" || s.NIC != "" || s.NICsPerNode != 0 {
		b.WriteString("  network:\n")
		if s.NetKind != "" {
			fmt.Fprintf(&b, "    kind: %s\n", s.NetKind)
		}
		if s.NIC != "" {
			fmt.Fprintf(&b, "    nic: %s\n", s.NIC)
		}
		if s.NICsPerNode != 0 {
			fmt.Fprintf(&b, "    nics_per_node: %d\n", s.NICsPerNode)
		}
	}

	b.WriteString("\nparallel:\n")
	num("tp", s.TP)
	num("pp", s.PP)
	num("dp", s.DP)
	num("cp", s.CP)
	num("ep", s.EP)
	num("expert_tp", s.ExpertTP)
	if s.SP {
		b.WriteString("  sp: true\n")
	}
	num("zero", s.Zero)
	str("schedule", s.Schedule)
	str("tp_impl", s.TPImpl)
	str("cp_impl", s.CPImpl)
	str("ep_backend", s.EPBackend)
	num("ep_sms", s.EPSMs)
	num("virtual_stages", s.Virtual)
	num("first_stage_layers", s.First)
	num("last_stage_layers", s.Last)
	if len(s.Overlap) > 0 {
		b.WriteString("  overlap:\n")
		for _, o := range s.Overlap {
			fmt.Fprintf(&b, "    %s: %t\n", o.K, o.V)
		}
	}

	b.WriteString("\nexpect:\n")
	fmt.Fprintf(&b, "  %s: %s\n", s.Metric, strconv.FormatFloat(s.Value, 'g', -1, 64))
	if s.PeakMemGiB > 0 {
		fmt.Fprintf(&b, "  peak_memory_gib: %s\n", strconv.FormatFloat(s.PeakMemGiB, 'g', -1, 64))
	}
	fmt.Fprintf(&b, "  source: %s\n", Quote(s.Source))
	str("flops_convention", s.Convention)
	str("attention_flops", s.Attention)
	fmt.Fprintf(&b, "  group: %s\n", s.Group)
	if len(s.Notes) > 0 {
		fmt.Fprintf(&b, "  notes: %s\n", Quote(strings.Join(s.Notes, "; ")))
	}
	return b.Bytes()
}

// Quote quotes a string for YAML (a JSON string is a YAML double-quoted
// scalar).
func Quote(s string) string { return strconv.Quote(s) }

// Slug makes a file-name fragment of s: lower case letters, digits and '.',
// with one '-' for every run of other characters, none at either end.
func Slug(s string) string {
	var b strings.Builder
	dash := false
	for _, c := range strings.ToLower(s) {
		switch {
		case c >= 'a' && c <= 'z', c >= '0' && c <= '9', c == '.':
			b.WriteRune(c)
			dash = false
		default:
			if !dash && b.Len() > 0 {
				b.WriteByte('-')
				dash = true
			}
		}
	}
	return strings.TrimSuffix(b.String(), "-")
}
