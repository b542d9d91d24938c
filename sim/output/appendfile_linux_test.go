package output

import (
	"path/filepath"
	"testing"
	"unsafe"

	"golang.org/x/sys/unix"
)

// Grow maps the room it makes before any row lands in it (every whole page
// under the room is resident right after Grow), so that a collection
// scanning the rows array reads mapped pages rather than faulting each
// untouched one in. Without Grow's Populate, the room of a fresh array is
// not resident and this fails.
func TestAppendFileGrowMapsRoom(t *testing.T) {
	probe, err := unix.Mmap(-1, 0, 4096, unix.PROT_READ|unix.PROT_WRITE, unix.MAP_PRIVATE|unix.MAP_ANON)
	if err != nil {
		t.Fatal(err)
	}
	perr := unix.Madvise(probe, unix.MADV_POPULATE_WRITE)
	unix.Munmap(probe)
	if perr != nil {
		t.Skipf("kernel without MADV_POPULATE_WRITE (Linux < 5.14): %v", perr)
	}
	a, err := OpenAppendFile(filepath.Join(t.TempDir(), "grown.arrow"), map[string]string{"sweep": "x"}, false, byKey)
	if err != nil {
		t.Fatal(err)
	}
	a.Add(appendRow{1, "a"})
	const n = 1 << 17 // ≈ 3 MB of rows
	a.Grow(n)
	room := a.rows[len(a.rows):cap(a.rows)]
	size := int(unsafe.Sizeof(room[0]))
	page := unix.Getpagesize()
	start := uintptr(unsafe.Pointer(unsafe.SliceData(room)))
	lo := (start + uintptr(page) - 1) &^ uintptr(page-1)
	hi := (start + uintptr(len(room)*size)) &^ uintptr(page-1)
	if hi <= lo {
		t.Fatalf("room of %d rows holds no whole page", len(room))
	}
	vec := make([]byte, (hi-lo)/uintptr(page))
	if _, _, errno := unix.Syscall(unix.SYS_MINCORE, lo, hi-lo, uintptr(unsafe.Pointer(&vec[0]))); errno != 0 {
		t.Fatalf("mincore: %v", errno)
	}
	missing := 0
	for _, v := range vec {
		if v&1 == 0 {
			missing++
		}
	}
	if missing > 0 {
		t.Errorf("%d of the room's %d whole pages not mapped after Grow", missing, len(vec))
	}
	for i := range n {
		a.Add(appendRow{int64(i), "r"})
	}
	if a.Rows() != n+1 {
		t.Fatalf("%d rows, want %d", a.Rows(), n+1)
	}
}
