package parallel

import (
	"math"
	"math/rand"
	"testing"

	"github.com/simtrain/simtrain/sim/collectives"
	"github.com/simtrain/simtrain/sim/engine"
)

// compareBase is the task the comparison tests edit one field at a time.
var compareBase = Task{Kind: KindForward, Stream: StreamTP, Group: GroupTP, Op: 2, GEMMShare: 7, CopyEngine: true, Name: 99,
	Step: 3, Chunk: 1, Layer: 12, Micro: 4, Dur: 1000, Bytes: 5e6, aux: 42}

// fieldEdits changes compareBase's fields one at a time ("itself" none);
// identity marks the nine fields repriceAdd compares (sameIdentity).
var fieldEdits = []struct {
	name     string
	edit     func(*Task)
	identity bool
}{
	{"itself", func(*Task) {}, false},
	{"kind", func(x *Task) { x.Kind = KindSend }, true},
	{"stream", func(x *Task) { x.Stream = StreamDP }, true},
	{"group", func(x *Task) { x.Group = GroupDP }, true},
	{"op", func(x *Task) { x.Op++ }, true},
	{"share", func(x *Task) { x.GEMMShare = 65535 }, false},
	{"copy engine", func(x *Task) { x.CopyEngine = false }, false},
	{"sm sized", func(x *Task) { x.SMSized = true }, false},
	{"name", func(x *Task) { x.Name = 1 << 31 }, true},
	{"step", func(x *Task) { x.Step = -1 }, true},
	{"chunk", func(x *Task) { x.Chunk = 1 << 14 }, true},
	{"layer", func(x *Task) { x.Layer = -1 }, true},
	{"micro", func(x *Task) { x.Micro = 1 << 30 }, true},
	{"dur", func(x *Task) { x.Dur = -1000 }, false},
	{"bytes", func(x *Task) { x.Bytes = 5e6 + 1 }, false},
	{"aux", func(x *Task) { x.aux = 1 << 63 }, false},
}

// TestSameIdentityMatchesFields holds sameIdentity's word compare to the
// nine fields repriceAdd compares: a task against copies with one field
// changed (each must differ), with a price field or flag changed (each
// must stay the same task), and random pairs.
func TestSameIdentityMatchesFields(t *testing.T) {
	fields := func(a, b *Task) bool {
		return a.Kind == b.Kind && a.Stream == b.Stream && a.Group == b.Group && a.Op == b.Op && a.Name == b.Name &&
			a.Step == b.Step && a.Chunk == b.Chunk && a.Layer == b.Layer && a.Micro == b.Micro
	}
	base := compareBase
	for _, c := range fieldEdits {
		x := base
		c.edit(&x)
		if got, want := sameIdentity(&base, &x), fields(&base, &x); got != want || got != !c.identity {
			t.Errorf("%s: sameIdentity %v, fields %v, want %v", c.name, got, want, !c.identity)
		}
	}
	x := base
	x.Dur, x.Bytes, x.aux = 1, 2, 3 // every price at once
	if !sameIdentity(&base, &x) {
		t.Error("prices: sameIdentity false, want true")
	}
	rng := rand.New(rand.NewSource(48))
	same := 0
	for range 100000 {
		a, b := base, base
		for _, x := range []*Task{&a, &b} {
			x.Kind, x.Stream, x.Group, x.Op = Kind(rng.Intn(3)), Stream(rng.Intn(2)), GroupKind(rng.Intn(2)), base.Op+collectives.Op(rng.Intn(2))
			x.Name, x.Step, x.Chunk = TaskName(rng.Intn(2)), int16(rng.Intn(2)), int16(rng.Intn(2))
			x.Layer, x.Micro, x.GEMMShare = int32(rng.Intn(2)), int32(rng.Intn(2)), uint16(rng.Intn(3))
		}
		got, want := sameIdentity(&a, &b), fields(&a, &b)
		if got != want {
			t.Fatalf("%+v vs %+v: sameIdentity %v, fields %v", a, b, got, want)
		}
		if want {
			same++
		}
	}
	if same == 0 {
		t.Fatal("no random pair the same task")
	}
}

// TestSameTaskMatchesStruct holds sameTask's and sameTaskLayer's word
// compares to Go's struct comparison: a task against copies with one field
// changed (each must differ, the price fields and flags included), Bytes'
// float cases (NaN differs from itself, −0 equals +0), the layer put by
// sameTaskLayer, and random pairs.
func TestSameTaskMatchesStruct(t *testing.T) {
	base := compareBase
	for _, c := range fieldEdits {
		x := base
		c.edit(&x)
		same := c.name == "itself" // every other edit changes a field
		if got, want := sameTask(&base, &x), base == x; got != want || got != same {
			t.Errorf("%s: sameTask %v, == %v, want %v", c.name, got, want, same)
		}
		// the layer put: x's own (sameTask), and base's made x's
		if got, want := sameTaskLayer(&x, &base, x.Layer), x == base; got != want {
			t.Errorf("%s: sameTaskLayer own layer %v, == %v", c.name, got, want)
		}
		y := x
		y.Layer = base.Layer
		if got, want := sameTaskLayer(&x, &base, base.Layer), y == base; got != want {
			t.Errorf("%s: sameTaskLayer base's layer %v, == %v", c.name, got, want)
		}
	}
	for _, b := range []struct {
		a, b float64
		same bool
	}{{math.NaN(), math.NaN(), false}, {math.Copysign(0, -1), 0, true}, {0, math.Copysign(0, -1), true}} {
		x, y := base, base
		x.Bytes, y.Bytes = b.a, b.b
		if got, want := sameTask(&x, &y), x == y; got != want || got != b.same {
			t.Errorf("bytes %v vs %v: sameTask %v, == %v, want %v", b.a, b.b, got, want, b.same)
		}
		if got := sameTaskLayer(&x, &y, 12); got != b.same {
			t.Errorf("bytes %v vs %v: sameTaskLayer %v, want %v", b.a, b.b, got, b.same)
		}
	}
	rng := rand.New(rand.NewSource(48))
	same := 0
	for range 100000 {
		a, b := base, base
		for _, x := range []*Task{&a, &b} {
			x.Kind, x.Stream, x.Group, x.Op = Kind(rng.Intn(2)), Stream(rng.Intn(2)), GroupKind(rng.Intn(2)), base.Op+collectives.Op(rng.Intn(2))
			x.Name, x.Step, x.Chunk = TaskName(rng.Intn(2)), int16(rng.Intn(2)), int16(rng.Intn(2))
			x.Layer, x.Micro, x.GEMMShare = int32(rng.Intn(2)), int32(rng.Intn(2)), uint16(rng.Intn(2))
			x.CopyEngine, x.SMSized = rng.Intn(2) == 0, rng.Intn(2) == 0
			x.Dur, x.Bytes, x.aux = engine.Time(rng.Intn(2)), float64(rng.Intn(2)), uint64(rng.Intn(2))
		}
		if got, want := sameTask(&a, &b), a == b; got != want {
			t.Fatalf("%+v vs %+v: sameTask %v, == %v", a, b, got, want)
		}
		layer := int32(rng.Intn(3)) - 1
		c := a
		c.Layer = layer
		if got, want := sameTaskLayer(&a, &b, layer), c == b; got != want {
			t.Fatalf("%+v (layer %d) vs %+v: sameTaskLayer %v, == %v", a, layer, b, got, want)
		}
		if a == b {
			same++
		}
	}
	if same == 0 {
		t.Fatal("no random pair the same task")
	}
}
