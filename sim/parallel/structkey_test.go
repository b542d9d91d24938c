package parallel

import (
	"math"
	"reflect"
	"slices"
	"testing"

	"github.com/simtrain/simtrain/sim/engine"
	"github.com/simtrain/simtrain/sim/pipeline"
	"github.com/simtrain/simtrain/sim/workload"
)

// TestStructureKey: changes the builder does not branch on (the
// micro-batch size, the arena; tp and dp where the bucket cuts cannot
// move) leave the key; any it branches on — micro-batches, tp 1 against
// 2, sequence parallelism, the ZeRO stage, the schedule, bucket cuts that
// may move — change it.
func TestStructureKey(t *testing.T) {
	key := func(tp, dp int, edit func(*StepConfig)) (uint64, []*Program) {
		_, c := stepConfig(t, tp, dp, 2, 8, pipeline.OneFOneB)
		if edit != nil {
			edit(c)
		}
		k, ok := c.StructureKey()
		if !ok {
			t.Fatal("no key")
		}
		ps, err := Build(c, commPricer{unit: engine.Millisecond, comm: engine.Microsecond})
		if err != nil {
			t.Fatal(err)
		}
		return k, ps
	}
	// stepConfig's layers have 1e6 parameters, below the bucket
	// (max(40e6, 1e6·dp)): the cuts follow the per-GPU sums, keyed by
	// bucket·tp (paramSizes' rule 2). Rule 1: layers of 1e9 parameters
	// and a 2^20-token vocabulary put every increment in a bucket of its
	// own at any tp.
	big := func(c *StepConfig) {
		c.LayerParams = func(int) (float64, float64) { return 1e9, 0 }
		c.Model.Vocab = 1 << 20
	}
	for _, c := range []struct {
		name     string
		tp, dp   int
		edit     func(*StepConfig)
		tp2, dp2 int
		edit2    func(*StepConfig)
		same     bool
	}{
		{"micro-batch size", 2, 4, nil, 2, 4, func(c *StepConfig) { c.Shape.MicroBatch = 4 }, true},
		{"arena", 2, 4, nil, 2, 4, func(c *StepConfig) { c.Arena = new(Arena) }, true},
		{"bucket·tp 80e6 both (dp 4, dp 8: bucket 40e6)", 2, 4, nil, 2, 8, nil, true},
		{"bucket·tp 160e6 both (tp 2 dp 80, tp 4 dp 40)", 2, 80, nil, 4, 40, nil, true},
		{"bucket·tp 80e6 against 160e6", 2, 4, nil, 4, 2, nil, false},
		{"every increment its own bucket, tp 2 against 4", 2, 4, big, 4, 2, big, true},
		{"every increment its own bucket against accumulated ones", 2, 4, big, 2, 4, nil, false},
		{"micro-batches", 2, 4, nil, 2, 4, func(c *StepConfig) { c.Microbatches = 9 }, false},
		{"tp 1 against 2", 2, 4, nil, 1, 8, nil, false},
		{"sp off", 2, 4, nil, 2, 4, func(c *StepConfig) { c.Shape.SP = false }, false},
		{"zero 3", 2, 4, nil, 2, 4, func(c *StepConfig) { c.Zero = 3 }, false},
		{"schedule", 2, 4, nil, 2, 4, func(c *StepConfig) { c.Schedule = pipeline.GPipe }, false},
		{"zero 3, all-gathers in calls, tp 2 against 4", 2, 4, func(c *StepConfig) { c.Zero, c.Zero3GatherParams = 3, 1e5 },
			4, 2, func(c *StepConfig) { c.Zero, c.Zero3GatherParams = 3, 1e5 }, false},
		{"zero 3, one call a unit, tp 2 against 4", 2, 4, func(c *StepConfig) { c.Zero = 3 }, 4, 2, func(c *StepConfig) { c.Zero = 3 }, true},
	} {
		k1, p1 := key(c.tp, c.dp, c.edit)
		k2, p2 := key(c.tp2, c.dp2, c.edit2)
		if got := k1 == k2; got != c.same {
			t.Errorf("%s: same key %v, want %v", c.name, got, c.same)
		}
		if k1 == k2 && !sameGraph(p1, p2) {
			t.Errorf("%s: one key, different task graphs", c.name)
		}
	}
}

// sameGraph reports whether a and b hold the same tasks but for their
// prices (Dur, GEMMShare, Bytes, FLOPs) and the same dependencies.
func sameGraph(a, b []*Program) bool {
	if len(a) != len(b) {
		return false
	}
	for s := range a {
		if len(a[s].Tasks) != len(b[s].Tasks) {
			return false
		}
		for i := range a[s].Tasks {
			x, y := a[s].Tasks[i], b[s].Tasks[i]
			x.Dur, x.GEMMShare, x.Bytes = y.Dur, y.GEMMShare, y.Bytes
			if x.Kind != KindSend && x.Kind != KindRecv {
				x.aux = y.aux // FLOPs; a send's or receive's peer and match stay compared
			}
			if x != y || !slices.Equal(a[s].Deps(i), b[s].Deps(i)) {
				return false
			}
		}
	}
	return true
}

// TestEachBucketAlone: eachBucketAlone with a model's own LayerParams
// (answered from modelLayers' memo, per-GPU divisors hoisted) gives the
// answer of LayerParams asked layer by layer through perGPUParams, for
// dense, MoE and MTP models, several tp, ep and bucket sizes, chunks
// reaching past the model's layers, and more models than the memo keeps
// (asked in turn, so that each evicts another).
func TestEachBucketAlone(t *testing.T) {
	byLayer := func(c *StepConfig, bucket float64) bool {
		alone := func(v float64) bool { return v == 0 || v >= bucket }
		if !alone(headParams(c)) || !alone(embParams(c)) {
			return false
		}
		for _, st := range c.Chunks {
			for _, ch := range st {
				for l := ch.FirstLayer; l < ch.FirstLayer+ch.Layers; l++ {
					d, e := c.LayerParams(l)
					if d, e = perGPUParams(c, d, e); !alone(d + e) {
						return false
					}
				}
			}
		}
		return true
	}
	var models []workload.Model
	for i, layers := range []int{8, 10, 12, 14, 16} {
		models = append(models, workload.Model{Name: "dense", Layers: layers, Hidden: 4096 + 1024*i, Heads: 32, KVHeads: 8, FFN: 14336 + 2048*i, Vocab: 262144})
	}
	models = append(models,
		workload.Model{Name: "moe", Layers: 8, Hidden: 4096, Heads: 32, KVHeads: 8, FFN: 14336, Vocab: 1 << 20,
			MoE: &workload.MoE{Experts: 8, TopK: 2, ExpertFFN: 14336, DenseLayers: 2}},
		workload.Model{Name: "moe, every layer", Layers: 8, Hidden: 4096, Heads: 32, KVHeads: 8, FFN: 14336, Vocab: 1 << 20,
			MoE: &workload.MoE{Experts: 8, TopK: 2, ExpertFFN: 14336}},
		workload.Model{Name: "mtp", Layers: 7, Hidden: 2048, Heads: 16, FFN: 8192, Vocab: 262144, MTPLayers: 1})
	for i := range models {
		models[i].Fill()
	}
	outcomes := map[bool]int{}
	for _, tp := range []int{1, 2, 4, 8} {
		for _, ep := range []int{1, 2} {
			for _, m := range models {
				l, err := NewLayout(tp, 1, ep, 4, 2, [5]Dim{DimTP, DimCP, DimEP, DimDP, DimPP})
				if err != nil {
					t.Fatal(err)
				}
				chunks, err := Partition(m.StackLayers(), 2, 1, 0, 0)
				if err != nil {
					t.Fatal(err)
				}
				chunks[1] = append(chunks[1], Chunk{Stage: 1, Index: 1, FirstLayer: m.StackLayers(), Layers: 2})
				c := &StepConfig{Layout: l, Model: m, Chunks: chunks, LayerParams: m.LayerParams}
				if !isModelLayerParams(c.LayerParams) {
					t.Fatal("a Model's LayerParams method value not recognised")
				}
				// around every layer's per-GPU parameters: at v the layer is
				// a bucket of its own, just above v not
				buckets := []float64{1e6, 40e6, 2e8, 5e8, 1e9, 3e9}
				for l := range m.StackLayers() {
					ld, le := m.LayerParams(l)
					d, e := perGPUParams(c, ld, le)
					buckets = append(buckets, d+e, math.Nextafter(d+e, math.Inf(1)))
				}
				for _, bucket := range buckets {
					got, want := eachBucketAlone(c, bucket), byLayer(c, bucket)
					if got != want {
						t.Errorf("%s (%d layers), tp %d ep %d, bucket %g: %v, want %v", m.Name, m.Layers, tp, ep, bucket, got, want)
					}
					outcomes[got]++
				}
			}
		}
	}
	if outcomes[true] == 0 || outcomes[false] == 0 {
		t.Errorf("outcomes %v: want both", outcomes)
	}
	if isModelLayerParams(func(int) (float64, float64) { return 0, 0 }) || isModelLayerParams(nil) {
		t.Error("a closure or nil taken for a Model's LayerParams")
	}
	a, b := models[5], models[5]
	moe := *a.MoE
	b.MoE = &moe
	if !sameModel(&a, &b) {
		t.Error("models with equal MoE values at two addresses differ")
	}
	moe.Experts++
	if sameModel(&a, &b) {
		t.Error("models of different MoE values are the same")
	}
}

// hashAll holds a field of every kind keyHasher.value hashes (and, in
// hashAllMap, one it cannot), for TestCompiledHashEqualsReflect.
type hashAll struct {
	B    bool
	I    int
	I8   int8
	I16  int16
	I32  int32
	I64  int64
	U    uint
	U8   uint8
	U16  uint16
	U32  uint32
	U64  uint64
	Up   uintptr
	F32  float32
	F64  float64
	S    string
	A    [3]int16
	Sl   []string
	In   struct{ X, y int }
	P    *int
	If   any
	Fn   func() int
	Time engine.Time
	priv []float32
	Rec  *hashAll
	Recs []hashAll
}

type hashAllMap struct {
	A int
	M map[int]int
}

// TestCompiledHashEqualsReflect: compileHash's hasher of a type gives the
// words keyHasher.value gives through reflect, for a struct of every kind
// (negative small ints, float32, nil and set pointers and interfaces,
// unexported fields, a recursive type) and for the step configurations
// TestStructureKey varies, hashed whole as StructureKey did through
// reflect; a map makes neither ok.
func TestCompiledHashEqualsReflect(t *testing.T) {
	viaReflect := func(v any) (uint64, bool) {
		k := keyHasher{h: keySeed, ok: true}
		k.value(reflect.ValueOf(v).Elem())
		return k.h, k.ok
	}
	compiled := func(v any) (uint64, bool) {
		k := keyHasher{h: keySeed, ok: true}
		rv := reflect.ValueOf(v)
		compileHash(rv.Type().Elem())(&k, rv.UnsafePointer())
		return k.h, k.ok
	}
	seven := 7
	values := []any{
		&hashAll{},
		&hashAll{B: true, I: -3, I8: -5, I16: -300, I32: -70000, I64: -1 << 40, U: 3, U8: 250, U16: 65000, U32: 1 << 31, U64: 1 << 63, Up: 9,
			F32: -1.5, F64: 2.25, S: "a string of more than eight bytes", A: [3]int16{-1, 2, 3}, Sl: []string{"x", "", "yz"},
			In: struct{ X, y int }{4, -4}, P: &seven, If: workload.Shape{TP: 2}, Fn: func() int { return 1 }, Time: 5, priv: []float32{1, -2},
			Rec: &hashAll{I: 1, Rec: &hashAll{S: "deep"}}, Recs: []hashAll{{I8: 1}, {Recs: []hashAll{{U: 2}}}}},
		&hashAll{If: &seven, Sl: []string{}},
		&hashAllMap{A: 1},
		&hashAllMap{A: 1, M: map[int]int{1: 2}},
	}
	_, c := stepConfig(t, 2, 4, 2, 8, pipeline.OneFOneB)
	values = append(values, c)
	for _, edit := range []func(*StepConfig){
		func(c *StepConfig) { c.Shape.MicroBatch = 4 },
		func(c *StepConfig) { c.Microbatches = 9 },
		func(c *StepConfig) { c.Zero, c.Zero3GatherParams = 3, 1e5 },
		func(c *StepConfig) { c.Schedule = pipeline.GPipe },
		func(c *StepConfig) { c.Model.MoE = &workload.MoE{Experts: 8, TopK: 2} },
		func(c *StepConfig) { c.Model.MLA = &workload.MLA{QLoRARank: 3} },
		func(c *StepConfig) { c.DeviceClass = []int{0, 1} },
		func(c *StepConfig) { c.Host = HostModel{On: true, Call: 3, Queue: 1024} },
		func(c *StepConfig) { c.Shape.AttnHeadDims = []int{64, 128} },
		func(c *StepConfig) { c.Arena = new(Arena) },
	} {
		_, c := stepConfig(t, 2, 4, 2, 8, pipeline.OneFOneB)
		edit(c)
		values = append(values, c)
	}
	for i, v := range values {
		h1, ok1 := viaReflect(v)
		h2, ok2 := compiled(v)
		if h1 != h2 || ok1 != ok2 {
			t.Errorf("value %d (%T): compiled %x %v, through reflect %x %v", i, v, h2, ok2, h1, ok1)
		}
		if c, isCfg := v.(*StepConfig); isCfg {
			k1, ok1 := structureKeyReflect(c)
			k2, ok2 := c.StructureKey()
			if k1 != k2 || ok1 != ok2 {
				t.Errorf("value %d: StructureKey %x %v, through reflect %x %v", i, k2, ok2, k1, ok1)
			}
		}
	}
	if _, ok := compiled(&hashAllMap{}); ok {
		t.Error("a map hashed")
	}
}

// structureKeyReflect is StructureKey as it hashed through reflect, field
// by field (keyHasher.value), before compileHash.
func structureKeyReflect(c *StepConfig) (uint64, bool) {
	k := keyHasher{h: keySeed, ok: true}
	v := reflect.ValueOf(c).Elem()
	for i := 0; i < v.NumField(); i++ {
		switch keyFields.config[i] {
		case fieldSkip:
		case fieldLayout:
			k.layout(c)
		case fieldShape:
			sv, s := v.Field(i), &c.Shape
			for j, role := range keyFields.shape {
				switch role {
				case fieldSkip:
				case fieldTP:
					k.word(uint64(min(max(s.TP, 1), 2)))
				case fieldETP:
					k.word(uint64(int64(sizeAsTP(s.ETP, s.TP))))
				default:
					k.value(sv.Field(j))
				}
			}
		default:
			k.word(uint64(i))
			k.value(v.Field(i))
		}
	}
	return k.h, k.ok
}
