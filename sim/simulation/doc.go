// Package simulation plays the training steps of a resolved scenario
// (scenario.Plan) on its simulated cluster and returns a Result of plain Go
// data. It is the one place the core packages are wired together.
//
// # Wiring
//
// Run builds the cluster (topology.Build on Plan.TopologySpec), the layout
// (Plan.NewLayout) and the task graph of every pipeline stage
// (parallel.Build on Plan.StepConfig), pricing each task as it is built:
//
//   - compute: Σ workload.Device.OpTime over the task's ops, on the GPU's
//     device description (workload.DeviceOf copies the hardware record's peaks,
//     bandwidth and efficiencies, each sourced there);
//   - a collective of group kind k on stage s: the closed-form cost
//     (collectives.Group.Cost, algorithm chosen as NCCL does) on every
//     distinct shape of the kind-k groups of stage s — shape being size,
//     scale-up domains and nodes spanned, ranks per domain and rail
//     alignment — the slowest setting the time, since the stage's ranks wait
//     for each other;
//   - a DeepEP/HybridEP dispatch or combine: the backend's measured
//     bandwidth (parallel.EPDispatch) per distinct group shape;
//   - a pipeline send: the send cost between the two stages' first ranks.
//
// # Playing
//
// At analytic fidelity there is no contention, so every rank of a stage
// runs the same program with the same times: one representative rank per
// stage is played (parallel.NewSymmetric) unless Options.AllRanks asks for
// all of them; a test holds the two to bit-identical results. At flow
// fidelity every rank is played and every transfer is a flow through the
// fabric (sim/network, max-min fair sharing). Compute slows while
// collectives hold SMs (parallel.InterferenceOf).
//
// # Figures
//
// Over the played ranks r, with end_r the last task end of r (a host copy
// nobody waits for excepted) and S steps:
//
//	step time      = max_r end_r / S
//	exposed_k      = mean_r |comm_k(r) \ compute(r)| / S      (k = tp, cp, ep, dp, pp)
//	bubble         = mean_r idle(r) / max_r end_r              (idle: neither compute nor comm)
//	MFU            = model FLOPs per step / (peak(precision) · GPUs · step time)
//
// where comm_k(r) and compute(r) are unions of task intervals, so
// overlapping tasks count once; sums stay in integer nanoseconds, so one
// representative per stage and every rank give the same figures. Model and
// hardware FLOPs are the workload model's per token (hardware counting
// recomputation); memory is the accounting model's per stage
// (Plan.MemoryPerStage); cost and energy scale the step time by the GPU's
// price and TDP times the site's PUE.
//
// # Traffic per link
//
// Result.Links reports what each link carried. At flow fidelity that is
// what the fabric measured. At analytic fidelity links are not played, so
// the traffic is reconstructed: every distinct collective of every group
// of every stage is expanded into the transfers the flow model would use,
// played once on an uncontended fabric and scaled by how often the step
// issues it.
package simulation
