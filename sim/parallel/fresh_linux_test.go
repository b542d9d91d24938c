package parallel

import (
	"runtime"
	"testing"
	"time"
	"unsafe"

	"golang.org/x/sys/unix"
)

// mapped says whether the page at p is mapped in this process (mincore
// fails with ENOMEM on an address no mapping holds).
func mapped(p uintptr) bool {
	var vec [1]byte
	page := uintptr(unix.Getpagesize())
	_, _, errno := unix.Syscall(unix.SYS_MINCORE, p&^(page-1), page, uintptr(unsafe.Pointer(&vec[0])))
	return errno != unix.ENOMEM
}

// An arena's and a fork's storage outside the heap is given back once the
// arena or the fork's copies are unreachable, and not before. Without the
// cleanup (freshSlice) the mappings stay and this fails.
func TestReservedStorageGivenBack(t *testing.T) {
	reserve := func() (tasks, state, forkHot uintptr) {
		a, f := new(Arena), new(Fork)
		a.Reserve(1 << 16)
		f.Reserve(1 << 16)
		return uintptr(unsafe.Pointer(&a.tasks.buf[0])), uintptr(unsafe.Pointer(&a.sym.state[:1][0])),
			uintptr(unsafe.Pointer(&f.cp.own.hot[:1][0]))
	}
	var kept Arena
	kept.Reserve(1 << 16)
	p0, p1, p2 := reserve()
	if !mapped(p0) || !mapped(p1) || !mapped(p2) {
		t.Skip("the reservation is not mapped outside the heap here")
	}
	deadline := time.Now().Add(10 * time.Second)
	for mapped(p0) || mapped(p1) || mapped(p2) {
		if time.Now().After(deadline) {
			t.Fatalf("unreachable reservations still mapped: %v %v %v", mapped(p0), mapped(p1), mapped(p2))
		}
		runtime.GC()
		time.Sleep(time.Millisecond)
	}
	if !mapped(uintptr(unsafe.Pointer(&kept.tasks.buf[0]))) {
		t.Fatal("a reachable arena's storage was given back")
	}
	runtime.KeepAlive(&kept)
}
