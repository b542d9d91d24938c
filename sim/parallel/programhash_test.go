package parallel

import (
	"crypto/sha256"
	"reflect"
	"testing"

	"github.com/simtrain/simtrain/sim/engine"
)

// TestTaskHasNoPadding holds HashPrograms' premise: a Task's bytes are its
// fields' bytes, with no padding whose contents could differ between equal
// tasks.
func TestTaskHasNoPadding(t *testing.T) {
	typ := reflect.TypeFor[Task]()
	var sum uintptr
	for i := range typ.NumField() {
		sum += typ.Field(i).Type.Size()
	}
	if sum != typ.Size() {
		t.Fatalf("Task's fields take %d bytes of its %d: padding between them", sum, typ.Size())
	}
}

// TestHashProgramsSeesEveryPart builds a small step and checks that a
// change to any task field, a dependency, the stage or the hosted flag
// changes the hash, and that the same programs hash alike.
func TestHashProgramsSeesEveryPart(t *testing.T) {
	cfg := copyConfig(t, 2, 1, 4, 4)
	progs, err := Build(cfg, unitPricer{unit: engine.Microsecond})
	if err != nil {
		t.Fatal(err)
	}
	sum := func() [32]byte {
		h := sha256.New()
		HashPrograms(h, progs)
		var s [32]byte
		h.Sum(s[:0])
		return s
	}
	base := sum()
	if again := sum(); again != base {
		t.Fatal("the same programs hash differently")
	}
	p := progs[len(progs)-1]
	task := &p.Tasks[len(p.Tasks)/2]
	changes := []struct {
		name string
		do   func()
	}{
		{"Dur", func() { task.Dur++ }},
		{"Bytes", func() { task.Bytes++ }},
		{"aux", func() { task.aux ^= 1 }},
		{"Kind", func() { task.Kind++ }},
		{"Micro", func() { task.Micro++ }},
		{"GEMMShare", func() { task.GEMMShare++ }},
		{"SMSized", func() { task.SMSized = !task.SMSized }},
		{"Stage", func() { p.Stage++ }},
		{"Hosted", func() { p.Hosted = !p.Hosted }},
		{"a dependency", func() { p.deps[len(p.deps)-1]++ }},
	}
	for _, c := range changes {
		saved, savedP := *task, *p
		savedDep := p.deps[len(p.deps)-1]
		c.do()
		if sum() == base {
			t.Errorf("changing %s left the hash as it was", c.name)
		}
		*task, *p = saved, savedP
		p.deps[len(p.deps)-1] = savedDep
		if sum() != base {
			t.Fatalf("restoring %s did not restore the hash", c.name)
		}
	}
}
