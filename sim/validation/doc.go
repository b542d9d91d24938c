// Package validation sets simulated runs against published ones: each
// scenario's expect: block holds one measured figure, and a validation set
// is a directory of such scenarios (scenarios/validation, scenarios/holdout).
//
// # Currencies
//
// Published training runs report their speed in different currencies: step
// time, tokens per second per GPU, achieved TFLOP/s per GPU or MFU. The last
// two depend on how the source counted FLOPs, and sources count differently:
//
//   - megatron-sc21: Narayanan et al. 2021 (SC21, arXiv:2104.04473, Appendix
//     "Floating-point operations") count the forward, the backward and the
//     recomputed forward of a GPT with full activation recomputation:
//     F = 96·B·s·l·h²·(1 + s/(6h) + V/(16·l·h)) per iteration of B sequences
//     of s tokens (l layers, hidden h, vocabulary V).
//   - model: model FLOPs, 6 per parameter per token for the matmul weights
//     plus the attention-matrix products, no recomputation (Kaplan et al.
//     2020; PaLM, Chowdhery et al. 2022, Appendix B: 6N + 12·L·H·Q·T).
//     Megatron-LM's README table (Megatron-Core r0.8, 2024) and
//     llm-foundry's MFU use it with the full score matrix; Megatron-Core's
//     num_floating_point_operations since 2025 counts half of it for causal
//     attention (expect.attention_flops: causal). This is
//     Model.ModelFLOPsPerToken.
//   - hardware: model FLOPs plus the recomputed forward work (MosaicML's HFU
//     and Megatron's "hardware FLOPs"): Model.HardwareFLOPsPerToken for the
//     scenario's recompute policy.
//
// Compare converts the published figure back to a step time with the
// source's own formula and compares times, so that no convention leaks into
// the error: error = (predicted − measured) / measured step time, positive
// when the simulator is slower than the measured run.
//
// A source that also published its peak memory per GPU
// (expect.peak_memory_gib) is compared a second time: the simulated peak of
// the largest rank against it, (predicted − measured) / measured bytes.
//
// # Statistics
//
// Over the simulated rows of a set, Summarise gives the mean absolute
// percentage error (MAPE, the mean of |error|), the median |error| and the
// worst row, overall and per grouping (Groupings: the source, the GPU, the
// GPU model, its architecture, the parallel style), and the same for the
// peak-memory errors of the rows that publish one. A row that fails to
// simulate counts in the set but in no statistic.
package validation
