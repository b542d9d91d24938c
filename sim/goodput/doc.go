// Package goodput turns a simulated training step into the whole run: how
// often the job is interrupted, what each interruption costs, how often it
// checkpoints, and so how long and how much it takes to train N tokens with
// failures included. It is fed by the step simulation's result (a Job of
// plain values) and does no I/O; docs/goodput.md is the long form with the
// sources of every number.
//
// Failures. Each component class c (Classes: gpu, hbm, software, network,
// nic, host) fails at a rate r_c per unit-hour of its unit (GPU, NIC, node),
// from a named RateSet; the job's failures form a Poisson process over wall
// time with rate λ = Σ r_c·n_c (n_c: the job's units), so the expected
// interruptions in a window D are λ·D. Planned stops are requested at rate
// μ and taken at the next checkpoint.
//
// Restarts. A failure is detected (DetectS), the job is relaunched on a
// spare node if the failure took one out (RelaunchS; with probability
// PNoSpare it first waits SpareWaitS on average for a repaired node), the
// communicators are built (CommInitMsPerGPU × GPUs) and the checkpoint is
// read (LoadS): R = detect + [wait] + relaunch + init + load. A failure
// during a restart starts another, so the restart phase lasts
// E[T_r] = (1/L(λ) − 1)/λ with L(u) = E[e^(−uR)] (Daly 2006).
//
// Checkpoints. A checkpoint holds the model state once (weights, master
// weights, optimizer states). Sharded, every node writes its share:
// write = max(bytes/storage_bw, bytes/nodes/node_bw); full, one node writes
// it all: bytes/min(node_bw, storage_bw). Sync, the step waits for the
// write (δ = write); async, it waits for a snapshot of what the GPU holds to
// host memory (δ = held bytes / D2H bandwidth) and the write runs behind
// training for w = write. The interval τ is Young's √(2δM) or Daly's
// √(2δM)[1 + ⅓√(δ/2M) + ⅑ δ/2M] − δ with M = 1/λ, or given, in whole steps
// and at least w.
//
// Goodput. Training proceeds in segments of τ training seconds plus δ;
// a segment commits if it runs a = τ + δ without a failure (probability
// P = e^(−λa)); a failure costs the time it ran, min(X, a), and a restart
// phase. Per attempt (one renewal cycle):
//
//	E[time]     = (1 − P)/λ + (1 − P)·E[T_r] + P·q·E[T_planned]
//	E[progress] = P·τ − P·q·τ·(1 − e^(−λw)) − π_B·τ·(1 − e^(−λw))
//
// with q = 1 − e^(−μa) the chance a planned stop was requested during the
// segment, E[T_planned] the stop (the async write, then a restart without
// detection, either cut by a failure), and π_B = P(1 − q) the chance the
// attempt starts with the previous segment's async write still in flight
// (a failure within w then loses that segment too). The effective training
// fraction is E[progress]/E[time] (renewal-reward theorem), the time to
// train W seconds of steps W/fraction, exact to within one cycle. Simulate
// plays the same model with seeded PCG streams (math/rand/v2), one per
// trial, in integer nanoseconds; its mean converges to Expect (tested).
package goodput
