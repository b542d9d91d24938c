package parallel

import (
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/simtrain/simtrain/sim/pipeline"
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
		checkStageGroups(t, l)
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

// TestPlaceVAndBidirectional cuts layers into the model chunks of the
// V-shaped and bidirectional placements: stage s holds model chunks s and
// 2p−1−s of one copy (V), or chunk s of one copy and p−1−s of the other
// (bidirectional, the same layers twice); first_stage_layers and
// last_stage_layers size the first and last model chunk.
func TestPlaceVAndBidirectional(t *testing.T) {
	v, err := Place(pipeline.VShape(4), 16, 0, 0)
	if err != nil {
		t.Fatal(err)
	}
	// model chunk k holds layers 2k, 2k+1; stage 1 holds chunks 1 and 6
	if c := v[1][0]; c.FirstLayer != 2 || c.Layers != 2 || c.Embedding || c.Head {
		t.Errorf("V stage 1 chunk 0: %+v", c)
	}
	if c := v[1][1]; c.FirstLayer != 12 || c.Layers != 2 {
		t.Errorf("V stage 1 chunk 1: %+v", c)
	}
	if !v[0][0].Embedding || !v[0][1].Head || v[0][1].FirstLayer != 14 {
		t.Errorf("V stage 0 holds the embedding and the output layer: %+v %+v", v[0][0], v[0][1])
	}
	bi, err := Place(pipeline.Bidirectional(4), 30, 6, 0)
	if err != nil {
		t.Fatal(err)
	}
	// 6 layers on model chunk 0, 8 on the other three; copy 1 runs from
	// stage 3 back to stage 0 with the same layers
	if bi[0][0].Layers != 6 || bi[3][1].Layers != 6 || bi[3][1].FirstLayer != 0 || !bi[3][1].Embedding {
		t.Errorf("bidirectional: first chunks %+v %+v", bi[0][0], bi[3][1])
	}
	if bi[1][1] != (Chunk{Stage: 1, Index: 1, FirstLayer: 14, Layers: 8}) || !bi[0][1].Head || !bi[3][0].Head {
		t.Errorf("bidirectional: stage 1 slot 1 %+v; heads %v %v", bi[1][1], bi[0][1].Head, bi[3][0].Head)
	}
	for _, bad := range []struct {
		pl                  pipeline.Placement
		layers, first, last int
	}{
		{pipeline.VShape(4), 15, 0, 0},         // 15 over 8 chunks
		{pipeline.VShape(4), 16, 4, 0},         // 12 left over 7
		{pipeline.Bidirectional(4), 10, 6, 6},  // exceed
		{pipeline.Bidirectional(2), 10, 4, 5},  // must equal with 2 chunks
		{pipeline.Bidirectional(4), 16, -1, 0}, // negative
	} {
		if _, err := Place(bad.pl, bad.layers, bad.first, bad.last); err == nil {
			t.Errorf("Place(%d chunks, %d layers, %d, %d) accepted", bad.pl.ModelChunks(), bad.layers, bad.first, bad.last)
		}
	}
}

// TestFoldedLayoutGroups: MoE parallel folding re-reads a stage's ranks as
// etp + ETP·(ep + EP·edp) (Megatron-Core's expert rank generator with the
// default order tp-cp-ep-dp-pp, pp outermost). Hand-listed groups:
//   - tp2 dp4 pp2 ep4 etp1: a stage is 8 ranks, ep = local%4, edp =
//     local/4, so rank 13 (stage 1, local 5) has EP {12..15}, EDP {9, 13}
//     and ETP {13}; its EP group spans two TP groups ({12,13}, {14,15});
//   - tp4 dp2 ep2 etp2: rank 5 = etp 1 + 2·(ep 0 + 2·edp 1): ETP {4, 5},
//     EP {5, 7}, EDP {1, 5};
//   - tp2 cp2 dp2 ep4 etp1: cp has size 1 in the expert generator, so the
//     EP group of rank 6 is the stage's ranks 4-7 (tp × cp at dp 1);
//   - r024's Qwen3-235B layout, tp2 dp16 pp8 ep32 etp1: an EP group is a
//     whole stage of 32 GPUs (2 TP ranks × 16 DP ranks), EDP is 1.
func TestFoldedLayoutGroups(t *testing.T) {
	def := mustOrder(t, "tp-cp-ep-dp-pp")
	seq := func(a, n int) []int {
		out := make([]int, n)
		for i := range out {
			out[i] = a + i
		}
		return out
	}
	for _, c := range []struct {
		tp, etp, cp, ep, dp, pp, rank int
		epG, edp, etpG                []int
	}{
		{2, 1, 1, 4, 4, 2, 13, []int{12, 13, 14, 15}, []int{9, 13}, []int{13}},
		{4, 2, 1, 2, 2, 1, 5, []int{5, 7}, []int{1, 5}, []int{4, 5}},
		{2, 1, 2, 4, 2, 1, 6, []int{4, 5, 6, 7}, []int{2, 6}, []int{6}},
		{2, 1, 1, 32, 16, 8, 40, seq(32, 32), []int{40}, []int{40}},
	} {
		l, err := NewFoldedLayout(c.tp, c.etp, c.cp, c.ep, c.dp, c.pp, def)
		if err != nil {
			t.Fatal(err)
		}
		if !l.Folded() || l.EDP() != len(c.edp) {
			t.Errorf("%+v: folded %v, EDP %d", c, l.Folded(), l.EDP())
		}
		for _, g := range []struct {
			k    GroupKind
			want []int
		}{{GroupEP, c.epG}, {GroupEDP, c.edp}, {GroupETP, c.etpG}} {
			if got := l.Group(g.k, c.rank); !slices.Equal(got, g.want) {
				t.Errorf("tp%d etp%d cp%d ep%d dp%d pp%d: %s group of %d = %v, want %v",
					c.tp, c.etp, c.cp, c.ep, c.dp, c.pp, g.k, c.rank, got, g.want)
			}
		}
	}
	// Without folding the expert TP group is the TP group.
	l, _ := NewLayout(2, 1, 2, 4, 1, def)
	if got := l.Group(GroupETP, 3); l.Folded() || !slices.Equal(got, []int{2, 3}) || l.EDP() != 2 {
		t.Errorf("unfolded: ETP group of 3 = %v, EDP %d", got, l.EDP())
	}
}

// TestFoldedGroupsPartition: in folded layouts every expert group kind
// partitions the ranks, stays inside one pipeline stage, and ETP·EP·EDP =
// TP·CP·DP; the dense groups are unchanged.
func TestFoldedGroupsPartition(t *testing.T) {
	for _, c := range []struct {
		tp, etp, cp, ep, dp, pp int
		order                   string
	}{
		{2, 1, 1, 4, 4, 2, "tp-cp-ep-dp-pp"},
		{4, 2, 2, 4, 2, 2, "tp-cp-ep-dp-pp"},
		{8, 1, 1, 16, 4, 1, "tp-cp-ep-dp-pp"},
		{4, 1, 2, 2, 2, 2, "tp-cp-dp-ep-pp"},
		{2, 1, 2, 4, 2, 2, "cp-dp-tp-ep-pp"},
	} {
		l, err := NewFoldedLayout(c.tp, c.etp, c.cp, c.ep, c.dp, c.pp, mustOrder(t, c.order))
		if err != nil {
			t.Fatal(err)
		}
		if l.GroupSize(GroupETP)*l.GroupSize(GroupEP)*l.GroupSize(GroupEDP) != c.tp*c.cp*c.dp {
			t.Fatalf("%+v: etp*ep*edp != tp*cp*dp", c)
		}
		checkStageGroups(t, l)
		for k := GroupKind(0); k < NumGroupKinds; k++ {
			seen := make([]int, l.World())
			for _, g := range l.Groups(k, -1) {
				if len(g) != l.GroupSize(k) {
					t.Fatalf("%+v %s: group %v has size %d, want %d", c, k, g, len(g), l.GroupSize(k))
				}
				for _, r := range g {
					seen[r]++
					if !slices.Equal(l.Group(k, r), g) {
						t.Fatalf("%+v %s: Group(%d) = %v, want %v", c, k, r, l.Group(k, r), g)
					}
					if k != GroupPP && l.CoordOf(r).PP != l.CoordOf(g[0]).PP {
						t.Fatalf("%+v %s: group %v spans pipeline stages", c, k, g)
					}
				}
			}
			for r, n := range seen {
				if n != 1 {
					t.Fatalf("%+v %s: rank %d in %d groups", c, k, r, n)
				}
			}
		}
	}
}

func TestFoldedLayoutErrors(t *testing.T) {
	def := mustOrder(t, "tp-cp-ep-dp-pp")
	for _, c := range []struct {
		tp, etp, cp, ep, dp, pp int
		order                   [5]Dim
		want                    string
	}{
		{4, 3, 1, 1, 2, 1, def, "parallel.expert_tp: 3 must divide tp 4"},
		{2, 4, 1, 1, 2, 1, def, "expert_tp > tp is not supported"},
		{2, 0, 1, 1, 2, 1, def, "parallel.expert_tp: must be >= 1"},
		{2, 1, 1, 8, 2, 1, def, "parallel.ep: ep*expert_tp = 8*1 does not divide tp*cp*dp = 4"},
		{2, 1, 1, 4, 2, 2, mustOrder(t, "tp-cp-ep-pp-dp"), "needs pp last"},
	} {
		_, err := NewFoldedLayout(c.tp, c.etp, c.cp, c.ep, c.dp, c.pp, c.order)
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%+v: error %v, want %q", c, err, c.want)
		}
	}
	// expert_tp = tp is NewLayout, whose EP must divide dp*cp.
	if _, err := NewFoldedLayout(2, 2, 1, 4, 2, 1, def); err == nil {
		t.Error("unfolded ep not dividing dp*cp accepted")
	}
}

// TestAppendMTP: the MTP layers join the chunk with the output layer (the
// last rank's last chunk in model order) and continue the numbering; no
// other chunk moves.
func TestAppendMTP(t *testing.T) {
	p, err := Partition(61, 4, 4, 16, 13)
	if err != nil {
		t.Fatal(err)
	}
	AppendMTP(p, 1)
	for s := range p {
		for c, ch := range p[s] {
			switch {
			case ch.Head:
				if s != 3 || c != 3 || ch.FirstLayer+ch.Layers != 62 {
					t.Errorf("head chunk stage %d chunk %d layers %d..%d, want stage 3 chunk 3 ending at 61", s, c, ch.FirstLayer, ch.FirstLayer+ch.Layers-1)
				}
			case ch.FirstLayer+ch.Layers > 61:
				t.Errorf("stage %d chunk %d reaches layer %d", s, c, ch.FirstLayer+ch.Layers-1)
			}
		}
	}
}

// checkStageGroups: Groups(k, stage), which walks only the stage's ranks,
// lists exactly the groups of Groups(k, -1) that lie in that stage (every
// pipeline for GroupPP, nothing past the last stage), in the same order.
func checkStageGroups(t *testing.T, l *Layout) {
	t.Helper()
	for k := GroupKind(0); k < NumGroupKinds; k++ {
		all := l.Groups(k, -1)
		for s := 0; s <= l.PP; s++ {
			var want [][]int
			for _, g := range all {
				if k == GroupPP || l.CoordOf(g[0]).PP == s {
					want = append(want, g)
				}
			}
			if s == l.PP && k != GroupPP {
				want = nil
			}
			got := l.Groups(k, s)
			if !slices.EqualFunc(got, want, slices.Equal[[]int]) {
				t.Fatalf("%+v %s stage %d: %v, want %v", l, k, s, got, want)
			}
			// The groups share one array: appending to one must not
			// overwrite the next.
			if len(got) > 1 {
				next := slices.Clone(got[1])
				_ = append(got[0], -1)
				if !slices.Equal(got[1], next) {
					t.Fatalf("%+v %s stage %d: appending to group 0 changed group 1 to %v", l, k, s, got[1])
				}
			}
		}
	}
	// StageRanks(s): the ranks whose pp coordinate is s, ascending.
	for s := -1; s <= l.PP; s++ {
		var want []int
		for r := range l.World() {
			if l.CoordOf(r).PP == s {
				want = append(want, r)
			}
		}
		if got := l.StageRanks(s); !slices.Equal(got, want) {
			t.Fatalf("%+v StageRanks(%d) = %v, want %v", l, s, got, want)
		}
	}
}

// parallel.stage_layers: each stage's own layer count, spread over its
// virtual chunks, numbered in Megatron's chunk order (k = c·pp + s).
func TestPlaceStagesUneven(t *testing.T) {
	ch, err := PlaceStages(pipeline.Interleaving(2, 2), 32, []int{20, 12})
	if err != nil {
		t.Fatal(err)
	}
	want := [][]Chunk{
		{{Stage: 0, Index: 0, FirstLayer: 0, Layers: 10, Embedding: true}, {Stage: 0, Index: 1, FirstLayer: 16, Layers: 10}},
		{{Stage: 1, Index: 0, FirstLayer: 10, Layers: 6}, {Stage: 1, Index: 1, FirstLayer: 26, Layers: 6, Head: true}},
	}
	if !reflect.DeepEqual(ch, want) {
		t.Errorf("got %+v\nwant %+v", ch, want)
	}
	for _, c := range []struct {
		per  []int
		want string
	}{
		{[]int{20}, "parallel.stage_layers: 1 entries for pp 2"},
		{[]int{20, 13}, "sum to 33, model.layers is 32"},
		{[]int{33, -1}, "stage 1 has -1 layers"},
	} {
		if _, err := PlaceStages(pipeline.Interleaving(2, 1), 32, c.per); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%v: error %v, want %q", c.per, err, c.want)
		}
	}
}

// TestListedAsListsTheSame holds Layout.ListedAs's promise: a kind and the
// kind it is listed as have the same groups, rank for rank and in order,
// for every stage and the whole world, and for each rank's own group. The
// layouts mix ep 1 and ep > 1, folding, cp and every order that moves ep,
// cp and dp, so an alias that holds only for some (EDP as DP with ep > 1,
// ETP as TP when folded) fails here.
func TestListedAsListsTheSame(t *testing.T) {
	orders := []string{"tp-cp-ep-dp-pp", "tp-cp-dp-ep-pp", "tp-dp-ep-cp-pp", "cp-tp-ep-dp-pp", "tp-cp-ep-pp-dp", "pp-tp-cp-ep-dp"}
	aliased := 0
	for _, c := range []struct{ tp, etp, cp, ep, dp, pp int }{
		{1, 1, 1, 1, 8, 1}, {2, 2, 1, 1, 4, 2}, {4, 4, 2, 1, 2, 2}, {2, 2, 2, 2, 4, 1},
		{2, 2, 1, 4, 4, 2}, {4, 2, 1, 2, 2, 2}, {2, 1, 2, 4, 2, 1}, {8, 8, 1, 1, 4, 4},
		{4, 1, 1, 1, 2, 2}, {1, 1, 4, 2, 2, 2},
	} {
		for _, os := range orders {
			l, err := NewFoldedLayout(c.tp, c.etp, c.cp, c.ep, c.dp, c.pp, mustOrder(t, os))
			if err != nil {
				continue // folding needs pp last
			}
			for k := GroupKind(0); k < NumGroupKinds; k++ {
				as := l.ListedAs(k)
				if as == k {
					continue
				}
				aliased++
				for stage := -1; stage < l.PP; stage++ {
					if got, want := l.Groups(as, stage), l.Groups(k, stage); !reflect.DeepEqual(got, want) {
						t.Fatalf("%+v %s: %v stage %d listed as %v: %v, want %v", c, os, k, stage, as, got, want)
					}
				}
				for r := 0; r < l.World(); r++ {
					if got, want := l.Group(as, r), l.Group(k, r); !slices.Equal(got, want) {
						t.Fatalf("%+v %s: %v group of rank %d listed as %v: %v, want %v", c, os, k, r, as, got, want)
					}
				}
			}
		}
	}
	// The dense layouts alias both expert kinds (what the pricer saves).
	l, err := NewLayout(8, 1, 1, 16, 8, mustOrder(t, "tp-cp-ep-dp-pp"))
	if err != nil {
		t.Fatal(err)
	}
	if l.ListedAs(GroupETP) != GroupTP || l.ListedAs(GroupEDP) != GroupDP || l.ListedAs(GroupEP) != GroupEP {
		t.Fatalf("dense layout: ETP as %v, EDP as %v, EP as %v", l.ListedAs(GroupETP), l.ListedAs(GroupEDP), l.ListedAs(GroupEP))
	}
	if aliased < 20 {
		t.Fatalf("only %d aliased kinds checked", aliased)
	}
}
