package scenario

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// baseScenario is the scenario the package's tests edit (sim/testdata).
var baseScenario = func() string {
	b, err := os.ReadFile("../testdata/base.yaml")
	if err != nil {
		panic(err)
	}
	return string(b)
}()

// parse parses baseScenario edited by kv.
func parse(kv ...string) (*Plan, error) { return Parse([]byte(baseScenario), Overrides(kv...)...) }

func TestDefaults(t *testing.T) {
	s, err := Parse([]byte(baseScenario))
	if err != nil {
		t.Fatal(err)
	}
	p := s.Parallel
	if p.DP != 2 || p.PP != 1 || p.CP != 1 || p.EP != 1 || p.Schedule != "1f1b" || p.Order != "tp-cp-ep-dp-pp" {
		t.Errorf("parallel defaults: %+v", p)
	}
	if s.Training.MicroBatch != 1 || s.Training.Precision != "bf16" || s.Training.GradDtype != "bf16" || s.Training.MasterDtype != "fp32" {
		t.Errorf("training defaults: %+v", s.Training)
	}
	if s.Cluster.GPUsPerNode != 8 || s.Cluster.Network.Kind != "rail-optimized" || s.Cluster.Network.NICsPerNode != 8 {
		t.Errorf("cluster defaults: %+v", s.Cluster)
	}
	if s.Microbatches() != 32 || s.Sim.Fidelity != "analytic" || s.Sim.Steps != 1 {
		t.Errorf("microbatches %d, sim %+v", s.Microbatches(), s.Sim)
	}
	if s.Model.Layers != 32 || s.Model.KVHeads != 8 {
		t.Errorf("preset not echoed: %+v", s.Model)
	}
}

func TestParseErrorsNameTheField(t *testing.T) {
	cases := []struct {
		kv   []string
		want string
	}{
		{[]string{"parallel.tp", "3"}, "parallel.tp: 3 does not divide model.heads 32"},
		{[]string{"parallel.tp", "eight"}, "parallel.tp: expected an integer"},
		{[]string{"parallel.pp", "3"}, "parallel: tp*pp*cp = 8*3*1 is more than the cluster's 16 GPUs"},
		{[]string{"parallel.pp", "3", "parallel.tp", "4"}, "parallel: tp*pp*cp = 12 does not divide the 16 GPUs"},
		{[]string{"parallel.dp", "4"}, "tp*pp*cp*dp"},
		{[]string{"training.global_batch", "63"}, "training.global_batch: 63 is not a multiple of dp*micro_batch"},
		{[]string{"parallel.ep", "2"}, "parallel.ep: 2 needs a mixture-of-experts model"},
		{[]string{"parallel.cp", "2", "parallel.tp", "4", "training.seq_len", "4098"}, "parallel.cp"},
		{[]string{"parallel.sp", "true", "parallel.tp", "1"}, "parallel.sp: sequence parallelism needs tp > 1"},
		{[]string{"parallel.virtual_stages", "2"}, "parallel.virtual_stages: 2 needs parallel.schedule: interleaved"},
		{[]string{"cluster.gpu", "h1000"}, "cluster.gpu:"},
		{[]string{"cluster.network.nic", "ib-foo"}, "cluster.network.nic:"},
		{[]string{"model.preset", "llama9"}, "model.preset:"},
		{[]string{"parallel.schedule", "2f2b"}, "parallel.schedule: unknown schedule \"2f2b\" (valid: gpipe, 1f1b, interleaved, zero-bubble, dualpipe, dualpipe-v)"},
		{[]string{"parallel.zero", "4"}, "parallel.zero: unknown stage 4"},
		{[]string{"training.precision", "int8"}, "training.precision: unknown value \"int8\""},
		{[]string{"sim.fidelity", "packet"}, "sim.fidelity:"},
		{[]string{"parallel.order", "tp-dp-pp"}, "parallel.order:"},
		{[]string{"parallel.tp_impl", "deepspeed"}, "parallel.tp_impl: unknown value \"deepspeed\" (valid: megatron, dtensor)"},
		{[]string{"name", "bad name"}, "name:"},
		{[]string{"cluster.nodes", "0"}, "cluster.nodes: must be >= 1"},
		{[]string{"parallel.pp", "2", "parallel.first_stage_layers", "40"}, "first_stage_layers"},
		{[]string{"parallel.schedule", "dualpipe"}, "parallel.pp: dualpipe needs an even pp >= 2 (have 1; valid with odd pp: dualpipe-v, 1f1b, zero-bubble)"},
		{[]string{"parallel.schedule", "dualpipe", "parallel.pp", "2", "training.global_batch", "2"}, "training.global_batch: dualpipe needs an even number of micro-batches per pipeline, at least 2*pp = 4 (have 2"},
		{[]string{"parallel.schedule", "dualpipe-v", "parallel.pp", "2", "parallel.virtual_stages", "2"}, "parallel.virtual_stages: 2 needs parallel.schedule: interleaved (have dualpipe-v)"},
		{[]string{"parallel.schedule", "dualpipe-v", "parallel.pp", "2", "parallel.first_stage_layers", "3"}, "parallel: the 29 layers left after first_stage_layers/last_stage_layers do not split evenly over 3 model chunks"},
	}
	for _, c := range cases {
		_, err := parse(c.kv...)
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%v: error %v, want it to contain %q", c.kv, err, c.want)
		}
		if err != nil && strings.Contains(err.Error(), "\n") {
			t.Errorf("%v: error spans lines: %q", c.kv, err)
		}
	}
}

func TestUnknownKeySuggests(t *testing.T) {
	_, err := Parse([]byte(strings.Replace(baseScenario, "  tp: 8", "  tpp: 8", 1)))
	if err == nil || !strings.Contains(err.Error(), `parallel.tpp: unknown field`) || !strings.Contains(err.Error(), `did you mean "tp"?`) {
		t.Fatalf("got %v", err)
	}
	_, err = Parse([]byte(baseScenario + "bogus: 1\n"))
	if err == nil || !strings.Contains(err.Error(), "bogus: unknown field") || !strings.Contains(err.Error(), "valid fields:") {
		t.Fatalf("got %v", err)
	}
	if err := CheckFieldPath("parallel.tp"); err != nil {
		t.Error(err)
	}
	if err := CheckFieldPath("parallel.tpp"); err == nil || !strings.Contains(err.Error(), `did you mean "tp"`) {
		t.Errorf("CheckFieldPath: %v", err)
	}
	if err := CheckFieldPath("parallel"); err == nil {
		t.Error("CheckFieldPath accepted a group")
	}
}

func TestRunIDIsCanonical(t *testing.T) {
	a, err := Parse([]byte(baseScenario))
	if err != nil {
		t.Fatal(err)
	}
	// Same configuration spelled differently (defaults written out, another name).
	b, err := parse("name", "other", "parallel.pp", "1", "training.micro_batch", "1", "parallel.dp", "2")
	if err != nil {
		t.Fatal(err)
	}
	if a.RunID() != b.RunID() {
		t.Errorf("run ids differ for the same configuration: %s %s", a.RunID(), b.RunID())
	}
	c, err := parse("training.micro_batch", "2")
	if err != nil {
		t.Fatal(err)
	}
	if a.RunID() == c.RunID() {
		t.Error("run id ignores micro_batch")
	}
}

func TestBundledScenariosLoad(t *testing.T) {
	files, _ := filepath.Glob("../../scenarios/*.yaml")
	if len(files) < 6 {
		t.Fatalf("found %d bundled scenarios", len(files))
	}
	for _, f := range files {
		if _, err := Load(f); err != nil {
			t.Errorf("%v", err)
		}
	}
}

// FuzzParse: arbitrary bytes never panic the parser, and what parses passes
// validation again after a round trip through its canonical form.
func FuzzParse(f *testing.F) {
	files, _ := filepath.Glob("../../scenarios/*.yaml")
	for _, file := range files {
		if b, err := os.ReadFile(file); err == nil {
			f.Add(b)
		}
	}
	f.Add([]byte(baseScenario))
	f.Add([]byte(strings.Replace(baseScenario, "training:\n", "training:\n  recompute: save-dots\n", 1)))
	f.Add([]byte("name: x\nparallel: [1, 2]\n"))
	f.Add([]byte("name: &a x\nmodel: *a\n"))
	f.Fuzz(func(t *testing.T, data []byte) {
		s, err := Parse(data)
		if err != nil {
			if strings.Contains(err.Error(), "\n") {
				t.Fatalf("multi-line error: %q", err)
			}
			return
		}
		if s.RunID() == "" {
			t.Fatal("empty run id")
		}
	})
}

// TestShapeGradAccumulate: the workload shape's gradient accumulation
// add: the share (m−1)/m of the step's m micro-batches that add into an
// existing gradient, the gradient's bytes per element and the share of
// each weight this GPU adds, by framework and ZeRO stage; none with one
// micro-batch or where Megatron fuses the add (no framework, megatron-lm,
// megatron-deepspeed). base.yaml: bf16, global batch 64 over dp 2 at
// micro-batch 1, so 32 micro-batches.
func TestShapeGradAccumulate(t *testing.T) {
	tt := []string{"training.framework", "torchtitan", "parallel.zero"}
	for _, tc := range []struct {
		kv                  []string
		shard               bool // fsdpShardAccumulate
		share, width, slice float64
	}{
		{nil, false, 0, 0, 0},
		{[]string{"training.autocast", "true"}, false, 31.0 / 32, 4, 1},
		{[]string{"training.autocast", "true", "training.micro_batch", "8"}, false, 3.0 / 4, 4, 1},
		{[]string{"training.autocast", "true", "training.global_batch", "2"}, false, 0, 0, 0},
		{[]string{"training.framework", "megatron-lm", "parallel.zero", "0"}, false, 0, 0, 0},
		{[]string{"training.framework", "megatron-deepspeed", "parallel.zero", "0"}, false, 0, 0, 0},
		// DDP/one GPU without autocast: the parameter dtype's width
		{append(tt, "0"), false, 31.0 / 32, 2, 1},
		{append(tt, "0", "training.precision", "fp32"), false, 31.0 / 32, 4, 1},
		{append(tt, "0", "training.global_batch", "2"), false, 0, 0, 0},
		// ZeRO 1/2: not priced
		{append(tt, "1"), false, 0, 0, 0},
		// FSDP no_sync: the unsharded gradient at grad_dtype (bf16 unless
		// told)
		{append(tt, "3", "parallel.zero3_grad_sync", "last"), false, 31.0 / 32, 2, 1},
		{append(tt, "3", "parallel.zero3_grad_sync", "last", "training.grad_dtype", "fp32"), false, 31.0 / 32, 4, 1},
		{append(tt, "3", "parallel.zero3_grad_sync", "last", "training.grad_dtype", "bf16"), false, 31.0 / 32, 2, 1},
		// FSDP reduce-scattering every micro-batch: off by default, else
		// the fp32 shard over dp 2
		{append(tt, "3"), false, 0, 0, 0},
		{append(tt, "3"), true, 31.0 / 32, 4, 0.5},
	} {
		fsdpShardAccumulate = tc.shard
		s, err := parse(tc.kv...)
		if err != nil {
			t.Fatalf("%v: %v", tc.kv, err)
		}
		sh := s.Shape()
		fsdpShardAccumulate = false
		if got := [3]float64{sh.GradAccumulate, sh.GradAccumWidth, sh.GradAccumShard}; got != [3]float64{tc.share, tc.width, tc.slice} {
			t.Errorf("%v (shard add %v): share, width, shard %v (microbatches %d), want %v", tc.kv, tc.shard, got,
				s.Microbatches(), [3]float64{tc.share, tc.width, tc.slice})
		}
	}
}

// TestDDPGradCopy: PyTorch DDP's reducer copies are priced (StepConfig
// .DDPGradCopy, MemoryInput.GradBucketCopy) for zero 0 over more than one
// DP rank under the eager-PyTorch framework profiles only; base.yaml has
// dp 2.
func TestDDPGradCopy(t *testing.T) {
	for _, tc := range []struct {
		kv   []string
		want bool
	}{
		{nil, false}, // no framework: Megatron's contiguous buffers
		{[]string{"training.framework", "megatron-lm", "parallel.zero", "0"}, false},
		{[]string{"training.framework", "pytorch-fsdp", "parallel.zero", "0"}, true},
		{[]string{"training.framework", "hf-trainer", "parallel.zero", "0"}, true},
		{[]string{"training.framework", "torchtitan", "parallel.zero", "0"}, true},
		{[]string{"training.framework", "pytorch-fsdp", "parallel.zero", "3"}, false},
		{[]string{"training.framework", "pytorch-fsdp", "parallel.zero", "0", "parallel.dp", "1", "cluster.nodes", "1"}, false},
	} {
		s, err := parse(tc.kv...)
		if err != nil {
			t.Fatalf("%v: %v", tc.kv, err)
		}
		if got := s.ddpGradCopy(); got != tc.want {
			t.Errorf("%v: DDP gradient copies %v, want %v", tc.kv, got, tc.want)
		}
		l, err := s.NewLayout()
		if err != nil {
			t.Fatalf("%v: %v", tc.kv, err)
		}
		if got := s.StepConfig(l).DDPGradCopy; got != tc.want {
			t.Errorf("%v: StepConfig.DDPGradCopy %v, want %v", tc.kv, got, tc.want)
		}
	}
}
