// Package sweep runs a sweep: a base scenario, the fields to vary, and the
// cross product of their values as numbered points, each a scenario of its
// own. The file format is docs/sweeps.md:
//
//	name: llama3-70b-layouts          # optional; default: the base scenario's name
//	description: free text            # optional
//	base: ../llama3-70b.yaml          # a scenario file relative to this one, or
//	scenario: {...}                   # an inline scenario (exactly one of the two)
//	sweep:
//	  parallel.tp: [1, 2, 4, 8]       # a list of values
//	  parallel.pp: auto               # every value that gives a valid scenario
//	  training.micro_batch: {auto: true, max: 8}
//
// # Checking
//
// Everything that can be wrong with the file itself is an error from Load or
// Parse, before any point is simulated: an unknown key or field path, a
// field that is not a configuration knob (name, description, sim.timeline,
// expect.*: scenario.Knob.NotSwept), an empty list, a value of the wrong
// type or outside a field's fixed choices (scenario.Knob.Choices), a value
// listed twice, auto on a field that has no auto rule. A point whose
// combination is invalid (tp does not divide the heads, ...) is not an
// error of the file: it is a point with Err set, recorded as an error row
// whose knobs are the point's as far as resolution got
// (scenario.ParsePartial).
//
// # Numbering
//
// Points are numbered like nested loops over the fields in file order, the
// first field outermost and the last innermost. Auto fields are enumerated
// inside the listed ones, in file order, because their candidates depend on
// the point: an integer field's from its resolved model, training and
// cluster (scenario.Knob.Auto on scenario.Probe: divisors of its GPU
// count, ...), an enumerated field's from its value list, a true/false
// field's false and true. Only auto values that give a valid scenario become
// points; a combination for which none does is kept once, as an error. A
// point whose canonical configuration (its run id) repeats an earlier
// point's is not a new point: it is counted in Sweep.Duplicates and skipped,
// so every run id appears once. The numbering depends only on the file, so
// point i is the same configuration in every process, which is what
// --shard I/N relies on.
//
// # Evaluation
//
// Evaluate turns point i into a PointResult: an invalid point as it is
// (Invalid); a point the accounting model says cannot fit in GPU memory
// without simulating it (Pruned, with its memory figures); the rest
// simulated by sim/simulation (Simulated, or Failed when the simulation
// errs; a panic becomes Failed too, so one point cannot end a long sweep).
// Run evaluates many points on worker goroutines and hands each result to
// the caller's goroutine as it completes; every point is simulated
// independently and deterministically, so the results do not depend on the
// number of workers or shards.
package sweep
