package topology

// ComputeProfile holds the achievable-efficiency parameters of one GPU type
// that the compute-time model (sim/workload) uses. Each value carries its
// source in Sources. OWNED BY THE WORKLOAD WORK: fields may be added.
type ComputeProfile struct {
	MatmulEffBF16  float64 // best-shape dense GEMM throughput / BF16 peak (MAMF, hardware-facts §4a)
	MatmulEffFP8   float64 // same for FP8
	HBMEff         float64 // STREAM triad / spec bandwidth (§4b)
	AttnEff        float64 // fused (flash) attention forward throughput / BF16 peak (§4c)
	AttnBwdEff     float64 // fused attention backward throughput / BF16 peak
	KernelOverhead float64 // seconds of fixed cost per kernel (launch + tail), §4e
	Sources        []string
}

// computeProfile returns the profile for a catalog GPU name.
func computeProfile(gpu string) ComputeProfile { return ComputeProfile{} }
