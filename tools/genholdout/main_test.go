package main

import (
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/simtrain/simtrain/sim"
)

const (
	csvPath = "../../scenarios/holdout/megatron-bridge.csv"
	outDir  = "../../scenarios/holdout"
)

func loadRows(t *testing.T) []row {
	t.Helper()
	f, err := os.Open(csvPath)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	rows, err := readRows(f)
	if err != nil {
		t.Fatal(err)
	}
	return rows
}

// find returns the one row with these key fields.
func find(t *testing.T, rows []row, release, system, model, precision, variant string) row {
	t.Helper()
	var got []row
	for _, r := range rows {
		if r.release == release && r.system == system && r.model == model && r.precision == precision && r.variant == variant {
			got = append(got, r)
		}
	}
	if len(got) != 1 {
		t.Fatalf("%d rows for %s %s %s %s %q, want 1", len(got), release, system, model, precision, variant)
	}
	return got[0]
}

// TestCommittedScenariosAreGenerated: scenarios/holdout holds exactly what
// the generator writes from the committed CSV.
func TestCommittedScenariosAreGenerated(t *testing.T) {
	if err := run(csvPath, outDir, true, io.Discard); err != nil {
		t.Fatal(err)
	}
}

// TestTranscription checks the CSV against itself where the tables carry
// redundant numbers: the row count per section, the gradient accumulation
// GA = GBS / (MBS × DP) with DP = GPUs / (TP × PP × CP) (except the cells
// whose note says the table disagrees), and the model FLOPs per token,
// Model TFLOP/s ÷ tokens/s, which depends only on the model, the sequence
// and (DeepSeek-V3) the MTP layer: every row within 1% of its group's
// first row (the TFLOP/s cells are rounded to integers: 0.5/118 = 0.4% at
// worst).
func TestTranscription(t *testing.T) {
	rows := loadRows(t)
	perRelease := map[string]int{}
	for _, r := range rows {
		perRelease[r.release]++
	}
	// 26.02: 7 + 7 + 4 + 5 + 5 + 5 rows; 25.11: 8 + 8 + 6 + 6 rows plus
	// the 4 parenthesised FP8-MX cells; 25.09: 6 + 5 + 6 rows plus 10
	// parenthesised tokens/s cells.
	for rel, want := range map[string]int{"26.02": 33, "25.11": 32, "25.09": 27} {
		if perRelease[rel] != want {
			t.Errorf("release %s: %d rows, want %d", rel, perRelease[rel], want)
		}
	}
	if len(rows) != 92 {
		t.Errorf("%d rows, want 92", len(rows))
	}
	ref := map[string]float64{}
	for _, r := range rows {
		dp := r.gpus / (r.tp * r.pp * r.cp)
		if r.ga > 0 && r.ga*r.mbs*dp != r.gbs && !strings.Contains(r.notes, "GA ") {
			t.Errorf("line %d: GA %d but GBS %d / (MBS %d x DP %d) = %d", r.line, r.ga, r.gbs, r.mbs, dp, r.gbs/(r.mbs*dp))
		}
		key := fmt.Sprintf("%s/%d/%s", r.model, r.seq, r.mtp)
		ratio := r.tflops / r.tokens
		if first, ok := ref[key]; !ok {
			ref[key] = ratio
		} else if math.Abs(ratio/first-1) > 0.01 {
			t.Errorf("line %d: %s TFLOP/s per token/s %.5f, group %s has %.5f", r.line, r.model, ratio, key, first)
		}
		for _, src := range strings.Split(r.source, ";") {
			src = strings.TrimSpace(src)
			if src != "NVIDIA-NeMo/Megatron-Bridge docs/performance-summary-archive.md@0a25f911b2ed6c6905a539504fdb8e5b40e3438b" &&
				src != "NVIDIA-NeMo/Megatron-Bridge docs/performance-summary.md@00b7660be0254ac6f95f44164ddd0c3e9cc798ed" {
				t.Errorf("line %d: unknown source %q", r.line, src)
			}
		}
	}
}

// TestGeneratedScenariosParse: every generated file is a valid scenario with
// an expect: block, every row is either a scenario or a skip with a reason.
func TestGeneratedScenariosParse(t *testing.T) {
	rows := loadRows(t)
	files, skipped, err := generate(rows)
	if err != nil {
		t.Fatal(err)
	}
	if len(files)+len(skipped) != len(rows) {
		t.Errorf("%d scenarios + %d skipped for %d rows", len(files), len(skipped), len(rows))
	}
	for name, doc := range files {
		if !generatedName.MatchString(name) {
			t.Errorf("%s: not a name the generator owns", name)
		}
		s, err := sim.Parse(doc)
		if err != nil {
			t.Errorf("%s: %v", name, err)
			continue
		}
		if s.Expect == nil || s.Name+".yaml" != name || !strings.HasPrefix(s.Expect.Group, "megatron-bridge-") || s.Expect.Source == "" {
			t.Errorf("%s: name %q, expect %+v", name, s.Name, s.Expect)
		}
		if _, err := s.MeasuredStepTimeS(); err != nil {
			t.Errorf("%s: %v", name, err)
		}
	}
	for _, s := range skipped {
		if s.reason == "" {
			t.Errorf("line %d skipped without a reason", s.r.line)
		}
	}
}

// TestPipelineSplit: Megatron's account-for-embedding-and-loss split, by
// hand: layers + 2 slots over pp·vp virtual stages of per slots; the first
// and last rank hold per·vp − 1 layers.
func TestPipelineSplit(t *testing.T) {
	for _, c := range []struct {
		layers, pp, vp int
		kind, first    int
	}{
		{80, 8, 5, evenSplit, 0},        // Llama 3 70B: 80 / 40 = 2 per virtual stage
		{48, 2, 24, evenSplit, 0},       // Qwen3-30B: 48 / 48 = 1
		{94, 8, 4, embeddingSplit, 11},  // 96 / 32 = 3; 3·4 − 1
		{94, 4, 12, embeddingSplit, 23}, // 96 / 48 = 2; 2·12 − 1
		{94, 8, 3, embeddingSplit, 11},  // 96 / 24 = 4; 4·3 − 1
		{94, 4, 1, embeddingSplit, 23},  // 96 / 4 = 24; 24 − 1
		{126, 8, 4, embeddingSplit, 15}, // 128 / 32 = 4; 4·4 − 1
		{126, 16, 8, embeddingSplit, 7}, // 128 / 128 = 1; 1·8 − 1
		{61, 2, 4, noSplit, 0},          // DeepSeek-V3: 61 % 8 = 5, 63 % 8 = 7
		{61, 16, 1, noSplit, 0},         // 61 % 16 = 13, 63 % 16 = 15
	} {
		kind, first := pipelineSplit(c.layers, c.pp, c.vp)
		if kind != c.kind || first != c.first {
			t.Errorf("pipelineSplit(%d, %d, %d) = %d, %d; want %d, %d", c.layers, c.pp, c.vp, kind, first, c.kind, c.first)
		}
	}
}

// TestTranslate pins how rows become scenarios: precision mapping, folding,
// the pipeline split, FSDP, routing and the cluster.
func TestTranslate(t *testing.T) {
	rows := loadRows(t)
	for _, c := range []struct {
		release, system, model, precision, variant string
		want, absent                               []string
	}{
		// 94 layers over PP 4 × VP 12: 96 slots, 2 per virtual stage, 23
		// layers on the first and last rank. EP 16 ≤ DP 64: no folding.
		// The table's GA 32 disagrees with 8192 / (2 × 64) = 64.
		{"25.11", "DGX-GB300", "Qwen3_235B_a22B", "BF16", "",
			[]string{"name: mb2511-gb300-qwen3-235b-a22b-bf16-256\n", "precision: bf16", "schedule: interleaved", "virtual_stages: 12",
				"first_stage_layers: 23", "last_stage_layers: 23", "ep: 16", "nodes: 64", "gpus_per_node: 4", "nic: ib-xdr-800",
				"nics_per_node: 4", "GA 32 disagrees", "group: megatron-bridge-25.11", "tokens_per_s_per_gpu: 6131", "zero: 1",
				"docs/performance-summary-archive.md @ 0a25f91 (also docs/performance-summary.md @ 00b7660), 25.11 NeMo container, System: DGX-GB300 table"},
			[]string{"expert_tp", "fp8_recipe", "sp: true", "tp_comm", "moe:"}},
		// 26.02 H100 "FP8" on an MoE model: current scaling (the release's
		// presets); EP 32 > DP 16: ETP 1 folding over TP 2 × DP 16.
		{"26.02", "DGX-H100", "Qwen3_235B_a22B", "FP8", "",
			[]string{"precision: fp8", "fp8_recipe: current", "expert_tp: 1", "sp: true", "tp_comm: true", "first_stage_layers: 11",
				"virtual_stages: 4", "nodes: 32", "nic: ib-ndr-400", "nics_per_node: 8", "grad_dtype: fp32", "attention_kernel: cudnn",
				"Model: Qwen3_235B_a22B table, DGX-H100 row", "NCCL all-to-all"},
			nil},
		// FSDP 64: Megatron-FSDP, zero 3; no pipeline.
		{"26.02", "DGX-GB300", "LLAMA3_70B", "FP8", "",
			[]string{"zero: 3", "fp8_recipe: current", "micro_batch: 2", "CUDA graphs not stated"},
			[]string{"schedule:", "ep:", "sp: true"}},
		// MXFP8; 80 layers over PP 4 × VP 5 split evenly; GB200 keeps the
		// catalog's network.
		{"26.02", "DGX-GB200", "LLAMA3_70B", "MXFP8", "",
			[]string{"fp8_recipe: mxfp8", "tp: 2", "schedule: interleaved", "virtual_stages: 5", "sp: true", "tp_comm: true", "nodes: 16"},
			[]string{"network:", "first_stage_layers", "zero: 3"}},
		// 25.09 parenthesised cell: MXFP8 from the footnote; token dropping.
		{"25.09", "DGX-GB200", "Qwen3_30B_a3B", "FP8-MX", "paren",
			[]string{"name: mb2509-gb200-qwen3-30b-a3b-fp8-mx-8-paren\n", "moe:\n    dropless: false", "fp8_recipe: mxfp8", "ep: 8",
				"capacity factor", "parenthesised value"},
			[]string{"pp: 2", "schedule:"}},
		// 126 layers over PP 8 × VP 8: 128 slots, 2 per virtual stage, 15
		// layers on the first and last rank; CP 2.
		{"25.11", "DGX-B200", "LLAMA3.1_405B", "FP8-CS", "",
			[]string{"cp: 2", "tp: 4", "pp: 8", "virtual_stages: 8", "first_stage_layers: 15", "nodes: 16", "fp8_recipe: current"},
			nil},
		// 48 layers over PP 2 × VP 12 split evenly; EP 8 = DP 8: no folding.
		{"26.02", "DGX-H100", "Qwen3_30B_a3B", "FP8", "",
			[]string{"virtual_stages: 12", "ep: 8", "global_batch: 1024"},
			[]string{"first_stage_layers", "expert_tp", "sp: true"}},
		// 25.09 GB200 Llama 3 70B: the parenthesised layout (FSDP 0, TP 2,
		// PP 4, VP 5); GA 16 disagrees with 128 / (2 × 8) = 8.
		{"25.09", "DGX-GB200", "LLAMA3_70B", "FP8-MX", "paren",
			[]string{"tp: 2", "pp: 4", "virtual_stages: 5", "zero: 1", "GA 16 disagrees with GBS / (MBS x DP) = 128 / (2 x 8) = 8"},
			nil},
		// FSDP 8 on one DGX H100.
		{"25.11", "DGX-H100", "LLAMA3_8B", "FP8-CS", "",
			[]string{"zero: 3", "nodes: 1", "Transcription note: performance-summary.md writes FSDP 1"},
			nil},
	} {
		r := find(t, rows, c.release, c.system, c.model, c.precision, c.variant)
		sc, why := translate(r)
		if len(why) > 0 {
			t.Errorf("line %d skipped: %v", r.line, why)
			continue
		}
		doc := string(sc.YAML())
		for _, w := range c.want {
			if !strings.Contains(doc, w) {
				t.Errorf("line %d lacks %q:\n%s", r.line, w, doc)
			}
		}
		for _, a := range c.absent {
			if strings.Contains(doc, a) {
				t.Errorf("line %d has %q:\n%s", r.line, a, doc)
			}
		}
	}
}

// TestSkipReasons pins why rows are not simulated.
func TestSkipReasons(t *testing.T) {
	rows := loadRows(t)
	for _, c := range []struct {
		release, system, model, precision, variant string
		want, absent                               string
	}{
		{"25.11", "DGX-B200", "DeepSeekV3", "FP8-MX", "", "pipeline layout not stated", "MTP"},
		{"26.02", "DGX-GB300", "DeepSeekV3", "MXFP8", "", "MTP not stated", ""},
		{"25.11", "DGX-GB300", "DeepSeekV3", "BF16", "", "pipeline layout not stated", "MTP"},
		{"26.02", "DGX-GB300", "LLAMA3_70B", "NVFP4", "", "NVFP4 training is not modelled", ""},
		{"25.09", "DGX-H100", "LLAMA3_8B", "unstated", "", "precision not stated", ""},
		{"25.09", "DGX-GB200", "DeepSeekV3", "FP8-MX", "paren", "EP 64 does not divide the 32 GPUs of a pipeline stage", ""},
	} {
		r := find(t, rows, c.release, c.system, c.model, c.precision, c.variant)
		_, why := translate(r)
		got := strings.Join(why, "; ")
		if !strings.Contains(got, c.want) || (c.absent != "" && strings.Contains(got, c.absent)) {
			t.Errorf("line %d: reason %q, want %q and not %q", r.line, got, c.want, c.absent)
		}
	}
	// A dense model whose layers split neither way over the pipeline:
	// Llama 3 70B over PP 3 (80 % 3 = 2, 82 % 3 = 1).
	r := row{line: 99, release: "26.02", system: "DGX-H100", model: "LLAMA3_70B", precision: "BF16",
		gpus: 24, gbs: 24, mbs: 1, seq: 8192, tp: 8, pp: 3, cp: 1, tokens: 1, tflops: 1}
	if _, why := translate(r); !slices.ContainsFunc(why, func(s string) bool { return strings.HasPrefix(s, "pipeline split not stated") }) {
		t.Errorf("PP 3 for 80 layers: reasons %v", why)
	}
}

// TestRunOwnsOnlyItsFiles: a regeneration removes stale files of its own
// name pattern and nothing else; -check then passes, and fails naming a
// file that was changed.
func TestRunOwnsOnlyItsFiles(t *testing.T) {
	dir := t.TempDir()
	for _, n := range []string{"mb9999-stale.yaml", "README.md", "other.yaml"} {
		if err := os.WriteFile(filepath.Join(dir, n), []byte("x"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if err := run(csvPath, dir, true, io.Discard); err == nil {
		t.Error("-check passed on a directory that was never generated")
	}
	if err := run(csvPath, dir, false, io.Discard); err != nil {
		t.Fatal(err)
	}
	for n, want := range map[string]bool{"mb9999-stale.yaml": false, "README.md": true, "other.yaml": true, "SKIPPED.md": true} {
		if _, err := os.Stat(filepath.Join(dir, n)); (err == nil) != want {
			t.Errorf("%s exists = %v, want %v", n, err == nil, want)
		}
	}
	if err := run(csvPath, dir, true, io.Discard); err != nil {
		t.Errorf("-check after generating: %v", err)
	}
	changed := "mb2602-h100-llama3-70b-fp8-64.yaml"
	if err := os.WriteFile(filepath.Join(dir, changed), []byte("x"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := run(csvPath, dir, true, io.Discard); err == nil || !strings.Contains(err.Error(), changed) {
		t.Errorf("-check after editing %s: %v", changed, err)
	}
}

func TestReadRowsErrors(t *testing.T) {
	head := strings.Join(columns, ",") + "\n"
	good := "26.02,DGX-H100,LLAMA3_70B,,64,FP8,256,1,8192,0,4,8,1,5,n/a,,1621,728,,,src,\n"
	for _, c := range []struct{ in, want string }{
		{"release,system\n", "unexpected header"},
		{head + strings.Replace(good, ",4,8,1,", ",x,8,1,", 1), "line 2: column tp: \"x\" is not an integer >= 1"},
		{head + strings.Replace(good, ",1621,", ",-3,", 1), "line 2: column tokens_per_s_per_gpu"},
		{head + strings.Replace(good, "LLAMA3_70B,,", "LLAMA3_70B,alt,", 1), "column variant"},
		{head + strings.Replace(good, "26.02", "2026", 1), "column release"},
		{"", "empty file"},
	} {
		_, err := readRows(strings.NewReader(c.in))
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("readRows(%q): %v, want %q", c.in, err, c.want)
		}
	}
	rows, err := readRows(strings.NewReader(head + good))
	if err != nil || len(rows) != 1 || rows[0].vp != 5 || rows[0].ep != 0 || rows[0].ga != 0 || rows[0].line != 2 {
		t.Errorf("readRows(good) = %+v, %v", rows, err)
	}
}

func TestHelpers(t *testing.T) {
	if na(0) != "n/a" || na(4) != "4" {
		t.Error("na")
	}
}

// TestHandWrittenScenarios: the holdout files this generator does not own
// (other frameworks' published runs, written by hand; README.md "Other
// frameworks' published runs") each parse, are named after their file, carry
// an expect: block with a source, a group that is not one of the
// generator's and their assumptions in notes, and a header that cites the
// source and lists the assumptions, so that a new file cannot slip in
// without its provenance.
func TestHandWrittenScenarios(t *testing.T) {
	files, err := filepath.Glob(filepath.Join(outDir, "*.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, path := range files {
		name := filepath.Base(path)
		if generatedName.MatchString(name) {
			continue
		}
		n++
		doc, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		s, err := sim.Parse(doc)
		if err != nil {
			t.Errorf("%s: %v", name, err)
			continue
		}
		e := s.Expect
		switch {
		case s.Name+".yaml" != name:
			t.Errorf("%s: name %q", name, s.Name)
		case e == nil || e.Source == "" || e.Group == "" || e.Notes == "":
			t.Errorf("%s: expect needs source, group and notes: %+v", name, e)
		case strings.HasPrefix(e.Group, "megatron-bridge-"):
			t.Errorf("%s: group %q belongs to the generated files", name, e.Group)
		}
		for _, want := range []string{"# Source: ", "# Measured: ", "# Assumptions (not stated by the source):\n# - "} {
			if !strings.Contains(string(doc), want) {
				t.Errorf("%s: header lacks %q", name, want)
			}
		}
		if _, err := s.MeasuredStepTimeS(); err != nil {
			t.Errorf("%s: %v", name, err)
		}
	}
	if n == 0 {
		t.Error("no hand-written holdout scenarios found")
	}
}
