package scenario

import (
	"sync/atomic"

	"github.com/simtrain/simtrain/sim/parallel"
	"github.com/simtrain/simtrain/sim/pipeline"
)

// chunkKey is what a stage-split placement's chunks depend on:
// parallel.Place cuts them by partitionStages from the layers, the
// placement's stages and chunk slots and the first and last stages'
// sizes alone, and AppendMTP adds the multi-token-prediction layers.
type chunkKey struct {
	layers, stages, slots, first, last, mtp int
}

// chunkEntry is one placement's chunks, shared by the plans that resolve
// to it: read-only.
type chunkEntry struct {
	key    chunkKey
	chunks [][]parallel.Chunk
}

// recentChunks holds the last placements placeChunks cut (a ring;
// nextChunk is the next slot taken), safe for the goroutines that resolve
// a sweep's points at once.
var (
	recentChunks [16]atomic.Pointer[chunkEntry]
	nextChunk    atomic.Uint32
)

// placeChunks is parallel.Place(place, layers, first, last) with mtp
// multi-token-prediction layers added to the head's chunk
// (parallel.AppendMTP). A stage-split placement's chunks are shared with
// the plans that placed the same layers the same way before (a plan's
// chunks are read-only): a sweep keeps every point's plan from loading
// until it runs, and a cut of its own for each was ≈ 100 page faults of
// the 1,000-point 70B sweep, whose points have five pipeline depths
// (docs/design.md "Speed", foot37). Other placements, and errors, are
// not kept.
func placeChunks(place pipeline.Placement, layers, first, last, mtp int) ([][]parallel.Chunk, error) {
	if !place.StageSplit || place.Routes != 1 {
		return placeOwn(place, layers, first, last, mtp)
	}
	k := chunkKey{layers: layers, stages: place.Stages, slots: place.Chunks, first: first, last: last, mtp: mtp}
	for i := range recentChunks {
		if e := recentChunks[i].Load(); e != nil && e.key == k {
			return e.chunks, nil
		}
	}
	chunks, err := placeOwn(place, layers, first, last, mtp)
	if err != nil {
		return nil, err
	}
	recentChunks[(nextChunk.Add(1)-1)%uint32(len(recentChunks))].Store(&chunkEntry{key: k, chunks: chunks})
	return chunks, nil
}

// placeOwn is placeChunks' answer in storage of its own.
func placeOwn(place pipeline.Placement, layers, first, last, mtp int) ([][]parallel.Chunk, error) {
	chunks, err := parallel.Place(place, layers, first, last)
	if err != nil {
		return nil, err
	}
	parallel.AppendMTP(chunks, mtp)
	return chunks, nil
}
