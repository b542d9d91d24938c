package hugepages

import (
	"math/bits"
	"sync"
	"sync/atomic"

	"golang.org/x/sys/unix"
)

// The gate says whether this process gives huge-page advice at all
// (adviseAround, Advise, AdviseHeap): on where the system has transparent
// huge pages and, in a process that asked for it (CloseWhenDear), until
// the fresh 2 MiB pages it makes are seen to be dear, or in one that
// plays analytic steps (CloseWhereUnpaid, pays_linux.go) until it finds
// they cannot pay here; then off for the rest of the process.
//
// Why: on this project's machine (a PVM guest with free page reporting,
// page_reporting_order 9) a 2 MiB block the guest has left free for
// ≈ 2 s is handed back to the host, and a huge page made from it costs
// ≈ 2.4–7.5 ms of system time to zero (the host faulting it back in)
// instead of ≈ 0.12–0.18 ms. A command run right after another (which
// has just freed its memory) finds mostly cheap ones; one run on an idle
// machine finds a few cheap ones, then only dear ones, while the 4 KiB
// pages that huge ones replace stay cheap (the kernel takes those from
// blocks too small to report, and hands out its unreported blocks first).
// A dear huge page, ≈ 7.7 µs a 4 KiB page, still beats 4 KiB pages that
// fault one by one (≈ 11–13 µs each) but not 4 KiB pages populated ahead
// (≈ 6 µs with the first touch), least of all in blocks only partly used.
// Measured after 6 s idle (median CPU, user+sys; issue 18, docs/design.md
// "Speed", cold47): the 1,000-point 70B sweep, whose arrays are populated
// ahead, 0.714 s with the advice against 0.620 s without (back to back
// 0.461 against 0.602 s); the 405B `run`, whose arrays mostly fault,
// 0.376 s with it against 0.514 s without. So the sweep asks for the gate
// and `run` does not. Watched on the sweep after 8 s idle: two to ten
// cheap blocks, then (nearly) only dear ones; back to back, mostly cheap
// ones with dear ones in short runs between them, or a few at the end:
// observe closes the gate once seven of the last eight were dear.
const (
	gateOn  int32 = iota // advise
	gateOff              // do not: no transparent huge pages, or they are dear here
)

var (
	gate     atomic.Int32
	gateInit sync.Once
	// recent holds the classes of the last recentBlocks fresh 2 MiB blocks
	// observe saw, one bit a block (1: dear), the latest in bit 0.
	recent struct {
		sync.Mutex
		bits uint32
	}
	// gateCloses says whether observe may close the gate (CloseWhenDear).
	gateCloses atomic.Bool
)

// CloseWhenDear makes this process stop its huge-page advice from the
// moment the fresh 2 MiB pages it makes are seen to be dear (observe):
// for a command whose large arrays are populated ahead (Populate,
// PopulateUpTo), as the sweep's are. Without it the advice is given
// wherever the system honours it.
func CloseWhenDear() { gateCloses.Store(true) }

// hugeWanted reports whether to give huge-page advice now: not where the
// system honours none ("never", or no transparent huge pages), nor once
// observe has closed the gate.
func hugeWanted() bool {
	gateInit.Do(func() {
		if !collapsing() {
			gate.Store(gateOff)
		}
	})
	return gate.Load() == gateOn
}

// Thresholds of the CPU time (thread ns) that mapping memory reaching n
// 2 MiB blocks took, from out46's and cold47's timings (docs/design.md
// "Speed"): above n·dearBlockNs a block was made dear (≈ 1.5 µs a 4 KiB
// page: a cheap huge page costs ≈ 0.24 µs a page, a dear one ≈ 5–15, a
// block of 4 KiB pages populated ≈ 0.5–1.0); from madeBlockNs up to that,
// one was made cheap; under madeBlockNs none was made (the blocks were
// mapped already). A dear call counts ns/dearHugeNs blocks, at least one.
const (
	dearBlockNs = 768_000
	madeBlockNs = 80_000
	dearHugeNs  = 4_000_000
)

// The gate closes once dearOf of the last recentBlocks fresh blocks were
// dear: after an idle spell every block past the first few cheap ones is
// dear, while back to back a run meets dear blocks in short runs between
// cheap ones (cold47's sequences). Closing at three dear in a row shut
// the gate in back-to-back runs too, and a run that shut it freed fewer
// 2 MiB blocks for the next one (one sequence of seven runs: 0.45 →
// 0.60–0.68 s); closing at seven of eight kept the idle run's gain
// (0.578 s against 0.584 s for three in a row and 0.640 s ungated, six
// rounds).
const (
	recentBlocks = 8
	dearOf       = 7
)

// observe classifies what populating memory that reached blocks 2 MiB
// blocks cost (ns of the thread's CPU) and closes the gate (turnOff) once
// dearOf or more of the last recentBlocks blocks made were dear.
func observe(ns int64, blocks int) {
	if !gateCloses.Load() {
		return
	}
	dear := 0
	switch {
	case ns > int64(max(blocks, 1))*dearBlockNs:
		dear = int(min(max(1, ns/dearHugeNs), recentBlocks))
	case ns >= madeBlockNs:
	default:
		return // no block made
	}
	recent.Lock()
	recent.bits = (recent.bits<<max(dear, 1) | uint32(1<<dear-1)) & (1<<recentBlocks - 1)
	off := bits.OnesCount32(recent.bits) >= dearOf
	recent.Unlock()
	if off {
		turnOff()
	}
}

// threadCPU is the calling thread's CPU time in ns (0 if unreadable): a
// time that another thread or process running meanwhile does not inflate.
func threadCPU() int64 {
	var ts unix.Timespec
	if unix.ClockGettime(unix.CLOCK_THREAD_CPUTIME_ID, &ts) != nil {
		return 0
	}
	return ts.Nano()
}

// advised is the span of the address space that huge-page advice has
// been given over, so that turning the gate off can take it back.
var advised struct {
	sync.Mutex
	lo, hi uintptr
}

// adviseRange advises MADV_HUGEPAGE over [lo, hi) (page-aligned; its
// unmapped parts skipped, an error ignored) and widens advised to hold it,
// unless the advice given before already holds over all of it (covered:
// no system call then). Advice given while turnOff runs is taken back
// here: the gate is read again after the advice, so none outlives a closed
// gate.
func adviseRange(lo, hi uintptr) {
	heap, ok := isCovered(lo, hi)
	if ok {
		return
	}
	advised.Lock()
	if advised.hi == 0 || lo < advised.lo {
		advised.lo = lo
	}
	advised.hi = max(advised.hi, hi)
	advised.Unlock()
	unix.Syscall(unix.SYS_MADVISE, lo, hi-lo, unix.MADV_HUGEPAGE)
	if gate.Load() == gateOff {
		unix.Syscall(unix.SYS_MADVISE, lo, hi-lo, unix.MADV_NOHUGEPAGE)
		return
	}
	cover(lo, hi, heap)
}

// turnOff closes the gate and withdraws the advice given so far
// (MADV_NOHUGEPAGE over advised's span, its unmapped holes skipped): an
// advised block not yet touched would otherwise still become a dear huge
// page at its first touch. Huge pages already made stay.
func turnOff() {
	if gate.Swap(gateOff) == gateOff {
		return
	}
	forgetCovered()
	advised.Lock()
	lo, hi := advised.lo, advised.hi
	advised.Unlock()
	if hi > lo {
		unix.Syscall(unix.SYS_MADVISE, lo, hi-lo, unix.MADV_NOHUGEPAGE)
	}
}
