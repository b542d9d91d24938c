package hugepages

import (
	"bytes"
	"os"
	"strconv"
	"sync"
	"syscall"
	"time"

	"golang.org/x/sys/unix"
)

// CloseWhereUnpaid closes the gate now (turnOff: the advice given so far
// withdrawn) where huge pages cannot pay here: where the host takes back
// the guest's free 2 MiB blocks and a populated 4 KiB page's first touch
// is cheap (hugePays). For a process that plays analytic steps, whose
// large arrays (the task graphs, the plays' records) are written in order
// and read stage by stage; a play at flow fidelity, whose fabric tables
// are read at random for seconds to minutes, keeps huge pages for their
// TLB reach (below). Elsewhere it does nothing.
//
// Why. Against 4 KiB pages a 2 MiB page saves the faults (or the
// populate) of its 512 pages and, in a guest whose hypervisor shadows its
// page tables, the first user-mode touch of each, ≈ 5–6 µs there even on
// a populated page (out46). What it costs: where the host takes back free
// 2 MiB blocks (free page reporting), a fresh huge page made after an
// idle spell is zeroed on memory the host must fault back in, ≈ 2.4–7.5
// ms a block, while 4 KiB pages come from fragments too small to report
// (gate_linux.go). Where both hold, as on the AMD machine the gate was
// tuned on, huge pages won back to back (the 70B sweep 0.461 s against
// 0.602 s without) and lost after an idle spell, and CloseWhenDear's gate
// closes on dear blocks. Where the host reports free blocks but a first
// touch is cheap, they save an analytic play little and still lose after
// an idle spell.
//
// Measured on the project's Intel machine (issue 18, round 72), where a
// populated page's first touch costs 0.02–0.03 µs and free 2 MiB blocks
// are reported, against main (caf6a56) after 6 s idle, alternating pairs:
// the 70B sweep −68 ± 33 ms of CPU (0.583 s against 0.653 s) and −53 ± 21
// ms of wall (10 pairs), the 405B `run` −104 ± 62 ms (8), on 131,072 GPUs
// −155 ± 36 ms (6), every rank −417 ± 107 ms (2.34 s against 2.73 s, 6),
// `validate` −81 ± 45 ms (6), the 70B plan −110 ± 45 ms (6); back to
// back, each binary in its own chain of runs, the same within the noise
// (the sweep 0.462 and 0.434 s against 0.500 and 0.455 s). At flow
// fidelity 4 KiB pages cost TLB misses instead: the 405B step on every
// rank of 16,384 GPUs 22.58 s against 20.33 s back to back (2 pairs),
// the 70B flow plan 7.45 s against 7.31 s. docs/design.md "Speed",
// round 72.
func CloseWhereUnpaid() { closeUnless(paysHere) }

// closeUnless closes the gate unless pays says huge pages pay; pays is
// not asked where the gate is closed already.
func closeUnless(pays func() bool) {
	if hugeWanted() && !pays() {
		turnOff()
	}
}

// paysHere is hugePays for this machine, probed once a process.
var paysHere = sync.OnceValue(func() bool { return hugePays(hostReclaims(), firstTouchNs()) })

// hugePays reports whether huge pages can pay here, from whether the host
// takes back free 2 MiB blocks (reporting) and what the first writes to
// touchProbePages populated 4 KiB pages took together (touchNs; < 0: not
// measured). Unknown cases keep huge pages, as before this rule.
func hugePays(reporting bool, touchNs int64) bool {
	if !reporting || touchNs < 0 {
		return true
	}
	return touchNs >= touchProbePages*dearTouchNs
}

// dearTouchNs is the first touch of a populated 4 KiB page, in ns, above
// which huge pages save a guest's shadow paging: ≈ 5,000–6,000 where the
// hypervisor shadows the page tables, 20–30 where it does not (and ≈ 270
// after an idle spell), measured on the two machines (out46, round 72).
const dearTouchNs = 1000

// touchProbePages is how many populated pages firstTouchNs writes.
const touchProbePages = 8

// hostReclaims reports whether the kernel hands free blocks back to the
// host (free page reporting: a device, virtio-balloon's, has registered):
// page_reporting_order then holds the order of the blocks reported
// (pageblock_order, 9, unless set), and while no device has registered it
// holds −1, printed unsigned. False where the file is missing or unread.
func hostReclaims() bool {
	b, err := os.ReadFile("/sys/module/page_reporting/parameters/page_reporting_order")
	return err == nil && reportingOrder(b)
}

// reportingOrder reports whether page_reporting_order's text b names an
// order blocks are reported at (a registered device), not −1.
func reportingOrder(b []byte) bool {
	o, err := strconv.ParseUint(string(bytes.TrimSpace(b)), 10, 32)
	return err == nil && o < 32
}

// firstTouchNs maps two runs of touchProbePages 4 KiB pages without
// huge-page advice, populates them, and returns the ns the first writes to
// one run's pages took together, the lesser run's, so that an interrupt
// during one does not count. −1 where the map or the populate is refused.
func firstTouchNs() int64 {
	page := syscall.Getpagesize()
	b, err := unix.Mmap(-1, 0, 2*touchProbePages*page, unix.PROT_READ|unix.PROT_WRITE, unix.MAP_PRIVATE|unix.MAP_ANON)
	if err != nil {
		return -1
	}
	defer unix.Munmap(b)
	unix.Madvise(b, unix.MADV_NOHUGEPAGE)
	if unix.Madvise(b, unix.MADV_POPULATE_WRITE) != nil {
		return -1
	}
	least := int64(-1)
	for run := range 2 {
		t0 := time.Now()
		for i := run * touchProbePages * page; i < (run+1)*touchProbePages*page; i += page {
			b[i] = 1
		}
		if d := time.Since(t0).Nanoseconds(); least < 0 || d < least {
			least = d
		}
	}
	return least
}
