package main

import (
	"bytes"
	"fmt"
	"strconv"
	"strings"
)

// scen is the part of a scenario file the generator writes. Zero values are
// left out of the YAML so that the simulator's documented defaults apply.
type scen struct {
	name, description string
	header            []string // comment lines: provenance
	facts             []string // comment lines: configuration taken from the source

	preset                                     string
	layers, hidden, heads, kvHeads, ffn, vocab int
	activation, norm                           string
	tied                                       *bool

	seq, globalBatch, microBatch int
	precision, gradDtype         string
	recompute                    string
	recomputeModules             []string // training.recompute_modules; nil = default (core_attn)
	flash                        *bool    // training.flash_attention; nil = default (true)
	fusedLoss                    *bool    // training.fused_loss; nil = default (true)
	crossEntropy                 string   // training.cross_entropy; empty = default (fused, or fused_loss)
	compile                      *bool    // training.compile; nil = default (true)
	fusedNorm                    *bool    // training.fused_norm; nil = default (compile)
	attnKernel                   string   // training.attention_kernel; empty = default (auto)
	attnUnpad                    bool     // training.attention_unpad
	fp8Recipe                    string   // training.fp8_recipe; empty = default (tensorwise with fp8)
	cudaGraphs                   string   // training.cuda_graphs; empty = default (none)

	gpu                string
	nodes, gpusPerNode int
	netKind, nic       string
	nicsPerNode        int

	tp, pp, dp, cp, ep int
	expertTP           int // parallel.expert_tp; 0 = tp (not written)
	sp                 bool
	zero               int
	schedule           string
	virtual            int
	first, last        int
	tpImpl             string // parallel.tp_impl; empty = default (megatron)
	epBackend          string // parallel.ep_backend; empty = default (nccl)
	epSMs              int    // parallel.ep_sms; 0 = the backend's default
	overlap            []kv   // parallel.overlap entries, in order

	metric     string // expect key: step_time_s | tokens_per_s_per_gpu | mfu | tflops_per_gpu
	value      float64
	source     string
	convention string // flops_convention; empty = default (model)
	attention  string // attention_flops; empty = default (full)
	group      string
	notes      []string // assumptions, joined into expect.notes
}

type kv struct {
	k string
	v bool
}

func bp(b bool) *bool { return &b }

// yaml renders the scenario. Strings are double-quoted with Go escaping,
// which is valid YAML for the printable ASCII and UTF-8 text used here.
func (s *scen) yaml() []byte {
	var b bytes.Buffer
	lines := append([]string(nil), s.header...)
	if len(s.facts) > 0 {
		lines = append(lines, "")
		lines = append(lines, s.facts...)
	}
	if len(s.notes) > 0 {
		lines = append(lines, "", "Assumptions (not stated by the source):")
		for _, n := range s.notes {
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
	fmt.Fprintf(&b, "name: %s\n", s.name)
	if s.description != "" {
		fmt.Fprintf(&b, "description: %s\n", q(s.description))
	}
	b.WriteString("\nmodel:\n")
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
	str("preset", s.preset)
	num("layers", s.layers)
	num("hidden", s.hidden)
	num("heads", s.heads)
	num("kv_heads", s.kvHeads)
	num("ffn", s.ffn)
	num("vocab", s.vocab)
	str("activation", s.activation)
	str("norm", s.norm)
	if s.tied != nil {
		fmt.Fprintf(&b, "  tied_embeddings: %t\n", *s.tied)
	}

	b.WriteString("\ntraining:\n")
	num("seq_len", s.seq)
	num("global_batch", s.globalBatch)
	num("micro_batch", s.microBatch)
	str("precision", s.precision)
	str("fp8_recipe", s.fp8Recipe)
	str("grad_dtype", s.gradDtype)
	str("recompute", s.recompute)
	if len(s.recomputeModules) > 0 {
		fmt.Fprintf(&b, "  recompute_modules: [%s]\n", strings.Join(s.recomputeModules, ", "))
	}
	if s.flash != nil {
		fmt.Fprintf(&b, "  flash_attention: %t\n", *s.flash)
	}
	if s.fusedLoss != nil {
		fmt.Fprintf(&b, "  fused_loss: %t\n", *s.fusedLoss)
	}
	str("cross_entropy", s.crossEntropy)
	if s.compile != nil {
		fmt.Fprintf(&b, "  compile: %t\n", *s.compile)
	}
	if s.fusedNorm != nil {
		fmt.Fprintf(&b, "  fused_norm: %t\n", *s.fusedNorm)
	}
	str("attention_kernel", s.attnKernel)
	if s.attnUnpad {
		b.WriteString("  attention_unpad: true\n")
	}
	str("cuda_graphs", s.cudaGraphs)

	b.WriteString("\ncluster:\n")
	str("gpu", s.gpu)
	num("nodes", s.nodes)
	num("gpus_per_node", s.gpusPerNode)
	if s.netKind != "" || s.nic != "" || s.nicsPerNode != 0 {
		b.WriteString("  network:\n")
		if s.netKind != "" {
			fmt.Fprintf(&b, "    kind: %s\n", s.netKind)
		}
		if s.nic != "" {
			fmt.Fprintf(&b, "    nic: %s\n", s.nic)
		}
		if s.nicsPerNode != 0 {
			fmt.Fprintf(&b, "    nics_per_node: %d\n", s.nicsPerNode)
		}
	}

	b.WriteString("\nparallel:\n")
	num("tp", s.tp)
	num("pp", s.pp)
	num("dp", s.dp)
	num("cp", s.cp)
	num("ep", s.ep)
	num("expert_tp", s.expertTP)
	if s.sp {
		b.WriteString("  sp: true\n")
	}
	num("zero", s.zero)
	str("schedule", s.schedule)
	str("tp_impl", s.tpImpl)
	str("ep_backend", s.epBackend)
	num("ep_sms", s.epSMs)
	num("virtual_stages", s.virtual)
	num("first_stage_layers", s.first)
	num("last_stage_layers", s.last)
	if len(s.overlap) > 0 {
		b.WriteString("  overlap:\n")
		for _, o := range s.overlap {
			fmt.Fprintf(&b, "    %s: %t\n", o.k, o.v)
		}
	}

	b.WriteString("\nexpect:\n")
	fmt.Fprintf(&b, "  %s: %s\n", s.metric, strconv.FormatFloat(s.value, 'g', -1, 64))
	fmt.Fprintf(&b, "  source: %s\n", q(s.source))
	if s.convention != "" {
		fmt.Fprintf(&b, "  flops_convention: %s\n", s.convention)
	}
	if s.attention != "" {
		fmt.Fprintf(&b, "  attention_flops: %s\n", s.attention)
	}
	fmt.Fprintf(&b, "  group: %s\n", s.group)
	if len(s.notes) > 0 {
		fmt.Fprintf(&b, "  notes: %s\n", q(strings.Join(s.notes, "; ")))
	}
	return b.Bytes()
}

// q quotes a string for YAML (a JSON string is a YAML double-quoted scalar).
func q(s string) string { return strconv.Quote(s) }
