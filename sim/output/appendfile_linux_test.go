package output

import (
	"path/filepath"
	"testing"
	"unsafe"

	"golang.org/x/sys/unix"
)

// Add maps Grow's room ahead of the rows (mapAhead): after each Add every
// whole page of the room from the rows' end to half a step past it (within
// the array) is resident, so the rows that follow write mapped pages; once
// the rows move past the room, it is let go. Without mapAhead's Populate,
// pages past the rows of a fresh array are not resident and this fails.
func TestAppendFileAddMapsRoomAhead(t *testing.T) {
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
	base := uintptr(unsafe.Pointer(unsafe.SliceData(a.rows)))
	size := int(unsafe.Sizeof(a.rows[0]))
	capEnd := base + uintptr(cap(a.rows)*size)
	page := uintptr(unix.Getpagesize())
	checked := 0
	for i := range n {
		a.Add(appendRow{int64(i), "r"})
		if i%997 != 0 && i != n-1 {
			continue
		}
		end := base + uintptr(len(a.rows)*size)
		lo := (end + page - 1) &^ (page - 1)
		hi := min(end+mapStep/2, capEnd) &^ (page - 1)
		if hi <= lo {
			continue
		}
		vec := make([]byte, (hi-lo)/page)
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
			t.Fatalf("after %d rows, %d of the %d whole pages ahead of them not mapped", len(a.rows), missing, len(vec))
		}
		checked++
	}
	if checked < 100 {
		t.Fatalf("checked %d points, want ≥ 100", checked)
	}
	if a.Rows() != n+1 {
		t.Fatalf("%d rows, want %d", a.Rows(), n+1)
	}
	if a.room == nil {
		t.Fatal("the rows left Grow's room")
	}
	for range cap(a.rows) - len(a.rows) + 1 { // past the room: a new array
		a.Add(appendRow{2, "b"})
	}
	if a.room != nil {
		t.Error("the rows moved past Grow's room, which is still held")
	}
}
