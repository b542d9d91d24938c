package simulation

import (
	"math"
	"reflect"
	"strings"
	"testing"

	"github.com/simtrain/simtrain/sim/hardware"
	"github.com/simtrain/simtrain/sim/topology"
)

// Reuse.same keeps the last cluster exactly when the spec equals the one
// it was built from, field by field and the GPU record by value: the
// same record, a copy of it, equal strings at other addresses, and a
// change in any scalar, string, source list or node group.
func TestReuseSameSpec(t *testing.T) {
	h100, err := hardware.LookupGPU("h100-sxm")
	if err != nil {
		t.Fatal(err)
	}
	h200, err := hardware.LookupGPU("h200")
	if err != nil {
		t.Fatal(err)
	}
	base := topology.Spec{GPU: "h100-sxm", Hardware: &h100, Nodes: 4, Network: "clos", NIC: "ib-ndr-400", Oversubscription: 2}
	copyOf := func(g hardware.GPU) *hardware.GPU { return &g }
	with := func(f func(s *topology.Spec)) topology.Spec {
		s := base
		s.Hardware = copyOf(h100)
		f(&s)
		return s
	}
	cases := []struct {
		name string
		spec topology.Spec
		want bool
	}{
		{"the same spec", base, true},
		{"a copy of the record", with(func(*topology.Spec) {}), true},
		{"equal strings elsewhere", with(func(s *topology.Spec) {
			s.Network = strings.Clone("clos")
			s.Hardware.Name = strings.Clone(h100.Name)
		}), true},
		{"an equal source list elsewhere", with(func(s *topology.Spec) {
			s.Hardware.Sources = append([]string(nil), h100.Sources...)
		}), true},
		{"nodes", with(func(s *topology.Spec) { s.Nodes = 8 }), false},
		{"oversubscription", with(func(s *topology.Spec) { s.Oversubscription = 3 }), false},
		{"network", with(func(s *topology.Spec) { s.Network = "fat-tree" }), false},
		{"record's memory", with(func(s *topology.Spec) { s.Hardware.HBMUsableBytes++ }), false},
		{"record's compute profile", with(func(s *topology.Spec) { s.Hardware.Peak.BF16 *= 1.01 }), false},
		{"record's sources", with(func(s *topology.Spec) {
			s.Hardware.Sources = append(s.Hardware.Sources[:len(s.Hardware.Sources):len(s.Hardware.Sources)], "x")
		}), false},
		{"another GPU", with(func(s *topology.Spec) { s.GPU, s.Hardware = "h200", copyOf(h200) }), false},
		{"no record", with(func(s *topology.Spec) { s.Hardware = nil }), false},
		{"node groups", with(func(s *topology.Spec) {
			s.Groups = []topology.NodeGroup{{GPU: h100, Nodes: 2}, {GPU: h200, Nodes: 2}}
		}), false},
	}
	for _, c := range cases {
		r := &Reuse{spec: base}
		if got := r.same(c.spec); got != c.want {
			t.Errorf("%s: same %v, want %v", c.name, got, c.want)
		}
		// by value, as reflect.DeepEqual compares: the bytes only shortcut it
		a, b := base, c.spec
		deep := (a.Hardware == nil) == (b.Hardware == nil) && (a.Hardware == nil || reflect.DeepEqual(*a.Hardware, *b.Hardware))
		a.Hardware, b.Hardware = nil, nil
		if deep = deep && reflect.DeepEqual(a, b); deep != c.want {
			t.Errorf("%s: reflect.DeepEqual says %v", c.name, deep)
		}
	}
	// Node groups compared by value (the kept spec holds its own copy).
	g := with(func(s *topology.Spec) { s.Groups = []topology.NodeGroup{{GPU: h100, Nodes: 2}, {GPU: h200, Nodes: 2}} })
	kept := g
	kept.Groups = append([]topology.NodeGroup(nil), g.Groups...)
	if !(&Reuse{spec: kept}).same(g) {
		t.Error("equal node groups: not the same")
	}
	kept.Groups[1].GPU.SMs++
	if (&Reuse{spec: kept}).same(g) {
		t.Error("node groups with another GPU record: the same")
	}
}

// sameBits compares bytes: equal values at other addresses are not the
// same bits (the callers then compare by value), a NaN is its own bits.
func TestSameBits(t *testing.T) {
	type rec struct {
		a float64
		s string
		n int32
	}
	x := rec{1.5, "ab", 3}
	cases := []struct {
		name string
		y    rec
		want bool
	}{
		{"equal", x, true},
		{"string elsewhere", rec{1.5, strings.Clone("ab"), 3}, false},
		{"float", rec{1.25, x.s, 3}, false},
		{"int", rec{1.5, x.s, 4}, false},
	}
	for _, c := range cases {
		if got := sameBits(&x, &c.y); got != c.want {
			t.Errorf("%s: %v, want %v", c.name, got, c.want)
		}
	}
	nan := rec{math.NaN(), "", 0}
	nan2 := nan
	if !sameBits(&nan, &nan2) {
		t.Error("a NaN field: not its own bits")
	}
}

// shortConfig hands a Reuse's shortened plays two configurations by try
// parity, so no try writes over the one before it, and the same two run
// after run; a nil Reuse a new one each call.
func TestShortConfigAlternatesByTry(t *testing.T) {
	r := new(Reuse)
	for _, tc := range []struct{ try, slot int }{{0, 0}, {1, 1}, {2, 0}, {3, 1}, {4, 0}, {0, 0}} {
		if got, want := r.shortConfig(tc.try), &r.shortCfg[tc.slot]; got != want {
			t.Errorf("try %d: not the Reuse's configuration %d", tc.try, tc.slot)
		}
		if tc.try > 0 && r.shortConfig(tc.try) == r.shortConfig(tc.try-1) {
			t.Errorf("try %d: the configuration of try %d", tc.try, tc.try-1)
		}
	}
	var none *Reuse
	if a, b := none.shortConfig(0), none.shortConfig(2); a == nil || a == b {
		t.Errorf("nil Reuse: configurations %p and %p, want two new ones", a, b)
	}
}
