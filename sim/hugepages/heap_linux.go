package hugepages

import (
	"bytes"
	"os"
	"runtime/metrics"
	"strconv"
	"sync"
	"syscall"
	"time"
	"unsafe"

	"golang.org/x/sys/unix"
)

// AdviseHeap advises MADV_HUGEPAGE over the Go heap's arenas that the
// runtime has mapped when they have grown since the last call: the run of
// adjacent anonymous mappings around p, an object on the Go heap, as
// /proc/self/maps lists them; and it puts the blocks of the heap's
// writable mappings that are new since the last call on huge pages at
// once (collapse: the growth's first block is touched before the call).
// Call it often (a sweep worker calls it before each point): it costs a
// read of the runtime's heap statistics (≈ 0.4 µs) when the heap has not
// grown, and ≈ 30 µs and a collapse or two more when it has (the heap
// grows in steps of 4 MiB or more: 6–7 advised growths over the 70B
// sweep's 1,000 points).
//
// Why: the runtime maps the heap's growth afresh (mmap, MAP_FIXED), on
// 4 KiB pages where transparent huge pages are "madvise", and gives no
// advice; each small-object span, stack and map the sweep's points make
// in fresh memory then faults page by page, ≈ 11–13 µs a page on this
// project's machine (a PVM guest: out46's entry in docs/design.md).
// Advised before each point and summary rewrite, the 70B sweep command
// faulted ≈ 2,500 times instead of ≈ 3,500 (CPU −14.4±4.3 ms, ≈ −2.7%,
// six timeit sets pooled); the collapse took it to ≈ 2,000 (−26±5 ms
// more). Advised, a 2 MiB block of the heap that no page of is mapped yet
// becomes one huge page at its first touch (≈ 0.24 µs a 4 KiB page when
// the host still backs the block). Only what the runtime has mapped is
// advised, at most a few MiB of it not yet in use, so the peak RSS barely
// moves (issue 18, docs/design.md "Speed", heap46).
//
// The advice is a hint: the contents never change (the kernel puts a huge
// page only where none of the block's 4 KiB pages is mapped, and a
// collapse copies those that are), an error (no /proc, advice refused)
// is ignored, and where transparent huge pages are off, or the gate is
// closed (gate_linux.go: fresh huge pages dear), it does nothing.
func AdviseHeap[T any](p *T) {
	if !hugeWanted() {
		return // fresh huge pages are dear here: gate_linux.go
	}
	heapAdvice.Lock()
	defer heapAdvice.Unlock()
	mapped := heapMapped(&heapAdvice.samples)
	if mapped == heapAdvice.mapped {
		return
	}
	heapAdvice.mapped = mapped
	maps, err := os.ReadFile("/proc/self/maps")
	if err != nil {
		return
	}
	lo, hi := anonRunAround(maps, uintptr(unsafe.Pointer(p)))
	if hi <= lo {
		return
	}
	adviseRange(lo, hi)
	rw := writableIn(maps, lo, hi)
	heapAdvice.collapsed = heapAdvice.collapsed[:0]
	if heapAdvice.rw != nil && collapsing() {
		for _, r := range rw {
			for _, n := range uncovered(r, heapAdvice.rw) {
				heapAdvice.collapsed = collapse(heapAdvice.collapsed, n[0], n[1])
			}
		}
	}
	heapAdvice.rw = rw
}

// collapse asks Linux to put each hugeBlock-aligned block that [lo, hi)
// reaches on a huge page now (madvise MADV_COLLAPSE, Linux 6.1), one call
// a block, copying the 4 KiB pages already mapped there, and appends each
// call to dst. Why: the span whose allocation grew the heap, and whatever
// the point allocates next, lie in the growth's first block and touch its
// pages before AdviseHeap's next call sees the growth, so the advice came
// too late for that block: each of its other pages then faulted alone.
// Collapsed at the next call, the 70B sweep command faulted ≈ 700 times
// less again (≈ 2,000 against ≈ 2,800) and took 26±5 ms less CPU (timeit,
// 40 and 60 pairs pooled; issue 18, docs/design.md "Speed", heap46). The
// contents never change (the kernel copies the mapped pages under the
// mmap lock, as khugepaged does).
//
// One call a block, not one over the range: Linux 6.18 (this project's
// machine) stops a range's collapse at the first block with no page
// mapped (EINVAL), so a growth whose first block was still empty had none
// of its touched blocks collapsed, and a range starting in the reserve
// none at all (measured on fresh mappings with /proc/self/smaps'
// AnonHugePages: issue 18, docs/design.md "Speed", collapse46). An empty
// block's call fails at once (the advice gives it a huge page at its
// first touch). A block refused with EAGAIN (a page of it not yet on the
// kernel's LRU lists: another thread faulted it a moment before, as the
// run's simulating goroutine does while WatchHeap's collapses) is asked
// once more: the call drains those lists first, and the second call took
// the block in 2 of the 3 refusals of a 405B run watched (collapse46).
//
// A block collapsed is a fresh huge page made: where the gate may close,
// its cost tells the gate whether such pages are dear here (observe), and
// once the gate is closed no block is asked for (gate_linux.go). Each
// call's error number (0: the block collapsed or huge already) is
// otherwise only recorded: a collapse is best-effort, and the kernel
// refuses one (EAGAIN, ENOMEM) when it finds no free 2 MiB page or the
// block changes under it.
func collapse(dst []collapseCall, lo, hi uintptr) []collapseCall {
	lo &^= hugeBlock - 1
	for ; lo < hi && hugeWanted(); lo += hugeBlock {
		timed := gateCloses.Load() // as in populate: two clock reads only where they count
		var t0 int64
		if timed {
			t0 = threadCPU()
		}
		_, _, err := unix.Syscall(unix.SYS_MADVISE, lo, hugeBlock, unix.MADV_COLLAPSE)
		if err == unix.EAGAIN { // once more: see above
			_, _, err = unix.Syscall(unix.SYS_MADVISE, lo, hugeBlock, unix.MADV_COLLAPSE)
		}
		if timed && err == 0 {
			observe(threadCPU()-t0, 1) // a fresh huge page, dear or cheap: gate_linux.go
		}
		dst = append(dst, collapseCall{lo, lo + hugeBlock, err})
	}
	return dst
}

// collapseCall is one collapse AdviseHeap asked for: the block and the
// call's error number (for the tests, which check a block's residency
// only where the kernel did collapse it).
type collapseCall struct {
	lo, hi uintptr
	err    syscall.Errno
}

// collapsing reports whether the system's transparent huge pages honour
// advice ("always" or "madvise" in /sys/kernel/mm/transparent_hugepage/
// enabled): MADV_COLLAPSE makes huge pages whatever that setting says,
// and where an administrator chose "never" the heap is left alone.
var collapsing = sync.OnceValue(func() bool {
	b, err := os.ReadFile("/sys/kernel/mm/transparent_hugepage/enabled")
	return err == nil && (bytes.Contains(b, []byte("[always]")) || bytes.Contains(b, []byte("[madvise]")))
})

// writableIn returns the writable anonymous mappings that maps,
// /proc/self/maps' text, lists inside [lo, hi), adjacent ones joined.
func writableIn(maps []byte, lo, hi uintptr) (out [][2]uintptr) {
	for line := range bytes.SplitSeq(maps, []byte{'\n'}) {
		s, e, anon, ok := parseMapsLine(line)
		if !ok || !anon || s < lo || e > hi {
			continue
		}
		if perms := bytes.Fields(line)[1]; len(perms) < 2 || perms[1] != 'w' {
			continue
		}
		if n := len(out); n > 0 && out[n-1][1] == s {
			out[n-1][1] = e
		} else {
			out = append(out, [2]uintptr{s, e})
		}
	}
	return out
}

// uncovered returns the parts of [r[0], r[1]) that no range of by holds,
// in order.
func uncovered(r [2]uintptr, by [][2]uintptr) [][2]uintptr {
	parts := [][2]uintptr{r}
	for _, b := range by {
		var next [][2]uintptr
		for _, p := range parts {
			if b[1] <= p[0] || b[0] >= p[1] {
				next = append(next, p)
				continue
			}
			if p[0] < b[0] {
				next = append(next, [2]uintptr{p[0], b[0]})
			}
			if b[1] < p[1] {
				next = append(next, [2]uintptr{b[1], p[1]})
			}
		}
		parts = next
	}
	return parts
}

// WatchHeap calls AdviseHeap(p) every period, on a goroutine of its own,
// until stop is called (stop returns once the goroutine has ended): for a
// command whose heap grows inside one long computation, where no loop of
// its own could call AdviseHeap, as the sweep's workers do before each
// point. Measured on the 405B `run` (scenarios/llama3-405b-16k-h100.yaml,
// every 1 ms): page faults ≈ 15,000 → ≈ 6,000, CPU ≈ 0.51 → ≈ 0.46 s;
// `run --all-ranks --no-timeline` ≈ 23,000 → ≈ 9,000 faults (issue 18,
// docs/design.md "Speed", heap46). Where transparent huge pages are off
// ("never") it starts nothing.
func WatchHeap[T any](p *T, period time.Duration) (stop func()) {
	if !collapsing() {
		return func() {}
	}
	t := time.NewTicker(period)
	end := watchHeap(p, t.C)
	return func() {
		t.Stop()
		end()
	}
}

// watchHeap calls AdviseHeap(p) at each tick until the returned function
// is called, which returns once the goroutine has ended, or until a tick
// finds the gate closed (CloseWhereUnpaid, observe): no advice is given
// from then on, and each tick only woke the process (`run --all-ranks`
// of the 405B scenario −29 ± 23 and −36 ± 39 ms of CPU with the gate
// closed, two sets of 6 pairs; issue 18, round 72).
func watchHeap[T any](p *T, ticks <-chan time.Time) (stop func()) {
	done, ended := make(chan struct{}), make(chan struct{})
	go func() {
		defer close(ended)
		for {
			select {
			case <-done:
				return
			case <-ticks:
				if !hugeWanted() {
					return
				}
				AdviseHeap(p)
			}
		}
	}()
	return func() {
		close(done)
		<-ended
	}
}

// heapMapped is the bytes of the heap's mapped arenas, read through s
// (the caller's samples, kept from call to call: no allocation).
func heapMapped(s *[len(heapClasses)]metrics.Sample) uint64 {
	if s[0].Name == "" {
		for i, n := range heapClasses {
			s[i].Name = n
		}
	}
	metrics.Read(s[:])
	var mapped uint64
	for i := range s {
		if s[i].Value.Kind() == metrics.KindUint64 {
			mapped += s[i].Value.Uint64()
		}
	}
	return mapped
}

// heapClasses are the runtime's memory classes whose sum is the heap's
// mapped arenas (runtime/metrics: "/memory/classes/heap/" ones).
var heapClasses = [...]string{
	"/memory/classes/heap/free:bytes",
	"/memory/classes/heap/objects:bytes",
	"/memory/classes/heap/released:bytes",
	"/memory/classes/heap/stacks:bytes",
	"/memory/classes/heap/unused:bytes",
}

var heapAdvice struct {
	sync.Mutex
	samples [len(heapClasses)]metrics.Sample
	mapped  uint64       // the heap's mapped bytes at the last advice
	rw      [][2]uintptr // the heap's writable mappings then (nil before the first)
	// collapsed are the collapses the last advice asked for.
	collapsed []collapseCall
}

// anonRunAround returns the span [lo, hi) of the longest run of adjacent
// anonymous mappings (no file, inode 0, no name such as [stack] other
// than one given to anonymous memory, "[anon:…]") in maps, /proc/self/maps' text, that holds address a; lo == hi
// when no anonymous mapping holds a. The Go runtime reserves its heap
// arenas in one address range and maps their used part read-write inside
// it; the reserve (PROT_NONE) and the mapped parts list as adjacent
// anonymous mappings, split where advice or protection differs.
func anonRunAround(maps []byte, a uintptr) (lo, hi uintptr) {
	found := false
	for len(maps) > 0 {
		line := maps
		if i := bytes.IndexByte(maps, '\n'); i >= 0 {
			line, maps = maps[:i], maps[i+1:]
		} else {
			maps = nil
		}
		start, end, anon, ok := parseMapsLine(line)
		if !ok {
			continue
		}
		switch {
		case !anon:
			if found {
				return lo, hi
			}
			lo, hi = 0, 0
		case hi != 0 && start == hi:
			hi = end
		default:
			if found {
				return lo, hi
			}
			lo, hi = start, end
		}
		if anon && start <= a && a < end {
			found = true
		}
	}
	if found {
		return lo, hi
	}
	return 0, 0
}

// parseMapsLine reads one /proc/self/maps line: "start-end perms offset
// dev inode [path]", anon when it has inode 0 and no path (or a name
// given to anonymous memory).
func parseMapsLine(line []byte) (start, end uintptr, anon, ok bool) {
	f := bytes.Fields(line)
	if len(f) < 5 {
		return 0, 0, false, false
	}
	se := bytes.SplitN(f[0], []byte{'-'}, 2)
	if len(se) != 2 {
		return 0, 0, false, false
	}
	s, err1 := strconv.ParseUint(string(se[0]), 16, 64)
	e, err2 := strconv.ParseUint(string(se[1]), 16, 64)
	if err1 != nil || err2 != nil || e <= s {
		return 0, 0, false, false
	}
	// A name the kernel gives anonymous memory on request ("[anon: Go:
	// heap]" where the runtime names its mappings) still marks it anonymous.
	anon = string(f[4]) == "0" && (len(f) == 5 || bytes.HasPrefix(f[5], []byte("[anon:")))
	return uintptr(s), uintptr(e), anon, true
}
