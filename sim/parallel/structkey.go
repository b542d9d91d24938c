package parallel

import (
	"encoding/binary"
	"math"
	"reflect"
	"sync"
	"unsafe"

	"github.com/simtrain/simtrain/sim/workload"
)

// Build-structure keys (issue 18, reuse37). Of the 70B layout sweep's
// 387 simulated points, 200 repeat an earlier point's task graph (docs/
// design.md, "Build structure shared across a sweep's points measured"):
// within such a group only the tasks' durations and sizes differ. A build
// whose structure is known to equal the arena's last one could re-price
// that build's programs in place instead of building them again; the key
// is how a build would know it before building.

// StructureKey returns a hash of every input of c that the builder may
// branch on, so that two configurations of different keys may build
// different task graphs and two of equal keys are meant to build the same
// graph (the same tasks but for Dur, GEMMShare, Bytes and FLOPs; the same
// dependencies, successors, issue times, queue waits, bands and copies'
// marks) — meant, not proved: a reuse that trusts it must be checked
// against a fresh build (the exhaustive test over the bundled sweeps,
// TestStructureKeyImpliesStructure, and a check mode).
//
// It hashes every field of c, read through reflect so that a field added
// later is hashed too, except what only prices: the micro-batch size
// (Shape.MicroBatch) and the tensor-parallel size (Layout.TP and
// Shape.TP), each replaced by whether it exceeds 1, since the builder
// emits TP collectives only then, and the data-parallel size, replaced by
// whether the DP and expert-DP groups exceed 1; where the parameters per
// GPU decide the graph (the DP gradient buckets, ZeRO-3 all-gather calls)
// the key holds what they decide it by (paramSizes). Layout keeps PP, CP,
// EP, ETP (or that it equals TP) and whether it is folded. The
// arena (Arena), the interrupt and LayerParams (funcs; LayerParams follows
// from Model and the layout, both hashed) are not hashed. ok is false for
// a configuration holding a value the hash cannot read (a map, a channel):
// no key, build afresh.
func (c *StepConfig) StructureKey() (key uint64, ok bool) {
	k := keyHasher{h: keySeed, ok: true}
	f := &keyFields
	p := unsafe.Pointer(c)
	for i, role := range f.config {
		switch role {
		case fieldSkip:
		case fieldLayout:
			k.layout(c)
		case fieldShape:
			k.shape(&c.Shape)
		default:
			k.word(uint64(i))
			f.configHash[i](&k, unsafe.Add(p, f.configOff[i]))
		}
	}
	if !k.ok {
		return 0, false
	}
	return k.h, true
}

// keyFields says how StructureKey treats each field of StepConfig and of
// workload.Shape, by index (looked up by name once: reflect's Field by
// index builds a StructField, ≈ 30 instructions each time).
var keyFields = func() (f keyFieldTable) {
	f.config, f.configOff, f.configHash = fieldRoles(reflect.TypeFor[StepConfig](), map[string]fieldRole{
		"Arena": fieldSkip, "Interrupt": fieldSkip, "StageCut": fieldSkip, "LayerParams": fieldSkip,
		"Layout": fieldLayout, "Shape": fieldShape,
	})
	f.shape, f.shapeOff, f.shapeHash = fieldRoles(reflect.TypeFor[workload.Shape](), map[string]fieldRole{
		"MicroBatch": fieldSkip, "TP": fieldTP, "ETP": fieldETP,
	})
	return f
}()

// fieldRoles returns, per field of struct type t, its role (named in
// special, else fieldValue) and, for a fieldValue field, its offset and
// compiled hasher.
func fieldRoles(t reflect.Type, special map[string]fieldRole) (roles []fieldRole, off []uintptr, hash []hashFunc) {
	roles, off, hash = make([]fieldRole, t.NumField()), make([]uintptr, t.NumField()), make([]hashFunc, t.NumField())
	for i := range roles {
		sf := t.Field(i)
		if r, ok := special[sf.Name]; ok {
			roles[i] = r
		} else {
			off[i], hash[i] = sf.Offset, compileHash(sf.Type)
		}
	}
	return roles, off, hash
}

// keyFieldTable is keyFields' type: per field of StepConfig (config) and
// of workload.Shape (shape), its role and, for a field hashed as its value
// (fieldValue), its offset and compiled hasher.
type keyFieldTable struct {
	config, shape         []fieldRole
	configOff, shapeOff   []uintptr
	configHash, shapeHash []hashFunc
}

// fieldRole is how StructureKey hashes a field (keyFields): as its value
// (fieldValue), not at all, or as the Layout, the Shape, Shape.TP or
// Shape.ETP StructureKey's doc says.
type fieldRole uint8

const (
	fieldValue fieldRole = iota
	fieldSkip
	fieldLayout
	fieldShape
	fieldTP
	fieldETP
)

// shape hashes the Shape s as StructureKey says: no micro-batch size, tp
// only as whether it exceeds 1, etp as sizeAsTP.
func (k *keyHasher) shape(s *workload.Shape) {
	f := &keyFields
	p := unsafe.Pointer(s)
	for i, role := range f.shape {
		switch role {
		case fieldSkip:
		case fieldTP:
			k.word(uint64(min(max(s.TP, 1), 2)))
		case fieldETP:
			k.word(uint64(int64(sizeAsTP(s.ETP, s.TP))))
		default:
			f.shapeHash[i](k, unsafe.Add(p, f.shapeOff[i]))
		}
	}
}

// layout hashes c.Layout as StructureKey says.
func (k *keyHasher) layout(c *StepConfig) {
	l := c.Layout
	if l == nil {
		k.word(0)
		return
	}
	k.word(1)
	for _, x := range [...]int{l.CP, l.EP, l.PP, sizeAsTP(l.ETP, l.TP), min(max(l.TP, 1), 2), b2i(l.Folded()), min(l.GroupSize(GroupDP), 2), min(l.GroupSize(GroupEDP), 2)} {
		k.word(uint64(int64(x)))
	}
	// The strides (the rank order) decide which ranks a group holds:
	// prices only (the builder reads group sizes, never ranks).
	k.paramSizes(c)
}

// paramSizes hashes what the per-GPU parameter counts (the model's over
// tp) decide in the graph, where they decide anything: ZeRO below 3 cuts
// the gradients into buckets (gradReady: a bucket is issued once the
// accumulated parameters reach BucketParams, by default
// max(40e6, 1e6·dp)), each a DP collective with a DP group above 1 and a
// NaN check with GradBucketSync; ZeRO 3 with Zero3GatherParams splits
// each unit's all-gather into calls (zero3GatherCalls).
//
// The bucket cuts, by the first rule that holds: (1) every gradReady
// increment (a layer's, the head's, the embedding's per-GPU parameters)
// is 0 or reaches the bucket: every nonzero one is a bucket of its own,
// whatever tp and dp are; (2) tp is a power of two, the model has no
// experts (whose parameters are divided by etp·ep) and the embedding is
// divided over tp (not TPEmbeddingReplicated): every division by tp is
// exact, so the accumulated sums are the whole-model sums over tp, to the
// bit, and each comparison is the whole-model sum's with the bucket size
// times tp, which the key holds (the 70B sweep's points of one tp/mb
// ratio at fixed pp share it: 1e6·dp·tp = 1e6·1024/pp); (3) else tp and
// dp themselves.
func (k *keyHasher) paramSizes(c *StepConfig) {
	l := c.Layout
	dp := l.GroupSize(GroupDP)
	switch {
	case c.Zero < 3 && (dp > 1 || c.GradBucketSync > 0):
		// (a bucket's NaN check, GradBucketSync, is emitted whatever dp is)
		bucket := c.BucketParams
		if bucket <= 0 {
			bucket = max(40e6, 1e6*float64(dp)) // BuildAfter's default
		}
		if c.LayerParams != nil && eachBucketAlone(c, bucket) {
			k.word(1)
			return
		}
		if tp := l.TP; tp >= 1 && tp&(tp-1) == 0 && c.Model.MoE == nil && !c.TPEmbeddingReplicated {
			k.word(2)
			k.word(math.Float64bits(bucket * float64(tp)))
			return
		}
		k.word(3)
		k.word(uint64(int64(l.TP)))
		k.word(uint64(int64(dp)))
	case c.Zero == 3 && dp > 1 && c.Zero3GatherParams > 0:
		k.word(4)
		k.word(uint64(int64(l.TP)))
		k.word(uint64(int64(dp)))
	}
}

// eachBucketAlone reports whether every gradReady increment of c's build
// — each layer's per-GPU dense plus expert parameters, the head's and the
// embedding's (perGPUParams of LayerParams, headParams, embParams, as the
// builder's layerParams, headParams and embParams) — is 0 or at least
// bucket (TestEachBucketAlone holds it to perGPUParams and LayerParams
// asked layer by layer). The layers' whole-model parameters come from modelLayers where
// LayerParams is Model's own method (as scenario plans bind it), else from
// LayerParams layer by layer.
func eachBucketAlone(c *StepConfig, bucket float64) bool {
	alone := func(v float64) bool { return v == 0 || v >= bucket }
	if !alone(headParams(c)) || !alone(embParams(c)) {
		return false
	}
	var memo [][2]float64
	if isModelLayerParams(c.LayerParams) {
		memo = modelLayers(c).params
	}
	// perGPUParams' divisors, once: the same divisions, so the same bits
	tp, etpEP := float64(c.Layout.TP), float64(c.Layout.GroupSize(GroupETP))*float64(c.Layout.EP)
	for _, st := range c.Chunks {
		for _, ch := range st {
			for l := ch.FirstLayer; l < ch.FirstLayer+ch.Layers; l++ {
				var d, e float64
				if l >= 0 && l < len(memo) {
					d, e = memo[l][0], memo[l][1]
				} else {
					d, e = c.LayerParams(l)
				}
				if !alone(d/tp + e/etpEP) {
					return false
				}
			}
		}
	}
	return true
}

// modelLayerParamsPC is the code pointer of a Model.LayerParams method
// value (the compiler's one wrapper for every receiver): a LayerParams
// func with it is some model's own LayerParams.
var modelLayerParamsPC = reflect.ValueOf(workload.Model{}.LayerParams).Pointer()

// isModelLayerParams reports whether f is a method value of
// workload.Model.LayerParams (isModelLayerParams(m.LayerParams) for any
// m), not another func.
func isModelLayerParams(f func(int) (float64, float64)) bool {
	return f != nil && reflect.ValueOf(f).Pointer() == modelLayerParamsPC
}

// layerParamsMemo is LayerParams(l) for every layer l in [0,
// model.StackLayers()) of one model: [l][0] dense, [l][1] expert.
type layerParamsMemo struct {
	model  workload.Model
	params [][2]float64
}

// layerMemos holds the last few models' layer parameters (modelLayers),
// for the keys computed on any goroutine (a sweep orders its points by key
// while loading, and every worker's build computes its own).
var layerMemos struct {
	sync.Mutex
	last [4]*layerParamsMemo
	next int // the slot the next new model takes
}

// modelLayers returns c's layer parameters (LayerParams of each layer of
// c.Model), computed once per model: eachBucketAlone asked LayerParams
// for every layer of every key (≈ 250 instructions a layer, 20 k of a 70B
// key's 45 k), though a sweep's points share one model. The memo is keyed
// by c.Model's value (MoE and MLA compared by what they point to), which
// identifies the func's answers only because LayerParams is c.Model's own
// method (isModelLayerParams; the caller checks) bound to c.Model, as
// scenario plans make it and as StructureKey already assumes in hashing
// Model instead of LayerParams.
func modelLayers(c *StepConfig) *layerParamsMemo {
	layerMemos.Lock()
	defer layerMemos.Unlock()
	for _, m := range layerMemos.last {
		if m != nil && sameModel(&m.model, &c.Model) {
			return m
		}
	}
	m := &layerParamsMemo{model: c.Model, params: make([][2]float64, max(c.Model.StackLayers(), 0))}
	for l := range m.params {
		m.params[l][0], m.params[l][1] = c.LayerParams(l)
	}
	layerMemos.last[layerMemos.next] = m
	layerMemos.next = (layerMemos.next + 1) % len(layerMemos.last)
	return m
}

// sameModel reports whether a and b are equal models: every field equal,
// MoE and MLA by the values they point to (each point of a sweep may hold
// its own copies).
func sameModel(a, b *workload.Model) bool {
	if *a == *b {
		return true
	}
	x := *b
	if a.MoE != nil && x.MoE != nil && *a.MoE == *x.MoE {
		x.MoE = a.MoE
	}
	if a.MLA != nil && x.MLA != nil && *a.MLA == *x.MLA {
		x.MLA = a.MLA
	}
	return *a == x
}

// sizeAsTP is etp for the key: -1 when it equals tp (the default: the
// key then holds only whether tp exceeds 1), else etp itself.
func sizeAsTP(etp, tp int) int {
	if etp == tp {
		return -1
	}
	return etp
}

func b2i(b bool) int {
	if b {
		return 1
	}
	return 0
}

// keyHasher mixes values into h, word by word, in a fixed order; ok
// turns false at a value it cannot hash. (A hash/fnv writer took ≈ 63 k
// instructions a key with its byte slices and allocations; the word mix
// is a multiply and a shift.)
type keyHasher struct {
	h  uint64
	ok bool
}

// keySeed is the hash of nothing.
const keySeed = 0xcbf29ce484222325

// word mixes v into the hash: a xor, a multiply by an odd 64-bit constant
// (the golden ratio's) and the high half folded down, so that every bit
// of v reaches every bit of the hash within two words.
func (k *keyHasher) word(v uint64) {
	h := (k.h ^ v) * 0x9e3779b97f4a7c15
	k.h = h ^ h>>32
}

// str mixes s, its length first, eight bytes a word.
func (k *keyHasher) str(s string) {
	k.word(uint64(len(s)))
	for len(s) >= 8 {
		k.word(binary.LittleEndian.Uint64([]byte(s[:8])))
		s = s[8:]
	}
	var w uint64
	for i := 0; i < len(s); i++ {
		w |= uint64(s[i]) << (8 * i)
	}
	k.word(w)
}

// value hashes v: its kind's contents, lengths before elements, a nil
// mark before a pointer's or interface's target, an interface's dynamic
// type's name before its value; funcs are skipped (StructureKey names
// the only ones).
func (k *keyHasher) value(v reflect.Value) {
	switch v.Kind() {
	case reflect.Bool:
		k.word(uint64(b2i(v.Bool())))
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		k.word(uint64(v.Int()))
	case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64, reflect.Uintptr:
		k.word(v.Uint())
	case reflect.Float32, reflect.Float64:
		k.word(math.Float64bits(v.Float()))
	case reflect.String:
		k.str(v.String())
	case reflect.Slice, reflect.Array:
		k.word(uint64(v.Len()))
		for i := 0; i < v.Len(); i++ {
			k.value(v.Index(i))
		}
	case reflect.Struct:
		for i := 0; i < v.NumField(); i++ {
			k.value(v.Field(i))
		}
	case reflect.Pointer, reflect.Interface:
		if v.IsNil() {
			k.word(0)
			return
		}
		k.word(1)
		if v.Kind() == reflect.Interface {
			k.str(v.Elem().Type().String())
		}
		k.value(v.Elem())
	case reflect.Func:
	default:
		k.ok = false
	}
}

// hashFunc hashes the value of one type at p into k exactly as value
// hashes it through reflect (the same words in the same order), compiled
// once per type by compileHash: reflect's Field, NumField and Index on
// every field of every key cost ≈ 19 k of a 70B key's instructions.
type hashFunc func(k *keyHasher, p unsafe.Pointer)

// compileHash returns the hashFunc of type t: per kind what value does,
// with a struct's fields at their offsets (funcs skipped), a slice's or
// array's elements at their strides, a pointer's target, and an
// interface (its dynamic type varies) through value itself; a kind value
// cannot hash (map, chan, complex, unsafe pointer) turns k.ok false.
func compileHash(t reflect.Type) hashFunc {
	return compileHashIn(t, map[reflect.Type]bool{})
}

// compiledHashes holds the hashFuncs of struct types compileHash met
// inside themselves (a recursive type), looked up when first hashed.
var compiledHashes sync.Map // reflect.Type → hashFunc

// compileHashIn is compileHash with the struct types being compiled
// (open): one met again inside itself is hashed through compiledHashes.
func compileHashIn(t reflect.Type, open map[reflect.Type]bool) hashFunc {
	switch t.Kind() {
	case reflect.Bool:
		return func(k *keyHasher, p unsafe.Pointer) { k.word(uint64(b2i(*(*bool)(p)))) }
	case reflect.Int:
		return func(k *keyHasher, p unsafe.Pointer) { k.word(uint64(int64(*(*int)(p)))) }
	case reflect.Int8:
		return func(k *keyHasher, p unsafe.Pointer) { k.word(uint64(int64(*(*int8)(p)))) }
	case reflect.Int16:
		return func(k *keyHasher, p unsafe.Pointer) { k.word(uint64(int64(*(*int16)(p)))) }
	case reflect.Int32:
		return func(k *keyHasher, p unsafe.Pointer) { k.word(uint64(int64(*(*int32)(p)))) }
	case reflect.Int64:
		return func(k *keyHasher, p unsafe.Pointer) { k.word(uint64(*(*int64)(p))) }
	case reflect.Uint:
		return func(k *keyHasher, p unsafe.Pointer) { k.word(uint64(*(*uint)(p))) }
	case reflect.Uint8:
		return func(k *keyHasher, p unsafe.Pointer) { k.word(uint64(*(*uint8)(p))) }
	case reflect.Uint16:
		return func(k *keyHasher, p unsafe.Pointer) { k.word(uint64(*(*uint16)(p))) }
	case reflect.Uint32:
		return func(k *keyHasher, p unsafe.Pointer) { k.word(uint64(*(*uint32)(p))) }
	case reflect.Uint64:
		return func(k *keyHasher, p unsafe.Pointer) { k.word(*(*uint64)(p)) }
	case reflect.Uintptr:
		return func(k *keyHasher, p unsafe.Pointer) { k.word(uint64(*(*uintptr)(p))) }
	case reflect.Float32:
		return func(k *keyHasher, p unsafe.Pointer) { k.word(math.Float64bits(float64(*(*float32)(p)))) }
	case reflect.Float64:
		return func(k *keyHasher, p unsafe.Pointer) { k.word(math.Float64bits(*(*float64)(p))) }
	case reflect.String:
		return func(k *keyHasher, p unsafe.Pointer) { k.str(*(*string)(p)) }
	case reflect.Slice:
		elem, size := compileHashIn(t.Elem(), open), t.Elem().Size()
		return func(k *keyHasher, p unsafe.Pointer) {
			s := (*sliceHeader)(p)
			k.word(uint64(s.len))
			for i := range s.len {
				elem(k, unsafe.Add(s.data, uintptr(i)*size))
			}
		}
	case reflect.Array:
		elem, size, n := compileHashIn(t.Elem(), open), t.Elem().Size(), t.Len()
		return func(k *keyHasher, p unsafe.Pointer) {
			k.word(uint64(n))
			for i := range n {
				elem(k, unsafe.Add(p, uintptr(i)*size))
			}
		}
	case reflect.Struct:
		if open[t] {
			return func(k *keyHasher, p unsafe.Pointer) {
				h, _ := compiledHashes.Load(t)
				h.(hashFunc)(k, p)
			}
		}
		open[t] = true
		defer delete(open, t)
		type field struct {
			off uintptr
			h   hashFunc
		}
		var fields []field
		for i := range t.NumField() {
			if f := t.Field(i); f.Type.Kind() != reflect.Func {
				fields = append(fields, field{f.Offset, compileHashIn(f.Type, open)})
			}
		}
		h := func(k *keyHasher, p unsafe.Pointer) {
			for _, f := range fields {
				f.h(k, unsafe.Add(p, f.off))
			}
		}
		compiledHashes.LoadOrStore(t, hashFunc(h))
		return h
	case reflect.Pointer:
		elem := compileHashIn(t.Elem(), open)
		return func(k *keyHasher, p unsafe.Pointer) {
			q := *(*unsafe.Pointer)(p)
			if q == nil {
				k.word(0)
				return
			}
			k.word(1)
			elem(k, q)
		}
	case reflect.Interface:
		return func(k *keyHasher, p unsafe.Pointer) { k.value(reflect.NewAt(t, p).Elem()) }
	case reflect.Func:
		return func(*keyHasher, unsafe.Pointer) {}
	default:
		return func(k *keyHasher, _ unsafe.Pointer) { k.ok = false }
	}
}

// sliceHeader is a slice's layout in memory.
type sliceHeader struct {
	data     unsafe.Pointer
	len, cap int
}
