package parallel

import (
	"math/rand/v2"
	"testing"

	"github.com/simtrain/simtrain/sim/collectives"
	"github.com/simtrain/simtrain/sim/engine"
	"github.com/simtrain/simtrain/sim/units"
	"github.com/simtrain/simtrain/sim/workload"
)

// opsPricer prices ops irregularly (from their FLOPs, bytes and names), so
// that sums in another order or of other blocks would differ.
type opsPricer struct{}

func (opsPricer) OpsTime(_ int, ops []workload.Op) engine.Time {
	var t engine.Time
	for _, op := range ops {
		t += engine.Time(int64(op.FLOPs)%7919+int64(op.BytesRead)%613) + engine.Time(len(op.Name))
	}
	return t
}
func (opsPricer) CommTime(GroupKind, int, collectives.Op, units.Bytes) engine.Time { return 0 }
func (opsPricer) SendTime(int, int, units.Bytes) engine.Time                       { return 0 }

// blockCache.block keeps each (layer kind, pass, block list) total once
// summed: on an MoE model (with dense first layers and MTP) and a dense one,
// in BF16 and FP8 with BF16 end layers, under full and selective
// recomputation, 20,000 random asks (any layer, pass and list of 1 to 7
// blocks, repeats, the attention and MoE lists the builder asks) answer as
// blockTotal on a cache that keeps none, to the bit.
func TestBlockSumsEqualTotals(t *testing.T) {
	rng := rand.New(rand.NewPCG(27, 2))
	dense, moe := blockTestConfigs(t)
	lists := [][]workload.Block{
		{workload.BlockAttnPre, workload.BlockAttnCore, workload.BlockAttnPost},
		{workload.BlockAttnPost, workload.BlockAttnCore, workload.BlockAttnPre},
		{workload.BlockMLP, workload.BlockRouter, workload.BlockExperts, workload.BlockCombine},
		{workload.BlockAttnPost, workload.BlockAttnCore},
	}
	asked := 0
	for _, base := range []*StepConfig{dense, moe} {
		for _, fp8 := range []bool{false, true} {
			for _, r := range []workload.Recompute{workload.RecomputeFull, workload.RecomputeSelective} {
				cfg := *base
				cfg.Recompute = r
				if fp8 {
					cfg.Shape.Dtype, cfg.Shape.BF16AtEnd = workload.FP8, 1
				}
				kept := newBlockCache(&cfg, opsPricer{}, 0, nil)
				fresh := newBlockCache(&cfg, opsPricer{}, 0, nil)
				for range 2500 {
					layer := rng.IntN(cfg.Model.StackLayers())
					pass := rng.IntN(numPasses)
					var blocks []workload.Block
					if rng.IntN(3) == 0 {
						blocks = lists[rng.IntN(len(lists))]
					} else {
						for range 1 + rng.IntN(7) {
							blocks = append(blocks, workload.Block(rng.IntN(numBlocks)))
						}
					}
					got := kept.block(layer, pass, blocks...)
					want := fresh.blockTotal(layer, fresh.layerKind(layer), pass, blocks)
					if got != want {
						t.Fatalf("layer %d pass %d blocks %v: kept %+v, summed %+v", layer, pass, blocks, got, want)
					}
					asked++
				}
			}
		}
	}
	if asked == 0 {
		t.Fatal("nothing asked")
	}
}

// blockKey tells every packable list apart: all lists of up to 3 blocks
// and those of 4 to 6 drawn at random, for every kind and pass, get
// distinct non-zero keys; longer lists and out-of-range kinds do not pack.
func TestBlockKeyDistinct(t *testing.T) {
	seen := map[uint32]string{}
	add := func(kind, pass int, blocks []workload.Block) {
		k, ok := blockKey(kind, pass, blocks)
		if !ok || k == 0 {
			t.Fatalf("kind %d pass %d %v: key %d, ok %v", kind, pass, blocks, k, ok)
		}
		id := string(rune('a'+kind)) + string(rune('a'+pass)) + string(blocksString(blocks))
		if prev, dup := seen[k]; dup && prev != id {
			t.Fatalf("key %#x for %q and %q", k, prev, id)
		}
		seen[k] = id
	}
	var lists [][]workload.Block
	var grow func(prefix []workload.Block)
	grow = func(prefix []workload.Block) {
		if len(prefix) > 0 {
			lists = append(lists, prefix)
		}
		if len(prefix) == 3 {
			return
		}
		for b := range numBlocks {
			grow(append(append([]workload.Block(nil), prefix...), workload.Block(b)))
		}
	}
	grow(nil)
	rng := rand.New(rand.NewPCG(27, 3))
	for range 2000 {
		l := make([]workload.Block, 4+rng.IntN(3))
		for i := range l {
			l[i] = workload.Block(rng.IntN(numBlocks))
		}
		lists = append(lists, l)
	}
	for kind := range numLayerKinds {
		for pass := range numPasses {
			for _, l := range lists {
				add(kind, pass, l)
			}
		}
	}
	if _, ok := blockKey(0, 0, make([]workload.Block, 7)); ok {
		t.Error("a list of 7 blocks packed")
	}
	if _, ok := blockKey(numLayerKinds, 0, []workload.Block{0}); ok {
		t.Error("kind numLayerKinds packed")
	}
	if _, ok := blockKey(0, 0, nil); ok {
		t.Error("an empty list packed")
	}
}

func blocksString(blocks []workload.Block) []byte {
	out := make([]byte, len(blocks))
	for i, b := range blocks {
		out[i] = '0' + byte(b)
	}
	return out
}

// blockTestConfigs returns the two steps the block-cache tests ask: a dense
// model's, and an MoE model's with a dense first layer and an MTP layer.
func blockTestConfigs(t *testing.T) (dense, moe *StepConfig) {
	t.Helper()
	dense = hostConfig(t, 6, HostModel{})
	moe = moeConfig(t, false)
	moe.Model.Layers, moe.Model.MTPLayers = 5, 1
	moe.Model.MoE.DenseLayers = 1
	moe.Model.Fill()
	return dense, moe
}
