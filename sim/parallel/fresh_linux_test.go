package parallel

import (
	"runtime"
	"testing"
	"time"
	"unsafe"

	"github.com/simtrain/simtrain/sim/engine"
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

// pageFaults counts this thread's page faults (perf_event_open's
// software counter, as perf stat -e page-faults counts), or skips t where
// the kernel refuses it.
func pageFaults(t *testing.T) (read func() uint64, done func()) {
	t.Helper()
	attr := unix.PerfEventAttr{Type: unix.PERF_TYPE_SOFTWARE, Config: unix.PERF_COUNT_SW_PAGE_FAULTS,
		Size: uint32(unsafe.Sizeof(unix.PerfEventAttr{}))}
	fd, err := unix.PerfEventOpen(&attr, 0, -1, -1, unix.PERF_FLAG_FD_CLOEXEC)
	if err != nil {
		t.Skipf("perf_event_open: %v", err)
	}
	read = func() uint64 {
		var b [8]byte
		if _, err := unix.Read(fd, b[:]); err != nil {
			t.Fatalf("reading the fault counter: %v", err)
		}
		return *(*uint64)(unsafe.Pointer(&b[0]))
	}
	return read, func() { unix.Close(fd) }
}

// unpark maps the pages it copies into in one call before the copy: the
// copy into a fork's fresh reservation takes a few page faults at most
// (the two pages the destination shares with what lies before and after
// it, and a few of the thread's own, 0–5 seen), and the elements from from on arrive at their
// indices. Without the populate every page faults (≈ 250 here) and this
// fails.
func TestUnparkMapsItsDestination(t *testing.T) {
	skipWithoutPopulate(t)
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	read, done := pageFaults(t)
	defer done()
	// the first populate's own set-up (the huge-page gate reads the
	// system's settings) before anything is counted
	var m0 mappings
	own0 := freshSlice[hotTask](&m0, 1000)[:0]
	unpark(&own0, make([]hotTask, 1000), 0)
	runtime.KeepAlive(&m0) // (the holder of own0's storage: mappings)
	for _, c := range []struct{ n, from int }{
		{n: 40_000, from: 7_000},  // hot records: ≈ 1 MB copied
		{n: 40_000, from: 0},      // every stage's
		{n: 40_000, from: 39_990}, // a few records: no whole page
	} {
		var m mappings
		own := freshSlice[hotTask](&m, c.n)[:0]
		s := make([]hotTask, c.n)
		for i := range s {
			s[i].issue = engine.Time(i + 1)
		}
		f0 := read()
		got := unpark(&own, s, c.from)
		faults := read() - f0
		if faults > 16 {
			t.Errorf("n %d from %d: unpark took %d page faults, want at most 16", c.n, c.from, faults)
		}
		if unsafe.SliceData(got) != unsafe.SliceData(own) || len(got) != c.n {
			t.Fatalf("n %d from %d: not own's array (len %d)", c.n, c.from, len(got))
		}
		for i := c.from; i < c.n; i++ {
			if got[i].issue != engine.Time(i+1) {
				t.Fatalf("n %d from %d: element %d holds %d", c.n, c.from, i, got[i].issue)
			}
		}
		runtime.KeepAlive(&m) // own's storage is given back once m is unreachable
	}
}
