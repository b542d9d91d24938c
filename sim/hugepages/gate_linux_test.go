package hugepages

import (
	"slices"
	"strings"
	"testing"
	"unsafe"
)

// openGate opens the huge-page gate for t, as a fresh process finds it
// where transparent huge pages are on (no dear block seen, no advice
// given), and holds it open whatever the blocks t makes cost on this
// machine: a test of the advice must not depend on that.
func openGate(t *testing.T) { resetGate(t, true) }

// resetGate opens the gate as openGate does, held open or left to
// observe, and puts the gate's state back when t ends.
func resetGate(t *testing.T, hold bool) {
	t.Helper()
	hugeWanted() // the one-time check runs now, not inside t's calls
	g, run, closes := gate.Load(), dearRun.Load(), gateCloses.Load()
	advised.Lock()
	lo, hi := advised.lo, advised.hi
	advised.lo, advised.hi = 0, 0
	advised.Unlock()
	gate.Store(gateOn)
	dearRun.Store(0)
	gateCloses.Store(!hold)
	t.Cleanup(func() {
		gate.Store(g)
		dearRun.Store(run)
		gateCloses.Store(closes)
		advised.Lock()
		advised.lo, advised.hi = lo, hi
		advised.Unlock()
	})
}

// observe closes the gate at the third dear block in a row, a cheap block
// starting the count again, a call that made no block leaving it as it
// was, and a dear call counting one block per ≈ 4 ms.
func TestObserveClosesTheGateAfterThreeDearInARow(t *testing.T) {
	type obs struct {
		ns     int64
		blocks int
	}
	const (
		dear  = 4_000_000 // one dear block, as timed on the project's machine
		cheap = 150_000   // one cheap block
		none  = 20_000    // the blocks were mapped already
	)
	for _, c := range []struct {
		name string
		seen []obs
		off  int // the observation after which the gate is closed (-1: never)
	}{
		{"cheap blocks only", []obs{{cheap, 1}, {cheap, 2}, {cheap, 1}, {none, 1}}, -1},
		{"three dear in a row", []obs{{cheap, 1}, {dear, 1}, {dear, 1}, {dear, 1}, {cheap, 1}}, 3},
		{"a cheap one between", []obs{{dear, 1}, {dear, 1}, {cheap, 1}, {dear, 1}, {dear, 1}, {cheap, 1}}, -1},
		{"calls that made nothing between", []obs{{dear, 1}, {none, 1}, {dear, 2}, {none, 3}, {dear, 1}}, 4},
		{"one call, three dear blocks", []obs{{3 * dear, 3}}, 0},
		{"dear for one block, not for four", []obs{{dear / 2, 1}, {dear / 2, 4}, {dear / 2, 4}, {dear / 2, 4}}, -1},
		{"a slow 4 KiB-page populate is not dear", []obs{{500_000, 1}, {500_000, 1}, {500_000, 1}}, -1},
	} {
		t.Run(c.name, func(t *testing.T) {
			resetGate(t, false)
			for i, o := range c.seen {
				observe(o.ns, o.blocks)
				if want := c.off >= 0 && i >= c.off; (gate.Load() == gateOff) != want {
					t.Fatalf("after observation %d (%d ns, %d blocks): gate off %v, want %v", i, o.ns, o.blocks, !want, want)
				}
			}
		})
	}
}

// Closing the gate withdraws the advice given (the block advised before
// is no longer "hg") and stops new advice: Populate, Advise and
// AdviseHeap then advise nothing, and the contents never change.
func TestClosedGateAdvisesNothing(t *testing.T) {
	skipWithoutHugeAdvice(t)
	openGate(t)
	const page, huge = 4096, 2 << 20
	mem := unmappedAnon(t, 6*huge)
	base := uintptr(unsafe.Pointer(&mem[0]))
	off := int((huge - base%huge) % huge)
	flags := func(b []byte) []string { return strings.Fields(vmFlags(t, uintptr(unsafe.Pointer(&b[0])))) }
	first, second := mem[off+huge:off+2*huge], mem[off+3*huge:off+4*huge]
	Populate(first[page : 4*page])
	if !slices.Contains(flags(first), "hg") {
		t.Fatalf("open gate: the populated block not advised huge (VmFlags %v)", flags(first))
	}
	turnOff()
	if f := flags(first); slices.Contains(f, "hg") || !slices.Contains(f, "nh") {
		t.Errorf("closed gate: the block advised before still advised huge (VmFlags %v)", f)
	}
	second[7] = 5
	Populate(second[page : 4*page])
	Advise(mem[off+4*huge : off+6*huge])
	for _, b := range [][]byte{second, mem[off+4*huge:]} {
		if slices.Contains(flags(b), "hg") {
			t.Errorf("closed gate: new advice given (VmFlags %v)", flags(b))
		}
	}
	if got := resident(t, second[page:4*page]); got != 3 {
		t.Errorf("closed gate: %d of the 3 pages populated, want 3 (populating goes on without the advice)", got)
	}
	// AdviseHeap returns before reading the heap's statistics: its record
	// of the heap's size keeps a value no heap has.
	heapAdvice.Lock()
	mapped := heapAdvice.mapped
	heapAdvice.mapped = 1
	heapAdvice.Unlock()
	AdviseHeap(new(int))
	heapAdvice.Lock()
	if heapAdvice.mapped != 1 {
		t.Errorf("closed gate: AdviseHeap read the heap's statistics (%d bytes mapped): it advises nothing, so should return at once", heapAdvice.mapped)
	}
	heapAdvice.mapped = mapped
	heapAdvice.Unlock()
	for i, v := range mem {
		if want := byte(0); i == off+3*huge+7 && v != 5 || i != off+3*huge+7 && v != want {
			t.Fatalf("byte %d = %d after the closed gate's calls", i, v)
		}
	}
}
