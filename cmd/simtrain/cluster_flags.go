package main

import (
	"strings"

	"github.com/spf13/pflag"

	"github.com/simtrain/simtrain/sim/hardware"
	"github.com/simtrain/simtrain/sim/topology"
)

// addClusterFlags registers the flags that describe a cluster on the
// commands that build one without a scenario file (collective, topology);
// withPods adds the pod and oversubscription flags.
func addClusterFlags(f *pflag.FlagSet, spec *topology.Spec, withPods bool) {
	f.StringVar(&spec.GPU, "gpu", "", "GPU catalog name (required): "+strings.Join(hardware.GPUNames(), ", "))
	f.IntVar(&spec.Nodes, "nodes", 1, "number of nodes (servers; compute trays for NVL72)")
	f.IntVar(&spec.GPUsPerNode, "gpus-per-node", 0, "GPUs per node (0: the GPU's default, 8, or 4 for gb200/gb300)")
	f.StringVar(&spec.IntraNode, "intra-node", "", "nvswitch | pcie | nvlink-pairs (default: the GPU's usual)")
	f.StringVar(&spec.Network, "network", "rail-optimized", "rail-optimized | fat-tree | clos | single-switch")
	f.StringVar(&spec.NIC, "nic", "ib-ndr-400", "NIC catalog name: "+strings.Join(hardware.NICNames(), ", "))
	f.Float64Var(&spec.NICGbps, "nic-gbps", 0, "NIC line rate in Gb/s (0: the catalog's)")
	f.IntVar(&spec.NICsPerNode, "nics-per-node", 0, "NICs per node (0: one per GPU)")
	if withPods {
		f.Float64Var(&spec.Oversubscription, "oversubscription", 1, "bandwidth ratio above the pod (or the leaf when --pod-gpus is 0); 7 means 1:7")
		f.IntVar(&spec.PodGPUs, "pod-gpus", 0, "GPUs per full-bisection pod (0: the whole cluster)")
	}
}

// checkClusterFlags rejects unknown catalog names and kinds with a usage
// error that lists the valid choices; sizes are checked by topology.Build.
func checkClusterFlags(spec topology.Spec) error {
	if spec.GPU == "" {
		return usageErrorf("--gpu: required (valid: %s)", strings.Join(hardware.GPUNames(), ", "))
	}
	if err := checkChoice("gpu", spec.GPU, hardware.GPUNames()...); err != nil {
		return err
	}
	if err := checkChoice("nic", spec.NIC, hardware.NICNames()...); err != nil {
		return err
	}
	if err := checkChoice("network", spec.Network, "rail-optimized", "fat-tree", "clos", "single-switch"); err != nil {
		return err
	}
	if spec.IntraNode != "" {
		return checkChoice("intra-node", spec.IntraNode, "nvswitch", "pcie", "nvlink-pairs")
	}
	return nil
}
