package hugepages

import (
	"runtime"
	"syscall"
	"unsafe"
)

// Advise asks Linux to back s with 2 MiB pages (madvise MADV_HUGEPAGE; the
// kernel's default policy, "madvise", gives them only where asked) and
// returns s. Call it on a large slice before its first write: on this
// project's machine, a virtual machine, every 4 KiB page's first touch is
// a page fault costing ~3.5 s of CPU per GB, a 2 MiB page's a 512th of the
// faults (issue 18; figures in docs/design.md, "Speed"). The advice is a
// hint: an error is ignored, and the contents are unchanged (fresh pages
// are zero either way). Slices under 4 MiB are left alone.
func Advise[T any](s []T) []T {
	advise(s)
	return s
}

// advise advises s's 2 MiB-aligned interior when s is at least 4 MiB and
// returns the advised range [lo, hi) (zeros when none).
func advise[T any](s []T) (lo, hi uintptr) {
	var zero T
	n := len(s) * int(unsafe.Sizeof(zero))
	if n < 2*huge {
		return 0, 0
	}
	b := unsafe.Slice((*byte)(unsafe.Pointer(unsafe.SliceData(s))), n)
	// madvise needs a page-aligned start: advise the 2 MiB-aligned interior.
	off := (huge - int(uintptr(unsafe.Pointer(unsafe.SliceData(b))))%huge) % huge
	end := off + (n-off)/huge*huge
	if syscall.Madvise(b[off:end], syscall.MADV_HUGEPAGE) != nil {
		return 0, 0
	}
	base := uintptr(unsafe.Pointer(unsafe.SliceData(b)))
	return base + uintptr(off), base + uintptr(end)
}

// adviseHeap is AdviseHeap's work (heap.go): allocate, advise, drop,
// collect.
func adviseHeap(n int) (lo, hi uintptr) {
	lo, hi = adviseBlock(n)
	runtime.GC() // the block is unreachable: its pages become free
	return lo, hi
}

// adviseBlock allocates n bytes and advises them; the block is dropped on
// return (not inlined, so that nothing of it stays live in the caller).
//
//go:noinline
func adviseBlock(n int) (lo, hi uintptr) {
	return advise(make([]byte, n))
}
