package parallel

import (
	"reflect"
	"runtime"
	"runtime/metrics"
	"testing"

	"github.com/simtrain/simtrain/sim/engine"
	"github.com/simtrain/simtrain/sim/hugepages"
)

// pointerFree accepts exactly the types without a pointer the collector
// must see: the reserved arrays' element types and plain values, not
// strings, slices, maps, pointers, interfaces, functions or channels, nor
// arrays or structs holding one, however deep.
func TestPointerFree(t *testing.T) {
	type inner struct {
		a int32
		b [3]float64
	}
	type deepPtr struct {
		a int
		b struct{ c [2]*int }
	}
	cases := []struct {
		v    any
		want bool
	}{
		{Task{}, true}, {hotTask{}, true}, {taskState{}, true}, {queueEntry{}, true},
		{int32(0), true}, {engine.Time(0), true}, {uintptr(0), true}, {complex64(0), true},
		{inner{}, true}, {[4]inner{}, true}, {[0]*int{}, true}, {struct{}{}, true},
		{"", false}, {new(int), false}, {[]int32{}, false}, {map[int]int{}, false},
		{[2]*int{}, false}, {deepPtr{}, false}, {struct{ s string }{}, false},
		{struct{ f func() }{}, false}, {struct{ c chan int }{}, false}, {struct{ e error }{}, false},
	}
	for _, c := range cases {
		if got := pointerFree(reflect.TypeOf(c.v)); got != c.want {
			t.Errorf("pointerFree(%T) = %v, want %v", c.v, got, c.want)
		}
	}
}

// heapBytes is the Go heap's bytes in objects now.
func heapBytes() uint64 {
	s := []metrics.Sample{{Name: "/memory/classes/heap/objects:bytes"}}
	metrics.Read(s)
	return s[0].Value.Uint64()
}

// Arena.Reserve and Fork.Reserve take their storage outside the Go heap
// where the system maps it: the heap does not grow by it (so reserving
// starts no collection), the arrays are zero and usable, and a larger
// reservation replaces them by arrays at least twice as large. With
// freshSlice making its arrays on the heap this fails.
func TestReserveOutsideHeap(t *testing.T) {
	b := hugepages.Map(1)
	if b == nil {
		t.Skip("this system maps no memory outside the Go heap (hugepages.Map)")
	}
	hugepages.Unmap(b)
	const tasks = 1 << 17 // ≈ 25 MB of arena and 14 MB of fork storage
	var a Arena
	var f Fork
	runtime.GC()
	before := heapBytes()
	a.Reserve(tasks)
	f.Reserve(tasks)
	if grew := int64(heapBytes()) - int64(before); grew > 1<<20 {
		t.Fatalf("the heap grew by %d bytes reserving %d tasks", grew, tasks)
	}
	if len(a.tasks.buf) != tasks || cap(a.sym.state) != tasks || cap(f.cp.own.hot) != tasks || cap(f.cp.state) != tasks {
		t.Fatalf("reserved %d tasks, %d state, %d fork records, %d fork states",
			len(a.tasks.buf), cap(a.sym.state), cap(f.cp.own.hot), cap(f.cp.state))
	}
	for i := range a.tasks.buf {
		if a.tasks.buf[i] != (Task{}) {
			t.Fatalf("task %d of the reservation is not zero", i)
		}
	}
	a.tasks.buf[tasks-1].Micro = 7
	a.Reserve(tasks + 1)
	f.Reserve(tasks + 1)
	if len(a.tasks.buf) != 2*tasks || cap(a.sym.need) != 2*tasks || cap(f.cp.own.deps) < 2*tasks {
		t.Fatalf("a reservation one task larger: %d tasks, %d needs, %d fork deps", len(a.tasks.buf), cap(a.sym.need), cap(f.cp.own.deps))
	}
	if a.tasks.buf[tasks-1].Micro != 0 {
		t.Fatal("the larger reservation holds the old one's contents")
	}
	runtime.KeepAlive(&a)
	runtime.KeepAlive(&f)
}
