package hugepages

import (
	"runtime/metrics"
	"slices"
	"sync"
)

// covered lists the address ranges over which MADV_HUGEPAGE advice has
// been given (adviseRange) and still holds, so that asking again for a
// range inside them makes no system call.
//
// Why: madvise takes the process's mmap lock for writing to give this
// advice, so a call waits for every populate another thread is running
// (which holds the lock for reading, for milliseconds when the host must
// fault a block back in) and holds off that thread's next one. The sweep's
// workers advise the blocks of each step they map ahead (adviseAround),
// mostly blocks advised before: 406–755 calls a run of the 70B sweep,
// 63–82 with this list, and 33–43 ms of the workers' time inside those
// calls after an idle spell against 2–9 ms (Go's execution trace, syscall
// profile; issue 18, docs/design.md "Speed", round 54).
//
// Advice stays on a mapping until the mapping is replaced. The Go heap's
// growth maps its new memory afresh over its reservation: whenever the
// heap's mapped bytes differ from those the list was made under, the list
// is emptied. Map's mappings may land in a hole that an advised range
// spanned (madvise skips unmapped parts): Map drops those bytes. Either
// way a wrong entry could only cost a huge page, never change contents.
var covered struct {
	sync.Mutex
	spans   [][2]uintptr // [lo, hi) ranges sorted by lo, disjoint, touching ones merged
	heap    uint64       // the heap's mapped bytes when spans were recorded
	samples [len(heapClasses)]metrics.Sample
}

// coveredHeap reads the heap's mapped bytes for covered (held); a test
// puts a counter of its own in its place, so that the heap grows exactly
// when the test says.
var coveredHeap = func() uint64 { return heapMapped(&covered.samples) }

// isCovered reports whether [lo, hi) lies inside one covered span; first,
// if the heap has grown since the spans were recorded, it empties them. It
// returns the heap's mapped bytes, for cover.
func isCovered(lo, hi uintptr) (heap uint64, ok bool) {
	covered.Lock()
	defer covered.Unlock()
	heap = coveredHeap()
	if heap != covered.heap {
		covered.spans, covered.heap = covered.spans[:0], heap
		return heap, false
	}
	return heap, spanHolds(covered.spans, lo, hi)
}

// cover records [lo, hi), advised while the heap's mapped bytes were heap,
// as covered, unless the heap has grown since: a growth in between may
// have replaced part of what was advised.
func cover(lo, hi uintptr, heap uint64) {
	covered.Lock()
	defer covered.Unlock()
	if now := coveredHeap(); now != heap || now != covered.heap {
		covered.spans, covered.heap = covered.spans[:0], now
		return
	}
	covered.spans = addSpan(covered.spans, lo, hi)
}

// uncover drops [lo, hi) from the covered spans: memory mapped there anew
// holds no advice.
func uncover(lo, hi uintptr) {
	covered.Lock()
	defer covered.Unlock()
	covered.spans = removeSpan(covered.spans, lo, hi)
}

// forgetCovered empties the covered spans (turnOff takes the advice back).
func forgetCovered() {
	covered.Lock()
	defer covered.Unlock()
	covered.spans = covered.spans[:0]
}

// spanHolds reports whether one span of sp (sorted, disjoint) holds all of
// [lo, hi).
func spanHolds(sp [][2]uintptr, lo, hi uintptr) bool {
	// i: the first span starting after lo; sp[i-1] the last starting at or before it
	i, _ := slices.BinarySearchFunc(sp, lo, func(s [2]uintptr, x uintptr) int {
		if s[0] <= x {
			return -1
		}
		return 1
	})
	return i > 0 && sp[i-1][1] >= hi
}

// addSpan returns sp (sorted, disjoint, touching spans merged) with
// [lo, hi) added, merged with every span it overlaps or touches. sp's
// array is reused when the result fits it.
func addSpan(sp [][2]uintptr, lo, hi uintptr) [][2]uintptr {
	first := 0
	for first < len(sp) && sp[first][1] < lo {
		first++
	}
	last := first
	for last < len(sp) && sp[last][0] <= hi {
		lo, hi = min(lo, sp[last][0]), max(hi, sp[last][1])
		last++
	}
	return slices.Replace(sp, first, last, [2]uintptr{lo, hi})
}

// removeSpan returns sp with the bytes of [lo, hi) taken out of its spans
// (a span that straddles it is cut in two).
func removeSpan(sp [][2]uintptr, lo, hi uintptr) [][2]uintptr {
	out := make([][2]uintptr, 0, len(sp)+1)
	for _, s := range sp {
		if s[1] <= lo || s[0] >= hi {
			out = append(out, s)
			continue
		}
		if s[0] < lo {
			out = append(out, [2]uintptr{s[0], lo})
		}
		if s[1] > hi {
			out = append(out, [2]uintptr{hi, s[1]})
		}
	}
	return out
}
