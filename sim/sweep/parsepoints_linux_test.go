package sweep

import (
	"errors"
	"runtime"
	"testing"
	"unsafe"

	"golang.org/x/sys/unix"

	"github.com/simtrain/simtrain/sim/hugepages"
	"github.com/simtrain/simtrain/sim/scenario"
	"github.com/simtrain/simtrain/sim/simulation"
)

var errInvalid = errors.New("invalid")

// TestParsePointsMapsRoom: after parsePoints every whole page of the room
// it was given is mapped, on one to four CPUs, though no entry writes it
// (each worker maps its part, pagePart). Fails when only the calling
// worker maps its part.
func TestParsePointsMapsRoom(t *testing.T) {
	if !hugepages.Populating() {
		t.Skip("kernel without MADV_POPULATE_WRITE (Linux < 5.14)")
	}
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(0))
	page := unix.Getpagesize()
	for _, procs := range []int{1, 2, 4} {
		runtime.GOMAXPROCS(procs)
		mem := hugepages.Map(64 * page)
		if mem == nil {
			t.Fatal("no mapping")
		}
		room := mem[100 : 60*page+7] // off page boundaries at both ends
		batch := make([]pendingPoint, 64)
		parse := func(*pendingPoint) (*scenario.Plan, error) { return &scenario.Plan{}, errInvalid }
		var scratches []*simulation.KeyScratch
		parsePoints(batch, parse, &scratches, room)
		vec := make([]byte, 64)
		if _, _, errno := unix.Syscall(unix.SYS_MINCORE, uintptr(unsafe.Pointer(&mem[0])), uintptr(len(mem)), uintptr(unsafe.Pointer(&vec[0]))); errno != 0 {
			t.Fatalf("mincore: %v", errno)
		}
		for p := 1; p < 60; p++ { // the whole pages inside room
			if vec[p]&1 == 0 {
				t.Errorf("procs %d: page %d of the room not mapped", procs, p)
			}
		}
		hugepages.Unmap(mem)
	}
}
