package simulation_test

import (
	"fmt"
	"path/filepath"
	"testing"

	"github.com/simtrain/simtrain/sim/scenario"
	"github.com/simtrain/simtrain/sim/simulation"
	"github.com/simtrain/simtrain/sim/sweep"
)

// contendedSendsSweep is 36 layouts of a small dense model on an 8:1
// oversubscribed fat-tree (four leaves of four nodes): pipeline stages on
// different leaves send through the oversubscribed uplinks, so boundary
// shares fall below 1, and the rank orders put pp outermost (contiguous
// stages), in the middle and innermost (strided stages), with tensor sizes
// that keep a stage's size (and so its ranks and peers) under another tp.
const contendedSendsSweep = `
name: contended-sends
scenario:
  name: contended-sends
  model:
    preset: llama3-8b
  training:
    seq_len: 4096
    global_batch: 256
    micro_batch: 1
    recompute: full
  cluster:
    gpu: h100-sxm
    nodes: 16
    network:
      kind: fat-tree
      oversubscription: 8
  parallel:
    zero: 1
sweep:
  parallel.tp: [1, 2, 4]
  parallel.pp: [2, 4]
  parallel.order: [tp-cp-ep-dp-pp, tp-pp-cp-ep-dp, pp-tp-cp-ep-dp]
  training.micro_batch: [1, 2]
`

// Every simulated point of both bundled sweeps and of contendedSendsSweep,
// run with one Reuse in an order that switches layout at every point, gets
// from the Reuse's send memo exactly the boundary shares a pricer without
// one finds on a cluster built anew, in both directions of every boundary,
// and every share the memo holds is that of the pairs its key describes
// (simulation.CheckSendMemo); each point's figures equal a run without a
// Reuse. The same again on two Reuses sharing a PriceShare (each takes
// shares the other found). The memo must have served layouts other than
// the one that filled it (fewer entries than boundaries met) and, on the
// contended sweep, hold shares below 1 — else a wrong key could not show.
func TestClusterSendSharesEqualFresh(t *testing.T) {
	if testing.Short() {
		t.Skip("runs every point of three sweeps twice")
	}
	dir := "../../scenarios/sweeps"
	sweeps := map[string]*sweep.Sweep{}
	for _, f := range []string{"llama3-70b-1024-h100-layouts.yaml", "llama3-8b-gpu-types.yaml"} {
		sw, err := sweep.Load(filepath.Join(dir, f), sweep.Options{})
		if err != nil {
			t.Fatal(err)
		}
		sweeps[f] = sw
	}
	sw, err := sweep.Parse([]byte(contendedSendsSweep), dir, sweep.Options{})
	if err != nil {
		t.Fatal(err)
	}
	sweeps["contended"] = sw
	for name, sw := range sweeps {
		for _, shared := range []bool{false, true} {
			t.Run(fmt.Sprintf("%s shared %v", name, shared), func(t *testing.T) {
				checkSendMemo(t, sw, shared, name == "contended")
			})
		}
	}
}

// checkSendMemo is TestClusterSendSharesEqualFresh on one sweep, with one
// Reuse or two sharing their prices (and send shares), the points dealt
// between them in the Thue–Morse sequence (playAgainstFresh).
func checkSendMemo(t *testing.T, sw *sweep.Sweep, shared, contended bool) {
	var n simulation.SendMemoCounts
	entries := 0
	order, layouts := playAgainstFresh(t, sw, shared, func(i int, p *scenario.Plan, reuse *simulation.Reuse) {
		c, err := simulation.CheckSendMemo(p, reuse)
		if err != nil {
			t.Fatalf("point %d: %v", i, err)
		}
		n.Boundaries += c.Boundaries
		n.Keyed += c.Keyed
		n.Contended = max(n.Contended, c.Contended)
		entries = max(entries, c.Entries)
	})
	t.Logf("%d points, %d layouts; boundaries %d, keyed %d, memo entries %d (%d below 1)", len(order), layouts, n.Boundaries, n.Keyed, entries, n.Contended)
	if n.Boundaries > 0 && (n.Keyed == 0 || entries >= n.Keyed) {
		t.Errorf("the memo served nothing across points: %d keyed boundaries, %d entries", n.Keyed, entries)
	}
	if contended && (len(order) < 30 || n.Contended == 0) {
		t.Errorf("contended sweep: %d points, %d shares below 1", len(order), n.Contended)
	}
}

// The contended sweep keeps its figures with kept price tables too.
func TestKeptPriceTablesEqualFreshContended(t *testing.T) {
	if testing.Short() {
		t.Skip("runs every point of a sweep twice")
	}
	sw, err := sweep.Parse([]byte(contendedSendsSweep), "../../scenarios/sweeps", sweep.Options{})
	if err != nil {
		t.Fatal(err)
	}
	for _, shared := range []bool{false, true} {
		t.Run(fmt.Sprintf("shared %v", shared), func(t *testing.T) {
			checkKeptPrices(t, sw, shared)
		})
	}
}
