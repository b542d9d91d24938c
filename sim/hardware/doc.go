// Package hardware is simtrain's hardware catalog as data: every GPU, NIC
// and host link is one record, a YAML file embedded from data/ (or a file
// of the user's, ParseGPU), and every figure in it says where it comes
// from. It imports nothing of simtrain's but sim/units; sim/topology builds
// clusters from its records, sim/collectives reads a GPU's communication
// profile, sim/workload prices ops against its compute profile
// (workload.DeviceOf), and nothing flows back.
//
// # A record
//
// A GPU record (GPURecord, data/gpus/NAME.yaml) holds the datasheet figures
// (HBM capacity and bandwidth, dense peaks per dtype, SMs, the scale-up
// fabric, the PCIe host link, power, price) and three profiles:
//
//	compute    the compute-time model's efficiencies (GEMM, HBM, each fused
//	           attention kernel) and fixed costs (per kernel, per host
//	           synchronisation)
//	comm       the collective library's: NCCL's architecture and host rows
//	           (data/nccl.yaml), channels, achievable fractions of the links,
//	           fitted launch and pipeline-ramp costs, the SMs a kernel holds
//	host_copy  pinned host-copy bandwidth per direction (left out: the PCIe
//	           link's line rate × its copy fraction)
//
// Adding a GPU is one file. Resolve turns a record into GPU, the plain
// values in units (sim/units) the simulator uses.
//
// # Provenance
//
// Every figure is written {value: …, <kind>: "reference"} with kind one of
// datasheet (a vendor document or a constant of the vendor's software),
// measured (a published measurement, or its ratio to a datasheet figure),
// derived (computed from other figures; the reference gives the formula)
// and estimate (an assumption, said as such); or {fit: name}, a fitted
// value. Values are decimals, durations (500ns, 2.75ms) or products and
// quotients of decimals (794.5/989), the latter evaluated exactly and
// rounded once, as Go evaluates the same constant expression. Resolve
// lists one source line per figure (GPU.Sources).
//
// # Calibration
//
// Every fitted value lives once, in data/calibration.yaml: its value, how
// it was fitted and the runs or measurements it was fitted on. A record
// names an entry ({fit: moe_host_sync}) or multiplies a measured kernel
// benchmark by one ({value: 794.5/989, measured: "MAMF", times:
// [train_gemm]}: the share of the benchmark a training step sustains).
// Refitting (issue 16's `simtrain calibrate`) rewrites an entry and no
// record. A fit made on one GPU and assumed for another says so:
// {fit: nccl_ramp_time_h100, estimate: "no sweep for b200"}.
//
// # Inheritance
//
// A record may name a reference GPU (inherits: h100-sxm). Whatever it
// leaves out — any figure, any profile — is the reference's, marked
// inherited; the peak FLOP/s are taken as a block (a part that gives any
// peak keeps its own, so that a reference's FP4 peak is never lent to a
// part without one). That is how a part nobody has measured yet is
// simulated: its datasheet figures with a measured GPU's efficiencies, and
// GPU.Inherits tells the run output to say so. Catalog parts that share a
// measured sibling's profiles (h800, h200, gb300, a100-40gb, mi325x) are
// written the same way.
package hardware
