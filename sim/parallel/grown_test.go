package parallel

import (
	"slices"
	"testing"
)

// grown keeps a slice that has room and otherwise returns a new array of
// exactly len+n elements holding the old ones, the length unchanged (hand
// counted cases).
func TestGrown(t *testing.T) {
	for _, tc := range []struct {
		name          string
		len, cap, n   int
		wantCap       int
		wantSameArray bool
	}{
		{"room left", 3, 8, 5, 8, true},
		{"no room needed", 3, 3, 0, 3, true},
		{"one short", 3, 7, 5, 8, false},
		{"from empty", 0, 0, 256, 256, false},
		{"doubling", 256, 256, 256, 512, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := make([]int32, tc.len, tc.cap)
			for i := range s {
				s[i] = int32(10 + i)
			}
			g := grown(s, tc.n)
			if len(g) != tc.len || cap(g) != tc.wantCap {
				t.Fatalf("grown(len %d cap %d, %d): len %d cap %d, want len %d cap %d", tc.len, tc.cap, tc.n, len(g), cap(g), tc.len, tc.wantCap)
			}
			if !slices.Equal(g, s) {
				t.Fatalf("elements %v, want %v", g, s)
			}
			same := cap(s) > 0 && &g[:1][0] == &s[:1][0]
			if same != tc.wantSameArray {
				t.Fatalf("same array %v, want %v", same, tc.wantSameArray)
			}
			if !tc.wantSameArray && tc.len > 0 {
				g[0] = -1 // a new array: writes do not reach the old one
				if s[0] == -1 {
					t.Fatal("the grown slice shares the old array")
				}
			}
		})
	}
}
