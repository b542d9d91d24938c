package hugepages

import (
	"os"
	"runtime"
	"slices"
	"strings"
	"testing"
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

// AdviseHeap advises the heap's mappings huge, again after it grows, and
// leaves the heap's contents as they were.
func TestAdviseHeapAdvisesTheHeapAsItGrows(t *testing.T) {
	if _, err := os.Stat("/sys/kernel/mm/transparent_hugepage/enabled"); err != nil {
		t.Skipf("no transparent huge pages: %v", err)
	}
	probe := unmappedAnon(t, 4096)
	if err := unix.Madvise(probe, unix.MADV_HUGEPAGE); err != nil {
		t.Skipf("huge-page advice refused here: %v", err)
	}
	hg := func(b []byte) bool {
		return slices.Contains(strings.Fields(vmFlags(t, uintptr(unsafe.Pointer(&b[len(b)/2])))), "hg")
	}
	anchor := new([64]byte)
	anchor[3] = 9
	for round := range 2 {
		grown := make([]byte, 32<<20) // the runtime maps fresh heap for it
		grown[0], grown[len(grown)-1] = 1, 2
		if hg(grown) {
			t.Skipf("round %d: the heap's new mapping is advised huge already", round)
		}
		AdviseHeap(anchor)
		if !hg(grown) {
			t.Errorf("round %d: the heap's new mapping not advised huge after AdviseHeap (VmFlags %q)",
				round, vmFlags(t, uintptr(unsafe.Pointer(&grown[len(grown)/2]))))
		}
		if grown[0] != 1 || grown[len(grown)-1] != 2 || grown[len(grown)/2] != 0 || anchor[3] != 9 {
			t.Fatalf("round %d: contents changed", round)
		}
		runtime.KeepAlive(grown)
	}
}
