package parallel

import (
	"unsafe"

	"github.com/simtrain/simtrain/sim/hugepages"
)

// warmth is how far into one array the pages are known mapped, so that a
// sweep worker asks the kernel to map its reserved arrays' pages in
// batches ahead of the writes (hugepages.Populate) and asks once for each
// page: Reserve takes the arrays from fresh memory that faults on first
// write, and on the project's machine those faults were ≈ 14% of the 70B
// sweep's CPU samples (issue 18, docs/design.md "Speed", pop42). It only
// ever saves faults: contents never depend on it.
type warmth struct {
	base  uintptr // the array's first byte, as an address only (0: none)
	ready uintptr // bytes from base already populated
}

// warmMin is the least an array must hold to be populated ahead: the
// faults of smaller ones are too few to matter.
const warmMin = 64 << 10

// warmTo maps the pages under the first n elements of s's array
// (s[:cap(s)], from its first element) that w has not mapped yet. A
// different array than w last saw starts w again from nothing.
func warmTo[T any](w *warmth, s []T, n int) {
	var zero T
	size := unsafe.Sizeof(zero)
	if n = min(n, cap(s)); n <= 0 || uintptr(cap(s))*size < warmMin {
		return
	}
	first := unsafe.Pointer(unsafe.SliceData(s[:1]))
	if base := uintptr(first); base != w.base {
		w.base, w.ready = base, 0
	}
	end := uintptr(n) * size
	if end <= w.ready {
		return
	}
	hugepages.Populate(unsafe.Slice((*byte)(unsafe.Add(first, w.ready)), end-w.ready))
	w.ready = end
}
