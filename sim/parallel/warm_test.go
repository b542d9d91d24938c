package parallel

import (
	"runtime"
	"testing"
	"unsafe"

	"github.com/simtrain/simtrain/sim/hugepages"
)

// skipWithoutPopulate skips a test of what warmTo records where the
// system populates nothing (hugepages.PopulateUpTo: other systems, Linux
// before 5.14), as warmTo then records nothing.
func skipWithoutPopulate(t *testing.T) {
	t.Helper()
	if !hugepages.Populating() {
		t.Skip("this system does not populate pages ahead (MADV_POPULATE_WRITE)")
	}
}

// pageUp is n bytes rounded up to a whole page.
func pageUp(n uintptr) uintptr {
	page := uintptr(hugepages.PageSize())
	return (n + page - 1) / page * page
}

// warmTo records how far an array is populated: through the page its n-th
// element ends in, never past the array, never back, from nothing again
// for another array, and not at all for arrays under warmMin.
func TestWarmToTracksPopulatedBytes(t *testing.T) {
	skipWithoutPopulate(t)
	big := make([]int64, 0, 1<<16) // 512 KiB
	other := make([]int64, 1<<16)
	small := make([]int64, warmMin/8-1)
	var w warmth
	for _, step := range []struct {
		name  string
		s     []int64
		n     int
		ready uintptr
	}{
		{"first 1,000", big, 1000, pageUp(8000)},
		{"fewer: nothing more", big, 10, pageUp(8000)},
		{"a window of the same array counts from its start", big[: 0 : 1<<16], 3000, pageUp(24000)},
		{"past the array: up to its end", big, 1 << 20, 8 << 16},
		{"another array starts again", other, 5, pageUp(40)},
		{"an empty request", other, 0, pageUp(40)},
	} {
		warmTo(&w, step.s, step.n)
		if w.ready != step.ready || w.base != uintptr(unsafe.Pointer(&step.s[:1][0])) {
			t.Errorf("%s: ready %d of %#x, want %d of %#x", step.name, w.ready, w.base, step.ready, uintptr(unsafe.Pointer(&step.s[:1][0])))
		}
	}
	if warmTo(&w, small, len(small)); w.base != uintptr(unsafe.Pointer(&other[0])) || w.ready != pageUp(40) {
		t.Errorf("a small array changed the record: ready %d of %#x", w.ready, w.base)
	}
}

// A pool populates ahead of a stage as much as its largest sealed stage,
// and what carve hands out, each through the page it ends in.
func TestPoolWarmsAhead(t *testing.T) {
	skipWithoutPopulate(t)
	var p pool[int64]
	var m mappings // holds p's storage: kept alive to the end
	defer runtime.KeepAlive(&m)
	p.reserve(&m, 1<<16)
	p.ahead()
	if p.warm.ready != 0 {
		t.Fatalf("ahead before any stage populated %d bytes", p.warm.ready)
	}
	s := append(p.next(), make([]int64, 5000)...)
	p.seal(s)
	if p.most != 5000 || p.used != 5000 {
		t.Fatalf("most %d used %d after a 5,000 stage", p.most, p.used)
	}
	p.ahead()
	if want := pageUp(10000 * 8); p.warm.ready != want {
		t.Errorf("ahead populated %d bytes, want %d (used + the largest stage)", p.warm.ready, want)
	}
	p.carve(7000)
	if want := pageUp(12000 * 8); p.warm.ready != want {
		t.Errorf("carve populated to %d bytes, want %d", p.warm.ready, want)
	}
	p.seal(append(p.next(), 1, 2, 3))
	if p.most != 5000 {
		t.Errorf("most %d after a smaller stage, want 5000", p.most)
	}
}
