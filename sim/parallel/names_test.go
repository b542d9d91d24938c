package parallel

import (
	"fmt"
	"reflect"
	"sync"
	"testing"
)

// A TaskName gives back the name it was made from; equal names give equal
// TaskNames, different names different ones; the zero TaskName is "".
func TestTaskNames(t *testing.T) {
	if s := TaskName(0).String(); s != "" {
		t.Errorf("zero TaskName is %q, want empty", s)
	}
	if s := TaskName(1 << 31).String(); s != "" {
		t.Errorf("a TaskName never given is %q, want empty", s)
	}
	cases := []string{"attn_fwd", "mlp_fwd", "attn_fwd_cat", "", "send_grad", "names_test_only"}
	seen := map[TaskName]string{}
	for _, s := range cases {
		n := internName(s)
		if got := n.String(); got != s {
			t.Errorf("internName(%q).String() = %q", s, got)
		}
		if m := internName(s); m != n {
			t.Errorf("internName(%q) twice: %d then %d", s, n, m)
		}
		if prev, ok := seen[n]; ok && prev != s {
			t.Errorf("%q and %q share TaskName %d", prev, s, n)
		}
		seen[n] = s
	}
	if sendGradID.String() != sendGradName {
		t.Errorf("sendGradID is %q", sendGradID)
	}
	// A cache agrees with the table, built by a name made at run time (not
	// the literal's storage).
	var c nameCache
	for _, s := range cases {
		dyn := fmt.Sprintf("%s", s)
		if c.of(dyn) != internName(s) || c.of(s) != internName(s) {
			t.Errorf("nameCache.of(%q) = %d, table %d", s, c.of(dyn), internName(s))
		}
	}
	// A prefix shares its bytes' address with the name: the length tells
	// them apart. More names than slots evict one another.
	long := "attn_fwd_cat"
	for range 2 {
		for _, s := range []string{long, long[:8], long[:4], long} {
			if n := c.of(s); n.String() != s {
				t.Errorf("nameCache.of(%q) reads back %q", s, n.String())
			}
		}
	}
	for i := range 3 * nameSlots {
		s := fmt.Sprintf("evict_%d", i%(2*nameSlots))
		if n := c.of(s); n.String() != s {
			t.Errorf("nameCache.of(%q) reads back %q", s, n.String())
		}
	}
}

// Goroutines interning the same new names at once (sweep workers' builders)
// agree on every TaskName, and each reads back its names.
func TestTaskNamesConcurrent(t *testing.T) {
	const workers, names = 8, 200
	got := make([][]TaskName, workers)
	var wg sync.WaitGroup
	for w := range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			var c nameCache
			for i := range names {
				s := fmt.Sprintf("concurrent_%d", (i*7+w)%names)
				n := c.of(s)
				if n.String() != s {
					t.Errorf("worker %d: %q reads back as %q", w, s, n.String())
				}
				got[w] = append(got[w], n)
			}
		}()
	}
	wg.Wait()
	for w := range workers {
		for i, n := range got[w] {
			if want := internName(fmt.Sprintf("concurrent_%d", (i*7+w)%names)); n != want {
				t.Errorf("worker %d: name %d is %d, the table says %d", w, i, n, want)
			}
		}
	}
}

// A Task holds no pointer (so arrays of tasks are neither write-barriered
// nor scanned by the garbage collector): no field is a string, slice, map,
// pointer, interface, channel or function.
func TestTaskHasNoPointers(t *testing.T) {
	var check func(path string, ty reflect.Type)
	check = func(path string, ty reflect.Type) {
		switch ty.Kind() {
		case reflect.String, reflect.Slice, reflect.Map, reflect.Pointer, reflect.UnsafePointer,
			reflect.Interface, reflect.Chan, reflect.Func:
			t.Errorf("%s is a %s: Task must hold no pointer", path, ty.Kind())
		case reflect.Struct:
			for i := range ty.NumField() {
				f := ty.Field(i)
				check(path+"."+f.Name, f.Type)
			}
		case reflect.Array:
			check(path+"[]", ty.Elem())
		}
	}
	check("Task", reflect.TypeFor[Task]())
}
