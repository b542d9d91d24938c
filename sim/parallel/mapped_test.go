package parallel

import (
	"fmt"
	"reflect"
	"slices"
	"strings"
	"testing"
	"unsafe"

	"github.com/simtrain/simtrain/sim/engine"
	"github.com/simtrain/simtrain/sim/pipeline"
)

// inMapping reports whether p lies in one of m's mappings.
func inMapping(m *mappings, p unsafe.Pointer) bool {
	for _, b := range m.regions {
		lo := uintptr(unsafe.Pointer(unsafe.SliceData(b)))
		if uintptr(p) >= lo && uintptr(p) < lo+uintptr(len(b)) {
			return true
		}
	}
	return false
}

// mappedElems lists the element types of every array ReserveMapped may
// map: each pool of the Arena (found by walking its fields, so that a pool
// added later is checked too), the symmetric executor's state, need and
// events, and every slice of a Fork's copies.
func mappedElems(t *testing.T) map[string]reflect.Type {
	t.Helper()
	elems := map[string]reflect.Type{}
	at := reflect.TypeFor[Arena]()
	for i := range at.NumField() {
		f := at.Field(i)
		if strings.HasPrefix(f.Type.Name(), "pool[") {
			buf, ok := f.Type.FieldByName("buf")
			if !ok || buf.Type.Kind() != reflect.Slice {
				t.Fatalf("Arena.%s: a pool without its buf slice", f.Name)
			}
			elems["Arena."+f.Name] = buf.Type.Elem()
		}
	}
	st := reflect.TypeFor[instanceBuffers]()
	for _, name := range []string{"state", "need", "events"} {
		f, _ := st.FieldByName(name)
		elems["Arena.sym."+name] = f.Type.Elem()
	}
	ct := reflect.TypeFor[forkCopy]()
	for i := range ct.NumField() {
		if f := ct.Field(i); f.Type.Kind() == reflect.Slice {
			elems["forkCopy."+f.Name] = f.Type.Elem()
		}
	}
	if len(elems) < 20 {
		t.Fatalf("found %d mapped arrays, want the Arena's 9 pools, 3 executor arrays and the fork's copies", len(elems))
	}
	return elems
}

// Every element type that may live in a mapping holds no Go pointer (the
// collector does not scan mappings), and holdsPointers, which guards
// mappedSlice, tells pointer-holding types from the others.
func TestMappedTypesHoldNoPointers(t *testing.T) {
	for name, typ := range mappedElems(t) {
		if holdsPointers(typ) {
			t.Errorf("%s: %v holds Go pointers and cannot live in a mapping", name, typ)
		}
	}
	type flat struct {
		a int64
		b [3]uint16
		c struct{ d float64 }
	}
	type deep struct {
		a int32
		b [2]struct{ s string }
	}
	cases := []struct {
		typ  reflect.Type
		want bool
	}{
		{reflect.TypeFor[int32](), false},
		{reflect.TypeFor[engine.Time](), false},
		{reflect.TypeFor[flat](), false},
		{reflect.TypeFor[[4]complex128](), false},
		{reflect.TypeFor[[0]*int](), false}, // no element, nothing to point with
		{reflect.TypeFor[*int](), true},
		{reflect.TypeFor[[]int32](), true},
		{reflect.TypeFor[string](), true},
		{reflect.TypeFor[map[int]int](), true},
		{reflect.TypeFor[any](), true},
		{reflect.TypeFor[func()](), true},
		{reflect.TypeFor[chan int](), true},
		{reflect.TypeFor[unsafe.Pointer](), true},
		{reflect.TypeFor[deep](), true},
		{reflect.TypeFor[Program](), true},
	}
	for _, c := range cases {
		if got := holdsPointers(c.typ); got != c.want {
			t.Errorf("holdsPointers(%v) = %v, want %v", c.typ, got, c.want)
		}
	}
	func() {
		defer func() {
			if recover() == nil {
				t.Error("mappedSlice of a pointer type did not panic")
			}
		}()
		var m mappings
		mappedSlice[*int](&m, 8)
	}()
}

// mappedSliceCase checks mappedSlice[T] for n elements: length and
// capacity n, zeroed, in a recorded mapping of at least n elements (on
// Linux), written and read back whole.
func mappedSliceCase[T any](t *testing.T, n int, val T) {
	t.Helper()
	var m mappings
	s := mappedSlice[T](&m, n)
	label := fmt.Sprintf("%T × %d", val, n)
	if len(s) != n || cap(s) != n {
		t.Fatalf("%s: length %d capacity %d", label, len(s), cap(s))
	}
	var zero T
	for i := range s {
		if !reflect.DeepEqual(s[i], zero) {
			t.Fatalf("%s: element %d not zero", label, i)
		}
	}
	if mapsHere {
		if len(m.regions) != 1 || !inMapping(&m, unsafe.Pointer(&s[0])) || !inMapping(&m, unsafe.Pointer(&s[n-1])) {
			t.Fatalf("%s: not in the recorded mapping (%d regions)", label, len(m.regions))
		}
		if m.bytes() < n*int(unsafe.Sizeof(zero)) {
			t.Fatalf("%s: mapping of %d bytes", label, m.bytes())
		}
	}
	for i := range s {
		s[i] = val
	}
	for i := range s {
		if !reflect.DeepEqual(s[i], val) {
			t.Fatalf("%s: element %d read back wrong", label, i)
		}
	}
	m.release()
	if len(m.regions) != 0 || m.bytes() != 0 {
		t.Fatalf("%s: release left %d regions", label, len(m.regions))
	}
	m.release() // nothing left: nothing done
}

// mapsHere says whether this OS's mappedSlice maps (mapped_linux.go).
var mapsHere = func() bool {
	var m mappings
	mappedSlice[int32](&m, 1)
	defer m.release()
	return len(m.regions) == 1
}()

func TestMappedSlice(t *testing.T) {
	for _, n := range []int{1, 3, 1000, 1 << 16} {
		mappedSliceCase(t, n, int32(-7))
		mappedSliceCase(t, n, engine.Time(1<<40))
		mappedSliceCase(t, n, hotTask{dur: 5, issue: 6, hostAfter: 7, kind: KindSend, flags: hotSMSized})
		mappedSliceCase(t, n, queueEntry{end: 9, id: 3})
	}
	var m mappings
	if s := mappedSlice[int32](&m, 0); s != nil || len(m.regions) != 0 {
		t.Errorf("n = 0: %v, %d regions", s, len(m.regions))
	}
	if s := mappedSlice[int32](nil, 5); len(s) != 5 {
		t.Errorf("nil mappings: length %d, want a heap slice of 5", len(s))
	}
	if s := mappedSlice[struct{}](&m, 5); s != nil || len(m.regions) != 0 {
		t.Errorf("zero-size element: %v, %d regions", s, len(m.regions))
	}
}

// arenaArrays lists the arrays ReserveMapped reserves in an arena.
func arenaArrays(a *Arena) []unsafe.Pointer {
	return []unsafe.Pointer{base(a.tasks.buf), base(a.hot.buf), base(a.depOff.buf), base(a.deps.buf),
		base(a.succOf.buf), base(a.succList.buf), base(a.queue.buf), base(a.qself.buf), base(a.qrest.buf),
		base(a.sym.state), base(a.sym.need), base(a.sym.events)}
}

// An arena reserved from mappings builds and plays steps (larger than the
// reservation too: they grow on the heap) as without an arena; Release
// empties it and unmaps, and the arena is used again after it: built in
// bare, reserved on the heap, and reserved from mappings again. A Fork
// reserved from mappings saves, detaches and resumes into the full play's
// times; its Release refuses a Resume from it and from the Fork sharing
// its copies, and a new reservation works again.
func TestReserveMappedReleaseAndAgain(t *testing.T) {
	pr := commPricer{unit: engine.Millisecond, comm: 300 * engine.Microsecond}
	l, small := stepConfig(t, 2, 2, 2, 8, pipeline.OneFOneB)
	lb, large := stepConfig(t, 2, 2, 4, 32, pipeline.OneFOneB)
	tasksOf := func(cfg *StepConfig) int {
		progs, err := Build(cfg, pr)
		if err != nil {
			t.Fatal(err)
		}
		n := 0
		for _, p := range progs {
			n += len(p.Tasks)
		}
		return n
	}
	smallTasks := tasksOf(small)
	check := func(label string, arena *Arena, lay *Layout, cfg *StepConfig) {
		t.Helper()
		got, want := buildInArenaAndFresh(t, label, cfg, pr, arena)
		xw := playStep(t, lay, want, Interference{}, nil)
		xg := playStep(t, lay, got, Interference{}, nil)
		for i := 0; i < xw.Instances(); i++ {
			_, _, _, ws, we := xw.Instance(i)
			_, _, _, gs, ge := xg.Instance(i)
			if !slices.Equal(ws, gs) || !slices.Equal(we, ge) {
				t.Fatalf("%s instance %d: times differ", label, i)
			}
		}
	}
	arena := new(Arena)
	for round := range 2 {
		arena.ReserveMapped(smallTasks)
		for i, p := range arenaArrays(arena) {
			if p == nil || (mapsHere && !inMapping(&arena.mapped, p)) {
				t.Fatalf("round %d: array %d not reserved in a mapping", round, i)
			}
		}
		if mapsHere && arena.mapped.bytes() < ReservedBytes(smallTasks) {
			t.Fatalf("round %d: %d bytes mapped, ReservedBytes says %d", round, arena.mapped.bytes(), ReservedBytes(smallTasks))
		}
		check(fmt.Sprintf("round %d small", round), arena, l, small)
		if mapsHere && !inMapping(&arena.mapped, unsafe.Pointer(&arena.progs[0].Tasks[0])) {
			t.Fatalf("round %d: the build's tasks are not in the mapping", round)
		}
		check(fmt.Sprintf("round %d large", round), arena, lb, large) // outgrows the mappings
		check(fmt.Sprintf("round %d small again", round), arena, l, small)
		arena.Release()
		for i, p := range arenaArrays(arena) {
			if p != nil {
				t.Fatalf("round %d: array %d kept after Release", round, i)
			}
		}
		if len(arena.mapped.regions) != 0 || arena.rpKeyed {
			t.Fatalf("round %d: Release left %d mappings, re-pricing %v", round, len(arena.mapped.regions), arena.rpKeyed)
		}
		for _, p := range arena.progs {
			if p.Tasks != nil || p.deps != nil || p.succ != nil || p.hot != nil {
				t.Fatalf("round %d: stage %d's program kept its storage", round, p.Stage)
			}
		}
		check(fmt.Sprintf("round %d after Release", round), arena, l, small)
		arena.Reserve(smallTasks)
		check(fmt.Sprintf("round %d heap reserve", round), arena, lb, large)
		arena.Release()
	}

	for _, host := range []HostModel{{}, {On: true, KernelFwd: 5 * engine.Microsecond, KernelBwd: 5 * engine.Microsecond, Call: 10 * engine.Microsecond, Queue: 4}} {
		const m = 48
		cfg := steadyConfig(t, m, host)
		plan, ok := PlanSteady(cfg, 8)
		if !ok {
			t.Fatal("PlanSteady refused")
		}
		tasks := tasksOf(cfg)
		whole := NewSymmetric(engine.New(), cfg.Layout, mustBuild(t, cfg))
		if err := whole.Run(); err != nil {
			t.Fatal(err)
		}
		var f, g Fork
		g.ShareCopies(&f)
		for round := range 2 {
			label := fmt.Sprintf("host %v round %d", host.On, round)
			f.ReserveMapped(tasks)
			if mapsHere {
				for i, p := range forkArrays(f.cp) {
					if !inMapping(&f.cp.mapped, p) {
						t.Fatalf("%s: copy array %d not in a mapping", label, i)
					}
				}
			}
			arena := new(Arena)
			arena.ReserveMapped(tasks)
			short := *cfg
			short.Microbatches = plan.Played
			short.Arena = arena
			xs := NewSymmetric(engine.New(), short.Layout, mustBuild(t, &short))
			xs.CountEvents()
			if _, err := xs.RunSteady(plan, &f); err != nil {
				t.Fatal(err)
			}
			if saved, _, _ := f.Saved(); !saved {
				t.Fatalf("%s: nothing saved", label)
			}
			f.Detach()
			full := *cfg
			full.Arena = arena
			fp, err := BuildAfter(&full, unitPricer{unit: engine.Millisecond}, &f)
			if err != nil {
				t.Fatal(err)
			}
			x := NewSymmetric(engine.New(), cfg.Layout, fp)
			if err := x.Resume(&f); err != nil {
				t.Fatalf("%s: %v", label, err)
			}
			if err := x.RunResumed(); err != nil {
				t.Fatal(err)
			}
			for i := range x.inst {
				if !slices.Equal(x.inst[i].state, whole.inst[i].state) {
					t.Errorf("%s stage %d: the resumed play's times differ from the full play's", label, i)
				}
			}
			f.Release()
			g.Release()
			arena.Release()
			if saved, _, _ := f.Saved(); saved || len(f.cp.mapped.regions) != 0 || f.inst != nil {
				t.Fatalf("%s: Release kept the state or %d mappings", label, len(f.cp.mapped.regions))
			}
			for i, p := range forkArrays(f.cp) {
				if p != nil {
					t.Fatalf("%s: copy array %d kept after Release", label, i)
				}
			}
			x2 := NewSymmetric(engine.New(), cfg.Layout, mustBuild(t, cfg))
			if err := x2.Resume(&f); err != ErrNoResume {
				t.Errorf("%s: Resume after Release: %v, want ErrNoResume", label, err)
			}
		}
	}
}

func mustBuild(t *testing.T, cfg *StepConfig) []*Program {
	t.Helper()
	progs, err := Build(cfg, unitPricer{unit: engine.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	return progs
}

// ReservedBytes and ForkReservedBytes are what Reserve takes in an empty
// arena and Fork: the capacities of the arrays it makes, by their element
// sizes.
func TestReservedBytesIsWhatReserveTakes(t *testing.T) {
	bytesOf := func(v reflect.Value) int {
		return v.Cap() * int(v.Type().Elem().Size())
	}
	for _, tasks := range []int{0, 1, 7, 1000, 123457} {
		var a Arena
		a.Reserve(tasks)
		got := 0
		av := reflect.ValueOf(&a).Elem()
		for i := range av.NumField() {
			if f := av.Field(i); strings.HasPrefix(f.Type().Name(), "pool[") {
				got += bytesOf(f.FieldByName("buf"))
			}
		}
		got += bytesOf(reflect.ValueOf(a.sym.state)) + bytesOf(reflect.ValueOf(a.sym.need)) + bytesOf(reflect.ValueOf(a.sym.events))
		if want := ReservedBytes(tasks); got != want {
			t.Errorf("Arena.Reserve(%d) took %d bytes, ReservedBytes says %d", tasks, got, want)
		}
		var f Fork
		f.Reserve(tasks)
		got = 0
		if f.cp != nil {
			cv := reflect.ValueOf(f.cp).Elem()
			for i := range cv.NumField() {
				if fv := cv.Field(i); fv.Kind() == reflect.Slice {
					got += bytesOf(fv)
				}
			}
		}
		if want := ForkReservedBytes(tasks); got != want {
			t.Errorf("Fork.Reserve(%d) took %d bytes, ForkReservedBytes says %d", tasks, got, want)
		}
	}
}
