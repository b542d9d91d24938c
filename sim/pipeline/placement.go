package pipeline

import (
	"fmt"
	"sync/atomic"
)

// Loc is one chunk slot: a pipeline stage and a chunk index on it.
type Loc struct{ Stage, Chunk int }

// Placement says which stage holds each model chunk. The model's layers
// are cut into ModelChunks() consecutive model chunks; a micro-batch's
// forward visits them in order, model chunk k at Locate(route, k), and its
// backward visits them in reverse. Most schedules have one route; a
// bidirectional one (DualPipe) keeps two copies of the model, traversed in
// opposite directions by different micro-batches, so each stage holds a
// chunk of each copy. Every (stage, chunk) slot holds exactly one model
// chunk of one route.
type Placement struct {
	Stages, Chunks int // pipeline stages and chunk slots per stage
	Routes         int // copies of the model, each a path through the stages
	// StageSplit says how parallel.first_stage_layers and
	// last_stage_layers read: as the layers of the whole first and last
	// stage, spread over that stage's chunks (Megatron-LM's interleaving,
	// where the first stage holds the first model chunk and the last stage
	// the last), or, when false, as the layers of the first and last model
	// chunk (the chunks holding the embedding and the loss), which V-shaped
	// and bidirectional placements put on one stage.
	StageSplit bool
	loc        [][]Loc // [route][model chunk]
	at         [][]ref // [stage][chunk]
}

type ref struct{ route, k int }

// NewPlacement builds a placement of stages × chunks slots over routes
// copies of the model from locate, which gives the slot of model chunk k of
// a route. It fails unless locate fills every slot exactly once.
func NewPlacement(stages, chunks, routes int, stageSplit bool, locate func(route, k int) Loc) (Placement, error) {
	pl := Placement{Stages: stages, Chunks: chunks, Routes: routes, StageSplit: stageSplit}
	if stages < 1 || chunks < 1 || routes < 1 || stages*chunks%routes != 0 {
		return pl, fmt.Errorf("pipeline: cannot place %d route(s) on %d stages × %d chunks", routes, stages, chunks)
	}
	// Each table's rows share one array, each row capped at its length
	// (as its own array would be): a sweep resolves a placement per point,
	// and a row apiece was most of its load's allocations.
	pl.at = make([][]ref, stages)
	atRows := make([]ref, stages*chunks)
	for s := range pl.at {
		pl.at[s] = atRows[s*chunks : (s+1)*chunks : (s+1)*chunks]
		for c := range pl.at[s] {
			pl.at[s][c] = ref{-1, -1}
		}
	}
	k := stages * chunks / routes
	pl.loc = make([][]Loc, routes)
	locRows := make([]Loc, routes*k)
	for r := range routes {
		pl.loc[r] = locRows[r*k : (r+1)*k : (r+1)*k]
		for i := range k {
			l := locate(r, i)
			if l.Stage < 0 || l.Stage >= stages || l.Chunk < 0 || l.Chunk >= chunks || pl.at[l.Stage][l.Chunk].route >= 0 {
				return pl, fmt.Errorf("pipeline: model chunk %d of route %d placed on stage %d chunk %d, outside or taken", i, r, l.Stage, l.Chunk)
			}
			pl.loc[r][i] = l
			pl.at[l.Stage][l.Chunk] = ref{r, i}
		}
	}
	return pl, nil
}

func mustPlace(stages, chunks, routes int, stageSplit bool, locate func(route, k int) Loc) Placement {
	pl, err := NewPlacement(stages, chunks, routes, stageSplit, locate)
	if err != nil {
		panic(err) // the built-in placements fill their slots by construction
	}
	return pl
}

// ModelChunks is the number of model chunks of one route.
func (pl Placement) ModelChunks() int { return pl.Stages * pl.Chunks / pl.Routes }

// Locate returns the slot of model chunk k of route.
func (pl Placement) Locate(route, k int) Loc { return pl.loc[route][k] }

// ModelChunk returns the route and model chunk held by chunk slot (stage, chunk).
func (pl Placement) ModelChunk(stage, chunk int) (route, k int) {
	r := pl.at[stage][chunk]
	return r.route, r.k
}

// First reports whether the slot holds its route's first model chunk (the
// embedding's).
func (pl Placement) First(stage, chunk int) bool { return pl.at[stage][chunk].k == 0 }

// Last reports whether the slot holds its route's last model chunk (the
// output layer's and the loss').
func (pl Placement) Last(stage, chunk int) bool {
	return pl.at[stage][chunk].k == pl.ModelChunks()-1
}

// Next is the slot that receives the slot's forward output; ok is false for
// the last model chunk.
func (pl Placement) Next(stage, chunk int) (Loc, bool) {
	r := pl.at[stage][chunk]
	if r.k+1 >= pl.ModelChunks() {
		return Loc{}, false
	}
	return pl.loc[r.route][r.k+1], true
}

// Prev is the slot that feeds the slot's forward input (and receives its
// input gradient); ok is false for the first model chunk.
func (pl Placement) Prev(stage, chunk int) (Loc, bool) {
	r := pl.at[stage][chunk]
	if r.k == 0 {
		return Loc{}, false
	}
	return pl.loc[r.route][r.k-1], true
}

// Interleaving is Megatron-LM's placement of p·v model chunks on p stages
// (Narayanan et al. SC21 §2.2): model chunk k on stage k mod p, as that
// stage's chunk ⌊k/p⌋. With v = 1 it is the plain pipeline.
//
// A placement of up to maxMemoStages stages and maxMemoVirtual chunks
// each is built once and then shared: a placement is read-only once
// built, and a sweep resolves one per point (building it was ≈ 5% of
// loading a sweep; TestInterleavingMemo).
func Interleaving(p, v int) Placement {
	if p < 1 || p > maxMemoStages || v < 1 || v > maxMemoVirtual {
		return interleaving(p, v)
	}
	m := &interleavings[p-1][v-1]
	if pl := m.Load(); pl != nil {
		return *pl
	}
	pl := interleaving(p, v)
	m.Store(&pl)
	return pl
}

// interleaving builds Interleaving's placement.
func interleaving(p, v int) Placement {
	return mustPlace(p, v, 1, true, func(_, k int) Loc { return Loc{k % p, k / p} })
}

// The shapes whose interleaving placement is kept (≈ 16 KB of pointers).
const (
	maxMemoStages  = 128
	maxMemoVirtual = 16
)

// interleavings holds the interleaving placements built so far, by
// stages and chunks per stage (minus one each).
var interleavings [maxMemoStages][maxMemoVirtual]atomic.Pointer[Placement]

// VShape is the V-shaped placement of 2p model chunks on p stages (ZB-V,
// Qi et al. 2024, arXiv:2401.10241 §4; DualPipeV): the forward runs down
// the stages through chunks 0…p−1 and back up through chunks p…2p−1, so
// stage s holds model chunks s and 2p−1−s, and the first stage holds both
// the embedding and the loss.
func VShape(p int) Placement {
	return mustPlace(p, 2, 1, false, func(_, k int) Loc {
		if k < p {
			return Loc{k, 0}
		}
		return Loc{2*p - 1 - k, 1}
	})
}

// Bidirectional is DualPipe's placement (DeepSeek-V3 technical report,
// arXiv:2412.19437 §3.2.1): two copies of the model, each cut into p model
// chunks; copy 0 runs from stage 0 to stage p−1 (chunk slot 0), copy 1 from
// stage p−1 to stage 0 (chunk slot 1). Stage s holds model chunk s of one
// copy and p−1−s of the other: twice the parameters of a plain pipeline.
func Bidirectional(p int) Placement {
	return mustPlace(p, 2, 2, false, func(route, k int) Loc {
		if route == 0 {
			return Loc{k, 0}
		}
		return Loc{p - 1 - k, 1}
	})
}
