package parallel

import (
	"encoding/binary"
	"hash"
	"hash/fnv"
	"math"
	"reflect"
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
	h := fnv.New64a()
	k := keyHasher{h: h, ok: true}
	v := reflect.ValueOf(c).Elem()
	t := v.Type()
	for i := 0; i < t.NumField(); i++ {
		f := t.Field(i)
		switch f.Name {
		case "Arena", "Interrupt", "LayerParams":
			continue
		case "Layout":
			k.layout(c)
			continue
		case "Shape":
			s := c.Shape
			s.MicroBatch, s.TP, s.ETP = 0, min(max(s.TP, 1), 2), sizeAsTP(s.ETP, s.TP)
			k.value(reflect.ValueOf(s))
			continue
		}
		k.word(uint64(i))
		k.value(v.Field(i))
	}
	if !k.ok {
		return 0, false
	}
	return h.Sum64(), true
}

// layout hashes c.Layout as StructureKey says.
func (k *keyHasher) layout(c *StepConfig) {
	l := c.Layout
	if l == nil {
		k.word(0)
		return
	}
	k.word(1)
	for _, x := range []int{l.CP, l.EP, l.PP, sizeAsTP(l.ETP, l.TP), min(max(l.TP, 1), 2), b2i(l.Folded()), min(l.GroupSize(GroupDP), 2), min(l.GroupSize(GroupEDP), 2)} {
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
// embedding's (builder.layerParams, headParams, embParams, asked of a
// builder holding only c) — is 0 or at least bucket.
func eachBucketAlone(c *StepConfig, bucket float64) bool {
	b := &builder{cfg: c}
	alone := func(v float64) bool { return v == 0 || v >= bucket }
	if !alone(b.headParams()) || !alone(b.embParams()) {
		return false
	}
	for _, st := range c.Chunks {
		for _, ch := range st {
			for l := ch.FirstLayer; l < ch.FirstLayer+ch.Layers; l++ {
				if d, e := b.layerParams(l); !alone(d + e) {
					return false
				}
			}
		}
	}
	return true
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

// keyHasher writes values to h in a fixed order; ok turns false at a
// value it cannot hash.
type keyHasher struct {
	h  hash.Hash64
	ok bool
}

func (k *keyHasher) word(v uint64) {
	var b [8]byte
	binary.LittleEndian.PutUint64(b[:], v)
	k.h.Write(b[:])
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
		k.word(uint64(v.Len()))
		k.h.Write([]byte(v.String()))
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
			n := v.Elem().Type().String()
			k.word(uint64(len(n)))
			k.h.Write([]byte(n))
		}
		k.value(v.Elem())
	case reflect.Func:
	default:
		k.ok = false
	}
}
