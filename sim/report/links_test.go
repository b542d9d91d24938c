package report

import (
	"path/filepath"
	"testing"

	"github.com/simtrain/simtrain/sim/scenario"
	"github.com/simtrain/simtrain/sim/topology"
)

// TestLinksSkipped: hand-checked decisions of links.arrow's size policy at
// and around the bound.
func TestLinksSkipped(t *testing.T) {
	const off = "sim.links is off; --links full writes one row per link"
	for _, c := range []struct {
		policy string
		links  int
		want   string
	}{
		{"auto", 0, ""},
		{"auto", 262_144, ""},
		{"auto", 262_145, "262,145 links > 262,144; --links full writes one row per link"},
		{"auto", 1_441_792, "1,441,792 links > 262,144; --links full writes one row per link"},
		{"", 262_145, "262,145 links > 262,144; --links full writes one row per link"},
		{"full", 1_441_792, ""},
		{"full", 0, ""},
		{"off", 0, off},
		{"off", 1_441_792, off},
	} {
		if got := LinksSkipped(c.policy, c.links); got != c.want {
			t.Errorf("LinksSkipped(%q, %d) = %q, want %q", c.policy, c.links, got, c.want)
		}
	}
}

// TestBundledScenariosWriteLinks: every bundled scenario's cluster lies
// under auto's bound, so each keeps writing links.arrow by default.
func TestBundledScenariosWriteLinks(t *testing.T) {
	files, err := filepath.Glob("../../scenarios/*.yaml")
	if err != nil || len(files) == 0 {
		t.Fatalf("no bundled scenarios: %v", err)
	}
	for _, f := range files {
		s, err := scenario.Load(f)
		if err != nil {
			t.Fatal(err)
		}
		c, err := topology.Build(s.TopologySpec())
		if err != nil {
			t.Fatal(err)
		}
		if s.LinksPolicy() != "auto" || LinksSkipped(s.LinksPolicy(), c.NumLinks()) != "" {
			t.Errorf("%s: sim.links %s with %d links: links.arrow not written by default", f, s.LinksPolicy(), c.NumLinks())
		}
		t.Logf("%s: %d links", filepath.Base(f), c.NumLinks())
	}
}

// TestGrouped: the note's counts, comma every three digits.
func TestGrouped(t *testing.T) {
	for n, want := range map[int]string{0: "0", 7: "7", 999: "999", 1000: "1,000", 135_000: "135,000", 262_144: "262,144", 1_443_168: "1,443,168", 12_345_678: "12,345,678"} {
		if got := grouped(n); got != want {
			t.Errorf("grouped(%d) = %q, want %q", n, got, want)
		}
	}
}
