package parallel

import "fmt"

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

// Partition assigns layers to pipeline ranks and virtual chunks.
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
func Partition(layers, pp, v, first, last int) ([][]Chunk, error) {
	if pp < 1 || v < 1 || layers < 1 {
		return nil, fmt.Errorf("parallel: layers, pp and virtual_stages must be >= 1")
	}
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
		fixed, rest := 0, layers
		if first > 0 {
			fixed++
			rest -= first
		}
		if last > 0 {
			fixed++
			rest -= last
		}
		middle := pp - fixed
		switch {
		case rest < 0:
			return nil, fmt.Errorf("parallel.first_stage_layers + last_stage_layers = %d exceed model.layers %d", first+last, layers)
		case middle == 0 && rest != 0:
			return nil, fmt.Errorf("parallel.first_stage_layers + last_stage_layers = %d must equal model.layers %d with pp %d", first+last, layers, pp)
		case middle > 0 && rest%(middle*v) != 0:
			return nil, fmt.Errorf("parallel: the %d layers left after first_stage_layers/last_stage_layers do not split evenly over %d stages × %d virtual stages", rest, middle, v)
		}
		for s := range perStage {
			perStage[s] = 0
			if middle > 0 {
				perStage[s] = rest / middle
			}
		}
		if first > 0 {
			perStage[0] = first
		}
		if last > 0 {
			perStage[pp-1] = last
		}
	}
	// Slots per chunk on each rank: layers, plus the embedding/output layer as
	// a slot when virtual stages are used with an explicit first/last size.
	out := make([][]Chunk, pp)
	for s := 0; s < pp; s++ {
		slots := perStage[s]
		embSlot := v > 1 && s == 0 && first > 0
		headSlot := v > 1 && s == pp-1 && last > 0
		if embSlot {
			slots++
		}
		if headSlot {
			slots++
		}
		if slots < v && v > 1 {
			return nil, fmt.Errorf("parallel.virtual_stages: stage %d has %d layer slots for %d chunks", s, slots, v)
		}
		out[s] = make([]Chunk, v)
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
