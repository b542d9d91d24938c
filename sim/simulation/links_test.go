package simulation

import (
	"math"
	"reflect"
	"strings"
	"testing"

	"github.com/simtrain/simtrain/sim/parallel"
	"github.com/simtrain/simtrain/sim/scenario"
)

// links.arrow's traffic with node-shifted groups' figures copied and
// pipeline sends started without a group per pair equals, bit for bit,
// playing every group: on layouts whose groups are copied (tp 8 on 8-GPU
// nodes, NVLink pairs, PCIe-only nodes, NVL72 trays, data parallelism
// inside a node) and on layouts where they are not (two tensor groups per
// node, groups across nodes, a mixed cluster), with pipeline sends (across
// nodes and pods, inside a node over PCIe or an NVLink bridge, inside an
// NVL72 domain, across rails with PXN, over several NICs per GPU, across
// the two GPU types of a mixed cluster), oversubscribed pods and expert
// parallelism beside them.
func TestLinkTrafficCopiesEqualPlay(t *testing.T) {
	cases := []struct {
		name   string
		edits  []string
		file   string // a bundled scenario instead of the base one
		copies bool   // some group's figures must have been copied
		sends  bool   // some pipeline send must have been started directly
	}{
		{name: "tp8", edits: []string{"cluster.nodes=4", "parallel.dp=4"}, copies: true},
		{name: "tp8-pp2-oversubscribed", edits: []string{"cluster.nodes=8", "parallel.pp=2", "parallel.dp=4",
			"cluster.network.kind=clos", "cluster.network.pod_gpus=32", "cluster.network.oversubscription=3"}, copies: true},
		{name: "tp4", edits: []string{"cluster.nodes=2", "parallel.tp=4", "parallel.dp=4"}},
		{name: "dp8-in-node", edits: []string{"cluster.nodes=2", "parallel.tp=1", "parallel.dp=16"}},
		{name: "tp2-dp4-in-node", edits: []string{"cluster.nodes=2", "parallel.tp=2", "parallel.dp=4", "parallel.pp=2"}},
		{name: "pcie", edits: []string{"cluster.nodes=3", "cluster.intra_node=pcie", "parallel.dp=3", "training.global_batch=48"}, copies: true},
		{name: "nvlink-pairs", edits: []string{"cluster.gpu=h100-pcie", "cluster.nodes=3", "parallel.dp=3", "training.global_batch=48"}, copies: true},
		{name: "nvlink-pairs-tp2", edits: []string{"cluster.gpu=h100-pcie", "cluster.nodes=3", "parallel.tp=2", "parallel.dp=12", "training.global_batch=48"}},
		{name: "nvl72-tray", edits: []string{"cluster.gpu=gb200", "cluster.nodes=18", "parallel.tp=4", "parallel.dp=18", "training.global_batch=72"}, copies: true},
		{name: "quickstart", file: "../../scenarios/quickstart.yaml"},
		{name: "mixtral-ep8", file: "../../scenarios/mixtral-8x7b-ep8.yaml"},
		{name: "hetero", file: "../../scenarios/llama3-70b-h100-h200-pp.yaml"},
		{name: "llama3-70b-3d", file: "../../scenarios/llama3-70b-1024-h100-3d.yaml", copies: true},
		{name: "llama3-405b-16k", file: llama405B, copies: true, sends: true},
		{name: "pp4-across-pods", edits: []string{"cluster.nodes=16", "parallel.pp=4", "parallel.dp=4",
			"cluster.network.kind=clos", "cluster.network.pod_gpus=32", "cluster.network.oversubscription=7"}, copies: true, sends: true},
		{name: "pp4-across-rails", edits: []string{"cluster.nodes=3", "parallel.tp=2", "parallel.pp=4", "parallel.dp=3",
			"training.global_batch=48"}, sends: true},
		{name: "pp2-two-nics-per-gpu", edits: []string{"cluster.nodes=4", "cluster.network.nics_per_node=16", "parallel.pp=2",
			"parallel.dp=2", "cluster.network.kind=fat-tree"}, copies: true, sends: true},
		{name: "pp2-pcie-in-node", edits: []string{"cluster.nodes=2", "cluster.intra_node=pcie", "parallel.tp=2", "parallel.pp=2",
			"parallel.dp=4", "parallel.order=tp-cp-ep-pp-dp"}, sends: true},
		{name: "pp2-nvlink-pairs", edits: []string{"cluster.gpu=h100-pcie", "cluster.nodes=2", "parallel.tp=1", "parallel.pp=2",
			"parallel.dp=8", "parallel.order=tp-cp-ep-pp-dp"}, sends: true},
		{name: "pp2-small-sends", edits: []string{"cluster.nodes=4", "parallel.pp=2", "parallel.dp=2", "training.seq_len=16"},
			copies: true, sends: true},
		{name: "pp2-nvl72", edits: []string{"cluster.gpu=gb200", "cluster.nodes=36", "parallel.tp=4", "parallel.pp=2",
			"parallel.dp=18", "training.global_batch=72"}, copies: true, sends: true},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			if testing.Short() && tc.file == llama405B {
				t.Skip("16,384 GPUs")
			}
			var s *scenario.Plan
			var err error
			if tc.file != "" {
				s, err = scenario.Load(tc.file)
			} else {
				var kv []string
				for _, e := range tc.edits {
					k, v, _ := strings.Cut(e, "=")
					kv = append(kv, k, v)
				}
				s, err = parse(kv...)
			}
			if err != nil {
				t.Fatal(err)
			}
			r := mustRun(t, s, Options{})
			wantB, wantT, none, noSends := r.traffic(false)
			gotB, gotT, copied, direct := r.traffic(true)
			if none != 0 || noSends != 0 {
				t.Fatalf("copied %d groups and started %d sends directly with shortcuts off", none, noSends)
			}
			if tc.copies && copied == 0 {
				t.Fatalf("no group's figures copied")
			}
			if tc.sends && direct == 0 {
				t.Fatalf("no pipeline send started directly")
			}
			t.Logf("%d groups copied, %d sends started directly", copied, direct)
			for i := range wantB {
				if math.Float64bits(gotB[i]) != math.Float64bits(wantB[i]) || gotT[i] != wantT[i] {
					t.Fatalf("link %d: copied %v B %d ns, played %v B %d ns", i, gotB[i], gotT[i], wantB[i], wantT[i])
				}
			}
			// The traffic reads the pricer's group lists (Result.ranks):
			// each is the layout's, and listing them afresh changes nothing.
			if len(r.ranks) == 0 {
				t.Fatalf("the run kept no group lists")
			}
			for key, g := range r.ranks {
				if want := r.Layout.Groups(parallel.GroupKind(key[0]), key[1]); !reflect.DeepEqual(g, want) {
					t.Fatalf("kind %d stage %d: kept %v, Layout.Groups %v", key[0], key[1], g, want)
				}
			}
			// Every kind's lists, those keyed under the kind they are
			// listed as (Layout.ListedAs) too.
			for k := parallel.GroupKind(0); k < parallel.NumGroupKinds; k++ {
				for stage := range r.Layout.PP {
					if got, want := r.stageGroupRanks(k, stage), r.Layout.Groups(k, stage); !reflect.DeepEqual(got, want) {
						t.Fatalf("kind %v stage %d: stageGroupRanks %v, Layout.Groups %v", k, stage, got, want)
					}
				}
			}
			for stage, ranks := range r.stRanks {
				if ranks != nil && !reflect.DeepEqual(ranks, r.Layout.StageRanks(stage)) {
					t.Fatalf("stage %d: kept ranks %v, Layout.StageRanks %v", stage, ranks, r.Layout.StageRanks(stage))
				}
			}
			kept, keptStages := r.ranks, r.stRanks
			r.ranks, r.stRanks = nil, nil
			freshB, freshT, _, _ := r.traffic(true)
			r.ranks, r.stRanks = kept, keptStages
			for i := range freshB {
				if math.Float64bits(gotB[i]) != math.Float64bits(freshB[i]) || gotT[i] != freshT[i] {
					t.Fatalf("link %d: %v B %d ns from the kept lists, %v B %d ns listed afresh", i, gotB[i], gotT[i], freshB[i], freshT[i])
				}
			}
		})
	}
}

// LinkTotals reads, link by link, the figures LinkTraffic returns: at
// analytic fidelity from the traffic-mode fabric's states, at flow
// fidelity from the played fabric.
func TestLinkTotalsEqualsLinkTraffic(t *testing.T) {
	for _, tc := range []struct{ file, fidelity string }{
		{"../../scenarios/quickstart.yaml", "analytic"},
		{"../../scenarios/quickstart.yaml", "flow"},
		{"../../scenarios/llama3-70b-h100-h200-pp.yaml", "analytic"},
		{"../../scenarios/llama3-70b-1024-h100-3d.yaml", "analytic"},
	} {
		s, err := scenario.Load(tc.file, scenario.Overrides("sim.fidelity", tc.fidelity)...)
		if err != nil {
			t.Fatal(err)
		}
		r := mustRun(t, s, Options{})
		wantB, wantT := r.LinkTraffic()
		at := r.LinkTotals()
		moved := 0
		for i := range wantB {
			b, busy := at(i)
			if math.Float64bits(b) != math.Float64bits(wantB[i]) || busy != wantT[i] {
				t.Fatalf("%s %s link %d: LinkTotals %v B %d ns, LinkTraffic %v B %d ns", tc.file, tc.fidelity, i, b, busy, wantB[i], wantT[i])
			}
			if b > 0 {
				moved++
			}
		}
		if moved == 0 {
			t.Fatalf("%s %s: no link carried traffic", tc.file, tc.fidelity)
		}
	}
}
