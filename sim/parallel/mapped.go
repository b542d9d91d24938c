package parallel

import (
	"fmt"
	"reflect"
	"unsafe"
)

// Reserved arrays outside the Go heap (issue 18, mmap41).
//
// A sweep worker reserves, once, arrays for its largest point's tasks
// (Arena.Reserve, Fork.Reserve): ≈ 60 MB a worker on the 1,000-point 70B
// sweep, of element types that hold no Go pointer. Made with make, they
// sit in the Go heap: the collector counts them in the live heap it paces
// its goal by, and a fresh large allocation is zeroed (or its pages
// cleared) under the allocating goroutine's GC accounting. Taken from
// anonymous private mappings instead (mapAnon), the kernel hands over
// zeroed pages on first touch, the collector neither sees nor paces
// around them, and Release gives them back to the OS at once (munmap)
// instead of at the next collection and scavenge.
//
// The collector does not scan a mapping, so a mapped array must never
// hold a Go pointer (a pointer, slice, string, map, interface, func or
// chan, at any depth): the only pointer into the Go heap kept there would
// be invisible to it. mappedSlice refuses such a type (panic), and
// TestMappedTypesHoldNoPointers walks every type mapped here.
//
// Where the OS offers no such mapping (mapped_other.go) or the kernel
// refuses one, the array is made on the heap as before: the results never
// depend on where the storage lives.

// mappings records the anonymous mappings a reservation took, so that
// Release can give them back. The zero value holds none.
type mappings struct {
	regions [][]byte // as mapAnon returned them (unmap wants them whole)
}

// mappedSlice returns a slice of n zero elements of T in a new anonymous
// mapping recorded in m (nil m, or a mapping refused: made on the heap,
// unrecorded). T must hold no Go pointer (holdsPointers): it panics
// otherwise, as that storage would hide what it points to from the
// collector. n <= 0 or a zero-size T: nil.
func mappedSlice[T any](m *mappings, n int) []T {
	var zero T
	size := unsafe.Sizeof(zero)
	if n <= 0 || size == 0 {
		return nil
	}
	if m == nil {
		return make([]T, n)
	}
	if t := reflect.TypeFor[T](); holdsPointers(t) {
		panic(fmt.Sprintf("parallel: mapped storage of %v, which holds Go pointers", t))
	}
	if uintptr(n) > ^uintptr(0)/2/size {
		return make([]T, n) // (make panics on the overflow as it should)
	}
	b, err := mapAnon(int(uintptr(n) * size))
	if err != nil || len(b) == 0 {
		return make([]T, n)
	}
	m.regions = append(m.regions, b)
	// A mapping starts on a page boundary, aligned for any T.
	return unsafe.Slice((*T)(unsafe.Pointer(&b[0])), n)
}

// release unmaps every mapping m recorded, which must no longer be read
// or written through any slice: the addresses fault from then on. m holds
// none afterwards.
func (m *mappings) release() {
	for i, b := range m.regions {
		if err := unmap(b); err != nil {
			// Only an address that is not a mapping of ours fails: a
			// bug, and carrying on would leak it or reuse freed memory.
			panic(fmt.Sprintf("parallel: releasing mapped storage: %v", err))
		}
		m.regions[i] = nil
	}
	m.regions = m.regions[:0]
}

// bytes is the size of m's mappings (tests).
func (m *mappings) bytes() int {
	n := 0
	for _, b := range m.regions {
		n += len(b)
	}
	return n
}

// holdsPointers reports whether a value of type t holds anything the
// garbage collector must see: a pointer, slice, string, map, interface,
// func, chan or unsafe pointer, in t itself or in an array element or a
// struct field at any depth.
func holdsPointers(t reflect.Type) bool {
	switch t.Kind() {
	case reflect.Bool, reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64,
		reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64, reflect.Uintptr,
		reflect.Float32, reflect.Float64, reflect.Complex64, reflect.Complex128:
		return false
	case reflect.Array:
		return t.Len() > 0 && holdsPointers(t.Elem())
	case reflect.Struct:
		for i := range t.NumField() {
			if holdsPointers(t.Field(i).Type) {
				return true
			}
		}
		return false
	default: // pointers, slices, strings, maps, interfaces, funcs, chans, unsafe pointers
		return true
	}
}
