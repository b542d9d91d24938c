package parallel

import (
	"math"
	"math/rand"
	"testing"
)

// TestPassThetaMatchesWalk holds passTheta to the walk copyPass made
// before it: every index of the source's start state moved by P (when
// non-negative) or stayed, θ the least moved one (the source's first
// task when none moved) and every stayed one below it. Hand-made cases
// (none moved, a negative index "moved", P wrapping past 2³¹, a stayed
// index at θ, a difference neither 0 nor P in either lane) and random
// states built from a θ, then perturbed.
func TestPassThetaMatchesWalk(t *testing.T) {
	walk := func(s, c *[passStateInts]int32, P, at int32) (int32, bool) {
		theta, stayed := at, int32(-1)
		for i, v := range s {
			switch c := c[i]; {
			case v >= 0 && c == v+P:
				theta = min(theta, v)
			case c == v:
				stayed = max(stayed, v)
			default:
				return 0, false
			}
		}
		return theta, stayed < theta
	}
	fill := func(v int32) (s [passStateInts]int32) {
		for i := range s {
			s[i] = v
		}
		return s
	}
	type tc struct {
		name  string
		s, c  [passStateInts]int32
		P, at int32
	}
	cases := []tc{
		{name: "none moved", s: fill(-1), c: fill(-1), P: 5, at: 40},
		{name: "all moved", s: fill(7), c: fill(12), P: 5, at: 40},
		{name: "negative moved", s: fill(-1), c: fill(4), P: 5, at: 40},
		{name: "wrap", s: fill(math.MaxInt32 - 1), c: fill(math.MinInt32 + 1), P: 3, at: math.MaxInt32},
	}
	mixed := fill(-1)
	mixedC := fill(-1)
	mixed[0], mixedC[0] = 10, 10 // stayed
	mixed[5], mixedC[5] = 20, 25 // moved
	cases = append(cases, tc{name: "mixed", s: mixed, c: mixedC, P: 5, at: 30})
	atTheta, atThetaC := mixed, mixedC
	atTheta[6], atThetaC[6] = 20, 20 // stayed at θ
	cases = append(cases, tc{name: "stayed at theta", s: atTheta, c: atThetaC, P: 5, at: 30})
	for lane := range 2 {
		bad, badC := mixed, mixedC
		bad[2+lane], badC[2+lane] = 3, 4 // moved by neither 0 nor P
		cases = append(cases, tc{name: "odd difference", s: bad, c: badC, P: 5, at: 30})
	}
	rng := rand.New(rand.NewSource(48))
	for range 20000 {
		P := 1 + rng.Int31n(50)
		at := rng.Int31n(200)
		theta := rng.Int31n(at + 1)
		var s, c [passStateInts]int32
		for i := range s {
			v := rng.Int31n(at+1) - 1
			s[i], c[i] = v, v
			if v >= theta {
				c[i] = v + P
			}
		}
		for range rng.Intn(3) { // perturb: some fail, some move θ
			i := rng.Intn(passStateInts)
			switch rng.Intn(3) {
			case 0:
				c[i] += int32(rng.Intn(3)) - 1
			case 1:
				c[i] = s[i] + P
			default:
				c[i] = s[i]
			}
		}
		cases = append(cases, tc{name: "random", s: s, c: c, P: P, at: at})
	}
	oks := 0
	for _, k := range cases {
		wantTheta, wantOK := walk(&k.s, &k.c, k.P, k.at)
		gotTheta, gotOK := passTheta(&k.s, &k.c, k.P, k.at)
		if gotOK != wantOK || wantOK && gotTheta != wantTheta {
			t.Fatalf("%s: s %v c %v P %d at %d: passTheta %d,%v; walk %d,%v", k.name, k.s, k.c, k.P, k.at, gotTheta, gotOK, wantTheta, wantOK)
		}
		if wantOK {
			oks++
		}
	}
	if oks < len(cases)/4 || oks == len(cases) {
		t.Fatalf("%d of %d cases copyable: the cases do not exercise both outcomes", oks, len(cases))
	}
}
