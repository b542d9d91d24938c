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
	forgetCovered()
	g, closes := gate.Load(), gateCloses.Load()
	recent.Lock()
	last := recent.bits
	recent.bits = 0
	recent.Unlock()
	advised.Lock()
	lo, hi := advised.lo, advised.hi
	advised.lo, advised.hi = 0, 0
	advised.Unlock()
	gate.Store(gateOn)
	gateCloses.Store(!hold)
	t.Cleanup(func() {
		gate.Store(g)
		recent.Lock()
		recent.bits = last
		recent.Unlock()
		gateCloses.Store(closes)
		advised.Lock()
		advised.lo, advised.hi = lo, hi
		advised.Unlock()
	})
}

// observe closes the gate once seven of the last eight fresh blocks were
// dear: as after an idle spell (a few cheap blocks, then only dear ones),
// not for the short runs of dear blocks between cheap ones that a run
// meets back to back; a call that made no block leaves the count as it
// was, and a dear call counts one block per ≈ 4 ms.
func TestObserveClosesTheGateWhenRecentBlocksAreDear(t *testing.T) {
	type obs struct {
		ns     int64
		blocks int
	}
	const (
		dear  = 4_000_000 // one dear block, as timed on the project's machine
		cheap = 150_000   // one cheap block
		none  = 20_000    // the blocks were mapped already
	)
	rep := func(o obs, n int) []obs { return slices.Repeat([]obs{o}, n) }
	dr, ch := obs{dear, 1}, obs{cheap, 1}
	for _, c := range []struct {
		name string
		seen []obs
		off  int // the observation after which the gate is closed (-1: never)
	}{
		{"cheap blocks only", []obs{{cheap, 1}, {cheap, 2}, ch, {none, 1}}, -1},
		{"after an idle spell: ten cheap, then dear", slices.Concat(rep(ch, 10), rep(dr, 9)), 16},
		{"dear from the first block", rep(dr, 9), 6},
		{"back to back: dear in runs of three", slices.Concat(rep(ch, 8), rep(dr, 3), rep(ch, 2), rep(dr, 3), []obs{ch}, rep(dr, 3), []obs{ch}, rep(dr, 3)), -1},
		{"seven of eight, one cheap among them", slices.Concat(rep(ch, 4), rep(dr, 3), []obs{ch}, rep(dr, 4)), 11},
		{"calls that made nothing between", slices.Concat(rep(dr, 6), []obs{{none, 1}, {none, 3}}, []obs{dr}), 8},
		{"one call, seven dear blocks", []obs{{7 * dear, 7}, ch}, 0},
		{"dear for one block, not for four", slices.Concat([]obs{{dear / 2, 1}}, rep(obs{dear / 2, 4}, 9)), -1},
		{"a slow 4 KiB-page populate is not dear", rep(obs{500_000, 1}, 9), -1},
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
