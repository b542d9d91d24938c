// Package workload is simtrain's single source of napkin math: datatypes,
// model architectures and their exact parameter counts, the kernels of a
// transformer layer with their FLOPs and HBM bytes, the FLOP conventions,
// the compute-time model and memory per GPU. It prices work against a plain
// Device description and never imports the topology or the simulator.
//
// # Datatypes
//
// Dtype.Bits counts the amortised block scale of block formats: MXFP4 = 32
// E2M1 values + one 8-bit power-of-two scale = 4.25 bits; NVFP4 = 16 E2M1
// values + one FP8 E4M3 scale = 4.5 bits (+ one fp32 per tensor, ignored).
// FP8 E4M3 spans ±448, E5M2 ±57344; FP4 E2M1 holds ±{0, 0.5, 1, 1.5, 2, 3,
// 4, 6} (OCP MX specification v1.0, OCP 8-bit FP specification).
// QuantizeFP4 and QuantizeFP4Blocks reproduce the course examples: [12, −6,
// 3, 1.2] at scale 2 becomes [12, −6, 3, 1]; [1,1,1,1,1,1,1,60] as one block
// of 8 (scale 60/6 = 10) loses the ones, in blocks of 4 the first block
// keeps them. FP8 and FP4 training recipes store weights and activations in
// bf16 and cast to the narrow format only as GEMM inputs (Micikevicius et al.
// 2022, arXiv:2209.05433; Transformer Engine), so the op model reads GEMM
// inputs at the narrow width and everything else at 2 bytes.
//
// # Models and parameters
//
// A Model is a decoder-only transformer: L layers of pre-norm attention and
// MLP, hidden size h, a query heads and g key/value heads of width d (GQA,
// MQA for g = 1), MLP inner size f with GELU, squared ReLU or SwiGLU (two
// input projections), LayerNorm (scale+shift) or RMSNorm (scale), optional
// biases, learned positions or RoPE, tied or untied embeddings, MoE layers
// (E experts of inner size f_e, top-k routing, shared experts, dense first
// layers) and DeepSeek's multi-head latent attention (MLA). Per layer:
//
//	attention (MHA/GQA)  h·(a + 2g)·d + a·d·h     (+ (a + 2g)·d + h biases)
//	attention (MLA)      h·r_q + r_q·a·(d_nope+d_rope) + h·(r_kv + d_rope)
//	                     + r_kv·a·(d_nope + d_v) + a·d_v·h  (+ latent norms)
//	MLP                  h·f·(2 if SwiGLU else 1) + f·h   (+ biases)
//	MoE                  (E + shared)·MLP(f_e) + h·E router
//	norms                2 × (2h LayerNorm | h RMSNorm)
//
// plus V·h input embedding, positions·h, a final norm and V·h for an untied
// output layer. Active parameters count k + shared experts. The catalog's
// counts agree with their sources to three significant digits (tests quote
// each source): llama3-8b 8.03B, llama3-70b 70.6B, llama3-405b 405.9B,
// gpt3-175b 174.6B (vocab 51200), mixtral-8x7b 46.7B / 12.9B active,
// deepseek-v3 671B / 37.6B.
//
// # Operators
//
// LayerOps lists one layer's kernels on one GPU after the splits: tensor
// parallelism t divides heads, the MLP inner size and the vocabulary
// (Megatron-LM column/row-parallel linears); sequence parallelism makes the
// norm, dropout and residual kernels process tok/t tokens; context
// parallelism c gives each GPU seq/c queries against all seq keys after a
// K/V all-gather (load-balanced causal split; PyTorch's ring attention
// adds its fp32 merge and accumulation kernels, ringKernels); expert
// parallelism e gives each GPU E/e experts and, with balanced routing,
// tok·k·capacity tokens of its group; expert MLPs are also split by t
// along their inner size. Each op belongs to a Block, the unit at which
// the simulator inserts communication, and blocks appear in execution
// order:
//
//	AttnPre    norm, QKV (or MLA down/up) projections, q/k norms, RoPE,
//	           repeat_kv (Shape.RepeatKV)
//	AttnCore   flash attention — or scores GEMM, softmax, dropout, context GEMM
//	AttnPost   output projection, dropout, residual
//	MLP        norm, fc1, activation, fc2, dropout, residual
//	Router     norm, router GEMM, top-k, permutation (MoE layers)
//	Experts    expert fc1, activation, fc2 (batched over local experts); shared experts
//	Combine    unpermute + weighted sum, dropout, residual
//
// GEMM C[M×N] = A[M×K]·B[K×N] has 2·M·N·K FLOPs and reads its inputs,
// writes its output once. Its backward is the dgrad dA = dC·Bᵀ (a GEMM of
// M×K×N) then the wgrad dB = Aᵀ·dC (K×N×M), each with the forward's FLOPs;
// backward ops come in exactly reversed forward order. Memory-bound kernels
// count compulsory HBM traffic and a per-element FLOP convention (see
// ops.go); their backward reads the saved input and the incoming gradient.
// Op.FLOPs are what kernels execute: the unfused score GEMM computes every
// entry and masks afterwards, while causal FlashAttention executes only
// sl·(seq+1)/2 scores per head, and its backward recomputes them within 2.5×
// the forward FLOPs (five products against two). Bias adds are fused into
// their GEMMs and not counted. RecomputeOps adds, before a layer's backward,
// nothing (none), the attention core (selective; nothing with
// FlashAttention, whose backward already recomputes), the whole forward
// (full), or per-op selective checkpointing (selective-op, torchtitan's
// selective_ac_option = "op"): with the layer's projections counted in
// forward order by their framework linears (a fused QKV GEMM counts as q, k,
// v; a GLU fc1 as gate, up), every second one is recomputed — Llama's wk, wo
// and w3, 36.5% of the forward projection FLOPs of Llama 3 8B — together
// with every memory-bound kernel, while the FlashAttention output is saved;
// or, under save-dots (JAX's checkpoint_dots_with_no_batch_dims, MaxText's
// minimal_flash), only the memory-bound kernels up to the layer's closing
// projection and an unfused attention core: every projection output the
// backward needs and the fused attention output are kept.
//
// The output layer's cross-entropy runs in fp32 in every stack; a fused
// kernel (flash-attn's, llm-foundry's default; Megatron-LM's) reads the
// low-precision logits once per pass, while PyTorch's unfused path
// (torchtitan's cross_entropy(pred.float())) moves 36 bytes per bf16 logit
// instead of 6 (cast, log_softmax, nll_loss and their backwards), and
// Megatron-LM's unfused vocabulary-parallel cross-entropy 52 (the upcast,
// five fp32 passes forward, two backward; see Shape.CrossEntropy and
// HeadOps).
//
// # FLOP conventions
//
// Model FLOPs per token (no recompute, full attention matrix, Megatron/PaLM
// convention):
//
//	F_model = 6·N_matmul + 3·L·2·seq·a·(d_qk + d_v)
//
// N_matmul being the active projection, router and LM-head weights. For a GPT
// (a·d = h, f = 4h) this is 72·l·h² + 12·l·h·s + 6·h·V per token, Megatron's
// 72·B·s·l·h²·(1 + s/6h + V/12lh) per step. Hardware FLOPs add recompute:
// selective +L·2·seq·a·(d_qk + d_v); full + one forward of the layers,
// 2·(N_matmul − V·h) + L·2·seq·a·(d_qk + d_v), which for a GPT gives the SC21
// paper's 96·B·s·l·h²·(1 + s/6h + V/16lh). A test sums the GEMM kernels of
// every layer (unfused attention, which computes every score), forward,
// backward and recompute, plus the LM head, and gets both closed forms
// exactly.
//
// # Compute time
//
//	t(op) = max(FLOPs / (peak × eff), bytes / (B_HBM × eff_HBM)) + t_kernel
//
// GEMMs run at the tensor-core peak of their dtype (fp8 at the FP8 peak with
// MatmulEffFP8, FP4 formats at the FP4 peak with the FP8 efficiency, tf32 at
// the TF32 peak with MatmulEffTF32 where the GPU has one, else the BF16
// efficiency; a dtype the GPU lacks runs at BF16; a block-scaled FP8 GEMM of the mxfp8 or
// blockwise recipe runs at Device.BlockScaledGEMMRel of the FP8 rate,
// 0.951 on Blackwell from Transformer Engine's B300 kernel timings, and
// torchao's row-scaled forward GEMM at Device.RowScaledGEMMRel, fitted for
// Hopper on torchao's tensorwise/rowwise pair). A GEMM
// in an 8- or 4-bit format also pays
// t_quantize: a separate kernel that quantizes both inputs from bf16,
// 5 bytes of HBM traffic per value (amax read, cast read, narrow write;
// Micikevicius et al. 2022, Transformer Engine's cast kernels) plus one
// kernel overhead. The GEMM efficiency is
//
//	eff = eff_MAMF × W(tiles, SMs) × K/(K + K0),  W = tiles/(⌈tiles/SMs⌉·SMs)
//
// eff_MAMF being the best-shape "maximum achievable matmul FLOPS" fraction
// (hardware-facts §4a, [STAS-ACC]), taken as the large-shape asymptote,
// tiles = ⌈M/128⌉·⌈N/128⌉·batch the output tiles and W their wave
// quantisation over the SMs (a partly filled last wave idles SMs), and
// K/(K + K0) the cost of filling and draining the K loop and writing the
// tile. The tile 128, K0 = 392 and the per-kernel overhead t_kernel =
// 2.2 µs were fitted together, by grid search on the log error, to the 35
// measured rows of the §4a shape table (A100 FP16, H100/H200/GB200 FP8,
// cuBLASLt, [AZ-*]); RMS error 10.4%, worst −24% (2–3 waves, where cuBLAS
// switches tile or uses stream-K) and +28% (the skinny 802816×192×768).
// TestGEMMShapeFit holds every residual. The overhead matches §4e's launch
// measurements (3.0 µs on GB200, 2.5 µs graph-vs-direct on B200).
//
// Fused attention runs at the BF16 peak even in FP8 training (Transformer
// Engine's default keeps attention in 16 bits) with
//
//	eff = AttnEff (or AttnBwdEff) × W(batch·heads·⌈queries/128⌉, SMs) × L/(L + L0)
//
// L the mean keys per query ((seq+1)/2 when causal). L0 = 306 was fitted to
// the FlashAttention-3 paper's H100 figures (forward causal/non-causal and
// backward at 512–16k, RMS 4.2%), which also give H100's asymptotes 0.685
// (causal forward) and 0.584 (backward). The asymptote is the kernel's: a
// Shape may carry the efficiencies of the kernel the run uses
// (Shape.AttnEff/AttnBwdEff, from training.attention_kernel and the GPU's
// compute profile — FlashAttention-2, -3, cuDNN or the Triton kernel), which
// reach the attention ops as Op.AttnEff; otherwise the Device's apply. A
// fused kernel is compiled for a few head dimensions (Shape.AttnHeadDims:
// Triton and FlashAttention 1.x 32/64/128, FlashAttention-2 32-256 in steps
// of 32, FlashAttention-3 64/96/128/192/256) and runs a head dimension
// between two of them on the larger tile, masked columns multiplied too, so
// its FLOPs count the rounded-up dimension (96 on Triton: 4/3).
// Memory-bound kernels use the STREAM
// triad fraction of the HBM bandwidth (§4b) and the FP32 vector peak. Nothing
// here is tuned to a training run; Device values come from the catalog with
// their sources.
//
// # Memory
//
// Per GPU (StageMemory): model states are parameters × bytes per parameter
// (weights in the compute dtype, gradients in the gradient dtype, a master
// copy when its dtype differs, 2 (Adam/AdamW) or 1 (SGD momentum, Adagrad)
// states in the master dtype: 2 + 2 + 4 + 8 = 16 bytes for mixed-precision
// AdamW, ZeRO §3.1), sharded over the data-parallel × context-parallel group
// by ZeRO stage (1: optimizer, 2: + gradients, 3: + weights; expert
// parameters, split by EP and by ETP (= TP unless folded), over the expert
// data-parallel group DP·CP/EP, or TP·CP·DP/(ETP·EP) with MoE parallel
// folding, Liu et al. 2025, arXiv:2504.14960), with ZeRO-3 adding two gathered layers of
// weights and one of gradients. Activations follow Korthikanti et al. 2022
// (arXiv:2205.05198): each tensor saved for the backward, which for their GPT
// is s·b·h·(34 + 5·a·s/h) bytes per layer, s·b·h·(10 + 24/t + 5·a·s/(h·t))
// with TP, and (34 + 5·a·s/h)/t with TP+SP; FlashAttention or selective
// recompute drop the 5·a·s/h term; full recompute keeps 2·s·b·h (/t with SP)
// per layer plus one layer's working set; per-op selective checkpointing
// keeps the layer input, the outputs of the projections it saves, the
// attention output and, with TP + SP, the two reduce-scatter outputs, plus
// one layer's working set. Activations are multiplied by the
// micro-batches in flight (1F1B and ZB-H1: p − stage; GPipe: m; interleaved:
// × (1 + (p−1)/(p·v))). The first stage adds the embedding dropout mask, the
// last 4·s·b·h/t·(1 + V/h) for the output layer (Korthikanti §4.3). Framework
// overhead: 1 GB for the CUDA context and workspaces (estimate; PyTorch
// forums measure ~0.7 GB for the context alone), 0.31 GB of NCCL buffers per
// process group (estimate from §3a's buffer sizes × 32 channels) and the
// caching allocator's reserve: 15% of what it reserves holds no live tensor
// at the peak (GMLake's average over eight LLMs; torchtitan#135 measured
// 17-27%), bounded by what the device has left, since the allocator frees
// its cache and retries before it fails, and never less than the 5% of the
// live tensors it cannot free (estimate). A rank fits when its live tensors,
// context, NCCL buffers and that 5% do. Not fitting is a result, not an
// error.
//
// # Sources
//
// Kaplan et al. 2020 (arXiv:2001.08361); Narayanan et al. 2021, SC21
// (arXiv:2104.04473); Korthikanti et al. 2022 (arXiv:2205.05198);
// Rajbhandari et al. 2020, ZeRO (arXiv:1910.02054); Dao 2023,
// FlashAttention-2 (arXiv:2307.08691); Shah et al. 2024, FlashAttention-3
// (arXiv:2407.08608); Chowdhery et al. 2022, PaLM (arXiv:2204.02311) App. B;
// OCP Microscaling Formats (MX) v1.0; and ../shared/validation/
// hardware-facts.md §4–§5 with its source keys. Model sources are in each
// preset's Source.
package workload
