package workload

import (
	"strings"
	"sync"
	"testing"
)

// TestSuffixedSlots: suffixed answers name+suffix whatever its slot cache
// holds: for string literals (the slots' case), for equal names at other
// addresses, for names and suffixes that share their bytes' address but
// not their length (substrings of one buffer: a slot keyed by the address
// alone answers the shorter one's string for the longer), for the empty
// name, and from several goroutines at once. It fails when the slots'
// check ignores either length or the suffix.
func TestSuffixedSlots(t *testing.T) {
	buf := strings.Repeat("fc1_projection", 2) // one heap array for the substrings
	suf := strings.Clone("_grad_acc")
	cases := []struct{ name, suffix string }{
		{"qkv_proj", "_dgrad"},
		{"qkv_proj", "_wgrad"},
		{strings.Clone("qkv_proj"), "_dgrad"},
		{buf[:3], "_gate"},
		{buf[:4], "_gate"},
		{buf[:14], "_gate"},
		{buf[:3], suf[:5]},
		{buf[:3], suf},
		{"", "_bwd"},
		{"", ""},
		{"attn_core", ""},
	}
	// every prefix of one buffer, with every prefix of one suffix: names
	// at one address and of many lengths, so that some share a slot
	for k := 0; k <= len(buf); k++ {
		for j := 0; j <= len(suf); j += 3 {
			cases = append(cases, struct{ name, suffix string }{buf[:k], suf[:j]})
		}
	}
	for round := 0; round < 3; round++ { // cold slots, then warm, then warm again
		for _, c := range cases {
			if got, want := suffixed(c.name, c.suffix), c.name+c.suffix; got != want {
				t.Fatalf("round %d: suffixed(%q, %q) = %q, want %q", round, c.name, c.suffix, got, want)
			}
		}
	}
	var wg sync.WaitGroup
	errs := make(chan string, 8)
	for g := 0; g < 8; g++ {
		wg.Add(1)
		go func(g int) {
			defer wg.Done()
			for i := 0; i < 2000; i++ {
				c := cases[(i+g)%len(cases)]
				if got := suffixed(c.name, c.suffix); got != c.name+c.suffix {
					errs <- got
					return
				}
			}
		}(g)
	}
	wg.Wait()
	close(errs)
	for got := range errs {
		t.Errorf("concurrent suffixed answered %q", got)
	}
}

// TestSuffixEntryIs: a slot's entry answers only for the name and suffix
// at its addresses with its lengths (the hash alone keeps most pairs of one
// address apart, so TestSuffixedSlots may not reach a shared slot).
func TestSuffixEntryIs(t *testing.T) {
	buf := strings.Repeat("fc1_projection", 2)
	suf := strings.Clone("_grad_acc")
	e := &suffixEntry{name: buf[:4], suffix: suf[:5], s: buf[:4] + suf[:5]}
	for _, c := range []struct {
		name, suffix string
		want         bool
	}{
		{buf[:4], suf[:5], true},
		{buf[:3], suf[:5], false},                // same address, shorter name
		{buf[:5], suf[:5], false},                // same address, longer name
		{buf[:4], suf[:4], false},                // same address, shorter suffix
		{buf[:4], suf, false},                    // same address, longer suffix
		{strings.Clone(buf[:4]), suf[:5], false}, // equal bytes elsewhere: not this entry (a miss, answered by the map)
		{buf[14:18], suf[:5], false},             // equal bytes at another address
	} {
		if got := e.is(c.name, c.suffix); got != c.want {
			t.Errorf("is(%q, %q) = %v, want %v", c.name, c.suffix, got, c.want)
		}
	}
}
