package hugepages

import (
	"runtime"
	"runtime/metrics"
	"slices"
	"strings"
	"testing"
	"unsafe"

	"golang.org/x/sys/unix"
)

type span = [2]uintptr

// fakeHeap makes the heap's mapped bytes, as covered reads them, the
// value *n holds (t changes it to "grow" the heap), until t ends.
func fakeHeap(t *testing.T, n *uint64) {
	real := coveredHeap
	coveredHeap = func() uint64 { return *n }
	t.Cleanup(func() { coveredHeap = real })
}

// spanEdit is one case of an edit of a span list: in with [lo, hi) added
// or removed gives want.
type spanEdit struct {
	name   string
	in     []span
	lo, hi uintptr
	want   []span
}

// checkSpanEdits runs edit (addSpan or removeSpan, named name) on each
// case, on a copy of its list.
func checkSpanEdits(t *testing.T, name string, edit func([]span, uintptr, uintptr) []span, cases []spanEdit) {
	t.Helper()
	for _, tc := range cases {
		if got := edit(slices.Clone(tc.in), tc.lo, tc.hi); !slices.Equal(got, tc.want) {
			t.Errorf("%s: %s(%v, %d, %d) = %v, want %v", tc.name, name, tc.in, tc.lo, tc.hi, got, tc.want)
		}
	}
}

func TestAddSpan(t *testing.T) {
	checkSpanEdits(t, "addSpan", addSpan, []spanEdit{
		{"into nothing", nil, 10, 20, []span{{10, 20}}},
		{"before all", []span{{30, 40}}, 10, 20, []span{{10, 20}, {30, 40}}},
		{"after all", []span{{30, 40}}, 50, 60, []span{{30, 40}, {50, 60}}},
		{"between", []span{{0, 5}, {30, 40}}, 10, 20, []span{{0, 5}, {10, 20}, {30, 40}}},
		{"touching the left", []span{{0, 10}}, 10, 20, []span{{0, 20}}},
		{"touching the right", []span{{20, 30}}, 10, 20, []span{{10, 30}}},
		{"inside one", []span{{0, 100}}, 10, 20, []span{{0, 100}}},
		{"bridging three", []span{{0, 10}, {15, 18}, {25, 30}, {50, 60}}, 5, 27, []span{{0, 30}, {50, 60}}},
		{"over all", []span{{10, 20}, {30, 40}}, 0, 100, []span{{0, 100}}},
	})
}

func TestRemoveSpan(t *testing.T) {
	checkSpanEdits(t, "removeSpan", removeSpan, []spanEdit{
		{"from nothing", nil, 10, 20, []span{}},
		{"apart", []span{{0, 10}, {30, 40}}, 10, 30, []span{{0, 10}, {30, 40}}},
		{"a whole span", []span{{0, 10}, {20, 30}}, 15, 35, []span{{0, 10}}},
		{"cut in two", []span{{0, 100}}, 10, 20, []span{{0, 10}, {20, 100}}},
		{"the ends of two", []span{{0, 10}, {20, 30}}, 5, 25, []span{{0, 5}, {25, 30}}},
	})
}

func TestSpanHolds(t *testing.T) {
	sp := []span{{10, 20}, {30, 40}}
	for _, tc := range []struct {
		lo, hi uintptr
		want   bool
	}{
		{10, 20, true}, {12, 18, true}, {30, 40, true}, {35, 36, true},
		{5, 15, false}, {15, 25, false}, {20, 30, false}, {25, 35, false},
		{38, 45, false}, {0, 5, false}, {50, 60, false}, {10, 40, false},
	} {
		if got := spanHolds(sp, tc.lo, tc.hi); got != tc.want {
			t.Errorf("spanHolds(%v, %d, %d) = %v, want %v", sp, tc.lo, tc.hi, got, tc.want)
		}
	}
}

// TestCoveredAfterAdvice: a range advised once is covered, and so is any
// part of it, until the heap grows (its growth maps fresh memory, which
// holds no advice), a new mapping lands on it (Map), or the gate closes.
func TestCoveredAfterAdvice(t *testing.T) {
	skipWithoutHugeAdvice(t)
	openGate(t)
	heap := uint64(1 << 30)
	fakeHeap(t, &heap)
	const huge = 2 << 20
	b := Map(6 * huge)
	if b == nil {
		t.Skip("mmap refused")
	}
	defer Unmap(b)
	base := uintptr(unsafe.Pointer(&b[0]))
	lo := (base + huge - 1) &^ (huge - 1)
	hi := lo + 4*huge
	if _, ok := isCovered(lo, hi); ok {
		t.Fatal("a fresh mapping is covered before any advice")
	}
	adviseRange(lo, hi)
	if !strings.Contains(vmFlags(t, lo+huge), "hg") {
		t.Fatalf("adviseRange gave no advice (VmFlags %q)", vmFlags(t, lo+huge))
	}
	if _, ok := isCovered(lo+huge, lo+2*huge); !ok {
		t.Errorf("a part of an advised range is not covered")
	}
	// Asked again, adviseRange makes no call: advice taken back behind
	// its back (MADV_NOHUGEPAGE) stays taken back.
	advisedBytes := b[lo-base : hi-base]
	if err := unix.Madvise(advisedBytes, unix.MADV_NOHUGEPAGE); err != nil {
		t.Fatal(err)
	}
	adviseRange(lo+huge, lo+3*huge)
	if f := vmFlags(t, lo+2*huge); strings.Contains(f, "hg") {
		t.Errorf("adviseRange advised a covered range again (VmFlags %q)", f)
	}
	unix.Madvise(advisedBytes, unix.MADV_HUGEPAGE)
	if _, ok := isCovered(lo, hi+huge); ok {
		t.Errorf("a range reaching past the advised one is covered")
	}
	// The heap grows: the list is emptied.
	heap += 4 << 20
	if _, ok := isCovered(lo+huge, lo+2*huge); ok {
		t.Errorf("still covered after the heap grew")
	}
	// ... and advice given while it grows is not recorded.
	h, _ := isCovered(lo, hi)
	heap += 4 << 20
	cover(lo, hi, h)
	if _, ok := isCovered(lo, hi); ok {
		t.Errorf("covered by advice given before the heap grew")
	}
	// ... nor when another thread saw the growth first.
	h, _ = isCovered(lo, hi)
	heap += 4 << 20
	isCovered(0, 1)
	cover(lo, hi, h)
	if _, ok := isCovered(lo, hi); ok {
		t.Errorf("covered by advice given before the heap grew, another caller having seen the growth")
	}
	// Map's new mappings drop what they overlap.
	adviseRange(lo, hi)
	if _, ok := isCovered(lo, hi); !ok {
		t.Fatal("advised again, not covered")
	}
	uncover(lo+huge, lo+2*huge)
	if _, ok := isCovered(lo, hi); ok {
		t.Errorf("covered across a range a new mapping took")
	}
	if _, ok := isCovered(lo+2*huge, hi); !ok {
		t.Errorf("the rest of the range lost its cover")
	}
	// Closing the gate takes the advice back.
	turnOff()
	if _, ok := isCovered(lo+2*huge, hi); ok {
		t.Errorf("covered after the gate closed")
	}
}

// TestMapUncovers: memory Map returns is never covered, whatever was
// recorded over its addresses before.
func TestMapUncovers(t *testing.T) {
	openGate(t)
	heap := uint64(1 << 30)
	fakeHeap(t, &heap)
	covered.Lock()
	covered.spans = append(covered.spans[:0], span{0, ^uintptr(0)})
	covered.heap = heap
	covered.Unlock()
	b := Map(4 << 20)
	if b == nil {
		t.Skip("mmap refused")
	}
	defer Unmap(b)
	lo := uintptr(unsafe.Pointer(&b[0]))
	if _, ok := isCovered(lo, lo+4096); ok {
		t.Errorf("Map's new memory is covered")
	}
	if _, ok := isCovered(0, 4096); !ok {
		t.Errorf("memory away from Map's lost its cover")
	}
}

// TestHeapMappedGrows: the runtime's count that covered empties itself by
// grows when the heap maps memory for a large allocation.
func TestHeapMappedGrows(t *testing.T) {
	var s [len(heapClasses)]metrics.Sample
	before := heapMapped(&s)
	grown := make([]byte, int(before)+(64<<20)) // more than the heap has mapped in all
	grown[len(grown)-1] = 1
	if after := heapMapped(&s); after <= before {
		t.Errorf("heap mapped %d bytes before a %d MiB allocation and %d after", before, len(grown)>>20, after)
	}
	runtime.KeepAlive(grown)
}
