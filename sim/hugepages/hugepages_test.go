package hugepages

import (
	"testing"
	"unsafe"
)

// Advise is a hint: it returns its slice itself, contents and length
// unchanged, for empty, small (left alone) and large slices, whatever their
// alignment.
func TestAdviseReturnsSliceUnchanged(t *testing.T) {
	for _, tc := range []struct {
		name   string
		n, off int // elements, then the slice used starts off elements in
	}{
		{"empty", 0, 0},
		{"small", 1000, 0},
		{"just under 4 MiB", 1<<19 - 1, 0},
		{"8 MiB aligned as allocated", 1 << 20, 0},
		{"8 MiB unaligned", 1<<20 + 7, 7},
	} {
		t.Run(tc.name, func(t *testing.T) {
			all := make([]int64, tc.n)
			for i := range all {
				all[i] = int64(i) * 3
			}
			s := all[tc.off:]
			got := Advise(s)
			if len(got) != len(s) || cap(got) != cap(s) || (len(s) > 0 && unsafe.SliceData(got) != unsafe.SliceData(s)) {
				t.Fatalf("Advise returned another slice (len %d cap %d, want %d %d)", len(got), cap(got), len(s), cap(s))
			}
			for i, v := range got {
				if v != int64(i+tc.off)*3 {
					t.Fatalf("element %d = %d, want %d", i, v, (i+tc.off)*3)
				}
			}
		})
	}
}
