package parallel

import (
	"reflect"
	"runtime"
	"unsafe"

	"github.com/simtrain/simtrain/sim/hugepages"
)

// mappings is the memory outside the Go heap (hugepages.Map) that an
// arena's or a fork's reservations (Arena.Reserve, Fork.Reserve) live in,
// held by the Arena or forkCopy it is a field of and given back
// (hugepages.Unmap) once that holder is unreachable. Every slice of it is
// reachable only through its holder or through what points to the holder:
// an arena's programs (Program.arena), its executor (a field of the
// Arena), a fork's parked copies (forkCopy.parkA), a Fork's saved windows
// (read only while the Fork's cp is their forkCopy: ShareCopies drops them
// otherwise). An array it replaces stays mapped until then, since the last
// build's programs and a fork's parked copies may still read it; the
// replacement is at least twice as large, so what is kept so is at most
// the live array's size.
//
// Why: Reserve made ≈ 170 MB of arrays on the Go heap for the 70B sweep's
// two workers (≈ 85 MB for one), which took the heap past the goal the
// load's collection had set and started a second collection at once. It
// freed nothing (97 → 97 MB live), and its sweep pushed every span in use
// onto fresh span-set blocks: 310–360 of the command's ≈ 4,000 page faults
// after an idle spell (perf record -e page-faults, runtime.(*spanSet).push
// under the sweep and under Reserve's makeslice, its assist's marking and
// the spans' metadata), ≈ 12 µs each (issue 18, docs/design.md "Speed",
// reserve52). Outside the heap the reservations set off no collection; the
// arrays hold no pointers, so the collector has nothing to find in them.
type mappings struct {
	h *mapHolder // nil until the first mapping
}

// mapHolder is what the cleanup is attached to: referenced by its
// mappings alone, so unreachable exactly when their holder is.
type mapHolder struct{ list *mapList }

// mapList is the cleanup's argument: the mappings to give back.
type mapList struct{ b [][]byte }

// freshSlice returns n zero elements in fresh memory: mapped outside the Go
// heap and owned by m when T holds no pointers (pointerFree) and the
// system maps memory (hugepages.Map: Linux), else made on the heap. Its
// pages are mapped by the kernel at their first write or populate, none
// before (the memory is known zero: nothing clears it).
func freshSlice[T any](m *mappings, n int) []T {
	var zero T
	size := int(unsafe.Sizeof(zero))
	if n <= 0 || size == 0 || !pointerFree(reflect.TypeFor[T]()) {
		return make([]T, n)
	}
	b := hugepages.Map(n * size)
	if b == nil {
		return make([]T, n)
	}
	if m.h == nil {
		l := new(mapList)
		m.h = &mapHolder{list: l}
		runtime.AddCleanup(m.h, unmapAll, l)
	}
	m.h.list.b = append(m.h.list.b, b)
	return unsafe.Slice((*T)(unsafe.Pointer(unsafe.SliceData(b))), n)
}

// unmapAll gives back every mapping of l (freshSlice's cleanup).
func unmapAll(l *mapList) {
	for _, b := range l.b {
		hugepages.Unmap(b)
	}
	l.b = nil
}

// pointerFree says a value of type t holds no pointer the collector would
// have to see: only booleans, numbers, and arrays and structs of them.
func pointerFree(t reflect.Type) bool {
	switch t.Kind() {
	case reflect.Bool, reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64,
		reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64, reflect.Uintptr,
		reflect.Float32, reflect.Float64, reflect.Complex64, reflect.Complex128:
		return true
	case reflect.Array:
		return t.Len() == 0 || pointerFree(t.Elem())
	case reflect.Struct:
		for i := range t.NumField() {
			if !pointerFree(t.Field(i).Type) {
				return false
			}
		}
		return true
	}
	return false
}
