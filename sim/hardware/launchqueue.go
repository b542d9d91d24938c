package hardware

// LaunchQueueDepth is how many kernel launches one CUDA stream holds issued
// but not finished before cudaLaunchKernel blocks the host until the GPU
// retires the oldest. Measured: a host launching 10,000 kernels of 190 µs
// into one stream issues the first ~1000 at 4-5 µs each, then one per
// 190 µs (one per kernel retired), and with three streams each holds ~1000
// (NVIDIA developer forums t/68937, "CUDA stream are blocked when launch
// lots of kernels (>1000)", 2018; the same report on Stack Overflow
// q/53970187); an IREE trace shows the driver blocking the host on the same
// stream-buffer limit (iree-org/iree#10678, 2022-10-27). "About 1000" is
// taken as 1024, the power of two the runtime's buffer sizes use; the
// measurement cannot tell 1000 from 1024. Whole-step CUDA graphs are one
// launch (data/host.yaml, graphs): no queue bound.
const LaunchQueueDepth = 1024

// LaunchQueueBound says whether the simulator bounds each stream's pending
// launches by LaunchQueueDepth (parallel.HostModel.Queue). On: a host that
// runs ahead of the GPU gains on it every micro-batch until a full queue
// holds it back, and steady-state replication walks the host thread over
// the micro-batches it does not play to find where (sim/parallel
// steady.go hostRepeats), so long runs keep their speed; see
// docs/validation.md, "Round 16 (issue 16): the host cannot run
// unboundedly ahead" and "the launch-queue bound by default".
const LaunchQueueBound = true
