// Package scenario turns a scenario file into a Plan: one immutable, fully
// defaulted description of a training run (model, hardware, layout, recipe,
// schedule) that the simulator, sweeps and validation read and never
// change. The file format is docs/scenario-format.md.
//
// # Pipeline
//
// A document goes through five steps, each with one owner:
//
//  1. Decode. One YAML document; a second document, an alias bomb or
//     malformed YAML is a one-line error.
//  2. Override. Values given outside the file (Override: the CLI's
//     --fidelity, a sweep's fidelity) are set into the document before it is
//     checked, so they are checked exactly as the file's own fields are and
//     win over them.
//  3. Check. Every key is walked against the Go types of Scenario: an
//     unknown field gets the nearest known one as a suggestion, a value of
//     the wrong type names its dotted field and line. The check records the
//     set of fields the document gives (Plan.Given), which tells an explicit
//     0 from an absent field.
//  4. Fill and resolve, in dependency order: the model (a preset, then the
//     fields next to it, then workload.Model.Fill), the training recipe, the
//     cluster (the GPU record, then the network), the layout and the
//     pipeline schedule, the simulation, the measured figure. A field the
//     document leaves unset takes its default where its inputs are known, by
//     one function (Plan.fill): explicit value, else the registry's default
//     (Knob.Const or Knob.Derive). A framework profile (issue 16) slots in
//     there, between the two. Every rule is checked as soon as its inputs
//     are resolved, so an error names the first field that is wrong and the
//     valid choices.
//  5. Canonical form. The document is left with every default written back
//     (the model echoed from its preset), except that fields added after the
//     format's first release are left empty at their default (expert_tp
//     equal to tp, ep_backend nccl, ...): the JSON of the document without
//     its name, description and expect block (CanonicalJSON) is then the
//     same for every spelling of one configuration, and the run id is its
//     UUIDv5 (RunID), stable across releases.
//
// # The knob registry
//
// Knobs lists every field of the format once, in file order, with its
// default, its valid values, the sweep's auto rule and whether a sweep may
// vary it; a test holds the registry, the Scenario struct and the tables of
// docs/scenario-format.md to the same set of fields and defaults. Everything
// that touches a field reads the registry: the resolver's defaults and
// value checks, sweeps (auto candidates, value checks, fields that cannot be
// swept), the generators' writer (Encode), the CLI's choices (Choices), and
// the summary columns (sim/report). Adding a field is its Scenario field, its
// Knobs entry and the model code that reads it.
//
// # What a plan derives
//
// Beyond the document, a Plan holds what resolution derived: the model
// architecture (Arch), the GPU record (GPU, looked up in one place so that a
// GPU described in a file plugs in there), the GPU count, the recipe's
// dtypes and kernels (Shape), the layout (NewLayout), the pipeline chunks
// and micro-batches (Chunks, Microbatches), and from them the inputs of the
// core packages: topology.Spec (TopologySpec), workload.Shape (Shape),
// parallel.StepConfig (StepConfig), and the accounting model's memory per
// pipeline stage (MemoryPerStage), which needs no simulation.
package scenario
