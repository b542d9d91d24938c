package hugepages

import (
	"syscall"
	"unsafe"

	"golang.org/x/sys/unix"
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
	// madvise needs an aligned start: advise the 2 MiB-aligned interior.
	if b := interior(s, hugeBlock, 2*hugeBlock); len(b) > 0 && hugeWanted() {
		lo := uintptr(unsafe.Pointer(unsafe.SliceData(b)))
		adviseRange(lo, lo+uintptr(len(b)))
	}
	return s
}

// Populate asks Linux to map the pages under s now, writable, in one call
// (madvise MADV_POPULATE_WRITE) instead of one page fault at each page's
// first write, and returns s. On this project's machine, a virtual
// machine, a fault costs far more than mapping the same page in a batch:
// populating a sweep worker's arrays ahead of its builds cut the 70B
// sweep's CPU by ≈ 9% (issue 18, docs/design.md "Speed", pop42). Only
// whole pages inside s are populated (a page s shares with its neighbours
// faults as before, unless a huge page below covers it), contents are
// unchanged (an unwritten page reads as zero either way), and an error
// (an older kernel) is ignored: the pages then fault as before.
//
// The 2 MiB blocks s reaches are first advised MADV_HUGEPAGE (adviseAround),
// so that a block the kernel finds wholly unmapped is populated as one
// 2 MiB page: see adviseAround for why.
func Populate[T any](s []T) []T {
	populate(s, 2)
	return s
}

// PopulateUpTo populates the whole pages inside s as Populate does, one
// page or more (Populate leaves slices under two pages alone), and returns
// the byte offset in s where they end: 0 when none is inside s. Where the
// system does not populate (the advice refused: Linux before 5.14), it
// returns s's length in bytes: nothing will be, and a caller stepping
// through an array moves on (its pages fault as before) rather than ask
// again. A caller mapping an array in steps starts its next step there, a
// page boundary, so that the page a step ends inside is mapped by the next
// step rather than left to fault (issue 18, docs/design.md "Speed",
// reserve45).
func PopulateUpTo[T any](s []T) (n int) { return populate(s, 1) }

// populate is Populate and PopulateUpTo: s's whole pages mapped when it
// holds at least least pages' bytes, and where they end in s (s's length
// in bytes when the advice is refused).
func populate[T any](s []T, least int) int {
	page := syscall.Getpagesize()
	b := interior(s, page, least*page)
	if len(b) == 0 {
		return 0
	}
	blocks := adviseAround(b)
	// timed (two clock reads) only where the gate may close: gate_linux.go
	timed := blocks > 0 && gateCloses.Load()
	var t0 int64
	if timed {
		t0 = threadCPU()
	}
	if unix.Madvise(b, unix.MADV_POPULATE_WRITE) != nil { // Linux 5.14
		var zero T
		return len(s) * int(unsafe.Sizeof(zero))
	}
	if timed {
		observe(threadCPU()-t0, blocks) // are fresh huge pages dear here?
	}
	return int(uintptr(unsafe.Pointer(unsafe.SliceData(b)))-uintptr(unsafe.Pointer(unsafe.SliceData(s)))) + len(b)
}

// hugeBlock is a huge page's size and alignment on x86-64 and arm64 with
// 4 KiB pages (Linux's PMD size).
const hugeBlock = 2 << 20

// adviseAround advises MADV_HUGEPAGE over the hugeBlock-aligned blocks that
// b's bytes reach, its neighbours' bytes in them included, before b is
// populated. Why: on this project's machine (a PVM guest: the hypervisor
// shadows the guest's page tables) the first user-mode touch of every
// 4 KiB page costs ≈ 5–6 µs of user CPU even when the page was populated
// (the shadow entry is made then), on top of the fault's own ≈ 6 µs of
// system time when it was not; a 2 MiB page costs that once for its 512
// pages: ≈ 0.24 µs a 4 KiB page in all, populating included, when the
// guest's free 2 MiB block is memory the host still backs, and ≈ 7.7 µs
// when the host dropped it (free page reporting: a block left free for
// ≈ 2 s), about what a populated 4 KiB page costs (timed on a 32–64 MiB
// mmap'd array: fault and touch, populate, then touch; issue 18,
// docs/design.md "Speed", out46). The sweep's populated arrays are its
// largest (the arena's pools, the play's state, the forks' copies) and
// populated ahead of the writes, so their blocks fill, and a command run
// soon after another (their memory freed back warm) took ≈ 10% less CPU;
// after an idle spell the host has dropped those blocks and huge pages
// cost more than they save there, which the gate (gate_linux.go) watches.
// The advice is a hint on the mapping (madvise takes whole pages; the
// range's unmapped parts are skipped, an error ignored): contents never
// change (the kernel puts a 2 MiB page only where none of its 4 KiB pages
// is mapped yet), so advising a neighbour's bytes is harmless; where
// transparent huge pages are off ("never") it does nothing.
//
// It returns the number of blocks advised: 0 when the gate is shut
// (gate_linux.go: fresh huge pages are dear here), and then it gives none.
func adviseAround(b []byte) (blocks int) {
	if !hugeWanted() {
		return 0
	}
	lo := uintptr(unsafe.Pointer(unsafe.SliceData(b)))
	hi := lo + uintptr(len(b))
	lo &^= hugeBlock - 1
	hi = (hi + hugeBlock - 1) &^ (hugeBlock - 1)
	adviseRange(lo, hi)
	return int((hi - lo) / hugeBlock)
}

// Populating reports whether this system populates pages ahead (Populate,
// PopulateUpTo): Linux 5.14 or later, asked with an empty range.
func Populating() bool {
	_, _, errno := unix.Syscall(unix.SYS_MADVISE, 0, 0, unix.MADV_POPULATE_WRITE)
	return errno == 0
}

// PageSize is the operating system's page size in bytes.
func PageSize() int { return syscall.Getpagesize() }

// interior returns the bytes under s from its first align-aligned address
// to the end of its last whole align-sized block (madvise takes aligned
// ranges, and advice must not reach a neighbour's bytes), or nil when s
// holds fewer than least bytes.
func interior[T any](s []T, align, least int) []byte {
	var zero T
	n := len(s) * int(unsafe.Sizeof(zero))
	if n < least {
		return nil
	}
	b := unsafe.Slice((*byte)(unsafe.Pointer(unsafe.SliceData(s))), n)
	off := (align - int(uintptr(unsafe.Pointer(unsafe.SliceData(b))))%align) % align
	return b[off : off+(n-off)/align*align]
}

// Map returns n bytes of fresh private anonymous memory (mmap), zero, with
// no page mapped until it is written or populated, outside the Go heap:
// the collector neither counts it in the heap it paces itself by, nor
// scans it, nor frees it. It must hold no Go pointers, and it is given
// back with Unmap once nothing refers to it. Nil when n <= 0 or the system
// refuses.
func Map(n int) []byte {
	if n <= 0 {
		return nil
	}
	b, err := unix.Mmap(-1, 0, n, unix.PROT_READ|unix.PROT_WRITE, unix.MAP_PRIVATE|unix.MAP_ANON)
	if err != nil {
		return nil
	}
	lo := uintptr(unsafe.Pointer(unsafe.SliceData(b)))
	uncover(lo, lo+uintptr(n)) // it may lie where advice was given over a hole
	return b
}

// Unmap gives back memory Map returned (the whole slice Map returned);
// nothing may refer to it afterwards.
func Unmap(b []byte) { unix.Munmap(b) }
