package topology

// CommProfile holds the collective-communication efficiency parameters of one
// GPU type (NCCL protocol overheads, NVLS gain, latencies) used by
// sim/collectives. Each value carries its source. OWNED BY THE COLLECTIVES
// WORK: fields may be added.
type CommProfile struct {
	Sources []string
}

// NICCommProfile holds the achievable fractions of one NIC type (e.g. NDR 400:
// 46-48 GB/s of 50 GB/s per NCCL maintainers). OWNED BY THE COLLECTIVES WORK.
type NICCommProfile struct {
	Efficiency float64 // achievable / line rate
	Sources    []string
}

// commProfile returns the profile for a catalog GPU name.
func commProfile(gpu string) CommProfile { return CommProfile{} }

// nicCommProfile returns the profile for a catalog NIC name.
func nicCommProfile(nic string) NICCommProfile { return NICCommProfile{} }
