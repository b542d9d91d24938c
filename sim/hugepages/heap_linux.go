package hugepages

import (
	"bytes"
	"os"
	"runtime/metrics"
	"strconv"
	"sync"
	"unsafe"

	"golang.org/x/sys/unix"
)

// AdviseHeap advises MADV_HUGEPAGE over the Go heap's arenas that the
// runtime has mapped when they have grown since the last call: the run of
// adjacent anonymous mappings around p, an object on the Go heap, as
// /proc/self/maps lists them. Call it often (a sweep worker calls it
// before each point): it costs a read of the runtime's heap statistics
// (≈ 0.4 µs) when the heap has not grown, and ≈ 30 µs more when it has
// (the heap grows in steps of 4 MiB or more: 6–7 advised growths over the
// 70B sweep's 1,000 points).
//
// Why: the runtime maps the heap's growth afresh (mmap, MAP_FIXED), on
// 4 KiB pages where transparent huge pages are "madvise", and gives no
// advice; each small-object span, stack and map the sweep's points make
// in fresh memory then faults page by page, ≈ 11–13 µs a page on this
// project's machine (a PVM guest: out46's entry in docs/design.md),
// and advised before each point and summary rewrite the 70B sweep command
// faults ≈ 2,500 times instead of ≈ 3,500 (CPU −14.4±4.3 ms, ≈ −2.7%,
// six timeit sets pooled). Advised, a 2 MiB block of the heap that no
// page of is mapped yet becomes one huge page at its first touch (≈ 0.24
// µs a 4 KiB page when the host still backs the block). Only what the runtime has mapped is advised, at most a few MiB
// of it not yet in use, so the peak RSS barely moves (issue 18,
// docs/design.md "Speed", heap46).
//
// The advice is a hint: the contents never change (the kernel puts a huge
// page only where none of the block's 4 KiB pages is mapped), an error
// (no /proc, advice refused) is ignored, and where transparent huge pages
// are off it does nothing.
func AdviseHeap[T any](p *T) {
	heapAdvice.Lock()
	defer heapAdvice.Unlock()
	s := &heapAdvice.samples
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
	if mapped == heapAdvice.mapped {
		return
	}
	heapAdvice.mapped = mapped
	maps, err := os.ReadFile("/proc/self/maps")
	if err != nil {
		return
	}
	if lo, hi := anonRunAround(maps, uintptr(unsafe.Pointer(p))); hi > lo {
		unix.Syscall(unix.SYS_MADVISE, lo, hi-lo, unix.MADV_HUGEPAGE)
	}
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
	mapped  uint64 // the heap's mapped bytes at the last advice
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
