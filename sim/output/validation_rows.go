package output

// ValidationRow is one scenario of `simtrain validate` (validation.arrow):
// the published figure, the simulated one in the same currency, both as
// step times, and the signed error of the step time. A scenario that could
// not be simulated has Failure set and NaN figures. Column order is field
// order; documented in results/README.md.
type ValidationRow struct {
	Name          string `arrow:"name"`
	RunID         string `arrow:"run_id"`
	Failure       string `arrow:"failure"` // empty when the scenario simulated
	Source        string `arrow:"source"`  // expect.source
	Group         string `arrow:"group,dict"`
	GPU           string `arrow:"gpu,dict"`
	NumGPUs       int64  `arrow:"num_gpus"`
	ParallelStyle string `arrow:"parallel_style,dict"` // e.g. fsdp, zero1+tp+pp
	Fidelity      string `arrow:"fidelity,dict"`
	// Metric is the published figure's expect: key: step_time_s,
	// tokens_per_s_per_gpu, mfu or tflops_per_gpu.
	Metric string `arrow:"metric,dict"`
	// FLOPsConvention is how the source counted FLOPs (model, hardware,
	// megatron-sc21; "/causal" when it halves attention).
	FLOPsConvention    string  `arrow:"flops_convention,dict"`
	Measured           float64 `arrow:"measured"`  // the published figure, in Metric's units
	Predicted          float64 `arrow:"predicted"` // the simulated figure, same units and convention
	MeasuredStepTimeS  float64 `arrow:"measured_step_time_s"`
	PredictedStepTimeS float64 `arrow:"predicted_step_time_s"`
	// RelError is (predicted − measured) / measured step time: positive
	// when the simulator is slower than the measured run.
	RelError float64 `arrow:"rel_error"`
	AbsError float64 `arrow:"abs_rel_error"`
	Fits     bool    `arrow:"fits"` // the memory model says every rank fits
	// MeasuredPeakMemGiB is the source's peak memory per GPU
	// (expect.peak_memory_gib), NaN when it published none;
	// PredictedPeakMemGiB is the simulated caching-allocator reservation
	// of the largest rank at its peak (what PyTorch's reserved_bytes.all
	// .peak counts: no CUDA context or NCCL buffers), and
	// MemRelError (predicted − measured) / measured, NaN without a
	// published figure.
	MeasuredPeakMemGiB  float64 `arrow:"measured_peak_mem_gib"`
	PredictedPeakMemGiB float64 `arrow:"predicted_peak_mem_gib"`
	MemRelError         float64 `arrow:"mem_rel_error"`
	// MemMarginGiB is the device's usable memory less the predicted peak
	// (negative when the model says the run does not fit).
	MemMarginGiB float64 `arrow:"mem_margin_gib"`
	SimWallS     float64 `arrow:"sim_wall_s"`
}
