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
	ready uintptr // bytes from base whose pages are populated (to a page boundary)
}

// warmMin is the least an array must hold to be populated ahead: the
// faults of smaller ones are too few to matter.
const warmMin = 64 << 10

// warmTo maps the pages under the first n elements of s's array
// (s[:cap(s)], from its first element) that w has not mapped yet. A
// different array than w last saw starts w again from nothing.
//
// Each step maps through the page its n-th element ends in (the array
// permitting: an array's last page, when the array ends inside it, and
// its first, when it starts inside one, are left to fault) and records
// where the mapped pages end, a page boundary, which the next step starts
// from. Why: a step used to map only the whole pages inside its own bytes
// (none under two pages) and record its end as mapped, so the page a step
// ended inside, and began the next one's, was never mapped and faulted
// when written: ≈ 1,000 of the 70B sweep command's ≈ 5,100 page faults
// fell inside ranges recorded as mapped (perf record -d; docs/design.md
// "Speed", reserve45).
func warmTo[T any](w *warmth, s []T, n int) {
	var zero T
	size := unsafe.Sizeof(zero)
	if n = min(n, cap(s)); n <= 0 || uintptr(cap(s))*size < warmMin {
		return
	}
	first := unsafe.Pointer(unsafe.SliceData(s[:1]))
	base := uintptr(first)
	if base != w.base {
		w.base, w.ready = base, 0
	}
	end := uintptr(n) * size
	if end <= w.ready {
		return
	}
	// up to the page boundary past end, within the array
	page := uintptr(hugepages.PageSize())
	end = min((base+end+page-1)&^(page-1)-base, uintptr(cap(s))*size)
	b := unsafe.Slice((*byte)(unsafe.Add(first, w.ready)), end-w.ready)
	w.ready += uintptr(hugepages.PopulateUpTo(b))
}
