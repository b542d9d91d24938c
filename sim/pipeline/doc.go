// Package pipeline holds simtrain's pipeline schedules, each one value of
// one type (Schedule) that answers the three questions the rest of the
// simulator asks about a schedule: where the model chunks sit (Placement),
// what each stage runs and in which order (Order, which sim/parallel turns
// into the task graph), and how many micro-batches' activations a stage
// holds at its peak (InFlight, which sim/workload's memory model
// multiplies by a micro-batch's activations). It imports nothing of
// simtrain's: a leaf that the task graph and the memory model both use.
//
// # Placement
//
// The model's layers are cut into K consecutive model chunks; a
// micro-batch's forward visits them in order and its backward in reverse.
// A placement puts model chunk k of each route on a (stage, chunk slot):
//
//	Interleaving(p, v)  k on stage k mod p, slot ⌊k/p⌋ (K = p·v; Megatron-LM,
//	                    Narayanan et al. SC21 §2.2; v = 1 is the plain pipeline)
//	VShape(p)           k on stage k for k < p, then back up: stage 2p−1−k,
//	                    slot 1 (K = 2p; ZB-V, Qi et al. 2024; DualPipeV)
//	Bidirectional(p)    two routes (copies of the model) of K = p chunks:
//	                    copy 0 on stage k, copy 1 on stage p−1−k (DualPipe)
//
// A transfer between consecutive model chunks on one stage (the turn of
// the V) is a hand-off, not a pipeline send.
//
// # Order
//
// A stage's order is a list of steps, each a phase of one micro-batch on
// one chunk slot: F (forward), B (backward, input and weight gradients),
// I (input gradient only) and W (the weight gradient of an earlier I, the
// zero-bubble split). A forward may be marked Overlap: it runs together
// with the backward that follows it, block by block (DualPipe's
// overlapped chunks). The order is what a rank issues; when each step
// runs is decided by the simulation from the data dependencies between
// stages, so the bubble is an outcome, not an input. With T_F, T_B, T_W
// one model chunk's forward, full backward and weight-gradient times and
// free communication, the simulated bubbles match the closed forms (tests
// in sim/parallel):
//
//	GPipe, 1F1B     (p − 1)(T_F + T_B)                 Narayanan et al. 2021
//	interleaved     (p − 1)(T_F + T_B), 1/v of 1F1B's  Narayanan et al. SC21
//	zero-bubble     (p − 1)(T_F + T_B − T_W)           ZB-H1 without its
//	                                                   cool-down reordering
//	DualPipe        (p/2 − 1)(T_F&B + T_B − 3T_W)      DeepSeek-V3 Table 2
//	DualPipeV       (p − 1)(T_F&B + T_B − 3T_W)        same, 2p model chunks
//
// DualPipe's row holds in the setting of the report's Fig. 5 (T_B = 2T_F,
// T_W = T_F, T_F&B = T_F + T_B without communication).
//
// # Micro-batches in flight
//
// InFlight is the closed form of the peak number of micro-batches whose
// activations a stage holds, in units of one micro-batch through all of
// the stage's chunks: 1 without pipelining; m for GPipe; min(p − s, m) on
// stage s for 1F1B and zero-bubble (Korthikanti et al. 2022 §4.2.3);
// interleaved multiplies that by 1 + (p − 1)/(p·v) (the same); DualPipe
// holds p + 1 chunk-micro-batches on every stage (Table 2), (p + 1)/2 of
// its two chunks, and DualPipeV 2p + 1, (2p + 1)/2. Peak counts the same
// from an order; the tests hold the two equal.
//
// # Adding a schedule
//
// A new schedule is one file: a type with the five methods of Schedule,
// registered in an init function with its place in the list of valid
// names (register). The scenario's parallel.schedule, the sweep's choices
// and the CLI read the list from Names; the task graph and the memory
// model need no change unless the schedule needs a new kind of step.
package pipeline
