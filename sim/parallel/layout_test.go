package parallel

import (
	"slices"
	"testing"
)

func mustOrder(t *testing.T, s string) [5]Dim {
	t.Helper()
	o, err := ParseOrder(s)
	if err != nil {
		t.Fatal(err)
	}
	return o
}

func TestDefaultOrderKeepsTPInsideANode(t *testing.T) {
	// tp=8 pp=2 dp=4 on 64 GPUs: rank = tp + 8*(dp + 4*pp).
	l, err := NewLayout(8, 1, 1, 4, 2, mustOrder(t, "tp-cp-ep-dp-pp"))
	if err != nil {
		t.Fatal(err)
	}
	if got := l.Group(GroupTP, 13); !slices.Equal(got, []int{8, 9, 10, 11, 12, 13, 14, 15}) {
		t.Errorf("TP group of 13 = %v", got)
	}
	if got := l.Group(GroupDP, 13); !slices.Equal(got, []int{5, 13, 21, 29}) {
		t.Errorf("DP group of 13 = %v", got)
	}
	if got := l.Group(GroupPP, 13); !slices.Equal(got, []int{13, 45}) {
		t.Errorf("PP group of 13 = %v", got)
	}
	if c := l.CoordOf(45); c != (Coord{TP: 5, DP: 1, PP: 1}) {
		t.Errorf("CoordOf(45) = %+v", c)
	}
}

func TestRankCoordRoundTripAndGroupsPartition(t *testing.T) {
	cases := []struct {
		tp, cp, ep, dp, pp int
		order              string
	}{
		{2, 2, 2, 2, 2, "tp-cp-ep-dp-pp"},
		{4, 1, 4, 4, 2, "tp-cp-ep-dp-pp"},
		{2, 2, 4, 4, 1, "tp-dp-cp-ep-pp"},
		{1, 1, 1, 8, 4, "pp-dp-tp-cp-ep"},
		{2, 4, 8, 2, 2, "tp-cp-dp-ep-pp"},
	}
	for _, c := range cases {
		l, err := NewLayout(c.tp, c.cp, c.ep, c.dp, c.pp, mustOrder(t, c.order))
		if err != nil {
			t.Fatal(err)
		}
		for r := 0; r < l.World(); r++ {
			if got := l.RankOf(l.CoordOf(r)); got != r {
				t.Fatalf("%+v: RankOf(CoordOf(%d)) = %d", c, r, got)
			}
		}
		for k := GroupKind(0); k < NumGroupKinds; k++ {
			seen := make([]int, l.World())
			for _, g := range l.Groups(k, -1) {
				if len(g) != l.GroupSize(k) {
					t.Fatalf("%+v %s: group %v has size %d, want %d", c, k, g, len(g), l.GroupSize(k))
				}
				for _, r := range g {
					seen[r]++
					// every member maps back to the same group
					if !slices.Equal(l.Group(k, r), g) {
						t.Fatalf("%+v %s: Group(%d) = %v, want %v", c, k, r, l.Group(k, r), g)
					}
				}
			}
			for r, n := range seen {
				if n != 1 {
					t.Fatalf("%+v %s: rank %d in %d groups", c, k, r, n)
				}
			}
		}
		// EP × EDP tile the DP×CP group.
		for r := 0; r < l.World(); r++ {
			if l.GroupSize(GroupEP)*l.GroupSize(GroupEDP) != l.GroupSize(GroupDP) {
				t.Fatalf("ep*edp != dp*cp")
			}
			dp := l.Group(GroupDP, r)
			for _, m := range append(l.Group(GroupEP, r), l.Group(GroupEDP, r)...) {
				if !slices.Contains(dp, m) {
					t.Fatalf("%+v: EP/EDP member %d of rank %d outside its DP group %v", c, m, r, dp)
				}
			}
		}
	}
}

func TestLayoutErrors(t *testing.T) {
	if _, err := ParseOrder("tp-cp-dp-pp"); err == nil {
		t.Error("short order accepted")
	}
	if _, err := ParseOrder("tp-cp-ep-dp-xx"); err == nil {
		t.Error("unknown dim accepted")
	}
	if _, err := ParseOrder("tp-tp-ep-dp-pp"); err == nil {
		t.Error("repeated dim accepted")
	}
	if _, err := NewLayout(1, 1, 3, 4, 1, mustOrder(t, "tp-cp-ep-dp-pp")); err == nil {
		t.Error("ep not dividing dp*cp accepted")
	}
}

func TestPartition(t *testing.T) {
	// Llama 3 405B: 126 layers, pp 16, v 8, first = last = 7: one slot per chunk.
	p, err := Partition(126, 16, 8, 7, 7)
	if err != nil {
		t.Fatal(err)
	}
	total := 0
	for s := range p {
		for c, ch := range p[s] {
			slots := ch.Layers
			if ch.Embedding || ch.Head {
				slots++
			}
			if slots != 1 {
				t.Fatalf("stage %d chunk %d has %d slots", s, c, slots)
			}
			total += ch.Layers
		}
	}
	if total != 126 || !p[0][0].Embedding || p[0][0].Layers != 0 || !p[15][7].Head {
		t.Fatalf("bad partition: total %d first %+v last %+v", total, p[0][0], p[15][7])
	}
	// Model chunk order: chunk 0 of stage 1 follows chunk 0 of stage 0.
	if p[1][0].FirstLayer != 0 || p[2][0].FirstLayer != 1 || p[0][1].FirstLayer != 15 {
		t.Fatalf("layer order: %d %d %d", p[1][0].FirstLayer, p[2][0].FirstLayer, p[0][1].FirstLayer)
	}
	// Even split.
	p, err = Partition(32, 4, 2, 0, 0)
	if err != nil || p[3][1].Layers != 4 || p[3][1].FirstLayer != 28 || p[0][1].FirstLayer != 16 {
		t.Fatalf("even split: %v %+v", err, p[3][1])
	}
	// Uneven first/last without virtual stages.
	p, err = Partition(30, 4, 1, 6, 8)
	if err != nil || p[0][0].Layers != 6 || p[1][0].Layers != 8 || p[3][0].Layers != 8 {
		t.Fatalf("uneven: %v", err)
	}
	for _, bad := range [][5]int{{30, 4, 1, 0, 0}, {32, 4, 3, 0, 0}, {10, 1, 1, 2, 0}, {30, 4, 1, 7, 8}, {10, 2, 1, 6, 5}} {
		if _, err := Partition(bad[0], bad[1], bad[2], bad[3], bad[4]); err == nil {
			t.Errorf("Partition%v accepted", bad)
		}
	}
}

func TestScheduleOrders(t *testing.T) {
	count := func(st []Step, ph Phase) int {
		n := 0
		for _, s := range st {
			if s.Phase == ph {
				n++
			}
		}
		return n
	}
	for _, sched := range []Schedule{GPipe, OneFOneB, Interleaved, ZeroBubble} {
		for _, pv := range [][2]int{{1, 1}, {4, 1}, {4, 2}, {8, 3}} {
			p, v := pv[0], pv[1]
			if v > 1 && sched != Interleaved {
				continue
			}
			for _, m := range []int{p, 2 * p, 4 * p} {
				for s := 0; s < p; s++ {
					st := Order(sched, p, s, m, v)
					if count(st, PhaseF) != m*v || count(st, PhaseB) != m*v {
						t.Fatalf("%s p%d v%d m%d s%d: %d F %d B", sched, p, v, m, s, count(st, PhaseF), count(st, PhaseB))
					}
					if sched == ZeroBubble && count(st, PhaseW) != m {
						t.Fatalf("zero-bubble: %d W, want %d", count(st, PhaseW), m)
					}
					// every B after its F, every W after its B
					seenF, seenB := map[[2]int]bool{}, map[[2]int]bool{}
					for _, x := range st {
						k := [2]int{x.Microbatch, x.Chunk}
						switch x.Phase {
						case PhaseF:
							seenF[k] = true
						case PhaseB:
							if !seenF[k] {
								t.Fatalf("%s: B before F for %v", sched, k)
							}
							seenB[k] = true
						case PhaseW:
							if !seenB[k] {
								t.Fatalf("%s: W before B for %v", sched, k)
							}
						}
					}
					if sched == OneFOneB || sched == ZeroBubble {
						if got, want := InFlight(st), min(p-s, m); got != want {
							t.Fatalf("%s p%d m%d s%d: in flight %d, want %d", sched, p, m, s, got, want)
						}
					}
					if sched == GPipe && InFlight(st) != m*v {
						t.Fatalf("gpipe holds %d", InFlight(st))
					}
				}
			}
		}
	}
}
