package parallel

import (
	"fmt"

	"github.com/simtrain/simtrain/sim/pipeline"
)

// Chunk is one model chunk: a contiguous run of transformer layers held by one
// pipeline rank, plus the embedding (first chunk of the model) or the output
// layer (last chunk of the model) where they fall.
type Chunk struct {
	Stage, Index int // pipeline rank and virtual-stage index on it
	FirstLayer   int // global index of the first transformer layer
	Layers       int // transformer layers in the chunk
	Embedding    bool
	Head         bool
}

// Partition assigns layers to pipeline ranks and virtual chunks in
// Megatron-LM's interleaving (pipeline.Interleaving): Place on that
// placement.
func Partition(layers, pp, v, first, last int) ([][]Chunk, error) {
	if pp < 1 || v < 1 || layers < 1 {
		return nil, fmt.Errorf("parallel: layers, pp and virtual_stages must be >= 1")
	}
	return Place(pipeline.Interleaving(pp, v), layers, first, last)
}

// Place assigns layers to the chunk slots of a placement, indexed
// [stage][chunk]. A placement with StageSplit is cut as partitionStages
// does; any other (V-shaped, bidirectional) is cut as partitionChunks does.
// Errors name the offending field.
func Place(pl pipeline.Placement, layers, first, last int) ([][]Chunk, error) {
	if layers < 1 {
		return nil, fmt.Errorf("parallel: layers, pp and virtual_stages must be >= 1")
	}
	if pl.StageSplit && pl.Routes == 1 {
		return partitionStages(layers, pl.Stages, pl.Chunks, first, last)
	}
	return partitionChunks(pl, layers, first, last)
}

// partitionChunks cuts the layers into the placement's model chunks, evenly,
// or with first_stage_layers f and last_stage_layers l as the sizes of the
// first and last model chunk (those holding the embedding and the output
// layer) and the rest split evenly. Every route (copy of the model) gets the
// same cut: a bidirectional placement's two copies of model chunk k hold the
// same layers.
func partitionChunks(pl pipeline.Placement, layers, first, last int) ([][]Chunk, error) {
	k := pl.ModelChunks()
	if first < 0 || last < 0 {
		return nil, fmt.Errorf("parallel.first_stage_layers/last_stage_layers: must be >= 0")
	}
	sizes := make([]int, k)
	middle, rest := splitEnds(k, layers, first, last)
	fixed := k - middle
	switch {
	case k < 2 && fixed > 0:
		return nil, fmt.Errorf("parallel.first_stage_layers/last_stage_layers: need at least 2 model chunks, have %d", k)
	case rest < 0:
		return nil, fmt.Errorf("parallel.first_stage_layers + last_stage_layers = %d exceed model.layers %d", first+last, layers)
	case middle == 0 && rest != 0:
		return nil, fmt.Errorf("parallel.first_stage_layers + last_stage_layers = %d must equal model.layers %d with %d model chunks", first+last, layers, k)
	case middle > 0 && rest%middle != 0 && fixed == 0:
		return nil, fmt.Errorf("parallel.pp: model.layers %d do not split evenly over %d model chunks (pp %d × 2 for this schedule; set first_stage_layers/last_stage_layers)", layers, k, pl.Stages)
	case middle > 0 && rest%middle != 0:
		return nil, fmt.Errorf("parallel: the %d layers left after first_stage_layers/last_stage_layers do not split evenly over %d model chunks", rest, middle)
	}
	fillEnds(sizes, middle, rest, first, last)
	out := make([][]Chunk, pl.Stages)
	for s := range out {
		out[s] = make([]Chunk, pl.Chunks)
	}
	for r := range pl.Routes {
		next := 0
		for i := range k {
			at := pl.Locate(r, i)
			out[at.Stage][at.Chunk] = Chunk{Stage: at.Stage, Index: at.Chunk, FirstLayer: next, Layers: sizes[i],
				Embedding: i == 0, Head: i == k-1}
			next += sizes[i]
		}
	}
	return out, nil
}

// splitEnds says what first_stage_layers first and last_stage_layers last
// (each 0 when unset) leave of n parts and layers: the parts between them
// and their layers.
func splitEnds(n, layers, first, last int) (middle, rest int) {
	middle, rest = n, layers-first-last
	if first > 0 {
		middle--
	}
	if last > 0 {
		middle--
	}
	return middle, rest
}

// fillEnds gives the first and last of parts first and last layers when
// set, and the others rest/middle each.
func fillEnds(parts []int, middle, rest, first, last int) {
	for i := range parts {
		parts[i] = 0
		if middle > 0 {
			parts[i] = rest / middle
		}
	}
	if first > 0 {
		parts[0] = first
	}
	if last > 0 {
		parts[len(parts)-1] = last
	}
}

// partitionStages is Megatron-LM's cut into stages × v chunks.
//
// Without first/last overrides every rank gets layers/pp layers, spread over
// its v chunks evenly. With first_stage_layers f or last_stage_layers l, the
// first/last rank holds f/l layers and the other ranks split the rest evenly
// (each of their chunks the same size). With v > 1 a rank's layers spread over
// its chunks as evenly as possible, and on the first/last rank the embedding /
// output layer takes a chunk slot in place of a transformer layer (Llama 3 405B:
// 126 layers, pp 16, v 8, f = l = 7 → every chunk of every rank holds one slot).
//
// Model chunk k = c·pp + s (Megatron's interleaving) holds consecutive layers,
// so the result is indexed [stage][chunk]. Errors name the offending field.
func partitionStages(layers, pp, v, first, last int) ([][]Chunk, error) {
	if (first > 0 || last > 0) && pp < 2 {
		return nil, fmt.Errorf("parallel.first_stage_layers/last_stage_layers: need pp >= 2, have pp %d", pp)
	}
	if first < 0 || last < 0 {
		return nil, fmt.Errorf("parallel.first_stage_layers/last_stage_layers: must be >= 0")
	}
	perStage := make([]int, pp)
	if first == 0 && last == 0 {
		if layers%(pp*v) != 0 {
			return nil, fmt.Errorf("parallel.pp: model.layers %d do not split evenly over pp %d × virtual_stages %d", layers, pp, v)
		}
		for s := range perStage {
			perStage[s] = layers / pp
		}
	} else {
		middle, rest := splitEnds(pp, layers, first, last)
		switch {
		case rest < 0:
			return nil, fmt.Errorf("parallel.first_stage_layers + last_stage_layers = %d exceed model.layers %d", first+last, layers)
		case middle == 0 && rest != 0:
			return nil, fmt.Errorf("parallel.first_stage_layers + last_stage_layers = %d must equal model.layers %d with pp %d", first+last, layers, pp)
		case middle > 0 && rest%(middle*v) != 0:
			return nil, fmt.Errorf("parallel: the %d layers left after first_stage_layers/last_stage_layers do not split evenly over %d stages × %d virtual stages", rest, middle, v)
		}
		fillEnds(perStage, middle, rest, first, last)
	}
	return cutStages(perStage, v, layers, first > 0, last > 0)
}

// PlaceStages assigns perStage[s] layers to pipeline stage s
// (parallel.stage_layers: an uneven split, e.g. more layers on the faster
// GPUs of a heterogeneous cluster), spread over each stage's chunks as
// partitionStages spreads them. It needs a placement cut by stage (1F1B and
// its interleaved form); errors name the field.
func PlaceStages(pl pipeline.Placement, layers int, perStage []int) ([][]Chunk, error) {
	if !pl.StageSplit || pl.Routes != 1 {
		return nil, fmt.Errorf("parallel.stage_layers: needs a schedule that cuts the model by stage (1f1b, interleaved-1f1b and the like), not this one")
	}
	if len(perStage) != pl.Stages {
		return nil, fmt.Errorf("parallel.stage_layers: %d entries for pp %d (one per pipeline stage)", len(perStage), pl.Stages)
	}
	sum := 0
	for s, n := range perStage {
		if n < 0 {
			return nil, fmt.Errorf("parallel.stage_layers: stage %d has %d layers, must be >= 0", s, n)
		}
		sum += n
	}
	if sum != layers {
		return nil, fmt.Errorf("parallel.stage_layers: the entries sum to %d, model.layers is %d", sum, layers)
	}
	return cutStages(perStage, pl.Chunks, layers, false, false)
}

// cutStages spreads perStage[s] layers over stage s's v chunks, in
// Megatron's interleaved numbering; embSlot/headSlot count the embedding
// and output layer as a layer slot on the first/last stage (virtual stages
// with an explicit first/last size).
func cutStages(perStage []int, v, layers int, embFirst, headLast bool) ([][]Chunk, error) {
	pp := len(perStage)
	// Slots per chunk on each rank: layers, plus the embedding/output layer as
	// a slot when virtual stages are used with an explicit first/last size.
	out := make([][]Chunk, pp)
	// The stages' rows share one array, each capped at its length (as its
	// own array would be): one allocation a plan instead of one a stage.
	rows := make([]Chunk, pp*v)
	for s := 0; s < pp; s++ {
		slots := perStage[s]
		embSlot := v > 1 && s == 0 && embFirst
		headSlot := v > 1 && s == pp-1 && headLast
		if embSlot {
			slots++
		}
		if headSlot {
			slots++
		}
		if slots < v && v > 1 {
			return nil, fmt.Errorf("parallel.virtual_stages: stage %d has %d layer slots for %d chunks", s, slots, v)
		}
		out[s] = rows[s*v : (s+1)*v : (s+1)*v]
		for c := 0; c < v; c++ {
			n := slots / v
			if c < slots%v {
				n++
			}
			ch := Chunk{Stage: s, Index: c, Layers: n}
			if s == 0 && c == 0 {
				ch.Embedding = true
				if embSlot {
					ch.Layers--
				}
			}
			if s == pp-1 && c == v-1 {
				ch.Head = true
				if headSlot {
					ch.Layers--
				}
			}
			out[s][c] = ch
		}
	}
	// Global layer numbering in model-chunk order k = c·pp + s.
	next := 0
	for c := 0; c < v; c++ {
		for s := 0; s < pp; s++ {
			out[s][c].FirstLayer = next
			next += out[s][c].Layers
		}
	}
	if next != layers {
		return nil, fmt.Errorf("parallel: layer partition covers %d of %d layers", next, layers)
	}
	return out, nil
}

// AppendMTP adds mtp multi-token-prediction layers to the chunk holding the
// output layer: Megatron-Core places the MTP block with the loss on the
// last pipeline stage (mtp_on_this_rank; the recipes' layouts end in
// "…tmL"), after that chunk's decoder layers, so the new layers continue
// the global numbering (model.StackLayers). It is a no-op for mtp ≤ 0.
func AppendMTP(chunks [][]Chunk, mtp int) {
	if mtp <= 0 {
		return
	}
	for s := range chunks {
		for c := range chunks[s] {
			if chunks[s][c].Head {
				chunks[s][c].Layers += mtp
			}
		}
	}
}
