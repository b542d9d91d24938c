package topology_test

import (
	"fmt"

	"github.com/simtrain/simtrain/sim/topology"
)

// Four DGX H100 nodes on a rail-optimized NDR fabric: the route from rank 0
// to rank 11 (node 1, GPU 3) crosses NVLink to GPU 3 of node 0 (PXN) and
// then stays on rail 3.
func ExampleBuild() {
	c, err := topology.Build(topology.Spec{GPU: "h100-sxm", Nodes: 4})
	if err != nil {
		panic(err)
	}
	fmt.Println(c.NumGPUs(), "GPUs,", c.Domains(), "NVLink domains,", c.NICBandwidthPerGPU()/1e9, "GB/s of NIC per GPU")
	for _, id := range c.AppendRoute(nil, 0, 11, 0) {
		l := c.Links()[id]
		fmt.Printf("%s -> %s  %s %g GB/s %v\n", c.Devices()[l.From].Name, c.Devices()[l.To].Name, l.Kind, l.Bandwidth/1e9, c.Latencies()[id])
	}
	s := c.Summary()
	fmt.Printf("bisection %g TB/s, diameter %d hops\n", s.BisectionBytesPerS/1e12, s.DiameterHops)
	// Output:
	// 32 GPUs, 4 NVLink domains, 50 GB/s of NIC per GPU
	// n0/gpu0 -> domain0/nvswitch  nvlink 450 GB/s 25ns
	// domain0/nvswitch -> n0/gpu3  nvlink 450 GB/s 25ns
	// n0/gpu3 -> n0/pcie1  pcie 63 GB/s 115ns
	// n0/pcie1 -> n0/nic3  pcie 63 GB/s 115ns
	// n0/nic3 -> leaf3  network 50 GB/s 500ns
	// leaf3 -> n1/nic3  network 50 GB/s 500ns
	// n1/nic3 -> n1/pcie1  pcie 63 GB/s 115ns
	// n1/pcie1 -> n1/gpu3  pcie 63 GB/s 115ns
	// bisection 0.8 TB/s, diameter 8 hops
}
