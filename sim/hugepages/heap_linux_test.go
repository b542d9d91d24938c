package hugepages

import (
	"bytes"
	"os"
	"runtime"
	"slices"
	"strings"
	"testing"
	"time"
	"unsafe"

	"golang.org/x/sys/unix"
)

// anonRunAround finds the run of adjacent anonymous mappings holding an
// address, and nothing where a file, a named mapping or a gap holds it.
func TestAnonRunAround(t *testing.T) {
	const maps = `00400000-00500000 r-xp 00000000 fe:00 123 /usr/bin/simtrain
00500000-00600000 rw-p 00000000 00:00 0 
10000000-10400000 ---p 00000000 00:00 0 
10400000-10800000 rw-p 00000000 00:00 0 
10800000-10a00000 rw-p 00000000 00:00 0 [anon: Go: heap]
10a00000-14000000 ---p 00000000 00:00 0 
14200000-14300000 rw-p 00000000 00:00 0 
20000000-20100000 rw-p 00000000 fe:00 77 /tmp/file with spaces
20100000-20200000 rw-p 00000000 00:00 0 
7ffc0000-7ffd0000 rw-p 00000000 00:00 0                          [stack]
`
	for _, c := range []struct {
		name   string
		a      uintptr
		lo, hi uintptr
	}{
		{"in the run's mapped part", 0x10400010, 0x10000000, 0x14000000},
		{"in the run's reserve", 0x10000000, 0x10000000, 0x14000000},
		{"in a named anonymous part", 0x109fffff, 0x10000000, 0x14000000},
		{"last byte of the run", 0x13ffffff, 0x10000000, 0x14000000},
		{"after a gap", 0x14200000, 0x14200000, 0x14300000},
		{"after a file", 0x20100000, 0x20100000, 0x20200000},
		{"anonymous after the program", 0x00500000, 0x00500000, 0x00600000},
		{"in the program", 0x00400000, 0, 0},
		{"in a file", 0x20000000, 0, 0},
		{"in the stack", 0x7ffc1000, 0, 0},
		{"in a gap", 0x18000000, 0, 0},
	} {
		lo, hi := anonRunAround([]byte(maps), c.a)
		if lo != c.lo || hi != c.hi {
			t.Errorf("%s (%#x): [%#x, %#x), want [%#x, %#x)", c.name, c.a, lo, hi, c.lo, c.hi)
		}
	}
}

// AdviseHeap advises the heap's mappings huge, again after it grows,
// collapses the new ones from its second call on, and leaves the heap's
// contents as they were.
func TestAdviseHeapAdvisesTheHeapAsItGrows(t *testing.T) {
	skipWithoutHugeAdvice(t)
	openGate(t)
	hg := func(b []byte) bool {
		return slices.Contains(strings.Fields(vmFlags(t, uintptr(unsafe.Pointer(&b[len(b)/2])))), "hg")
	}
	anchor := new([64]byte)
	anchor[3] = 9
	var keep [][]byte
	for round := range 3 {
		grown := make([]byte, 32<<20) // the runtime maps fresh heap for it
		grown[0], grown[len(grown)-1] = 1, 2
		if hg(grown) {
			t.Skipf("round %d: the heap's new mapping is advised huge already", round)
		}
		// A byte written in grown's first page that the heap's writable
		// mappings did not hold at the last call: from the second call on,
		// its block is collapsed, so wholly resident after the call.
		prev := heapAdvice.rw
		fresh := -1
		for i := 0; i < len(grown); i += 4096 {
			a := uintptr(unsafe.Pointer(&grown[i]))
			if !slices.ContainsFunc(prev, func(r [2]uintptr) bool { return r[0] <= a && a < r[1] }) {
				fresh = i
				break
			}
		}
		if fresh >= 0 {
			grown[fresh] = 3
		}
		AdviseHeap(anchor)
		if !hg(grown) {
			t.Errorf("round %d: the heap's new mapping not advised huge after AdviseHeap (VmFlags %q)",
				round, vmFlags(t, uintptr(unsafe.Pointer(&grown[len(grown)/2]))))
		}
		if prev != nil && fresh >= 0 && collapsing() {
			const huge = 2 << 20
			a := uintptr(unsafe.Pointer(&grown[fresh]))
			i := slices.IndexFunc(heapAdvice.collapsed, func(c collapseCall) bool { return c.lo <= a && a < c.hi })
			// grown's bytes in that block: the block may begin before grown
			// (the rest of it is the runtime's), and end past it.
			start := fresh - int(a%huge)
			block := grown[max(start, 0):min(start+huge, len(grown))]
			switch {
			case i < 0:
				t.Errorf("round %d: AdviseHeap did not collapse the new mapping's first block (%#x; asked for %v)", round, a, heapAdvice.collapsed)
			case heapAdvice.collapsed[i].err != 0:
				// best-effort: the kernel found no free 2 MiB page now
				t.Logf("round %d: the kernel refused the collapse: %v", round, heapAdvice.collapsed[i].err)
			default:
				if got, want := resident(t, block), (len(block)+4095)/4096; got != want {
					t.Errorf("round %d: %d of the %d pages of the new mapping's first block resident after AdviseHeap", round, got, want)
				}
			}
		}
		for i, want := range map[int]byte{0: 1, len(grown) - 1: 2, len(grown) / 2: 0} {
			if grown[i] != want && i != fresh {
				t.Fatalf("round %d: byte %d = %d, want %d", round, i, grown[i], want)
			}
		}
		if fresh >= 0 && grown[fresh] != 3 || anchor[3] != 9 {
			t.Fatalf("round %d: contents changed", round)
		}
		keep = append(keep, grown)
	}
	runtime.KeepAlive(keep)
}

// writableIn lists the writable anonymous mappings inside a range, adjacent
// ones joined, and nothing reserved, named otherwise, or outside it.
func TestWritableIn(t *testing.T) {
	const maps = `10000000-10400000 ---p 00000000 00:00 0 
10400000-10800000 rw-p 00000000 00:00 0 
10800000-10a00000 rw-p 00000000 00:00 0 [anon: Go: heap]
10a00000-11000000 ---p 00000000 00:00 0 
11000000-11400000 rw-p 00000000 00:00 0 
11400000-11600000 r--p 00000000 00:00 0 
11600000-11800000 rw-p 00000000 fe:00 5 /tmp/f
11800000-11a00000 rw-p 00000000 00:00 0 
`
	for _, c := range []struct {
		lo, hi uintptr
		want   [][2]uintptr
	}{
		{0x10000000, 0x11a00000, [][2]uintptr{{0x10400000, 0x10a00000}, {0x11000000, 0x11400000}, {0x11800000, 0x11a00000}}},
		{0x10000000, 0x11000000, [][2]uintptr{{0x10400000, 0x10a00000}}},
		{0x10500000, 0x11a00000, [][2]uintptr{{0x10800000, 0x10a00000}, {0x11000000, 0x11400000}, {0x11800000, 0x11a00000}}},
		{0x10000000, 0x10400000, nil},
	} {
		if got := writableIn([]byte(maps), c.lo, c.hi); !slices.Equal(got, c.want) {
			t.Errorf("[%#x, %#x): %x, want %x", c.lo, c.hi, got, c.want)
		}
	}
}

// uncovered returns the parts of a range that no other range holds.
func TestUncovered(t *testing.T) {
	type r = [2]uintptr
	for _, c := range []struct {
		r    r
		by   []r
		want []r
	}{
		{r{10, 20}, nil, []r{{10, 20}}},
		{r{10, 20}, []r{{0, 10}, {20, 30}}, []r{{10, 20}}},
		{r{10, 20}, []r{{0, 30}}, nil},
		{r{10, 20}, []r{{10, 20}}, nil},
		{r{10, 20}, []r{{0, 12}}, []r{{12, 20}}},
		{r{10, 20}, []r{{18, 25}}, []r{{10, 18}}},
		{r{10, 20}, []r{{12, 14}, {16, 17}}, []r{{10, 12}, {14, 16}, {17, 20}}},
	} {
		if got := uncovered(c.r, c.by); !slices.Equal(got, c.want) {
			t.Errorf("%v less %v: %v, want %v", c.r, c.by, got, c.want)
		}
	}
}

// collapse puts a block with a few pages mapped on one huge page (every
// page of it then resident) and keeps its contents.
func TestCollapseMapsTheWholeBlock(t *testing.T) {
	openGate(t)
	const page, huge = 4096, 2 << 20
	mem := unmappedAnon(t, 3*huge)
	if err := unix.Madvise(mem, unix.MADV_HUGEPAGE); err != nil {
		t.Skipf("huge-page advice refused here: %v", err)
	}
	if !collapsing() {
		t.Skip("transparent huge pages off")
	}
	base := uintptr(unsafe.Pointer(&mem[0]))
	off := int((huge - base%huge) % huge)
	block := mem[off : off+huge]
	if err := unix.Madvise(block[:page], unix.MADV_NOHUGEPAGE); err != nil {
		t.Fatal(err)
	}
	block[0], block[5*page+3] = 1, 2 // two 4 KiB pages mapped
	if err := unix.Madvise(block[:page], unix.MADV_HUGEPAGE); err != nil {
		t.Fatal(err)
	}
	if got := resident(t, block); got != 2 {
		t.Skipf("%d pages resident after two writes: the block is on a huge page already", got)
	}
	lo := uintptr(unsafe.Pointer(&block[page]))
	collapse(nil, lo, lo+page)
	if got := resident(t, block); got != huge/page {
		if err := unix.Madvise(block, unix.MADV_COLLAPSE); err != nil {
			t.Skipf("collapse refused here: %v", err)
		}
		t.Errorf("%d of the block's %d pages resident after collapse", got, huge/page)
	}
	for i, v := range block {
		if want := map[int]byte{0: 1, 5*page + 3: 2}[i]; v != want {
			t.Fatalf("byte %d = %d after collapse, want %d", i, v, want)
		}
	}
}

// collapse asks for each block of its range alone: a block with pages
// mapped after one with none, and one past it, are each collapsed (one
// call over the range stops at the empty block on Linux 6.18), and the
// empty block is left to the advice.
func TestCollapseEachBlockPastAnEmptyOne(t *testing.T) {
	openGate(t)
	const page, huge = 4096, 2 << 20
	if !collapsing() {
		t.Skip("transparent huge pages off")
	}
	skipWithoutHugeAdvice(t)
	mem := unmappedAnon(t, 5*huge)
	base := uintptr(unsafe.Pointer(&mem[0]))
	off := int((huge - base%huge) % huge)
	blocks := mem[off : off+3*huge] // three whole blocks: 0 empty, 1 and 2 written
	blocks[huge+7*page], blocks[2*huge+3] = 4, 5
	for k := 1; k < 3; k++ {
		if got := resident(t, blocks[k*huge:(k+1)*huge]); got != 1 {
			t.Skipf("block %d: %d pages resident after one write: on a huge page already", k, got)
		}
	}
	lo := uintptr(unsafe.Pointer(&blocks[0]))
	calls := collapse(nil, lo+page, lo+3*huge-page) // rounded out to the three blocks
	if len(calls) != 3 {
		t.Fatalf("%d calls for three blocks, want 3: %v", len(calls), calls)
	}
	for k, c := range calls {
		if c.lo != lo+uintptr(k)*huge || c.hi != c.lo+huge {
			t.Errorf("call %d for [%#x, %#x), want block [%#x, %#x)", k, c.lo, c.hi, lo+uintptr(k)*huge, lo+uintptr(k+1)*huge)
		}
	}
	if got := resident(t, blocks[:huge]); got != 0 {
		t.Errorf("the empty block: %d pages resident after collapse, want 0", got)
	}
	for k := 1; k < 3; k++ {
		switch err := calls[k].err; err {
		case 0:
			if got := resident(t, blocks[k*huge:(k+1)*huge]); got != huge/page {
				t.Errorf("block %d: %d of its %d pages resident after collapse", k, got, huge/page)
			}
		case unix.EAGAIN, unix.ENOMEM, unix.EBUSY: // best-effort: no free 2 MiB page now
			t.Logf("block %d: the kernel refused the collapse: %v", k, err)
		default:
			t.Errorf("block %d: collapse failed: %v", k, err)
		}
	}
	if blocks[huge+7*page] != 4 || blocks[2*huge+3] != 5 || blocks[0] != 0 {
		t.Fatal("contents changed")
	}
}

// watchHeap advises the heap at each tick, and its stop waits for the
// goroutine to end.
func TestWatchHeapAdvisesAtEachTick(t *testing.T) {
	skipWithoutHugeAdvice(t)
	openGate(t)
	anchor := new([64]byte)
	ticks := make(chan time.Time)
	stop := watchHeap(anchor, ticks)
	grown := make([]byte, 32<<20)
	grown[0] = 1
	mid := uintptr(unsafe.Pointer(&grown[len(grown)/2]))
	if slices.Contains(strings.Fields(vmFlags(t, mid)), "hg") {
		stop()
		t.Skip("the heap's new mapping is advised huge already")
	}
	ticks <- time.Time{}
	stop()
	if !slices.Contains(strings.Fields(vmFlags(t, mid)), "hg") {
		t.Errorf("the heap's new mapping not advised huge after a tick (VmFlags %q)", vmFlags(t, mid))
	}
	runtime.KeepAlive(grown)
}

// Once the gate is closed the watcher ends at its next tick: a closed
// gate advises nothing, so ticking on would only wake the process (a
// thousand times a second in `run`).
func TestWatchHeapEndsWithTheGate(t *testing.T) {
	resetGate(t, true)
	turnOff()
	ticks := make(chan time.Time)
	stop := watchHeap(new([64]byte), ticks)
	defer stop()
	ticks <- time.Time{} // taken: the watcher was running
	select {
	case ticks <- time.Time{}:
		t.Fatal("the watcher took a second tick after the gate closed")
	case <-time.After(100 * time.Millisecond):
	}
}

// skipWithoutHugeAdvice skips t where the system has no transparent huge
// pages or refuses the advice (THP disabled for the process).
func skipWithoutHugeAdvice(t *testing.T) {
	t.Helper()
	if _, err := os.Stat("/sys/kernel/mm/transparent_hugepage/enabled"); err != nil {
		t.Skipf("no transparent huge pages: %v", err)
	}
	probe := unmappedAnon(t, 4096)
	if err := unix.Madvise(probe, unix.MADV_HUGEPAGE); err != nil {
		t.Skipf("huge-page advice refused here: %v", err)
	}
	// prctl(PR_SET_THP_DISABLE) leaves the advice accepted but every huge
	// page, and every collapse (EINVAL), refused.
	if st, err := os.ReadFile("/proc/self/status"); err == nil && bytes.Contains(st, []byte("THP_enabled:\t0")) {
		t.Skip("transparent huge pages disabled for this process (prctl)")
	}
}
