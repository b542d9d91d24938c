package hugepages

import (
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
	const huge = 2 << 20
	var zero T
	n := len(s) * int(unsafe.Sizeof(zero))
	if n < 2*huge {
		return s
	}
	b := unsafe.Slice((*byte)(unsafe.Pointer(unsafe.SliceData(s))), n)
	// madvise needs a page-aligned start: advise the 2 MiB-aligned interior.
	off := (huge - int(uintptr(unsafe.Pointer(unsafe.SliceData(b))))%huge) % huge
	end := off + (n-off)/huge*huge
	_ = syscall.Madvise(b[off:end], syscall.MADV_HUGEPAGE)
	return s
}
