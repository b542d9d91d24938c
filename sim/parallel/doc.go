// # Compute slowed by concurrent communication
//
// Communication streams overlap the compute stream, but not for free. An
// NCCL kernel runs one thread block (CTA) per channel, and "NCCL CTAs won't
// share an SM with compute kernels" (NCCL maintainer, nccl#689): while a
// collective is in flight on a GPU, c of its S streaming multiprocessors are
// not available to the GEMM or attention kernel running beside it. The
// executor models this as a rate. With communication kernels holding c_j
// CTAs in flight on a rank, its running compute task progresses at
//
//	r = 1 − min(Σ_j c_j, ⌊S/2⌋) / S
//
// of its priced speed (its priced duration D is its work at rate 1). Shares
// of concurrent kernels add: every communicator's kernel is launched with
// its own channels, and each CTA holds an SM no other kernel shares
// (nccl#689), so two kernels in flight hold the sum of their CTAs. The sum is capped
// at half the SMs (an estimate, not a measurement: it keeps the rate away
// from zero when many communicators are in flight at once; one kernel of each
// fabric kind stays under it on every catalog GPU, TestCommInterference). The
// counts c, per GPU type, are hardware.CommProfile.Interference:
//
//	inside a scale-up domain   c = NCCL's ring channel count (24 on 8×A100,
//	                           nccl-tests#100; 24 on 8×H100, nccl#1259; 16 on
//	                           H800, nccl#892)
//	across domains (NICs)      c = 16 ("DGX with 8 NICs ... would use 16
//	                           SMs", nccl#689); 2 on PCIe nodes with one NIC
//	pipeline send / receive    c = 2 (p2p channels per peer, nccl#1424,
//	                           nccl#1189), on the sender and on the receiver
//
// so on H100 (S = 132) an intra-node collective takes 18% of compute and an
// inter-node one 12%; on A100 (S = 108) 22% and 15%. A kind-k collective of
// a pipeline stage counts as crossing domains when any kind-k group of that
// stage does, so every rank of a stage sees the same counts and the
// symmetric and full executors agree. Pipeline sends use few channels —
// NCCL sizes p2p by peers, not by the fabric — so they slow compute by
// 2/S ≈ 1.5% while in flight.
//
// Only compute tasks slow down; communication keeps its priced (or, at flow
// fidelity, its simulated) duration. A compute task overlapped on [t0, t1]
// by one collective of share s = c/S, inside the task, therefore ends at
//
//	D + s·(t1 − t0)
//
// and one that a collective spans entirely lasts D/(1 − s).
//
// Integer time, exact arithmetic: a task's remaining work W is kept in
// SM-nanoseconds (D·S at its start); over an interval Δ at rate numerator
// S − min(Σc, ⌊S/2⌋) it drops by Δ·(S − min(Σc, ⌊S/2⌋)), and the task's end
// is now + ⌈W / (S − min(Σc, ⌊S/2⌋))⌉. When communication starts or ends on
// the rank the end moves: a new end event is scheduled, and the superseded
// one is ignored when it fires (its time is no longer the task's end; the
// engine's lazy cancellation). With every count 0 no event changes, so the
// results are bit-identical to the executor without the model
// (TestInterferenceInvariants).
//
// # PyTorch AsyncTP
//
// With tensor parallelism as PyTorch DTensor runs it (StepConfig.
// TPImplDTensor), sequence parallelism and overlapped TP communication, the
// paired collectives of a dense layer are PyTorch's symmetric-memory ops
// (torch/distributed/_symmetric_memory/__init__.py, 2025 versions, the
// torch.cuda-based file before the torch.accelerator rewrite):
//
//	fused_all_gather_matmul      each rank copies its shard (S/tp bytes of a
//	                             gathered tensor of S) into its symmetric
//	                             buffer on the compute stream, then pulls the
//	                             peers' shards by copy_ while the GEMM chunks
//	                             run on two alternating streams
//	                             (_pipelined_multi_all_gather_and_consume)
//	fused_matmul_reduce_scatter  each GEMM chunk lands in a symmetric buffer
//	                             and its destination pulls it by copy_; the
//	                             rank then sums its tp partials on the compute
//	                             stream (_fused_matmul_reduce_scatter_impl:
//	                             reduce_fn over the stacked partials, read S,
//	                             write S/tp)
//
// The copies are copy_ between contiguous tensors of one dtype, which ATen
// issues as cudaMemcpyAsync (aten/src/ATen/native/cuda/Copy.cu,
// copy_device_to_device): copy engines, no SMs, so these collectives hold
// c = 0 (Task.CopyEngine) while the shard copy (read and write S/tp) and
// the reduction (read S, write S/tp) are memory-bound compute-stream tasks.
// The backward input-gradient reduce-scatter is not fused (see
// StepConfig.TPImplDTensor) and stays an NCCL kernel of c CTAs without a
// reduction. Each call also runs 3 (all-gather) or 2·tp (reduce-scatter)
// symm_mem barriers, single-block signal kernels of about one NVLink write
// latency (≈2 µs on NVLink, cuda-samples#230 and nccl-tests#123 in
// hardware-facts.md §5); they are left out: on the Llama 3 8B AsyncTP run
// (r056: 32 layers, one micro-batch, 2.5 s steps) even all 44 per layer at
// 3 µs, none hidden, would add 4 ms, 0.2%.
//
// Not modelled: HBM bandwidth taken by the communication kernels' copies and
// reductions (nccl#1433: a send/recv kernel of one CTA still slows a GEMM
// through memory bandwidth), wave quantisation (a GEMM sized to exactly one
// wave on all SMs needs a second wave when an NCCL kernel holds 24 of them:
// an H100 report measured its time nearly doubling, NVIDIA developer forum
// thread 337991, "Compute-Communication Overlap Causes Severe GEMM
// Performance Degradation because of Tail Effect"), the copy-engine
// and chunked-GEMM costs of userbuffers, AsyncTP's GEMM decomposition into
// tp chunks of 1/tp of the rows on two streams, and which NCCL algorithm
// (ring 24 channels or NVLS 16 on Hopper) a collective uses.
package parallel
