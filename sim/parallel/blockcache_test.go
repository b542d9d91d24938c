package parallel

import (
	"math"
	"math/rand/v2"
	"testing"

	"github.com/simtrain/simtrain/sim/collectives"
	"github.com/simtrain/simtrain/sim/engine"
	"github.com/simtrain/simtrain/sim/units"
	"github.com/simtrain/simtrain/sim/workload"
)

// scaledPricer is opsPricer times k, with collectives priced from their
// kind, stage, op, size and k: two scales price every block and call
// differently.
type scaledPricer struct{ k engine.Time }

func (p scaledPricer) OpsTime(stage int, ops []workload.Op) engine.Time {
	return p.k * (opsPricer{}.OpsTime(stage, ops) + 1)
}
func (p scaledPricer) CommTime(g GroupKind, stage int, op collectives.Op, b units.Bytes) engine.Time {
	return p.k * engine.Time(1+int64(g)*131+int64(stage)*17+int64(op)*7+int64(b)%1009)
}
func (p scaledPricer) SendTime(int, int, units.Bytes) engine.Time { return p.k }

// A block cache reused for build after build (newBlockCache over the last
// use's cache, whose tables it does not clear but marks anew) answers as a
// new cache: a dense and an MoE model, BF16 and FP8 with BF16 end layers,
// full and selective recomputation, at two price scales in turn, each use
// asked 1,500 random blocks, splits, collectives, embedding and head
// costs and layer parameters; once with the use count about to wrap
// (the tables then cleared). Fails when a use keeps the last one's mark.
func TestBlockCacheReusedEqualsNew(t *testing.T) {
	rng := rand.New(rand.NewPCG(38, 1))
	dense, moe := blockTestConfigs(t)
	lists := [][]workload.Block{
		{workload.BlockAttnPre, workload.BlockAttnCore, workload.BlockAttnPost},
		{workload.BlockMLP, workload.BlockRouter, workload.BlockExperts, workload.BlockCombine},
		{workload.BlockAttnPost, workload.BlockAttnCore},
		{workload.BlockMLP},
	}
	sizes := []float64{1 << 20, 3 << 20, 1e6, 4096}
	var kept *blockCache
	uses := 0
	for round := range 2 {
		for _, base := range []*StepConfig{dense, moe} {
			for _, fp8 := range []bool{false, true} {
				for _, r := range []workload.Recompute{workload.RecomputeFull, workload.RecomputeSelective} {
					for _, k := range []engine.Time{3, 5} {
						cfg := *base
						cfg.Recompute = r
						if fp8 {
							cfg.Shape.Dtype, cfg.Shape.BF16AtEnd = workload.FP8, 1
						}
						pr := scaledPricer{k}
						if round == 1 && uses == 20 {
							kept.gen = math.MaxUint32 - 1 // the next use wraps
						}
						kept = newBlockCache(&cfg, pr, 0, kept)
						uses++
						if round == 1 && uses == 21 && kept.gen != 0 {
							t.Fatalf("use %d: gen %d after the wrap", uses, kept.gen)
						}
						fresh := newBlockCache(&cfg, pr, 0, nil)
						for range 1500 {
							layer := rng.IntN(cfg.Model.StackLayers())
							pass := rng.IntN(numPasses)
							blocks := lists[rng.IntN(len(lists))]
							if rng.IntN(2) == 0 {
								blocks = []workload.Block{workload.Block(rng.IntN(numBlocks))}
							}
							switch rng.IntN(5) {
							case 0:
								if g, w := kept.block(layer, pass, blocks...), fresh.block(layer, pass, blocks...); g != w {
									t.Fatalf("use %d: block(%d, %d, %v) %+v, new cache %+v", uses, layer, pass, blocks, g, w)
								}
							case 1:
								p := []int{passFwd, passBwd}[rng.IntN(2)]
								gh, gm, gt := kept.split(layer, p, blocks...)
								wh, wm, wt := fresh.split(layer, p, blocks...)
								if gh != wh || gm != wm || gt != wt {
									t.Fatalf("use %d: split(%d, %d, %v) differs from a new cache's", uses, layer, p, blocks)
								}
							case 2:
								g, st, op, b := GroupKind(rng.IntN(3)), rng.IntN(2), collectives.Op(rng.IntN(3)), sizes[rng.IntN(len(sizes))]
								if x, y := kept.commTime(g, st, op, b), fresh.commTime(g, st, op, b); x != y {
									t.Fatalf("use %d: commTime %v, new cache %v", uses, x, y)
								}
							case 3:
								head, p := rng.IntN(2) == 0, []int{passFwd, passBwd}[rng.IntN(2)]
								if g, w := kept.embHead(head, p), fresh.embHead(head, p); g != w {
									t.Fatalf("use %d: embHead(%v, %d) %+v, new cache %+v", uses, head, p, g, w)
								}
							case 4:
								gd, ge := kept.layerParams(layer)
								wd, we := fresh.layerParams(layer)
								if gd != wd || ge != we {
									t.Fatalf("use %d: layerParams(%d) differ", uses, layer)
								}
							}
						}
					}
				}
			}
		}
	}
}
