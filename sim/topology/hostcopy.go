package topology

import "strconv"

// HostCopy is how fast one GPU copies to and from pinned host memory with
// its copy engines (cudaMemcpyAsync; what activation and optimizer-state
// offloading move), per direction.
type HostCopy struct {
	H2D, D2H float64 // bytes/s
	Source   string
}

// pcieCopyFraction is the share of the PCIe Gen5 x16 line rate a pinned
// host copy reaches: nvbandwidth on Azure's H100 measures 51 GB/s H2D and
// 52 GB/s D2H (hardware-facts §2e, [AZ-H100]) of 63 GB/s, 0.81 (51/63,
// the lower direction); assumed for every PCIe-attached GPU without a
// measurement.
const pcieCopyFraction = 51.0 / 63

// HostCopyOf returns gpu's host copy bandwidth: measured where a source
// has it, else its PCIe generation's line rate × pcieCopyFraction. The
// Grace-attached GB200/GB300 copy over NVLink-C2C.
func HostCopyOf(g GPU) HostCopy {
	switch g.Name {
	case "h100-sxm", "h100-96gb-500w", "h800":
		return HostCopy{51e9, 52e9, "nvbandwidth on H100: 51 GB/s host→device, 52 GB/s device→host (hardware-facts §2e, [AZ-H100]); the same PCIe Gen5 host link assumed for the 96 GB and H800 boards"}
	case "h200":
		return HostCopy{52e9, 52e9, "nvbandwidth on H200: 52 / 52 GB/s (hardware-facts §2e, [AZ-H200])"}
	case "a100-80gb", "a100-40gb":
		// Azure's D2H of 6.27 GB/s is a quarter of the PCIe Gen4 rate
		// its H2D reaches (no other A100 measurement to compare);
		// pinned copies are symmetric on PCIe, so H2D is taken for both.
		return HostCopy{26.28e9, 26.28e9, "nvbandwidth on A100: 26.28 GB/s host→device (hardware-facts §2e, [AZ-A100]); its 6.27 GB/s device→host is not taken (PCIe copies are symmetric; H2D used both ways)"}
	case "gb200", "gb300":
		return HostCopy{201e9, 193e9, "nvbandwidth on GB200 over NVLink-C2C: 201 GB/s host→device, 193 GB/s device→host (hardware-facts §2e, [AZ-GB200]); assumed for GB300 (the same Grace C2C link)"}
	}
	gen := g.PCIeGen
	if pcieBW(gen) == 0 {
		gen = 4 // a catalog entry without a PCIe generation: the oldest we price
	}
	bw := pcieBW(gen) * pcieCopyFraction
	return HostCopy{bw, bw, "PCIe Gen" + strconv.Itoa(gen) + " x16 line rate × 0.81, the share nvbandwidth reaches on H100 (51 of 63 GB/s; estimate)"}
}
