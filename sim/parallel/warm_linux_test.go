package parallel

import (
	"testing"
	"unsafe"

	"golang.org/x/sys/unix"
)

// residentPages reports which of mem's pages the kernel holds (mincore).
func residentPages(t *testing.T, mem []byte, page int) []bool {
	t.Helper()
	vec := make([]byte, (len(mem)+page-1)/page)
	_, _, errno := unix.Syscall(unix.SYS_MINCORE, uintptr(unsafe.Pointer(&mem[0])), uintptr(len(mem)), uintptr(unsafe.Pointer(&vec[0])))
	if errno != 0 {
		t.Fatalf("mincore: %v", errno)
	}
	in := make([]bool, len(vec))
	for i, v := range vec {
		in[i] = v&1 != 0
	}
	return in
}

// warmTo, called in steps that end inside pages (as a pool's stages and
// a Fork's copies do), maps every page under the elements asked for before
// they are written, the pages steps end inside among them, and nothing
// past the page the last step ends in. A step that maps only the whole
// pages inside its own bytes leaves the page it ends in to fault, and fails
// this.
func TestWarmToMapsEveryPageAskedFor(t *testing.T) {
	skipWithoutPopulate(t)
	page := unix.Getpagesize()
	pages := max(64, 2*warmMin/page)
	mem, err := unix.Mmap(-1, 0, pages*page, unix.PROT_READ|unix.PROT_WRITE, unix.MAP_PRIVATE|unix.MAP_ANON)
	if err != nil {
		t.Fatalf("mmap: %v", err)
	}
	defer unix.Munmap(mem)
	s := unsafe.Slice((*int64)(unsafe.Pointer(&mem[0])), len(mem)/8)[:0]
	var w warmth
	// steps of 1,000 elements (8,000 bytes: never a whole number of
	// pages), then a few single elements, then past the end
	steps := []int{1000, 2000, 3000, 3001, 3002, 3600, 7000, 1 << 30}
	for _, n := range steps {
		warmTo(&w, s, n)
		bytes := min(n, cap(s)) * 8
		want := (bytes + page - 1) / page // pages under the first n elements
		for i, in := range residentPages(t, mem, page) {
			if i < want && !in {
				t.Fatalf("after warmTo(%d): page %d of the %d under it not mapped", n, i, want)
			}
			if i >= want && in {
				t.Fatalf("after warmTo(%d): page %d mapped, past the %d under it", n, i, want)
			}
		}
		if w.ready < uintptr(bytes) {
			t.Errorf("after warmTo(%d): %d bytes recorded mapped, want ≥ %d", n, w.ready, bytes)
		}
	}
	for i, v := range mem {
		if v != 0 {
			t.Fatalf("byte %d = %d: warmTo wrote", i, v)
		}
	}
}
