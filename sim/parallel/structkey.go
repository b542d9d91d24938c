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
// emits TP collectives only then. Layout keeps PP, CP, EP, ETP and DP, and
// whether it is folded; the DP gradient buckets (StepConfig.BucketParams,
// gradReady) depend on the parameters per GPU (1/TP) and the bucket size
// (the DP group's), so a configuration with ZeRO below 3, a DP group
// above 1 and no BucketParams of its own keeps TP and DP in its key. The
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
	if c.Zero < 3 && c.BucketParams <= 0 && l.GroupSize(GroupDP) > 1 {
		k.word(uint64(int64(l.TP)))
		k.word(uint64(int64(l.GroupSize(GroupDP))))
	}
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
