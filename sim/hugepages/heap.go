package hugepages

import "sync"

var heapOnce sync.Once

// AdviseHeap asks Linux to back the next n bytes of address space the Go
// heap grows into with 2 MiB pages, for a process about to build up a heap
// of many small and mid-sized slices, none large enough for Advise (a
// sweep: each worker's arena is tens of MB in arrays of a few MB at most;
// docs/design.md, "Speed"). It returns the advised range [lo, hi), or
// zeros when it did nothing.
//
// How: it allocates n bytes as one block, which the heap takes from fresh,
// never-touched memory (no page is written, so no page becomes resident),
// advises the block's 2 MiB-aligned interior (madvise MADV_HUGEPAGE) and
// drops it, collecting once so its pages are free again. Go's page
// allocator hands out the lowest free addresses first, so the heap's next
// tens of MB of allocations land in the advised range and their first
// touches fault whole 2 MiB pages, a 512th of the faults. The advice
// belongs to the address range and outlives the block; the runtime
// releases the block's untouched pages in the background (a no-op for the
// kernel: none was resident).
//
// Only the first call in a process does anything, and only for n of at
// least 4 MiB: a later call could find free pages already written, which
// the allocation would clear, touching what this means to spare. Like
// Advise it is a hint: when the runtime or the kernel does otherwise, the
// heap is as it would have been, with more address space reserved.
func AdviseHeap(n int) (lo, hi uintptr) {
	if n < 2*huge {
		return 0, 0
	}
	heapOnce.Do(func() { lo, hi = adviseHeap(n) })
	return lo, hi
}
