package parallel

import (
	"syscall"
	"unsafe"
)

// adviseHugePages asks Linux to back s with 2 MiB pages (madvise
// MADV_HUGEPAGE; the kernel's default policy, "madvise", gives them only
// where asked). Full mode's task state, 24 bytes per task and rank, is
// most of a 16,384-rank run's memory and is touched for the first time
// during the run: with 4 KiB pages that cost ~340,000 page faults and a TLB
// miss on most accesses (issue 18; figures in docs/design.md, "Speed"). The advice is a hint: an error is ignored,
// and the contents are unchanged (the pages are zero either way).
func adviseHugePages(s []taskState) {
	const huge = 2 << 20
	n := len(s) * int(unsafe.Sizeof(taskState{}))
	if n < 2*huge {
		return
	}
	b := unsafe.Slice((*byte)(unsafe.Pointer(unsafe.SliceData(s))), n)
	// madvise needs a page-aligned start: advise the 2 MiB-aligned interior.
	off := (huge - int(uintptr(unsafe.Pointer(unsafe.SliceData(b))))%huge) % huge
	end := off + (n-off)/huge*huge
	_ = syscall.Madvise(b[off:end], syscall.MADV_HUGEPAGE)
}
