package parallel

import (
	"syscall"
	"unsafe"
)

// adviseHugePages asks Linux to back s with 2 MiB pages (madvise
// MADV_HUGEPAGE; the kernel's default policy, "madvise", gives them only
// where asked). Full mode's per-task arrays (fullexec.go: an input counter
// per task and rank, task times for the kept ranks) are most of a
// 16,384-rank run's memory and are touched for the first time during the
// run: with 4 KiB pages that cost hundreds of thousands of page faults and
// a TLB miss on most accesses (issue 18; figures in docs/design.md,
// "Speed"). The advice is a hint: an error is ignored, and the contents
// are unchanged (the pages are zero either way).
func adviseHugePages[T any](s []T) {
	const huge = 2 << 20
	var zero T
	n := len(s) * int(unsafe.Sizeof(zero))
	if n < 2*huge {
		return
	}
	b := unsafe.Slice((*byte)(unsafe.Pointer(unsafe.SliceData(s))), n)
	// madvise needs a page-aligned start: advise the 2 MiB-aligned interior.
	off := (huge - int(uintptr(unsafe.Pointer(unsafe.SliceData(b))))%huge) % huge
	end := off + (n-off)/huge*huge
	_ = syscall.Madvise(b[off:end], syscall.MADV_HUGEPAGE)
}
